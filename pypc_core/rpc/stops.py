"""Machine stops (``pypc_core.debugger.Stop``) in the contract's shape, and
the breakpoint descriptors the RPC keeps beside the machine's breakpoint
table.

The machine's table knows linear addresses and parsed conditions; the RPC
remembers what the client asked for (the address space and form, the
condition triple, the interrupt event) in :class:`BreakpointMeta`, keyed by
the table's id, so descriptors and stops show the client's own terms."""

import attrs

from ..bus.memory import KIND_HANDLER, PAGE_SHIFT
from ..cpu import state as S

NS_PER_CYCLE_NUM = 1_000_000_000
CONTRACT_HZ = 4_770_000             # the contract's ns <-> cycles factor


def cycles_to_ns(cycles):
    return int(cycles) * NS_PER_CYCLE_NUM // CONTRACT_HZ


def ns_to_cycles(ns):
    """The first cycle at or after ``ns`` nanoseconds."""
    return -(-int(ns) * CONTRACT_HZ // NS_PER_CYCLE_NUM)


@attrs.define
class BreakpointMeta:
    rpc_id: str                 # bp-N or until-N
    kind: str                   # the contract's kind name
    once: bool
    skip: int
    every: int
    address: dict = None        # normalised address object (execution, memory)
    length: int = 1
    condition: dict = None      # {register, operator, value}
    event: dict = None          # interrupt: {type, number, ah?, al?}
    predicate: bool = False     # a run_until predicate (never listed)

    def descriptor(self, hits):
        d = {"breakpoint_id": self.rpc_id, "kind": self.kind, "once": self.once,
             "hit_filter": {"skip": self.skip, "every": self.every}, "hit_count": hits}
        if self.event is not None:
            d["event"] = dict(self.event)
        else:
            d["address"] = dict(self.address)
            d["length"] = self.length
        if self.condition is not None:
            d["condition"] = dict(self.condition)
        return d


def device_backed(memory, linear):
    """Whether the byte at ``linear`` belongs to a memory-mapped device
    handler (every access calls the device; the RAM array under it is not
    the device's value), so a write's old value cannot be known."""
    return memory.page_kind[(int(linear) & 0xFFFFF) >> PAGE_SHIFT] == KIND_HANDLER


def segmented(cs, ip):
    return {"space": "segmented", "segment": int(cs), "offset": int(ip)}


def contract_stop(ctl, stop):
    """The contract's stop object for a machine Stop, or None when the run
    simply used its budget (or the CPU sits in HLT with interrupts off)."""
    kind = stop.kind
    if kind in ("budget", "halt"):
        return None
    if kind == "pause":
        return ctl.make_stop("pause")
    if kind == "step":
        return ctl.make_stop("step")
    if kind == "fault":
        return ctl.make_stop("fault", message=str(stop.detail.get("message", "core fault")))
    bp = stop.breakpoint
    meta = ctl.bp_meta.get(bp.id) if bp is not None else None
    if meta is None:
        # a stop from something the RPC did not create (an old-style flag)
        return ctl.make_stop("pause")
    # a run_until hit has the matching breakpoint's shape (its id, the
    # predicate's ``until-N``, in breakpoint_id) plus predicate_id (COMPAT
    # "run_until hit")
    fields = {"breakpoint_id": meta.rpc_id}
    if meta.predicate:
        kind = "run_until"
        fields["predicate_id"] = meta.rpc_id
    else:
        kind = "breakpoint"
    if meta.event is not None:
        intr = stop.interrupt or {}
        fields["event"] = {"type": "software_interrupt", "phase": "before_handler",
                           "number": int(intr.get("number", meta.event["number"])),
                           "ah": int(intr.get("ah", 0)), "al": int(intr.get("al", 0))}
    else:
        fields["address"] = dict(meta.address)
        if meta.kind != "execution":
            fields["length"] = meta.length
    fields["hit_count"] = int(bp.hits)
    acc = stop.access
    if acc is not None and acc.get("space") == "memory":
        access = {"kind": "memory_read" if acc["kind"] == "read" else "memory_write",
                  "address": {"space": "linear", "offset": int(acc["address"])},
                  "byte_count": int(acc.get("width", 1)),
                  "instruction_address": segmented(acc["cs"], acc["ip"]),
                  "new_value": int(acc["value"])}
        if acc.get("old") is not None and not (
                acc["kind"] != "read" and device_backed(ctl.machine.memory, acc["address"])):
            access["old_value"] = int(acc["old"])
        fields["access"] = access
    return ctl.make_stop(kind, **fields)


def resumes_breakpoint_stop(ctl):
    """Whether execution resumes from the stop of an execution or
    software-interrupt breakpoint (or run_until predicate) at the current
    CS:IP.  Only then is that breakpoint let through for one Tick (contract:
    "Resuming an execution or pre-dispatch software-INT stop skips that
    breakpoint for one CPU Tick"); after any other stop -- a step, a pause,
    a memory watchpoint, a restore -- a breakpoint at CS:IP has not been
    checked yet and hits when execution resumes."""
    stop = ctl.last_stop
    if not stop or stop.get("kind") not in ("breakpoint", "run_until") or "access" in stop:
        return False
    regs = stop.get("registers") or {}
    here = (int(ctl.cpu.regs[S.CS]), int(ctl.cpu.regs[S.IP]))
    return ((regs.get("segments") or {}).get("cs"), regs.get("ip")) == here
