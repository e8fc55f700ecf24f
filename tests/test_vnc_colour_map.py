"""The VNC server's colour-map pixel formats (true-colour flag 0): a raw
RFB client written here sets an 8-bpp, a 16-bpp or a 32-bpp colour-map
format, applies the SetColourMapEntries messages it gets, decodes Raw and
ZRLE rectangles of map indices and compares the picture, pixel for pixel,
with the renderer's frame: CGA text, CGA 320x200 graphics (4 colours), VGA
mode 13h (256 colours, then a new DAC palette: more colours than the 8-bit
map has room for, so the map is rebuilt).  Later guest changes bring only
the changed tiles and only the colours the client's map lacks.  Also:
vncdotool in a colour-map format (its RFB layer parses the map and Raw
rectangles; its ZRLE decoder takes 3-byte CPIXELs only, so Raw), the map's
own rules (exact, rebuilt, nearest colours for a map too small), and the
refusal of formats that are still invalid.

The machine runs on its own thread (viewers_common.MachineThread);
every wall time is a ceiling, never an assertion.
"""

import io
import socket
import struct
import zlib

import numpy as np
import pytest

from guest import program_bytes
from viewers_common import (CEILING_S, ECHO_BOOT, ECHO_PROMPT, ViewerRig, at_prompt,
                            decode_zrle, recv_exactly, rig_fixture, wait_for)

from pypc_core.frontends.vnc import ColourMap, PixelFormat, colour_keys

TILE = 16
ENC_RAW, ENC_ZRLE = 0, 16

FORMATS = {
    "8": PixelFormat(8, 8, 0, 0, 0, 0, 0, 0, 0, 0),
    "16": PixelFormat(16, 16, 1, 0, 0, 0, 0, 0, 0, 0),       # big endian
    # 32 bits with depth 8: for true colour ZRLE would send 3-byte CPIXELs;
    # for a colour map the CPIXEL is the whole 4-byte PIXEL
    "32": PixelFormat(32, 8, 0, 0, 31, 63, 31, 11, 5, 0),
}

# A boot sector: mode 13h filled with colour = low byte of the offset (the
# default DAC: about 250 distinct colours), phase 1 at 0000:0600h, wait for a
# key; a new DAC palette (entry i = (i>>2, 63-(i>>2), (i&3)*21): 256 colours,
# nearly all new), phase 2, wait for a key; four pixels of colour 7 at
# (160, 100), phase 3, halt with interrupts on.
#
#   7C00  B8 13 00           mov  ax, 0013h
#   7C03  CD 10              int  10h
#   7C05  B8 00 A0           mov  ax, 0A000h
#   7C08  8E C0              mov  es, ax
#   7C0A  31 FF              xor  di, di
#   7C0C  B9 00 FA           mov  cx, 64000
#   7C0F  89 F8        l:    mov  ax, di
#   7C11  AA                 stosb
#   7C12  E2 FB              loop l
#   7C14  2E C6 06 00 06 01  mov  byte [cs:0600h], 1
#   7C1A  31 C0              xor  ax, ax
#   7C1C  CD 16              int  16h
#   7C1E  BA C8 03           mov  dx, 3C8h
#   7C21  30 C0              xor  al, al
#   7C23  EE                 out  dx, al
#   7C24  42                 inc  dx
#   7C25  31 DB              xor  bx, bx
#   7C27  88 D8        p:    mov  al, bl
#   7C29  D0 E8              shr  al, 1
#   7C2B  D0 E8              shr  al, 1
#   7C2D  EE                 out  dx, al          ; red
#   7C2E  B4 3F              mov  ah, 63
#   7C30  28 C4              sub  ah, al
#   7C32  88 E0              mov  al, ah
#   7C34  EE                 out  dx, al          ; green
#   7C35  88 D8              mov  al, bl
#   7C37  24 03              and  al, 3
#   7C39  B4 15              mov  ah, 21
#   7C3B  F6 E4              mul  ah
#   7C3D  EE                 out  dx, al          ; blue
#   7C3E  43                 inc  bx
#   7C3F  81 FB 00 01        cmp  bx, 256
#   7C43  75 E2              jne  p
#   7C45  2E C6 06 00 06 02  mov  byte [cs:0600h], 2
#   7C4B  31 C0              xor  ax, ax
#   7C4D  CD 16              int  16h
#   7C4F  BF A0 7D           mov  di, 100*320+160
#   7C52  B0 07              mov  al, 7
#   7C54  B9 04 00           mov  cx, 4
#   7C57  F3 AA              rep  stosb
#   7C59  2E C6 06 00 06 03  mov  byte [cs:0600h], 3
#   7C5F  FB           h:    sti
#   7C60  F4                 hlt
#   7C61  EB FC              jmp  h
VGA_PALETTE_BOOT = bytes.fromhex(
    "B81300 CD10 B800A0 8EC0 31FF B900FA 89F8 AA E2FB 2EC606000601 31C0 CD16"
    "BAC803 30C0 EE 42 31DB 88D8 D0E8 D0E8 EE B43F 28C4 88E0 EE 88D8 2403 B415"
    "F6E4 EE 43 81FB0001 75E2 2EC606000602 31C0 CD16"
    "BFA07D B007 B90400 F3AA 2EC606000603 FB F4 EBFC")
assert len(VGA_PALETTE_BOOT) == 0x63
PHASE = 0x600


rig_factory = rig_fixture(ViewerRig)


def phase(n, key=True):
    """The guest reached phase ``n`` (and, with ``key``, waits for a key)."""
    return lambda m: m.memory.read(PHASE, 1)[0] == n and (not key or m.waiting_for_key())


# -- a colour-map RFB client ------------------------------------------------------------

class MapClient:
    """RFB 3.8, security None, then the pixel format ``fmt`` (a colour map)
    and one encoding.  Keeps the client's colour map (16-bit components)
    and its picture as map indices."""

    def __init__(self, port, fmt, encoding):
        self.fmt = fmt
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=CEILING_S)
        assert self.recv(12) == b"RFB 003.008\n"
        self.sock.sendall(b"RFB 003.008\n")
        n = self.recv(1)[0]
        assert list(self.recv(n)) == [1]
        self.sock.sendall(b"\x01")
        assert self.recv(4) == b"\0\0\0\0"
        self.sock.sendall(b"\x01")
        self.width, self.height = struct.unpack("!HH", self.recv(4))
        self.recv(16)
        self.recv(struct.unpack("!I", self.recv(4))[0])
        self.sock.sendall(b"\0\0\0\0" + fmt.pack())
        self.sock.sendall(struct.pack("!BxHi", 2, 1, encoding))
        self.encoding = encoding
        self.map = {}                       # index -> (r, g, b), 0..65535 each
        self.picture = np.zeros((self.height, self.width), dtype=np.int64)
        self.inflate = zlib.decompressobj()
        self.dtype = np.dtype({8: np.uint8, 16: np.uint16, 32: np.uint32}[fmt.bpp]) \
            .newbyteorder(">" if fmt.big_endian else "<")

    def recv(self, n):
        return recv_exactly(self.sock, n)

    def request(self, incremental=False):
        self.sock.sendall(struct.pack("!BBHHHH", 3, incremental, 0, 0, self.width, self.height))

    def update(self):
        """Read SetColourMapEntries messages up to and including the next
        FramebufferUpdate; apply both.  Returns (map runs as (first,
        [(r, g, b) 16-bit] ), rectangles (x, y, w, h))."""
        runs = []
        while True:
            kind = self.recv(1)[0]
            if kind == 1:
                first, count = struct.unpack("!xHH", self.recv(5))
                values = struct.unpack(f"!{3 * count}H", self.recv(6 * count))
                colours = [values[3 * i:3 * i + 3] for i in range(count)]
                for i, c in enumerate(colours):
                    self.map[first + i] = c
                runs.append((first, colours))
                continue
            assert kind == 0, f"unexpected server message {kind}"
            break
        count = struct.unpack("!xH", self.recv(3))[0]
        rects = []
        for _ in range(count):
            x, y, w, h, enc = struct.unpack("!HHHHi", self.recv(12))
            assert enc == self.encoding
            if enc == ENC_RAW:
                data = self.recv(w * h * self.fmt.bytes)
                idx = np.frombuffer(data, dtype=self.dtype).reshape(h, w)
            else:
                length = struct.unpack("!I", self.recv(4))[0]
                data = self.inflate.decompress(self.recv(length))
                idx = self.decode_zrle(data, w, h)
            self.picture[y:y + h, x:x + w] = idx
            rects.append((x, y, w, h))
        return runs, rects

    def decode_zrle(self, data, width, height):
        """ZRLE tiles as RFC 6143 7.7.6 gives them; for a colour map a
        CPIXEL is the whole PIXEL."""
        return decode_zrle(data, np.zeros((height, width), dtype=np.int64), self.fmt.bytes,
                           lambda data, pos, n: np.frombuffer(
                               data, dtype=self.dtype, count=n, offset=pos).astype(np.int64))

    def rgb(self):
        """The picture in RGB: every index must be in the map, every
        component c * 257."""
        used = np.unique(self.picture)
        lut = np.zeros((int(used.max()) + 1, 3), dtype=np.uint8)
        for i in used:
            assert int(i) in self.map, f"index {i} was never given a colour"
            c = self.map[int(i)]
            assert all(v % 257 == 0 for v in c), c
            lut[i] = [v // 257 for v in c]
        return lut[self.picture]

    def close(self):
        self.sock.close()


def colours_of(frame):
    return {tuple(int(v) for v in c) for c in np.unique(frame.reshape(-1, 3), axis=0)}


def run_colours(runs):
    return [tuple(v // 257 for v in c) for _, colours in runs for c in colours]


def changed_tiles(a, b):
    h, w = a.shape[:2]
    return {(tx, ty) for ty in range(0, h, TILE) for tx in range(0, w, TILE)
            if not np.array_equal(a[ty:ty + TILE, tx:tx + TILE], b[ty:ty + TILE, tx:tx + TILE])}


def tiles_of(rects):
    out = set()
    for x, y, w, h in rects:
        for ty in range(y, y + h, TILE):
            for tx in range(x, x + w, TILE):
                assert (tx, ty) not in out, "two rectangles cover one tile"
                out.add((tx, ty))
    return out


def check_first_update(cl, frame):
    """A full request: the map from index 0 with every colour of the frame
    once, the whole frame, a picture equal to it."""
    cl.request()
    runs, rects = cl.update()
    assert rects == [(0, 0, frame.shape[1], frame.shape[0])]
    assert [r[0] for r in runs] == [0]
    sent = run_colours(runs)
    assert len(sent) == len(set(sent)) and set(sent) == colours_of(frame)
    assert np.array_equal(cl.rgb(), frame)


ENCODINGS = {"raw": ENC_RAW, "zrle": ENC_ZRLE}
CASES = [("8", "raw"), ("8", "zrle"), ("16", "raw"), ("16", "zrle")]


# -- CGA text ---------------------------------------------------------------------------

@pytest.mark.parametrize("fmt, encoding", CASES + [("32", "zrle")])
def test_cga_text(rig_factory, fmt, encoding):
    rig = rig_factory(ECHO_BOOT)
    assert rig.thread.run_until(at_prompt)
    cl = MapClient(rig.port, FORMATS[fmt], ENCODINGS[encoding])
    try:
        before = rig.frame()
        check_first_update(cl, before)
        known = len(cl.map)

        # white on blue written into video RAM: two new colours, one tile
        rig.thread.call(lambda m: m.memory.write(0xB8000 + 20 * 160, bytes((0x41, 0x1F))))
        after = rig.frame()
        new = colours_of(after) - colours_of(before)
        assert new == {(0, 0, 0xAA), (0xFF, 0xFF, 0xFF)}
        cl.request(incremental=True)
        runs, rects = cl.update()
        assert [r[0] for r in runs] == [known]                 # appended after the old ones
        assert sorted(run_colours(runs)) == sorted(new)
        assert tiles_of(rects) == changed_tiles(before, after) == {(0, 160)}
        assert np.array_equal(cl.rgb(), after)

        # a key echoed in the old colours: the changed tiles, no map entries
        rig.thread.call(lambda m: m.type_text("x"))
        assert rig.thread.run_until(lambda m: m.screen_contains(ECHO_PROMPT + "x")
                                    and m.waiting_for_key())
        later = rig.frame()
        cl.request(incremental=True)
        runs, rects = cl.update()
        assert runs == []
        assert tiles_of(rects) == changed_tiles(after, later)
        assert 0 < len(tiles_of(rects)) <= 4
        assert np.array_equal(cl.rgb(), later)
    finally:
        cl.close()


# -- CGA 320x200, four colours ------------------------------------------------------------

@pytest.mark.parametrize("fmt, encoding", CASES)
def test_cga_graphics(rig_factory, fmt, encoding):
    # tests/guest/video.asm: mode 4 drawn, phase 1 at 0602h while it waits for a key
    rig = rig_factory(program_bytes("video"))
    assert rig.thread.run_until(lambda m: m.memory.read(0x602, 1)[0] == 1 and m.waiting_for_key())
    cl = MapClient(rig.port, FORMATS[fmt], ENCODINGS[encoding])
    try:
        before = rig.frame()
        assert 3 <= len(colours_of(before)) <= 4
        check_first_update(cl, before)
        known = len(cl.map)

        # a blue background (colour select 3D9h): one new colour, everywhere
        rig.thread.call(lambda m: m.ports.write(0x3D9, (m.video.color & 0xF0) | 1))
        after = rig.frame()
        assert colours_of(after) - colours_of(before) == {(0, 0, 0xAA)}
        cl.request(incremental=True)
        runs, rects = cl.update()
        assert runs == [(known, [(0, 0, 0xAA * 257)])]
        assert tiles_of(rects) == changed_tiles(before, after)
        assert np.array_equal(cl.rgb(), after)

        # four pixels of colour 3 in video RAM at (0, 100): one tile, no entries
        rig.thread.call(lambda m: m.memory.write(0xB8000 + 50 * 80, b"\xFF"))
        later = rig.frame()
        cl.request(incremental=True)
        runs, rects = cl.update()
        assert runs == []
        assert rects == [(0, 96, 16, 16)] and changed_tiles(after, later) == {(0, 96)}
        assert np.array_equal(cl.rgb(), later)
    finally:
        cl.close()


# -- VGA mode 13h: 256 colours, a new palette, the rebuilt map ----------------------------

@pytest.mark.parametrize("fmt, encoding", CASES)
def test_vga_mode_13h(rig_factory, fmt, encoding):
    rig = rig_factory(VGA_PALETTE_BOOT, video="vga")
    assert rig.thread.run_until(phase(1))
    cl = MapClient(rig.port, FORMATS[fmt], ENCODINGS[encoding])
    try:
        first = rig.frame()
        assert first.shape == (200, 320, 3)
        assert len(colours_of(first)) > 200
        check_first_update(cl, first)
        known = len(cl.map)

        rig.thread.call(lambda m: m.type_text(" "))
        assert rig.thread.run_until(phase(2))
        second = rig.frame()
        assert len(colours_of(second)) == 256
        new = colours_of(second) - colours_of(first)
        assert known + len(new) > 256                      # the 8-bit map cannot take them
        cl.request(incremental=True)
        runs, rects = cl.update()
        if fmt == "8":
            # rebuilt from the frame: 256 entries from index 0, the whole frame
            assert [r[0] for r in runs] == [0]
            assert sorted(run_colours(runs)) == sorted(colours_of(second))
            assert rects == [(0, 0, 320, 200)]
        else:
            # 65,536 entries: the new colours after the old ones
            assert [r[0] for r in runs] == [known]
            assert sorted(run_colours(runs)) == sorted(new)
            assert tiles_of(rects) == changed_tiles(first, second)
        assert np.array_equal(cl.rgb(), second)

        # four pixels of a colour the map has: one tile, no entries
        rig.thread.call(lambda m: m.type_text(" "))
        assert rig.thread.run_until(phase(3, key=False))
        third = rig.frame()
        cl.request(incremental=True)
        runs, rects = cl.update()
        assert runs == []
        assert rects == [(160, 96, 16, 16)] and changed_tiles(second, third) == {(160, 96)}
        assert np.array_equal(cl.rgb(), third)
    finally:
        cl.close()


def test_back_to_true_colour_and_to_a_new_map(rig_factory):
    """A client that changes format: true colour again, then a colour map
    again, which starts empty (after SetPixelFormat the client's map is
    undefined) and is sent from index 0 with the whole frame."""
    rig = rig_factory(ECHO_BOOT)
    assert rig.thread.run_until(at_prompt)
    frame = rig.frame()
    cl = MapClient(rig.port, FORMATS["8"], ENC_RAW)
    try:
        check_first_update(cl, frame)
        true_colour = PixelFormat(32, 24, 0, 1, 255, 255, 255, 16, 8, 0)
        cl.sock.sendall(b"\0\0\0\0" + true_colour.pack())
        cl.request()
        assert cl.recv(4) == struct.pack("!BxH", 0, 1)       # no map message
        assert struct.unpack("!HHHHi", cl.recv(12)) == (0, 0, 640, 200, 0)
        data = np.frombuffer(cl.recv(640 * 200 * 4), dtype=np.uint8).reshape(200, 640, 4)
        assert np.array_equal(data[:, :, 2::-1], frame)
        cl.sock.sendall(b"\0\0\0\0" + FORMATS["16"].pack())
        cl.fmt, cl.dtype, cl.map = FORMATS["16"], np.dtype(">u2"), {}
        check_first_update(cl, frame)
    finally:
        cl.close()


# -- vncdotool in a colour-map format ------------------------------------------------------

@pytest.mark.filterwarnings("ignore:updateRectangle will change:FutureWarning")
def test_vncdotool_in_a_colour_map_format(rig_factory):
    """vncdotool's RFB layer parses SetColourMapEntries (its set_color_map
    hook) and Raw rectangles of any pixel size; its client class asks for
    true colour and its ZRLE decoder reads 3-byte CPIXELs.  A subclass that
    sets an 8-bit colour map and turns indices into RGB through the map
    the server sent gets the renderer's frame."""
    pytest.importorskip("vncdotool")
    from PIL import Image
    from vncdotool import api, client, rfb

    class ColourMapClient(client.VNCDoToolClient):
        encoding = rfb.Encoding.RAW

        def setImageMode(self):
            self.colour_map = {}
            self.setPixelFormat(rfb.PixelFormat(8, 8, False, False, 0, 0, 0, 0, 0, 0))
            self._image_mode = "RGB"

        def set_color_map(self, first, colors):
            for i, c in enumerate(colors):
                self.colour_map[first + i] = bytes(v // 257 for v in c)

        def updateRectangle(self, x, y, width, height, data):
            super().updateRectangle(x, y, width, height,
                                    b"".join(self.colour_map[i] for i in data))

    class Factory(client.VNCDoToolFactory):
        protocol = ColourMapClient

    rig = rig_factory(program_bytes("video"))
    assert rig.thread.run_until(lambda m: m.memory.read(0x602, 1)[0] == 1 and m.waiting_for_key())
    c = api.connect(f"127.0.0.1::{rig.port}", factory_class=Factory, timeout=CEILING_S)
    try:
        buf = io.BytesIO()
        c.captureScreen(buf, format="PNG")
        got = np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("RGB"))
        assert np.array_equal(got, rig.frame())
    finally:
        c.disconnect()


# -- the map's rules, without a machine ------------------------------------------------------

def keys_of(rgb):
    return np.unique(colour_keys(rgb))


def test_colour_map_appends_then_rebuilds():
    rng = np.random.default_rng(3)
    palette = rng.permutation(256 ** 3)[:40].astype(np.uint32)
    rgb = lambda idx: np.stack([(palette[idx] >> s) & 0xFF for s in (16, 8, 0)],  # noqa: E731
                               axis=2).astype(np.uint8)
    cmap = ColourMap(16)
    a = rgb(rng.integers(0, 10, size=(20, 30)))
    a[0, :10] = rgb(np.arange(10)[None])[0]
    entries, rebuilt = cmap.update(keys_of(a), lambda: colour_keys(a))
    assert not rebuilt and [e[0] for e in entries] == [0] and len(entries[0][1]) == 10
    ids = cmap.indices(colour_keys(a))
    assert ids.max() < 10
    # the same colours again: nothing to send, the same indices
    assert cmap.update(keys_of(a), lambda: colour_keys(a)) == ([], False)
    assert np.array_equal(cmap.indices(colour_keys(a)), ids)
    # 4 more colours: appended at 10, the old indices kept
    b = rgb(rng.integers(6, 14, size=(20, 30)))
    b[0, :8] = rgb(np.arange(6, 14)[None])[0]
    entries, rebuilt = cmap.update(keys_of(b), lambda: colour_keys(b))
    assert not rebuilt and [(f, len(k)) for f, k in entries] == [(10, 4)]
    assert np.array_equal(cmap.indices(colour_keys(a)), ids)
    # 8 more (22 > 16): rebuilt from the frame, which has 8 + 4 colours
    c = rgb(rng.integers(10, 22, size=(20, 30)))
    c[0, :12] = rgb(np.arange(10, 22)[None])[0]
    entries, rebuilt = cmap.update(keys_of(c), lambda: colour_keys(c))
    assert rebuilt and [(f, len(k)) for f, k in entries] == [(0, 12)]
    assert sorted(entries[0][1]) == sorted(keys_of(c))
    # indices are exact: the map's colour of each pixel's index is the pixel
    lut = dict(zip(cmap.index.tolist(), cmap.keys.tolist()))
    got = np.vectorize(lut.get)(cmap.indices(colour_keys(c)))
    assert np.array_equal(got, colour_keys(c))


def test_a_map_smaller_than_the_frame_keeps_the_commonest_colours():
    """depth 2: four entries for a frame of six colours.  The four most
    frequent are exact, the other two get the nearest entry; new colours
    then take nearest entries too (no rebuild per update) until a frame
    fits again, which rebuilds the map exactly."""
    cols = np.array([[0, 0, 0], [250, 0, 0], [0, 250, 0], [0, 0, 250],
                     [240, 10, 0], [0, 10, 240]], dtype=np.uint8)
    counts = [40, 30, 20, 10, 2, 1]
    flat = np.concatenate([np.full(n, i) for i, n in enumerate(counts)])
    frame = cols[flat].reshape(1, -1, 3)
    cmap = ColourMap(PixelFormat(8, 2, 0, 0, 0, 0, 0, 0, 0, 0).map_size)
    assert cmap.size == 4
    entries, rebuilt = cmap.update(keys_of(frame), lambda: colour_keys(frame))
    assert rebuilt and cmap.approximate
    assert sorted(entries[0][1]) == sorted(colour_keys(cols[:4].reshape(1, 4, 3)).ravel())
    lut = dict(zip(cmap.index.tolist(), cmap.keys.tolist()))
    got = np.vectorize(lut.get)(cmap.indices(colour_keys(frame)))[0]
    want = colour_keys(cols[[0, 1, 2, 3, 1, 3]].reshape(1, 6, 3))[0][flat]
    assert np.array_equal(got, want)
    # a new colour while the frame still has too many: the nearest entry
    more = np.concatenate([frame, np.array([[[10, 240, 0]]], dtype=np.uint8)], axis=1)
    assert cmap.update(keys_of(more), lambda: colour_keys(more)) == ([], False)
    green = int(colour_keys(cols[2:3][None])[0, 0])
    assert lut[int(cmap.indices(colour_keys(more))[0, -1])] == green
    # a frame that fits: exact again
    small = np.array([[[1, 2, 3], [4, 5, 6]]], dtype=np.uint8)
    entries, rebuilt = cmap.update(keys_of(small), lambda: colour_keys(small))
    assert rebuilt and not cmap.approximate and len(entries[0][1]) == 2


# -- formats that are still refused ------------------------------------------------------------

def test_colour_map_formats_checked():
    assert PixelFormat(8, 8, 0, 0, 0, 0, 0, 0, 0, 0).check() is None
    assert PixelFormat(16, 16, 1, 0, 0, 0, 0, 0, 0, 0).check() is None
    assert PixelFormat(32, 24, 0, 0, 0, 0, 0, 0, 0, 0).check() is None
    assert PixelFormat(8, 8, 0, 0, 0, 0, 0, 0, 0, 0).map_size == 256
    assert PixelFormat(16, 16, 0, 0, 0, 0, 0, 0, 0, 0).map_size == 65536
    assert PixelFormat(32, 24, 0, 0, 0, 0, 0, 0, 0, 0).map_size == 65536
    assert PixelFormat(32, 8, 0, 0, 0, 0, 0, 0, 0, 0).map_size == 256
    assert "24 bits per pixel" in PixelFormat(24, 24, 0, 0, 0, 0, 0, 0, 0, 0).check()
    assert "depth 9" in PixelFormat(8, 9, 0, 0, 0, 0, 0, 0, 0, 0).check()
    assert "depth 0" in PixelFormat(16, 0, 0, 0, 0, 0, 0, 0, 0, 0).check()
    # ZRLE: a colour-map CPIXEL is the whole PIXEL, a true-colour one 3 bytes
    assert PixelFormat(32, 8, 0, 0, 255, 255, 255, 16, 8, 0).cpixel_slice() == slice(0, 4)
    assert PixelFormat(32, 24, 0, 1, 255, 255, 255, 16, 8, 0).cpixel_slice() == slice(0, 3)


@pytest.mark.parametrize("fmt, reason", [
    (PixelFormat(24, 24, 0, 0, 0, 0, 0, 0, 0, 0), "24 bits per pixel"),
    (PixelFormat(8, 12, 0, 0, 0, 0, 0, 0, 0, 0), "depth 12 does not fit"),
    (PixelFormat(16, 16, 0, 1, 31, 64, 31, 11, 5, 0), "maxima/shifts"),
])
def test_an_invalid_format_closes_the_connection_with_a_note(rig_factory, fmt, reason):
    rig = rig_factory(ECHO_BOOT)
    assert rig.thread.run_until(at_prompt)
    server = rig.frontends.vnc
    cl = MapClient(rig.port, FORMATS["8"], ENC_RAW)      # a good format first
    try:
        cl.sock.sendall(b"\0\0\0\0" + fmt.pack())
        cl.sock.settimeout(CEILING_S)
        assert cl.sock.recv(1 << 20) == b""                 # closed, nothing sent
        assert wait_for(lambda: not server.sessions)
        peer, why = server.refusals[-1]
        assert reason in why and peer.startswith("127.0.0.1:")
        notes = [r for r in rig.machine.diagnostics.records() if r["source"] == "vnc"]
        assert len(notes) == 1 and notes[0]["level"] == "warning"
        assert peer in notes[0]["message"] and reason in notes[0]["message"]
    finally:
        cl.close()
    # the server serves the next client
    cl = MapClient(rig.port, FORMATS["8"], ENC_ZRLE)
    try:
        check_first_update(cl, rig.frame())
    finally:
        cl.close()
