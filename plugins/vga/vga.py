"""IBM VGA: registers, 256 KiB of planar display memory, raster timing and a
numpy renderer that follows the registers (not a mode number).

The card is :class:`VGA`, built from parts that each say what they are:

* :mod:`.ports`  -- the register file and the I/O ports (:class:`~.ports.VgaPorts`)
* :mod:`.timing` -- dot clock, frame geometry, beam and status bits (:class:`~.timing.VgaTiming`)
* :mod:`.render` -- addressing, palette and the picture (:class:`~.render.VgaRender`)
* :mod:`.planar` -- the memory model the CPU core runs (window, latches, compiled ports)
* :mod:`.regs`   -- the register tables of the BIOS modes and the default palettes
* :mod:`.bios`   -- the card's INT 10h firmware

This module holds the card itself: its declaration, wiring and power-on
state, the CPU's memory path, the write journal, the mode facts, text for
people and the API, and its saved state.

Memory
    Four 64 KiB planes (``planes``, ``uint8[4, 65536]``) behind the
    A0000h-BFFFFh window; the access model is ``planar.py``.  The window
    decode, chain-4, odd/even, latches, read modes and write modes are all
    there and are shared by the CPU path and by the BIOS.
"""

import numpy as np

from pypc_core.device import Device, DeviceDeclaration, MemoryWindow

from . import planar
from .planar import ST_LATCH
from .ports import COMPILED_PORTS, PORTS, VgaPorts
from .regs import SEQ_COUNT, CRTC_COUNT, GC_COUNT, AC_COUNT, MODES, DACS
from .render import CURSOR_BLINK_FRAMES, CHAR_BLINK_FRAMES, VgaRender
from .timing import VgaTiming

WINDOW_BASE = 0xA0000
WINDOW_SIZE = 0x20000
TEXT_BASE = 0xB8000
ROM_BASE = 0xC0000
ROM_SIZE = 0x4000

_CP437 = [bytes([b]).decode("cp437") for b in range(256)]
TEXT_CHARS = tuple(" " if b < 0x20 else ("\u2302" if b == 0x7F else _CP437[b])
                   for b in range(256))

# BIOS modes with the register set of another (the colour-burst variants)
_SAME_REGISTERS = {0: 1, 2: 3, 5: 4}


class VGA(VgaPorts, VgaTiming, VgaRender, Device):
    """The card: its parts (ports, timing, renderer) are mixins over the
    state this class builds (``st`` and ``planes`` shared with the compiled
    handlers, the CRTC and attribute registers, the timing epoch)."""

    declaration = DeviceDeclaration(
        name="vga",
        ports=list(PORTS),
        # B8000h first: the text memory (``vram_bytes``) is what the CPU
        # sees there; A0000h-B7FFFh is the rest of the same window
        memory=[MemoryWindow(TEXT_BASE, WINDOW_BASE + WINDOW_SIZE - TEXT_BASE, "device"),
                MemoryWindow(WINDOW_BASE, TEXT_BASE - WINDOW_BASE, "device"),
                MemoryWindow(ROM_BASE, ROM_SIZE, "rom")],
        capabilities=["video", "vga", "text40", "text80", "g320", "g640",
                      "planar", "vga256"],
    )
    adapter = "VGA"

    def __init__(self, clock=None):
        self.clock = clock if clock is not None else (lambda: 0)
        self._rasters = {}              # status port -> the board's raster primitive
        self._board = None
        self._journal = None            # (WriteLog, handler context) while a journal records
        self.window = None              # the board's handler for A0000h-BFFFFh
        # registers the memory path needs, latches and planes: one buffer
        self.ctx, self.st, self.planes = planar.new_context()
        self.rom = None                 # bytes of the data ROM at C0000h (BIOS tables, fonts)
        self.reset()

    # -- wiring ------------------------------------------------------------------------
    def attach(self, board):
        """Claim the ports, map A0000h-BFFFFh to the compiled planar handler
        (every CPU access runs ``planar.cpu_read``/``cpu_write`` inside the
        core), answer the sequencer, DAC and graphics controller ports inside
        the core too (``planar.port_handler``), map the data ROM at C0000h, and
        put the raster fast path on the status ports."""
        from .bios import rom_image
        self._board = board
        self.clock = board.clock
        board.claim_ports(PORTS, read=self.port_read, write=self.port_write)
        handler = planar.window_handler()
        self.window = board.map_compiled(TEXT_BASE, WINDOW_BASE + WINDOW_SIZE - TEXT_BASE,
                                         handler, self.ctx)
        board.map_compiled(WINDOW_BASE, TEXT_BASE - WINDOW_BASE, handler, self.ctx)
        self.rom = rom_image()
        board.map_rom(ROM_BASE, self.rom)
        ports = planar.port_handler()
        for port in COMPILED_PORTS:
            board.compiled_port(port, ports, self.ctx)
        self._rasters = {0x3BA: board.raster(0x3BA), 0x3DA: board.raster(0x3DA)}
        self.epoch_dots = self._now_dots()
        self._publish()

    def reset(self):
        """Power-on: mode 3's registers and palette, blank text, and the 8x16
        font in plane 2 (character map 0).  A real VGA's own ROM code loads
        the font; this card has no x86 ROM, so the font is there from the
        start and a system BIOS that knows nothing of the VGA (``--bios``)
        still gets readable text."""
        from pypc_core.font.scaled import FONT_8X16
        self.planes[:] = 0
        glyphs = np.frombuffer(FONT_8X16, dtype=np.uint8).reshape(256, 16)
        self.planes[2, :256 * 32].reshape(256, 32)[:, :16] = glyphs
        self.st[:] = planar.new_state()
        mode = MODES[3]
        self.misc = mode.misc
        self.seq = [0x03] + list(mode.seq)
        self.crtc = list(mode.crtc)
        self.gc = list(mode.gc)
        self.ac = list(mode.ac)
        self.crtc_index = 0
        self.ac_index = 0x20            # palette address source set: the screen shows
        self.ac_flipflop = 0            # 0: next 3C0h write is an index
        self.feature = 0
        self.subsystem = 1
        self.dac[:64] = DACS["ega64"]()
        self.epoch_frame = 0
        self.epoch_dots = self._now_dots()
        self._timed_seq1 = int(self.seq[1])
        self._publish()

    # -- CPU memory path (Python entry; the compiled window calls planar directly) -------
    def mem_read(self, address):
        """A CPU read of linear ``address`` (A0000h-BFFFFh): loads the latches."""
        return int(planar.cpu_read(self.planes, self.st, address & 0xFFFFF))

    def mem_write(self, address, value):
        """A CPU write of byte ``value`` at linear ``address``."""
        if self._journal is not None:
            return self._journaled(lambda log, now: planar.journaled_write(
                self.planes, self.st, address & 0xFFFFF, value & 0xFF, log, now))
        planar.cpu_write(self.planes, self.st, address & 0xFFFFF, value & 0xFF)

    def mem_fill(self, address, count, value):
        """``count`` CPU writes of ``value`` from ``address`` upwards."""
        if self._journal is not None:
            return self._journaled(lambda log, now: planar.journaled_fill(
                self.planes, self.st, address & 0xFFFFF, count, value & 0xFF, log, now))
        planar.fill(self.planes, self.st, address & 0xFFFFF, count, value & 0xFF)

    def mem_fill_words(self, address, count, word):
        """``count`` CPU word writes of ``word`` (REP STOSW): low byte first."""
        if self._journal is not None:
            return self._journaled(lambda log, now: planar.journaled_fill_words(
                self.planes, self.st, address & 0xFFFFF, count, word & 0xFFFF, log, now))
        planar.fill_words(self.planes, self.st, address & 0xFFFFF, count, word & 0xFFFF)

    def mem_copy(self, dst, src, count):
        """``count`` CPU read/write pairs (latches go along, as REP MOVSB)."""
        if self._journal is not None:
            return self._journaled(lambda log, now: planar.journaled_copy(
                self.planes, self.st, dst & 0xFFFFF, src & 0xFFFFF, count, log, now))
        planar.copy(self.planes, self.st, dst & 0xFFFFF, src & 0xFFFFF, count)

    def mem_block_read(self, address, count):
        """``count`` CPU reads from ``address`` as bytes."""
        out = np.zeros(count, dtype=np.uint8)
        planar.read_block(self.planes, self.st, address & 0xFFFFF, out)
        return out.tobytes()

    def mem_block_write(self, address, data):
        arr = np.frombuffer(bytes(data), dtype=np.uint8)
        if self._journal is not None:
            return self._journaled(lambda log, now: planar.journaled_block(
                self.planes, self.st, address & 0xFFFFF, arr, log, now))
        planar.write_block(self.planes, self.st, address & 0xFFFFF, arr)

    # -- write journal (video.history) ---------------------------------------------------
    def journal_start(self, log):
        """Journal every text byte (kind ``TEXT``, its offset in ``text_view``)
        and plane 2 byte (kind ``FONT``) a write changes into ``log`` (a
        ``bus.journal.WriteLog``), CPU writes and the card's own (its
        firmware, ``mem_*``) alike, in program order -- while the graphics
        controller selects a text mode (graphics memory is not journaled).
        Until ``journal_stop`` the window calls ``planar.journal_handler``
        instead of ``planar.window_handler``."""
        self.journal_stop()
        if self._board is None:
            raise RuntimeError("vga: not attached to a board")
        ctx = np.zeros(planar.J_WORDS, dtype=np.int64)
        ctx[planar.J_PLANAR] = self.ctx.ctypes.data
        ctx[planar.J_LOG] = log.address
        ctx[planar.J_LOG_WORDS] = len(log.words)
        cf = planar.journal_handler()
        handlers = []
        for base, size in ((TEXT_BASE, WINDOW_BASE + WINDOW_SIZE - TEXT_BASE),
                           (WINDOW_BASE, TEXT_BASE - WINDOW_BASE)):
            h = self._board.overlay_compiled(base, size, cf, ctx, clocked=True)
            h.write_block = self._journal_block
            handlers.append(h)
        self._journal = (log, ctx, handlers)

    def journal_stop(self):
        if self._journal is not None:
            for base, size in ((TEXT_BASE, WINDOW_BASE + WINDOW_SIZE - TEXT_BASE),
                               (WINDOW_BASE, TEXT_BASE - WINDOW_BASE)):
                self._board.remove_overlay(base, size)
            self._journal = None

    def _journal_block(self, address, data):
        """The bus's Python-side writes into the window while journaling."""
        self.mem_block_write(address, np.asarray(data, dtype=np.uint8).tobytes())

    def _journaled(self, fn):
        """Run ``fn(log_words, cycle)``: writes journaled after whatever the
        CPU journaled before (the log is one ring: entries are in the order
        they are appended), at the machine's cycle now (these writes come
        from Python: firmware, the bus)."""
        fn(self._journal[0].words, self._board.clock())

    def video_firmware(self, service):
        """The card's INT 10h (its ROM's services) for the system BIOS's
        video ``service``; maps nothing, the data ROM is mapped at attach."""
        from .bios import VgaFirmware
        return VgaFirmware(service, self)

    # -- mode facts ----------------------------------------------------------------------
    def is_graphics(self):
        return bool(self.gc[6] & 1)

    def text_geometry(self):
        """(columns, rows, char_height) of the displayed text layout."""
        t = self._timing()
        msl = (self.crtc[9] & 0x1F) + 1
        scan = t["vdisp_lines"] // (2 if self.crtc[9] & 0x80 else 1)
        return self.crtc[1] + 1, max(1, scan // msl), msl

    def columns(self):
        return self.crtc[1] + 1 if not self.is_graphics() else (
            self.crtc[1] + 1 if self.gc[5] & 0x60 == 0 or self.gc[5] & 0x20
            else (self.crtc[1] + 1) // 2)

    def mode_name(self):
        """The API contract's names: Text40/Text80, and G320/G640 for
        graphics by the picture's width (``layout()`` tells more)."""
        if not self.is_graphics():
            return "Text80" if self.crtc[1] + 1 >= 80 else "Text40"
        return "G320" if self.resolution()[0] <= 360 else "G640"

    def layout(self):
        """"<width>x<height>x<colours>" of a graphics picture, or
        "<columns>x<rows> text"."""
        if not self.is_graphics():
            columns, rows, _ = self.text_geometry()
            return f"{columns}x{rows} text"
        w, h = self.resolution()
        return f"{w}x{h}x{self.colour_count()}"

    def mode_number(self):
        """The BIOS mode of the display (what ``video.text`` reports as
        ``graphics_mode`` for a VGA).  From the registers: 1/3 for 40/80-column
        text, 4, 6, 0Dh, 0Eh, 10h, 12h, 13h by picture and colours (unchained
        256 colours, "mode X", counts as 13h), None for other layouts.  The
        registers cannot tell mode 0 from 1, 2 from 3 or 5 from 4 (they differ
        only on a CGA's composite output); where the BIOS data area's mode
        byte (0449h) is one of those and agrees with the registers, it is the
        answer."""
        derived = self._registers_mode()
        bda = self._bda_mode()
        if bda is not None and derived is not None and _SAME_REGISTERS.get(bda) == derived:
            return bda
        return derived

    def _bda_mode(self):
        if self._board is None:
            return None
        try:
            return self._board.read_memory(0x449, 1)[0] & 0x7F
        except Exception:        # a board without memory (tests)
            return None

    def _registers_mode(self):
        if not self.is_graphics():
            return 3 if self.crtc[1] + 1 >= 80 else 1
        size = self.resolution()
        colours = self.colour_count()
        if colours == 256:
            return 0x13
        if colours == 4 and self.gc[5] & 0x20:
            return 4
        if colours == 2 and size == (640, 200):
            return 6
        return {(320, 200): 0x0D, (640, 200): 0x0E, (640, 350): 0x10,
                (640, 480): 0x12}.get(size)

    def colour_count(self):
        if self.ac[0x10] & 0x40:
            return 256
        if self.gc[5] & 0x20:
            return 4
        planes = bin(self.ac[0x12] & 0x0F).count("1")
        return 1 << planes

    def graphics_mode(self):
        """``mode_number()`` (0 where the layout is no BIOS mode)."""
        n = self.mode_number()
        return 0 if n is None else n

    def blink_enabled(self):
        return bool(self.ac[0x10] & 0x08)

    def blink_phase(self, frame=None):
        if frame is None:
            frame = self.frame_number()
        return ((frame // CURSOR_BLINK_FRAMES) % 2 == 0,
                (frame // CHAR_BLINK_FRAMES) % 2 == 0)

    def start_address(self):
        return (self.crtc[0x0C] << 8) | self.crtc[0x0D]

    def display_address(self):
        """Plane offset of the first displayed character (text: MA * 2)."""
        return self._mem_address(np.array([self.start_address()]), np.zeros(1, np.int64))[0]

    # -- text for people and tests ---------------------------------------------------------
    def _text_cells(self, start=None, rows=None):
        columns, nrows, _ = self.text_geometry()
        if rows is None:
            rows = nrows
        if start is None:
            start = self.start_address()
        stride = self.crtc[0x13] * 2
        ma = start + np.arange(rows)[:, None] * stride + np.arange(columns)[None, :]
        addr = self._mem_address(ma, np.zeros_like(ma))
        return self.planes[0][addr], self.planes[1][addr]

    def text_rows(self, start=None, trim=True):
        """The text rows of the displayed page (CP437 as Unicode, controls
        as spaces), trimmed on the right unless ``trim`` is False.  In a
        graphics mode: an empty list."""
        if self.is_graphics():
            rows = [""] * self.text_geometry()[1]
            return rows if trim else [" " * self.text_geometry()[0] for _ in rows]
        chars, _ = self._text_cells(start)
        rows = ["".join(TEXT_CHARS[c] for c in row) for row in chars.tolist()]
        return [r.rstrip(" ") for r in rows] if trim else rows

    def text(self):
        return "\n".join(self.text_rows())

    def vram_bytes(self):
        """``text_view()`` as bytes: the text memory at B8000h (the
        declaration's first window)."""
        return self.text_view().tobytes()

    def font_plane(self):
        """Plane 2, the character generator's fonts, as the card holds it
        (a live view: the video history journals it in text modes)."""
        return self.planes[2]

    def snapshot_parts(self, graphics_mode):
        """What ``video.snapshot`` keeps of this card beyond its text:
        ``(components, fields)`` -- the font plane, the graphics memory of
        mode 12h (the four planes one after another) or 13h (chain-4, in
        the guest's byte order) with its layout, and the cursor."""
        planes = np.asarray(self.planes).reshape(4, -1)[:, :0x10000]
        components = {"font": planes[2].tobytes()}
        fields = {}
        if graphics_mode == 0x12:
            components["graphics_vram"] = planes.tobytes()
            fields["graphics_vram_layout"] = "planes_0_to_3_concatenated"
        elif graphics_mode == 0x13:
            idx = np.arange(0x10000)
            components["graphics_vram"] = planes[idx & 3, idx & 0xFFFC].tobytes()
            fields["graphics_vram_layout"] = "chain4_guest_order"
        fields["cursor"] = {k: v for k, v in self.cursor().items() if v is not None}
        return components, fields

    def text_view(self):
        """The 32 KiB of text memory as the CPU sees it at B8000h with
        odd/even addressing (``uint8[32768]``: characters at even offsets
        from plane 0, attributes at odd offsets from plane 1), without
        touching the latches."""
        out = np.empty(0x8000, dtype=np.uint8)
        out[0::2] = self.planes[0, 0:0x8000:2]
        out[1::2] = self.planes[1, 0:0x8000:2]
        return out

    def text_page(self, page=None, display_address=None):
        """The ``video.text`` record of the API contract: 25 rows of 40 or
        80 cells read from the 32 KiB text memory (``text_view``) at a byte
        offset; pages are columns x 25 x 2 bytes (eight of 80 columns,
        sixteen of 40).  ``display_address`` selects a byte offset, ``page``
        a page; default: where the CRTC start address points (converted to
        bytes).  In graphics modes the cells are still the raw character
        interpretation of that memory.  Bad selections raise ValueError."""
        if page is not None and display_address is not None:
            raise ValueError("page and display_address are mutually exclusive")
        columns = 80 if self.crtc[1] + 1 >= 80 else 40
        rows = 25
        page_size = columns * rows * 2
        page_count = 0x8000 // page_size
        active_address = int(self.display_address()) & 0x7FFF
        if page is not None:
            if not 0 <= page < page_count:
                raise ValueError(f"page must be 0..{page_count - 1}")
            address = page * page_size
        elif display_address is not None:
            if not 0 <= display_address <= 0x7FFF:
                raise ValueError("display_address must be 0..0x7FFF")
            address = display_address
        else:
            address = active_address
        view = self.text_view()
        offsets = (address + 2 * np.arange(rows * columns)) & 0x7FFF
        chars = view[offsets].reshape(rows, columns)
        attrs = view[(offsets + 1) & 0x7FFF].reshape(rows, columns)
        text = [r.rstrip(" ") for r in
                ("".join(TEXT_CHARS[c] for c in row) for row in chars.tolist())]
        blink = self.blink_enabled()
        cells = [[{"code": c, "char": TEXT_CHARS[c], "attribute": a,
                   "foreground": a & 0x0F,
                   "background": (a >> 4) & (0x07 if blink else 0x0F),
                   "blink": bool(blink and a & 0x80)}
                  for c, a in zip(crow, arow)]
                 for crow, arow in zip(chars.tolist(), attrs.tolist())]
        return {
            "adapter": self.adapter,
            "columns": columns,
            "rows": rows,
            "page_size_bytes": page_size,
            "page_count": page_count,
            "page": address // page_size,
            "active_page": active_address // page_size,
            "is_active_page": address == active_address,
            "display_address": address,
            "mode": self.mode_name(),
            "graphics_mode": self.graphics_mode(),
            "text": text,
            "cells": cells,
            # the contract's cursor object: no row/column when off the screen
            "cursor": {k: v for k, v in self.cursor().items() if v is not None},
        }

    def font_bytes(self):
        """Plane 2 (the character maps), 64 KiB, as bytes."""
        return self.planes[2].tobytes()

    def graphics_bytes(self):
        """(layout, bytes) of graphics memory: in a 256-colour chain-4 mode
        the 64 KiB as the CPU sees them at A0000h ("chain4_guest_order"),
        otherwise the four planes one after the other
        ("planes_0_to_3_concatenated")."""
        if self.seq[4] & 0x08:
            guest = np.empty(0x10000, dtype=np.uint8)
            for p in range(4):
                guest[p::4] = self.planes[p, 0::4]
            return "chain4_guest_order", guest.tobytes()
        return "planes_0_to_3_concatenated", self.planes.tobytes()

    def cursor(self, frame=None):
        """Cursor state: CRTC address, shape, enable, blink phase, cell."""
        r = self.crtc
        address = (r[0x0E] << 8) | r[0x0F]
        start, end = r[0x0A] & 0x1F, r[0x0B] & 0x1F
        enabled = not r[0x0A] & 0x20 and start <= end
        if frame is None:
            frame = self.frame_number()
        phase = (frame // CURSOR_BLINK_FRAMES) % 2 == 0
        columns, rows, _ = self.text_geometry()
        stride = max(1, r[0x13] * 2)
        offset = (address - self.start_address()) & 0xFFFF
        row, column = divmod(offset, stride)
        on_screen = not self.is_graphics() and row < rows and column < columns
        return {
            "address": address,
            "start_scanline": start,
            "end_scanline": end,
            "enabled": bool(enabled),
            "visible": bool(enabled and phase and on_screen),
            "blink_phase": bool(phase),
            "column": int(column) if on_screen else None,
            "row": int(row) if on_screen else None,
        }

    def write_png(self, path, double=False, frame=None):
        """Write the frame (or ``frame_doubled()``) as a PNG file
        (:func:`pypc_core.video_frames.write_png`); returns its size."""
        from pypc_core.video_frames import write_png
        return write_png(path, self.frame_doubled(frame) if double else self.frame(frame))

    # -- state -------------------------------------------------------------------------
    def get_state(self):
        import base64
        import zlib
        self._check_timing()
        return {
            "planes": base64.b64encode(zlib.compress(self.planes.tobytes(), 6)).decode(),
            "latches": [int(v) for v in self.st[ST_LATCH:ST_LATCH + 4]],
            "misc": self.misc, "seq": [int(v) for v in self.seq],
            "crtc": list(self.crtc), "gc": [int(v) for v in self.gc], "ac": list(self.ac),
            "seq_index": self.seq_index, "crtc_index": self.crtc_index,
            "gc_index": self.gc_index, "ac_index": self.ac_index,
            "ac_flipflop": self.ac_flipflop, "feature": self.feature,
            "subsystem": self.subsystem,
            "dac": self.dac.reshape(-1).tolist(), "pel_mask": self.pel_mask,
            "dac_write_index": self.dac_write_index, "dac_read_index": self.dac_read_index,
            "dac_component": self.dac_component, "dac_state": self.dac_state,
            "dac_pending": list(self.dac_pending),
            "epoch_dots": int(self.epoch_dots), "epoch_frame": int(self.epoch_frame),
        }

    def set_state(self, state):
        """Restore ``get_state()``; a malformed state raises ValueError and
        changes nothing."""
        import base64
        import binascii
        import zlib
        try:
            planes = np.frombuffer(zlib.decompress(base64.b64decode(state["planes"])),
                                   dtype=np.uint8)
            seq = [int(v) & 0xFF for v in state["seq"]]
            crtc = [int(v) & 0xFF for v in state["crtc"]]
            gc = [int(v) & 0xFF for v in state["gc"]]
            ac = [int(v) & 0xFF for v in state["ac"]]
            dac = np.array([int(v) for v in state["dac"]], dtype=np.int64)
            latches = [int(v) & 0xFF for v in state["latches"]]
            pending = [int(v) & 0x3F for v in state["dac_pending"]]
            scalars = {k: int(state[k]) for k in (
                "misc", "seq_index", "crtc_index", "gc_index", "ac_index", "ac_flipflop",
                "feature", "subsystem", "pel_mask", "dac_write_index", "dac_read_index",
                "dac_component", "dac_state", "epoch_dots", "epoch_frame")}
        except (KeyError, TypeError, ValueError, zlib.error, binascii.Error) as exc:
            raise ValueError(f"VGA state: {exc!r}") from exc
        if (planes.size != 4 * planar.PLANE_SIZE or len(seq) != SEQ_COUNT
                or len(crtc) != CRTC_COUNT or len(gc) != GC_COUNT or len(ac) != AC_COUNT
                or dac.size != 768 or len(latches) != 4 or len(pending) != 3):
            raise ValueError("VGA state: wrong register or memory sizes")
        self.planes[:] = planes.reshape(4, planar.PLANE_SIZE)
        self.seq, self.crtc, self.gc, self.ac = seq, crtc, gc, ac
        self.misc = scalars["misc"] & 0xFF
        self.seq_index = scalars["seq_index"] & 7
        self.crtc_index = scalars["crtc_index"] & 0x3F
        self.gc_index = scalars["gc_index"] & 0x0F
        self.ac_index = scalars["ac_index"] & 0x3F
        self.ac_flipflop = scalars["ac_flipflop"] & 1
        self.feature = scalars["feature"] & 0xFF
        self.subsystem = scalars["subsystem"] & 1
        self.dac[:] = (dac & 0x3F).reshape(256, 3)
        self.pel_mask = scalars["pel_mask"] & 0xFF
        self.dac_write_index = scalars["dac_write_index"] & 0xFF
        self.dac_read_index = scalars["dac_read_index"] & 0xFF
        self.dac_component = scalars["dac_component"] % 3
        self.dac_state = scalars["dac_state"] & 3
        self.dac_pending = pending
        self.epoch_dots = scalars["epoch_dots"]
        self.epoch_frame = scalars["epoch_frame"]
        self._timed_seq1 = int(self.seq[1])
        self.st[ST_LATCH:ST_LATCH + 4] = latches
        self._publish()
