"""Python-side handle on the jitted core: owns the state arrays and drives
``core.run``.  The Machine (chipset, devices, BIOS) sits on top of this and
answers the exits; this class knows nothing about devices."""

import numpy as np

from . import state as S
from . import core, numba_start, precompile
from .compiled_entry import compiled_entry
from .registers import Registers


class Cpu:
    """One 8088.  ``mem``/``page_table``/``xflags``/``port_kind`` default to
    a flat 1 MiB of RAM with no ports (the conformance setup); the machine
    passes its bus arrays instead.  ``page_table`` is ``int64[PAGE_TABLE_SIZE]``
    (``state.PT_*``); ``page_flags`` is its first PAGE_COUNT words."""

    def __init__(self, mem=None, page_table=None, xflags=None, port_kind=None, port_io=None):
        numba_start.lean_start()        # the first CPU of a process: numba starts lean
        precompile.compile_cold()       # ... and a cold cache compiles on two cores
        self.regs = S.new_regs()
        self.ctl = S.new_ctl()
        self.mem = mem if mem is not None else np.zeros(S.MEM_SIZE, dtype=np.uint8)
        if page_table is None:
            page_table = np.zeros(S.PAGE_TABLE_SIZE, dtype=np.int64)
        if page_table.dtype != np.int64 or page_table.shape != (S.PAGE_TABLE_SIZE,):
            raise ValueError("page_table must be int64[PAGE_TABLE_SIZE] (see state.PT_*)")
        self.page_table = page_table
        self.page_flags = page_table[:S.PAGE_COUNT]
        self.xflags = xflags if xflags is not None else np.zeros(S.MEM_SIZE, dtype=np.uint8)
        self.port_kind = port_kind if port_kind is not None else np.zeros(65536, dtype=np.uint8)
        self.port_io = port_io if port_io is not None else np.zeros(S.PIO_SIZE, dtype=np.int64)
        self.effects = np.zeros((S.MAX_EFFECTS, 4), dtype=np.int64)
        # the instruction trace ring (one unused row while no trace runs)
        self.trace_buf = np.zeros((1, S.TRACE_WORDS), dtype=np.int64)
        self.tracing = False       # mirrors ctl[C_TRACE] != 0 (read on every run)
        self.r = Registers(self.regs)
        self.translator = None     # a translator.Translator once ``translate()`` is on
        self._run_entry = None     # core.run's compiled entry for these arrays (see run)
        self._interrupt_entry = None   # core.interrupt's (see interrupt)

    # -- the block translator ---------------------------------------------------
    def translate(self, **options):
        """Turn the block translator on (see translator.py); returns it."""
        if self.translator is None:
            from .translator import Translator
            self.translator = Translator(self, **options)
        return self.translator

    # -- running ------------------------------------------------------------
    def run(self, until_cycle):
        """Run until emulated cycle ``until_cycle`` or an exit; returns EXIT_*."""
        if self.translator is not None and not self.tracing:
            # the translator's run: every choice (slices, a halted CPU, a
            # step) made inside the core's run_sliced, in one call
            return self.translator.run(until_cycle)
        # the interpreter alone: straight to the core (this is every exit's
        # path, kept as short as it was before the translator); a trace runs
        # the interpreter too
        self.ctl[S.C_DEADLINE] = until_cycle
        if self.tracing:
            return core.run_traced(self.regs, self.mem, self.page_table, self.xflags,
                                   self.ctl, self.effects, self.port_kind, self.port_io,
                                   self.trace_buf)
        run = self._run_entry
        if run is None:
            run = self._run_entry = compiled_entry(
                core.run, self.regs, self.mem, self.page_table, self.xflags,
                self.ctl, self.effects, self.port_kind, self.port_io)
        return run(self.regs, self.mem, self.page_table, self.xflags,
                   self.ctl, self.effects, self.port_kind, self.port_io)

    def _run(self, until_cycle):
        # one run of the core with the translator on and no slices (the
        # conformance runner's: a region entered at once)
        self.ctl[S.C_DEADLINE] = until_cycle
        return core.run_translated(self.regs, self.mem, self.page_table, self.xflags,
                                   self.ctl, self.effects, self.port_kind, self.port_io,
                                   self.translator.table)

    def step(self, record=False, budget=1 << 62):
        """Execute exactly one instruction (a whole REP string instruction
        included).  With ``record`` the memory and I/O effects are kept in
        ``self.effects[:self.effect_count]``.  Returns the exit reason
        (EXIT_STEP normally; IO/trap/breakpoint exits stop before it)."""
        ctl = self.ctl
        ctl[S.C_STEP] = 1
        if record:
            self.begin_record()
        try:
            reason = self.run(ctl[S.C_CYCLES] + budget)
        finally:
            ctl[S.C_STEP] = 0
            if record:
                self.end_record()
        return reason

    # -- effect recording -----------------------------------------------------
    def begin_record(self):
        self.ctl[S.C_EFFECTS] = 0
        self.ctl[S.C_RECORD] = 1
        self.page_flags |= core.PG_RECORD

    def end_record(self):
        self.ctl[S.C_RECORD] = 0
        self.page_flags &= ~np.int64(core.PG_RECORD)

    @property
    def effect_count(self):
        return int(min(self.ctl[S.C_EFFECTS], S.MAX_EFFECTS))

    @property
    def effects_lost(self):
        return int(max(0, self.ctl[S.C_EFFECTS] - S.MAX_EFFECTS))

    def recorded(self):
        """List of (kind, a, b, c) tuples of the last recording window."""
        return [tuple(int(x) for x in row) for row in self.effects[:self.effect_count]]

    def recorded_writes(self):
        return [a for kind, a, _, _ in self.recorded() if kind == S.EFF_MEM_WRITE]

    # -- interrupts -----------------------------------------------------------
    def interrupt(self, vector, return_ip=None):
        """Enter ``vector`` now (IRQ acknowledge, NMI, debugger), counting its
        cycles and one instruction boundary."""
        ip = int(self.regs[S.IP]) if return_ip is None else return_ip
        self.ctl[S.C_HALTED] = 0
        self.ctl[S.C_NOW] = self.ctl[S.C_CYCLES]     # the pushes' cycle
        enter = self._interrupt_entry
        if enter is None:
            enter = self._interrupt_entry = compiled_entry(
                core.interrupt, self.regs, self.mem, self.page_table, self.xflags,
                self.ctl, self.effects, 0, 0)
        cycles = enter(self.regs, self.mem, self.page_table, self.xflags,
                       self.ctl, self.effects, vector, ip)
        self.ctl[S.C_CYCLES] += cycles
        self.ctl[S.C_INSTRUCTIONS] += 1

    def answer_in(self, value):
        """Give the value for a pending EXIT_IO_IN; the IN re-executes."""
        self.ctl[S.C_IO_VALUE] = value
        self.ctl[S.C_IO_READY] = 1

    # -- state ----------------------------------------------------------------
    @property
    def cycles(self):
        return int(self.ctl[S.C_CYCLES])

    @property
    def instructions(self):
        return int(self.ctl[S.C_INSTRUCTIONS])

    @property
    def ticks(self):
        """CPU Ticks so far: instructions, interrupt entries and the waits
        of a halted CPU."""
        return int(self.ctl[S.C_INSTRUCTIONS]) + int(self.ctl[S.C_HLT_WAITS])

    @property
    def halted(self):
        """True while the CPU sits in HLT."""
        return bool(self.ctl[S.C_HALTED])

    @property
    def pc(self):
        return ((int(self.regs[S.CS]) << 4) + int(self.regs[S.IP])) & 0xFFFFF

    def get_state(self):
        """Registers and control words (memory belongs to the bus): copies
        that ``set_state`` restores exactly, mid-REP and interrupt shadow
        included."""
        ctl = self.ctl.copy()
        ctl[S.C_ADDRESSES] = 0          # where this process has the arrays: not state
        return {"regs": self.regs.copy(), "ctl": ctl}

    def set_state(self, state):
        regs = np.asarray(state["regs"], dtype=np.uint16)
        ctl = np.asarray(state["ctl"], dtype=np.int64)
        if regs.shape != self.regs.shape or ctl.shape != self.ctl.shape:
            raise ValueError("CPU state has the wrong layout")
        self.regs[:] = regs
        self.ctl[:] = ctl
        self.tracing = bool(self.ctl[S.C_TRACE])

    def reset(self):
        """8088 reset: CS=FFFFh, IP=0, flags clear, other registers 0."""
        self.regs[:] = 0
        self.regs[S.CS] = 0xFFFF
        self.regs[S.FLAGS] = S.FLAGS_FIXED_ONES
        keep = (self.ctl[S.C_CYCLES], self.ctl[S.C_INSTRUCTIONS], self.ctl[S.C_HLT_WAITS],
                self.ctl[S.C_TRAP_ENABLE])
        # the debugger's words (breakpoint masks, watched ports, the trace
        # and the effect recorder) outlive a reset: they are the session's
        debugger = self.ctl[S.C_TRACE:S.C_IOW + S.IOW_MAX].copy()
        recording = self.ctl[S.C_RECORD], self.ctl[S.C_EFFECTS]
        self.ctl[:] = 0
        (self.ctl[S.C_CYCLES], self.ctl[S.C_INSTRUCTIONS], self.ctl[S.C_HLT_WAITS],
         self.ctl[S.C_TRAP_ENABLE]) = keep
        self.ctl[S.C_TRACE:S.C_IOW + S.IOW_MAX] = debugger
        self.ctl[S.C_RECORD], self.ctl[S.C_EFFECTS] = recording
