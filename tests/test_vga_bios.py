"""The VGA's INT 10h services called directly (registers in, registers and
card state out) on a machine with a VGA after POST."""

import pytest

from pypc_core.cpu.registers import Registers
from pypc_core.font import FONT_8X8
from pypc_core.font.scaled import FONT_8X14, FONT_8X16
from pypc_core.machine import Machine, MachineConfig


@pytest.fixture
def m():
    machine = Machine(MachineConfig(plugins=["vga"]))
    machine.run_seconds(0.5)                  # POST done: mode 3, waiting for a disk
    yield machine
    machine.close()


def call(m, **regs):
    r = Registers(m.cpu.regs)
    for name, value in regs.items():
        setattr(r, name, value)
    m.bios.video.int10(r)
    return r


def ac(m, i):
    return m.video.ac[i]


def test_palette_registers(m):
    call(m, ax=0x1000, bx=0x3F05)
    assert ac(m, 5) == 0x3F
    assert call(m, ax=0x1007, bx=0x0005).bh == 0x3F
    call(m, ax=0x1001, bx=0x0700)
    assert ac(m, 0x11) == 7 and call(m, ax=0x1008).bh == 7
    m.memory.write(0x7000, bytes(range(20, 37)))
    call(m, ax=0x1002, es=0, dx=0x7000)
    assert m.video.ac[:16] == list(range(20, 36)) and ac(m, 0x11) == 36
    call(m, ax=0x1009, es=0, dx=0x7100)
    assert m.memory.read(0x7100, 17) == bytes(range(20, 37))
    call(m, ax=0x1003, bx=0)
    assert not ac(m, 0x10) & 0x08
    call(m, ax=0x1003, bx=1)
    assert ac(m, 0x10) & 0x08
    assert m.video.ac_index & 0x20            # the screen is on after every call


def test_colour_paging(m):
    call(m, ax=0x1013, bx=0x0100)             # 16 pages of 16
    call(m, ax=0x1013, bx=0x0301)             # page 3
    assert ac(m, 0x10) & 0x80 and ac(m, 0x14) == 3
    r = call(m, ax=0x101A)
    assert (r.bl, r.bh) == (1, 3)
    call(m, ax=0x1013, bx=0x0000)             # 4 pages of 64
    call(m, ax=0x1013, bx=0x0201)
    assert ac(m, 0x14) == 2 << 2
    r = call(m, ax=0x101A)
    assert (r.bl, r.bh) == (0, 2)


def test_dac_block_pel_mask_and_grey_summing(m):
    m.memory.write(0x7000, bytes([1, 2, 3, 4, 5, 6, 7, 8, 9]))
    call(m, ax=0x1012, bx=100, cx=3, es=0, dx=0x7000)
    call(m, ax=0x1017, bx=100, cx=3, es=0, dx=0x7200)
    assert m.memory.read(0x7200, 9) == bytes([1, 2, 3, 4, 5, 6, 7, 8, 9])
    assert m.video.dac[101].tolist() == [4, 5, 6]
    call(m, ax=0x1018, bx=0x0F)
    assert m.video.pel_mask == 0x0F and call(m, ax=0x1019).bl == 0x0F
    call(m, ax=0x1010, bx=20, dx=63 << 8, cx=0)
    call(m, ax=0x101B, bx=20, cx=1)
    assert m.video.dac[20].tolist() == [19, 19, 19]      # 0.30 x 63


def test_user_font_and_rom_fonts(m):
    pattern = bytes(range(32))
    m.memory.write(0x7000, pattern)
    call(m, ax=0x1100, bx=0x1000, cx=2, dx=0x41, es=0, bp=0x7000)
    planes = m.video.planes
    assert planes[2, 0x41 * 32:0x41 * 32 + 16].tobytes() == pattern[:16]
    assert planes[2, 0x42 * 32:0x42 * 32 + 16].tobytes() == pattern[16:]
    call(m, ax=0x1111, bx=0)
    assert m.memory.read_byte(0x484) == 400 // 14 - 1 and m.memory.read_word(0x485) == 14
    assert m.video.crtc[9] & 0x1F == 13
    assert planes[2, 0x41 * 32:0x41 * 32 + 14].tobytes() == FONT_8X14[0x41 * 14:0x42 * 14]
    assert len(m.screen_text()) == 28
    call(m, ax=0x1114, bx=0)
    assert m.memory.read_byte(0x484) == 24 and len(m.screen_text()) == 25
    call(m, ax=0x1103, bx=0x05)
    assert m.video.seq[3] == 0x05
    # fonts where AX=1130h says, in the card's ROM
    for bh, data, height in ((3, FONT_8X8, 8), (2, FONT_8X14, 14), (6, FONT_8X16, 16)):
        r = call(m, ax=0x1130, bx=bh << 8)
        addr = (r.es << 4) + r.bp
        assert m.memory.read(addr, 256 * height) == data
    r = call(m, ax=0x1130, bx=0x0400)
    assert m.memory.read((r.es << 4) + r.bp, 1024) == FONT_8X8[1024:]
    assert r.cx == 16 and r.dl == 24


def test_graphics_font_vectors(m):
    call(m, ax=0x0012)
    r = call(m, ax=0x1130, bx=0x0100)
    assert m.memory.read((r.es << 4) + r.bp, 16) == FONT_8X16[:16]
    call(m, ax=0x1123, bx=0x0002)                      # 8x8, 25 rows
    assert m.memory.read_word(0x485) == 8 and m.memory.read_byte(0x484) == 24
    call(m, ax=0x1120, es=0x1234, bp=0x5678)
    assert m.memory.read_word(0x1F * 4) == 0x5678 and m.memory.read_word(0x1F * 4 + 2) == 0x1234


def test_alternate_select(m):
    assert call(m, ax=0x1202, bx=0x30).al == 0x12
    assert call(m, ax=0x1200, bx=0x30).al == 0x00       # 200 lines: not on this card
    # default palette loading off: a mode set keeps the DAC
    call(m, ax=0x1010, bx=7, dx=1 << 8, cx=0x0203)
    assert call(m, ax=0x1201, bx=0x31).al == 0x12
    call(m, ax=0x0003)
    assert m.video.dac[7].tolist() == [1, 2, 3]
    call(m, ax=0x1200, bx=0x31)
    call(m, ax=0x1200, bx=0x33)                         # grey summing on
    call(m, ax=0x0003)
    r, g, b = m.video.dac[1].tolist()                   # blue 42 -> 0.11 x 42
    assert r == g == b == 5
    call(m, ax=0x1201, bx=0x33)
    call(m, ax=0x1201, bx=0x36)                         # screen off
    assert m.video.seq[1] & 0x20 and not m.video.frame().any()
    call(m, ax=0x1200, bx=0x36)
    assert not m.video.seq[1] & 0x20
    call(m, ax=0x1201, bx=0x32)
    assert m.video.subsystem == 0
    call(m, ax=0x1200, bx=0x32)
    r = call(m, ax=0x1200, bx=0x10)
    assert (r.bh, r.bl, r.cl) == (0, 3, 9)


def test_cursor_emulation(m):
    call(m, ax=0x0100, cx=0x0607)
    assert m.video.crtc[0x0A] == 0x0D and m.video.crtc[0x0B] == 0x0E
    call(m, ax=0x0100, cx=0x0007)
    assert m.video.crtc[0x0A] == 0x00 and m.video.crtc[0x0B] == 0x0E
    call(m, ax=0x0100, cx=0x2000)
    assert m.video.crtc[0x0A] & 0x20 and not m.video.cursor()["enabled"]
    call(m, ax=0x1201, bx=0x34)                         # emulation off
    call(m, ax=0x0100, cx=0x0607)
    assert m.video.crtc[0x0A] == 0x06 and m.video.crtc[0x0B] == 0x07
    assert m.memory.read_word(0x460) == 0x0607


def test_cga_palette_in_mode4(m):
    call(m, ax=0x0004)
    assert m.video.ac[1:4] == [0x13, 0x15, 0x17]
    call(m, ax=0x0B00, bx=0x0100)                       # palette 0
    assert m.video.ac[1:4] == [0x12, 0x14, 0x16]
    call(m, ax=0x0B00, bx=0x0001)                       # blue background
    assert ac(m, 0) == 0x01 and ac(m, 0x11) == 0x01
    call(m, ax=0x0C03, cx=10, dx=10, bx=0)
    f = m.video.frame()
    assert list(f[10, 10]) == [0xAA, 0x55, 0x00]        # colour 3 of palette 0: brown
    assert list(f[0, 0]) == [0, 0, 0xAA]


def test_graphics_text_scroll_and_read(m):
    call(m, ax=0x0012)
    call(m, ax=0x0200, bx=0, dx=0x0100)                  # row 1
    call(m, ax=0x0941, bx=0x000C, cx=1)                  # 'A' in light red
    assert call(m, ax=0x0800, bx=0).al == 0x41
    call(m, ax=0x0601, bx=0, cx=0, dx=0x1D4F)            # scroll up one row
    call(m, ax=0x0200, bx=0, dx=0x0000)
    assert call(m, ax=0x0800, bx=0).al == 0x41
    call(m, ax=0x0200, bx=0, dx=0x0100)
    assert call(m, ax=0x0800, bx=0).al == 0x00
    glyph = FONT_8X16[0x41 * 16:0x42 * 16]
    f = m.video.frame()
    lit = f[0:16, 0:8].any(axis=2)
    assert lit.tolist() == [[bool(glyph[y] & (0x80 >> x)) for x in range(8)] for y in range(16)]
    assert list(f[0:16, 0:8][lit][0]) == [0xFF, 0x55, 0x55]
    # teletype at the bottom scrolls the whole screen
    call(m, ax=0x0200, bx=0, dx=0x1D00)
    for ch in b"Z\r\n":
        call(m, ax=0x0E00 | ch, bx=0x000F)
    assert call(m, ax=0x0300, bx=0).dx == 0x1D00
    call(m, ax=0x0200, bx=0, dx=0x1C00)
    assert call(m, ax=0x0800, bx=0).al == ord("Z")


def test_mode13_xor_characters(m):
    call(m, ax=0x0013)
    call(m, ax=0x0200, bx=0, dx=0x0000)
    call(m, ax=0x0941, bx=0x0005, cx=1)
    card = m.video
    assert card.mem_read(0xA0000 + 1) == 5 or card.mem_read(0xA0000 + 2) == 5
    call(m, ax=0x0941, bx=0x0085, cx=1)                  # XOR the same glyph away
    assert not card.mem_block_read(0xA0000, 320 * 8).strip(b"\0")


def test_text_write_string_with_attributes(m):
    m.memory.write(0x7000, b"H\x1fi\x4e")
    call(m, ax=0x1303, bx=0, cx=2, dx=0x0503, es=0, bp=0x7000)
    cells = m.video.text_page()["cells"][5]
    assert [(c["char"], c["attribute"]) for c in cells[3:5]] == [("H", 0x1F), ("i", 0x4E)]
    assert call(m, ax=0x0300, bx=0).dx == 0x0505        # AL bit 0: the cursor moved


def test_planar_page_select(m):
    call(m, ax=0x000D)
    call(m, ax=0x0501)
    assert m.video.start_address() == 0x2000 and m.memory.read_byte(0x462) == 1
    r = call(m, ax=0x0F00)
    assert (r.al, r.ah, r.bh) == (0x0D, 40, 1)


def test_unknown_mode_changes_nothing(m):
    before = m.video.get_state()
    bda = m.memory.read(0x449, 0x20)
    r = call(m, ax=0x0007)
    assert r.al == 0x07
    r = call(m, ax=0x0069)
    assert m.video.get_state() == before and m.memory.read(0x449, 0x20) == bda


def test_blink_off_after_post_on_after_int10_mode_set(m):
    assert not m.video.blink_enabled()        # the API contract: VGA starts without blink
    call(m, ax=0x0003)
    assert m.video.blink_enabled()            # a guest's mode set: IBM's values


def test_text_memory_is_the_first_window(m):
    """``vram_bytes`` is what the CPU reads at the declaration's first window."""
    first = m.video.declaration.memory[0]
    assert first.base == 0xB8000
    assert m.memory.read(first.base, 160) == m.video.vram_bytes()[:160]
    assert m.video.vram_bytes()[:2] == b"p\x07"          # "pypc built-in XT BIOS"


@pytest.mark.parametrize("mode", [0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x0D, 0x0E, 0x10,
                                  0x12, 0x13])
def test_text_page_follows_the_rpc_schema(m, mode):
    from pypc_core.rpc.schemas import SchemaSet, load_method_schemas
    docs = load_method_schemas()
    schemas = SchemaSet({"video.text": docs["video.text"]})
    call(m, ax=mode)
    out = dict(m.video.text_page(), state_revision=1)
    assert schemas.result_errors("video.text", out) == []
    assert out["graphics_mode"] == mode


def test_live_view_draws_text_and_graphics(m):
    from pypc_core.cli.live import render_rich
    text = render_rich(m, 80, 25)
    assert "pypc built-in XT BIOS" in text.plain
    call(m, ax=0x0013)
    call(m, ax=0x0C0F, cx=0, dx=0, bx=0)
    pic = render_rich(m, 80, 25)
    assert set(pic.plain) <= {"\u2580", "\n"} and pic.plain.count("\n") == 24


@pytest.mark.parametrize("mode", [0x03, 0x12, 0x13])
def test_status_fast_path_matches_the_card(m, mode):
    """The core answers 3DAh from the raster block the card publishes; it
    gives the card's own status at every cycle, and only while the
    attribute flip-flop is at "index"."""
    from pypc_core.cpu.state import PORT_PY, PORT_RASTER
    call(m, ax=mode)               # ends with an index write (20h): flip-flop at "data"
    card = m.video
    raster = card._rasters[0x3DA]
    kind = m.ports.port_kind
    assert kind[0x3DA] == PORT_PY and card.ac_flipflop == 1
    m.ports.read(0x3DA)
    assert kind[0x3DA] == PORT_RASTER and kind[0x3BA] == PORT_PY
    start = m.clock()
    for cycle in range(start, start + 2 * int(card.frame_cycles()), 97):
        assert raster.read(cycle) == card.status(cycle)
    m.ports.write(0x3C0, 0x31)                 # flip-flop now at "data"
    assert kind[0x3DA] == PORT_PY
    m.ports.read(0x3DA)                        # the read resets it
    assert kind[0x3DA] == PORT_RASTER and card.ac_flipflop == 0


def test_equipment_word_says_ega_or_vga(m):
    assert m.memory.read_word(0x410) & 0x30 == 0x00


def test_a_bios_that_knows_no_vga_still_shows_text(tmp_path):
    """The card powers on in mode 3 with its font loaded, so a CGA-only
    system BIOS writing to B8000h is readable."""
    import sys
    import os
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from test_real_bios_path import tiny_bios
    rom = tmp_path / "tiny.rom"
    rom.write_bytes(tiny_bios())
    with Machine(MachineConfig(bios=str(rom), plugins=["vga"])) as m:
        assert m.run_until_text("READY", 1)
        glyph = FONT_8X16[ord("R") * 16:ord("R") * 16 + 16]
        lit = m.video.frame(8)[0:16, 0:8].any(axis=2)      # frame 8: cursor off
        assert lit.tolist() == [[bool(glyph[y] & (0x80 >> x)) for x in range(8)]
                                for y in range(16)]


def test_mode_number_follows_the_registers_over_the_bios_data_area(m):
    call(m, ax=0x0002)
    assert m.video.text_page()["graphics_mode"] == 2
    # the guest reprograms the card for 256 colours behind the BIOS's back
    for port, value in ((0x3C4, 4), (0x3C5, 0x0E), (0x3CE, 6), (0x3CF, 0x05)):
        m.ports.write(port, value)
    m.ports.read(0x3DA)
    m.ports.write(0x3C0, 0x30)
    m.ports.write(0x3C0, 0x41)
    assert m.memory.read_byte(0x449) == 2
    assert m.video.mode_number() == 0x13
