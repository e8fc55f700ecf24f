"""The VGA's raster timing (mixed into :class:`pypc_plugins.vga.vga.VGA`).

Timing
    Dot clock 25.175 MHz or 28.322 MHz (misc output bits 2-3), 8 or 9 dots a
    character (sequencer 1 bit 0), dots halved by sequencer 1 bit 3.  A line
    is CRTC 0 + 5 characters, a frame CRTC 6 (+ overflow) + 2 lines; display
    ends at CRTC 12h (+ overflow) + 1 lines and CRTC 1 + 1 characters;
    vertical retrace runs from CRTC 10h (+ overflow) until the line whose
    low four bits equal CRTC 11h bits 0-3.  Emulated time is CPU cycles at
    14.31818 MHz / 3, so mode 3 runs at 70.1 Hz and mode 12h at 59.9 Hz of
    emulated time.

The status ports (3BAh/3DAh) are answered by the board's raster primitive
from the cycle counter while the attribute flip-flop is at "index"
(:meth:`VgaTiming._publish`).
"""

from . import planar

CPU_HZ_X3 = 14_318_180          # three CPU cycles per 14.31818 MHz tick
DOT_CLOCKS = (25_175_000, 28_322_000, 25_175_000, 25_175_000)

STATUS_DISPLAY_OFF = 0x01
STATUS_VRETRACE = 0x08


class VgaTiming:
    """Dot clock, frame geometry, the beam, the status bits, frame numbers."""

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
