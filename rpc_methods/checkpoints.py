"""Method group ``checkpoints``: ``checkpoints.create``, ``checkpoints.list``,
``checkpoints.restore`` and ``checkpoints.delete`` -- in-memory checkpoints
of the whole machine (``Machine.checkpoint()`` / ``Machine.restore()``: CPU,
memory, devices, firmware and DOS state, disks written in place).

A restored machine runs on exactly as it did from the checkpoint, cycle for
cycle.  Breakpoints are not part of a checkpoint (they stay as they are), nor
are host files the DOS wrote.  Restoring also brings back the stop the
machine was at and whether the session's program had exited; the state
revision goes on increasing.  The machine must be paused; at most
:data:`MAX_CHECKPOINTS` are kept (about 1 MiB each); ``session.start`` drops
them with the machine they belong to."""

import collections

from pypc_core import hookimpl
from pypc_core.rpc.errors import limit, not_found
from pypc_core.rpc.parts import STATE_IMPORTED

MAX_CHECKPOINTS = 16


class Store:
    """The checkpoints of the machine being served (a controller part):
    dropped with it when ``session.start`` replaces it, kept over a snapshot
    import (a checkpoint restores the whole machine state anyway)."""

    def __init__(self):
        self.next = 1
        self.items = collections.OrderedDict()

    def on_event(self, event, ctl):
        return event == STATE_IMPORTED


def _store(ctl):
    return ctl.parts.setdefault(Store, Store)


def _entry(ctl, params):
    cp_id = params["checkpoint_id"]
    item = _store(ctl).items.get(cp_id)
    if item is None:
        raise not_found(f"no checkpoint {cp_id!r}", checkpoint_id=cp_id)
    return cp_id, item


def _describe(cp_id, item):
    return {"checkpoint_id": cp_id, "clock": item["clock"],
            "state_revision": item["state_revision"]}


def create(ctl, params):
    ctl.require_paused("checkpoints.create")
    store = _store(ctl)
    if len(store.items) >= MAX_CHECKPOINTS:
        raise limit(f"at most {MAX_CHECKPOINTS} checkpoints are kept: "
                    f"checkpoints.delete one first", limit=MAX_CHECKPOINTS)
    cp = ctl.machine.checkpoint()
    cp_id = f"cp-{store.next}"
    store.next += 1
    session = ctl.session
    store.items[cp_id] = {
        "checkpoint": cp, "clock": int(cp.clock), "state_revision": ctl.revision,
        "last_stop": ctl.last_stop,
        "exited": bool(session.exited) if session is not None else False}
    return _describe(cp_id, store.items[cp_id])


def list_(ctl, params):
    items = _store(ctl).items
    return {"checkpoints": [_describe(k, v) for k, v in items.items()],
            "state_revision": ctl.revision}


def restore(ctl, params):
    ctl.require_paused("checkpoints.restore")
    cp_id, item = _entry(ctl, params)
    revision = ctl.revision
    ctl.machine.restore(item["checkpoint"])
    ctl.extra_revision = revision + 1 - ctl.cpu.ticks
    ctl.at_slice_boundary = False
    ctl.last_stop = item["last_stop"]
    if ctl.session is not None:
        ctl.session.exited = item["exited"]
    out = _describe(cp_id, item)
    out["state_revision"] = ctl.revision
    out["restored"] = True
    return out


def delete(ctl, params):
    cp_id, _ = _entry(ctl, params)
    del _store(ctl).items[cp_id]
    return {"checkpoint_id": cp_id, "deleted": True, "state_revision": ctl.revision}


@hookimpl
def pypc_rpc_methods():
    return {"checkpoints.create": create, "checkpoints.list": list_,
            "checkpoints.restore": restore, "checkpoints.delete": delete}
