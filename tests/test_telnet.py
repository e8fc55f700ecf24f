"""The telnet viewer (pypc_core/frontends/telnet.py): a real terminal
emulator library (pyte) fed the telnet stream reproduces the guest's text
screen cell for cell (character, colours, blink, cursor); a change redraws
only what changed; a graphics mode shows a notice; the negotiation; keys
reach the guest only under --no-rpc.

The machine runs on its own thread (viewers_common.MachineThread); every
wall time is a ceiling, never an assertion.
"""

import socket
import time

import numpy as np
import pytest

from guest import program_bytes
from viewers_common import (CEILING_S, ECHO_BOOT, ECHO_PROMPT, TelnetClient, TelnetRig,
                            at_prompt, rig_fixture)

pyte = pytest.importorskip("pyte")
from pyte.graphics import BG_AIXTERM, BG_ANSI, FG_AIXTERM, FG_ANSI  # noqa: E402

from pypc_core.frontends.telnet import (CP437, DO, DONT, IAC, OPT_BINARY, OPT_ECHO,  # noqa: E402
                                        OPT_SGA, WILL, WONT, TelnetInput)

CGA_TO_ANSI = (0, 4, 2, 6, 1, 5, 3, 7)       # CGA colour order -> ANSI's


rig_factory = rig_fixture(TelnetRig)


def guest_screen(m):
    page = m.video.text_page()
    return page, m.video.cursor(), m.video.blink_enabled()


def expected_colours(attr, blink):
    fg = attr & 0x0F
    bg = (attr >> 4) & (0x07 if blink else 0x0F)
    fg_name = (FG_AIXTERM[90 + CGA_TO_ANSI[fg & 7]] if fg & 8
               else FG_ANSI[30 + CGA_TO_ANSI[fg]])
    bg_name = (BG_AIXTERM[100 + CGA_TO_ANSI[bg & 7]] if bg & 8
               else BG_ANSI[40 + CGA_TO_ANSI[bg]])
    return fg_name, bg_name, bool(blink and attr & 0x80)


def mismatches(screen, page, blink):
    """Cells where pyte's screen differs from the guest's text page."""
    bad = []
    for r, row in enumerate(page["cells"]):
        for c, cell in enumerate(row):
            got = screen.buffer[r][c]
            fg, bg, blinking = expected_colours(cell["attribute"], blink)
            want = (CP437[cell["code"]], fg, bg, blinking)
            have = (got.data, got.fg, got.bg, got.blink)
            if have != want:
                bad.append((r, c, have, want))
    return bad


def fill_every_char_and_attribute(m):
    """Rows 2-17: all 256 characters, each with its own attribute (so all
    256 attributes too), written straight into video memory."""
    data = bytearray()
    for i in range(256 * 5):
        code = i & 0xFF
        data += bytes((code, (i * 7 + 3) & 0xFF if i >= 256 else code))
    m.memory.write(0xB8000 + 2 * 160, bytes(data[:16 * 160]))


# -- the screen, cell for cell -------------------------------------------------------------

def test_pyte_reproduces_the_text_screen_cell_for_cell(rig_factory):
    rig = rig_factory(ECHO_BOOT)
    assert rig.thread.run_until(at_prompt)
    rig.thread.call(fill_every_char_and_attribute)
    page, cursor, blink = rig.thread.call(guest_screen)
    assert blink                        # mode 3 of the CGA: bit 7 blinks
    tn = TelnetClient(rig.port)
    try:
        screen = pyte.Screen(80, 25)
        stream = pyte.ByteStream(screen)
        assert tn.read_until(stream, lambda: not mismatches(screen, page, blink))
        assert mismatches(screen, page, blink) == []
        assert (screen.cursor.y, screen.cursor.x) == (cursor["row"], cursor["column"])
        assert not screen.cursor.hidden
    finally:
        tn.close()


def test_a_change_redraws_only_what_changed(rig_factory):
    rig = rig_factory(ECHO_BOOT)
    assert rig.thread.run_until(at_prompt)
    tn = TelnetClient(rig.port)
    try:
        screen = pyte.Screen(80, 25)
        stream = pyte.ByteStream(screen)
        page, _, blink = rig.thread.call(guest_screen)
        assert tn.read_until(stream, lambda: not mismatches(screen, page, blink))
        tn.read(stream, 0.3)                    # nothing more while nothing changes
        quiet = len(tn.raw)
        rig.thread.call(lambda m: m.type_text("q"))
        assert rig.thread.run_until(lambda m: m.screen_contains(ECHO_PROMPT + "q")
                                    and m.waiting_for_key())
        page, cursor, blink = rig.thread.call(guest_screen)
        assert tn.read_until(stream, lambda: not mismatches(screen, page, blink)
                             and screen.cursor.x == cursor["column"])
        tn.read(stream, 0.3)
        update = bytes(tn.raw[quiet:])
        assert b"q" in update
        assert len(update) < 80                 # one cell and the cursor, not the screen
        assert b"\x1b[2J" not in update
    finally:
        tn.close()


def test_graphics_mode_shows_a_notice(rig_factory):
    rig = rig_factory(program_bytes("video"))        # mode 4, waiting for a key
    assert rig.thread.run_until(lambda m: m.memory.read(0x602, 1)[0] == 1
                                and m.waiting_for_key())
    tn = TelnetClient(rig.port)
    try:
        screen = pyte.Screen(80, 25)
        stream = pyte.ByteStream(screen)
        assert tn.read_until(stream, lambda: any("graphics mode" in r for r in screen.display))
        text = "\n".join(screen.display)
        assert "graphics mode (CGA G320)" in text
        assert screen.cursor.hidden
        # the guest goes on to text mode: the notice gives way to the screen
        rig.thread.call(lambda m: m.type_text(" "))
        assert rig.thread.run_until(lambda m: not m.video.is_graphics()
                                    and m.memory.read(0x602, 1)[0] >= 2)
        rig.thread.run_until(lambda m: False, max_seconds=1.0)
        page, _, blink = rig.thread.call(guest_screen)
        assert tn.read_until(stream, lambda: not mismatches(screen, page, blink))
    finally:
        tn.close()


def test_negotiation(rig_factory):
    rig = rig_factory(ECHO_BOOT)
    assert rig.thread.run_until(at_prompt)
    tn = TelnetClient(rig.port)
    try:
        tn.read(None, 0.5)
        assert (WILL, OPT_ECHO) in tn.options
        assert (WILL, OPT_SGA) in tn.options
        assert (WILL, OPT_BINARY) in tn.options
        assert (DO, OPT_SGA) in tn.options
        assert (DO, 31) in tn.options           # NAWS: the window size, asked for
        offered = len(tn.options)
        # agreeing changes nothing (no loops); an unknown option is refused
        # (32: terminal speed)
        tn.send(bytes((IAC, DO, OPT_ECHO, IAC, DO, OPT_SGA, IAC, WILL, OPT_SGA,
                       IAC, DO, 24, IAC, WILL, 32)))
        tn.read(None, 0.5)
        assert tn.options[offered:] == [(WONT, 24), (DONT, 32)]
    finally:
        tn.close()


def test_telnet_input_parsing():
    t = TelnetInput()
    replies, text = t.feed(bytes((IAC, DO, OPT_ECHO)) + b"dir\r\0" + b"x\r\n"
                           + bytes((IAC, 250, 31, 0, 80, 0, 25, IAC, 240)) + b"\n"
                           + bytes((IAC, IAC)))
    assert replies == b""
    assert text == "dir\rx\r\r\xff"
    assert t.feed(bytes((IAC, DONT, OPT_ECHO)))[0] == bytes((IAC, WONT, OPT_ECHO))
    assert t.feed(bytes((IAC, DONT, OPT_ECHO)))[0] == b""


# -- keys -------------------------------------------------------------------------

@pytest.mark.parametrize("no_rpc", [True, False])
def test_keys_reach_the_guest_only_without_rpc(rig_factory, no_rpc):
    rig = rig_factory(ECHO_BOOT, no_rpc=no_rpc)
    assert rig.thread.run_until(at_prompt)
    tn = TelnetClient(rig.port)
    try:
        screen = pyte.Screen(80, 25)
        stream = pyte.ByteStream(screen)
        assert tn.read_until(stream, lambda: any("TYPE HERE>" in r for r in screen.display))
        display = rig.frontends.display
        # letters, a shifted key and the Up arrow; the server answers the
        # option request after it has queued (or dropped) the keys before it
        tn.send(b"Ok!\x1b[A" + bytes((IAC, DO, 24)))
        assert tn.read_until(stream, lambda: (WONT, 24) in tn.options)
        typed = rig.thread.run_until(lambda m: m.screen_contains(ECHO_PROMPT + "Ok!"),
                                     max_seconds=2.0)
        assert typed is no_rpc
        if no_rpc:
            assert tn.read_until(stream, lambda: any("TYPE HERE> Ok!" in r
                                                     for r in screen.display))
        else:
            assert not display._keys
            assert rig.thread.call(lambda m: m.keyboard.typing_pending()) == 0
    finally:
        tn.close()


def test_a_client_that_vanishes_does_not_disturb_the_machine(rig_factory):
    rig = rig_factory(ECHO_BOOT)
    assert rig.thread.run_until(at_prompt)
    for _ in range(5):
        s = socket.create_connection(("127.0.0.1", rig.port), timeout=CEILING_S)
        s.recv(10)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, np.array([1, 0], np.int32).tobytes())
        s.close()
    end = time.monotonic() + CEILING_S
    while rig.frontends.telnet.sessions and time.monotonic() < end:
        time.sleep(0.02)
    assert not rig.frontends.telnet.sessions
    assert rig.frontends.display.viewers == 0
    rig.thread.call(lambda m: m.type_text("v"))
    assert rig.thread.run_until(lambda m: m.screen_contains(ECHO_PROMPT + "v"))
