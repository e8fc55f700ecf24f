"""INT 14h (serial), INT 17h (printer) and INT 05h (print screen).

Ports are found in the BIOS data area (COM bases at 0040:0000, LPT bases at
0040:0008) as POST left them: COM1 = 3F8h only when a UART device is
present, no printer port unless an ``lpt`` device is present.

INT 14h talks to the 8250 through its ports.  The service cannot spin for
the seconds IBM's BIOS waits, so AH=01h (send) needs the transmit holding
register empty now and AH=02h (receive) needs a byte waiting now; otherwise
AH bit 7 (timeout) is set.  DSR/CTS are not required (a null-modem link
without modem lines still works).  Absent port: AH = 80h.

INT 17h without a printer port answers AH = 81h (timeout, not busy) to every
function; with one it drives data/status/control (base, base+1, base+2) the
IBM way (status bits 3 and 6 inverted).
"""

from .memio import BDA_COM, BDA_LPT, PRTSC_STATUS, Service
from .rom import baud_divisors

LSR = 5
MSR = 6
LCR = 3
MCR = 4
IER = 1

LPT_ABSENT = 0x81


class CommsService(Service):

    # -- INT 14h ----------------------------------------------------------------------
    def int14(self, r):
        if r.dx > 3:
            return
        base = self.mem.rw(BDA_COM + 2 * r.dx)
        if base == 0:
            r.ah = 0x80
            return
        p = self.ports
        ah = r.ah
        if ah == 0x00:
            divisor = baud_divisors()[r.al >> 5]
            p.write(base + LCR, 0x80)
            p.write(base, divisor & 0xFF)
            p.write(base + 1, divisor >> 8)
            p.write(base + LCR, r.al & 0x1F)
            p.write(base + IER, 0)
            r.ah = p.read(base + LSR)
            r.al = p.read(base + MSR)
        elif ah == 0x01:
            p.write(base + MCR, 0x03)                  # DTR, RTS
            lsr = p.read(base + LSR)
            if lsr & 0x20:
                p.write(base, r.al)
                r.ah = p.read(base + LSR) & 0x7F
            else:
                r.ah = lsr | 0x80
        elif ah == 0x02:
            p.write(base + MCR, 0x01)                  # DTR
            lsr = p.read(base + LSR)
            if lsr & 0x01:
                r.al = p.read(base)
                r.ah = lsr & 0x1E
            else:
                r.ah = (lsr & 0x1E) | 0x80
        elif ah == 0x03:
            r.ah = p.read(base + LSR)
            r.al = p.read(base + MSR)

    # -- INT 17h ----------------------------------------------------------------------
    def _lpt_status(self, base):
        return (self.ports.read(base + 1) & 0xF8) ^ 0x48

    def lpt_print(self, n, ch):
        base = self.mem.rw(BDA_LPT + 2 * n) if n < 3 else 0
        if base == 0:
            return LPT_ABSENT
        p = self.ports
        p.write(base, ch)
        if not p.read(base + 1) & 0x80:               # busy: no time to wait
            return self._lpt_status(base) | 0x01
        p.write(base + 2, 0x0D)                        # strobe
        p.write(base + 2, 0x0C)
        return self._lpt_status(base)

    def int17(self, r):
        n = r.dx
        base = self.mem.rw(BDA_LPT + 2 * n) if n < 3 else 0
        if base == 0:
            if n < 3:
                r.ah = LPT_ABSENT
            return
        ah = r.ah
        if ah == 0x00:
            r.ah = self.lpt_print(n, r.al)
        elif ah == 0x01:
            self.ports.write(base + 2, 0x08)           # init pulse
            self.ports.write(base + 2, 0x0C)
            r.ah = self._lpt_status(base)
        elif ah == 0x02:
            r.ah = self._lpt_status(base)

    # -- INT 05h ----------------------------------------------------------------------
    def print_screen(self):
        mem = self.mem
        if mem.rb(PRTSC_STATUS) == 1:                  # already printing
            return
        if mem.rw(BDA_LPT) == 0:
            mem.wb(PRTSC_STATUS, 0xFF)
            return
        mem.wb(PRTSC_STATUS, 1)
        video = self.bios.video
        ok = True
        text = []
        cols = video.cols
        for row in range(25):
            for col in range(cols):
                if video.graphics:
                    text.append(video.graphics_read_char(row, col))
                else:
                    base = 0xB8000 + video.page_base(video.active_page)
                    text.append(mem.rb(base + (row * cols + col) * 2))
            text += [0x0D, 0x0A]
        for ch in text:
            if self.lpt_print(0, ch) & 0x29:
                ok = False
                break
        mem.wb(PRTSC_STATUS, 0 if ok else 0xFF)
