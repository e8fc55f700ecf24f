"""The VNC viewer (pypc_core/frontends/vnc.py) against a real VNC client
library (vncdotool) and a hand-written RFB client: frames equal pixel for
pixel to the renderer's in CGA text and graphics modes and VGA modes 13h,
12h and text, incremental updates of the changed tiles only, the display
epoch, pixel formats, protocol versions, clients that vanish, keys only
under --no-rpc, and the command line's checks.

The machine runs on its own thread (viewers_common.MachineThread) as under
the launcher; every wall time is a ceiling, never an assertion.
"""

import base64
import io
import json
import socket
import struct
import subprocess

import numpy as np
import pytest

from guest import program_bytes
import viewers_common
from test_launcher import pypc_command, pypc_env
from viewers_common import (CEILING_S, ECHO_BOOT, ECHO_PROMPT, VGA_MODES_BOOT, TelnetClient,
                            ViewerRig, at_prompt, floppy, free_port, recv_exactly, rig_fixture,
                            viewer_args, wait_for)

vncdotool = pytest.importorskip("vncdotool")
from PIL import Image  # noqa: E402  (vncdotool's own dependency)
from vncdotool import api, client, rfb  # noqa: E402

from pypc_core.cli import viewers as frontends  # noqa: E402
from pypc_core.frontends.vnc import (PixelFormat, changed_rects, keysym_to_scancode,  # noqa: E402
                                     zrle_tiles)
from pypc_core.machine import CPU_HZ  # noqa: E402

TILE = 16


# -- a vncdotool client that remembers the rectangles of every update --------------

class RecordingClient(client.VNCDoToolClient):
    def commitUpdate(self, rectangles=None):
        self.factory.updates.append(list(rectangles or []))
        super().commitUpdate(rectangles)


class ZrleClient(RecordingClient):
    encoding = rfb.Encoding.ZRLE


def _factory(protocol_class):
    class Factory(client.VNCDoToolFactory):
        protocol = protocol_class
        pseudodesktop = True

        def __init__(self):
            super().__init__()
            self.updates = []
    return Factory


ENCODINGS = {"raw": _factory(RecordingClient), "zrle": _factory(ZrleClient)}


def connect(port, encoding="zrle"):
    return api.connect(f"127.0.0.1::{port}", factory_class=ENCODINGS[encoding],
                       timeout=CEILING_S)


def capture(c, incremental=False):
    buf = io.BytesIO()
    c.captureScreen(buf, incremental=incremental, format="PNG")
    return np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("RGB"))


def last_rects(c):
    return c.factory.updates[-1]


# -- machines -----------------------------------------------------------------------

rig_factory = rig_fixture(ViewerRig)


# -- frames equal the renderer's ------------------------------------------------------

@pytest.mark.parametrize("encoding", ["raw", "zrle"])
def test_cga_text_frame_is_the_renderers_frame(rig_factory, encoding):
    rig = rig_factory(ECHO_BOOT)
    assert rig.thread.run_until(at_prompt)
    c = connect(rig.port, encoding)
    try:
        got = capture(c)
        want = rig.frame()
        assert want.shape == (200, 640, 3)
        assert got.shape == want.shape
        assert np.array_equal(got, want)
        assert last_rects(c) == [(0, 0, 640, 200)]
    finally:
        c.disconnect()


@pytest.mark.parametrize("encoding", ["raw", "zrle"])
def test_cga_graphics_frame_is_the_renderers_frame(rig_factory, encoding):
    # tests/guest/video.asm: mode 4 drawn, phase 1 while it waits for a key
    rig = rig_factory(program_bytes("video"))
    assert rig.thread.run_until(lambda m: m.memory.read(0x602, 1)[0] == 1 and m.waiting_for_key())
    assert rig.thread.call(lambda m: m.video.mode_name()) == "G320"
    c = connect(rig.port, encoding)
    try:
        got = capture(c)
        want = rig.frame()
        assert len(np.unique(want.reshape(-1, 3), axis=0)) >= 3     # something is drawn
        assert np.array_equal(got, want)
    finally:
        c.disconnect()


def test_vga_modes_at_native_resolution_with_desktop_size(rig_factory):
    rig = rig_factory(VGA_MODES_BOOT, video="vga")
    assert rig.thread.run_until(lambda m: m.video.mode_number() == 0x13 and m.waiting_for_key())
    c = connect(rig.port, "zrle")
    try:
        got = capture(c)
        want = rig.frame()
        assert want.shape == (200, 320, 3)
        assert len(np.unique(want.reshape(-1, 3), axis=0)) > 200   # the 256-colour fill
        assert np.array_equal(got, want)

        # a key: mode 12h, 640x480, sent with a DesktopSize change to this client
        rig.thread.call(lambda m: m.type_text(" "))
        assert rig.thread.run_until(lambda m: m.video.mode_number() == 0x12 and m.waiting_for_key())
        got = capture(c, incremental=True)
        want = rig.frame()
        assert want.shape == (480, 640, 3)
        assert got.shape == want.shape
        assert np.array_equal(got, want)
        assert (want[100, 1:257] != 0).all()              # the line INT 10h drew

        # and text mode 3: 720x400
        rig.thread.call(lambda m: m.type_text(" "))
        assert rig.thread.run_until(lambda m: not m.video.is_graphics()
                                    and m.screen_contains("A"))
        got = capture(c, incremental=True)
        want = rig.frame()
        assert want.shape == (400, 720, 3)
        assert got.shape == want.shape
        assert np.array_equal(got, want)
    finally:
        c.disconnect()


# -- incremental updates and the epoch ------------------------------------------------

def changed_tiles(a, b):
    """The 16x16 tiles where two frames differ (the test's own loop)."""
    h, w = a.shape[:2]
    tiles = set()
    for ty in range(0, h, TILE):
        for tx in range(0, w, TILE):
            if not np.array_equal(a[ty:ty + TILE, tx:tx + TILE], b[ty:ty + TILE, tx:tx + TILE]):
                tiles.add((tx, ty))
    return tiles


def tiles_of(rects):
    out = set()
    for x, y, w, h in rects:
        assert x % TILE == 0 and y % TILE == 0
        for ty in range(y, y + h, TILE):
            for tx in range(x, x + w, TILE):
                assert (tx, ty) not in out, "two rectangles cover one tile"
                out.add((tx, ty))
    return out


@pytest.mark.parametrize("encoding", ["raw", "zrle"])
def test_incremental_update_sends_only_the_changed_tiles(rig_factory, encoding):
    rig = rig_factory(ECHO_BOOT)
    assert rig.thread.run_until(at_prompt)
    c = connect(rig.port, encoding)
    try:
        before = capture(c)
        assert np.array_equal(before, rig.frame())
        rig.thread.call(lambda m: m.type_text("x"))
        assert rig.thread.run_until(lambda m: m.screen_contains(ECHO_PROMPT + "x")
                                    and m.waiting_for_key())
        after_frame = rig.frame()
        got = capture(c, incremental=True)
        assert np.array_equal(got, after_frame)
        want_tiles = changed_tiles(before, after_frame)
        assert want_tiles, "the echo changed nothing on the screen"
        assert tiles_of(last_rects(c)) == want_tiles
        assert len(want_tiles) <= 4                  # the new character and the cursor
    finally:
        c.disconnect()


def test_a_restored_state_sends_the_whole_frame(rig_factory):
    rig = rig_factory(ECHO_BOOT)
    assert rig.thread.run_until(at_prompt)
    state = rig.thread.call(lambda m: m.get_state())
    c = connect(rig.port)
    try:
        capture(c)
        rig.thread.call(lambda m: m.type_text("y"))
        assert rig.thread.run_until(lambda m: m.screen_contains(ECHO_PROMPT + "y"))
        capture(c, incremental=True)
        assert last_rects(c) != [(0, 0, 640, 200)]
        epoch = rig.thread.call(lambda m: m.display_epoch)
        rig.thread.call(lambda m: m.set_state(state))
        assert rig.thread.call(lambda m: m.display_epoch) == epoch + 1
        got = capture(c, incremental=True)
        assert last_rects(c) == [(0, 0, 640, 200)]
        assert np.array_equal(got, rig.frame())
        # the snapshot engineer's entry point does the same without a restore
        rig.thread.call(lambda m: m.new_display_epoch())
        capture(c, incremental=True)
        assert last_rects(c) == [(0, 0, 640, 200)]
    finally:
        c.disconnect()


# -- keys -------------------------------------------------------------------------

@pytest.mark.parametrize("no_rpc", [True, False])
def test_keys_reach_the_guest_only_without_rpc(rig_factory, no_rpc):
    rig = rig_factory(ECHO_BOOT, no_rpc=no_rpc)
    assert rig.thread.run_until(at_prompt)
    c = connect(rig.port)
    try:
        capture(c)
        for key in ("h", "i", "shift-1"):
            c.keyPress(key)
        # the reader handles a client's messages in order: once the update
        # for a later request has arrived, the key events have been handled
        capture(c)
        typed = rig.thread.run_until(lambda m: m.screen_contains(ECHO_PROMPT + "hi!"),
                                     max_seconds=2.0)
        assert typed is no_rpc
        if not no_rpc:
            assert rig.thread.call(lambda m: m.keyboard.typing_pending() == 0
                                   and m.screen_contains(ECHO_PROMPT.rstrip())
                                   and not m.screen_contains(ECHO_PROMPT + "h"))
    finally:
        c.disconnect()


def test_keysyms():
    assert keysym_to_scancode(ord("a")) == 0x1E
    assert keysym_to_scancode(ord("A")) == 0x1E
    assert keysym_to_scancode(ord("!")) == 0x02
    assert keysym_to_scancode(0xFF0D) == 0x1C      # Return
    assert keysym_to_scancode(0xFFE1) == 0x2A      # Shift_L
    assert keysym_to_scancode(0xFFBE) == 0x3B      # F1
    assert keysym_to_scancode(0xFF52) == 0x48      # Up
    assert keysym_to_scancode(0x20AC) is None      # the euro sign: no XT key


# -- a hand-written RFB client: versions, pixel formats, a vanishing client --------

class RawRfb:
    def __init__(self, port, version=b"RFB 003.008\n"):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=CEILING_S)
        assert self.recv(12) == b"RFB 003.008\n"
        self.sock.sendall(version)
        if version >= b"RFB 003.007":
            n = self.recv(1)[0]
            assert list(self.recv(n)) == [1]
            self.sock.sendall(b"\x01")
            if version >= b"RFB 003.008":
                assert self.recv(4) == b"\0\0\0\0"
        else:
            assert struct.unpack("!I", self.recv(4))[0] == 1
        self.sock.sendall(b"\x01")
        self.width, self.height = struct.unpack("!HH", self.recv(4))
        self.format = self.recv(16)
        name_len = struct.unpack("!I", self.recv(4))[0]
        self.name = self.recv(name_len)

    def recv(self, n):
        return recv_exactly(self.sock, n)

    def set_format(self, fmt):
        self.sock.sendall(b"\0\0\0\0" + fmt.pack())

    def set_encodings(self, *encs):
        self.sock.sendall(struct.pack("!BxH", 2, len(encs)) + struct.pack(f"!{len(encs)}i", *encs))

    def request(self, incremental=False, x=0, y=0, w=None, h=None):
        self.sock.sendall(struct.pack("!BBHHHH", 3, incremental, x, y,
                                      self.width if w is None else w,
                                      self.height if h is None else h))

    def update(self):
        kind, count = struct.unpack("!BxH", self.recv(4))
        assert kind == 0
        rects = []
        for _ in range(count):
            x, y, w, h, enc = struct.unpack("!HHHHi", self.recv(12))
            rects.append((x, y, w, h, enc))
        return rects

    def close(self):
        self.sock.close()


@pytest.mark.parametrize("version", [b"RFB 003.003\n", b"RFB 003.007\n", b"RFB 003.008\n"])
def test_protocol_versions(rig_factory, version):
    rig = rig_factory(ECHO_BOOT)
    assert rig.thread.run_until(at_prompt)
    cl = RawRfb(rig.port, version)
    try:
        assert (cl.width, cl.height) == (640, 200)
        assert cl.name == b"pypc (CGA)"
        assert PixelFormat.parse(cl.format).bpp == 32
        cl.set_encodings(0)
        cl.request()
        assert cl.update() == [(0, 0, 640, 200, 0)]
        assert cl.recv(640 * 200 * 4)
    finally:
        cl.close()


@pytest.mark.parametrize("fmt", [
    PixelFormat(16, 16, 1, 1, 31, 63, 31, 11, 5, 0),      # RGB565 big endian
    PixelFormat(16, 15, 0, 1, 31, 31, 31, 10, 5, 0),      # RGB555 little endian
    PixelFormat(8, 8, 0, 1, 7, 7, 3, 0, 3, 6),            # BGR233
    PixelFormat(32, 24, 1, 1, 255, 255, 255, 0, 8, 16),   # XBGR big endian
])
def test_pixel_formats_raw(rig_factory, fmt):
    rig = rig_factory(ECHO_BOOT)
    assert rig.thread.run_until(at_prompt)
    cl = RawRfb(rig.port)
    try:
        cl.set_format(fmt)
        cl.set_encodings(0)
        cl.request()
        rects = cl.update()
        assert rects == [(0, 0, 640, 200, 0)]
        data = cl.recv(640 * 200 * fmt.bytes)
        frame = rig.frame()
        dtype = np.dtype({8: np.uint8, 16: np.uint16, 32: np.uint32}[fmt.bpp])
        dtype = dtype.newbyteorder(">" if fmt.big_endian else "<")
        values = np.frombuffer(data, dtype=dtype).reshape(200, 640).astype(np.uint32)
        for ch in range(3):
            got = (values >> fmt.shift[ch]) & fmt.max[ch]
            want = (frame[:, :, ch].astype(np.uint32) * fmt.max[ch] + 127) // 255
            assert np.array_equal(got, want)
    finally:
        cl.close()


def test_zrle_tiles_decode_to_the_pixels():
    """Every ZRLE sub-encoding the server uses (solid, 2/3-4/5-16 colour
    packed palettes with rows padded to a byte, raw) decoded by the rules of
    RFC 6143 here, on odd tile widths."""
    rng = np.random.default_rng(5)
    fmt = PixelFormat(32, 24, 0, 1, 255, 255, 255, 16, 8, 0)
    for colours in (1, 2, 3, 4, 5, 16, 17, 200):
        palette = rng.integers(0, 256, size=(colours, 3), dtype=np.uint8)
        idx = rng.integers(0, colours, size=(70, 83))
        idx.flat[:colours] = np.arange(colours)        # every colour is used
        rgb = palette[idx]
        data = zrle_tiles(fmt.encode(rgb), fmt.cpixel_slice())
        assert np.array_equal(decode_zrle(data, 83, 70), rgb), colours


def decode_zrle(data, width, height):
    """ZRLE of true colour with 3-byte CPIXELs (B, G, R bytes) as RGB."""
    return viewers_common.decode_zrle(
        data, np.zeros((height, width, 3), dtype=np.uint8), 3,
        lambda data, pos, n: np.frombuffer(data, dtype=np.uint8, count=3 * n,
                                           offset=pos).reshape(n, 3)[:, ::-1])


def test_changed_rects_cover_exactly_the_changed_tiles():
    rng = np.random.default_rng(7)
    a = rng.integers(0, 4, size=(200, 640, 3), dtype=np.uint8)
    for _ in range(20):
        b = a.copy()
        for _ in range(rng.integers(1, 30)):
            y, x = rng.integers(0, 200), rng.integers(0, 640)
            b[y, x] ^= 1
        assert tiles_of(changed_rects(a, b)) == changed_tiles(a, b)
    assert changed_rects(a, a.copy()) == []


def test_a_client_that_vanishes_mid_frame_does_not_disturb_the_machine(rig_factory):
    rig = rig_factory(ECHO_BOOT)
    assert rig.thread.run_until(at_prompt)
    server = rig.frontends.vnc
    for _ in range(5):
        cl = RawRfb(rig.port)
        cl.set_format(PixelFormat(32, 24, 0, 1, 255, 255, 255, 16, 8, 0))
        cl.set_encodings(0)
        cl.request()
        cl.recv(20)                    # the first bytes of the update, then gone
        cl.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        cl.close()                     # a reset in the middle of the pixels
    assert wait_for(lambda: not server.sessions)
    assert rig.frontends.display.viewers == 0
    # the machine runs on and still answers, and a new client gets a whole frame
    before = rig.thread.call(lambda m: m.clock())
    rig.thread.call(lambda m: m.type_text("z"))
    assert rig.thread.run_until(lambda m: m.screen_contains(ECHO_PROMPT + "z"))
    assert rig.thread.call(lambda m: m.clock()) > before
    c = connect(rig.port)
    try:
        assert np.array_equal(capture(c), rig.frame())
    finally:
        c.disconnect()


def test_no_viewer_no_snapshot(rig_factory):
    """Nothing is rendered for viewers while none is connected."""
    rig = rig_factory(ECHO_BOOT)
    assert rig.thread.run_until(at_prompt)
    rig.thread.call(lambda m: m.run_for(CPU_HZ))
    assert rig.frontends.display.published == 0


# -- the command line -------------------------------------------------------------------

def pypc_run(*args, timeout=120, rpc=False, defaults=False):
    """``pypc run --headless --turbo ARGS``, with ``--no-rpc`` unless ``rpc``
    and ``--no-telnet`` / ``--no-vnc`` for a viewer ARGS do not name unless
    ``defaults`` (only runs refused before anything listens may leave the
    servers on their default ports: several test processes at once would all
    want 2300, 2301 and 5902)."""
    args = [str(a) for a in args]
    extra = [] if rpc else ["--no-rpc"]
    if not defaults:
        extra += [off for port, off in (("--telnet-port", "--no-telnet"),
                                        ("--vnc-port", "--no-vnc")) if port not in args]
    return subprocess.run(pypc_command() + ["run", "--headless", "--turbo"] + extra + args,
                          env=pypc_env(), capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def one_line_error(proc, *words):
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pypc: error:"), proc.stderr
    for w in words:
        assert w in lines[0], lines[0]


@pytest.mark.parametrize("args, words", [
    (["--vnc-port", "7000", "--telnet-port", "7000"], ["--telnet-port", "--vnc-port", "differ"]),
    (["--telnet-port", "7001", "--rpc-port", "7001"], ["--telnet-port", "--rpc-port"]),
    (["--vnc-port", "2301", "--telnet-port", "2301", "--rpc-port", "0"], ["differ"]),
    (["--vnc-port=-1"], ["outside 0-65535"]),
    (["--vnc-port", "70000"], ["outside 0-65535"]),
    (["--telnet-port", "x23"], ["not a port"]),
    (["--vnc-port"], ["expected one argument"]),
    (["--listen", "localhost"], ["--listen", "not an IP address"]),
    (["--no-viewers", "--listen", "0.0.0.0"], ["--listen", "--no-viewers"]),
    (["--no-telnet", "--no-vnc", "--listen", "0.0.0.0"], ["--listen", "leaves none"]),
    (["--telnet-port", "7002", "--no-telnet"], ["--telnet-port", "--no-telnet", "contradict"]),
    (["--vnc-port", "7003", "--no-viewers"], ["--vnc-port", "--no-viewers", "contradict"]),
    (["--listen", "0.0.0.0"], ["--listen", "serves none", "--vnc-port"]),     # a job
])
def test_bad_viewer_options(args, words):
    one_line_error(pypc_run(*args, "--timeout", "1", rpc=True, defaults=True), *words)


@pytest.mark.parametrize("args, words", [
    # a server role's defaults count: telnet 2300, VNC 5902, RPC 2301
    (["--vnc-port", "2301"], ["--vnc-port", "--rpc-port", "2301"]),
    (["--vnc-port", "2300"], ["--telnet-port and --vnc-port are both 2300"]),
    (["--rpc-port", "5902"], ["--vnc-port and --rpc-port are both 5902"]),
    (["--telnet-port", "2301"], ["--telnet-port and --rpc-port are both 2301"]),
])
def test_an_agent_servers_default_ports_count(args, words):
    one_line_error(pypc_run("--serve", *args, rpc=True, defaults=True), *words)



def test_the_same_port_as_rpc_is_fine_without_rpc(tmp_path):
    port = free_port()
    proc = pypc_run("--vnc-port", port, "--rpc-port", port, "--timeout", "30",
                    "--until-text", ECHO_PROMPT.strip(),
                    "--floppy", floppy(tmp_path / "e.img", ECHO_BOOT))
    assert proc.returncode == 0, proc.stderr
    assert ECHO_PROMPT.strip() in proc.stdout


def test_a_busy_port_is_a_one_line_error(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        proc = pypc_run("--vnc-port", port, "--timeout", "1",
                        "--floppy", floppy(tmp_path / "e.img", ECHO_BOOT))
    one_line_error(proc, f"--vnc-port {port}", "cannot listen")


def test_the_command_line_viewers_and_keys_under_no_rpc(tmp_path):
    """``pypc run --no-rpc --vnc-port P --telnet-port Q``: both listen on
    127.0.0.1; keys typed in the telnet client and in vncdotool reach the
    built-in DOS shell (ECHO, then EXIT ends the run with status 0)."""
    import pyte
    vnc_port, telnet_port = free_port(), free_port()
    folder = tmp_path / "c"
    folder.mkdir()
    proc = subprocess.Popen(
        pypc_command() + ["run", "--headless", "--speed", "1", "--no-rpc",
                          "--vnc-port", str(vnc_port), "--telnet-port", str(telnet_port),
                          "--drive", f"C={folder}", "--timeout", "600"],
        env=pypc_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    c = None
    try:
        assert wait_for(lambda: _listening(telnet_port) or proc.poll() is not None,
                        timeout=CEILING_S * 2)
        assert proc.poll() is None, proc.communicate()
        tn = TelnetClient(telnet_port)
        screen = pyte.Screen(80, 25)
        stream = pyte.ByteStream(screen)
        assert tn.read_until(stream, lambda: any("C:\\>" in row for row in screen.display))
        tn.send(b"echo from telnet\r")
        assert tn.read_until(stream, lambda: any(row.startswith("from telnet")
                                                 for row in screen.display))
        c = connect(vnc_port, "zrle")
        for key in "exit":
            c.keyPress(key)
        c.keyPress("enter")
        proc.wait(timeout=CEILING_S)
        assert proc.returncode == 0, proc.stderr.read()
        tn.close()
    finally:
        if c is not None and proc.poll() is None:
            c.disconnect()              # (after the exit the connection is gone already)
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _listening(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def test_viewers_listen_on_localhost_only_by_default(rig_factory):
    rig = rig_factory(ECHO_BOOT, telnet_port=0)
    assert rig.frontends.vnc.listener.getsockname()[0] == "127.0.0.1"
    assert rig.frontends.telnet.listener.getsockname()[0] == "127.0.0.1"



class Rpc:
    """JSON lines to the RPC port of a running pypc."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=CEILING_S)
        self.file = self.sock.makefile("rw")
        self.next_id = 0

    def __call__(self, method, **params):
        self.next_id += 1
        self.file.write(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                                    "params": params}) + "\n")
        self.file.flush()
        reply = json.loads(self.file.readline())
        assert "result" in reply, reply
        return reply["result"]

    def close(self):
        self.sock.close()


def test_with_rpc_on_the_viewers_are_view_only_and_follow_rpc_changes(tmp_path):
    """``pypc run --rpc-port 0 --vnc-port P --telnet-port Q``: keys typed in
    vncdotool and in the telnet client never reach the guest (a second of
    emulated time later, read through the RPC, the prompt has nothing after
    it); a memory write through the RPC while the machine is paused reaches
    both viewers (the VNC update is one tile)."""
    import pyte
    vnc_port, telnet_port = free_port(), free_port()
    proc = subprocess.Popen(
        pypc_command() + ["run", "--headless", "--speed", "1", "--rpc-port", "0",
                          "--vnc-port", str(vnc_port), "--telnet-port", str(telnet_port),
                          "--floppy", floppy(tmp_path / "e.img", ECHO_BOOT), "--timeout", "600"],
        env=pypc_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    c = rpc = tn = None
    try:
        line = proc.stderr.readline()
        assert line.startswith("pypc: JSON-RPC on 127.0.0.1:"), line
        rpc = Rpc(int(line.rsplit(":", 1)[1]))
        assert wait_for(lambda: _listening(telnet_port) and _listening(vnc_port))
        tn = TelnetClient(telnet_port)
        screen = pyte.Screen(80, 25)
        stream = pyte.ByteStream(screen)
        assert tn.read_until(stream, lambda: any(ECHO_PROMPT.strip() in r for r in screen.display))
        c = connect(vnc_port)
        capture(c)
        for key in "ab":
            c.keyPress(key)
        capture(c)                                  # the key events are handled by now
        tn.send(b"cd" + bytes((255, 253, 24)))
        assert tn.read_until(stream, lambda: (252, 24) in tn.options)
        start = rpc("state.get_registers")["clock"]
        assert wait_for(lambda: rpc("state.get_registers")["clock"] > start + CPU_HZ)
        rows = rpc("video.text")["text"]
        prompt = [r for r in rows if ECHO_PROMPT.strip() in r]
        assert prompt == [ECHO_PROMPT.strip()], rows

        rpc("execution.pause")
        before = capture(c, incremental=False)
        rpc("memory.write", address=0xB8000 + 20 * 160,
            data_base64=base64.b64encode(bytes((0x41, 0x1F, 0x42, 0x1F))).decode())
        after = capture(c, incremental=True)
        assert last_rects(c) == [(0, 160, 16, 16)]
        assert not np.array_equal(before, after)
        assert tn.read_until(stream, lambda: screen.display[20].startswith("AB"))
    finally:
        for closer in (tn, rpc):
            if closer is not None:
                closer.close()
        if c is not None and proc.poll() is None:
            c.disconnect()
        proc.kill()
        proc.wait()


def test_port_rules_in_process():
    from pypc_core.errors import PypcError
    frontends.check_args(viewer_args(vnc_port=2301, rpc_port=0))        # RPC on a free port
    frontends.check_args(viewer_args(vnc_port=2301, no_rpc=True))       # no RPC at all
    frontends.check_args(viewer_args(vnc_port=5902, telnet_port=2300))  # the contract's ports
    frontends.check_args(viewer_args(vnc_port=2301))                    # a job: no RPC
    for bad in (viewer_args(vnc_port=2301, serve=True),
                viewer_args(vnc_port=2301, rpc_port=None, headless=False),
                viewer_args(telnet_port=5000, vnc_port=5000, no_rpc=True)):
        with pytest.raises(PypcError):
            frontends.check_args(bad)
