"""The VGA card on its own (no CPU): registers through the ports, the DAC,
the status port's timing, and the renderer's text and graphics features
against pictures built here."""

import numpy as np
import pytest

from pypc_core.font.scaled import FONT_8X16
from pypc_plugins.vga.regs import MODES
from pypc_plugins.vga.vga import VGA


class Clock:
    def __init__(self):
        self.cycle = 0

    def __call__(self):
        return self.cycle


def set_mode(v, number):
    """Program mode ``number``'s registers through the ports (what the
    BIOS does, without clearing memory or loading the DAC)."""
    m = MODES[number]
    v.port_write(0x3C2, m.misc)
    for i, value in enumerate(m.seq, start=1):
        v.port_write(0x3C4, i)
        v.port_write(0x3C5, value)
    v.port_write(0x3D4, 0x11)
    v.port_write(0x3D5, 0x00)
    for i, value in enumerate(m.crtc):
        v.port_write(0x3D4, i)
        v.port_write(0x3D5, value)
    for i, value in enumerate(m.gc):
        v.port_write(0x3CE, i)
        v.port_write(0x3CF, value)
    v.port_read(0x3DA)
    for i, value in enumerate(m.ac):
        v.port_write(0x3C0, i)
        v.port_write(0x3C0, value)
    v.port_write(0x3C0, 0x20)


def dac_set(v, index, rgb):
    v.port_write(0x3C8, index)
    for c in rgb:
        v.port_write(0x3C9, c)


def text_card(char, attr, font=FONT_8X16):
    """Mode 3 with ``char``/``attr`` in the top-left cell and the font loaded."""
    v = VGA()
    for c in range(256):
        v.planes[2, c * 32:c * 32 + 16] = np.frombuffer(font[c * 16:c * 16 + 16], np.uint8)
    for c in range(16):
        dac_set(v, c, (0, 0, 0))
    dac_set(v, 0x07, (42, 42, 42))
    v.planes[0, 0] = char
    v.planes[1, 0] = attr
    v.port_write(0x3D4, 0x0A)
    v.port_write(0x3D5, 0x20)          # cursor off
    return v


# -- registers -----------------------------------------------------------------------------
def test_dac_auto_increment_and_read_back():
    v = VGA()
    dac_set(v, 250, (1, 2, 3, 4, 5, 6))
    v.port_write(0x3C7, 250)
    assert v.port_read(0x3C7) == 3                 # read mode
    assert [v.port_read(0x3C9) for _ in range(6)] == [1, 2, 3, 4, 5, 6]
    assert v.port_read(0x3C8) == 252
    v.port_write(0x3C8, 9)
    assert v.port_read(0x3C7) == 0


def test_attribute_flip_flop_and_index():
    v = VGA()
    v.port_read(0x3DA)
    v.port_write(0x3C0, 0x32)                      # index 12h, screen on
    assert v.port_read(0x3C0) == 0x32
    v.port_read(0x3DA)                             # back to index
    v.port_write(0x3C0, 0x31)                      # index 11h
    v.port_write(0x3C0, 0x05)                      # data
    assert v.ac[0x11] == 0x05 and v.ac[0x12] == 0x0F


def test_crtc_write_protect():
    v = VGA()
    v.port_write(0x3D4, 0x11)
    v.port_write(0x3D5, 0x8E)                      # protect on
    v.port_write(0x3D4, 0x01)
    v.port_write(0x3D5, 0x27)
    assert v.crtc[1] == 0x4F
    v.port_write(0x3D4, 0x07)
    v.port_write(0x3D5, 0x00)                      # only the line-compare bit moves
    assert v.crtc[7] == 0x1F & ~0x10
    v.port_write(0x3D4, 0x0C)
    v.port_write(0x3D5, 0x12)                      # start address is not protected
    assert v.crtc[0x0C] == 0x12


def test_mono_addressing_moves_the_crtc():
    v = VGA()
    v.port_write(0x3C2, 0x66)                      # I/O address select clear
    v.port_write(0x3B4, 0x0E)
    v.port_write(0x3B5, 0x12)
    assert v.crtc[0x0E] == 0x12
    v.port_write(0x3D4, 0x0E)
    v.port_write(0x3D5, 0x34)
    assert v.crtc[0x0E] == 0x12
    assert v.port_read(0x3D5) == 0xFF


def test_status_timing_mode3():
    clock = Clock()
    v = VGA(clock=clock)
    # 900 dots x 449 lines at 28.322 MHz, CPU at 14.31818 MHz / 3
    assert v.frame_cycles() == pytest.approx(900 * 449 * 14318180 / 3 / 28322000)
    dots = lambda cyc: cyc * 3 * 28322000 // 14318180      # noqa: E731
    seen = set()
    for cyc in range(0, int(v.frame_cycles()), 7):
        clock.cycle = cyc
        d = dots(cyc) - v.epoch_dots
        line, x = divmod(d % (900 * 449), 900)
        s = v.status()
        assert bool(s & 8) == (0x19C <= line < 0x19C + 2), (cyc, line)    # retrace 19Ch-19Dh
        assert bool(s & 1) == (line >= 400 or x >= 720)
        seen.add(s)
    assert seen == {0, 1, 9}


# -- text ----------------------------------------------------------------------------------------
def cell_pixels(v, x0=0, y0=0, w=9, h=16):
    return v.frame()[y0:y0 + h, x0:x0 + w]


def expected_cell(glyph, fg, bg, ninth=False, h=16):
    out = np.zeros((h, 9, 3), np.uint8)
    for y in range(h):
        for x in range(9):
            bit = glyph[y] & (0x80 >> x) if x < 8 else (ninth and glyph[y] & 1)
            out[y, x] = fg if bit else bg
    return out


def test_nine_dot_cells_and_line_graphics():
    grey = (170, 170, 170)
    for ch, ninth in ((0xC4, True), (ord("A"), False)):
        v = text_card(ch, 0x07)
        glyph = FONT_8X16[ch * 16:ch * 16 + 16]
        assert (cell_pixels(v) == expected_cell(glyph, grey, (0, 0, 0), ninth)).all()
    v = text_card(0xC4, 0x07)
    v.port_read(0x3DA)
    v.port_write(0x3C0, 0x10)
    v.port_write(0x3C0, 0x08)                      # line graphics off
    v.port_write(0x3C0, 0x20)
    glyph = FONT_8X16[0xC4 * 16:0xC4 * 16 + 16]
    assert (cell_pixels(v) == expected_cell(glyph, (170, 170, 170), (0, 0, 0))).all()


def test_blink_and_intensity():
    v = text_card(ord("Z"), 0x97)                  # blinking grey on blue
    dac_set(v, 0x01, (0, 0, 42))
    dac_set(v, 0x39, (21, 21, 63))
    glyph = FONT_8X16[ord("Z") * 16:ord("Z") * 16 + 16]
    blue = (0, 0, 170)
    on = expected_cell(glyph, (170, 170, 170), blue)
    frames = [0, 16]
    pics = [v.frame(f)[0:16, 0:9] for f in frames]
    assert (pics[0] == on).all()
    assert (pics[1] == blue).all()                 # the character blinks off
    v.port_read(0x3DA)
    v.port_write(0x3C0, 0x10)
    v.port_write(0x3C0, 0x04)                      # blink off: bit 7 is intensity
    v.port_write(0x3C0, 0x20)
    assert (v.frame(16)[0:16, 0:9] == expected_cell(glyph, (170, 170, 170),
                                                    (85, 85, 255))).all()


def test_cursor_lines():
    v = text_card(ord(" "), 0x07)
    for reg, value in ((0x0A, 0x04), (0x0B, 0x06), (0x0E, 0x00), (0x0F, 0x00)):
        v.port_write(0x3D4, reg)
        v.port_write(0x3D5, value)
    pic = v.frame(0)[0:16, 0:9]
    lit = [bool((row == 170).all()) for row in pic]
    assert lit == [4 <= y <= 6 for y in range(16)]
    assert not v.frame(8)[0:16, 0:9].any()         # blink phase off
    v.port_write(0x3D4, 0x0A)
    v.port_write(0x3D5, 0x07)                      # start > end: no cursor on a VGA
    assert not v.frame(0)[0:16, 0:9].any()
    assert v.cursor(0)["enabled"] is False


def test_character_map_select():
    v = text_card(ord("A"), 0x0F)                  # attribute bit 3 set
    dac_set(v, 0x3F, (63, 63, 63))
    v.planes[2, 0x4000 + ord("A") * 32:0x4000 + ord("A") * 32 + 16] = 0xFF   # map 1: solid
    v.port_write(0x3C4, 3)
    v.port_write(0x3C5, 0x01)                      # map B = 1, map A = 0
    assert (v.frame(0)[0:16, 0:8] == 255).all()
    v.planes[1, 0] = 0x07                          # bit 3 clear: map A, the real 'A'
    glyph = FONT_8X16[ord("A") * 16:ord("A") * 16 + 16]
    assert (cell_pixels(v) == expected_cell(glyph, (170, 170, 170), (0, 0, 0))).all()


def test_text_rows_and_start_address():
    v = text_card(ord("H"), 0x07)
    v.planes[0, 2] = ord("i")
    assert v.text_rows()[0] == "Hi"
    v.planes[0, 0x1000] = ord("Q")
    v.port_write(0x3D4, 0x0C)
    v.port_write(0x3D5, 0x08)
    assert v.text_rows()[0] == "Q"
    page = v.text_page()
    # the contract's pages: 80 x 25 x 2 bytes, eight in 32 KiB; addresses in bytes
    assert page["display_address"] == 0x1000 and page["active_page"] == 1
    assert page["page_count"] == 8 and page["page_size_bytes"] == 4000
    assert len(page["text"]) == 25 and len(page["cells"][0]) == 80
    assert page["cursor"]["address"] == v.cursor()["address"]
    assert v.text_page(page=0)["text"][0] == "Hi"
    assert v.text_page(page=0)["is_active_page"] is False
    assert v.text_page(display_address=2)["text"][0] == "i"
    with pytest.raises(ValueError):
        v.text_page(page=8)
    with pytest.raises(ValueError):
        v.text_page(display_address=0x8000)
    with pytest.raises(ValueError):
        v.text_page(page=0, display_address=0)
    assert v.vram_bytes()[:4] == bytes([ord("H"), 0x07, ord("i"), 0])


# -- graphics -------------------------------------------------------------------------------------
def test_mode13_split_screen_by_line_compare():
    v = VGA()
    set_mode(v, 0x13)
    v.planes[:] = 0                            # no power-on font in plane 2
    v.planes[0, 4 * 80 * 50] = 1               # pixel (0, 50) of memory
    dac_set(v, 1, (63, 63, 63))
    v.port_write(0x3D4, 0x0C)
    v.port_write(0x3D5, 0x0F)                  # start address 0FA0h (4000 = 50 rows)
    v.port_write(0x3D4, 0x0D)
    v.port_write(0x3D5, 0xA0)
    assert (v.frame()[0, 0] == 255).all()      # row 0 now shows row 50
    v.port_write(0x3D4, 0x18)
    v.port_write(0x3D5, 99)                    # split after scan line 99: native row 50
    v.port_write(0x3D4, 0x07)
    v.port_write(0x3D5, v.crtc[7] & ~0x10)
    v.port_write(0x3D4, 0x09)
    v.port_write(0x3D5, v.crtc[9] & ~0x40)
    f = v.frame()
    assert f.shape == (200, 320, 3)
    assert (f[0, 0] == 255).all()              # still row 50 of memory on top
    lit = np.argwhere(f[50:].any(axis=2))
    assert lit.tolist() == [[50, 0]]           # below the split, memory from 0: row 50 at 100


def test_pel_mask_and_colour_select():
    v = VGA()
    set_mode(v, 0x13)
    v.planes[0, 0] = 0x85
    dac_set(v, 0x05, (63, 0, 0))
    dac_set(v, 0x85, (0, 63, 0))
    assert list(v.frame()[0, 0]) == [0, 255, 0]
    v.port_write(0x3C6, 0x0F)
    assert list(v.frame()[0, 0]) == [255, 0, 0]


def test_planar_colour_plane_enable_and_palette():
    v = VGA()
    set_mode(v, 0x12)
    for c in range(16):
        dac_set(v, MODES[0x12].ac[c], (4 * c, 0, 0))
    v.planes[:, 0] = (0x80, 0x80, 0x80, 0x80)     # pixel 0 = colour 15
    v.planes[1, 0] |= 0x40                          # pixel 1 = colour 2
    f = v.frame()
    assert f[0, 0, 0] == (60 * 255 + 31) // 63 and f[0, 1, 0] == (8 * 255 + 31) // 63
    v.port_read(0x3DA)
    v.port_write(0x3C0, 0x12)
    v.port_write(0x3C0, 0x01)                       # only plane 0 shows
    v.port_write(0x3C0, 0x20)
    f = v.frame()
    assert f[0, 0, 0] == (4 * 255 + 31) // 63 and f[0, 1, 0] == 0


@pytest.mark.parametrize("mode,size,layout,name", [
    (0x0D, (320, 200), "320x200x16", "G320"), (0x0E, (640, 200), "640x200x16", "G640"),
    (0x10, (640, 350), "640x350x16", "G640"), (0x12, (640, 480), "640x480x16", "G640"),
    (0x13, (320, 200), "320x200x256", "G320"), (0x04, (320, 200), "320x200x4", "G320"),
    (0x06, (640, 200), "640x200x2", "G640"), (0x01, (360, 400), "40x25 text", "Text40"),
    (0x03, (720, 400), "80x25 text", "Text80"),
])
def test_native_resolution(mode, size, layout, name):
    v = VGA()
    set_mode(v, mode)
    assert v.resolution() == size and v.layout() == layout and v.mode_name() == name
    assert v.mode_number() == mode and v.text_page()["graphics_mode"] == mode
    assert v.frame().shape == (size[1], size[0], 3)


def test_screen_off_shows_nothing():
    v = text_card(0xDB, 0x0F)
    dac_set(v, 0x3F, (63, 63, 63))
    assert v.frame().any()
    v.port_write(0x3C4, 1)
    v.port_write(0x3C5, v.seq[1] | 0x20)
    assert not v.frame().any()


# -- state -------------------------------------------------------------------------------------------
def test_state_round_trip_and_bad_state():
    v = text_card(ord("S"), 0x1E)
    dac_set(v, 3, (1, 2, 3))
    v.mem_read(0xB8000)
    state = v.get_state()
    w = VGA()
    w.set_state(state)
    assert w.get_state() == state
    assert (w.frame(0) == v.frame(0)).all()
    before = w.get_state()
    bad = dict(state, crtc=state["crtc"][:3])
    with pytest.raises(ValueError, match="VGA state"):
        w.set_state(bad)
    with pytest.raises(ValueError, match="VGA state"):
        w.set_state({k: v for k, v in state.items() if k != "misc"})
    with pytest.raises(ValueError, match="VGA state"):
        w.set_state(dict(state, planes="not base64!"))
    assert w.get_state() == before


def test_pel_panning_and_preset_row_scan():
    v = VGA()
    set_mode(v, 0x13)
    v.planes[:] = 0                            # no power-on font in plane 2
    dac_set(v, 1, (63, 63, 63))
    v.planes[1, 0] = 1                         # pixel (1, 0)
    v.planes[0, 4] = 1                         # pixel (4, 0)
    assert np.argwhere(v.frame()[0].any(axis=1)).ravel().tolist() == [1, 4]
    v.port_read(0x3DA)
    v.port_write(0x3C0, 0x33)
    v.port_write(0x3C0, 0x02)                  # 256 colours: 2 = one pixel
    assert np.argwhere(v.frame()[0].any(axis=1)).ravel().tolist() == [0, 3]
    v.port_write(0x3C0, 0x33)
    v.port_write(0x3C0, 0x06)                  # three pixels
    v.planes[0, 4 * 80] = 1                    # the clock after the line: "pixel 320"
    assert np.argwhere(v.frame()[0].any(axis=1)).ravel().tolist() == [1, 317]
    # text, 9 dots: AC 13h = 0 moves the picture one dot left, 8 is none
    t = text_card(0xDB, 0x07)
    glyph = FONT_8X16[0xDB * 16:0xDB * 16 + 16]
    plain = t.frame(0).copy()
    t.port_read(0x3DA)
    t.port_write(0x3C0, 0x33)
    t.port_write(0x3C0, 0x00)
    moved = t.frame(0)
    assert (moved[:, :719] == plain[:, 1:]).all()
    t.port_write(0x3C0, 0x33)
    t.port_write(0x3C0, 0x08)
    assert (t.frame(0) == plain).all()
    # preset row scan 4: the first text row starts at glyph line 4
    t.port_write(0x3D4, 0x08)
    t.port_write(0x3D5, 0x04)
    lit = [bool(row.any()) for row in t.frame(0)[0:12, 0:8]]
    assert lit == [bool(glyph[y + 4]) for y in range(12)]


@pytest.mark.parametrize("mode,size", [(0x13, (640, 400)), (0x0E, (640, 400)),
                                       (0x01, (720, 400)), (0x12, (640, 480))])
def test_doubled_frame_and_png(mode, size, tmp_path):
    from fractions import Fraction

    from pypc_core.video_frames import decode_png, png_bytes
    v = VGA()
    set_mode(v, mode)
    v.planes[:, 0] = 0xFF
    img = v.frame_doubled()
    assert img.shape == (size[1], size[0], 3)
    path = tmp_path / "shot.png"
    assert v.write_png(str(path), double=True) == path.stat().st_size
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    # the picture inside is frame_doubled(), decoded by Pillow
    assert (decode_png(data) == img).all()
    native = v.frame()
    assert (decode_png(png_bytes(v)) == native).all()
    h, w = native.shape[:2]
    assert v.pixel_aspect() == Fraction(4 * h, 3 * w)


@pytest.mark.parametrize("mode,hz", [(0x03, 70.086), (0x13, 70.086), (0x12, 59.94)])
def test_frame_rate_from_the_card_timing(mode, hz):
    v = VGA()
    set_mode(v, mode)
    assert v.frame_rate_hz() == pytest.approx(hz, abs=0.01)
    assert v.frame_cycles() * v.frame_rate_hz() == pytest.approx(4_772_727, rel=1e-6)


def test_underline_location():
    v = text_card(ord(" "), 0x01)                  # blue on black: "underline" colours
    dac_set(v, 0x01, (0, 0, 63))
    assert not v.frame(8)[0:16, 0:9].any()         # location 1Fh: below the cell
    v.port_write(0x3D4, 0x14)
    v.port_write(0x3D5, 0x0F)
    lit = [bool(row.any()) for row in v.frame(8)[0:16, 0:9]]
    assert lit == [y == 15 for y in range(16)]
    v.planes[1, 0] = 0x02                          # green: no underline
    dac_set(v, 0x02, (0, 63, 0))
    assert not v.frame(8)[0:16, 0:9].any()


def test_sequencer_written_inside_the_core_retimes_the_frame():
    """A write the core makes to sequencer 1 (no Python call) is noticed at
    the card's next look at the time: the frame gets longer, its count goes
    on from where it was."""
    from pypc_plugins.vga import planar
    clock = Clock()
    v = VGA(clock=clock)
    clock.cycle = 10 * int(v.frame_cycles()) + 1234
    before = v.frame_number()
    eight = v.frame_cycles()
    planar.io_write(v.st, 0x3C4, 1)
    planar.io_write(v.st, 0x3C5, 0x08)              # 9 dots, dot clock halved
    assert v.frame_number() == before
    assert v.frame_cycles() == pytest.approx(eight * 2)
    clock.cycle += int(v.frame_cycles())
    assert v.frame_number() == before + 1
