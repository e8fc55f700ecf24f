"""INT 10h services that a CGA BIOS and a VGA BIOS answer the same way.

The built-in BIOS's INT 10h for the CGA (``video.VideoService``) and a VGA
card's own firmware (the ``vga`` plugin's ``VgaFirmware``) keep the same
BIOS data area (0449h-0466h) and follow the same IBM rules for the cursor of
each page, page select, scrolling, characters, teletype, write string and
the mode facts.  ``Int10TextServices`` holds those rules once, so that both
answer alike and a fix reaches both.

It is a library class for video firmware, like ``pypc_core.font``: it knows
no machine and no card and owns no port.  A subclass reaches its adapter as
a program would and supplies the primitives listed on the class; that is
what lets a card plugin build on it without reaching into the machine or
the CGA.  What really differs stays in each subclass: mode sets and their
registers, the memory path (the CGA's RAM, the VGA's planes), the number of
rows (25 on the CGA, 0484h + 1 on the VGA), pages, pixels and the functions
only an EGA/VGA BIOS has (AH=10h-12h, 1Ah, 1Bh, which a CGA BIOS ignores).

The module also has the CGA's interlaced graphics layout (modes 4-6), which
a VGA reproduces in its CGA modes: pixel addressing and the 2-bit pixel
rows of graphics characters.
"""

from .memio import (
    BDA_ACTIVE_PAGE, BDA_CRT_MODE_SET, BDA_CRT_PALETTE, BDA_CRTC_BASE, BDA_CURSOR_POS,
    BDA_CURSOR_TYPE, BDA_VIDEO_COLS, BDA_VIDEO_MODE, BDA_VIDEO_PAGE_SIZE,
    BDA_VIDEO_PAGE_START, linear,
)

TEXT_MEMORY = 0xB8000             # colour text pages (and the CGA's graphics modes)
DEFAULT_CRTC = 0x3D4              # when 0463h is still 0
CONTROL_CHARACTERS = (0x07, 0x08, 0x0A, 0x0D)   # BEL, BS, LF, CR: teletype acts on them


def default_palette(mode):
    """The colour-select byte (3D9h, kept at 0466h) a mode set leaves: IBM's
    BIOS uses 3Fh in 640x200 (foreground white) and 30h in the others."""
    return 0x3F if mode == 6 else 0x30


# -- the CGA's graphics layout ------------------------------------------------------------------
def interlaced_line(line):
    """Linear address of scan line ``line`` (0-199) in the CGA's graphics
    layout: even lines from B8000h, odd lines from BA000h, 80 bytes each."""
    return TEXT_MEMORY + (line & 1) * 0x2000 + (line >> 1) * 80


def cga_pixel(x, y, one_bit):
    """(address, shift, mask) of pixel (x, y) in 640x200x2 (``one_bit``) or
    320x200x4; the leftmost pixel is in the byte's high bits."""
    if one_bit:
        return interlaced_line(y) + (x >> 3), 7 - (x & 7), 1
    return interlaced_line(y) + (x >> 2), (3 - (x & 3)) * 2, 3


def merge_pixel(byte, colour, shift, mask):
    """``byte`` with the pixel at ``shift`` set to ``colour`` (bit 7 of
    ``colour``: XOR it in instead, as INT 10h AH=0Ch does)."""
    value = (colour & mask) << shift
    if colour & 0x80:
        return byte ^ value
    return (byte & ~(mask << shift)) | value


def spread_2bpp(bits, colour):
    """Two bytes of a 4-colour mode showing glyph row ``bits`` (bit 7 left):
    each set bit becomes a pixel of ``colour`` (0-3), each clear one 0."""
    colour &= 3
    value = 0
    for k in range(8):
        if bits & (0x80 >> k):
            value |= colour << (14 - 2 * k)
    return (value >> 8) & 0xFF, value & 0xFF


def lit_2bpp(word):
    """The glyph row a 4-colour word shows: a bit for every pixel that is
    not colour 0 (how AH=08h recognises a character in graphics modes)."""
    return sum(0x80 >> k for k in range(8) if (word >> (14 - 2 * k)) & 3)


class Int10TextServices:
    """INT 10h AH=01h-09h, 0Ah, 0Bh, 0Eh, 0Fh and 13h, the cursor, pages,
    scrolling and teletype, written against a few primitives.

    What a subclass provides:

    - ``mem`` (``memio.Mem``) and ``ports`` (``write(port, value)``);
    - ``rows`` (text rows), ``graphics`` (a graphics mode is set),
      ``pages()`` and ``page_base(page)`` (a page's offset in its memory);
    - ``TEXT_BYTES``: the size of the text memory at B8000h, a power of two
      (cell offsets wrap in it);
    - ``text_read(addr)``, ``text_write(addr, byte)``: one CPU access to text
      memory; ``store_cells(addr, count, ch, attr)``: ``count`` cells of
      ``ch`` in ``attr``; ``store_chars(addr, count, ch)``: the characters of
      ``count`` cells, attributes kept;
    - ``scroll_window(up, lines, attr, top, left, bottom, right, page)``: move
      a window already clipped to the screen, 1 <= ``lines`` <= its height;
    - ``glyph(ch)``, ``graphics_write_char(row, col, ch, colour)`` and
      ``graphics_cell_pattern(row, col)`` (the lit pixels of a character
      cell as glyph rows) for characters in graphics modes;
    - ``program_cursor_shape(start, end)``: the CRTC's cursor lines for AH=01h;
    - ``colour_select(select, value, palette)``: show AH=0Bh's BH=``select``,
      BL=``value``, with ``palette`` the new byte at 0466h;
    - ``graphics_read_page()``: the page whose cursor AH=08h reads at in a
      graphics mode; ``reported_mode()``: AL of AH=0Fh.
    """

    # -- the BIOS data area ----------------------------------------------------------------
    @property
    def mode(self):
        return self.mem.rb(BDA_VIDEO_MODE)

    @property
    def cols(self):
        return self.mem.rw(BDA_VIDEO_COLS) or 80

    @property
    def active_page(self):
        return self.mem.rb(BDA_ACTIVE_PAGE)

    def record_mode(self, mode, columns, page_size, mode_control):
        """The data area after a mode set: 0449h-0466h as IBM's BIOS leaves
        them (every page's cursor home, cursor lines 6-7, page 0 shown)."""
        mem = self.mem
        mem.wb(BDA_VIDEO_MODE, mode)
        mem.ww(BDA_VIDEO_COLS, columns)
        mem.ww(BDA_VIDEO_PAGE_SIZE, page_size)
        mem.ww(BDA_VIDEO_PAGE_START, 0)
        for page in range(8):
            mem.ww(BDA_CURSOR_POS + 2 * page, 0)
        mem.ww(BDA_CURSOR_TYPE, 0x0607)
        mem.wb(BDA_ACTIVE_PAGE, 0)
        mem.wb(BDA_CRT_MODE_SET, mode_control)
        mem.wb(BDA_CRT_PALETTE, default_palette(mode))

    def crtc(self, reg, value):
        """Write CRTC register ``reg`` through the index/data pair at 0463h."""
        base = self.mem.rw(BDA_CRTC_BASE) or DEFAULT_CRTC
        self.ports.write(base, reg)
        self.ports.write(base + 1, value & 0xFF)

    def cell_offset(self, page, row, col, byte=0):
        """Offset in text memory of (row, col) on ``page``: the character,
        or with ``byte`` 1 the attribute; wraps within ``TEXT_BYTES``."""
        return (self.page_base(page) + (row * self.cols + col) * 2 + byte) & (self.TEXT_BYTES - 1)

    # -- cursor ------------------------------------------------------------------------------
    def cursor(self, page):
        """(row, column) of ``page``'s cursor (BH is taken modulo 8)."""
        pos = self.mem.rw(BDA_CURSOR_POS + 2 * (page & 7))
        return pos >> 8, pos & 0xFF

    def set_cursor(self, page, row, col):
        """Keep the cursor of ``page``; the CRTC shows it if the page is shown."""
        page &= 7
        self.mem.ww(BDA_CURSOR_POS + 2 * page, ((row & 0xFF) << 8) | (col & 0xFF))
        if page == self.active_page:
            addr = (self.page_base(page) >> 1) + row * self.cols + col
            self.crtc(14, addr >> 8)
            self.crtc(15, addr)

    # -- dispatch ---------------------------------------------------------------------------
    def int10(self, r):
        fn = getattr(self, f"_fn{r.ah:02X}", None)
        if fn is not None:
            fn(r)

    # AH=01h cursor lines (CH start, bit 5: hidden; CL end)
    def _fn01(self, r):
        self.mem.ww(BDA_CURSOR_TYPE, r.cx)
        self.program_cursor_shape(r.ch, r.cl)

    # AH=02h set cursor position
    def _fn02(self, r):
        self.set_cursor(r.bh, r.dh, r.dl)

    # AH=03h cursor position and lines
    def _fn03(self, r):
        r.dh, r.dl = self.cursor(r.bh)
        r.cx = self.mem.rw(BDA_CURSOR_TYPE)

    # AH=04h light pen: never triggered
    def _fn04(self, r):
        r.ah = 0

    # AH=05h select the page shown
    def _fn05(self, r):
        page = r.al
        if page >= self.pages():
            return
        self.mem.wb(BDA_ACTIVE_PAGE, page)
        start = self.page_base(page)
        self.mem.ww(BDA_VIDEO_PAGE_START, start)
        # The CRTC counts words in text modes (characters and attributes are
        # interleaved) and bytes in the EGA/VGA graphics modes.  A CGA's
        # graphics modes have one page, whose start is 0 either way.
        words = start if self.graphics else start >> 1
        self.crtc(12, words >> 8)
        self.crtc(13, words)
        self.set_cursor(page, *self.cursor(page))

    # AH=06h/07h scroll a window up/down (AL lines, 0 = blank it; BH fill attribute)
    def _fn06(self, r):
        self.scroll(True, r.al, r.bh, r.ch, r.cl, r.dh, r.dl)

    def _fn07(self, r):
        self.scroll(False, r.al, r.bh, r.ch, r.cl, r.dh, r.dl)

    def scroll(self, up, lines, attr, top, left, bottom, right, page=None):
        """Scroll rows ``top``-``bottom``, columns ``left``-``right`` of
        ``page`` (default: the page shown), cut to the screen."""
        bottom = min(bottom, self.rows - 1)
        right = min(right, self.cols - 1)
        if top > bottom or left > right:
            return
        height = bottom - top + 1
        if lines == 0 or lines > height:
            lines = height
        self.scroll_window(up, lines, attr, top, left, bottom, right, page)

    # AH=08h character and attribute at the cursor
    def _fn08(self, r):
        if self.graphics:
            row, col = self.cursor(self.graphics_read_page())
            r.al = self.graphics_read_char(row, col)
            r.ah = 0
            return
        row, col = self.cursor(r.bh)
        addr = TEXT_MEMORY + self.cell_offset(r.bh, row, col)
        r.al = self.text_read(addr)
        r.ah = self.text_read(addr + 1)

    # AH=09h character and attribute, AH=0Ah character only, CX times from the cursor
    def _fn09(self, r):
        self.write_chars(r.bh, r.al, r.bl, r.cx, with_attr=True)

    def _fn0A(self, r):
        self.write_chars(r.bh, r.al, r.bl, r.cx, with_attr=False)

    def write_chars(self, page, ch, attr, count, with_attr=True):
        """Text modes: ``count`` cells on from ``page``'s cursor, up to the
        end of text memory.  Graphics modes: from the cursor of the page
        shown, on along the rows until the bottom of the screen."""
        if count == 0:
            return
        if self.graphics:
            row, col = self.cursor(self.active_page)
            cols, rows = self.cols, self.rows
            for i in range(count):
                rr, cc = row + (col + i) // cols, (col + i) % cols
                if rr >= rows:
                    break
                self.graphics_write_char(rr, cc, ch, attr)
            return
        off = self.cell_offset(page, *self.cursor(page))
        count = min(count, (self.TEXT_BYTES - off) // 2)
        if with_attr:
            self.store_cells(TEXT_MEMORY + off, count, ch, attr)
        else:
            self.store_chars(TEXT_MEMORY + off, count, ch)

    def graphics_read_char(self, row, col):
        """The character whose glyph matches the lit pixels of a cell (0 if none)."""
        pattern = self.graphics_cell_pattern(row, col)
        for ch in range(256):
            if self.glyph(ch) == pattern:
                return ch
        return 0

    # AH=0Bh CGA colour select: BH=0 background/border (BL bits 0-4), BH=1 palette (BL bit 0)
    def _fn0B(self, r):
        palette = self.mem.rb(BDA_CRT_PALETTE)
        if r.bh == 0:
            palette = (palette & 0xE0) | (r.bl & 0x1F)
        elif r.bh == 1:
            palette = (palette & 0xDF) | (0x20 if r.bl & 1 else 0)
        else:
            return
        self.colour_select(r.bh, r.bl, palette)
        self.mem.wb(BDA_CRT_PALETTE, palette)

    # AH=0Eh teletype output
    def _fn0E(self, r):
        self.teletype(r.al, r.bl)

    def teletype(self, ch, color=0x07, page=None):
        """IBM's TTY: on the page shown unless ``page`` is given (AH=13h).
        ``color`` is used in graphics modes; text keeps the cell's attribute."""
        if page is None:
            page = self.active_page
        row, col = self.cursor(page)
        cols = self.cols
        rows = self.rows
        if ch == 0x07:
            return                     # BEL: the speaker is silent in zero time
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
                self.text_write(TEXT_MEMORY + self.cell_offset(page, row, col), ch)
            col += 1
            if col >= cols:
                col = 0
                row += 1
        if row >= rows:
            # the new bottom line takes the attribute of the cell the cursor comes to
            attr = 0
            if not self.graphics:
                attr = self.text_read(
                    TEXT_MEMORY + self.cell_offset(page, rows - 1, min(col, cols - 1), byte=1))
            self.scroll(True, 1, attr, 0, 0, rows - 1, cols - 1, page)
            row = rows - 1
        self.set_cursor(page, row, col)

    def write_text(self, text, attr=None):
        """Teletype a Python string (BIOS messages); ``attr`` colours text cells."""
        for ch in text:
            code = ord(ch) & 0xFF
            if attr is not None and code not in CONTROL_CHARACTERS and not self.graphics:
                page = self.active_page
                row, col = self.cursor(page)
                self.text_write(TEXT_MEMORY + self.cell_offset(page, row, col) + 1, attr)
            self.teletype(code)

    # AH=0Fh mode, columns, page shown
    def _fn0F(self, r):
        r.al = self.reported_mode()
        r.ah = self.cols
        r.bh = self.active_page

    # AH=13h write string ES:BP, CX characters at DX on page BH (AL bit 0: move
    # the cursor; bit 1: character/attribute pairs, else all in BL)
    def _fn13(self, r):
        flags, page, attr, count = r.al, r.bh, r.bl, r.cx
        saved = self.cursor(page)
        self.set_cursor(page, r.dh, r.dl)
        step = 2 if flags & 2 else 1
        data = self.mem.read(linear(r.es, r.bp), count * step)
        for i in range(count):
            ch = data[i * step]
            if flags & 2:
                attr = data[i * step + 1]
            if ch in CONTROL_CHARACTERS:
                self.teletype(ch, attr, page)
                continue
            row, col = self.cursor(page)
            self.write_chars(page, ch, attr, 1, with_attr=True)
            col += 1
            if col >= self.cols:
                col = 0
                row += 1
                if row >= self.rows:
                    self.scroll(True, 1, attr, 0, 0, self.rows - 1, self.cols - 1, page)
                    row = self.rows - 1
            self.set_cursor(page, row, col)
        if not flags & 1:
            self.set_cursor(page, *saved)
