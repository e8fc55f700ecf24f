"""INT 10h for the CGA: modes 0-6, cursor, scrolling, characters, pixels.

The service reaches the adapter only as a program would: video RAM at
B8000h through memory, the 6845 through ports 3D4h/3D5h, the mode and colour
registers through 3D8h/3D9h.  The BIOS data area (0040:0049..0066) is kept
as IBM's BIOS keeps it.  The CRTC values for a mode are read from the table
INT 1Dh points at (programs may replace it), as on IBM's BIOS.

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
from .memio import (
    Service,
    BDA_ACTIVE_PAGE, BDA_CRT_MODE_SET, BDA_CRT_PALETTE, BDA_CRTC_BASE,
    BDA_CURSOR_POS, BDA_CURSOR_TYPE, BDA_VIDEO_COLS, BDA_VIDEO_MODE,
    BDA_VIDEO_PAGE_SIZE, BDA_VIDEO_PAGE_START, linear,
)

VRAM = 0xB8000
VRAM_SIZE = 0x4000
ROWS = 25
CRTC_INDEX = 0x3D4
CRTC_DATA = 0x3D5
MODE_PORT = 0x3D8
COLOR_PORT = 0x3D9
GRAPHICS_MODES = (4, 5, 6)


class VideoService(Service):
    _fw = None
    _fw_card = None

    def _firmware(self):
        """The video card's own INT 10h firmware, or None (a CGA)."""
        card = self.bios.machine.video
        if card is not self._fw_card:
            make = getattr(card, "video_firmware", None)
            self._fw = make(self) if make is not None else None
            self._fw_card = card
        return self._fw

    # -- small helpers ----------------------------------------------------------

    @property
    def mode(self):
        return self.mem.rb(BDA_VIDEO_MODE)

    @property
    def cols(self):
        return self.mem.rw(BDA_VIDEO_COLS) or 80

    @property
    def graphics(self):
        fw = self._firmware()
        if fw is not None:
            return fw.graphics
        return self.mode in GRAPHICS_MODES

    @property
    def active_page(self):
        return self.mem.rb(BDA_ACTIVE_PAGE)

    def pages(self):
        if self.graphics:
            return 1
        return 8 if self.cols == 40 else 4

    def page_base(self, page):
        return (page * (self.mem.rw(BDA_VIDEO_PAGE_SIZE) or 4096)) & (VRAM_SIZE - 1)

    def crtc(self, reg, value):
        base = self.mem.rw(BDA_CRTC_BASE) or CRTC_INDEX
        self.ports.write(base, reg)
        self.ports.write(base + 1, value & 0xFF)

    def cursor(self, page):
        fw = self._firmware()
        if fw is not None:
            return fw.cursor(page)
        pos = self.mem.rw(BDA_CURSOR_POS + 2 * (page & 7))
        return pos >> 8, pos & 0xFF            # row, col

    def set_cursor(self, page, row, col):
        fw = self._firmware()
        if fw is not None:
            return fw.set_cursor(page, row, col)
        page &= 7
        self.mem.ww(BDA_CURSOR_POS + 2 * page, ((row & 0xFF) << 8) | (col & 0xFF))
        if page == self.active_page:
            addr = (self.page_base(page) >> 1) + row * self.cols + col
            self.crtc(14, addr >> 8)
            self.crtc(15, addr)

    # -- dispatch ------------------------------------------------------------------
    def int10(self, r):
        fw = self._firmware()
        if fw is not None:
            return fw.int10(r)
        fn = getattr(self, f"_fn{r.ah:02X}", None)
        if fn is not None:
            fn(r)

    # AH=00h set mode
    def _fn00(self, r):
        self.set_mode(r.al & 0x7F, clear=not (r.al & 0x80))

    def set_mode(self, mode, clear=True):
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
        palette = 0x3F if mode == 6 else 0x30
        self.ports.write(MODE_PORT, control)
        self.ports.write(COLOR_PORT, palette)
        mem.wb(BDA_VIDEO_MODE, mode)
        mem.ww(BDA_VIDEO_COLS, rom.MODE_COLUMNS[mode])
        mem.ww(BDA_VIDEO_PAGE_SIZE, rom.MODE_PAGE_SIZE[mode])
        mem.ww(BDA_VIDEO_PAGE_START, 0)
        for page in range(8):
            mem.ww(BDA_CURSOR_POS + 2 * page, 0)
        mem.ww(BDA_CURSOR_TYPE, 0x0607)
        mem.wb(BDA_ACTIVE_PAGE, 0)
        mem.wb(BDA_CRT_MODE_SET, control)
        mem.wb(BDA_CRT_PALETTE, palette)

    # AH=01h cursor shape
    def _fn01(self, r):
        self.mem.ww(BDA_CURSOR_TYPE, r.cx)
        self.crtc(10, r.ch)
        self.crtc(11, r.cl)

    # AH=02h set cursor position
    def _fn02(self, r):
        self.set_cursor(r.bh, r.dh, r.dl)

    # AH=03h get cursor position and shape
    def _fn03(self, r):
        row, col = self.cursor(r.bh)
        r.dh, r.dl = row, col
        r.cx = self.mem.rw(BDA_CURSOR_TYPE)

    # AH=04h light pen: never triggered
    def _fn04(self, r):
        r.ah = 0

    # AH=05h select active page
    def _fn05(self, r):
        page = r.al
        if page >= self.pages():
            return
        self.mem.wb(BDA_ACTIVE_PAGE, page)
        start = self.page_base(page)
        self.mem.ww(BDA_VIDEO_PAGE_START, start)
        self.crtc(12, (start >> 1) >> 8)
        self.crtc(13, start >> 1)
        row, col = self.cursor(page)
        self.set_cursor(page, row, col)

    # AH=06h/07h scroll window up/down
    def _fn06(self, r):
        self.scroll(True, r.al, r.bh, r.ch, r.cl, r.dh, r.dl)

    def _fn07(self, r):
        self.scroll(False, r.al, r.bh, r.ch, r.cl, r.dh, r.dl)

    def scroll(self, up, lines, attr, top, left, bottom, right, page=None):
        cols = self.cols
        bottom = min(bottom, ROWS - 1)
        right = min(right, cols - 1)
        if top > bottom or left > right:
            return
        height = bottom - top + 1
        if lines == 0 or lines > height:
            lines = height
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

    # AH=08h read character and attribute at the cursor
    def _fn08(self, r):
        page = r.bh if not self.graphics else 0
        row, col = self.cursor(page)
        if self.graphics:
            r.al = self.graphics_read_char(row, col)
            r.ah = 0
        else:
            addr = VRAM + ((self.page_base(page) + (row * self.cols + col) * 2) & (VRAM_SIZE - 1))
            r.al = self.mem.rb(addr)
            r.ah = self.mem.rb(addr + 1)

    # AH=09h write character and attribute, AH=0Ah character only (CX times)
    def _fn09(self, r):
        self.write_chars(r.bh, r.al, r.bl, r.cx, with_attr=True)

    def _fn0A(self, r):
        self.write_chars(r.bh, r.al, r.bl, r.cx, with_attr=False)

    def write_chars(self, page, ch, attr, count, with_attr=True):
        if count == 0:
            return
        if self.graphics:
            row, col = self.cursor(self.active_page)
            cols = self.cols
            for i in range(count):
                rr, cc = row + (col + i) // cols, (col + i) % cols
                if rr >= ROWS:
                    break
                self.graphics_write_char(rr, cc, ch, attr)
            return
        row, col = self.cursor(page)
        off = (self.page_base(page) + (row * self.cols + col) * 2) & (VRAM_SIZE - 1)
        count = min(count, (VRAM_SIZE - off) // 2)
        if with_attr:
            data = np.tile(np.array([ch, attr], np.uint8), count)
            self.mem.write(VRAM + off, data)
        else:
            cells = self.mem.array(VRAM + off, count * 2)
            cells[0::2] = ch
            self.mem.write(VRAM + off, cells)

    # AH=0Bh palette / background / border
    def _fn0B(self, r):
        pal = self.mem.rb(BDA_CRT_PALETTE)
        if r.bh == 0:
            pal = (pal & 0xE0) | (r.bl & 0x1F)
        elif r.bh == 1:
            pal = (pal & 0xDF) | (0x20 if r.bl & 1 else 0)
        else:
            return
        self.mem.wb(BDA_CRT_PALETTE, pal)
        self.ports.write(COLOR_PORT, pal)

    # AH=0Ch/0Dh pixels
    def _pixel_address(self, x, y):
        mode = self.mode
        if mode not in GRAPHICS_MODES or y >= 200:
            return None
        if mode == 6:
            if x >= 640:
                return None
            return VRAM + (y & 1) * 0x2000 + (y >> 1) * 80 + (x >> 3), 7 - (x & 7), 1
        if x >= 320:
            return None
        return VRAM + (y & 1) * 0x2000 + (y >> 1) * 80 + (x >> 2), (3 - (x & 3)) * 2, 3

    def _fn0C(self, r):
        self.write_pixel(r.cx, r.dx, r.al)

    def write_pixel(self, x, y, color):
        where = self._pixel_address(x, y)
        if where is None:
            return
        addr, shift, mask = where
        byte = self.mem.rb(addr)
        value = (color & mask) << shift
        if color & 0x80:
            byte ^= value
        else:
            byte = (byte & ~(mask << shift)) | value
        self.mem.wb(addr, byte)

    def _fn0D(self, r):
        r.al = self.read_pixel(r.cx, r.dx)

    def read_pixel(self, x, y):
        where = self._pixel_address(x, y)
        if where is None:
            return 0
        addr, shift, mask = where
        return (self.mem.rb(addr) >> shift) & mask

    # AH=0Eh teletype output
    def _fn0E(self, r):
        self.teletype(r.al, r.bl)

    def teletype(self, ch, color=0x07, page=None):
        """IBM's TTY: on the active page unless ``page`` is given (AH=13h)."""
        fw = self._firmware()
        if fw is not None:
            return fw.teletype(ch, color, page)
        if page is None:
            page = self.active_page
        row, col = self.cursor(page)
        cols = self.cols
        if ch == 0x07:
            return
        if ch == 0x08:
            if col > 0:
                col -= 1
        elif ch == 0x0A:
            row += 1
        elif ch == 0x0D:
            col = 0
        else:
            if self.graphics:
                self.graphics_write_char(row, col, ch, color)
            else:
                off = (self.page_base(page) + (row * cols + col) * 2) & (VRAM_SIZE - 1)
                self.mem.wb(VRAM + off, ch)
            col += 1
            if col >= cols:
                col = 0
                row += 1
        if row >= ROWS:
            attr = 0
            if not self.graphics:
                off = (self.page_base(page) + ((ROWS - 1) * cols + min(col, cols - 1)) * 2 + 1)
                attr = self.mem.rb(VRAM + (off & (VRAM_SIZE - 1)))
            self.scroll(True, 1, attr, 0, 0, ROWS - 1, cols - 1, page)
            row = ROWS - 1
        self.set_cursor(page, row, col)

    def write_text(self, text, attr=None):
        """Teletype a Python string (BIOS messages); ``attr`` colours text cells."""
        fw = self._firmware()
        if fw is not None:
            return fw.write_text(text, attr)
        for ch in text:
            code = ord(ch) & 0xFF
            if attr is not None and code not in (7, 8, 10, 13) and not self.graphics:
                row, col = self.cursor(self.active_page)
                off = (self.page_base(self.active_page) + (row * self.cols + col) * 2) & (VRAM_SIZE - 1)
                self.mem.wb(VRAM + off + 1, attr)
            self.teletype(code)

    # AH=0Fh get mode
    def _fn0F(self, r):
        r.al = self.mode
        r.ah = self.cols
        r.bh = self.active_page

    # AH=13h write string
    def _fn13(self, r):
        flags = r.al
        page = r.bh
        attr = r.bl
        count = r.cx
        src = linear(r.es, r.bp)
        saved = self.cursor(page)
        row, col = r.dh, r.dl
        self.set_cursor(page, row, col)
        step = 2 if flags & 2 else 1
        data = self.mem.read(src, count * step)
        for i in range(count):
            ch = data[i * step]
            if flags & 2:
                attr = data[i * step + 1]
            if ch in (7, 8, 10, 13):
                self.teletype(ch, attr, page)
                continue
            row, col = self.cursor(page)
            self.write_chars(page, ch, attr, 1, with_attr=True)
            col += 1
            if col >= self.cols:
                col = 0
                row += 1
                if row >= ROWS:
                    self.scroll(True, 1, attr, 0, 0, ROWS - 1, self.cols - 1, page)
                    row = ROWS - 1
            self.set_cursor(page, row, col)
        if not flags & 1:
            self.set_cursor(page, *saved)

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
        line = row * 8 + y
        bpc = 2 if self.mode in (4, 5) else 1
        return VRAM + (line & 1) * 0x2000 + (line >> 1) * 80 + col * bpc

    def graphics_write_char(self, row, col, ch, color):
        glyph = self.glyph(ch)
        xor = color & 0x80
        wide = self.mode in (4, 5)
        for y in range(8):
            addr = self._cell_address(row, col, y)
            bits = glyph[y]
            if wide:
                c = color & 3
                value = 0
                for k in range(8):
                    if bits & (0x80 >> k):
                        value |= c << (14 - 2 * k)
                data = [(value >> 8) & 0xFF, value & 0xFF]
            else:
                data = [bits]
            for i, v in enumerate(data):
                if xor:
                    v ^= self.mem.rb(addr + i)
                self.mem.wb(addr + i, v)

    def graphics_read_char(self, row, col):
        fw = self._firmware()
        if fw is not None:
            return fw.graphics_read_char(row, col)
        wide = self.mode in (4, 5)
        pattern = bytearray()
        for y in range(8):
            addr = self._cell_address(row, col, y)
            if wide:
                w = (self.mem.rb(addr) << 8) | self.mem.rb(addr + 1)
                bits = 0
                for k in range(8):
                    if (w >> (14 - 2 * k)) & 3:
                        bits |= 0x80 >> k
                pattern.append(bits)
            else:
                pattern.append(self.mem.rb(addr))
        pattern = bytes(pattern)
        for ch in range(256):
            if self.glyph(ch) == pattern:
                return ch
        return 0
