"""The built-in DOS, part: the console: CON output, keys, Ctrl-C, buffered line input.  A mixin of
:class:`pypc_core.dos.kernel.Dos`; its methods share the Dos instance's state."""


import numpy as np

from ..cpu import state as S
from ..cpu.registers import Registers
from ..firmware.memio import linear
from . import rom as dosrom
from .common import (
    JUMPED
)


class ConsoleMixin:
    """The console: CON output, keys, Ctrl-C, buffered line input."""

    # ------------------------------------------------------------------
    # console
    # ------------------------------------------------------------------
    def con_write(self, data):
        video = self.machine.bios.video
        for b in bytes(data):
            if b == 0x09:
                col = video.cursor(video.active_page)[1]
                for _ in range(8 - col % 8):
                    video.teletype(0x20)
            else:
                video.teletype(b)
        self.console_out += data
        if self.config.console is not None:
            self.config.console(bytes(data))

    def key_available(self):
        if self.pending_scan is not None:
            return True
        return self.machine.bios.keyboard.peek() is not None

    def get_key(self):
        """The next character from the keyboard (extended keys give 00h,
        then the scan code), or None: the caller waits (WAIT)."""
        if self.pending_scan is not None:
            ch, self.pending_scan = self.pending_scan, None
            return ch
        bios = self.machine.bios
        scratch = Registers(np.zeros(S.REGS_SIZE, dtype=np.uint16))
        scratch.ah = 0
        if bios.keyboard.int16(scratch):
            bios._wait_mark = int(self.machine.cpu.ctl[S.C_INSTRUCTIONS])
            return None
        word = scratch.ax
        if word == 0x0000:
            return 0x03                      # Ctrl-Break
        ch = word & 0xFF
        if ch == 0:
            self.pending_scan = word >> 8     # an extended key: 00h, then its code
        return ch

    def ctrl_c(self, r):
        """Ctrl-C seen while checking: echo ^C, run INT 23h (our default
        ends the program; a program's handler that IRETs makes the call
        start again)."""
        self.con_write(b"^C\r\n")
        seg, off = self.mem.vector(0x23)
        if (seg, off) == (dosrom.DOS_SEGMENT, self.label("int23")):
            return self._svc_int23(r)
        # call the program's handler; its IRET comes back to the INT 21h trap
        sp = (r.sp - 6) & 0xFFFF
        self.mem.ww(linear(r.ss, sp + 4), r.flags)
        self.mem.ww(linear(r.ss, sp + 2), dosrom.DOS_SEGMENT)
        self.mem.ww(linear(r.ss, sp), r.ip)
        r.sp = sp
        r.if_ = False
        r.tf = False
        r.cs, r.ip = seg, off
        return JUMPED

    def line_input(self, limit, echo=True):
        """Advance the buffered line input; the finished line (bytes, without
        the CR), or None to wait.  Backspace edits, Esc cancels the line."""
        if self.line is None:
            self.line = bytearray()
        while True:
            ch = self.get_key()
            if ch is None:
                return None
            if ch == 0:                       # extended key: ignored in line input
                self.pending_scan = None
                continue
            if ch == 0x0D:
                line = bytes(self.line)
                self.line = None
                if echo:
                    self.con_write(b"\r")
                return line
            if ch == 0x03:
                self.line = None
                return b"\x03"
            if ch in (0x08, 0x7F):
                if self.line:
                    self.line.pop()
                    if echo:
                        self.con_write(b"\x08 \x08")
                continue
            if ch == 0x1B:
                if echo:
                    self.con_write(b"\\\r\n")
                self.line = bytearray()
                continue
            if len(self.line) >= limit:
                continue                      # (a real DOS beeps)
            self.line.append(ch)
            if echo:
                self.con_write(bytes([ch]))
