"""INT 14h (serial), INT 17h (printer) and INT 05h (print screen).

Ports are found in the BIOS data area (COM bases at 0040:0000, LPT bases at
0040:0008) as POST left them: from the cards whose declarations carry the
``serial`` / ``parallel`` capabilities (``machine.equipment``).

INT 14h talks to the 8250 through its ports only.  Like IBM's BIOS it waits
for the transmit holding register to empty (AH=01h) or for a received byte
(AH=02h), for at most the port's timeout byte (0040:007C + n, 1 after POST)
times one timer tick (55 ms) of emulated time; the wait is spent in steps of
one character time (computed from the divisor and line control it reads
back), letting the devices run in between, as a busy-waiting BIOS would.
On a timeout AH bit 7 is set.  DSR/CTS are not required (a null-modem link
without modem lines still works).  Absent port: AH = 80h.

INT 17h without a printer port answers AH = 81h (timeout, not busy) to every
function; with one it drives data/status/control (base, base+1, base+2) the
IBM way (status bits 3 and 6 inverted).
"""

from ..cpu import state as S
from .memio import BDA_COM, BDA_COM_TIMEOUT, BDA_LPT, PRTSC_STATUS, Service
from .rom import baud_divisors

LSR = 5
MSR = 6
LCR = 3
MCR = 4
IER = 1

LSR_DR = 0x01
LSR_THRE = 0x20
LPT_ABSENT = 0x81
TICK_CYCLES = 262_144          # one 18.2 Hz timer tick (65536 PIT clocks x 4)
CHAR_CYCLES_PER_DIVISOR = 414  # 10 bits at 115200 baud (divisor 1)


class CommsService(Service):

    # -- INT 14h ----------------------------------------------------------------------
    def _char_cycles(self, base):
        """One character time from the divisor the UART holds (read back
        through DLAB, LCR restored)."""
        p = self.ports
        lcr = p.read(base + LCR)
        p.write(base + LCR, lcr | 0x80)
        divisor = p.read(base) | (p.read(base + 1) << 8)
        p.write(base + LCR, lcr)
        return CHAR_CYCLES_PER_DIVISOR * (divisor or 65536)

    def _wait_lsr(self, n, base, bit):
        """LSR once ``bit`` is set, or with bit 7 set after the timeout."""
        p = self.ports
        lsr = p.read(base + LSR)
        if lsr & bit:
            return lsr
        limit = max(1, self.mem.rb(BDA_COM_TIMEOUT + n)) * TICK_CYCLES
        step = min(self._char_cycles(base), limit)
        spent = 0
        while spent < limit:
            self._spend(step)
            spent += step
            lsr = p.read(base + LSR)
            if lsr & bit:
                return lsr
        return lsr | 0x80

    def _spend(self, cycles):
        """Let ``cycles`` of emulated time pass inside the service (the BIOS
        busy-waits), catching the devices up."""
        m = self.bios.machine
        m.cpu.ctl[S.C_CYCLES] += cycles
        m.scheduler.invalidate()
        m.scheduler.next_stop(m.clock() + 1)

    def int14(self, r):
        if r.dx > 3:
            return
        n = r.dx
        base = self.mem.rw(BDA_COM + 2 * n)
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
            lsr = self._wait_lsr(n, base, LSR_THRE)
            if lsr & 0x80:
                r.ah = lsr
            else:
                p.write(base, r.al)
                r.ah = p.read(base + LSR) & 0x7F
        elif ah == 0x02:
            p.write(base + MCR, 0x01)                  # DTR
            lsr = self._wait_lsr(n, base, LSR_DR)
            if lsr & 0x80:
                r.ah = (lsr & 0x1E) | 0x80
            else:
                r.al = p.read(base)
                r.ah = lsr & 0x1E
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
