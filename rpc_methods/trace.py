"""Method group ``trace``: ``trace.start``, ``trace.read`` and ``trace.stop``
-- a bounded CPU instruction trace recorded by the compiled loop itself
(``Machine.trace``), shaped into the contract's events.

What the machine's trace records, one event per CPU Tick as the contract
says: ``instruction`` (an opcode executed; a software INT and a TF trap
included), ``hlt`` (a halted CPU's clock moving on to the next device event;
its address and bytes are the waiting context, nothing executed) and
``interrupt_dispatch`` (a PIC interrupt entered, with ``interrupt: {source:
"pic", irq, vector}``; address and bytes are the interrupted context, its
effects the stack pushes and vector reads), each with the registers before
it and its memory and I/O effects in order.  ``instruction_count`` counts
Ticks of all three kinds."""

import base64

from pypc_core import hookimpl
from pypc_core.rpc import needs_live_target, params as P
from pypc_core.rpc.controller import flags_text
from pypc_core.rpc.errors import invalid
from pypc_core.rpc.stops import device_backed

MAX_EVENTS = 65536
DEFAULT_EVENTS = 256
DETAILS = ("csip", "short", "normal", "long")
MAX_READ = 256
DEFAULT_READ = 128


class CpuTrace:
    def __init__(self, ctl, detail, count):
        self.ctl = ctl
        self.detail = detail
        self.count = count
        self.active = True
        m = self.machine = ctl.machine       # (its own: session.start may replace ctl's)
        m.trace.start(capacity=count + 16, registers=detail != "csip", effects=True)
        self.end_clock = None
        self.end_regs = None
        self.end_halted = None
        self.end_revision = None
        # the register objects' in_hlt and state_revision: the CPU's HLT
        # state at the start, and (trace index, revision) marks taken before
        # every slice and step (each event is one Tick, one revision; an RPC
        # change between slices moves the revision without an event)
        self.start_halted = ctl.cpu.halted
        self.marks = [(0, ctl.revision)]

    @property
    def machine_trace(self):
        return self.machine.trace

    def recorded(self):
        return min(self.machine_trace.total, self.count)

    def limit(self, ctl, cycles):
        """Cap a running slice so the trace cannot run past its count: every
        Tick takes at least one cycle (an instruction 2, a HLT wait 1 or
        more), so ``left`` cycles hold at most ``left`` Ticks (and the one
        instruction begun before the slice's end)."""
        if not self.active:
            return cycles
        left = self.count - self.machine_trace.total
        return max(1, min(cycles, left))

    def before_run(self, ctl):
        if self.active:
            total = self.machine_trace.total
            index, revision = self.marks[-1]
            if revision + (total - index) != ctl.revision:
                self.marks.append((total, ctl.revision))

    def revision_at(self, n):
        """state_revision before event ``n``."""
        for index, revision in reversed(self.marks):
            if index <= n:
                return revision + (n - index)
        return self.marks[0][1] + n

    def after_slice(self, ctl):
        if self.active and self.machine_trace.total >= self.count:
            self.finish()

    def close(self):                    # dropped by the controller (rpc.parts)
        self.finish()

    def finish(self):
        if self.active:
            self.machine_trace.stop()
            self.active = False
            self.end_clock = self.machine.clock()
            self.end_regs = self.machine.registers.as_dict()
            self.end_halted = self.machine.cpu.halted
            self.end_revision = self.ctl.revision

    def events(self, start, n):
        mt = self.machine_trace
        total = self.recorded()
        end = min(total, start + n)
        if end <= start:
            return []
        # one record past the page gives the "after" side of the last event
        recs = mt.read(start, min(end + 1, mt.total) - start)
        ports = self.ctl.machine.ports
        memory = self.ctl.machine.memory
        symbols = self.ctl.machine.symbols
        out = []
        for i in range(end - start):
            rec = recs[i]
            nxt = recs[i + 1] if i + 1 < len(recs) else None
            raw = rec["raw"]
            n = rec["index"]
            halted_before = self._halted_before(rec, recs[i - 1] if i else None)
            if nxt is not None:
                clock_after, regs_after = nxt["cycles"], nxt.get("regs")
                halted_after = self._halted_before(nxt, rec)
                revision_after = self.revision_at(n + 1)
            elif self.active:
                clock_after, regs_after = self.ctl.machine.clock(), self.ctl.machine.registers.as_dict()
                halted_after = self.ctl.cpu.halted
                revision_after = self.ctl.revision
            else:
                clock_after, regs_after = self.end_clock, self.end_regs
                halted_after, revision_after = self.end_halted, self.end_revision
            ev = {"sequence": rec["index"], "kind": rec["kind"],
                  "address": {"space": "segmented", "segment": rec["cs"], "offset": rec["ip"]},
                  "physical": rec["linear"], "opcode_hex": raw.hex(),
                  "clock_before": rec["cycles"], "clock_after": clock_after,
                  "clock_delta": clock_after - rec["cycles"],
                  "effects": [x for e in rec.get("effects", [])
                              for x in _effects(e, ports, memory)]}
            if symbols:
                # pypc extension: the loaded symbols' name+offset of the address
                name = symbols.describe(rec["linear"])
                if name is not None:
                    ev["symbol"] = name
            if rec["kind"] == "interrupt_dispatch":
                ev["interrupt"] = {"source": "pic", "irq": rec["irq"], "vector": rec["vector"]}
            if self.detail != "csip":
                ev["registers_before"] = _shape(rec["regs"], rec["cycles"], halted_before,
                                                self.revision_at(n))
            if self.detail in ("normal", "long"):
                ev["registers_after"] = _shape(regs_after, clock_after, halted_after,
                                               revision_after)
            out.append(ev)
        return out

    def _halted_before(self, rec, prev):
        """Whether the CPU sat in HLT before the event ``rec``: a HLT wait
        starts halted and an instruction does not; a PIC dispatch starts
        halted when it wakes a HLT (the event before it was a wait or the
        HLT instruction itself)."""
        kind = rec["kind"]
        if kind == "hlt":
            return True
        if kind == "instruction":
            return False
        if prev is None:
            if rec["index"] == 0:
                return self.start_halted
            prev = self.machine_trace.read(rec["index"] - 1, 1)[0]
        if prev["kind"] == "hlt":
            return True
        if prev["kind"] == "instruction":
            return _is_hlt(prev["bytes"])
        return False


def _shape(regs, clock, in_hlt, revision):
    """The register object (COMPAT "Register object keys, exactly")."""
    flags = regs["flags"]
    return {"general": {n: regs[n] for n in ("ax", "bx", "cx", "dx", "sp", "bp", "si", "di")},
            "segments": {n: regs[n] for n in ("cs", "ds", "es", "ss")},
            "ip": regs["ip"], "flags": flags, "flags_text": flags_text(flags), "clock": clock,
            "in_hlt": bool(in_hlt), "state_revision": int(revision)}


_PREFIXES = (0x26, 0x2E, 0x36, 0x3E, 0xF0, 0xF1, 0xF2, 0xF3)


def _is_hlt(raw):
    """Whether an instruction's bytes are HLT (after any prefixes)."""
    for b in raw:
        if b not in _PREFIXES:
            return b == 0xF4
    return False


def _b64(value):
    return base64.b64encode(bytes([value & 0xFF])).decode()


def _effects(e, ports, memory):
    """The contract's effects of one recorded effect: one per byte (a word
    IN or OUT is the 8088's two byte transfers, port then port + 1).  A
    write to a device-backed byte (a memory-mapped handler) has no before
    value: the device cannot be read without side effects."""
    kind = e["kind"]
    if kind == "mem_read":
        return [{"kind": "memory_read", "address": {"space": "linear", "offset": e["address"]},
                 "byte_count": 1, "data_base64": _b64(e["value"])}]
    if kind == "mem_write":
        before = None if device_backed(memory, e["address"]) else _b64(e["old"])
        return [{"kind": "memory_write", "address": {"space": "linear", "offset": e["address"]},
                 "byte_count": 1, "before_base64": before,
                 "after_base64": _b64(e["value"])}]
    out = []
    for k in range(e["width"]):
        port = (e["port"] + k) & 0xFFFF
        out.append({"kind": "io_read" if kind == "io_read" else "io_write", "port": port,
                    "byte_count": 1, "value": (e["value"] >> (8 * k)) & 0xFF,
                    "handled": ports.owner(port) is not None})
    return out


def _current(ctl, method):
    tr = ctl.parts.get(CpuTrace)
    if tr is None:
        raise invalid(f"{method}: no trace has been started (trace.start)",
                      "PRECONDITION_FAILED")
    return tr


@needs_live_target
def start(ctl, params):
    ctl.require_paused("trace.start")
    detail = params.get("detail", "normal")
    if detail not in DETAILS:
        raise invalid(f"detail must be one of {', '.join(DETAILS)}", field="detail")
    count = P.length(params.get("instruction_count", DEFAULT_EVENTS), "instruction_count",
                     MAX_EVENTS)
    old = ctl.parts.get(CpuTrace)
    if old is not None and old.active:
        raise invalid("a trace is already recording (trace.stop it first)",
                      "PRECONDITION_FAILED")
    ctl.parts.put(CpuTrace, CpuTrace(ctl, detail, count))
    return {"active": True, "detail": detail, "instruction_count": count, "event_count": 0}


def read(ctl, params):
    tr = _current(ctl, "trace.read")
    n = P.length(params.get("limit", DEFAULT_READ), "limit", MAX_READ)
    cursor = params.get("cursor")
    total = tr.recorded()
    offset = 0
    if cursor is not None:
        offset = P.prefixed_cursor(cursor, "trace-")
        if offset > total:
            raise invalid(f"cursor {cursor} is beyond the {total} retained events",
                          field="cursor")
    events = tr.events(offset, n)
    out = {"events": events, "event_count": total, "active": tr.active, "detail": tr.detail}
    nxt = offset + len(events)
    if nxt < total:
        out["next_cursor"] = f"trace-{nxt}"
    return out


def stop(ctl, params):
    tr = _current(ctl, "trace.stop")
    tr.finish()
    return {"active": False, "event_count": tr.recorded()}


@hookimpl
def pypc_rpc_methods():
    return {"trace.start": start, "trace.read": read, "trace.stop": stop}
