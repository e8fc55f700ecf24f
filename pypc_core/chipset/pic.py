"""Intel 8259A programmable interrupt controller (single PIC, as on the XT).

Ports 20h (ICW1, OCW2, OCW3; reads IRR/ISR or the poll word) and 21h (ICW2-4,
OCW1; reads IMR).  The XT BIOS programs it with ICW1=13h (edge, single, ICW4),
ICW2=08h (vectors 08h-0Fh), ICW4=09h (8086 mode, buffered).

Interrupt inputs are edge triggered unless ICW1 selected level mode: an input
going low->high sets its IRR bit (an input that is already high must go low
before it can make another edge).  As on the 8259A the request follows its
input until the CPU acknowledges it, in edge mode too: an input that falls
before the INTA withdraws its request (``lower_irq``), and an INTA that then
finds nothing gets IR7's vector with ISR untouched.  ``pulse_irq`` is an edge
whose fall the machine has already passed: that request stays latched until
acknowledged.  In level mode the acknowledge leaves IRR alone: it follows
the input.  The vectors are always the 8086 ones (ICW2 | IRQ); ICW3 is kept
but a single PIC has no cascade to use it.

The INT output (``intr_pending()``) is reported through ``on_intr_change``
whenever it changes, so the machine can drive the CPU's INTR line;
``acknowledge()`` is the CPU's INTA cycle.
"""

from ..device import Device, DeviceDeclaration

PIC_PORTS = (0x20, 0x21)


class Pic8259(Device):
    declaration = DeviceDeclaration(name="pic", ports=list(PIC_PORTS))

    def __init__(self, on_intr_change=None, base_port=0x20, name="pic"):
        self.on_intr_change = on_intr_change
        self.base_port = base_port
        self.name = name
        self.reset()

    # -- wiring ------------------------------------------------------------
    def attach(self, machine):
        machine.ports.claim(self.name, (self.base_port, self.base_port + 1),
                            read=self.port_read, write=self.port_write, peek=self.peek)
        self._portmap = machine.ports

    def reset(self):
        self.irr = 0
        self.isr = 0
        self.imr = 0xFF             # power-on: everything masked until ICW1
        self.lines = 0              # current level of the IR0-7 inputs
        self.vector_base = 0x08
        self.icw1 = 0
        self.icw3 = 0
        self.icw4 = 0
        self.init_step = 0          # 0: ready; 2/3/4: expecting ICW2/3/4
        self.level_triggered = False
        self.single = True
        self.auto_eoi = False
        self.rotate_in_aeoi = False
        self.lowest = 7             # IRQ with the lowest priority
        self.read_isr = False       # OCW3 RIS: port 20h reads ISR (else IRR)
        self.poll = False           # OCW3 P: next read is the poll word
        self.special_mask = False
        self.intr = False

    _portmap = None
    #: add_observer: called as ``fn(kind, irq, vector)`` -- "irq_raise" and
    #: "irq_lower" when an input line changes, "irq_dispatch" at each INTA
    #: (vector given; None otherwise)
    _observers = ()

    # -- interrupt inputs --------------------------------------------------
    def add_observer(self, fn):
        """Call ``fn(kind, irq, vector)`` at each input edge (``irq_raise``,
        ``irq_lower``) and interrupt acknowledge (``irq_dispatch``): what a
        hardware trace records.  Added twice, it is there once."""
        if fn not in self._observers:
            self._observers = self._observers + (fn,)

    def remove_observer(self, fn):
        self._observers = tuple(o for o in self._observers if o != fn)

    def _notify(self, kind, irq, vector=None):
        for fn in self._observers:
            fn(kind, irq, vector)

    def raise_irq(self, n):
        bit = 1 << n
        if self.lines & bit:
            return
        self.lines |= bit
        self.irr |= bit             # a low->high edge (or a level in level mode)
        self._update()
        if self._observers:
            self._notify("irq_raise", n)

    def lower_irq(self, n):
        bit = 1 << n
        if not self.lines & bit:
            return
        self.lines &= ~bit
        # The 8259A's request follows its input until the acknowledge, in
        # edge mode too: an input that falls first withdraws the request
        # (the datasheet's "default IR7" case).  The edge detector only
        # decides when a high level counts as a new request.
        if self.irr & bit:
            self.irr &= ~bit
            self._update()
        if self._observers:
            self._notify("irq_lower", n)

    def pulse_irq(self, n):
        """A rising edge whose fall the machine has already passed (the
        scheduler catches up in steps): the request stays latched until
        acknowledged and the input is low again."""
        bit = 1 << n
        self.lines &= ~bit
        self.irr |= bit
        self._update()

    # -- priority resolution -----------------------------------------------
    def _highest(self, bits):
        """The highest-priority IRQ among ``bits`` (None if empty)."""
        if not bits:
            return None
        low = self.lowest
        for i in range(1, 9):
            irq = (low + i) & 7
            if bits >> irq & 1:
                return irq
        return None

    def _resolve(self):
        """IRQ that would be delivered now, or None."""
        req = self.irr & ~self.imr & 0xFF
        if not req:
            return None
        isr = self.isr & ~self.imr if self.special_mask else self.isr
        low = self.lowest
        for i in range(1, 9):
            irq = (low + i) & 7
            bit = 1 << irq
            if isr & bit:
                return None         # blocked by an equal/higher level in service
            if req & bit:
                return irq
        return None

    def _update(self):
        if self._portmap is not None:
            # IRR/ISR/IMR may have changed: only the PIC's own reads follow them
            self._portmap.mark_dirty(self.name)
        level = self._resolve() is not None
        if level != self.intr:
            self.intr = level
            if self.on_intr_change is not None:
                self.on_intr_change(level)

    def intr_pending(self):
        """Level of the INT output."""
        return self.intr

    def pending_irq(self):
        """The IRQ an INTA would deliver now (None if nothing pending)."""
        return self._resolve()

    def acknowledge(self):
        """INTA cycle: returns the vector; moves the request to ISR."""
        irq = self._resolve()
        if irq is None:
            # Request went away: the 8259A answers with IR7, ISR untouched.
            vector = (self.vector_base | 7) & 0xFF
        else:
            self._take(irq)
            vector = (self.vector_base | irq) & 0xFF
        self._update()
        if self._observers:
            self._notify("irq_dispatch", (vector - self.vector_base) & 0x07, vector)
        return vector

    def _take(self, irq):
        bit = 1 << irq
        if not self.level_triggered:
            self.irr &= ~bit
        if self.auto_eoi:
            if self.rotate_in_aeoi:
                self.lowest = irq
        else:
            self.isr |= bit

    # -- ports -------------------------------------------------------------
    def peek(self, port):
        """What a read would return, without its side effects; None in poll
        mode (where a read acknowledges an interrupt)."""
        if self.poll:
            return None
        if port & 1:
            return self.imr
        return self.isr if self.read_isr else self.irr

    def port_read(self, port):
        if self.poll:
            self.poll = False
            irq = self._resolve()
            if irq is None:
                return 0x00
            self._take(irq)
            self._update()
            return 0x80 | irq
        if port & 1:
            return self.imr
        return self.isr if self.read_isr else self.irr

    def port_write(self, port, value):
        value &= 0xFF
        if port & 1:
            self._write_data(value)
        elif value & 0x10:
            self._icw1(value)
        elif value & 0x08:
            self._ocw3(value)
        else:
            self._ocw2(value)
        self._update()

    def _icw1(self, value):
        self.icw1 = value
        self.level_triggered = bool(value & 0x08)
        self.single = bool(value & 0x02)
        self.init_step = 2
        self.imr = 0
        self.isr = 0
        # Edge sense reset: an input that is high must go low and high again.
        self.irr = self.lines if self.level_triggered else 0
        self.lowest = 7
        self.special_mask = False
        self.read_isr = False
        self.poll = False
        self.rotate_in_aeoi = False
        if not value & 0x01:        # no ICW4: its functions are cleared
            self.icw4 = 0
            self.auto_eoi = False

    def _write_data(self, value):
        step = self.init_step
        if step == 2:
            self.vector_base = value & 0xF8
            if not self.single:
                self.init_step = 3
            elif self.icw1 & 0x01:
                self.init_step = 4
            else:
                self.init_step = 0
        elif step == 3:
            self.icw3 = value
            self.init_step = 4 if self.icw1 & 0x01 else 0
        elif step == 4:
            self.icw4 = value
            self.auto_eoi = bool(value & 0x02)
            self.init_step = 0
        else:
            self.imr = value        # OCW1

    def _ocw2(self, value):
        cmd = value >> 5            # R SL EOI
        level = value & 7
        if cmd == 0b001 or cmd == 0b101:       # non-specific EOI (+ rotate)
            irq = self._highest(self.isr)
            if irq is not None:
                self.isr &= ~(1 << irq)
                if cmd == 0b101:
                    self.lowest = irq
        elif cmd == 0b011 or cmd == 0b111:     # specific EOI (+ rotate)
            self.isr &= ~(1 << level)
            if cmd == 0b111:
                self.lowest = level
        elif cmd == 0b100:
            self.rotate_in_aeoi = True
        elif cmd == 0b000:
            self.rotate_in_aeoi = False
        elif cmd == 0b110:                     # set priority
            self.lowest = level
        # 0b010: no operation

    def _ocw3(self, value):
        if value & 0x40:                       # ESMM
            self.special_mask = bool(value & 0x20)
        self.poll = bool(value & 0x04)
        if value & 0x02:                       # RR
            self.read_isr = bool(value & 0x01)

    # -- snapshots ---------------------------------------------------------
    _FIELDS = ("irr", "isr", "imr", "lines", "vector_base", "icw1", "icw3",
               "icw4", "init_step", "level_triggered", "single", "auto_eoi",
               "rotate_in_aeoi", "lowest", "read_isr", "poll", "special_mask",
               "intr")

    def get_state(self):
        return {f: getattr(self, f) for f in self._FIELDS}

    def set_state(self, state):
        for f in self._FIELDS:
            setattr(self, f, state[f])
        if self.on_intr_change is not None:
            self.on_intr_change(self.intr)
