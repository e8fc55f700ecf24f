"""IBM VGA: registers, 256 KiB of planar display memory, raster timing and a
numpy renderer that follows the registers (not a mode number).

Ports
    3C0h  attribute controller index/data (a flip-flop; reading 3DAh/3BAh
          resets it to "index"); 3C1h reads the indexed register
    3C2h  write: miscellaneous output; read: input status 0 (bit 4: switch
          sense, a colour monitor)
    3C3h  video subsystem enable (bit 0), read back
    3C4h/3C5h  sequencer index/data (registers 0-4)
    3C6h  DAC pixel mask; 3C7h write: DAC read index, read: DAC state;
    3C8h  DAC write index; 3C9h  DAC data (R, G, B, auto-increment)
    3CAh  feature control (read); 3CCh miscellaneous output (read)
    3CEh/3CFh  graphics controller index/data (registers 0-8)
    3D4h/3D5h  CRTC index/data (3B4h/3B5h while misc output bit 0 is clear)
    3DAh  input status 1 (3BAh in mono): bit 0 display disabled (blanking),
          bit 3 vertical retrace; writes go to feature control

    The CRTC's write protect (register 11h bit 7) guards registers 0-7
    (except the line-compare bit of register 7).  The sequencer, DAC and
    graphics controller ports (3C4h-3C9h, 3CEh/3CFh) are answered inside the
    CPU core (``planar.port_handler``, registers kept in ``st``), the status
    port by the board's raster primitive while the attribute flip-flop is at
    "index"; everything else is a Python handler here.

Memory
    Four 64 KiB planes (``planes``, ``uint8[4, 65536]``) behind the
    A0000h-BFFFFh window; the access model is ``planar.py``.  The window
    decode, chain-4, odd/even, latches, read modes and write modes are all
    there and are shared by the CPU path and by the BIOS.

Timing
    Dot clock 25.175 MHz or 28.322 MHz (misc output bits 2-3), 8 or 9 dots a
    character (sequencer 1 bit 0), dots halved by sequencer 1 bit 3.  A line
    is CRTC 0 + 5 characters, a frame CRTC 6 (+ overflow) + 2 lines; display
    ends at CRTC 12h (+ overflow) + 1 lines and CRTC 1 + 1 characters;
    vertical retrace runs from CRTC 10h (+ overflow) until the line whose
    low four bits equal CRTC 11h bits 0-3.  Emulated time is CPU cycles at
    14.31818 MHz / 3, so mode 3 runs at 70.1 Hz and mode 12h at 59.9 Hz of
    emulated time.

Rendering (``frame()``)
    Every scan line is generated from the CRTC (start address, offset,
    maximum scan line, double scan, line compare, byte/word/doubleword
    addressing, CGA-compatible row-scan substitution of address bits 13/14),
    the sequencer (8/9 dots, character maps), the graphics controller
    (graphics/text, shift register modes), the attribute controller
    (palette, mode control, colour plane enable, colour select) and the DAC.
    The picture is returned at the mode's own resolution: a line the CRTC
    repeats (double scan, or a graphics row of several identical scan lines)
    is given once, so mode 13h is 320x200, mode 12h 640x480 and mode 3
    720x400.  Horizontal pel panning (AC 13h, with the split-screen
    compatibility bit of AC 10h) and the preset row scan (CRTC 8) shift the
    picture as on the card.  Not modelled: cursor skew and the byte-panning
    bits of CRTC 8, monochrome attribute decoding (mode 7), the vertical retrace
    interrupt.
"""

import numpy as np

from pypc_core.device import Device, DeviceDeclaration, MemoryWindow

from . import planar
from .planar import ST_LATCH
from .regs import SEQ_COUNT, CRTC_COUNT, GC_COUNT, AC_COUNT, MODES, DACS

WINDOW_BASE = 0xA0000
WINDOW_SIZE = 0x20000
TEXT_BASE = 0xB8000
ROM_BASE = 0xC0000
ROM_SIZE = 0x4000

CPU_HZ_X3 = 14_318_180          # three CPU cycles per 14.31818 MHz tick
DOT_CLOCKS = (25_175_000, 28_322_000, 25_175_000, 25_175_000)

STATUS_DISPLAY_OFF = 0x01
STATUS_VRETRACE = 0x08

CURSOR_BLINK_FRAMES = 8         # cursor on 8 frames, off 8
CHAR_BLINK_FRAMES = 16          # blinking characters on 16 frames, off 16

# answered inside the core by planar.port_handler (sequencer, DAC, graphics controller)
COMPILED_PORTS = (0x3C4, 0x3C5, 0x3C6, 0x3C7, 0x3C8, 0x3C9, 0x3CE, 0x3CF)
PORTS = ([0x3B4, 0x3B5, 0x3BA] + list(range(0x3C0, 0x3D0))
         + [0x3D4, 0x3D5, 0x3DA])

# registers CRTC 11h bit 7 write-protects
_CRTC_PROTECTED = range(0, 8)

_CP437 = [bytes([b]).decode("cp437") for b in range(256)]
TEXT_CHARS = tuple(" " if b < 0x20 else ("\u2302" if b == 0x7F else _CP437[b])
                   for b in range(256))

_CGA_SHIFTS = np.array([6, 4, 2, 0], dtype=np.uint8)

# BIOS modes with the register set of another (the colour-burst variants)
_SAME_REGISTERS = {0: 1, 2: 3, 5: 4}


class VGA(Device):
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

    # -- the sequencer, graphics controller and DAC live in ``st`` ----------------------
    # (their ports are answered inside the core by ``planar.port_handler``)
    @property
    def seq(self):
        """Sequencer registers 0-4 (a view of ``st``)."""
        return self.st[planar.ST_SEQ:planar.ST_SEQ + planar.SEQ_COUNT]

    @seq.setter
    def seq(self, values):
        self.st[planar.ST_SEQ:planar.ST_SEQ + planar.SEQ_COUNT] = [int(v) & 0xFF for v in values]
        planar.derive(self.st)

    @property
    def gc(self):
        """Graphics controller registers 0-8 (a view of ``st``)."""
        return self.st[planar.ST_GC:planar.ST_GC + planar.GC_COUNT]

    @gc.setter
    def gc(self, values):
        self.st[planar.ST_GC:planar.ST_GC + planar.GC_COUNT] = [int(v) & 0xFF for v in values]
        planar.derive(self.st)

    @property
    def seq_index(self):
        return int(self.st[planar.ST_SEQ_INDEX])

    @seq_index.setter
    def seq_index(self, value):
        self.st[planar.ST_SEQ_INDEX] = int(value) & 0x07

    @property
    def gc_index(self):
        return int(self.st[planar.ST_GC_INDEX])

    @gc_index.setter
    def gc_index(self, value):
        self.st[planar.ST_GC_INDEX] = int(value) & 0x0F

    @property
    def dac(self):
        """The 256 DAC entries, ``int64[256, 3]`` of 6-bit values (a view of ``st``)."""
        return self.st[planar.ST_DAC:planar.ST_DAC + 768].reshape(256, 3)

    def _st_scalar(name, index, mask):
        def get(self):
            return int(self.st[index])

        def put(self, value):
            self.st[index] = int(value) & mask
        return property(get, put, doc=f"{name} (kept in ``st`` for the compiled ports)")

    pel_mask = _st_scalar("DAC pixel mask (3C6h)", planar.ST_PEL_MASK, 0xFF)
    dac_write_index = _st_scalar("DAC write index (3C8h)", planar.ST_DAC_WRITE, 0xFF)
    dac_read_index = _st_scalar("DAC read index (3C7h)", planar.ST_DAC_READ, 0xFF)
    dac_component = _st_scalar("DAC component in progress", planar.ST_DAC_COMPONENT, 3)
    dac_state = _st_scalar("DAC state (3C7h read)", planar.ST_DAC_STATE, 3)
    del _st_scalar

    @property
    def dac_pending(self):
        return [int(v) for v in self.st[planar.ST_DAC_PENDING:planar.ST_DAC_PENDING + 3]]

    @dac_pending.setter
    def dac_pending(self, values):
        self.st[planar.ST_DAC_PENDING:planar.ST_DAC_PENDING + 3] = [int(v) & 0x3F
                                                                    for v in values]

    def _check_timing(self):
        """Sequencer 1 written inside the core (8/9 dots, dot clock halved)
        changes the frame: re-time from the value the timing was last
        computed with, keeping the frame count and phase."""
        now = int(self.st[planar.ST_SEQ + 1])
        if (now ^ self._timed_seq1) & 0x09:
            self.st[planar.ST_SEQ + 1] = self._timed_seq1
            self._retime(lambda: self.st.__setitem__(planar.ST_SEQ + 1, now))
            self._publish()
        self._timed_seq1 = now

    # -- CPU memory path (Python entry; the compiled window calls planar directly) -------
    def mem_read(self, address):
        """A CPU read of linear ``address`` (A0000h-BFFFFh): loads the latches."""
        return int(planar.cpu_read(self.planes, self.st, address & 0xFFFFF))

    def mem_write(self, address, value):
        """A CPU write of byte ``value`` at linear ``address``."""
        if self._journal is not None:
            return self._journaled(1, lambda log, i, n: planar.journaled_write(
                self.planes, self.st, address & 0xFFFFF, value & 0xFF, log))
        planar.cpu_write(self.planes, self.st, address & 0xFFFFF, value & 0xFF)

    def mem_fill(self, address, count, value):
        """``count`` CPU writes of ``value`` from ``address`` upwards."""
        if self._journal is not None:
            return self._journaled(count, lambda log, i, n: planar.journaled_fill(
                self.planes, self.st, (address + i) & 0xFFFFF, n, value & 0xFF, log))
        planar.fill(self.planes, self.st, address & 0xFFFFF, count, value & 0xFF)

    def mem_fill_words(self, address, count, word):
        """``count`` CPU word writes of ``word`` (REP STOSW): low byte first."""
        if self._journal is not None:
            return self._journaled(count, lambda log, i, n: planar.journaled_fill_words(
                self.planes, self.st, (address + 2 * i) & 0xFFFFF, n, word & 0xFFFF, log),
                per=2)
        planar.fill_words(self.planes, self.st, address & 0xFFFFF, count, word & 0xFFFF)

    def mem_copy(self, dst, src, count):
        """``count`` CPU read/write pairs (latches go along, as REP MOVSB)."""
        if self._journal is not None:
            return self._journaled(count, lambda log, i, n: planar.journaled_copy(
                self.planes, self.st, (dst + i) & 0xFFFFF, (src + i) & 0xFFFFF, n, log))
        planar.copy(self.planes, self.st, dst & 0xFFFFF, src & 0xFFFFF, count)

    def mem_block_read(self, address, count):
        """``count`` CPU reads from ``address`` as bytes."""
        out = np.zeros(count, dtype=np.uint8)
        planar.read_block(self.planes, self.st, address & 0xFFFFF, out)
        return out.tobytes()

    def mem_block_write(self, address, data):
        arr = np.frombuffer(bytes(data), dtype=np.uint8)
        if self._journal is not None:
            return self._journaled(len(arr), lambda log, i, n: planar.journaled_block(
                self.planes, self.st, (address + i) & 0xFFFFF, arr[i:i + n], log))
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
            h = self._board.overlay_compiled(base, size, cf, ctx)
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

    def _journaled(self, count, fn, per=1):
        """Run ``fn(log_words, start, n)`` over ``count`` items in chunks the
        log has room for (an item writes ``per`` bytes, each up to three
        entries), draining it (``flush``) before, between and after, so the
        entries follow the CPU's in order."""
        log = self._journal[0]
        per_item = 3 * per
        i = 0
        log.flush_now()
        while i < count:
            if log.room() < per_item:
                log.flush_now()
            n = min(count - i, max(1, log.room() // per_item))
            fn(log.words, i, n)
            i += n
        log.flush_now()

    def video_firmware(self, service):
        """The card's INT 10h (its ROM's services) for the system BIOS's
        video ``service``; maps nothing, the data ROM is mapped at attach."""
        from .bios import VgaFirmware
        return VgaFirmware(service, self)

    # -- ports -----------------------------------------------------------------------
    @property
    def mono(self):
        return not self.misc & 1

    def port_read(self, port):
        self._check_timing()
        if port in (0x3B4, 0x3B5, 0x3BA) and not self.mono:
            return 0xFF
        if port in (0x3D4, 0x3D5, 0x3DA) and self.mono:
            return 0xFF
        if port in (0x3B4, 0x3D4):
            return self.crtc_index
        if port in (0x3B5, 0x3D5):
            i = self.crtc_index
            return self.crtc[i] if i < CRTC_COUNT else 0xFF
        if port in (0x3BA, 0x3DA):
            if self.ac_flipflop:
                self.ac_flipflop = 0
                self._publish()
            return self.status()
        if port == 0x3C0:
            return self.ac_index
        if port == 0x3C1:
            i = self.ac_index & 0x1F
            return self.ac[i] if i < AC_COUNT else 0
        if port == 0x3C2:
            return 0x10                          # switch sense: a colour monitor
        if port == 0x3C3:
            return self.subsystem
        if port in (0x3C4, 0x3C5, 0x3C6, 0x3C7, 0x3C8, 0x3C9, 0x3CE, 0x3CF):
            return int(planar.io_read(self.st, port))
        if port == 0x3CA:
            return self.feature
        if port == 0x3CC:
            return self.misc
        return 0xFF

    def port_write(self, port, value):
        value &= 0xFF
        self._check_timing()
        if port in (0x3B4, 0x3B5, 0x3BA) and not self.mono:
            return
        if port in (0x3D4, 0x3D5, 0x3DA) and self.mono:
            return
        if port in (0x3B4, 0x3D4):
            self.crtc_index = value & 0x3F
        elif port in (0x3B5, 0x3D5):
            self.crtc_write(self.crtc_index, value)
        elif port in (0x3BA, 0x3DA):
            self.feature = value
        elif port == 0x3C0:
            if self.ac_flipflop == 0:
                self.ac_index = value & 0x3F
            else:
                i = self.ac_index & 0x1F
                if i < AC_COUNT:
                    self.ac[i] = value & (0x3F if i < 16 else 0xFF)
            self.ac_flipflop ^= 1
            self._publish()
        elif port == 0x3C2:
            self._retime(lambda: setattr(self, "misc", value))
            self._publish()
        elif port == 0x3C3:
            self.subsystem = value & 1
        elif port in (0x3C4, 0x3C5, 0x3C6, 0x3C7, 0x3C8, 0x3C9, 0x3CE, 0x3CF):
            planar.io_write(self.st, port, value)
            if port == 0x3C5 and self.seq_index == 1:
                self._check_timing()

    def crtc_write(self, i, value):
        if i >= CRTC_COUNT:
            return
        if self.crtc[0x11] & 0x80 and i in _CRTC_PROTECTED:
            if i != 7:
                return
            value = (self.crtc[7] & ~0x10) | (value & 0x10)
        if i in (0, 1, 6, 7, 9, 0x10, 0x11, 0x12) and value != self.crtc[i]:
            self._retime(lambda: self.crtc.__setitem__(i, value))
            self._publish()
        else:
            self.crtc[i] = value

    # -- timing ------------------------------------------------------------------------
    def _dot_hz(self):
        return DOT_CLOCKS[(self.misc >> 2) & 3]

    def _now_dots(self, cycle=None):
        if cycle is None:
            try:
                cycle = int(self.clock())
            except Exception:     # the machine's clock may not run yet at creation
                cycle = 0
        num, den = self._dot_ratio()
        return cycle * num // den

    def _timing(self):
        r = self.crtc
        ovf = r[7]
        char_dots = 8 if self.seq[1] & 1 else 9
        if self.seq[1] & 0x08:
            char_dots *= 2
        line_dots = (r[0] + 5) * char_dots
        vtotal = r[6] + ((ovf & 1) << 8) + ((ovf & 0x20) << 4) + 2
        vde = r[0x12] + ((ovf & 2) << 7) + ((ovf & 0x40) << 3) + 1
        vrs = r[0x10] + ((ovf & 4) << 6) + ((ovf & 0x80) << 2)
        vre = r[0x11] & 0x0F
        length = (vre - vrs) & 0x0F or 16
        return {
            "char_dots": char_dots,
            "line_dots": line_dots,
            "hdisp_dots": (r[1] + 1) * char_dots,
            "vtotal_lines": vtotal,
            "frame_dots": line_dots * vtotal,
            "vdisp_lines": vde,
            "vsync_start": vrs,
            "vsync_end": vrs + length,
        }

    def _retime(self, change):
        """Apply a change of clock or geometry keeping the frame count and the
        position inside the frame (as the CGA does)."""
        t = self._timing()
        now = self._now_dots()
        elapsed = max(0, now - self.epoch_dots)
        frame = self.epoch_frame + elapsed // t["frame_dots"]
        pos = elapsed % t["frame_dots"]
        change()
        t = self._timing()
        pos = min(pos, t["frame_dots"] - 1)
        self.epoch_frame = frame
        self.epoch_dots = self._now_dots() - pos

    def _dot_ratio(self):
        """(num, den): dots = cycle * num // den, as small as exact."""
        from math import gcd
        num, den = 3 * self._dot_hz(), CPU_HZ_X3
        g = gcd(num, den)
        return num // g, den // g

    def _publish(self):
        """Let the core answer the status port from the cycle counter.  Only
        while the attribute flip-flop is at "index": a status read must reset
        it, which only the Python handler does, so while it is at "data" the
        reads come here."""
        if not self._rasters:
            return
        active = 0x3BA if self.mono else 0x3DA
        for port, raster in self._rasters.items():
            if port == active and self.ac_flipflop == 0:
                t = self._timing()
                num, den = self._dot_ratio()
                raster.set(self.epoch_dots, t["line_dots"], t["hdisp_dots"],
                           t["frame_dots"], t["vdisp_lines"], t["vsync_start"],
                           t["vsync_end"], 0, STATUS_DISPLAY_OFF, STATUS_VRETRACE,
                           num=num, den=den)
            else:
                raster.disable()

    def beam(self, cycle=None):
        self._check_timing()
        t = self._timing()
        elapsed = self._now_dots(cycle) - self.epoch_dots
        frame = self.epoch_frame + elapsed // t["frame_dots"]
        pos = elapsed % t["frame_dots"]
        line, dot = divmod(pos, t["line_dots"])
        return {"frame": int(frame), "line": int(line), "dot": int(dot),
                "display": bool(line < t["vdisp_lines"] and dot < t["hdisp_dots"]),
                "vsync": bool(t["vsync_start"] <= line < t["vsync_end"])}

    def status(self, cycle=None):
        """Input status 1 (3DAh) at ``cycle`` (default: now)."""
        b = self.beam(cycle)
        value = 0
        if not b["display"]:
            value |= STATUS_DISPLAY_OFF
        if b["vsync"]:
            value |= STATUS_VRETRACE
        return value

    def frame_number(self, cycle=None):
        return self.beam(cycle)["frame"]

    def frame_cycles(self):
        t = self._timing()
        return t["frame_dots"] * CPU_HZ_X3 / (3 * self._dot_hz())

    def frame_rate_hz(self):
        """Frames per emulated second: the dot clock over the frame's dots
        (70.09 in the 400-line modes, 59.94 in the 480-line ones)."""
        return self._dot_hz() / self._timing()["frame_dots"]

    def pixel_aspect(self):
        """Width over height of one ``frame()`` pixel: the picture fills a
        4:3 screen (720x400 text 20/27, 320x200 5/6, 640x480 1)."""
        from pypc_core.video_frames import aspect_for
        w, h = self.resolution()
        return aspect_for(w, h)

    def next_event(self):
        return None

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

    # -- addressing ---------------------------------------------------------------------
    def _mem_address(self, ma, ra):
        """Plane offsets for CRTC addresses ``ma`` at row scan ``ra``."""
        ma = np.asarray(ma, dtype=np.int64) & 0xFFFF
        r = self.crtc
        if r[0x14] & 0x40:                                  # doubleword
            addr = ((ma << 2) | ((ma >> 14) & 3)) & 0xFFFF
        elif not r[0x17] & 0x40:                            # word
            bit = (ma >> 15) & 1 if r[0x17] & 0x20 else (ma >> 13) & 1
            addr = ((ma << 1) | bit) & 0xFFFF
        else:                                               # byte
            addr = ma
        ra = np.asarray(ra, dtype=np.int64)
        if not r[0x17] & 0x01:
            addr = (addr & ~0x2000) | ((ra & 1) << 13)
        if not r[0x17] & 0x02:
            addr = (addr & ~0x4000) | (((ra >> 1) & 1) << 14)
        return addr

    def _scanlines(self):
        """Per displayed native line: (row start MA, row scan, below the
        split) arrays."""
        r = self.crtc
        t = self._timing()
        vde = t["vdisp_lines"]
        dbl = 2 if r[9] & 0x80 else 1
        msl = (r[9] & 0x1F) + 1
        lc = r[0x18] + ((r[7] & 0x10) << 4) + ((r[9] & 0x40) << 3)
        offset = r[0x13] * 2
        line = np.arange(vde, dtype=np.int64)
        split = line > lc
        rel = np.where(split, line - (lc + 1), line) // dbl
        rel = np.where(split, rel, rel + (r[8] & 0x1F))       # preset row scan
        row = rel // msl
        ra = rel % msl
        base = np.where(split, 0, self.start_address())
        ma = base + row * offset
        graphics = self.is_graphics()
        uses_ra = (not graphics) or (r[0x17] & 3) != 3
        step = dbl * (1 if uses_ra else msl)
        if lc < vde and step > 1:
            # a split screen may not fall on a step: keep every line
            step = 1 if (lc + 1) % step else step
        return ma[::step], ra[::step], split[::step]

    def _pan(self, split):
        """Per line, the horizontal pel panning in pixels (AC 13h); lines
        below a split are not panned when AC 10h bit 5 says so."""
        v = self.ac[0x13] & 0x0F
        if not self.is_graphics():
            pan = (v + 1) % 9 if not self.seq[1] & 1 else v & 7
        elif self.ac[0x10] & 0x40 or self.gc[5] & 0x40:
            pan = (v >> 1) & 3
        else:
            pan = v & 7
        lines = np.full(len(split), pan, dtype=np.int64)
        if self.ac[0x10] & 0x20:
            lines[split] = 0
        return lines

    @staticmethod
    def _panned(img, pan, width):
        """``img`` (lines, width + one character) shifted left by ``pan``."""
        if not pan.any():
            return img[:, :width]
        idx = pan[:, None] + np.arange(width)[None, :]
        return np.take_along_axis(img, idx, axis=1)

    def resolution(self):
        """(width, height) of ``frame()``."""
        ma, _, _ = self._scanlines()
        chars = self.crtc[1] + 1
        if not self.is_graphics():
            return chars * (8 if self.seq[1] & 1 else 9), len(ma)
        return chars * self._pixels_per_char(), len(ma)

    def _pixels_per_char(self):
        if self.ac[0x10] & 0x40 or self.gc[5] & 0x40:
            return 4
        return 8

    # -- palette -------------------------------------------------------------------------
    def dac_rgb(self):
        """The 256 DAC entries as 8-bit RGB (6-bit values scaled to 0-255)."""
        return ((self.dac.astype(np.uint16) * 255 + 31) // 63).astype(np.uint8)

    def attribute_lut(self):
        """DAC index for each 4-bit pixel value (colour plane enable,
        palette registers, P5-4 select and colour select applied)."""
        ac = self.ac
        values = np.arange(16) & (ac[0x12] & 0x0F)
        pal = np.array(ac[:16], dtype=np.int64)[values]
        select = ac[0x14]
        if ac[0x10] & 0x80:
            pal = (pal & 0x0F) | ((select & 3) << 4)
        pal = (pal & 0x3F) | ((select & 0x0C) << 4)
        return pal.astype(np.int64)

    def _to_rgb(self, dac_index):
        idx = np.asarray(dac_index, dtype=np.uint8)
        if self.pel_mask != 0xFF:
            idx = idx & np.uint8(self.pel_mask)
        return np.take(self.dac_rgb(), idx, axis=0)

    # -- rendering -----------------------------------------------------------------------
    def frame_indices(self, frame=None):
        """The picture as DAC indices, ``uint8[height, width]``."""
        w, h = self.resolution()
        if not self.ac_index & 0x20 or self.seq[1] & 0x20 or h == 0:
            return np.full((h, w), self._overscan_index(), dtype=np.uint8)
        if frame is None:
            frame = self.frame_number()
        if self.is_graphics():
            img = self._render_graphics()
        else:
            img = self._render_text(frame)
        return img.astype(np.uint8)

    def _overscan_index(self):
        return 0 if self.ac_index & 0x20 == 0 else self.ac[0x11]

    def frame_key(self, frame=None):
        """Bytes that determine ``frame(frame)`` exactly: the four planes,
        every register the renderer reads (sequencer, CRTC, graphics and
        attribute controllers, misc output, the attribute index's display
        bit, PEL mask), the DAC and the blink phases (equal keys, equal
        pictures; recordings skip rendering an unchanged frame)."""
        if frame is None:
            frame = self.frame_number()
        phases = (int(frame) // CURSOR_BLINK_FRAMES) % 4    # cursor 8, characters 16
        regs = (bytes(int(v) & 0xFF for v in self.seq) + bytes(int(v) & 0xFF for v in self.crtc)
                + bytes(int(v) & 0xFF for v in self.gc) + bytes(int(v) & 0xFF for v in self.ac)
                + bytes((self.misc & 0xFF, self.ac_index & 0xFF, self.pel_mask & 0xFF, phases)))
        return self.planes.tobytes() + self.dac.tobytes() + regs

    def frame(self, frame=None):
        """The picture as RGB, ``uint8[height, width, 3]`` at the mode's own
        resolution (see ``resolution()``)."""
        return self._to_rgb(self.frame_indices(frame))

    def frame_doubled(self, frame=None):
        """``frame()`` with its pixels doubled where the monitor shows them
        doubled: lines of 200-line modes, dots of 320/360-wide ones (so
        every mode comes out 640/720 x 350-480, about its shape on screen)."""
        img = self.frame(frame)
        if img.shape[0] and img.shape[0] < 300:
            img = np.repeat(img, 2, axis=0)
        if img.shape[1] and img.shape[1] <= 360:
            img = np.repeat(img, 2, axis=1)
        return img

    def _fetch(self, ma_rows, ra_rows, chars):
        """Plane bytes for every character clock: uint8[4, lines, chars]."""
        ma = ma_rows[:, None] + np.arange(chars)[None, :]
        addr = self._mem_address(ma, np.broadcast_to(ra_rows[:, None], ma.shape))
        return self.planes[:, addr]

    def _render_graphics(self):
        ma, ra, split = self._scanlines()
        shown = self.crtc[1] + 1
        pan = self._pan(split)
        chars = shown + (1 if pan.any() else 0)
        data = self._fetch(ma, ra, chars)            # 4, lines, chars
        lines = len(ma)
        ac10 = self.ac[0x10]
        gc5 = self.gc[5]
        if ac10 & 0x40 or gc5 & 0x40:
            # 256 colours: the four planes give four pixels of a character clock
            pix = np.transpose(data, (1, 2, 0)).reshape(lines, chars * 4)
            return self._panned(pix, pan, shown * 4)
        if gc5 & 0x20:
            # CGA-compatible interleave: plane 0 gives pixels 0-3, plane 1
            # pixels 4-7, 2 bits each (planes 2/3 likewise for bits 2-3)
            lo = np.concatenate([(data[0][:, :, None] >> _CGA_SHIFTS) & 3,
                                 (data[1][:, :, None] >> _CGA_SHIFTS) & 3], axis=2)
            hi = np.concatenate([(data[2][:, :, None] >> _CGA_SHIFTS) & 3,
                                 (data[3][:, :, None] >> _CGA_SHIFTS) & 3], axis=2)
            values = (lo | (hi << 2)).reshape(lines, chars * 8)
        else:
            b = [np.unpackbits(data[p], axis=1) for p in range(4)]   # lines, chars*8
            values = b[0] | (b[1] << 1) | (b[2] << 2) | (b[3] << 3)
        lut = self.attribute_lut().astype(np.uint8)
        return lut[self._panned(values, pan, shown * 8)]

    def font_offsets(self):
        """Plane-2 offsets of character maps A and B (sequencer 3)."""
        s3 = self.seq[3]
        a = ((s3 >> 5) & 1) << 2 | ((s3 >> 2) & 3)
        b = ((s3 >> 4) & 1) << 2 | (s3 & 3)

        def off(v):
            return (v & 3) * 0x4000 + (v >> 2) * 0x2000
        return off(a), off(b)

    def _render_text(self, frame):
        ma, ra, split = self._scanlines()
        shown = self.crtc[1] + 1
        pan = self._pan(split)
        chars = shown + (1 if pan.any() else 0)
        data = self._fetch(ma, ra * 0, chars)        # row scan does not move text
        ch = data[0]
        at = data[1]
        map_a, map_b = self.font_offsets()
        font_base = np.where(at & 0x08, map_b, map_a) if map_a != map_b else map_a
        glyph_addr = (font_base + ch.astype(np.int64) * 32 + ra[:, None]) & 0xFFFF
        glyph = self.planes[2][glyph_addr]                        # lines, chars
        nine = not self.seq[1] & 1
        width = 9 if nine else 8
        bits = np.unpackbits(glyph[:, :, None], axis=2)          # lines, chars, 8
        if nine:
            ninth = np.where(bool(self.ac[0x10] & 0x04) & (ch >= 0xC0) & (ch <= 0xDF),
                             bits[:, :, 7], 0).astype(np.uint8)
            bits = np.concatenate([bits, ninth[:, :, None]], axis=2)
        fg = at & 0x0F
        bg = at >> 4
        cursor_on, char_on = self.blink_phase(frame)
        if self.blink_enabled():
            bg = bg & 7
            if not char_on:
                fg = np.where(at & 0x80, bg, fg)
        # underline: attribute x000x001 on the underline location's line (the
        # BIOS puts that line below the cell in colour modes)
        under = ((at & 0x77) == 0x01) & (ra[:, None] == (self.crtc[0x14] & 0x1F))
        if under.any():
            bits = np.where(under[:, :, None], np.uint8(1), bits)
        # cursor
        r = self.crtc
        cstart, cend = r[0x0A] & 0x1F, r[0x0B] & 0x1F
        if not r[0x0A] & 0x20 and cstart <= cend and cursor_on:
            cpos = (r[0x0E] << 8) | r[0x0F]
            col = cpos - ma[:, None]
            hit = (col >= 0) & (col < shown) & (ra >= cstart)[:, None] & (ra <= cend)[:, None]
            lines_hit, = np.nonzero(hit.any(axis=1))
            if len(lines_hit):
                cols = col[lines_hit, 0] if col.ndim == 2 else col[lines_hit]
                bits[lines_hit, cols, :] = 1
        values = np.where(bits != 0, fg[:, :, None], bg[:, :, None])
        values = values.reshape(len(ma), chars * width)
        lut = self.attribute_lut().astype(np.uint8)
        return lut[self._panned(values, pan, shown * width)]

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
