"""Method group ``debug_output``: ``debug.output.read`` -- pages of the
machine's diagnostics ring (``Machine.diagnostics``, see
:mod:`pypc_core.diagnostics`): what the machine, its cards and the guest's
debug console (``--debug-port``) said.

Reading changes nothing and is allowed while the machine runs.  Cursors are
``debug-N``: "after record N"; ``next_cursor`` always continues the read
(it is the last record returned, or the last one the filters skipped, or,
with nothing new, the cursor given).  A cursor whose following records were
dropped is ``CURSOR_EXPIRED`` -- the read never restarts silently.

When ``session.start`` replaces the machine, the new machine's ring goes on
numbering after the old one (whose records are gone with it and count as
dropped), so a sequence is never reused on one server."""

import re

from pypc_core import hookimpl
from pypc_core.diagnostics import CursorExpired, DiagnosticsError, LEVELS
from pypc_core.rpc import params as P
from pypc_core.rpc.errors import invalid
from pypc_core.rpc.stops import cycles_to_ns

MAX_READ = 1024
DEFAULT_READ = 256
MAX_SOURCES = 16
PREFIX = "debug-"
CURSOR = re.compile(r"debug-[0-9]{1,19}")


class FollowedRing:
    """From the first read on, a machine that ``session.start`` puts in
    place continues the numbering of the diagnostics ring of the one it
    replaces (a controller part)."""

    def __init__(self, ring):
        self.ring = ring

    def on_event(self, event, ctl):
        ring = ctl.machine.diagnostics
        if ring is not self.ring:
            ring.follow(self.ring)
            self.ring = ring
        return True


def _follow_sessions(ctl):
    ctl.parts.setdefault(FollowedRing, lambda: FollowedRing(ctl.machine.diagnostics))


def _cursor(value, ring):
    if value is None:
        return None
    if not isinstance(value, str) or not CURSOR.fullmatch(value):
        raise invalid(f"cursor must be null or {PREFIX}N (a next_cursor), not {value!r}",
                      field="cursor")
    after = int(value[len(PREFIX):])
    last = ring.next_sequence - 1
    if after > last:
        raise invalid(f"cursor {value} is beyond the last record ({PREFIX}{last})",
                      field="cursor")
    return after


def _record(rec):
    return {"sequence": rec["sequence"], "timestamp": cycles_to_ns(rec["clock"]),
            "clock": rec["clock"], "level": rec["level"], "source": rec["source"],
            "message": rec["message"]}


def read(ctl, params):
    ring = ctl.machine.diagnostics
    n = P.length(params.get("limit", DEFAULT_READ), "limit", MAX_READ)
    min_level = params.get("min_level")
    if min_level is not None and min_level not in LEVELS:
        raise invalid(f"min_level must be one of {', '.join(LEVELS)}, not {min_level!r}",
                      field="min_level")
    sources = params.get("sources")
    if sources is not None:
        if not isinstance(sources, list) or not sources \
                or not all(isinstance(s, str) and s for s in sources):
            raise invalid("sources must be a non-empty list of source names", field="sources")
        if len(sources) > MAX_SOURCES:
            raise invalid(f"sources lists at most {MAX_SOURCES} names, not {len(sources)}",
                          "LIMIT_EXCEEDED", field="sources", limit=MAX_SOURCES)
    after = _cursor(params.get("cursor"), ring)
    try:
        records, scanned, more = ring.read(after, n, min_level, sources)
    except CursorExpired as exc:
        raise invalid(f"cursor {params['cursor']} has expired: {exc}", "CURSOR_EXPIRED",
                      first_available_sequence=exc.first) from None
    except DiagnosticsError as exc:
        raise invalid(f"cursor {params.get('cursor')}: {exc}", field="cursor") from None
    _follow_sessions(ctl)
    first = ring.first_sequence
    return {"records": [_record(r) for r in records], "next_cursor": f"{PREFIX}{scanned}",
            "has_more": more, "first_available_sequence": first,
            "dropped_record_count": first - 1, "capacity": ring.capacity}


@hookimpl
def pypc_rpc_methods():
    return {"debug.output.read": read}
