"""The VGA's INT 10h: what a VGA card's ROM adds to the system BIOS.

The built-in BIOS hands INT 10h (and its own mode sets and messages) to the
video card's firmware when the card has one (``VGA.video_firmware``), as a
real VGA's option ROM takes INT 10h over.  This firmware reaches the card
only as a program would: registers through the ports, display memory
through the CPU's view of the A0000h-BFFFFh window (``VGA.mem_*``: the same
planar path, latches and write modes as a MOV), the BIOS data area through
memory.

The services a CGA BIOS answers the same way (cursor per page, page select,
scrolling, characters, teletype, write string, AH=0Fh) come from the
firmware library class ``pypc_core.firmware.int10text.Int10TextServices``;
this class gives them the VGA's memory path, rows (0484h + 1), pages and
graphics characters, and adds what only a VGA has.

Modes 0-6, 0Dh, 0Eh, 10h, 12h and 13h (``regs.MODES``); other mode numbers
leave everything unchanged.  Functions: AH=00h-0Fh as on the CGA/EGA, 10h
(palette registers and DAC), 11h (fonts: load user, 8x8, 8x14, 8x16 into
the text character maps, block select, graphics fonts through INT 43h, font
information), 12h (BL=10h information, 30h scan lines [400 only],
31h palette loading, 32h video enable, 33h grey summing, 34h cursor
emulation, 36h screen off/on), 13h (write string), 1Ah (display combination:
VGA with a colour display) and 1Bh (functionality and state).  The fonts and
the static functionality table live in the card's data ROM at C000:0000
(no option-ROM signature: nothing there runs).

BIOS data area: 0449h-0466h as the CGA BIOS keeps them, 0484h rows - 1,
0485h character height, 0487h (bit 0: cursor emulation disabled, bits 5-6:
256 KiB, bit 7: memory not cleared), 0488h switches (09h), 0489h (bit 0 VGA,
bit 1 grey summing, bit 3 default palette loading off, bit 4: 400 lines),
048Ah display combination index.
"""

import numpy as np

from pypc_core.firmware.int10text import (
    Int10TextServices, cga_pixel, default_palette, interlaced_line, lit_2bpp, merge_pixel,
    spread_2bpp,
)
from pypc_core.firmware.memio import (
    BDA_CRT_MODE_SET, BDA_CRT_PALETTE, BDA_CRTC_BASE, BDA_CURSOR_POS, BDA_CURSOR_TYPE,
    BDA_VIDEO_MODE, BDA_VIDEO_PAGE_SIZE, BDA_VIDEO_PAGE_START, linear,
)
from pypc_core.font import FONT_8X8
from pypc_core.font.scaled import FONT_8X14, FONT_8X16

from .regs import MODES, DACS

# -- BIOS data area (linear): 0449h-0466h as every video BIOS keeps them (memio), and
# the EGA/VGA's own bytes
BDA_ROWS = 0x484
BDA_CHAR_HEIGHT = 0x485
BDA_EGA_MISC = 0x487
BDA_EGA_SWITCHES = 0x488
BDA_VGA_FLAGS = 0x489
BDA_DCC_INDEX = 0x48A

# -- the card's data ROM at C000h ------------------------------------------------------------
ROM_SEGMENT = 0xC000
ROM_FONT8 = 0x0000
ROM_FONT14 = 0x0800
ROM_FONT16 = 0x1600
ROM_STATIC_TABLE = 0x2600
ROM_LENGTH = 0x4000

# CGA mode-control byte (0465h) the VGA BIOS keeps for each mode
_MODE_CONTROL = {0: 0x2C, 1: 0x28, 2: 0x2D, 3: 0x29, 4: 0x2A, 5: 0x2E, 6: 0x1E}

STATIC_TABLE = bytes([
    0x7F, 0x60, 0x0D,          # modes 0-6, 0Dh/0Eh, 10h/12h/13h
    0, 0, 0, 0,
    0x04,                      # scan lines: 400
    8,                         # character blocks in text modes
    2,                         # blocks active at once
    0xFE,                      # grey summing, fonts, palette loading, cursor emulation,
                               # EGA palette, DAC, colour paging (not all modes on all monitors)
    0x0C,                      # blink/intensity toggle, display combination code
    0, 0,
    0x00,                      # no save pointer functions
    0,
])


def rom_image():
    """The bytes of the data ROM (fonts and the static functionality table)."""
    img = bytearray(b"\xFF" * ROM_LENGTH)
    img[ROM_FONT8:ROM_FONT8 + 2048] = FONT_8X8
    img[ROM_FONT14:ROM_FONT14 + 3584] = FONT_8X14
    img[ROM_FONT16:ROM_FONT16 + 4096] = FONT_8X16
    img[ROM_STATIC_TABLE:ROM_STATIC_TABLE + 16] = STATIC_TABLE
    return bytes(img)


class VgaFirmware(Int10TextServices):
    """INT 10h for ``card`` (a ``VGA``); ``service`` is the system BIOS's
    video service (its ``mem`` and ``ports``)."""

    TEXT_BYTES = 0x8000                # 32 KiB of text memory at B8000h: 8 pages of 80x25

    def __init__(self, service, card):
        self.service = service
        self.card = card
        self.mem = service.mem

    @property
    def ports(self):
        return self.service.ports

    # -- ports, as a program uses them ---------------------------------------------------
    def out(self, port, value):
        self.ports.write(port, value & 0xFF)

    def inp(self, port):
        return self.ports.read(port)

    def seq(self, i, v):
        self.out(0x3C4, i)
        self.out(0x3C5, v)

    def gc(self, i, v):
        self.out(0x3CE, i)
        self.out(0x3CF, v)

    def crtc_get(self, i):
        base = self.mem.rw(BDA_CRTC_BASE) or 0x3D4
        self.out(base, i)
        return self.inp(base + 1)

    def ac_write(self, i, v):
        self.inp(0x3DA)                    # flip-flop to "index"
        self.out(0x3C0, i)                 # palette address source off while we write
        self.out(0x3C0, v)
        self.out(0x3C0, 0x20)              # screen back on

    def ac_read(self, i):
        self.inp(0x3DA)
        self.out(0x3C0, i)
        v = self.inp(0x3C1)
        self.inp(0x3DA)
        self.out(0x3C0, 0x20)
        return v

    def dac_set(self, index, rgb_list):
        self.out(0x3C8, index)
        for r, g, b in rgb_list:
            if self.mem.rb(BDA_VGA_FLAGS) & 0x02:          # grey summing
                r = g = b = (30 * r + 59 * g + 11 * b + 50) // 100
            self.out(0x3C9, r)
            self.out(0x3C9, g)
            self.out(0x3C9, b)

    # -- state from the BDA ----------------------------------------------------------------
    @property
    def modeset(self):
        return MODES.get(self.mode & 0x7F)

    @property
    def rows(self):
        return self.mem.rb(BDA_ROWS) + 1

    @property
    def char_height(self):
        return self.mem.rw(BDA_CHAR_HEIGHT) or 16

    @property
    def graphics(self):
        m = self.modeset
        return m is not None and m.graphics

    def page_base(self, page):
        return (page * (self.mem.rw(BDA_VIDEO_PAGE_SIZE) or 4096)) & 0xFFFF

    def pages(self):
        m = self.modeset
        return m.pages if m is not None else 1

    def graphics_read_page(self):
        return self.active_page

    def reported_mode(self):
        """AH=0Fh's AL: bit 7 when the last mode set kept display memory (0487h)."""
        return self.mode | (self.mem.rb(BDA_EGA_MISC) & 0x80)

    # -- text memory, through the card's CPU path (odd/even in text modes) --------------------
    def text_read(self, addr):
        return self.card.mem_read(addr)

    def text_write(self, addr, value):
        self.card.mem_write(addr, value)

    def store_cells(self, addr, count, ch, attr):
        self.card.mem_fill_words(addr, count, (attr << 8) | ch)

    def store_chars(self, addr, count, ch):
        for i in range(count):
            self.card.mem_write(addr + 2 * i, ch)

    # -- AH=00h: set mode ------------------------------------------------------------------------
    def _fn00(self, r):
        mode = r.al & 0x7F
        if self.set_mode(mode, clear=not r.al & 0x80, blink=True):
            # AL on return: 20h above mode 7, 3Fh for mode 6, 30h otherwise
            r.al = 0x20 if mode > 7 else default_palette(mode)

    def set_mode(self, mode, clear=True, blink=False):
        """Set ``mode`` through the ports; False (nothing changed) for a mode
        this card has no registers for.  A guest's AH=00h gets IBM's values
        (``blink``: attribute bit 7 blinks in text modes); the system BIOS's
        own mode sets (POST, its messages, the built-in DOS's CLS) leave
        blinking off, as the API contract's compatibility notes record for
        the VGA ("VGA starts with blink disabled")."""
        m = MODES.get(mode & 0x7F)
        if m is None:
            return False
        mem = self.mem
        # sequencer in reset while the clocks change
        self.seq(0, 0x01)
        self.out(0x3C2, m.misc)
        for i, v in enumerate(m.seq, start=1):
            self.seq(i, v)
        self.seq(0, 0x03)
        mem.ww(BDA_CRTC_BASE, 0x3D4)
        self.crtc(0x11, self.crtc_get(0x11) & 0x7F)      # unlock 0-7
        for i, v in enumerate(m.crtc):
            self.crtc(i, v)
        for i, v in enumerate(m.gc):
            self.gc(i, v)
        self.inp(0x3DA)
        for i, v in enumerate(m.ac):
            if i == 0x10 and m.kind == "text" and not blink:
                v &= ~0x08
            self.out(0x3C0, i)
            self.out(0x3C0, v)
        mem.wb(BDA_VIDEO_MODE, mode)         # the helpers below read the mode
        if not mem.rb(BDA_VGA_FLAGS) & 0x08:
            self.out(0x3C6, 0xFF)
            self.dac_set(0, DACS[m.dac]())
        if clear:
            self._clear_all(m)
        if m.kind == "text":
            self.load_font(FONT_8X16, 16, 0, 256, block=0)
        self.out(0x3C0, 0x20)                               # screen on
        self.record_mode(mode, m.columns, m.page_size, _MODE_CONTROL.get(mode, 0x29))
        mem.wb(BDA_ROWS, m.rows - 1)
        mem.ww(BDA_CHAR_HEIGHT, m.char_height)
        mem.wb(BDA_EGA_MISC, (mem.rb(BDA_EGA_MISC) & 0x01) | 0x60 | (0 if clear else 0x80))
        mem.wb(BDA_EGA_SWITCHES, 0x09)
        mem.wb(BDA_VGA_FLAGS, (mem.rb(BDA_VGA_FLAGS) & 0x0E) | 0x11)
        mem.wb(BDA_DCC_INDEX, 0x0B)
        # graphics characters: INT 43h
        font = {8: ROM_FONT8, 14: ROM_FONT14, 16: ROM_FONT16}[m.char_height]
        mem.set_vector(0x43, ROM_SEGMENT, font if m.kind != "text" else ROM_FONT8)
        self.program_cursor_shape(0x06, 0x07)
        return True

    def _clear_all(self, m):
        """Blank display memory the way the mode reads it."""
        card = self.card
        if m.kind == "text":
            # characters and attributes through odd/even (plane 2 keeps the font)
            card.mem_fill_words(0xB8000, 0x4000, 0x0720)
            return
        # all four planes, whatever the mode's addressing
        self.seq(2, 0x0F)
        self.seq(4, 0x06)
        self.gc(5, 0x00)
        self.gc(6, 0x05)
        card.mem_fill(0xA0000, 0x10000, 0)
        self.seq(2, m.seq[1])
        self.seq(4, m.seq[3])
        self.gc(5, m.gc[5])
        self.gc(6, m.gc[6])

    # -- fonts in plane 2 ---------------------------------------------------------------------
    def _plane2(self, on):
        """Open plane 2 at A0000h for the font (as IBM's BIOS does), or
        restore text addressing."""
        if on:
            self.seq(2, 0x04)
            self.seq(4, 0x07)
            self.gc(4, 0x02)
            self.gc(5, 0x00)
            self.gc(6, 0x04)
        else:
            m = self.modeset or MODES[3]
            self.seq(2, m.seq[1])
            self.seq(4, m.seq[3])
            self.gc(4, 0x00)
            self.gc(5, m.gc[5])
            self.gc(6, m.gc[6])

    def load_font(self, data, height, first, count, block=0):
        """Glyphs ``first`` .. ``first+count-1`` (``height`` bytes each)
        into character map ``block`` (0-7)."""
        block &= 7
        base = 0xA0000 + (block & 3) * 0x4000 + (block >> 2) * 0x2000
        self._plane2(True)
        cells = np.zeros((count, 32), dtype=np.uint8)
        glyphs = np.frombuffer(bytes(data[:count * height]), dtype=np.uint8)
        cells[:len(glyphs) // height, :height] = glyphs.reshape(-1, height)
        self.card.mem_block_write(base + first * 32, cells.tobytes())
        self._plane2(False)

    # -- AH=01h: cursor lines ---------------------------------------------------------------------
    def program_cursor_shape(self, start, end):
        h = self.char_height
        if start & 0x20:                          # CH bit 5: no cursor
            self.crtc(0x0A, 0x20)
            self.crtc(0x0B, 0x00)
            return
        s, e = start & 0x1F, end & 0x1F
        if not self.mem.rb(BDA_EGA_MISC) & 0x01 and h > 8 and s <= 7 and e <= 7:
            # CGA-style values on a taller cell: lines 4-7 keep their distance
            # from the bottom, lines 0-3 from the top (0607h -> 0D0Eh at 16)
            def scale(v):
                return v + (h - 9) if v >= 4 else v
            s, e = scale(s), scale(e)
        self.crtc(0x0A, s)
        self.crtc(0x0B, e)

    # -- scrolling --------------------------------------------------------------------------------
    def _geometry(self):
        """(bytes per character column, bytes per scan line, scan lines per
        text row) of a graphics mode's regen layout."""
        m = self.modeset
        if m.kind == "vga256":
            return 8, 320, 8
        if m.kind == "cga2":
            return 2, 80, 8
        if m.kind == "cga1":
            return 1, 80, 8
        return 1, m.columns, m.char_height

    def scroll_window(self, up, lines, attr, top, left, bottom, right, page):
        cols = self.cols
        order = range(top, bottom + 1 - lines) if up else range(bottom, top + lines - 1, -1)
        blank = range(bottom + 1 - lines, bottom + 1) if up else range(top, top + lines)
        shift = lines if up else -lines
        if not self.graphics:
            base = 0xB8000 + self.page_base(self.active_page if page is None else page)
            width = (right - left + 1) * 2
            for row in order:
                src = base + ((row + shift) * cols + left) * 2
                self.card.mem_copy(base + (row * cols + left) * 2, src, width)
            for row in blank:
                self.card.mem_fill_words(base + (row * cols + left) * 2, right - left + 1,
                                         (attr << 8) | 0x20)
            return
        m = self.modeset
        bpc, bpl, h = self._geometry()
        width = (right - left + 1) * bpc
        if m.kind == "planar":
            self.gc(5, 0x01)                         # copy through the latches
            self.seq(2, 0x0F)
        for row in order:
            for y in range(h):
                dst = self._line_address(row * h + y, bpl) + left * bpc
                src = self._line_address((row + shift) * h + y, bpl) + left * bpc
                self.card.mem_copy(dst, src, width)
        if m.kind == "planar":
            self.gc(5, 0x02)                         # colour fill in write mode 2
            self.gc(8, 0xFF)
        fill = attr
        if m.kind == "cga2":
            fill = (attr & 3) * 0x55
        elif m.kind == "cga1":
            fill = 0xFF if attr & 1 else 0
        for row in blank:
            for y in range(h):
                self.card.mem_fill(self._line_address(row * h + y, bpl) + left * bpc,
                                   width, fill)
        if m.kind == "planar":
            self.gc(5, 0x00)

    def _line_address(self, line, bpl):
        """Linear address of graphics scan line ``line`` of the active page."""
        m = self.modeset
        if m.kind in ("cga2", "cga1"):
            return interlaced_line(line)
        return (m.segment << 4) + self.page_base(self.active_page) + line * bpl

    # -- characters -------------------------------------------------------------------------------------
    def glyph(self, ch):
        """The glyph rows the graphics modes draw ``ch`` with."""
        m = self.modeset
        h = m.char_height
        if m.kind in ("cga2", "cga1") and ch >= 0x80:
            seg, off = self.mem.vector(0x1F)
            return self.mem.read(linear(seg, off) + (ch - 0x80) * 8, 8)
        seg, off = self.mem.vector(0x43)
        return self.mem.read(linear(seg, off) + ch * h, h)

    def graphics_write_char(self, row, col, ch, color):
        m = self.modeset
        glyph = self.glyph(ch)
        h = len(glyph)
        bpc, bpl, _ = self._geometry()
        xor = bool(color & 0x80)
        card = self.card
        if m.kind == "planar":
            self.gc(5, 0x02)
            self.gc(3, 0x18 if xor else 0x00)
            for y in range(h):
                addr = self._line_address(row * h + y, bpl) + col
                bits = glyph[y]
                self.gc(8, bits)
                card.mem_read(addr)
                card.mem_write(addr, color & 0x0F)
                if not xor:
                    self.gc(8, ~bits & 0xFF)
                    card.mem_read(addr)
                    card.mem_write(addr, 0)
            self.gc(3, 0x00)
            self.gc(5, 0x00)
            self.gc(8, 0xFF)
            return
        for y in range(h):
            addr = self._line_address(row * h + y, bpl) + col * bpc
            bits = glyph[y]
            if m.kind == "vga256":
                data = [color if bits & (0x80 >> k) else 0 for k in range(8)]
                if xor:
                    data = [(d & 0x7F) ^ card.mem_read(addr + k) if bits & (0x80 >> k)
                            else card.mem_read(addr + k) for k, d in enumerate(data)]
            elif m.kind == "cga2":
                data = spread_2bpp(bits, color)
                if xor:
                    data = [d ^ card.mem_read(addr + i) for i, d in enumerate(data)]
            else:
                data = [bits ^ card.mem_read(addr) if xor else bits]
            card.mem_block_write(addr, bytes(data))

    def graphics_cell_pattern(self, row, col):
        m = self.modeset
        h = m.char_height
        bpc, bpl, _ = self._geometry()
        card = self.card
        pattern = bytearray()
        for y in range(h):
            addr = self._line_address(row * h + y, bpl) + col * bpc
            if m.kind == "planar":
                self.gc(5, 0x08)                       # read mode 1: colour 0 matches
                self.gc(2, 0x00)
                self.gc(7, 0x0F)
                pattern.append(~card.mem_read(addr) & 0xFF)
                self.gc(5, 0x00)
            elif m.kind == "vga256":
                data = card.mem_block_read(addr, 8)
                pattern.append(sum(0x80 >> k for k in range(8) if data[k]))
            elif m.kind == "cga2":
                pattern.append(lit_2bpp((card.mem_read(addr) << 8) | card.mem_read(addr + 1)))
            else:
                pattern.append(card.mem_read(addr))
        return bytes(pattern)

    # -- AH=0Bh: CGA colour select, in the attribute controller --------------------------------------
    def colour_select(self, select, value, palette):
        cga2 = self.modeset is not None and self.modeset.kind == "cga2"
        if select == 0:
            colour = value & 0x0F
            if value & 0x08:
                colour |= 0x10              # EGA-style intensity in 200-line palettes
            if self.graphics:
                self.ac_write(0, colour)
            self.ac_write(0x11, colour)
            if cga2:
                intense = 0x10 if value & 0x10 else 0
                base = 1 if palette & 0x20 else 0
                for i in (1, 2, 3):
                    self.ac_write(i, (2 * i + base) | intense)
        elif cga2:
            intense = 0x10 if palette & 0x10 else 0
            for i in (1, 2, 3):
                self.ac_write(i, (2 * i + (value & 1)) | intense)

    # -- pixels ----------------------------------------------------------------------------------------
    def _fn0C(self, r):
        self.write_pixel(r.cx, r.dx, r.al, r.bh)

    def _fn0D(self, r):
        r.al = self.read_pixel(r.cx, r.dx, r.bh)

    def _pixel_ok(self, x, y):
        m = self.modeset
        return m is not None and m.graphics and x < m.width and y < m.height

    def write_pixel(self, x, y, color, page=0):
        if not self._pixel_ok(x, y):
            return
        m = self.modeset
        card = self.card
        if m.kind == "planar":
            addr = (0xA0000 + (page * m.page_size & 0xFFFF) + y * (m.width // 8) + (x >> 3))
            self.gc(5, 0x02)
            self.gc(8, 0x80 >> (x & 7))
            self.gc(3, 0x18 if color & 0x80 else 0x00)
            card.mem_read(addr)
            card.mem_write(addr, color & 0x0F)
            self.gc(3, 0x00)
            self.gc(8, 0xFF)
            self.gc(5, 0x00)
        elif m.kind == "vga256":
            addr = 0xA0000 + y * 320 + x
            card.mem_write(addr, color)
        else:
            addr, shift, mask = cga_pixel(x, y, one_bit=m.kind == "cga1")
            card.mem_write(addr, merge_pixel(card.mem_read(addr), color, shift, mask))

    def read_pixel(self, x, y, page=0):
        if not self._pixel_ok(x, y):
            return 0
        m = self.modeset
        card = self.card
        if m.kind == "planar":
            addr = (0xA0000 + (page * m.page_size & 0xFFFF) + y * (m.width // 8) + (x >> 3))
            value = 0
            for p in range(4):
                self.gc(4, p)
                if card.mem_read(addr) & (0x80 >> (x & 7)):
                    value |= 1 << p
            self.gc(4, 0)
            return value
        if m.kind == "vga256":
            return card.mem_read(0xA0000 + y * 320 + x)
        addr, shift, mask = cga_pixel(x, y, one_bit=m.kind == "cga1")
        return (card.mem_read(addr) >> shift) & mask

    # -- AH=10h: palette registers and DAC ----------------------------------------------------------
    def _fn10(self, r):
        al = r.al
        mem = self.mem
        if al == 0x00:
            if r.bl < 16:
                self.ac_write(r.bl, r.bh)
        elif al == 0x01:
            self.ac_write(0x11, r.bh)
        elif al == 0x02:
            data = mem.read(linear(r.es, r.dx), 17)
            for i in range(16):
                self.ac_write(i, data[i])
            self.ac_write(0x11, data[16])
        elif al == 0x03:
            mode = self.ac_read(0x10)
            self.ac_write(0x10, (mode | 0x08) if r.bl & 1 else (mode & ~0x08))
        elif al == 0x07:
            if r.bl < 16:
                r.bh = self.ac_read(r.bl)
        elif al == 0x08:
            r.bh = self.ac_read(0x11)
        elif al == 0x09:
            data = bytes(self.ac_read(i) for i in range(16)) + bytes([self.ac_read(0x11)])
            addr = linear(r.es, r.dx)
            for i, b in enumerate(data):
                mem.wb(addr + i, b)
        elif al == 0x10:
            self.dac_set(r.bx & 0xFF, [(r.dh, r.ch, r.cl)])
        elif al == 0x12:
            count = min(r.cx, 256 - (r.bx & 0xFF))
            data = mem.read(linear(r.es, r.dx), 3 * count)
            self.dac_set(r.bx & 0xFF, [tuple(data[3 * i:3 * i + 3]) for i in range(count)])
        elif al == 0x13:
            mode = self.ac_read(0x10)
            if r.bl == 0:
                self.ac_write(0x10, (mode | 0x80) if r.bh & 1 else (mode & 0x7F))
            elif r.bl == 1:
                page = r.bh & (0x0F if mode & 0x80 else 0x03)
                self.ac_write(0x14, page if mode & 0x80 else page << 2)
        elif al == 0x15:
            self.out(0x3C7, r.bx & 0xFF)
            r.dh = self.inp(0x3C9)
            r.ch = self.inp(0x3C9)
            r.cl = self.inp(0x3C9)
        elif al == 0x17:
            first = r.bx & 0xFF
            count = min(r.cx, 256 - first)
            self.out(0x3C7, first)
            addr = linear(r.es, r.dx)
            for i in range(3 * count):
                mem.wb(addr + i, self.inp(0x3C9))
        elif al == 0x18:
            self.out(0x3C6, r.bl)
        elif al == 0x19:
            r.bl = self.inp(0x3C6)
        elif al == 0x1A:
            mode = self.ac_read(0x10)
            select = self.ac_read(0x14)
            r.bl = 1 if mode & 0x80 else 0
            r.bh = select & 0x0F if mode & 0x80 else (select >> 2) & 3
        elif al == 0x1B:
            first = r.bx & 0xFF
            count = min(r.cx, 256 - first)
            self.out(0x3C7, first)
            values = [(self.inp(0x3C9), self.inp(0x3C9), self.inp(0x3C9)) for _ in range(count)]
            self.out(0x3C8, first)
            for rr, gg, bb in values:
                grey = (30 * rr + 59 * gg + 11 * bb + 50) // 100
                for _ in range(3):
                    self.out(0x3C9, grey)

    # -- AH=11h: fonts ----------------------------------------------------------------------------------
    def _rom_font(self, height):
        return {8: FONT_8X8, 14: FONT_8X14, 16: FONT_8X16}[height]

    def _fn11(self, r):
        al = r.al
        mem = self.mem
        if al in (0x00, 0x10):
            height = r.bh or 16
            data = mem.read(linear(r.es, r.bp), r.cx * height)
            self.load_font(data, height, r.dx & 0xFF, min(r.cx, 256 - (r.dx & 0xFF)), r.bl)
            if al == 0x10:
                self._set_char_height(height)
        elif al in (0x01, 0x02, 0x04, 0x11, 0x12, 0x14):
            height = {1: 14, 2: 8, 4: 16}[al & 0x0F]
            self.load_font(self._rom_font(height), height, 0, 256, r.bl)
            if al & 0x10:
                self._set_char_height(height)
        elif al == 0x03:
            self.seq(3, r.bl)
        elif al == 0x20:
            mem.set_vector(0x1F, r.es, r.bp)
        elif al in (0x21, 0x22, 0x23, 0x24):
            if al == 0x21:
                mem.set_vector(0x43, r.es, r.bp)
                height = r.cx
            else:
                height = {0x22: 14, 0x23: 8, 0x24: 16}[al]
                mem.set_vector(0x43, ROM_SEGMENT, {8: ROM_FONT8, 14: ROM_FONT14,
                                                   16: ROM_FONT16}[height])
            if self.graphics:
                m = self.modeset
                rows = {0: r.dl, 1: 14, 2: 25, 3: 43}.get(r.bl, 25)
                mem.ww(BDA_CHAR_HEIGHT, height)
                mem.wb(BDA_ROWS, (rows if rows else m.height // height) - 1)
        elif al == 0x30:
            which = r.bh
            if which == 0:
                seg, off = mem.vector(0x1F)
            elif which == 1:
                seg, off = mem.vector(0x43)
            elif which in (2, 5):
                seg, off = ROM_SEGMENT, ROM_FONT14
            elif which == 3:
                seg, off = ROM_SEGMENT, ROM_FONT8
            elif which == 4:
                seg, off = ROM_SEGMENT, ROM_FONT8 + 128 * 8
            elif which in (6, 7):
                seg, off = ROM_SEGMENT, ROM_FONT16
            else:
                return
            r.es, r.bp = seg, off
            r.cx = self.char_height
            r.dl = self.rows - 1

    def _set_char_height(self, height):
        """Text layout for a ``height``-line font: CRTC maximum scan line,
        cursor, rows in the BDA (the 400-line display stays)."""
        if self.graphics:
            return
        mem = self.mem
        self.crtc(0x09, (self.crtc_get(0x09) & 0xE0) | (height - 1))
        lines = 400
        rows = lines // height
        self.crtc(0x12, (rows * height - 1) & 0xFF)
        mem.wb(BDA_ROWS, rows - 1)
        mem.ww(BDA_CHAR_HEIGHT, height)
        page = (rows * self.cols * 2 + 0xFF) & ~0xFF
        mem.ww(BDA_VIDEO_PAGE_SIZE, page)
        self.crtc(0x0A, height - 2 if height > 8 else 6)
        self.crtc(0x0B, height - 1 if height > 8 else 7)

    # -- AH=12h: alternate select ---------------------------------------------------------------------
    def _fn12(self, r):
        bl = r.bl
        mem = self.mem
        if bl == 0x10:
            r.bh = 0                   # colour
            r.bl = 3                   # 256 KiB
            r.ch = 0
            r.cl = mem.rb(BDA_EGA_SWITCHES) & 0x0F
        elif bl == 0x30:
            if r.al == 2:              # 400 lines: the only layout this card's modes have
                r.al = 0x12
            else:
                r.al = 0
        elif bl == 0x31:
            flags = mem.rb(BDA_VGA_FLAGS)
            mem.wb(BDA_VGA_FLAGS, (flags | 0x08) if r.al & 1 else (flags & ~0x08))
            r.al = 0x12
        elif bl == 0x32:
            self.out(0x3C3, 0 if r.al & 1 else 1)
            r.al = 0x12
        elif bl == 0x33:
            flags = mem.rb(BDA_VGA_FLAGS)
            mem.wb(BDA_VGA_FLAGS, (flags & ~0x02) if r.al & 1 else (flags | 0x02))
            r.al = 0x12
        elif bl == 0x34:
            misc = mem.rb(BDA_EGA_MISC)
            mem.wb(BDA_EGA_MISC, (misc | 0x01) if r.al & 1 else (misc & ~0x01))
            r.al = 0x12
        elif bl == 0x36:
            self.out(0x3C4, 1)
            v = self.inp(0x3C5)
            self.out(0x3C5, (v | 0x20) if r.al & 1 else (v & ~0x20))
            r.al = 0x12

    # -- AH=1Ah, 1Bh ----------------------------------------------------------------------------------
    def _fn1A(self, r):
        if r.al == 0x00:
            r.bl = 0x08                # VGA with a colour display
            r.bh = 0x00
            r.al = 0x1A
        elif r.al == 0x01:
            r.al = 0x1A

    def _fn1B(self, r):
        if r.bx != 0:
            return
        mem = self.mem
        m = self.modeset
        out = bytearray(64)
        out[0:2] = ROM_STATIC_TABLE.to_bytes(2, "little")
        out[2:4] = ROM_SEGMENT.to_bytes(2, "little")
        out[4] = self.mode
        out[5:7] = self.cols.to_bytes(2, "little")
        out[7:9] = mem.rw(BDA_VIDEO_PAGE_SIZE).to_bytes(2, "little")
        out[9:11] = mem.rw(BDA_VIDEO_PAGE_START).to_bytes(2, "little")
        out[11:27] = mem.read(BDA_CURSOR_POS, 16)
        cursor = mem.rw(BDA_CURSOR_TYPE)
        out[27] = cursor & 0xFF
        out[28] = cursor >> 8
        out[29] = self.active_page
        out[30:32] = (mem.rw(BDA_CRTC_BASE) or 0x3D4).to_bytes(2, "little")
        out[32] = mem.rb(BDA_CRT_MODE_SET)
        out[33] = mem.rb(BDA_CRT_PALETTE)
        out[34] = self.rows
        out[35:37] = self.char_height.to_bytes(2, "little")
        out[37] = 0x08
        out[38] = 0x00
        out[39:41] = (m.colours if m is not None else 16).to_bytes(2, "little")
        out[41] = m.pages if m is not None else 1
        height = m.height if m is not None and m.graphics else 400
        out[42] = {200: 0, 350: 1, 400: 2, 480: 3}.get(height, 2)
        s3 = self.card.seq[3]
        out[43] = ((s3 >> 5) & 1) << 2 | ((s3 >> 2) & 3)
        out[44] = ((s3 >> 4) & 1) << 2 | (s3 & 3)
        flags = mem.rb(BDA_VGA_FLAGS)
        state = 0
        if flags & 0x02:
            state |= 0x02
        if flags & 0x08:
            state |= 0x08
        if not mem.rb(BDA_EGA_MISC) & 0x01:
            state |= 0x10
        if self.card.ac[0x10] & 0x08:
            state |= 0x20
        out[45] = state
        out[49] = 3                    # 256 KiB
        addr = linear(r.es, r.di)
        for i, b in enumerate(out):
            mem.wb(addr + i, b)
        r.al = 0x1B
