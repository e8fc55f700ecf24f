"""Method group ``session``: ``session.status`` (one implicit session, ``pypc``)."""

from pypc_core import hookimpl
from pypc_core.rpc.errors import invalid

SESSION_ID = "pypc"


def status(ctl, params):
    if "session_id" in params and params["session_id"] != SESSION_ID:
        raise invalid(f"session_id must be {SESSION_ID!r} (pypc has one implicit "
                      f"session), not {params['session_id']!r}", "NOT_FOUND",
                      field="session_id")
    video = ctl.machine.video
    return {
        "session_id": SESSION_ID,
        "state": ctl.state,
        "state_revision": ctl.revision,
        "clock": ctl.machine.clock(),
        "target": {"cpu": "8088", "memory_bytes": 1 << 20,
                   "video": video.adapter if video is not None else "none"},
        "last_stop": ctl.last_stop,
    }


@hookimpl
def pypc_rpc_methods():
    return {"session.status": status}
