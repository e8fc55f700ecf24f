"""The CGA plugin, driven through its ports and video memory the way the BIOS
and programs drive it."""

import struct
import zlib

import numpy as np
import pytest

from pypc_core.board import Backplane
from pypc_core.font import font_bits
from pypc_plugins import cga as cga_plugin
from pypc_plugins.cga.cga import CGA, PALETTE, status_at

VRAM = 0xB8000
CYCLES_PER_LINE = 304
CYCLES_PER_FRAME = 304 * 262

# CRTC values the BIOS programs (modes 0-1 / 2-3 / 4-6)
CRTC_40 = (0x38, 0x28, 0x2D, 0x0A, 0x1F, 0x06, 0x19, 0x1C, 0x02, 0x07, 0x06, 0x07)
CRTC_80 = (0x71, 0x50, 0x5A, 0x0A, 0x1F, 0x06, 0x19, 0x1C, 0x02, 0x07, 0x06, 0x07)
CRTC_GFX = (0x38, 0x28, 0x2D, 0x0A, 0x7F, 0x06, 0x64, 0x70, 0x02, 0x01, 0x06, 0x07)


class FakeMachine:
    """A bare board (no Machine): memory, ports and a settable clock."""

    def __init__(self):
        self.cycle = 0
        self.backplane = Backplane(clock=self.clock)
        self.memory = self.backplane.memory
        self.ports = self.backplane.ports

    def clock(self):
        return self.cycle

    def board(self, decl):
        return self.backplane.board(decl)


@pytest.fixture
def machine():
    m = FakeMachine()
    m.cga = cga_plugin.pypc_device_create()
    m.cga.attach(m.board(m.cga.declaration))
    return m


def out(m, port, value):
    assert m.ports.write(port, value) is True


def inp(m, port):
    return m.ports.read(port)


def crtc(m, reg, value):
    out(m, 0x3D4, reg)
    out(m, 0x3D5, value)


def set_mode(m, mode, regs, color=0):
    out(m, 0x3D8, mode & ~0x08)          # as the BIOS: video off while programming
    for i, v in enumerate(regs):
        crtc(m, i, v)
    out(m, 0x3D9, color)
    out(m, 0x3D8, mode)


def poke_text(m, row, col, text, attr=0x07, columns=80):
    for i, ch in enumerate(text):
        a = VRAM + (row * columns + col + i) * 2
        m.memory.mem[a] = ch if isinstance(ch, int) else ord(ch)
        m.memory.mem[a + 1] = attr


# -- plugin and wiring ------------------------------------------------------

def test_declaration_and_hooks():
    decl = cga_plugin.pypc_device_declare()
    assert decl.name == "cga"
    assert decl.ports == list(range(0x3D0, 0x3E0))
    assert [(w.base, w.size) for w in decl.memory] == [(0xB8000, 0x8000)]
    assert "video" in decl.capabilities and "cga" in decl.capabilities
    assert decl.describe() == "ports 3D0h-3DFh; mem B8000h-BFFFFh"
    impls = [cga_plugin.pypc_device_declare, cga_plugin.pypc_device_create]
    assert all(hasattr(f, "pypc_impl") for f in impls)


def test_attach_claims_ports_and_vram(machine):
    claims = machine.ports.claims()
    assert claims["cga"] == list(range(0x3D0, 0x3E0))
    kinds = {(base, size, kind, owner)
             for base, size, kind, owner in machine.memory.regions()}
    assert (0xB8000, 0x4000, "device", "cga") in kinds
    assert (0xBC000, 0x4000, "alias", "cga") in kinds       # the 16 KiB seen twice
    machine.memory.write(0xBC010, b"AB")
    assert machine.memory.read(0xB8010, 2) == b"AB"
    assert machine.ports.fast(0x3DA) is not None             # status in the core


# -- CRTC ------------------------------------------------------------------

def test_crtc_registers_write_and_read(machine):
    crtc(machine, 14, 0x12)
    crtc(machine, 15, 0x34)
    out(machine, 0x3D4, 14)
    assert inp(machine, 0x3D5) == 0x12
    out(machine, 0x3D4, 15)
    assert inp(machine, 0x3D5) == 0x34
    assert machine.cga.crtc[14:16] == [0x12, 0x34]
    # write-only registers read 0 (MC6845); the index register is not readable
    crtc(machine, 1, 0x50)
    out(machine, 0x3D4, 1)
    assert inp(machine, 0x3D5) == 0x00
    assert inp(machine, 0x3D4) == 0xFF
    # register widths: R14 is 6 bits, R10 7 bits
    crtc(machine, 14, 0xFF)
    out(machine, 0x3D4, 14)
    assert inp(machine, 0x3D5) == 0x3F
    crtc(machine, 10, 0xFF)
    assert machine.cga.crtc[10] == 0x7F
    # R16/R17 (light pen) are read only; R18+ do not exist
    crtc(machine, 16, 0x55)
    crtc(machine, 20, 0x55)
    assert machine.cga.crtc[16] == 0 and len(machine.cga.crtc) == 18


def test_crtc_port_mirrors(machine):
    out(machine, 0x3D0, 12)        # index mirror
    out(machine, 0x3D1, 0x05)      # data mirror
    out(machine, 0x3D2, 13)
    out(machine, 0x3D7, 0x40)
    assert machine.cga.start_address() == 0x0540
    out(machine, 0x3D6, 15)
    out(machine, 0x3D3, 0x99)
    out(machine, 0x3D4, 15)
    assert inp(machine, 0x3D1) == 0x99


def test_mode_and_color_registers_write_only(machine):
    out(machine, 0x3D8, 0x0A)
    out(machine, 0x3D9, 0x30)
    assert machine.cga.mode == 0x0A and machine.cga.color == 0x30
    assert inp(machine, 0x3D8) == 0xFF and inp(machine, 0x3D9) == 0xFF
    for port in (0x3DB, 0x3DC, 0x3DD, 0x3DE, 0x3DF):    # owned, accepted
        assert machine.ports.write(port, 0) is True


def test_mode_names(machine):
    names = {0x2C: "Text40", 0x28: "Text40", 0x2D: "Text80", 0x29: "Text80",
             0x2A: "G320", 0x2E: "G320", 0x1E: "G640", 0x1A: "G640"}
    for mode, name in names.items():
        out(machine, 0x3D8, mode)
        assert machine.cga.mode_name() == name
        assert machine.cga.graphics_mode() == mode


# -- status port -------------------------------------------------------------

def _sweep(m, start, count, step=1):
    values = []
    for c in range(start, start + count, step):
        m.cycle = c
        values.append(inp(m, 0x3DA))
    return values


def test_status_frame_timing_80x25(machine):
    set_mode(machine, 0x29, CRTC_80)
    cga = machine.cga
    assert cga.frame_cycles() == CYCLES_PER_FRAME == 79648
    base = cga.epoch_dots // 3 + 5 * CYCLES_PER_FRAME      # start of a frame
    machine.cycle = base
    s = inp(machine, 0x3DA)
    assert s & 0x09 == 0 and s & 0xF0 == 0xF0              # displaying
    # vertical retrace: 16 lines from line R7*(R9+1) = 224
    vs = [(v >> 3) & 1 for v in _sweep(machine, base, CYCLES_PER_FRAME, 8)]
    first = vs.index(1) * 8
    assert 224 * CYCLES_PER_LINE - 8 < first <= 224 * CYCLES_PER_LINE
    assert sum(vs) * 8 == pytest.approx(16 * CYCLES_PER_LINE, abs=16)
    machine.cycle = base + 224 * CYCLES_PER_LINE
    assert inp(machine, 0x3DA) & 0x09 == 0x09              # vsync and blank
    machine.cycle = base + 240 * CYCLES_PER_LINE
    assert inp(machine, 0x3DA) & 0x09 == 0x01
    # the next frame shows again
    machine.cycle = base + CYCLES_PER_FRAME
    assert inp(machine, 0x3DA) & 0x09 == 0


def test_status_horizontal_blanking(machine):
    set_mode(machine, 0x29, CRTC_80)
    base = machine.cga.epoch_dots // 3 + CYCLES_PER_FRAME + 10 * CYCLES_PER_LINE
    line = [v & 1 for v in _sweep(machine, base, CYCLES_PER_LINE)]
    # 80 characters of 8 dots = 640 dots = 213.3 CPU cycles displayed
    assert line[:213] == [0] * 213
    assert line[214:] == [1] * (CYCLES_PER_LINE - 214)
    # a 40-column mode has the same line length (40 chars of 16 dots)
    set_mode(machine, 0x28, CRTC_40)
    assert machine.cga.frame_cycles() == CYCLES_PER_FRAME
    set_mode(machine, 0x2A, CRTC_GFX)
    assert machine.cga.frame_cycles() == CYCLES_PER_FRAME
    assert machine.cga.status_params()[6] == 224          # vsync at line 224


def test_status_toggles_with_emulated_time(machine):
    cga = machine.cga
    seen = set()
    for c in range(0, 3 * CYCLES_PER_FRAME, 997):
        machine.cycle = c
        seen.add(inp(machine, 0x3DA) & 0x09)
    assert seen == {0x00, 0x01, 0x09}
    # frames count 60 Hz of emulated time
    machine.cycle = 4_772_727
    assert cga.frame_number() == 4_772_727 * 3 // (912 * 262)


def test_status_params_of_80x25_worked_by_hand(machine):
    """The raster numbers status_at gets for the BIOS's 80x25 CRTC values:
    R0=71h: 114 characters of 8 dots a line = 912 dots; R1=50h: 640 dots
    shown; R4=1Fh, R9=7, R5=6: 32 rows of 8 lines + 6 = 262 lines;
    R6=19h: 200 lines shown; R7=1Ch: vertical sync from line 224 for 16."""
    set_mode(machine, 0x29, CRTC_80)
    params = machine.cga.status_params()
    assert params[1:] == (912, 8, 640, 912 * 262, 200, 224, 240, 0xF0)
    set_mode(machine, 0x2A, CRTC_GFX)          # 40 characters of 16 dots, 2 lines a row
    assert machine.cga.status_params()[1:] == (912, 16, 640, 912 * 262, 200, 224, 240, 0xF0)


# a frame that starts at dot 30 (CPU cycle 10), 912 dots a line, 262 lines
HAND_PARAMS = (30, 912, 8, 640, 912 * 262, 200, 224, 240, 0xF0)
HAND_POSITIONS = [
    # (CPU cycle, status): 3 dots a cycle; line = (dots - 30) // 912
    (10, 0xF0),                         # line 0, dot 0: shown
    (9, 0xF1),                          # the last dot of the previous frame (line 261)
    (223, 0xF0),                        # dot 639: the last one shown
    (224, 0xF1),                        # dot 642: horizontal blanking
    (10 + 303, 0xF1),                   # dot 909 of line 0
    (10 + 304, 0xF0),                   # line 1, dot 0
    (10 + 199 * 304 + 50, 0xF0),        # line 199, dot 150: the last line shown
    (10 + 200 * 304, 0xF1),             # line 200: vertical blanking
    (10 + 223 * 304 + 10, 0xF1),        # line 223: blank, no sync yet
    (10 + 224 * 304, 0xF9),             # line 224: vertical sync
    (10 + 239 * 304 + 100, 0xF9),       # line 239: still in sync
    (10 + 240 * 304, 0xF1),             # line 240: sync over (16 lines)
    (10 + 261 * 304 + 303, 0xF1),       # the frame's last cycle
    (10 + 262 * 304, 0xF0),             # the next frame, line 0
    (10 + 5 * 262 * 304 + 224 * 304, 0xF9),   # five frames on, line 224
]


@pytest.mark.parametrize("cycle, status", HAND_POSITIONS)
def test_status_at_hand_worked_raster_positions(cycle, status):
    assert status_at(cycle, *HAND_PARAMS) == status
    lp = HAND_PARAMS[:-1] + (0xF2,)             # a latched light pen stays in bit 1
    assert status_at(cycle, *lp) == status | 0x02


def test_retiming_never_runs_backwards(machine):
    cga = machine.cga
    machine.cycle = 10 * CYCLES_PER_FRAME + 1000
    before = cga.frame_number()
    set_mode(machine, 0x2A, CRTC_GFX)
    crtc(machine, 4, 0x3F)                       # shorter frame
    assert cga.frame_number() >= before
    machine.cycle += 1
    assert cga.frame_number() >= before


def test_light_pen_latch(machine):
    machine.cycle = 5 * CYCLES_PER_LINE + 20     # line 5, early in the line
    assert inp(machine, 0x3DA) & 0x02 == 0
    out(machine, 0x3DC, 0)
    assert inp(machine, 0x3DA) & 0x02 == 0x02
    out(machine, 0x3D4, 16)
    hi = inp(machine, 0x3D5)
    out(machine, 0x3D4, 17)
    lo = inp(machine, 0x3D5)
    assert (hi << 8 | lo) == 0 * 80 + (20 * 3) // 8   # row 0 (line 5 of 8), char 7
    out(machine, 0x3DB, 0)
    assert inp(machine, 0x3DA) & 0x02 == 0


# -- text ----------------------------------------------------------------------

def test_text_rows_from_vram(machine):
    poke_text(machine, 0, 0, "Hello, DOS")
    poke_text(machine, 1, 0, [0x01, 0x41, 0x1F, 0xB3, 0xC9, 0x82])
    poke_text(machine, 24, 75, "end")
    rows = machine.cga.text_rows()
    assert len(rows) == 25
    assert rows[0] == "Hello, DOS"
    assert rows[1] == " A \u2502\u2554\u00e9"       # controls shown as spaces
    assert rows[24] == " " * 75 + "end"
    assert rows[5] == ""
    assert len(machine.cga.text_rows(trim=False)[5]) == 80


def test_text40_rows(machine):
    set_mode(machine, 0x28, CRTC_40)
    poke_text(machine, 1, 0, "forty", columns=40)
    rows = machine.cga.text_rows()
    assert machine.cga.columns() == 40
    assert rows[1] == "forty"


def test_start_address_compat_rule(machine):
    # byte address = word * 2 & 0x3FFF
    poke_text(machine, 1, 0, "second row")
    crtc(machine, 12, 0x00)
    crtc(machine, 13, 80)
    assert machine.cga.display_address() == 160
    assert machine.cga.text_rows()[0] == "second row"
    crtc(machine, 12, 0x20)                      # 0x2050 words: wraps to 0xA0
    assert machine.cga.start_address() == 0x2050
    assert machine.cga.display_address() == 0xA0
    assert machine.cga.text_rows()[0] == "second row"
    # the page wraps at the end of the 16 KiB
    crtc(machine, 12, 0x1F)
    crtc(machine, 13, 0xFF)
    machine.memory.mem[VRAM + 0x3FFE] = ord("X")
    machine.memory.mem[VRAM + 0] = ord("Y")
    assert machine.cga.text_rows()[0].startswith("XY")


def test_text_page_selection(machine):
    poke_text(machine, 0, 0, "page one", columns=80)
    machine.memory.mem[VRAM + 4000] = ord("P")
    page = machine.cga.text_page(page=1)
    assert page["page_count"] == 4 and page["page_size_bytes"] == 4000
    assert page["display_address"] == 4000 and page["active_page"] == 0
    assert page["is_active_page"] is False and page["text"][0] == "P"
    cur = machine.cga.text_page()
    assert cur["is_active_page"] and cur["text"][0] == "page one"
    assert cur["mode"] == "Text80" and cur["graphics_mode"] == 0x29
    assert len(cur["cells"]) == 25 and len(cur["cells"][0]) == 80
    assert cur["cells"][0][0] == {"code": 0x70, "char": "p", "attribute": 7,
                                  "foreground": 7, "background": 0,
                                  "blink": False}
    set_mode(machine, 0x28, CRTC_40)
    assert machine.cga.text_page()["page_count"] == 8
    with pytest.raises(ValueError):
        machine.cga.text_page(page=0, display_address=0)


# -- rendering ----------------------------------------------------------------

def _cell(frame, row, col, width=8):
    return frame[row * 8:row * 8 + 8, col * width:(col + 1) * width]


def test_rendered_glyph_colours(machine):
    poke_text(machine, 2, 3, "A", attr=0x1E)     # yellow on blue
    crtc(machine, 10, 0x20)                      # hide the cursor
    frame = machine.cga.frame(frame=0)
    assert frame.shape == (200, 640, 3) and frame.dtype == np.uint8
    cell = _cell(frame, 2, 3)
    bits = font_bits()[ord("A")]
    assert (cell[bits] == (0xFF, 0xFF, 0x55)).all()
    assert (cell[~bits] == (0x00, 0x00, 0xAA)).all()
    assert (_cell(frame, 2, 4) == 0).all()       # blank cells are black
    assert (frame[:, :, :][frame.any(axis=2)].shape[0] == 64)


def test_palette_is_rgbi_with_brown():
    assert PALETTE.shape == (16, 3)
    assert tuple(PALETTE[6]) == (0xAA, 0x55, 0x00)
    assert tuple(PALETTE[14]) == (0xFF, 0xFF, 0x55)
    assert tuple(PALETTE[8]) == (0x55, 0x55, 0x55)
    assert tuple(PALETTE[7]) == (0xAA, 0xAA, 0xAA)
    assert tuple(PALETTE[9]) == (0x55, 0x55, 0xFF)


def test_text40_pixels_are_doubled(machine):
    set_mode(machine, 0x28, CRTC_40)
    crtc(machine, 10, 0x20)
    poke_text(machine, 0, 1, "H", attr=0x0F, columns=40)
    frame = machine.cga.frame(frame=0)
    cell = frame[0:8, 16:32]
    bits = np.repeat(font_bits()[ord("H")], 2, axis=1)
    assert (cell[bits] == 0xFF).all() and (cell[~bits] == 0).all()


def test_blink_and_background_intensity(machine):
    crtc(machine, 10, 0x20)
    poke_text(machine, 0, 0, "\xdb", attr=0x8E)  # full block, blinking yellow
    cga = machine.cga
    on = _cell(cga.frame(frame=0), 0, 0)
    off = _cell(cga.frame(frame=16), 0, 0)
    assert (on == (0xFF, 0xFF, 0x55)).all()
    assert (off == 0).all()                       # drawn in the background
    assert (_cell(cga.frame(frame=32), 0, 0) == on).all()
    out(machine, 0x3D8, 0x09)                     # blink off: bit 7 = intense bg
    poke_text(machine, 0, 0, " ", attr=0x8E)
    assert (_cell(cga.frame(frame=16), 0, 0) == 0x55).all()   # dark grey
    assert cga.text_page()["cells"][0][0]["background"] == 8


def test_cursor_position_and_shape(machine):
    cga = machine.cga
    crtc(machine, 14, 0x00)
    crtc(machine, 15, 2 * 80 + 5)
    cur = cga.cursor(frame=0)
    assert (cur["row"], cur["column"], cur["address"]) == (2, 5, 165)
    assert cur["start_scanline"] == 6 and cur["end_scanline"] == 7
    assert cur["enabled"] and cur["visible"]
    poke_text(machine, 2, 5, " ", attr=0x0A)
    cell = _cell(cga.frame(frame=0), 2, 5)
    assert (cell[6:8] == (0x55, 0xFF, 0x55)).all()    # light green lines 6-7
    assert (cell[:6] == 0).all()
    assert (_cell(cga.frame(frame=8), 2, 5) == 0).all()   # blink: off phase
    assert cga.cursor(frame=8)["visible"] is False
    crtc(machine, 10, 0x00)                       # full block cursor
    assert (_cell(cga.frame(frame=0), 2, 5) != 0).all()
    crtc(machine, 10, 0x20)                       # hidden (6845 mode 01)
    assert cga.cursor(frame=0)["enabled"] is False
    assert (_cell(cga.frame(frame=0), 2, 5) == 0).all()
    # the cursor address counts from the CRTC start address
    crtc(machine, 10, 0x06)
    crtc(machine, 13, 80)
    assert (cga.cursor()["row"], cga.cursor()["column"]) == (1, 5)


def test_g320_pixels_and_palettes(machine):
    set_mode(machine, 0x2A, CRTC_GFX, color=0x21)    # palette 1, blue bg
    mem = machine.memory.mem
    mem[VRAM] = 0b00011011                          # line 0: pixels 0,1,2,3
    mem[VRAM + 0x2000 + 1] = 0b11000000             # line 1, pixel 4 (odd bank)
    mem[VRAM + 80] = 0b01000000                     # line 2, pixel 0
    cga = machine.cga
    assert cga.mode_name() == "G320"
    frame = cga.frame()
    row0 = [tuple(frame[0, x]) for x in range(0, 8, 2)]
    assert row0 == [(0, 0, 0xAA), (0, 0xAA, 0xAA), (0xAA, 0, 0xAA), (0xAA, 0xAA, 0xAA)]
    assert (frame[0, 0] == frame[0, 1]).all()       # 320 -> 640: doubled
    assert tuple(frame[1, 8]) == (0xAA, 0xAA, 0xAA)
    assert tuple(frame[2, 0]) == (0, 0xAA, 0xAA)
    out(machine, 0x3D9, 0x10)                        # palette 0, intense
    frame = cga.frame()
    assert [tuple(frame[0, x]) for x in range(0, 8, 2)] == [
        (0, 0, 0), (0x55, 0xFF, 0x55), (0xFF, 0x55, 0x55), (0xFF, 0xFF, 0x55)]
    out(machine, 0x3D9, 0x00)                        # palette 0: brown on 3
    assert tuple(cga.frame()[0, 6]) == (0xAA, 0x55, 0x00)
    out(machine, 0x3D8, 0x0E)                        # B/W bit: cyan/red/white
    assert [tuple(cga.frame()[0, x]) for x in range(2, 8, 2)] == [
        (0, 0xAA, 0xAA), (0xAA, 0, 0), (0xAA, 0xAA, 0xAA)]


def test_g640_pixels(machine):
    set_mode(machine, 0x1E, CRTC_GFX, color=0x0F)
    mem = machine.memory.mem
    mem[VRAM] = 0b10000001
    mem[VRAM + 0x2000 + 79] = 0x01                   # line 1, last pixel
    frame = machine.cga.frame()
    assert machine.cga.mode_name() == "G640"
    assert tuple(frame[0, 0]) == (0xFF, 0xFF, 0xFF)
    assert tuple(frame[0, 1]) == (0, 0, 0)
    assert tuple(frame[0, 7]) == (0xFF, 0xFF, 0xFF)
    assert tuple(frame[1, 639]) == (0xFF, 0xFF, 0xFF)
    out(machine, 0x3D9, 0x0C)                        # foreground light red
    assert tuple(machine.cga.frame()[0, 0]) == (0xFF, 0x55, 0x55)
    assert int(machine.cga.frame().any(axis=2).sum()) == 3


def test_graphics_start_address_stays_in_bank(machine):
    set_mode(machine, 0x2A, CRTC_GFX, color=0x20)
    crtc(machine, 13, 40)                            # start 40 words = 80 bytes
    machine.memory.mem[VRAM + 80] = 0xC0
    assert tuple(machine.cga.frame()[0, 0]) == (0xAA, 0xAA, 0xAA)


def test_video_disabled_is_black(machine):
    poke_text(machine, 0, 0, "X", attr=0x0F)
    out(machine, 0x3D8, 0x21)
    assert not machine.cga.frame().any()


def test_frame_doubled_and_png(machine, tmp_path):
    poke_text(machine, 0, 0, "PNG", attr=0x4F)
    frame = machine.cga.frame(frame=0)
    doubled = machine.cga.frame_doubled(frame=0)
    assert doubled.shape == (400, 640, 3)
    assert (doubled[0::2] == frame).all() and (doubled[1::2] == frame).all()
    path = tmp_path / "screen.png"
    size = machine.cga.write_png(str(path), frame=0)
    data = path.read_bytes()
    assert size == len(data) and data[:8] == b"\x89PNG\r\n\x1a\n"
    from PIL import Image
    with Image.open(path) as image:
        assert image.mode == "RGB" and image.size == (640, 200)
        assert (np.asarray(image) == frame).all()


def test_frame_rate_and_pixel_aspect(machine):
    from fractions import Fraction
    assert machine.cga.frame_cycles() == 79_648          # the BIOS's 80x25 timing
    assert machine.cga.frame_rate_hz() == pytest.approx(59.923, abs=0.001)
    assert machine.cga.pixel_aspect() == Fraction(5, 12)


# -- state -------------------------------------------------------------------------

def test_state_round_trip(machine):
    set_mode(machine, 0x2A, CRTC_GFX, color=0x25)
    crtc(machine, 12, 0x01)
    crtc(machine, 14, 0x02)
    out(machine, 0x3D4, 9)
    machine.cycle = 123_456
    out(machine, 0x3DC, 0)
    state = machine.cga.get_state()
    import json
    state = json.loads(json.dumps(state))

    other = FakeMachine()
    other.cycle = 0
    other.memory.mem[:] = machine.memory.mem
    dev = CGA()
    dev.attach(other.board(CGA.declaration))
    other.memory.mem[VRAM:VRAM + 0x8000] = machine.memory.mem[VRAM:VRAM + 0x8000]
    dev.set_state(state)
    assert dev.get_state() == machine.cga.get_state()
    for c in range(123_456, 123_456 + 2 * CYCLES_PER_FRAME, 1231):
        machine.cycle = other.cycle = c
        assert inp(other, 0x3DA) == inp(machine, 0x3DA)
        assert dev.frame_number() == machine.cga.frame_number()
    assert (dev.frame() == machine.cga.frame()).all()
    out(other, 0x3D4, 14)
    assert inp(other, 0x3D5) == 0x02


def test_reset_restores_power_on_state(machine):
    set_mode(machine, 0x2A, CRTC_GFX, color=0x25)
    machine.cga.reset()
    assert machine.cga.mode_name() == "Text80"
    assert machine.cga.crtc[:12] == list(CRTC_80)
