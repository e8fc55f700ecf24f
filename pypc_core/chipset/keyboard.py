"""The IBM PC/XT keyboard (83-key, XT protocol) and its interface logic.

The keyboard keeps a 16-byte FIFO of scan codes.  It transmits the oldest one
to the system board's shift register only when

* the shift register is empty (the previous byte was acknowledged by setting
  PPI port 61h bit 7),
* port 61h bit 7 is clear (while it is set the keyboard data line is held
  and the keyboard keeps its bytes), and
* the keyboard clock line is released (port 61h bit 6 set);

the byte arrives ``byte_delay`` CPU cycles after all three hold (the serial
transmission time), which raises IRQ1.  Setting port 61h bit 7 clears the
shift register (port 60h then reads 00h) and lowers IRQ1.

Holding the clock line low for at least ``reset_hold`` cycles and releasing it
resets the keyboard: its FIFO is emptied and it answers 0xAA after
``reset_delay`` cycles (once the data line is free).

A byte arriving while the FIFO is full is dropped and counted
(``overflow_count``); the keyboard then queues one 0xFF overrun code, as the
real one does.  All times are emulated CPU cycles: deterministic.

Text typed by the host (``type_scancodes``) goes through a *typist*: a host
queue that hands the keyboard its next byte only once the guest has taken
the previous one (the FIFO and the shift register are empty: the guest read
port 60h and acknowledged through port 61h bit 7), and at most one byte every
``type_interval`` cycles, as fingers would.  So typed text goes at the pace
of whatever reads the keyboard -- the built-in BIOS, another BIOS or a guest's
own IRQ 1 handler -- and never overflows the FIFO or a guest's buffer.
"""

from ..device import Device, DeviceDeclaration

CPU_HZ = 14_318_180 / 3
BYTE_DELAY_CYCLES = 4773          # ~1 ms: one serial byte from the keyboard
RESET_DELAY_CYCLES = 9545         # ~2 ms: self test before answering 0xAA
RESET_HOLD_CYCLES = 4773          # clock held low >= ~1 ms resets it
TYPE_INTERVAL_CYCLES = 119318     # 25 ms between typed bytes: 20 keys a second, a fast typist
FIFO_SIZE = 16
RESET_OK = 0xAA
OVERRUN = 0xFF


class XtKeyboard(Device):
    declaration = DeviceDeclaration(name="keyboard", irqs=[1])

    def __init__(self, pic=None, clock=None, irq=1,
                 byte_delay=BYTE_DELAY_CYCLES, reset_delay=RESET_DELAY_CYCLES,
                 reset_hold=RESET_HOLD_CYCLES, fifo_size=FIFO_SIZE,
                 type_interval=TYPE_INTERVAL_CYCLES):
        self.pic = pic
        self.clock = clock
        self.irq = irq
        self.byte_delay = byte_delay
        self.reset_delay = reset_delay
        self.reset_hold = reset_hold
        self.fifo_size = fifo_size
        self.type_interval = type_interval
        self.reset()

    def attach(self, board):
        self.clock = board.clock

    def reset(self):
        self.fifo = []
        self.overflow_count = 0
        self.data = 0               # the system board's shift register
        self.full = False
        self.clock_high = True      # keyboard clock line released
        self.clear = False          # port 61h bit 7
        self.clock_low_since = 0
        self.ready_at = 0           # earliest cycle the next byte may arrive
        self.send_at = None         # cycle the next byte arrives (scheduled)
        self.time = 0
        self.irq_level = False
        self.resets = 0             # clock-low resets seen (diagnostics)
        self.typing = []            # the typist's queue (host side)
        self.type_at = 0            # earliest cycle of the typist's next byte

    # -- time --------------------------------------------------------------
    def _now(self):
        if self.clock is None:
            return self.time
        return max(self.time, self.clock())

    def _typist_may_hand(self):
        """The guest has taken every byte: the typist may hand the next."""
        return not self.fifo and not self.full

    def next_event(self):
        if self.typing and self._typist_may_hand():
            if self.send_at is None or self.type_at < self.send_at:
                return self.type_at
        return self.send_at

    def advance(self, cycle):
        if cycle > self.time:
            self.time = cycle
        if self.send_at is not None and self.send_at <= cycle:
            self.send_at = None
            self.data = self.fifo.pop(0)
            self.full = True
            self._set_irq(True)
        if self.typing and self.type_at <= cycle and self._typist_may_hand():
            self.fifo.append(self.typing.pop(0))
            self.type_at = cycle + self.type_interval
            self._schedule(cycle)

    def _set_irq(self, level):
        if level == self.irq_level:
            return
        self.irq_level = level
        if self.pic is not None:
            if level:
                self.pic.raise_irq(self.irq)
            else:
                self.pic.lower_irq(self.irq)

    def _schedule(self, now):
        if (self.send_at is None and self.fifo and not self.full
                and self.clock_high and not self.clear):
            self.send_at = max(now + self.byte_delay, self.ready_at)

    # -- host side: keys -----------------------------------------------------
    def _enqueue(self, byte, now):
        if len(self.fifo) >= self.fifo_size:
            self.overflow_count += 1
            if len(self.fifo) == self.fifo_size:
                self.fifo.append(OVERRUN)
            return
        self.fifo.append(byte & 0xFF)
        self._schedule(now)

    def press(self, scancode):
        """Make code of a key (XT scan code set 1)."""
        self.send_scancodes([scancode & 0x7F])

    def release(self, scancode):
        """Break code (make code | 80h)."""
        self.send_scancodes([(scancode & 0x7F) | 0x80])

    def send_scancodes(self, codes):
        now = self._now()
        self.advance(now)
        for code in codes:
            self._enqueue(code, now)

    def type_scancodes(self, codes):
        """Queue scan codes for the typist (see the module docstring)."""
        now = self._now()
        if not self.typing:
            self.type_at = max(self.type_at, now)
        self.typing.extend(int(c) & 0xFF for c in codes)

    def pending(self):
        """Bytes waiting in the keyboard (not yet in the shift register)."""
        return len(self.fifo)

    def typing_pending(self):
        """Bytes the typist has not handed to the keyboard yet."""
        return len(self.typing)

    # -- system board side (driven by the PPI) -------------------------------
    def read_data(self):
        """The shift register as port 60h sees it (00h when cleared)."""
        self.advance(self._now())
        return self.data

    def set_lines(self, clock_high, clear):
        """Port 61h bit 6 (clock released) and bit 7 (clear / acknowledge)."""
        now = self._now()
        self.advance(now)
        clock_high = bool(clock_high)
        clear = bool(clear)
        if clear:
            self.data = 0
            self.full = False
            self._set_irq(False)
            self.send_at = None      # the keyboard holds its bytes
        self.clear = clear
        if clock_high != self.clock_high:
            self.clock_high = clock_high
            if not clock_high:
                self.clock_low_since = now
                self.send_at = None
            elif now - self.clock_low_since >= self.reset_hold:
                self.resets += 1
                self.fifo = [RESET_OK]
                self.send_at = None
                self.ready_at = now + self.reset_delay
        self._schedule(now)

    # -- snapshots ---------------------------------------------------------
    _FIELDS = ("fifo", "overflow_count", "data", "full", "clock_high", "clear",
               "clock_low_since", "ready_at", "send_at", "time", "irq_level",
               "resets", "type_at")

    def get_state(self):
        state = {f: getattr(self, f) for f in self._FIELDS}
        state["fifo"] = list(self.fifo)
        state["typing"] = list(self.typing)
        return state

    def set_state(self, state):
        for f in self._FIELDS:
            setattr(self, f, state[f])
        self.fifo = list(state["fifo"])
        self.typing = list(state.get("typing", []))
