"""IBM Color/Graphics Monitor Adapter: 6845 CRTC, mode/colour/status ports,
16 KiB video RAM at B8000h, and a numpy renderer.

Ports (3D0h-3DFh)
    3D0h/3D2h/3D4h/3D6h  CRTC index (write only; reads FFh)
    3D1h/3D3h/3D5h/3D7h  CRTC data: R0-R15 write, R14-R17 read, other
                         registers read 00h (as the MC6845 does)
    3D8h  mode control   (write only)   3D9h colour select (write only)
    3DAh  status (read): bit0 display enable inactive (blanking),
          bit1 light-pen trigger latched, bit2 light-pen switch (0: no pen),
          bit3 vertical sync; bits 4-7 read 1 (not driven by the card)
    3DBh  clear light-pen latch     3DCh  set light-pen latch

Timing
    The card's dot clock is 14.31818 MHz and the CPU runs at dot/3, so one CPU
    cycle is exactly three dots.  The CRTC is clocked once per character: 8
    dots in high-resolution text (3D8h bit 0), 16 dots otherwise.  Every line
    lasts (R0+1) characters, a frame (R4+1)*(R9+1)+R5 lines: with the BIOS's
    values that is 912 dots = 304 CPU cycles per line, 262 lines, 79,648
    cycles per frame (59.92 Hz).  The status port is computed on read from
    ``machine.clock()``; nothing is scheduled (``next_event`` is None).  When a
    timing register changes, the frame counter and the position inside the
    current frame carry over so time never runs backwards.
    ``status_params()``/``status_at()`` expose the same computation as plain
    integers.

Video RAM
    The declared window is B8000h-BFFFFh (32 KiB): the 16 KiB of VRAM is
    board RAM at B8000h and an alias of it at BC000h (``Board.map_alias``),
    so a CPU (or BIOS) write to either half lands in both, reads stay plain
    loads in the core, and the card renders from B8000h-BBFFFh.

Fast path
    3DAh is a raster primitive of the board (``Board.raster``): the core
    computes it from the cycle counter with the timing the card publishes
    after every timing write; the other ports are Python handlers.

Rendering
    ``frame()`` returns the visible 640x200 area as ``uint8[200, 640, 3]`` in
    the RGBI palette (colour 6 brown).  Text uses the pypc 8x8 font
    (``pypc_core.font``) and follows the CRTC: start address, R1 characters
    per row, R6 rows, R9+1 scanlines per row (font row = scanline & 7, as the
    card's character ROM only sees RA0-RA2), cursor from R10/R11/R14/R15.
    Blink phases come from the emulated frame count: the cursor toggles every
    8 frames, blinking characters every 16.
"""

import numpy as np

from pypc_core.device import Device, DeviceDeclaration, MemoryWindow
from pypc_core.font import font_bits
from pypc_core.scheduler import CPU_HZ
from pypc_core.video_frames import aspect_for, encode_png, write_png  # noqa: F401

VRAM_BASE = 0xB8000
VRAM_SIZE = 0x4000            # 16 KiB of real memory on the card
WINDOW_SIZE = 0x8000          # decoded B8000h-BFFFFh (mirror at BC000h)
PORT_FIRST = 0x3D0
PORT_LAST = 0x3DF

FRAME_WIDTH = 640
FRAME_HEIGHT = 200

DOTS_PER_CYCLE = 3            # 14.31818 MHz dot clock / 4.77 MHz CPU
VSYNC_LINES = 16              # MC6845: vertical sync width is fixed

# mode control (3D8h) bits
MODE_HIRES_TEXT = 0x01        # 80-column text (8-dot character clock)
MODE_GRAPHICS = 0x02
MODE_BW = 0x04
MODE_ENABLE = 0x08
MODE_HIRES_GFX = 0x10         # 640x200 graphics
MODE_BLINK = 0x20

# colour select (3D9h) bits
COLOR_BACKGROUND = 0x0F       # border/background (320), foreground (640)
COLOR_INTENSE = 0x10
COLOR_PALETTE1 = 0x20

# status (3DAh) bits
STATUS_BLANK = 0x01
STATUS_LP_TRIGGER = 0x02
STATUS_LP_SWITCH = 0x04
STATUS_VSYNC = 0x08
STATUS_UNUSED = 0xF0

# register write masks (MC6845 register widths); R16/R17 are read only
CRTC_MASKS = (0xFF, 0xFF, 0xFF, 0x0F, 0x7F, 0x1F, 0x7F, 0x7F, 0x03,
              0x1F, 0x7F, 0x1F, 0x3F, 0xFF, 0x3F, 0xFF, 0x00, 0x00)
CRTC_READABLE = frozenset((14, 15, 16, 17))
CRTC_TIMING = frozenset((0, 1, 4, 5, 6, 7, 9))

# What the BIOS programs for 80x25 text (mode 3); the power-on state here.
CRTC_DEFAULTS_80X25 = (0x71, 0x50, 0x5A, 0x0A, 0x1F, 0x06, 0x19, 0x1C,
                       0x02, 0x07, 0x06, 0x07, 0x00, 0x00, 0x00, 0x00,
                       0x00, 0x00)
MODE_DEFAULT = MODE_HIRES_TEXT | MODE_ENABLE | MODE_BLINK   # 29h
COLOR_DEFAULT = 0x00

CURSOR_BLINK_FRAMES = 8       # cursor on 8 frames, off 8
CHAR_BLINK_FRAMES = 16        # blinking characters on 16 frames, off 16


def _rgbi_palette():
    """The 16 RGBI colours as the IBM 5153 shows them (dark yellow -> brown)."""
    pal = np.zeros((16, 3), dtype=np.uint8)
    for i in range(16):
        intense = 0x55 if i & 8 else 0
        r = (0xAA if i & 4 else 0) + intense
        g = (0xAA if i & 2 else 0) + intense
        b = (0xAA if i & 1 else 0) + intense
        if i == 6:                # the monitor halves green on dark yellow
            g = 0x55
        pal[i] = (r, g, b)
    pal.flags.writeable = False
    return pal


PALETTE = _rgbi_palette()
PALETTE_HEX = tuple("#%02X%02X%02X" % tuple(int(v) for v in c) for c in PALETTE)

# Byte -> text for text_rows(): CP437 glyph characters, controls as spaces.
_CP437 = [bytes([b]).decode("cp437") for b in range(256)]
TEXT_CHARS = tuple(" " if b < 0x20 else ("\u2302" if b == 0x7F else _CP437[b])
                   for b in range(256))

# 2 bits per pixel: the four pixels of a byte, leftmost first
_SHIFTS_2BPP = np.array([6, 4, 2, 0], dtype=np.uint8)


def status_at(cycle, epoch_dots, line_dots, char_dots, hdisp_dots,
              frame_dots, vdisp_lines, vsync_start, vsync_end, extra_bits):
    """Status byte (3DAh) at CPU ``cycle`` (what the board's raster
    primitive computes in the core).  The parameters are
    ``CGA.status_params()``."""
    pos = (cycle * DOTS_PER_CYCLE - epoch_dots) % frame_dots
    line = pos // line_dots
    hpos = pos - line * line_dots
    value = extra_bits
    if line >= vdisp_lines or hpos >= hdisp_dots:
        value |= STATUS_BLANK
    if vsync_start <= line < vsync_end:
        value |= STATUS_VSYNC
    return value


class CGA(Device):
    declaration = DeviceDeclaration(
        name="cga",
        ports=list(range(PORT_FIRST, PORT_LAST + 1)),
        memory=[MemoryWindow(VRAM_BASE, WINDOW_SIZE, "device")],
        capabilities=["video", "cga", "text40", "text80", "g320", "g640"],
    )
    adapter = "CGA"

    def __init__(self):
        self.clock = lambda: 0
        self._vram = None
        self._raster = None
        self._board = None
        self._journal = None
        self.reset()

    # -- wiring -----------------------------------------------------------
    def attach(self, board):
        """Map the VRAM (and its alias), claim 3D0h-3DFh, put the raster
        fast path on 3DAh."""
        self.clock = board.clock
        self._board = board
        self._vram = board.map_ram(VRAM_BASE, VRAM_SIZE)
        board.map_alias(VRAM_BASE + VRAM_SIZE, WINDOW_SIZE - VRAM_SIZE, VRAM_BASE)
        board.claim_ports(range(PORT_FIRST, PORT_LAST + 1),
                          read=self.port_read, write=self.port_write)
        self._raster = board.raster(PORT_FIRST + 0x0A)
        self.epoch_dots = self._now_dots()
        self._publish_raster()

    def _publish_raster(self):
        """Let the CPU answer 3DAh reads itself (guests poll it in tight
        retrace loops); the timing only changes on a port write."""
        if self._raster is None:
            return
        (epoch, line_dots, _char, hdisp, frame_dots, vdisp, vs0, vs1,
         extra) = self.status_params()
        self._raster.set(epoch, line_dots, hdisp, frame_dots, vdisp, vs0, vs1, extra,
                         STATUS_BLANK, STATUS_VSYNC, num=DOTS_PER_CYCLE, den=1)

    def reset(self):
        self.crtc = list(CRTC_DEFAULTS_80X25)
        self.index = 0
        self.mode = MODE_DEFAULT
        self.color = COLOR_DEFAULT
        self.lp_trigger = False
        self.epoch_dots = 0       # dot count at which frame ``epoch_frame`` began
        self.epoch_frame = 0
        self.epoch_dots = self._now_dots()
        self._publish_raster()
        self._journal_mode()

    def _now_dots(self):
        try:
            return int(self.clock()) * DOTS_PER_CYCLE
        except Exception:      # the machine's clock may not run yet at creation
            return 0

    # -- ports ------------------------------------------------------------
    def port_read(self, port):
        p = port & 0x0F
        if p < 8:
            if p & 1:
                return self.crtc_read(self.index)
            return 0xFF
        if p == 0x0A:
            return self.status()
        return 0xFF

    def port_write(self, port, value):
        p = port & 0x0F
        value &= 0xFF
        if p < 8:
            if p & 1:
                self.crtc_write(self.index, value)
            else:
                self.index = value & 0x1F
        elif p == 0x08:
            if (value ^ self.mode) & MODE_HIRES_TEXT:
                self._retime(lambda: setattr(self, "mode", value))
            else:
                self.mode = value
            self._journal_mode()
        elif p == 0x09:
            self.color = value
        elif p == 0x0B:
            self.lp_trigger = False
        elif p == 0x0C:
            self._latch_light_pen()
        # 3DAh, 3DDh-3DFh: writes ignored
        if p == 0x08 or p == 0x0B or p == 0x0C or (p < 8 and p & 1 and self.index < 10):
            self._publish_raster()          # the status timing may have changed

    def crtc_read(self, reg):
        if reg in CRTC_READABLE:
            return self.crtc[reg]
        return 0x00

    def crtc_write(self, reg, value):
        if reg >= 16:
            return
        value &= CRTC_MASKS[reg]
        if reg in CRTC_TIMING and value != self.crtc[reg]:
            self._retime(lambda: self.crtc.__setitem__(reg, value))
        else:
            self.crtc[reg] = value

    # -- timing -----------------------------------------------------------
    def _timing(self):
        r = self.crtc
        char_dots = 8 if self.mode & MODE_HIRES_TEXT else 16
        line_dots = (r[0] + 1) * char_dots
        scanlines = r[9] + 1
        vtotal = (r[4] + 1) * scanlines + r[5]
        return {
            "char_dots": char_dots,
            "line_dots": line_dots,
            "hdisp_dots": r[1] * char_dots,
            "frame_dots": line_dots * vtotal,
            "vtotal_lines": vtotal,
            "vdisp_lines": r[6] * scanlines,
            "vsync_start": r[7] * scanlines,
        }

    def _retime(self, change):
        """Apply a change of the frame geometry, keeping the frame count and
        the position inside the current frame (clamped to the new length)."""
        now = self._now_dots()
        t = self._timing()
        elapsed = now - self.epoch_dots
        frame = self.epoch_frame + elapsed // t["frame_dots"]
        pos = elapsed % t["frame_dots"]
        change()
        t = self._timing()
        pos = min(pos, t["frame_dots"] - 1)
        self.epoch_frame = frame
        self.epoch_dots = now - pos

    def status_params(self):
        """Integers for ``status_at`` (valid until the next port write)."""
        t = self._timing()
        extra = STATUS_UNUSED | (STATUS_LP_TRIGGER if self.lp_trigger else 0)
        return (self.epoch_dots, t["line_dots"], t["char_dots"], t["hdisp_dots"],
                t["frame_dots"], t["vdisp_lines"], t["vsync_start"],
                t["vsync_start"] + VSYNC_LINES, extra)

    def status(self, cycle=None):
        """The 3DAh status byte at ``cycle`` (default: now)."""
        if cycle is None:
            cycle = int(self.clock())
        return status_at(cycle, *self.status_params())

    def beam(self, cycle=None):
        """Raster position: dict(frame, line, dot, display, vsync)."""
        if cycle is None:
            cycle = int(self.clock())
        t = self._timing()
        elapsed = cycle * DOTS_PER_CYCLE - self.epoch_dots
        frame = self.epoch_frame + elapsed // t["frame_dots"]
        pos = elapsed % t["frame_dots"]
        line, dot = divmod(pos, t["line_dots"])
        return {
            "frame": int(frame), "line": int(line), "dot": int(dot),
            "display": bool(line < t["vdisp_lines"] and dot < t["hdisp_dots"]),
            "vsync": bool(t["vsync_start"] <= line < t["vsync_start"] + VSYNC_LINES),
        }

    def frame_number(self, cycle=None):
        return self.beam(cycle)["frame"]

    def frame_cycles(self):
        """CPU cycles per frame with the current programming."""
        return self._timing()["frame_dots"] / DOTS_PER_CYCLE

    def frame_rate_hz(self):
        """Frames per emulated second (59.92 with the BIOS's values)."""
        return CPU_HZ / self.frame_cycles()

    def pixel_aspect(self):
        """Width over height of one ``frame()`` pixel on the monitor: the
        640x200 picture fills a 4:3 screen, so 5/12 in every mode."""
        return aspect_for(FRAME_WIDTH, FRAME_HEIGHT)

    def _latch_light_pen(self):
        """3DCh: latch the CRTC address the beam is at into R16/R17."""
        b = self.beam()
        t = self._timing()
        scanlines = self.crtc[9] + 1
        row = b["line"] // scanlines
        col = b["dot"] // t["char_dots"]
        addr = (self.start_address() + row * self.crtc[1] + col) & 0x3FFF
        self.crtc[16] = addr >> 8
        self.crtc[17] = addr & 0xFF
        self.lp_trigger = True

    def next_event(self):
        return None

    # -- video memory -----------------------------------------------------
    def vram(self):
        """The 16 KiB of video RAM as a read-only numpy view."""
        if self._vram is None:
            return np.zeros(VRAM_SIZE, dtype=np.uint8)
        view = self._vram.view()
        view.flags.writeable = False
        return view

    def vram_bytes(self):
        return self.vram().tobytes()

    # -- write journal (video.history) ---------------------------------------
    def journal_start(self, log):
        """Journal every byte of video RAM a write changes into ``log`` (a
        ``bus.journal.WriteLog``: kind ``TEXT``, the offset in the 16 KiB),
        CPU writes at either copy and Python-side writes alike, in program
        order -- while the card is in a text mode (graphics memory is not
        journaled).  Until ``journal_stop`` the core appends to the log as
        it writes the window's pages (``bus.journal.RamJournal``); without
        a journal they are plain RAM again."""
        self.journal_stop()
        if self._board is None:
            raise RuntimeError("cga: not attached to a board")
        self._journal = self._board.ram_journal(VRAM_BASE, VRAM_SIZE,
                                                WINDOW_SIZE // VRAM_SIZE, log)
        self._journal_mode()
        self._journal.start()

    def journal_stop(self):
        if self._journal is not None:
            self._journal.stop()
            self._journal = None

    def _journal_mode(self):
        if getattr(self, "_journal", None) is not None:
            self._journal.set_logging(not self.is_graphics())

    def start_address(self):
        """CRTC start address (R12:R13), in words (character positions)."""
        return ((self.crtc[12] << 8) | self.crtc[13]) & 0x3FFF

    def display_address(self):
        """Byte offset in VRAM of the first displayed character (text)."""
        return (self.start_address() * 2) & 0x3FFF

    # -- mode -------------------------------------------------------------
    def is_graphics(self):
        return bool(self.mode & MODE_GRAPHICS)

    def columns(self):
        """Text columns of the mode (40 or 80), as video.text reports them."""
        if self.mode & MODE_GRAPHICS:
            return 80 if self.mode & MODE_HIRES_GFX else 40
        return 80 if self.mode & MODE_HIRES_TEXT else 40

    def mode_name(self):
        if self.mode & MODE_GRAPHICS:
            return "G640" if self.mode & MODE_HIRES_GFX else "G320"
        return "Text80" if self.mode & MODE_HIRES_TEXT else "Text40"

    def graphics_mode(self):
        """The mode-control byte (3D8h) as video.text reports it."""
        return self.mode

    def blink_enabled(self):
        return bool(self.mode & MODE_BLINK)

    def blink_phase(self, frame=None):
        """(cursor_on, blinking_characters_on) for emulated frame ``frame``."""
        if frame is None:
            frame = self.frame_number()
        return ((frame // CURSOR_BLINK_FRAMES) % 2 == 0,
                (frame // CHAR_BLINK_FRAMES) % 2 == 0)

    # -- text -------------------------------------------------------------
    def _cells(self, display_address, columns, rows=25, stride=None):
        """(chars, attrs) uint8[rows, columns] starting at a VRAM byte offset,
        wrapping within the 16 KiB."""
        stride = columns if stride is None else stride
        words = (display_address >> 1) + (np.arange(rows)[:, None] * stride
                                          + np.arange(columns)[None, :])
        addr = (words * 2 + (display_address & 1)) & (VRAM_SIZE - 1)
        vram = self.vram()
        return vram[addr], vram[(addr + 1) & (VRAM_SIZE - 1)]

    def text_rows(self, display_address=None, columns=None, trim=True):
        """25 strings of the text page at ``display_address`` (default: the
        CRTC start address): CP437 as Unicode, controls (< 20h) as spaces,
        trimmed on the right unless ``trim`` is False."""
        if display_address is None:
            display_address = self.display_address()
        columns = columns or self.columns()
        chars, _ = self._cells(display_address, columns)
        rows = ["".join(TEXT_CHARS[c] for c in row) for row in chars.tolist()]
        if trim:
            rows = [r.rstrip(" ") for r in rows]
        return rows

    def text(self):
        return "\n".join(self.text_rows())

    @staticmethod
    def contract_cells(rows):
        """The cells of :meth:`text_page` as the RPC contract reads a CGA
        attribute (COMPAT: "CGA always has the blink bit"): bit 7 is
        ``blink`` and bits 4..6 the background, whatever the mode register's
        blink-enable bit makes the display show (only the VGA's attribute
        controller switches bit 7 to a fourth background bit)."""
        out = []
        for row in rows:
            new = []
            for cell in row:
                a = cell["attribute"]
                if cell["background"] != (a >> 4) & 7 or cell["blink"] != bool(a & 0x80):
                    cell = dict(cell, background=(a >> 4) & 7, blink=bool(a & 0x80))
                new.append(cell)
            out.append(new)
        return out

    def text_page(self, page=None, display_address=None):
        """What video.text needs: the page selected by ``page`` or
        ``display_address`` (default: the displayed one)."""
        if page is not None and display_address is not None:
            raise ValueError("page and display_address are mutually exclusive")
        columns = self.columns()
        page_size = columns * 25 * 2
        page_count = VRAM_SIZE // page_size
        active_address = self.display_address()
        active_page = active_address // page_size
        if page is not None:
            if not 0 <= page < page_count:
                raise ValueError(f"page must be 0..{page_count - 1}")
            address = page * page_size
        elif display_address is not None:
            if not 0 <= display_address < VRAM_SIZE:
                raise ValueError("display_address must be 0..0x3FFF")
            address = display_address
        else:
            address = active_address
        chars, attrs = self._cells(address, columns)
        blink = self.blink_enabled()
        cells = []
        for crow, arow in zip(chars.tolist(), attrs.tolist()):
            cells.append([
                {"code": c, "char": TEXT_CHARS[c], "attribute": a,
                 "foreground": a & 0x0F,
                 "background": (a >> 4) & (0x07 if blink else 0x0F),
                 "blink": bool(blink and a & 0x80)}
                for c, a in zip(crow, arow)])
        return {
            "adapter": self.adapter,
            "columns": columns,
            "rows": 25,
            "page_size_bytes": page_size,
            "page_count": page_count,
            "page": address // page_size,
            "active_page": active_page,
            "is_active_page": address == active_address,
            "display_address": address,
            "mode": self.mode_name(),
            "graphics_mode": self.mode,
            "text": self.text_rows(address, columns),
            "cells": cells,
        }

    def cursor(self, frame=None):
        """Cursor state: CRTC address (words), shape, enable, blink, cell."""
        r = self.crtc
        address = ((r[14] << 8) | r[15]) & 0x3FFF
        start, end = r[10] & 0x1F, r[11] & 0x1F
        blink_mode = (r[10] >> 5) & 3          # 0 steady, 1 off, 2/3 blink
        enabled = blink_mode != 1 and start <= r[9]
        if frame is None:
            frame = self.frame_number()
        if blink_mode == 3:
            phase = (frame // (2 * CURSOR_BLINK_FRAMES)) % 2 == 0
        else:                  # the CGA blinks the cursor even in mode 0
            phase = (frame // CURSOR_BLINK_FRAMES) % 2 == 0
        offset = (address - self.start_address()) & 0x3FFF
        stride = max(r[1], 1)
        row, column = divmod(offset, stride)
        on_screen = (not self.mode & MODE_GRAPHICS and row < r[6]
                     and column < r[1])
        return {
            "address": address,
            "start_scanline": start,
            "end_scanline": end,
            "enabled": bool(enabled),
            "visible": bool(enabled and phase and on_screen
                            and self.mode & MODE_ENABLE),
            "blink_phase": bool(phase),
            "column": int(column) if on_screen else None,
            "row": int(row) if on_screen else None,
        }

    # -- rendering --------------------------------------------------------
    def frame_indices(self, frame=None):
        """The visible area as palette indices, ``uint8[200, 640]``."""
        out = np.zeros((FRAME_HEIGHT, FRAME_WIDTH), dtype=np.uint8)
        if not self.mode & MODE_ENABLE:
            return out
        if frame is None:
            frame = self.frame_number()
        if self.mode & MODE_GRAPHICS:
            img = self._render_graphics()
        else:
            img = self._render_text(frame)
        h = min(img.shape[0], FRAME_HEIGHT)
        w = min(img.shape[1], FRAME_WIDTH)
        out[:h, :w] = img[:h, :w]
        return out

    def frame_key(self, frame=None):
        """Bytes that determine ``frame(frame)`` exactly: video RAM, the
        CRTC, mode and colour registers and the blink phases (equal keys,
        equal pictures; recordings skip rendering an unchanged frame)."""
        if frame is None:
            frame = self.frame_number()
        phases = (int(frame) // CURSOR_BLINK_FRAMES) % 4    # cursor 8/16, characters 16
        return (self.vram().tobytes() + bytes(int(v) & 0xFF for v in self.crtc)
                + bytes((self.mode & 0xFF, self.color & 0xFF, phases)))

    def frame(self, frame=None):
        """The visible area as RGB, ``uint8[200, 640, 3]``."""
        return np.take(PALETTE, self.frame_indices(frame), axis=0)

    def frame_doubled(self, frame=None):
        """``frame()`` with every line doubled: ``uint8[400, 640, 3]``,
        close to the 4:3 shape of the real screen."""
        return np.repeat(self.frame(frame), 2, axis=0)

    def _geometry(self, max_columns):
        r = self.crtc
        scanlines = r[9] + 1
        lines = min(FRAME_HEIGHT, r[6] * scanlines)
        rows = -(-lines // scanlines)
        columns = min(r[1], max_columns)
        return scanlines, lines, rows, columns

    def _render_text(self, frame):
        hires = bool(self.mode & MODE_HIRES_TEXT)
        scanlines, lines, rows, columns = self._geometry(80 if hires else 40)
        if lines <= 0 or columns <= 0:
            return np.zeros((0, 0), dtype=np.uint8)
        chars, attrs = self._cells(self.display_address(), columns, rows,
                                   stride=self.crtc[1])
        fg = attrs & 0x0F
        if self.mode & MODE_BLINK:
            bg = (attrs >> 4) & 0x07
            _, char_on = self.blink_phase(frame)
            if not char_on:
                fg = np.where(attrs & 0x80, bg, fg)
        else:
            bg = attrs >> 4
        y = np.arange(lines)
        crow = y // scanlines
        ra = y % scanlines
        bits = font_bits()[chars[crow], (ra & 7)[:, None]]   # lines, cols, 8
        img = np.where(bits, fg[crow][:, :, None], bg[crow][:, :, None])
        cur = self.cursor(frame)
        if cur["visible"]:
            start, end = cur["start_scanline"], cur["end_scanline"]
            cell_lines = np.arange(scanlines)
            if start <= end:
                shown = (cell_lines >= start) & (cell_lines <= end)
            else:                      # MC6845: the cursor wraps round
                shown = (cell_lines >= start) | (cell_lines <= end)
            col = cur["column"]
            if col < columns:
                ys = cur["row"] * scanlines + np.nonzero(shown)[0]
                ys = ys[ys < lines]
                img[ys, col, :] = fg[cur["row"], col]
        img = img.reshape(lines, columns * 8)
        if not hires:
            img = np.repeat(img, 2, axis=1)
        return img.astype(np.uint8)

    def _graphics_bytes(self, columns, lines, scanlines):
        """uint8[lines, columns*2]: CRTC address MA and row address RA map to
        VRAM byte RA0 << 13 | (MA & 0FFFh) << 1 | byte."""
        y = np.arange(lines)
        crow = y // scanlines
        ra = y % scanlines
        ma = self.start_address() + crow[:, None] * self.crtc[1] + np.arange(columns)[None, :]
        base = ((ra[:, None] & 1) << 13) | ((ma & 0x0FFF) << 1)
        addr = np.stack([base, base | 1], axis=2).reshape(lines, columns * 2)
        return self.vram()[addr]

    def graphics_palette(self):
        """Palette indices for the four 320x200 pixel values."""
        bg = self.color & COLOR_BACKGROUND
        intense = 8 if self.color & COLOR_INTENSE else 0
        if self.mode & MODE_BW:
            colors = (3, 4, 7)                  # cyan, red, white
        elif self.color & COLOR_PALETTE1:
            colors = (3, 5, 7)                  # cyan, magenta, white
        else:
            colors = (2, 4, 6)                  # green, red, brown
        return np.array([bg] + [c | intense for c in colors], dtype=np.uint8)

    def _render_graphics(self):
        hires = bool(self.mode & MODE_HIRES_GFX)
        scanlines, lines, rows, columns = self._geometry(40)
        if lines <= 0 or columns <= 0:
            return np.zeros((0, 0), dtype=np.uint8)
        data = self._graphics_bytes(columns, lines, scanlines)
        if hires:
            bits = np.unpackbits(data, axis=1)
            return np.where(bits, np.uint8(self.color & 0x0F), np.uint8(0))
        pix = (data[:, :, None] >> _SHIFTS_2BPP) & 3
        pix = pix.reshape(lines, columns * 8)
        return np.repeat(self.graphics_palette()[pix], 2, axis=1)

    def write_png(self, path, double=False, frame=None):
        """Write the frame (or the line-doubled one) as a PNG file
        (:func:`pypc_core.video_frames.write_png`); returns its size."""
        return write_png(path, self.frame_doubled(frame) if double else self.frame(frame))

    # -- state ------------------------------------------------------------
    def get_state(self):
        return {
            "crtc": list(self.crtc),
            "index": self.index,
            "mode": self.mode,
            "color": self.color,
            "lp_trigger": self.lp_trigger,
            "epoch_dots": int(self.epoch_dots),
            "epoch_frame": int(self.epoch_frame),
        }

    def set_state(self, state):
        crtc = [int(v) & 0xFF for v in state["crtc"]]
        if len(crtc) != 18:
            raise ValueError("CGA state: crtc must hold 18 registers")
        self.crtc = crtc
        self.index = int(state["index"]) & 0x1F
        self.mode = int(state["mode"]) & 0xFF
        self.color = int(state["color"]) & 0xFF
        self.lp_trigger = bool(state["lp_trigger"])
        self.epoch_dots = int(state["epoch_dots"])
        self.epoch_frame = int(state["epoch_frame"])
        self._publish_raster()
        self._journal_mode()

