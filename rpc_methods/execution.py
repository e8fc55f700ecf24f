"""Method group ``execution``: ``execution.pause``, ``execution.continue``
(alias ``execution.go``), ``execution.step``, ``execution.run_until`` and
``execution.wait``.

Continue, run-until and step return an operation id at once; the machine
thread completes the operation when the machine stops, and
``execution.wait`` reports it (waiting up to ``timeout_ms`` without holding
the machine thread: the reply is parked and sent when the operation
completes or the time is up)."""

import time

from pypc_core import hookimpl
from pypc_core.rpc import needs_live_target, params as P
from pypc_core.rpc.controller import Park
from pypc_core.rpc.errors import invalid, not_paused
from pypc_core.rpc.stops import cycles_to_ns, ns_to_cycles

from pypc_core.rpc.breakpoint_specs import build as build_breakpoint
from pypc_core.rpc.parts import Counter


class PredicateIds(Counter):
    """until-N ids of run_until predicates (a controller part)."""

MAX_WAIT_MS = 60000


def pause(ctl, params):
    # (an accepted step has always run before the next request is served)
    if ctl.running:
        ctl.stop_now(ctl.make_stop("pause"))
    out = ctl.registers()
    out["paused"] = True
    return out


def _refuse_if_busy(ctl, method):
    if ctl.busy():
        active = ctl.active or ctl.pending_step
        raise invalid(f"{method}: operation {active.id} is still active (execution.wait "
                      f"for it, or execution.pause)", "TARGET_RUNNING",
                      operation_id=active.id)


@needs_live_target
def resume(ctl, params):
    _refuse_if_busy(ctl, "execution.continue")
    op = ctl.new_operation("continue")
    entry = ctl.registers()
    ctl.resume(op)
    entry.update({"operation_id": op.id, "state": "running", "paused": False})
    return entry


@needs_live_target
def step(ctl, params):
    mode = params.get("mode", "into")
    if mode not in ("into", "over"):
        raise invalid(f"execution.step mode {mode!r}: 'into' or 'over'", field="mode")
    if ctl.running:
        raise not_paused("execution.step")
    _refuse_if_busy(ctl, "execution.step")
    op = ctl.new_operation("step")
    op.mode = mode          # over: a CALL, INT, LOOP or REP string runs to the next instruction
    ctl.pending_step = op
    entry = ctl.registers()
    entry.update({"stepping": True, "operation_id": op.id})
    return entry


@needs_live_target
def run_until(ctl, params):
    if ctl.running:
        raise not_paused("execution.run_until")
    _refuse_if_busy(ctl, "execution.run_until")
    predicate = params.get("predicate")
    if predicate is None and "max_emulated_ns" not in params:
        raise invalid("execution.run_until needs a predicate and/or max_emulated_ns",
                      field="predicate")
    if predicate is not None and "once" in predicate:
        raise invalid("a run_until predicate is always one-shot: leave out once",
                      field="predicate.once")
    requested = None
    if "max_emulated_ns" in params:
        requested = P.number(params["max_emulated_ns"], "max_emulated_ns", 1, (1 << 64) - 1)
    ids = ctl.parts.setdefault(PredicateIds, PredicateIds)
    pid = ids.next
    bp = None
    if predicate is not None:
        bp, _ = build_breakpoint(ctl, predicate, f"until-{pid}", predicate=True)
    ids.take()                          # (a refused predicate uses no number)
    op = ctl.new_operation("run_until", predicate=bp.id if bp is not None else None)
    if requested is not None:
        op.start = ctl.machine.clock()
        op.requested_ns = requested
        op.deadline = ns_to_cycles(cycles_to_ns(op.start) + requested)
    ctl.resume(op)
    return {"operation_id": op.id, "predicate_id": f"until-{pid}", "state": "running"}


def _done(op):
    return {"state": "stopped", "stop_reason": op.stop}


def wait(ctl, params):
    op = ctl.operation(params["operation_id"])
    timeout = P.number(params.get("timeout_ms", 0), "timeout_ms", 0, MAX_WAIT_MS)
    if op.stop is not None:
        return _done(op)
    if timeout == 0:
        return {"running": True}
    return Park(lambda: _done(op) if op.stop is not None else None,
                time.perf_counter() + timeout / 1000.0, {"running": True})


@hookimpl
def pypc_rpc_methods():
    return {"execution.pause": pause, "execution.continue": resume,
            "execution.go": resume, "execution.step": step,
            "execution.wait": wait, "execution.run_until": run_until}
