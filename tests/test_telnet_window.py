"""The telnet viewer and the client's window size (NAWS, RFC 1073).

A window that holds the guest's screen gets it cell for cell, as a client
that never reports a size does; a smaller one gets the part of the guest's
screen that fits above a one-line notice in its last row, and the viewer
never writes where the terminal would wrap or scroll.  The terminal here is
pyte, with a screen that records every write past its right edge, every
cursor move off the screen and every scroll (StrictScreen).

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

from test_telnet import expected_colours  # noqa: E402  (needs pyte too)

from pypc_core.frontends.display import Snapshot  # noqa: E402
from pypc_core.frontends.telnet import (CP437, DO, DONT, IAC, OPT_NAWS, SB, SB_LIMIT,  # noqa: E402
                                        SE, SETUP, WILL, WONT, ScreenView, TelnetInput)

# Sets 40x25 text (mode 1) and prints a prompt, waits for a key, sets 80x25
# text (mode 3), prints the prompt again and echoes every key with teletype.
#
#   7C00  FA 31C0 8ED8 8ED0 BC007C FB FC   cli, ds = ss = 0, sp = 7C00h, sti, cld
#   7C0C  B8 01 00     mov  ax, 0001h
#   7C0F  CD 10        int  10h
#   7C11  E8 18 00     call print                ; -> 7C2C
#   7C14  31 C0        xor  ax, ax
#   7C16  CD 16        int  16h
#   7C18  B8 03 00     mov  ax, 0003h
#   7C1B  CD 10        int  10h
#   7C1D  E8 0C 00     call print
#   7C20  31 C0   key: xor  ax, ax
#   7C22  CD 16        int  16h
#   7C24  B4 0E        mov  ah, 0Eh
#   7C26  31 DB        xor  bx, bx
#   7C28  CD 10        int  10h
#   7C2A  EB F4        jmp  key
#   7C2C  BE 3D 7C print: mov si, msg            ; msg = 7C3Dh
#   7C2F  AC       p:  lodsb
#   7C30  08 C0        or   al, al
#   7C32  74 08        jz   done                 ; -> 7C3C
#   7C34  B4 0E        mov  ah, 0Eh
#   7C36  31 DB        xor  bx, bx
#   7C38  CD 10        int  10h
#   7C3A  EB F3        jmp  p
#   7C3C  C3     done: ret
#   7C3D        msg:   db "TYPE HERE> ", 0
MODES_40_80_BOOT = bytes.fromhex(
    "FA31C08ED88ED0BC007CFBFC B80100CD10 E81800 31C0CD16 B80300CD10 E80C00"
    "31C0CD16B40E31DBCD10EBF4 BE3D7C AC08C07408B40E31DBCD10EBF3 C3"
) + ECHO_PROMPT.encode("ascii") + b"\0"
assert MODES_40_80_BOOT.index(ECHO_PROMPT.encode()) == 0x3D


class StrictScreen(pyte.Screen):
    """A pyte screen that records what a real terminal of this size would
    wrap or scroll: a character drawn with the cursor past the last column,
    a cursor address off the screen, a line feed on the last row."""

    def __init__(self, columns, lines):
        super().__init__(columns, lines)
        self.violations = []

    def draw(self, data):
        for ch in data:
            if self.cursor.x >= self.columns:
                self.violations.append(("wrap", self.cursor.y, ch))
            super().draw(ch)

    def cursor_position(self, line=None, column=None):
        if (line or 1) > self.lines or (column or 1) > self.columns:
            self.violations.append(("off screen", line, column))
        super().cursor_position(line, column)

    def index(self):
        if self.cursor.y >= self.lines - 1:
            self.violations.append(("scroll", self.cursor.y))
        super().index()


def naws(columns, rows):
    """IAC SB NAWS <w16> <h16> IAC SE with 255 doubled."""
    body = bytes((OPT_NAWS,)) + columns.to_bytes(2, "big") + rows.to_bytes(2, "big")
    return bytes((IAC, SB)) + body.replace(b"\xff", b"\xff\xff") + bytes((IAC, SE))


class NawsClient(TelnetClient):
    """A telnet client: ``answer`` is what it says to DO NAWS ("will": WILL
    and its window size, "wont", or None: nothing, like a raw socket), and
    everything else goes to a pyte stream."""

    def __init__(self, port, window=(80, 25), answer="will"):
        super().__init__(port)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.window = window
        self.answer = answer
        self.screen = StrictScreen(*window)
        self.stream = pyte.ByteStream(self.screen)

    def resize(self, columns, rows, send=True):
        """The terminal's window changes (as pyte keeps the cells that still
        fit) and, with ``send``, the client reports it."""
        self.window = (columns, rows)
        self.screen.resize(rows, columns)
        if send:
            self.send(naws(columns, rows))

    def _option(self, verb, opt):
        super()._option(verb, opt)
        if verb == DO and opt == OPT_NAWS:
            if self.answer == "will":
                self.send(bytes((IAC, WILL, OPT_NAWS)) + naws(*self.window))
            elif self.answer == "wont":
                self.send(bytes((IAC, WONT, OPT_NAWS)))

    def read(self, seconds=0.2):
        return self._receive(self.stream, seconds)

    def read_until(self, predicate, timeout=CEILING_S):
        return super().read_until(self.stream, predicate, timeout)


class Rig(TelnetRig):
    def __init__(self, tmp_path, code=ECHO_BOOT):
        super().__init__(tmp_path, code)
        self.clients = []

    def client(self, window=(80, 25), answer="will"):
        c = NawsClient(self.port, window, answer)
        self.clients.append(c)
        return c

    def close(self):
        for c in self.clients:
            c.close()
        super().close()


rig_factory = rig_fixture(Rig)


def guest_screen(m):
    """(codes, attrs, cursor, blink) of the guest's displayed text page."""
    page = m.video.text_page()
    codes = np.array([[c["code"] for c in row] for row in page["cells"]], dtype=np.uint8)
    attrs = np.array([[c["attribute"] for c in row] for row in page["cells"]], dtype=np.uint8)
    return codes, attrs, m.video.cursor(), m.video.blink_enabled()


def fill_every_char_and_attribute(m):
    """Rows 4-19 of the 80-column page (below the prompt): all 256
    characters, each with its own attribute, written straight into video
    memory."""
    data = bytearray()
    for i in range(256 * 5):
        code = i & 0xFF
        data += bytes((code, (i * 7 + 3) & 0xFF if i >= 256 else code))
    m.memory.write(0xB8000 + 4 * 160, bytes(data[:16 * 160]))


BLANK = (" ", "default", "default", False, False)


def wanted_cell(guest, window, r, c, origin=(0, 0), notice=None):
    """What cell (r, c) of the client's window must hold: (character, fg, bg,
    blink, reverse).  ``notice`` (the last row's text) is None when the
    window holds the whole guest screen; then ``origin`` must be (0, 0)."""
    codes, attrs, _, blink = guest
    rows, cols = codes.shape
    w, h = window
    top, left = origin
    if notice is not None:
        if r == h - 1:
            return (notice[c], "default", "default", False, True) if c < len(notice) else BLANK
        shown_rows, shown_cols = h - 1, min(w, cols)
    else:
        shown_rows, shown_cols = rows, cols
    if r < shown_rows and c < shown_cols:
        attr = int(attrs[top + r, left + c])
        return (CP437[int(codes[top + r, left + c])],) + expected_colours(attr, blink) + (False,)
    return BLANK


def mismatches(client, guest, origin=(0, 0), notice=None):
    screen = client.screen
    bad = []
    for r in range(screen.lines):
        for c in range(screen.columns):
            got = screen.buffer[r][c]
            have = (got.data, got.fg, got.bg, got.blink, got.reverse)
            want = wanted_cell(guest, (screen.columns, screen.lines), r, c, origin, notice)
            if have != want:
                bad.append((r, c, have, want))
    return bad


def shows(client, guest, origin=(0, 0), notice=None):
    return lambda: not mismatches(client, guest, origin, notice)


def cursor_at(client, row, col):
    s = client.screen
    return (s.cursor.y, s.cursor.x, s.cursor.hidden) == (row, col, False)


# -- the whole guest screen fits -------------------------------------------------------------

@pytest.mark.parametrize("window", [(80, 25), (100, 30)])
def test_a_window_that_holds_the_guest_screen_shows_it_cell_for_cell(rig_factory, window):
    rig = rig_factory()
    assert rig.thread.run_until(at_prompt)
    rig.thread.call(fill_every_char_and_attribute)
    guest = rig.thread.call(guest_screen)
    cursor = guest[2]
    tn = rig.client(window)
    assert tn.read_until(shows(tn, guest))
    assert mismatches(tn, guest) == []
    assert cursor_at(tn, cursor["row"], cursor["column"])
    assert b"window" not in tn.raw
    assert tn.screen.violations == []
    assert (DO, OPT_NAWS) in tn.options


@pytest.mark.parametrize("answer", ["wont", None])
def test_a_client_that_refuses_or_ignores_naws_gets_the_full_screen(rig_factory, answer):
    rig = rig_factory()
    assert rig.thread.run_until(at_prompt)
    rig.thread.call(fill_every_char_and_attribute)
    guest = rig.thread.call(guest_screen)
    tn = rig.client((80, 25), answer=answer)
    assert tn.read_until(shows(tn, guest))
    cursor = guest[2]
    assert cursor_at(tn, cursor["row"], cursor["column"])
    # the stream is the one a client without NAWS always got: set-up, the
    # screen row by row, the cursor
    assert tn.raw.startswith(SETUP.encode() + b"\x1b[0m\x1b[2J\x1b[1;1H")
    assert b"window" not in tn.raw
    assert (DONT, OPT_NAWS) not in tn.options       # a WONT is not answered


# -- a smaller window ---------------------------------------------------------------------

def test_a_smaller_window_shows_the_top_left_part_and_a_notice(rig_factory):
    rig = rig_factory()
    assert rig.thread.run_until(at_prompt)
    rig.thread.call(fill_every_char_and_attribute)
    guest = rig.thread.call(guest_screen)
    cursor = guest[2]
    row = cursor["row"]
    assert row < 19 and cursor["column"] == len(ECHO_PROMPT)    # inside the part shown
    tn = rig.client((60, 20))
    notice = "window 60x20 < guest 80x25: rows 1-19, columns 1-60"
    assert tn.read_until(shows(tn, guest, notice=notice))
    assert cursor_at(tn, row, len(ECHO_PROMPT))
    assert tn.screen.display[19].rstrip() == notice
    # a change in the part shown is sent as one cell; typing moves the cursor
    quiet = len(tn.raw)
    rig.thread.call(lambda m: m.type_text("q"))
    assert rig.thread.run_until(lambda m: m.screen_contains(ECHO_PROMPT + "q")
                                and m.waiting_for_key())
    guest = rig.thread.call(guest_screen)
    assert tn.read_until(lambda: shows(tn, guest, notice=notice)()
                         and cursor_at(tn, row, len(ECHO_PROMPT) + 1))
    tn.read(0.3)
    update = bytes(tn.raw[quiet:])
    assert b"q" in update and len(update) < 80 and b"\x1b[2J" not in update
    # a change outside it sends nothing at all
    quiet = len(tn.raw)
    rig.thread.call(lambda m: m.memory.write(0xB8000 + 22 * 160 + 70 * 2, b"Z\x1f"))
    rig.thread.run_until(lambda m: False, max_seconds=0.5)
    tn.read(0.5)
    assert bytes(tn.raw[quiet:]) == b""
    assert tn.screen.violations == []


def test_the_view_follows_the_cursor_out_of_the_top_left_part(rig_factory):
    rig = rig_factory()
    assert rig.thread.run_until(at_prompt)
    tn = rig.client((8, 6))
    # the cursor is at column 11 of a row in the part's first 5: columns
    # 5-12 are shown (origin column 4)
    guest = rig.thread.call(guest_screen)
    row = guest[2]["row"]
    assert row < 5 and guest[2]["column"] == 11
    assert tn.read_until(shows(tn, guest, (0, 4), "r1 c5"))
    assert cursor_at(tn, row, 7)
    assert tn.screen.display[row] == " HERE>  "
    rig.thread.call(lambda m: m.type_text("ab"))
    assert rig.thread.run_until(lambda m: m.screen_contains(ECHO_PROMPT + "ab")
                                and m.waiting_for_key())
    guest = rig.thread.call(guest_screen)
    assert tn.read_until(lambda: shows(tn, guest, (0, 6), "r1 c7")()
                         and cursor_at(tn, row, 7))
    assert tn.screen.display[row] == "ERE> ab "
    assert tn.screen.violations == []


# -- resizing -------------------------------------------------------------------------------

def test_a_resize_redraws_for_the_new_window_both_ways(rig_factory):
    rig = rig_factory()
    assert rig.thread.run_until(at_prompt)
    rig.thread.call(fill_every_char_and_attribute)
    guest = rig.thread.call(guest_screen)
    cursor = guest[2]
    tn = rig.client((80, 25))
    assert tn.read_until(shows(tn, guest))
    tn.resize(50, 12)
    notice = "50x12<80x25 rows 1-11 cols 1-50"
    assert tn.read_until(shows(tn, guest, notice=notice))
    assert cursor_at(tn, cursor["row"], cursor["column"])
    tn.resize(80, 25)
    assert tn.read_until(shows(tn, guest))
    assert cursor_at(tn, cursor["row"], cursor["column"])
    # the classic 80x24 terminal: one row short
    tn.resize(80, 24)
    assert tn.read_until(shows(tn, guest, notice="window 80x24 < guest 80x25: "
                                                 "rows 1-23, columns 1-80"))
    assert tn.screen.violations == []


def test_a_resize_while_the_machine_stands_still_redraws_too(rig_factory):
    rig = rig_factory()
    assert rig.thread.run_until(at_prompt)
    guest = rig.thread.call(guest_screen)
    tn = rig.client((80, 25))
    assert tn.read_until(shows(tn, guest))
    # the machine thread stops serving the viewers: no new picture comes
    stop = rig.thread.call(lambda m: rig.frontends.display)
    rig.thread.close()
    seq = stop.seq
    tn.resize(30, 8)
    assert tn.read_until(shows(tn, guest, notice="30x8<80x25 rows 1-7 cols 1-30"))
    assert stop.seq == seq
    assert tn.screen.violations == []


def test_naws_cut_across_sends_with_a_doubled_255(rig_factory):
    rig = rig_factory()
    assert rig.thread.run_until(at_prompt)
    guest = rig.thread.call(guest_screen)
    tn = rig.client((255, 10), answer=None)
    assert tn.read_until(lambda: (DO, OPT_NAWS) in tn.options)
    report = bytes((IAC, WILL, OPT_NAWS)) + naws(255, 10)
    assert report == bytes((IAC, WILL, OPT_NAWS, IAC, SB, OPT_NAWS, 0, IAC, IAC, 0, 10, IAC, SE))
    for piece in (report[:4], report[4:7], report[7:8], report[8:9], report[9:12],
                  report[12:]):
        tn.send(piece)
        time.sleep(0.02)                  # separate segments (not asserted)
    notice = ("window 255x10 is smaller than the guest's 80x25 screen: "
              "rows 1-9, columns 1-80 shown")
    assert tn.read_until(shows(tn, guest, notice=notice))
    assert tn.screen.violations == []


# -- guest modes -------------------------------------------------------------------------

def test_40_and_80_columns_in_a_window_of_60(rig_factory):
    rig = rig_factory(MODES_40_80_BOOT)
    assert rig.thread.run_until(at_prompt)
    guest = rig.thread.call(guest_screen)
    assert guest[0].shape == (25, 40)
    tall = rig.client((60, 25))
    short = rig.client((60, 20))
    assert tall.read_until(shows(tall, guest))                 # 40x25 fits in 60x25
    assert short.read_until(shows(short, guest, notice="window 60x20 < guest 40x25: "
                                                       "rows 1-19, columns 1-40"))
    rig.thread.call(lambda m: m.type_text(" "))
    assert rig.thread.run_until(lambda m: at_prompt(m) and m.video.text_page()["columns"] == 80)
    guest = rig.thread.call(guest_screen)
    assert guest[0].shape == (25, 80)
    assert tall.read_until(shows(tall, guest, notice="window 60x25 < guest 80x25: "
                                                     "rows 1-24, columns 1-60"))
    assert short.read_until(shows(short, guest, notice="window 60x20 < guest 80x25: "
                                                       "rows 1-19, columns 1-60"))
    for c in (tall, short):
        assert cursor_at(c, 0, len(ECHO_PROMPT))
        assert c.screen.violations == []


def test_the_graphics_notice_fits_a_small_window(rig_factory):
    rig = rig_factory(program_bytes("video"))        # mode 4, waiting for a key
    assert rig.thread.run_until(lambda m: m.memory.read(0x602, 1)[0] == 1
                                and m.waiting_for_key())
    tn = rig.client((30, 6))
    assert tn.read_until(lambda: any("graphics mode" in r for r in tn.screen.display))
    tn.read(0.3)
    # centred in the window; the longer line loses its trailing pad so the
    # last column stays blank
    assert tn.screen.display == [line.ljust(30) for line in (
        "", "", "    graphics mode (CGA G320)", " the telnet viewer shows text", "", "")]
    assert tn.screen.buffer[3][0].reverse and not tn.screen.buffer[3][29].reverse
    assert tn.screen.cursor.hidden
    assert tn.screen.violations == []


# -- the parts, without a machine ----------------------------------------------------------

def test_naws_parsing_byte_by_byte():
    t = TelnetInput()
    stream = (b"a" + bytes((IAC, WILL, OPT_NAWS)) + naws(0x1FF, 255) + b"b"
              + naws(300, 0) + bytes((IAC, IAC)))
    replies, text = bytearray(), []
    for b in stream:
        r, s = t.feed(bytes((b,)))
        replies += r
        text.append(s)
    assert bytes(replies) == b""                    # WILL answers our DO
    assert "".join(text) == "ab\xff"
    assert t.window == (300, 0) and t.windows == 2 and t.naws is True
    t = TelnetInput()
    t.feed(naws(0x1FF, 255))
    assert t.window == (0x1FF, 255)


def test_bad_reports_change_nothing():
    t = TelnetInput()
    t.feed(naws(90, 30))
    for bad in (bytes((IAC, SB, OPT_NAWS, 0, 80, 0, IAC, SE)),          # three bytes
                bytes((IAC, SB, OPT_NAWS, 0, 80, 0, 25, 0, IAC, SE)),   # five
                bytes((IAC, SB, OPT_NAWS)) + bytes(SB_LIMIT + 10) + bytes((IAC, SE)),
                bytes((IAC, SB, 24, 0, 80, 0, 25, IAC, SE)),            # another option
                bytes((IAC, SB, IAC, SE))):
        assert t.feed(bad) == (b"", "")
        assert t.window == (90, 30) and t.windows == 1
    # a report never ended: a command after it is still read
    replies, text = t.feed(bytes((IAC, SB, OPT_NAWS, 0, 10, IAC, DO, 24)) + b"x")
    assert (replies, text, t.window) == (bytes((IAC, WONT, 24)), "x", (90, 30))


def test_naws_refused_and_switched_off():
    t = TelnetInput()
    assert t.feed(bytes((IAC, WONT, OPT_NAWS))) == (b"", "")
    assert t.naws is False and t.window is None
    # offered later: accepted (DO), then switched off (acknowledged with DONT)
    assert t.feed(bytes((IAC, WILL, OPT_NAWS)))[0] == bytes((IAC, DO, OPT_NAWS))
    assert t.feed(bytes((IAC, WILL, OPT_NAWS)))[0] == b""
    assert t.feed(bytes((IAC, WONT, OPT_NAWS)))[0] == bytes((IAC, DONT, OPT_NAWS))
    assert t.feed(bytes((IAC, WONT, OPT_NAWS)))[0] == b""


def random_snapshot(rng, rows=25, cols=80, cursor=(3, 7), mode="80x25 text", epoch=0):
    return Snapshot(seq=1, epoch=epoch, clock=0, adapter="CGA", mode=mode, graphics=False,
                    codes=rng.integers(0, 256, (rows, cols), dtype=np.uint8),
                    attrs=rng.integers(0, 256, (rows, cols), dtype=np.uint8), blink=True,
                    cursor={"enabled": True, "row": cursor[0], "column": cursor[1]})


def fed(window, *texts):
    screen = StrictScreen(*window)
    stream = pyte.ByteStream(screen)
    for text in (SETUP,) + texts:
        stream.feed(text.encode("utf-8"))
    return screen


def test_any_window_size_gets_a_picture_that_never_wraps_or_scrolls():
    rng = np.random.default_rng(5)
    for rows, cols in ((25, 80), (25, 40)):
        snap = random_snapshot(rng, rows, cols, cursor=(rows - 1, cols - 1))
        guest = (snap.codes, snap.attrs, snap.cursor, snap.blink)
        for w in (1, 2, 9, 39, 40, 41, 79, 80, 81):
            for h in (1, 2, 5, 24, 25, 26):
                view = ScreenView()
                view.set_window((w, h))
                screen = fed((w, h), view.render(snap))
                assert screen.violations == [], (w, h)
                if w >= cols and h >= rows:
                    origin, notice = (0, 0), None
                else:
                    notice = screen.display[h - 1].rstrip()
                    assert len(notice) < w and (notice or w < 4)
                    origin = (max(0, rows - (h - 1)), max(0, cols - w))   # the cursor's corner
                client = type("C", (), {"screen": screen})
                assert mismatches(client, guest, origin, notice) == [], (w, h)
                if h > 1:
                    assert (screen.cursor.y, screen.cursor.x) == (
                        rows - 1 - origin[0], cols - 1 - origin[1])


def test_a_window_that_holds_the_screen_gets_the_bytes_a_client_without_naws_gets():
    rng = np.random.default_rng(6)
    first = random_snapshot(rng)
    second = random_snapshot(rng)
    second.codes[:5] = first.codes[:5]
    second.attrs[:5] = first.attrs[:5]
    for window in ((80, 25), (200, 60), (0, 0), (80, 0), (0, 25)):
        plain, sized = ScreenView(), ScreenView()
        sized.set_window(window)
        got = [sized.render(s) for s in (first, second)]
        assert got == [plain.render(s) for s in (first, second)]
        assert "\x1b[2J" in got[0] and "\x1b[2J" not in got[1]
        assert "\x1b[1;1H" in got[0] and "\x1b[1;1H" not in got[1]     # row 1 did not change


def test_zero_is_an_unknown_dimension():
    rng = np.random.default_rng(7)
    snap = random_snapshot(rng, cursor=(0, 0))
    guest = (snap.codes, snap.attrs, snap.cursor, snap.blink)
    view = ScreenView()
    view.set_window((40, 0))                    # width known, height not: the guest's
    screen = fed((40, 25), view.render(snap))
    notice = "40x?<80x25 rows 1-24 cols 1-40"
    assert mismatches(type("C", (), {"screen": screen}), guest, (0, 0), notice) == []
    assert screen.violations == []


def test_the_part_shown_moves_with_the_cursor_without_a_full_redraw():
    rng = np.random.default_rng(8)
    snap = random_snapshot(rng, cursor=(20, 5))
    view = ScreenView()
    view.set_window((80, 10))
    screen = fed((80, 10), view.render(snap))
    client = type("C", (), {"screen": screen})
    guest = (snap.codes, snap.attrs, snap.cursor, snap.blink)
    assert mismatches(client, guest, (12, 0), "window 80x10 < guest 80x25: "
                                              "rows 13-21, columns 1-80") == []
    assert (screen.cursor.y, screen.cursor.x) == (8, 5)
    stream = pyte.ByteStream(screen)
    # the cursor goes up to row 2: the part moves up to start there
    up = random_snapshot(rng, cursor=(2, 5))
    up.codes[:], up.attrs[:] = snap.codes, snap.attrs
    text = view.render(up)
    assert "\x1b[2J" not in text
    stream.feed(text.encode("utf-8"))
    assert mismatches(client, guest, (2, 0), "window 80x10 < guest 80x25: "
                                             "rows 3-11, columns 1-80") == []
    assert (screen.cursor.y, screen.cursor.x) == (0, 5)
    # a cursor that is off moves nothing (and is hidden)
    off = random_snapshot(rng, cursor=(24, 0))
    off.codes[:], off.attrs[:] = snap.codes, snap.attrs
    off.cursor["enabled"] = False
    stream.feed(view.render(off).encode("utf-8"))
    assert mismatches(client, guest, (2, 0), "window 80x10 < guest 80x25: "
                                             "rows 3-11, columns 1-80") == []
    assert screen.cursor.hidden and screen.violations == []
