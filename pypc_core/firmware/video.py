"""INT 10h for the CGA: modes 0-6, cursor, scrolling, characters, pixels.

The service reaches the adapter only as a program would: video RAM at
B8000h through memory, the 6845 through ports 3D4h/3D5h, the mode and colour
registers through 3D8h/3D9h.  The BIOS data area (0040:0049..0066) is kept
as IBM's BIOS keeps it.  The CRTC values for a mode are read from the table
INT 1Dh points at (programs may replace it), as on IBM's BIOS.

The cursor, page, scrolling, character, teletype and write-string services
are the ones a VGA's firmware answers too: they live in
``int10text.Int10TextServices``; this class gives them the CGA's memory
(16 KiB of RAM at B8000h), its 25 rows and its graphics characters.

Not on a CGA BIOS and so left alone (registers unchanged, which is how
programs detect a CGA): AH=10h-12h (EGA palette/font/info), 1Ah, 1Bh.
AH=0Eh BEL (07h) makes no sound (the speaker is silent in zero time).

A video card with firmware of its own (a VGA, whose ROM takes INT 10h over
on real machines) says so with ``video_firmware(service)``; then INT 10h and
the services the rest of the BIOS uses (mode set, teletype, cursor, the
mode facts) go to that firmware instead (``_firmware``).
"""

import numpy as np

from . import rom
from .int10text import (
    Int10TextServices, cga_pixel, default_palette, interlaced_line, lit_2bpp, merge_pixel,
    spread_2bpp,
)
from .memio import Service, BDA_CRTC_BASE, BDA_VIDEO_PAGE_SIZE, linear

VRAM = 0xB8000
VRAM_SIZE = 0x4000
ROWS = 25
CRTC_INDEX = 0x3D4
MODE_PORT = 0x3D8
COLOR_PORT = 0x3D9
GRAPHICS_MODES = (4, 5, 6)


class VideoService(Int10TextServices, Service):
    """The CGA's INT 10h, and the front the rest of the BIOS calls.  While
    the video card has firmware of its own, INT 10h, mode sets, the cursor,
    teletype, messages, the graphics flag and graphics characters go to it
    (the methods marked "the card's firmware first"); the other helpers
    answer from the data area as for a CGA."""

    _fw = None
    _fw_card = None
    rows = ROWS                        # the CGA's text modes all have 25 rows
    TEXT_BYTES = VRAM_SIZE

    def _firmware(self):
        """The video card's own INT 10h firmware, or None (a CGA)."""
        card = self.bios.machine.video
        if card is not self._fw_card:
            make = getattr(card, "video_firmware", None)
            self._fw = make(self) if make is not None else None
            self._fw_card = card
        return self._fw

    # -- the card's firmware first --------------------------------------------------------
    @property
    def graphics(self):
        fw = self._firmware()
        if fw is not None:
            return fw.graphics
        return self.mode in GRAPHICS_MODES

    def cursor(self, page):
        fw = self._firmware()
        if fw is not None:
            return fw.cursor(page)
        return super().cursor(page)

    def set_cursor(self, page, row, col):
        fw = self._firmware()
        if fw is not None:
            return fw.set_cursor(page, row, col)
        return super().set_cursor(page, row, col)

    def int10(self, r):
        fw = self._firmware()
        if fw is not None:
            return fw.int10(r)
        return super().int10(r)

    def teletype(self, ch, color=0x07, page=None):
        fw = self._firmware()
        if fw is not None:
            return fw.teletype(ch, color, page)
        return super().teletype(ch, color, page)

    def write_text(self, text, attr=None):
        fw = self._firmware()
        if fw is not None:
            return fw.write_text(text, attr)
        return super().write_text(text, attr)

    def graphics_read_char(self, row, col):
        fw = self._firmware()
        if fw is not None:
            return fw.graphics_read_char(row, col)
        return super().graphics_read_char(row, col)

    # -- what Int10TextServices asks of the CGA ------------------------------------------------
    def pages(self):
        if self.graphics:
            return 1
        return 8 if self.cols == 40 else 4

    def page_base(self, page):
        return (page * (self.mem.rw(BDA_VIDEO_PAGE_SIZE) or 4096)) & (VRAM_SIZE - 1)

    def text_read(self, addr):
        return self.mem.rb(addr)

    def text_write(self, addr, value):
        self.mem.wb(addr, value)

    def store_cells(self, addr, count, ch, attr):
        self.mem.write(addr, np.tile(np.array([ch, attr], np.uint8), count))

    def store_chars(self, addr, count, ch):
        cells = self.mem.array(addr, count * 2)
        cells[0::2] = ch
        self.mem.write(addr, cells)

    def program_cursor_shape(self, start, end):
        self.crtc(10, start)
        self.crtc(11, end)

    def colour_select(self, select, value, palette):
        self.ports.write(COLOR_PORT, palette)

    def graphics_read_page(self):
        return 0                       # IBM's CGA BIOS reads at page 0's cursor

    def reported_mode(self):
        return self.mode

    # AH=00h set mode
    def _fn00(self, r):
        self.set_mode(r.al & 0x7F, clear=not (r.al & 0x80))

    def set_mode(self, mode, clear=True):
        """The card's firmware first."""
        fw = self._firmware()
        if fw is not None:
            return fw.set_mode(mode, clear)
        if mode > 6:
            return                     # CGA: mode 7 (monochrome) and up are not ours
        mem = self.mem
        control = rom.MODE_CONTROL[mode]
        self.ports.write(MODE_PORT, control & ~rom.MC_ENABLE)       # video off
        mem.ww(BDA_CRTC_BASE, CRTC_INDEX)
        seg, off = mem.vector(0x1D)
        table = linear(seg, off) + 16 * rom.MODE_CRTC_INDEX[mode]
        for reg in range(16):
            self.crtc(reg, mem.rb(table + reg))
        if clear:
            if mode in GRAPHICS_MODES:
                mem.fill(VRAM, VRAM_SIZE, 0)
            else:
                mem.write(VRAM, np.tile(np.array([0x20, 0x07], np.uint8), VRAM_SIZE // 2))
        self.ports.write(MODE_PORT, control)
        self.ports.write(COLOR_PORT, default_palette(mode))
        self.record_mode(mode, rom.MODE_COLUMNS[mode], rom.MODE_PAGE_SIZE[mode], control)

    def scroll_window(self, up, lines, attr, top, left, bottom, right, page):
        cols = self.cols
        if self.graphics:
            bpc = 2 if self.mode in (4, 5) else 1          # bytes per character column
            screen = self._graphics_lines()
            region = screen[top * 8:(bottom + 1) * 8, left * bpc:(right + 1) * bpc]
            fill = attr
            n = lines * 8
        else:
            base = VRAM + self.page_base(self.active_page if page is None else page)
            screen = self.mem.array(base, ROWS * cols * 2).reshape(ROWS, cols, 2)
            region = screen[top:bottom + 1, left:right + 1]
            fill = (0x20, attr)
            n = lines
        rows = region.shape[0]
        if up:
            region[:rows - n] = region[n:].copy()
            region[rows - n:] = fill
        else:
            region[n:] = region[:rows - n].copy()
            region[:n] = fill
        if self.graphics:
            self._store_graphics_lines(screen)
        else:
            self.mem.write(base, screen.reshape(-1))

    # AH=0Ch/0Dh pixels
    def _pixel_address(self, x, y):
        mode = self.mode
        if mode not in GRAPHICS_MODES or y >= 200:
            return None
        if x >= (640 if mode == 6 else 320):
            return None
        return cga_pixel(x, y, one_bit=mode == 6)

    def _fn0C(self, r):
        self.write_pixel(r.cx, r.dx, r.al)

    def write_pixel(self, x, y, color):
        where = self._pixel_address(x, y)
        if where is None:
            return
        addr, shift, mask = where
        self.mem.wb(addr, merge_pixel(self.mem.rb(addr), color, shift, mask))

    def _fn0D(self, r):
        r.al = self.read_pixel(r.cx, r.dx)

    def read_pixel(self, x, y):
        where = self._pixel_address(x, y)
        if where is None:
            return 0
        addr, shift, mask = where
        return (self.mem.rb(addr) >> shift) & mask

    # -- graphics-mode characters ------------------------------------------------------
    def _graphics_lines(self):
        """The 16 KiB regen buffer as 200 scan lines of 80 bytes."""
        buf = self.mem.array(VRAM, VRAM_SIZE)
        lines = np.empty((200, 80), np.uint8)
        lines[0::2] = buf[0:8000].reshape(100, 80)
        lines[1::2] = buf[0x2000:0x2000 + 8000].reshape(100, 80)
        return lines

    def _store_graphics_lines(self, lines):
        self.mem.write(VRAM, lines[0::2].reshape(-1))
        self.mem.write(VRAM + 0x2000, lines[1::2].reshape(-1))

    def glyph(self, ch):
        if ch < 0x80:
            base = rom.BIOS_BASE + rom.OFF_FONT_LOW + ch * 8
        else:
            seg, off = self.mem.vector(0x1F)
            base = linear(seg, off) + (ch - 0x80) * 8
        return self.mem.read(base, 8)

    def _cell_address(self, row, col, y):
        bpc = 2 if self.mode in (4, 5) else 1
        return interlaced_line(row * 8 + y) + col * bpc

    def graphics_write_char(self, row, col, ch, color):
        glyph = self.glyph(ch)
        xor = color & 0x80
        wide = self.mode in (4, 5)
        for y in range(8):
            addr = self._cell_address(row, col, y)
            bits = glyph[y]
            data = spread_2bpp(bits, color) if wide else (bits,)
            for i, v in enumerate(data):
                if xor:
                    v ^= self.mem.rb(addr + i)
                self.mem.wb(addr + i, v)

    def graphics_cell_pattern(self, row, col):
        wide = self.mode in (4, 5)
        pattern = bytearray()
        for y in range(8):
            addr = self._cell_address(row, col, y)
            if wide:
                pattern.append(lit_2bpp((self.mem.rb(addr) << 8) | self.mem.rb(addr + 1)))
            else:
                pattern.append(self.mem.rb(addr))
        return bytes(pattern)
