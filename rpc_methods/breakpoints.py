"""Method group ``breakpoints``: ``breakpoints.create``, ``breakpoints.list``
and ``breakpoints.delete`` -- execution, memory read/write/access and
software-interrupt breakpoints, as thin adapters over the machine's
breakpoint table (``Machine.breakpoints``), which arms them in the compiled
loop.  What a breakpoint spec means (``build``) is shared with
``execution.run_until``'s predicates: :mod:`pypc_core.rpc.breakpoint_specs`."""

from pypc_core import hookimpl
from pypc_core.rpc import needs_live_target
from pypc_core.rpc.breakpoint_specs import build
from pypc_core.rpc.errors import invalid, not_found
from pypc_core.rpc.parts import Counter


class BreakpointIds(Counter):
    """bp-N ids, never reused in a server's life (a controller part)."""


def _listed(ctl):
    """(bp, meta) of the RPC's live breakpoints (predicates never listed)."""
    table = ctl.machine.breakpoints
    live = {bp.id: bp for bp in table.list()}
    for bp_id in [i for i in ctl.bp_meta if i not in live]:
        del ctl.bp_meta[bp_id]              # one-shots that fired
    return [(live[i], m) for i, m in sorted(ctl.bp_meta.items()) if not m.predicate]


@needs_live_target
def create(ctl, params):
    if "once" in params and not isinstance(params["once"], bool):
        raise invalid("once must be true or false", field="once")
    ids = ctl.parts.setdefault(BreakpointIds, BreakpointIds)
    bp, meta = build(ctl, params, f"bp-{ids.next}")
    ids.take()                          # (a refused breakpoint uses no number)
    return meta.descriptor(bp.hits)


def list_(ctl, params):
    return {"breakpoints": [m.descriptor(bp.hits) for bp, m in _listed(ctl)]}


def delete(ctl, params):
    rpc_id = params["breakpoint_id"]
    for bp, meta in _listed(ctl):
        if meta.rpc_id == rpc_id:
            ctl.machine.breakpoints.remove(bp.id)
            del ctl.bp_meta[bp.id]
            return {"breakpoint_id": rpc_id, "deleted": True}
    raise not_found(f"no breakpoint {rpc_id!r}", breakpoint_id=rpc_id)


@hookimpl
def pypc_rpc_methods():
    return {"breakpoints.create": create, "breakpoints.list": list_,
            "breakpoints.delete": delete}
