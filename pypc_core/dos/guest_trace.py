"""dos.trace for a DOS that runs as guest code (a DOS booted from a disk
image, whose INT 21h handler is 8088 code in guest memory).

The built-in DOS is recorded where Python serves it (``trace.DosTrace``).
A guest DOS is recorded from outside, with the debugger's machinery and no
change to the CPU core: an internal execution breakpoint that never stops
(``_Observer``) sits on the first instruction of the INT 21h handler (and
of INT 20h and 27h) as the vectors point when the trace starts.  Every call
that reaches the handler -- by an ``INT 21h`` instruction or by a far call
through the old vector, as a TSR chaining the interrupt does -- is decoded
there, from the registers and the stack frame (return CS:IP).  A call that
returns gets a second observer on its return address, which matches only
with the stack pointer back above the frame (SS equal, SP = SP at the entry
+ 6, as after the handler's IRET or RETF 2); there the result is read from
the registers (CF, AX, ...) and the buffers the call named.  Until then the
event's result is ``{"pending": true}``; a call that never returns (the
program was ended inside it) keeps it.  Terminating calls (00h, 31h, 4Ch,
INT 20h, INT 27h) are complete when they are made.

What a guest DOS does not tell: the calling PSP, the host file of a path,
the file behind a handle, the child of an EXEC; a find's result names the
entry only when the trace saw the program set its DTA (1Ah).  The events
are otherwise those of the built-in DOS.

Arrivals the core cannot report are handed in by ``after_stop``: a step
that ends on the handler's first instruction or on a return address (the
next run steps past a breakpoint at CS:IP).  An arrival seen twice (at a
slice boundary, after a step, or again after a hardware interrupt taken on
the handler's first instruction) is recorded once: the same CS:IP, stack
and registers as the previous arrival with no return in between."""

import collections

import attrs

from ..cpu import state as S
from ..cpu.registers import Registers
from ..debugger import Breakpoint
from ..firmware.memio import Mem, linear
from .trace import DosTrace, _Snap

MAX_PENDING = 64                    # calls waiting for their return
MAX_IDLE_RETURNS = 32               # return observers kept with no call waiting
TERMINATING = (0x00, 0x31, 0x4C)
IRET = 0xCF
GUEST_TRAPS = {0x20: "terminate", 0x27: "keep"}


class NoGuestDos(ValueError):
    """No DOS has installed an INT 21h handler (yet)."""


@attrs.define(eq=False)
class _Observer(Breakpoint):
    """An internal execution breakpoint that never stops the machine: the
    machine asks it at every arrival and it calls ``callback``."""

    callback: object = None

    def matches(self, regs, mem):
        if self.enabled and self.callback is not None:
            self.callback()
        return False


def handler_entry(machine, number):
    """(segment, offset) of interrupt ``number``'s handler, or None when the
    vector is empty or points at a bare IRET (the BIOS's default)."""
    mem = Mem(machine)
    seg, off = mem.vector(number)
    if (seg, off) == (0, 0) or mem.rb(linear(seg, off)) == IRET:
        return None
    return seg, off


class GuestDosTrace(DosTrace):
    """The recorder for a guest DOS on ``machine`` (settings as
    :class:`DosTrace`).  ``start`` raises :class:`NoGuestDos` when INT 21h
    has no handler yet."""

    def __init__(self, machine, **settings):
        super().__init__(None, **settings)
        self.machine = machine
        self.mem = Mem(machine)
        self.handlers = {}          # interrupt -> (segment, offset) observed
        self._observers = {}        # linear address -> _Observer
        self._entries = {}          # linear address of a handler -> interrupt
        self._pending = {}          # return linear -> {(ss, sp): (event, registers in)}
        self._order = collections.deque()      # (return linear, key), oldest first
        self._last_arrival = None
        self._dta_address = None

    # -- control -----------------------------------------------------------------
    def start(self):
        entry = handler_entry(self.machine, 0x21)
        if entry is None:
            raise NoGuestDos("no DOS has installed an INT 21h handler (the vector is empty "
                             "or the BIOS's IRET); start the trace once DOS has booted")
        self.handlers = {0x21: entry}
        if "program" in self.classes:
            for number in GUEST_TRAPS:
                other = handler_entry(self.machine, number)
                if other is not None and linear(*other) != linear(*entry):
                    self.handlers[number] = other
        for number, (seg, off) in self.handlers.items():
            address = linear(seg, off)
            self._entries[address] = number
            self._observe(address, lambda n=number: self._arrive(n))
        self.active = True

    def stop(self):
        self.active = False
        for address in list(self._observers):
            self._unobserve(address)
        self._pending.clear()
        self._order.clear()

    def after_stop(self):
        """Hand in an arrival the core did not report: the machine stopped
        (a step, a pause) on a handler's first instruction or a return
        address; the run that follows steps past the breakpoint there."""
        if not self.active:
            return
        bp = self._observers.get(self.machine.cpu.pc)
        if bp is not None:
            bp.callback()

    def _observe(self, address, callback):
        bp = _Observer(id=0, kind="exec", address=address, internal=True, callback=callback)
        self.machine.breakpoints.insert(bp)
        self._observers[address] = bp

    def _unobserve(self, address):
        bp = self._observers.pop(address, None)
        if bp is not None:
            self.machine.breakpoints.discard(bp)

    # -- arrivals ------------------------------------------------------------------
    def _arrive(self, number):
        cpu = self.machine.cpu
        regs = cpu.regs
        q = _Snap(regs)
        signature = (cpu.pc, tuple(regs[:12].tolist()))
        if signature == self._last_arrival:
            return                          # the same arrival seen again
        self._last_arrival = signature
        # observers of returns no call waits for stay (a call site is
        # usually called again) until there are too many; they go here, not
        # while the machine is at one (its one-shot skip would stay unused)
        if len(self._observers) > len(self._entries) + MAX_IDLE_RETURNS:
            for address in [a for a in self._observers
                            if a not in self._entries and a not in self._pending]:
                self._unobserve(address)
        if number == 0x21:
            ah = q.ah
            if ah == 0x1A:
                self._dta_address = linear(q.ds, q.dx)
            spec = self._functions.get(ah)
            if spec is None:
                return
            function, name, cls = ah, spec[0], spec[1]
        else:
            function, name, cls = None, GUEST_TRAPS[number], "program"
        try:
            event = self._before(q, number, function, name, cls)
        except Exception:
            self._report_failure()
            return
        regs_in = event.pop("_in")
        if number != 0x21 or function in TERMINATING:
            event["result"] = {"ok": True}
            if self._wanted(event):
                self._add(event)
            return
        if not self._wanted(event):
            return
        event["result"] = {"pending": True}
        self._add(event)
        ret = event["return_address"]
        address = linear(ret["segment"], ret["offset"])
        key = (q.ss, (q.sp + 6) & 0xFFFF)
        waiting = self._pending.setdefault(address, {})
        if key in waiting:                  # an older call there never returned
            self._order.remove((address, key))
        waiting[key] = (event, regs_in)
        self._order.append((address, key))
        if address not in self._observers:
            self._observe(address, lambda a=address: self._return(a))
        while len(self._order) > MAX_PENDING:
            old_address, old_key = self._order.popleft()
            old = self._pending.get(old_address)
            if old is not None and old.pop(old_key, None) is not None and not old:
                del self._pending[old_address]

    def _return(self, address):
        waiting = self._pending.get(address)
        if not waiting:
            return
        cpu = self.machine.cpu
        r = Registers(cpu.regs)
        entry = waiting.pop((r.ss, r.sp), None)
        if entry is None:
            return                          # this address, another stack: not our return
        self._order.remove((address, (r.ss, r.sp)))
        if not waiting:
            del self._pending[address]
        self._last_arrival = None
        event, regs_in = entry
        try:
            self._after(event, r, None, regs_in)
        except Exception:
            self._report_failure()

    def _dta(self):
        return self._dta_address
