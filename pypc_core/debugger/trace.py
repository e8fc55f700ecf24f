"""The instruction trace (``m.trace``): a ring of CPU Ticks the compiled
core writes, read back as records."""

import numpy as np

from ..cpu import state as S
from .addresses import MEM_TOP, parse_number
from .errors import BreakpointError

EFFECT_KINDS = {S.EFF_MEM_READ: "mem_read", S.EFF_MEM_WRITE: "mem_write",
                S.EFF_IO_READ: "io_read", S.EFF_IO_WRITE: "io_write"}
REG_ORDER = S.REG16_NAMES + S.SEG_NAMES + ("ip", "flags")
MAX_TRACE = 1 << 22


TRACE_KINDS = {S.TRK_INSTRUCTION: "instruction", S.TRK_HLT: "hlt",
               S.TRK_DISPATCH: "interrupt_dispatch"}


class Trace:
    """A bounded ring of CPU Ticks, mostly written by compiled code
    (``run_traced`` in the core, which runs the core an instruction at a
    time while a trace is on, so ``run`` itself carries no trace code).
    A record is one of three kinds (``kind``): an executed ``instruction``;
    a ``hlt`` wait (a halted CPU's clock moving on to the next device
    event); an ``interrupt_dispatch``, the entry of a PIC interrupt, which
    the machine records (:meth:`record_dispatch`) with its ``irq`` and
    ``vector``.  Each has CS:IP (for a wait or a dispatch: the context
    waiting or interrupted), the 8 bytes there, the cycle it started at,
    optionally the registers before it and the memory and I/O effects it
    had (a dispatch: its stack pushes and vector reads)."""

    def __init__(self, cpu):
        self._cpu = cpu
        self.active = False
        self.capacity = 0
        self.registers = False
        self.effects = False
        self._start_n = 0
        self._saved_effects = None
        self._eff_base = 0

    def start(self, capacity=65536, registers=False, effects=False):
        capacity = parse_number(capacity)
        if not 1 <= capacity <= MAX_TRACE:
            raise BreakpointError(f"trace capacity must be 1..{MAX_TRACE}, not {capacity}")
        cpu = self._cpu
        if self.active:
            self.stop()
        cpu.trace_buf = np.zeros((capacity, S.TRACE_WORDS), dtype=np.int64)
        self.capacity = capacity
        self.registers = bool(registers)
        self.effects = bool(effects)
        cpu.ctl[S.C_TRACE_N] = 0
        cpu.ctl[S.C_TRACE] = 1 | (2 if registers else 0) | (4 if effects else 0)
        cpu.tracing = True
        if effects:
            # a bigger effect ring for the trace's lifetime
            self._saved_effects = cpu.effects
            cpu.effects = np.zeros((max(S.MAX_EFFECTS, 4 * capacity), 4), dtype=np.int64)
            cpu.begin_record()
        self.active = True

    def stop(self):
        cpu = self._cpu
        if not self.active:
            return
        cpu.ctl[S.C_TRACE] = 0
        cpu.tracing = False
        if self.effects:
            cpu.end_record()
        self.active = False

    def record_dispatch(self, irq, vector):
        """Record the entry of PIC interrupt ``irq`` through ``vector``;
        called just before the CPU enters it (registers, clock and effect
        count are those before the entry)."""
        if not self.active:
            return
        from ..cpu import core
        cpu = self._cpu
        ctl = cpu.ctl
        n = int(ctl[S.C_TRACE_N])
        row = n % self.capacity
        # the record the compiled loop writes before an instruction, then
        # its kind
        core.trace_fill(cpu.regs, cpu.mem, ctl, cpu.trace_buf, row, ctl[S.C_TRACE],
                        np.int64(cpu.regs[S.CS]) << 4, np.int64(cpu.regs[S.IP]),
                        ctl[S.C_CYCLES])
        cpu.trace_buf[row, S.TR_KIND] = (S.TRK_DISPATCH | (irq & 0xFF) << 8
                                         | (vector & 0xFF) << 16)
        ctl[S.C_TRACE_N] = n + 1

    @property
    def total(self):
        """Ticks recorded since the trace started."""
        return int(self._cpu.ctl[S.C_TRACE_N]) if self.capacity else 0

    @property
    def count(self):
        """Records still retained (the ring keeps the latest ``capacity``)."""
        return min(self.total, self.capacity)

    @property
    def first(self):
        """Index of the oldest retained record."""
        return self.total - self.count

    def read(self, start=None, count=128):
        """Records ``start`` .. ``start + count - 1`` (indices count from the
        trace's start; the default is the oldest retained)."""
        if not self.capacity:
            raise BreakpointError("no trace has been started")
        from ..cpu.disasm import disassemble
        cpu = self._cpu
        total, first = self.total, self.first
        start = first if start is None else parse_number(start)
        count = parse_number(count)
        if start < first or start > total:
            raise BreakpointError(f"trace index {start} is not retained ({first}..{total})")
        if count < 0:
            raise BreakpointError("count must be >= 0")
        end = min(total, start + count)
        buf = cpu.trace_buf
        eff = cpu.effects
        eff_total = int(cpu.ctl[S.C_EFFECTS])
        out = []
        for n in range(start, end):
            row = buf[n % self.capacity]
            cs, ip = int(row[S.TR_CSIP]) >> 16, int(row[S.TR_CSIP]) & 0xFFFF
            raw = int(row[S.TR_BYTES]).to_bytes(8, "little", signed=True)
            length = disassemble(raw, ip).length
            kind = int(row[S.TR_KIND])
            rec = {"index": n, "kind": TRACE_KINDS[kind & 0xFF],
                   "cycles": int(row[S.TR_CYCLES]), "cs": cs, "ip": ip,
                   "linear": ((cs << 4) + ip) & (MEM_TOP - 1), "bytes": raw[:length],
                   "raw": raw}
            if kind & 0xFF == S.TRK_DISPATCH:
                rec["irq"], rec["vector"] = (kind >> 8) & 0xFF, (kind >> 16) & 0xFF
            if self.registers:
                vals = {}
                for k in range(4):
                    word = int(row[S.TR_REGS + k]) & ((1 << 64) - 1)
                    for j in range(4):
                        if 4 * k + j < len(REG_ORDER):
                            vals[REG_ORDER[4 * k + j]] = (word >> (16 * j)) & 0xFFFF
                rec["regs"] = vals
            if self.effects:
                e0 = int(row[S.TR_EFFECT])
                e1 = (int(buf[(n + 1) % self.capacity][S.TR_EFFECT]) if n + 1 < total
                      else eff_total)
                size = eff.shape[0]
                effects = []
                lost = e0 < eff_total - size
                if not lost:
                    for e in range(e0, e1):
                        k, a, v, x = (int(t) for t in eff[e % size])
                        item = {"kind": EFFECT_KINDS.get(k, str(k))}
                        if k in (S.EFF_MEM_READ, S.EFF_MEM_WRITE):
                            item["address"], item["value"] = a, v
                            if k == S.EFF_MEM_WRITE:
                                item["old"] = x
                        else:
                            item["port"], item["value"], item["width"] = a, v, x
                        effects.append(item)
                rec["effects"] = effects
                if lost:
                    rec["effects_lost"] = True
            out.append(rec)
        return out
