"""INT 10h services that the built-in BIOS (CGA) and the VGA's own firmware
answer alike: cursor per page, page select, scrolling, characters, teletype,
write string, mode facts.  Each test runs on a real machine with either
card after POST and checks values worked out by hand from the IBM BIOS
rules (cell offset = page start + (row x columns + column) x 2), so that
both implementations are held to the same expectations; the few places
where the cards differ on purpose are spelled out per card."""

import pytest

from pypc_core.cpu.registers import Registers
from pypc_core.font import FONT_8X8
from pypc_core.machine import Machine, MachineConfig

TEXT = 0xB8000
STRING = 0x6000                    # 0600:0000, where the tests put AH=13h strings


@pytest.fixture(params=["cga", "vga"])
def m(request):
    machine = Machine(MachineConfig(plugins=[request.param]))
    machine.run_seconds(0.5)                  # POST done: mode 3, waiting for a disk
    machine.card_kind = request.param
    yield machine
    machine.close()


def call(m, **regs):
    """INT 10h as a guest's reaches the BIOS: the trap in the ROM's entry
    stub, with ``regs`` in the CPU; returns the registers after it."""
    trap = next(addr for addr, name in m.bios.trap_addresses.items() if name == "int10")
    r = Registers(m.cpu.regs)
    for name, value in regs.items():
        setattr(r, name, value)
    r.cs, r.ip = 0xF000, trap - 0xF0000
    assert m.bios.on_trap(trap)
    return r


def video_read(m, addr, count):
    """Bytes as a MOV from ``addr`` reads them (the VGA's memory is behind
    its planar path, the CGA's is RAM)."""
    if m.card_kind == "vga":
        return m.video.mem_block_read(addr, count)
    return bytes(m.memory.read(addr, count))


def cells(m, page_start, row, col, count, cols=80):
    """``count`` (character, attribute) pairs from (row, col) of a text page."""
    data = video_read(m, TEXT + page_start + (row * cols + col) * 2, count * 2)
    return [(data[2 * i], data[2 * i + 1]) for i in range(count)]


def bda_byte(m, addr):
    return m.memory.read_byte(addr)


def bda_word(m, addr):
    return m.memory.read_byte(addr) | m.memory.read_byte(addr + 1) << 8


def crtc_word(m, high):
    """CRTC register pair ``high``/``high + 1`` as one value (start address
    12/13, cursor address 14/15)."""
    return m.video.crtc[high] << 8 | m.video.crtc[high + 1]


def set_cursor(m, page, row, col):
    call(m, ax=0x0200, bx=page << 8, dx=row << 8 | col)


def get_cursor(m, page):
    r = call(m, ax=0x0300, bx=page << 8)
    return r.dh, r.dl


# -- cursor and pages ----------------------------------------------------------------------
def test_cursor_kept_per_page_in_40_columns(m):
    call(m, ax=0x0001)
    for page in range(8):
        set_cursor(m, page, page + 1, 3 * page)
    for page in range(8):
        r = call(m, ax=0x0300, bx=page << 8)
        assert (r.dh, r.dl, r.cx) == (page + 1, 3 * page, 0x0607)
        assert bda_word(m, 0x450 + 2 * page) == (page + 1) << 8 | 3 * page
    # only the active page's cursor reaches the CRTC: page 0 at (1, 0) = 1 x 40
    assert crtc_word(m, 14) == 40
    # BH is taken modulo 8: page 8 is page 0
    set_cursor(m, 8, 10, 11)
    assert get_cursor(m, 0) == (10, 11)
    assert crtc_word(m, 14) == 10 * 40 + 11


def test_page_select_moves_start_and_cursor(m):
    call(m, ax=0x0001)
    set_cursor(m, 5, 6, 15)
    call(m, ax=0x0505)
    assert bda_byte(m, 0x462) == 5
    assert bda_word(m, 0x44E) == 5 * 0x800                 # 2 KiB pages in 40 columns
    assert crtc_word(m, 12) == 5 * 0x800 // 2              # the CRTC counts words
    assert crtc_word(m, 14) == 5 * 0x400 + 6 * 40 + 15
    r = call(m, ax=0x0F00)
    assert (r.al, r.ah, r.bh) == (1, 40, 5)
    # a cursor set on the now active page follows at once
    set_cursor(m, 5, 0, 1)
    assert crtc_word(m, 14) == 5 * 0x400 + 1
    call(m, ax=0x0508)                                     # no page 8: refused
    assert bda_byte(m, 0x462) == 5


def test_pages_in_80_columns_four_on_the_cga_eight_on_the_vga(m):
    call(m, ax=0x0003)
    call(m, ax=0x0503)
    assert bda_byte(m, 0x462) == 3 and crtc_word(m, 12) == 3 * 0x800
    call(m, ax=0x0504)
    if m.card_kind == "cga":                               # 16 KiB: pages 0-3 only
        assert bda_byte(m, 0x462) == 3 and crtc_word(m, 12) == 3 * 0x800
    else:                                                  # 32 KiB of text memory
        assert bda_byte(m, 0x462) == 4 and crtc_word(m, 12) == 4 * 0x800
        assert bda_word(m, 0x44E) == 4 * 0x1000


def test_graphics_modes_have_one_page(m):
    call(m, ax=0x0004)
    call(m, ax=0x0501)
    assert bda_byte(m, 0x462) == 0
    r = call(m, ax=0x0F00)
    assert (r.al, r.ah, r.bh) == (4, 40, 0)


def test_cursor_shape(m):
    call(m, ax=0x0100, cx=0x0607)
    assert bda_word(m, 0x460) == 0x0607
    assert call(m, ax=0x0300, bx=0).cx == 0x0607
    start_end = (m.video.crtc[10], m.video.crtc[11])
    if m.card_kind == "cga":
        assert start_end == (6, 7)
    else:                      # cursor emulation: lines 6-7 of 8 are 13-14 of 16
        assert start_end == (13, 14)


# -- characters ------------------------------------------------------------------------------
def test_write_and_read_characters_on_a_page_that_is_not_shown(m):
    call(m, ax=0x0003)
    page2 = 2 * 0x1000
    set_cursor(m, 2, 3, 4)
    call(m, ax=0x0958, bx=0x021E, cx=3)                    # 'X' on 1Eh, three times
    assert cells(m, page2, 3, 4, 4) == [(0x58, 0x1E)] * 3 + [(0x20, 0x07)]
    assert cells(m, 0, 3, 4, 1) == [(0x20, 0x07)]          # page 0 untouched
    call(m, ax=0x0A79, bx=0x02FF, cx=2)                    # 'y', attributes kept
    assert cells(m, page2, 3, 4, 3) == [(0x79, 0x1E), (0x79, 0x1E), (0x58, 0x1E)]
    r = call(m, ax=0x0800, bx=0x0200)
    assert (r.al, r.ah) == (0x79, 0x1E)
    assert get_cursor(m, 2) == (3, 4)                      # AH=09h/0Ah leave it
    assert crtc_word(m, 14) == 0                           # page 0's cursor is shown
    # a count past the end of the row goes on at the start of the next row
    set_cursor(m, 2, 3, 78)
    call(m, ax=0x0941, bx=0x0270, cx=4)
    assert cells(m, page2, 3, 78, 4) == [(0x41, 0x70)] * 4
    assert cells(m, page2, 4, 2, 1) == [(0x20, 0x07)]
    # AH=09h with CX=0 writes nothing
    call(m, ax=0x0942, bx=0x024F, cx=0)
    assert cells(m, page2, 3, 78, 1) == [(0x41, 0x70)]


def test_characters_in_a_graphics_mode(m):
    call(m, ax=0x0004)                                     # 320x200, 2 bits a pixel

    def cell_bytes(row, col):
        out = []
        for y in range(8):
            line = row * 8 + y
            addr = TEXT + (line & 1) * 0x2000 + (line >> 1) * 80 + col * 2
            out.append(video_read(m, addr, 2))
        return out

    def expanded(ch, colour):
        rows = []
        for y in range(8):
            bits = FONT_8X8[ch * 8 + y]
            value = 0
            for k in range(8):
                if bits & (0x80 >> k):
                    value |= colour << (14 - 2 * k)
            rows.append(bytes([value >> 8, value & 0xFF]))
        return rows

    set_cursor(m, 0, 2, 3)
    call(m, ax=0x0941, bx=0x0003, cx=1)
    assert cell_bytes(2, 3) == expanded(0x41, 3)
    r = call(m, ax=0x0800, bx=0)
    assert (r.al, r.ah) == (0x41, 0)
    call(m, ax=0x0942, bx=0x0083, cx=1)                    # bit 7: XOR 'B' over 'A'
    assert cell_bytes(2, 3) == [bytes(a ^ b for a, b in zip(x, y))
                                for x, y in zip(expanded(0x41, 3), expanded(0x42, 3))]
    # a count runs on along the row and stops at the bottom of the screen
    set_cursor(m, 0, 24, 38)
    call(m, ax=0x0943, bx=0x0001, cx=5)
    assert cell_bytes(24, 38) == expanded(0x43, 1)
    assert cell_bytes(24, 39) == expanded(0x43, 1)
    assert cell_bytes(0, 0) == [b"\0\0"] * 8
    # teletype in the last cell wraps, and the screen scrolls up a text row
    set_cursor(m, 0, 24, 39)
    call(m, ax=0x0E44, bx=0x0002)
    assert get_cursor(m, 0) == (24, 0)
    assert cell_bytes(23, 39) == expanded(0x44, 2)
    assert cell_bytes(23, 38) == expanded(0x43, 1)
    assert cell_bytes(24, 39) == [b"\0\0"] * 8
    set_cursor(m, 0, 23, 39)
    assert call(m, ax=0x0800, bx=0).al == 0x44


def test_pixels_in_the_cga_modes(m):
    call(m, ax=0x0004)
    call(m, ax=0x0C03, bx=0, cx=5, dx=1)
    assert video_read(m, TEXT + 0x2000 + 1, 1) == bytes([0b00110000])    # odd bank, x=5
    assert call(m, ax=0x0D00, bx=0, cx=5, dx=1).al == 3
    call(m, ax=0x0C81, bx=0, cx=5, dx=1)                   # XOR 1 into 3
    assert call(m, ax=0x0D00, bx=0, cx=5, dx=1).al == 2
    assert call(m, ax=0x0D00, bx=0, cx=320, dx=0).al == 0  # off the screen
    call(m, ax=0x0006)
    call(m, ax=0x0C01, bx=0, cx=9, dx=3)
    assert video_read(m, TEXT + 0x2000 + 80 + 1, 1) == bytes([0x40])
    call(m, ax=0x0C81, bx=0, cx=9, dx=3)
    assert call(m, ax=0x0D00, bx=0, cx=9, dx=3).al == 0


def test_palette_select_kept_in_the_bios_data_area(m):
    call(m, ax=0x0004)
    assert bda_byte(m, 0x466) == 0x30
    call(m, ax=0x0B00, bx=0x001A)                          # background 1Ah
    assert bda_byte(m, 0x466) == 0x3A
    call(m, ax=0x0B00, bx=0x0100)                          # palette 0
    assert bda_byte(m, 0x466) == 0x1A
    call(m, ax=0x0B00, bx=0x0201)                          # no BH=2: nothing
    assert bda_byte(m, 0x466) == 0x1A


# -- scrolling and teletype --------------------------------------------------------------------
def test_scroll_the_active_page_and_clip_the_window(m):
    call(m, ax=0x0003)
    call(m, ax=0x0501)
    page1 = 0x1000
    for page in (0, 1):
        set_cursor(m, page, 3, 3)
        call(m, ax=0x0952, bx=page << 8 | 0x07, cx=1)      # 'R' at (3, 3)
    call(m, ax=0x0601, bx=0x1700, cx=0x0000, dx=0x0A0A)    # window (0,0)-(10,10)
    assert cells(m, page1, 2, 3, 1) == [(0x52, 0x07)]
    assert cells(m, page1, 3, 3, 1) == [(0x20, 0x07)]
    assert cells(m, page1, 10, 0, 12) == [(0x20, 0x17)] * 11 + [(0x20, 0x07)]
    assert cells(m, 0, 3, 3, 1) == [(0x52, 0x07)]          # page 0 is not shown: kept
    # scroll down two; a window past the screen is cut at row 24, column 79
    call(m, ax=0x0702, bx=0x2E00, cx=0x0000, dx=0xFFFF)
    assert cells(m, page1, 4, 3, 1) == [(0x52, 0x07)]
    assert cells(m, page1, 0, 0, 80) == [(0x20, 0x2E)] * 80
    assert cells(m, page1, 1, 79, 2) == [(0x20, 0x2E), (0x20, 0x07)]
    # AL=0, or more lines than the window has, blanks the window ('R' too)
    call(m, ax=0x0600 | 30, bx=0x4F00, cx=0x0302, dx=0x0404)
    assert cells(m, page1, 4, 1, 5) == [(0x20, 0x07)] + [(0x20, 0x4F)] * 3 + [(0x20, 0x07)]
    # top below bottom: nothing
    call(m, ax=0x0600, bx=0x7000, cx=0x0500, dx=0x0410)
    assert cells(m, page1, 4, 2, 1) == [(0x20, 0x4F)]


def test_teletype_on_the_last_row_in_40_columns(m):
    call(m, ax=0x0001)
    set_cursor(m, 0, 5, 0)
    call(m, ax=0x094D, bx=0x0007, cx=1)                    # 'M' at (5, 0)
    set_cursor(m, 0, 24, 0)
    call(m, ax=0x097A, bx=0x001E, cx=40)                   # row 24: 'z' on 1Eh
    set_cursor(m, 0, 24, 39)
    call(m, ax=0x0E41, bx=0x0004)                          # 'A' in the last cell
    # the row wrapped past the bottom: one line up, the new line takes the
    # attribute of the cell the cursor came to (24, 0)
    assert get_cursor(m, 0) == (24, 0)
    assert crtc_word(m, 14) == 24 * 40
    assert cells(m, 0, 23, 0, 40, cols=40) == [(0x7A, 0x1E)] * 39 + [(0x41, 0x1E)]
    assert cells(m, 0, 24, 0, 40, cols=40) == [(0x20, 0x1E)] * 40
    assert cells(m, 0, 4, 0, 1, cols=40) == [(0x4D, 0x07)]
    call(m, ax=0x0E0A, bx=0)                               # LF on the last row: scroll
    assert get_cursor(m, 0) == (24, 0)
    assert cells(m, 0, 22, 39, 1, cols=40) == [(0x41, 0x1E)]
    assert cells(m, 0, 3, 0, 1, cols=40) == [(0x4D, 0x07)]
    for ch in (0x08, 0x07):                                # BS at column 0, BEL: no move
        call(m, ax=0x0E00 | ch, bx=0)
        assert get_cursor(m, 0) == (24, 0)
    call(m, ax=0x0E42, bx=0)
    call(m, ax=0x0E0D, bx=0)
    assert get_cursor(m, 0) == (24, 0)
    assert cells(m, 0, 24, 0, 1, cols=40) == [(0x42, 0x1E)]


def test_rows_25_on_the_cga_and_from_the_bios_data_area_on_the_vga(m):
    call(m, ax=0x0003)
    if m.card_kind == "vga":
        call(m, ax=0x1112, bx=0)                           # 8x8 font: 50 rows
        assert bda_byte(m, 0x484) == 49
        last = 49
    else:
        m.memory.write(0x484, bytes([49]))                 # not a CGA BIOS's byte
        last = 24
    set_cursor(m, 0, last, 5)
    call(m, ax=0x094D, bx=0x0007, cx=1)
    call(m, ax=0x0E0A, bx=0)
    assert get_cursor(m, 0) == (last, 5)
    assert cells(m, 0, last - 1, 5, 1) == [(0x4D, 0x07)]
    call(m, ax=0x0600, bx=0x1F00, cx=0, dx=0xFFFF)         # whole screen, clipped
    assert cells(m, 0, last, 79, 1) == [(0x20, 0x1F)]
    assert cells(m, 0, last + 1, 0, 1) != [(0x20, 0x1F)]


# -- write string --------------------------------------------------------------------------------
@pytest.mark.parametrize("flags", [0, 1, 2, 3])
def test_write_string_modes_on_another_page(m, flags):
    call(m, ax=0x0003)
    page1 = 0x1000
    if flags & 2:
        m.memory.write(STRING, b"A\x1fB\x2e")              # character, attribute pairs
        want = [(0x41, 0x1F), (0x42, 0x2E)]
    else:
        m.memory.write(STRING, b"AB")
        want = [(0x41, 0x4E), (0x42, 0x4E)]                # BL for every character
    call(m, ax=0x1300 | flags, bx=0x014E, cx=2, dx=0x0506, es=STRING >> 4, bp=0)
    assert cells(m, page1, 5, 6, 3) == want + [(0x20, 0x07)]
    assert cells(m, 0, 5, 6, 2) == [(0x20, 0x07)] * 2
    # AL bit 0: the cursor stays after the string, else it goes back
    assert get_cursor(m, 1) == ((5, 8) if flags & 1 else (0, 0))
    assert crtc_word(m, 14) == 0                           # page 0 is shown


def test_write_string_control_characters(m):
    call(m, ax=0x0003)
    m.memory.write(STRING, b"ab\r\ncd\x08e\x07")
    call(m, ax=0x1301, bx=0x0031, cx=9, dx=0x0A05, es=STRING >> 4, bp=0)
    assert cells(m, 0, 10, 5, 2) == [(0x61, 0x31), (0x62, 0x31)]
    assert cells(m, 0, 11, 0, 3) == [(0x63, 0x31), (0x65, 0x31), (0x20, 0x07)]
    assert get_cursor(m, 0) == (11, 2)
    assert crtc_word(m, 14) == 11 * 80 + 2
    # CX=0: nothing written, the cursor where DX put it (AL bit 0)
    call(m, ax=0x1301, bx=0x0031, cx=0, dx=0x0C07, es=STRING >> 4, bp=0)
    assert get_cursor(m, 0) == (12, 7)


def test_write_string_past_the_bottom_scrolls_its_own_page(m):
    call(m, ax=0x0003)
    page1 = 0x1000
    for page, mark in ((0, 0x4E), (1, 0x4D)):
        set_cursor(m, page, 1, 0)
        call(m, ax=0x0900 | mark, bx=page << 8 | 0x07, cx=1)
    m.memory.write(STRING, b"PQ")
    call(m, ax=0x1301, bx=0x015A, cx=2, dx=0x184F, es=STRING >> 4, bp=0)
    assert cells(m, page1, 0, 0, 1) == [(0x4D, 0x07)]      # page 1 moved up a row
    assert cells(m, page1, 23, 79, 1) == [(0x50, 0x5A)]
    assert cells(m, page1, 24, 0, 80) == [(0x51, 0x5A)] + [(0x20, 0x5A)] * 79
    assert get_cursor(m, 1) == (24, 1)
    assert cells(m, 0, 1, 0, 1) == [(0x4E, 0x07)]          # page 0 stayed
    assert cells(m, 0, 24, 0, 1) == [(0x20, 0x07)]


# -- mode facts, the BIOS's own messages, the functions only a VGA has -------------------------
def test_get_mode_after_a_mode_set_that_keeps_memory(m):
    call(m, ax=0x0003)
    set_cursor(m, 0, 0, 0)
    call(m, ax=0x094B, bx=0x0007, cx=1)
    call(m, ax=0x0083)                                     # mode 3, memory not cleared
    assert cells(m, 0, 0, 0, 1) == [(0x4B, 0x07)]
    r = call(m, ax=0x0F00)
    assert (r.ah, r.bh) == (80, 0)
    # the VGA reports the "not cleared" bit (0487h bit 7) with the mode
    assert r.al == (0x83 if m.card_kind == "vga" else 0x03)


def test_bios_messages_coloured(m):
    video = m.bios.video
    video.set_mode(3)
    video.write_text("Hi\r\n", attr=0x4F)
    assert cells(m, 0, 0, 0, 3) == [(0x48, 0x4F), (0x69, 0x4F), (0x20, 0x07)]
    video.write_text("ok")
    assert cells(m, 0, 1, 0, 2) == [(0x6F, 0x07), (0x6B, 0x07)]
    assert video.cursor(video.active_page) == (1, 2)


def test_functions_only_a_vga_bios_has(m):
    before = bytes(m.memory.read(0x400, 0x100))
    results = {}
    for ax, bx in ((0x1200, 0x0010), (0x1A00, 0x0000), (0x1B00, 0x0000)):
        r = call(m, ax=ax, bx=bx, cx=0x1234, dx=0x5678, es=0x0700, di=0)
        results[ax >> 8] = (r.ax, r.bx, r.cx)
    if m.card_kind == "cga":
        # not on a CGA BIOS: registers and memory as they were (how programs
        # tell a CGA from an EGA or a VGA)
        assert results == {0x12: (0x1200, 0x0010, 0x1234), 0x1A: (0x1A00, 0, 0x1234),
                           0x1B: (0x1B00, 0, 0x1234)}
        assert bytes(m.memory.read(0x400, 0x100)) == before
    else:
        assert results[0x12][1:] == (0x0003, 0x0009)       # colour, 256 KiB, switches 9
        assert results[0x1A][:2] == (0x1A1A, 0x0008)       # VGA with a colour display
        assert results[0x1B][0] & 0xFF == 0x1B
