"""The VGA driven by guest programs: tests/guest/vga_int10.asm (modes set
and drawn through INT 10h) and tests/guest/vga_ports.asm (the same card
programmed only through its ports and memory: page flipping, cursor,
attribute flip-flop, status port, DAC, mode 13h, mode X, mode 12h, write
modes 0-3 and read mode 1).

Every picture is compared with one built here from what the program drew,
the standard VGA colours and the pypc fonts, and the hashes of the two must
match; register results are compared with values worked out by hand."""

import hashlib
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from guest import (assemble, find_nasm, bin_path, program_image,  # noqa: E402
                   run_to_done, run_to_phase, slots)

from pypc_core.device import VideoDevice  # noqa: E402
from pypc_core.font import FONT_8X8  # noqa: E402
from pypc_core.font.scaled import FONT_8X16  # noqa: E402
from pypc_core.machine import Machine, MachineConfig  # noqa: E402

GO_BYTE = 0x0606
TIMEOUT_S = 10.0

# the sixteen colours every VGA BIOS mode shows for attribute values 0-15
STANDARD = np.array([[int(h[i:i + 2], 16) for i in (0, 2, 4)] for h in (
    "000000", "0000AA", "00AA00", "00AAAA", "AA0000", "AA00AA", "AA5500", "AAAAAA",
    "555555", "5555FF", "55FF55", "55FFFF", "FF5555", "FF55FF", "FFFF55", "FFFFFF")],
    dtype=np.uint8)


def six(v):
    """A 6-bit DAC value as the 8-bit value on the screen."""
    return (v * 255 + 31) // 63


def digest(img):
    return hashlib.sha256(np.ascontiguousarray(img, dtype=np.uint8).tobytes()).hexdigest()


def assert_frame(actual, expected):
    assert actual.shape == expected.shape
    bad = np.argwhere((actual != expected).any(axis=2))
    assert len(bad) == 0, (f"{len(bad)} pixels differ, first at (y, x) = {tuple(bad[0])}: "
                           f"{actual[tuple(bad[0])]} != {expected[tuple(bad[0])]}")
    assert digest(actual) == digest(expected)


def run_phases(name, tmp_path, phases, fast=True):
    """Run program ``name`` on a VGA machine; at each phase record the
    frame, text, cells and cursor, then let it go on.  ``fast=False``: every
    port access goes to the card's Python handlers (no raster or compiled
    ports in the core)."""
    rec = {}
    img = program_image(tmp_path, name)
    m = Machine(MachineConfig(floppy_a=img, plugins=["vga", "fdc"], cow=True))
    if not fast:
        m.ports.set_fast_reads(False)
    try:
        for n in range(1, phases + 1):
            assert run_to_phase(m, n, TIMEOUT_S), f"phase {n} not reached"
            v = m.video
            rec[n] = {"frame": v.frame(), "mode": v.layout(), "name": v.mode_name(), "text": m.screen_text(),
                      "page": v.text_page(), "cursor": v.cursor(),
                      "resolution": v.resolution(), "dac": v.dac_rgb()}
            m.memory.write(GO_BYTE, bytes([n]))
        assert run_to_done(m, TIMEOUT_S)
        rec["slots"] = slots(m, 32)
        rec["machine_video"] = m.video
    finally:
        m.close()
    return rec


@pytest.fixture(scope="module")
def int10(tmp_path_factory):
    return run_phases("vga_int10", tmp_path_factory.mktemp("vga_int10"), 13)


@pytest.fixture(scope="module")
def ports(tmp_path_factory):
    return run_phases("vga_ports", tmp_path_factory.mktemp("vga_ports"), 7)


# -- INT 10h ------------------------------------------------------------------------------
def test_int10_results(int10):
    s = int10["slots"]
    assert s[0] == 0x20 and s[1] == 0x2813
    assert s[2] == 0x3F and s[3] == 0x0000            # DAC entry 1 read back
    assert s[4] == 0xC8                               # AH=0Dh after AH=0Ch in mode 13h
    assert s[5] == 0x5012 and s[6] == 0x05
    assert s[7] == 0x0008 and s[8] == 0x1A            # VGA, colour display
    assert s[9] == 0x0003 and s[15] == 0x09           # colour, 256 KiB, switches
    assert s[10] == 16 and s[11] == 29                # 8x16 font, 30 rows
    assert s[12] == 0x1B and s[13] == 0x12 and s[14] == 16
    assert s[16] == 49 and s[17] == 8                 # 8x8 font: 50 rows
    assert s[18] == 0x2F50                            # 'P' on page 1
    assert s[19:24] == [0x280D, 0x500E, 0x5010, 0x2804, 0x5006]
    assert s[24] == 3                                 # pixel (9,6) in mode 10h
    assert s[25:29] == [0x2800, 0x2801, 0x5002, 0x2805]


@pytest.mark.parametrize("phase,mode,columns,size", [
    (10, 0, 40, (360, 400)), (11, 1, 40, (360, 400)), (12, 2, 80, (720, 400))])
def test_int10_text_modes_0_to_2(int10, phase, mode, columns, size):
    r = int10[phase]
    assert r["resolution"] == size and r["page"]["columns"] == columns
    assert r["page"]["graphics_mode"] == mode           # 0 and 2 from the BIOS data area
    assert r["text"][0] == f"MODE {mode}" and len(r["text"]) == 25
    glyph = FONT_8X16[ord("M") * 16:ord("M") * 16 + 16]
    cell = r["frame"][0:16, 0:9]
    expected = np.zeros((16, 9, 3), np.uint8)
    for y in range(16):
        for x in range(8):
            if glyph[y] & (0x80 >> x):
                expected[y, x] = STANDARD[7]
    assert_frame(cell, expected)


def test_int10_mode13_frame(int10):
    r = int10[1]
    assert r["mode"] == "320x200x256" and r["resolution"] == (320, 200)
    y, x = np.mgrid[0:200, 0:320]
    index = (x + y) & 0xFF
    index[190, 300] = 0xC8
    palette = r["dac"]                  # as AH=10h left it: entry 1 set, the rest loaded
    assert list(palette[1]) == [255, 0, 0]
    assert (palette[2:16] == STANDARD[2:16]).all()
    assert (palette[16:32, 0] == palette[16:32, 1]).all()      # a grey ramp follows
    expected = palette[index]
    assert_frame(r["frame"], expected)


def test_int10_mode12_frame(int10):
    r = int10[2]
    assert r["mode"] == "640x480x16" and r["resolution"] == (640, 480)
    expected = np.zeros((480, 640, 3), np.uint8)
    for k, ch in enumerate(b"VGA12"):
        glyph = FONT_8X16[ch * 16:ch * 16 + 16]
        for row in range(16):
            for bit in range(8):
                if glyph[row] & (0x80 >> bit):
                    expected[row, 8 * k + bit] = STANDARD[14]
    for i in range(1, 16):
        expected[400, 600 + i] = STANDARD[i]
    expected[100:150, 64:128] = STANDARD[9]
    assert_frame(r["frame"], expected)


def test_int10_text_pages_and_fonts(int10):
    page1 = int10[3]
    assert page1["name"] == "Text80" and page1["resolution"] == (720, 400)
    assert page1["text"][1] == "  PPP"
    assert page1["page"]["page"] == 1 and page1["page"]["display_address"] == 0x1000
    cell = page1["page"]["cells"][1][2]
    assert cell["code"] == ord("P") and cell["foreground"] == 0x0F and cell["background"] == 2
    fifty = int10[4]
    assert len(fifty["text"]) == 50 and fifty["resolution"] == (720, 400)
    assert fifty["text"][2] == " " * 10 + "XXXXX"
    assert fifty["text"][4] == "Hello VGA"
    assert fifty["text"][48] == "Row 48"
    assert fifty["text"][26].strip() == "PPP"             # page 1 follows page 0's 50 rows
    # the 'X' cell at row 2, column 10: 9x8 pixels from the 8x8 font
    cell = fifty["frame"][16:24, 90:99]
    glyph = FONT_8X8[ord("X") * 8:ord("X") * 8 + 8]
    expected = np.zeros((8, 9, 3), np.uint8)
    for row in range(8):
        for bit in range(9):
            on = bit < 8 and glyph[row] & (0x80 >> bit)
            expected[row, bit] = STANDARD[14] if on else STANDARD[1]
    assert_frame(cell, expected)


@pytest.mark.parametrize("phase,size,colours", [
    (5, (320, 200), list(range(16))),
    (6, (640, 200), list(range(16))),
    (7, (640, 350), list(range(16))),
    (8, (320, 200), [0, 11, 13, 15]),
    (9, (640, 200), [0, 15]),
    (13, (320, 200), [0, 11, 13, 15]),
])
def test_int10_graphics_modes(int10, phase, size, colours):
    r = int10[phase]
    assert r["resolution"] == size
    w, h = size
    expected = np.zeros((h, w, 3), np.uint8)
    for i in range(1, 16):
        expected[2 * i, 3 * i] = STANDARD[colours[i % len(colours)]]
    assert_frame(r["frame"], expected)


# -- ports ---------------------------------------------------------------------------------
def test_ports_results(ports):
    s = ports["slots"]
    assert s[0] == 0x04                 # AC 10h read back
    assert s[1] == 0x33                 # 3DAh reset the flip-flop: 33h was an index
    assert s[2] == 0x0F                 # ... and colour plane enable kept its value
    assert 37 <= s[3] <= 40             # 10 ticks of 54.9 ms at 70.1 Hz
    assert s[4] == 0x2A2A and s[5] == 0x2A
    assert s[6] == 0x02                 # mode X: plane 2 holds pixel 2


def test_ports_write_modes_byte_exact(ports):
    s = ports["slots"]
    def planes(i):
        return [s[i] & 0xFF, s[i] >> 8, s[i + 1] & 0xFF, s[i + 1] >> 8]
    # latches 0Fh F0h AAh 55h; values worked out in tests/test_vga_planar.py
    assert planes(10) == [0x3F, 0xC0, 0x9A, 0x59]      # mode 0, set/reset, mask 3Ch
    assert planes(12) == [0x3F, 0xC0, 0x9A, 0x65]      # mode 0, ror 3, XOR: 30h ^ latch
    assert planes(14) == [0x00, 0xF0, 0x00, 0x55]      # mode 1, map mask 1010b
    assert planes(16) == [0x0F, 0xF0, 0xAA, 0xF5]      # mode 2, OR, mask F0h
    assert planes(18) == [0x0F, 0xF0, 0xA2, 0x5D]      # mode 3
    assert s[20] == 0x0A and s[21] == 0x0F              # read mode 1


def test_ports_text_page_flip_cursor_blink(ports):
    assert ports[1]["text"][0] == "PAGE2"
    assert ports[1]["page"]["cells"][0][0]["attribute"] == 0x2E
    r = ports[2]
    assert r["text"][0].startswith("PORTS")
    cur = r["cursor"]
    assert (cur["row"], cur["column"], cur["start_scanline"], cur["end_scanline"]) == (3, 5, 0, 15)
    assert cur["enabled"]
    cell = r["page"]["cells"][5][0]
    assert cell["code"] == ord("B") and cell["attribute"] == 0x8E
    assert cell["blink"] is False and cell["background"] == 8
    pix = r["frame"][80:96, 0:9].reshape(-1, 3)
    colours = {tuple(int(c) for c in p) for p in pix}
    assert colours == {tuple(STANDARD[8]), tuple(STANDARD[14])}


def grey(i):
    return six(i >> 2)


def test_ports_mode13_and_mode_x(ports):
    y, x = np.mgrid[0:200, 0:320]
    ramp = np.array([[grey(i)] * 3 for i in range(256)], np.uint8)
    expected = ramp[(x & 0xFF) ^ y]
    assert ports[4]["resolution"] == (320, 200)
    assert_frame(ports[4]["frame"], expected)
    # mode X: the same picture from unchained planes, row 199 a latch copy of row 0
    expected_x = expected.copy()
    expected_x[199] = expected[0]
    assert ports[5]["mode"] == "320x200x256" and ports[5]["name"] == "G320"
    assert_frame(ports[5]["frame"], expected_x)
    # second page by start address: line y is colour y
    assert_frame(ports[6]["frame"], ramp[np.repeat(np.arange(200)[:, None], 320, axis=1)])


def test_ports_mode12(ports):
    r = ports[7]
    assert r["resolution"] == (640, 480) and r["mode"] == "640x480x16"
    expected = np.zeros((480, 640, 3), np.uint8)
    expected[200:240, 160:240] = grey(0x3C)      # colour 12 -> AC 3Ch -> the grey DAC
    for b in range(10):
        expected[300, 8 * b:8 * b + 4] = grey(0x3A)
    assert_frame(r["frame"], expected)


# -- the other modes, by ports ----------------------------------------------------------------
AC_TEXT = [0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x14, 0x07,
           0x38, 0x39, 0x3A, 0x3B, 0x3C, 0x3D, 0x3E, 0x3F]
AC_200 = list(range(8)) + list(range(0x10, 0x18))
AC_CGA4 = [0x00, 0x13, 0x15, 0x17]


def custom_dac(i):
    """The palette vga_portmodes.asm loads: entry i = (i, 2i mod 64, 63 - i)."""
    return [six(i), six((2 * i) & 63), six(63 - i)]


@pytest.fixture(scope="module")
def portmodes(tmp_path_factory):
    return run_phases("vga_portmodes", tmp_path_factory.mktemp("vga_portmodes"), 7)


@pytest.mark.parametrize("phase,mode,size,name", [(1, 1, (360, 400), "Text40"),
                                                  (2, 3, (720, 400), "Text80")])
def test_portmodes_text(portmodes, phase, mode, size, name):
    r = portmodes[phase]
    assert r["resolution"] == size and r["name"] == name
    assert r["text"][0] == f"MODE{mode}"
    glyph = FONT_8X16[ord("M") * 16:ord("M") * 16 + 16]
    expected = np.zeros((16, 9, 3), np.uint8)
    for y in range(16):
        for x in range(9):
            on = x < 8 and glyph[y] & (0x80 >> x)
            if r["cursor"]["visible"] and 13 <= y <= 14:     # the table's cursor: 0Dh-0Eh at 0
                on = True
            expected[y, x] = custom_dac(AC_TEXT[14] if on else AC_TEXT[1])
    assert r["cursor"]["row"] == 0 and r["cursor"]["column"] == 0
    assert_frame(r["frame"][0:16, 0:9], expected)


@pytest.mark.parametrize("phase,size", [(3, (320, 200)), (4, (640, 200)), (5, (640, 350))])
def test_portmodes_planar(portmodes, phase, size):
    r = portmodes[phase]
    assert r["resolution"] == size
    w, h = size
    ac = AC_200 if h == 200 else AC_TEXT
    row = np.array([custom_dac(ac[(x // 8) & 15]) for x in range(w)], np.uint8)
    assert_frame(r["frame"], np.repeat(row[None], h, axis=0))


def test_portmodes_cga(portmodes):
    r = portmodes[6]
    assert r["resolution"] == (320, 200)
    row = np.array([custom_dac(AC_CGA4[(x // 4) & 3]) for x in range(320)], np.uint8)
    assert_frame(r["frame"], np.repeat(row[None], 200, axis=0))
    r = portmodes[7]
    assert r["resolution"] == (640, 200)
    lit, dark = custom_dac(0x17), custom_dac(0)
    even = np.array([lit if x % 8 < 4 else dark for x in range(640)], np.uint8)
    odd = np.array([dark if x % 8 < 4 else lit for x in range(640)], np.uint8)
    expected = np.stack([even, odd] * 100)
    assert_frame(r["frame"], expected)


def test_ports_same_results_without_fast_paths(ports, tmp_path):
    """The sequencer/graphics controller ports answered inside the core and
    the status port's raster block give exactly what the Python handlers
    give."""
    slow = run_phases("vga_ports", tmp_path, 7, fast=False)
    assert slow["slots"][:3] + slow["slots"][4:] == ports["slots"][:3] + ports["slots"][4:]
    assert 37 <= slow["slots"][3] <= 40
    for n in range(1, 8):
        assert digest(slow[n]["frame"]) == digest(ports[n]["frame"]), n


# -- the machine-facing surface ------------------------------------------------------------
def test_vga_is_a_video_device(int10):
    assert isinstance(int10["machine_video"], VideoDevice)


@pytest.mark.parametrize("name", ["vga_int10", "vga_ports", "vga_portmodes"])
def test_committed_bytes_match_the_source(name, tmp_path):
    nasm = find_nasm()
    if nasm is None:
        pytest.skip("nasm not installed")
    out = assemble(name, str(tmp_path / (name + ".bin")), nasm)
    with open(bin_path(name), "rb") as fh:
        assert fh.read() == out


@pytest.mark.parametrize("define,attr", [("BENCH13", "GUEST_13H"), ("BENCH12", "GUEST_12H"),
                                         ("BENCH12PIX", "GUEST_12H_PIXELS")])
def test_benchmark_guests_match_their_source(define, attr, tmp_path):
    """pypc_plugins.vga.bench embeds the assembled tests/guest/vga_bench.asm."""
    import subprocess
    from pypc_plugins.vga import bench
    nasm = find_nasm()
    if nasm is None:
        pytest.skip("nasm not installed")
    out = tmp_path / "b.bin"
    src = os.path.join(os.path.dirname(bin_path("vga_bench")), "vga_bench.asm")
    subprocess.run([nasm, "-f", "bin", "-D" + define, "-o", str(out), src], check=True)
    assert bench.boot_sector(getattr(bench, attr)) == out.read_bytes()


def test_machine_state_round_trip_in_mode_x(tmp_path):
    """A state saved in mode X and restored into a new machine continues to
    the same pictures and results as the original run."""
    img = program_image(tmp_path, "vga_ports")
    results = []
    saved = None
    for attempt in range(2):
        m = Machine(MachineConfig(floppy_a=img, plugins=["vga", "fdc"], cow=True))
        try:
            if saved is None:
                for n in range(1, 5):
                    assert run_to_phase(m, n, TIMEOUT_S)
                    m.memory.write(GO_BYTE, bytes([n]))
                assert run_to_phase(m, 5, TIMEOUT_S)
                saved = m.get_state()
            else:
                m.set_state(saved)
            frame5 = m.video.frame()
            for n in range(5, 8):
                assert run_to_phase(m, n, TIMEOUT_S)
                m.memory.write(GO_BYTE, bytes([n]))
            assert run_to_done(m, TIMEOUT_S)
            results.append((digest(frame5), digest(m.video.frame()), slots(m, 25), m.clock()))
        finally:
            m.close()
    assert results[0] == results[1]
