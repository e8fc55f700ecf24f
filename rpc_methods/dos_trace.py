"""Method group ``dos_trace``: ``dos.trace.start``, ``dos.trace.read`` and
``dos.trace.stop`` -- a bounded recorder of the file, directory, program and
memory calls the built-in DOS serves (``pypc_core.dos.trace.DosTrace``),
with the conventions of ``hardware.trace.*``:

* start works paused or running, and replaces (stops) a previous DOS trace;
* the ring keeps the newest ``capacity`` events and counts the dropped ones
  (``dropped_event_count``, ``first_available_sequence``);
* ``read`` pages with ``cursor`` ("dos-N": the events after sequence N)
  and ``limit``; a cursor before the retained events is ``CURSOR_EXPIRED``;
* ``stop`` ends recording and keeps the events readable;
* reading or stopping before any start is ``PRECONDITION_FAILED``;
  ``session.start`` and ``machine.snapshot.import`` drop the trace with the
  machine state it recorded (``snapshot._JOURNALS``).

On a machine without the built-in DOS (a DOS booted from a disk image),
the calls are recorded where they reach the INT 21h handler the guest DOS
installed (``pypc_core.dos.guest_trace.GuestDosTrace``; a controller slice
hook hands it the arrivals a step lands on); before a DOS has installed
one, start is ``PRECONDITION_FAILED``.  ``emulated_time`` is in ns of
emulated time, ``clock`` in CPU cycles."""


from pypc_core import hookimpl
from pypc_core.dos.guest_trace import GuestDosTrace, handler_entry
from pypc_core.dos.trace import (
    CLASSES, DEFAULT_CAPACITY, DEFAULT_DATA_BYTES, MAX_CAPACITY, MAX_DATA_BYTES,
    DosTrace, TraceConfigError,
)
from pypc_core.rpc import params as P
from pypc_core.rpc.errors import invalid, limit
from pypc_core.rpc.stops import cycles_to_ns



class DosTraceJournal:
    """The DOS trace of one machine, kept as a controller part
    (:mod:`pypc_core.rpc.parts`): dropped, and stopped, with the machine it
    records."""

    def __init__(self, trace):
        self.trace = trace
        if isinstance(trace, GuestDosTrace):
            # a step that landed on the guest DOS's handler or a return
            self.after_slice = lambda ctl: trace.after_stop()

    def close(self):
        self.trace.stop()
MAX_READ = 65536
DEFAULT_READ = 128
CURSOR_PREFIX = "dos-"



def _current(ctl, method):
    journal = ctl.parts.get(DosTraceJournal)
    rec = journal.trace if journal is not None else None
    if rec is None:
        raise invalid(f"{method}: no DOS trace has been started (dos.trace.start)",
                      "PRECONDITION_FAILED")
    return rec


def _meta(rec):
    out = {"active": rec.active, "capacity": rec.capacity,
           "dropped_event_count": rec.dropped,
           "first_available_sequence": rec.first_available,
           "event_count": rec.recorded, "classes": list(rec.classes),
           "data_bytes": rec.data_bytes,
           "dos": "guest" if isinstance(rec, GuestDosTrace) else "built_in"}
    entry = getattr(rec, "handlers", {}).get(0x21)
    if entry is not None:
        out["handler"] = {"space": "segmented", "segment": entry[0], "offset": entry[1]}
    if rec.path_contains is not None:
        out["path_contains"] = rec.path_contains
    return out


def _shape(event):
    out = dict(event)
    out["emulated_time"] = cycles_to_ns(event["clock"])
    return out


def start(ctl, params):
    dos = getattr(ctl.machine, "dos", None)
    capacity = P.length(params.get("capacity", DEFAULT_CAPACITY), "capacity", MAX_CAPACITY)
    data_bytes = P.number(params.get("data_bytes", DEFAULT_DATA_BYTES), "data_bytes", 0,
                          1 << 62)
    if data_bytes > MAX_DATA_BYTES:
        raise limit(f"data_bytes {data_bytes} is over the limit of {MAX_DATA_BYTES}",
                    field="data_bytes", limit=MAX_DATA_BYTES)
    names = params.get("classes", ["all"])
    if not names:
        raise invalid("classes must name at least one class", field="classes")
    for i, name in enumerate(names):
        if name != "all" and name not in CLASSES:
            raise invalid(f"classes[{i}]: {name!r} is not one of all, {', '.join(CLASSES)}",
                          field=f"classes[{i}]")
    classes = CLASSES if "all" in names else names
    needle = params.get("path_contains")
    settings = dict(capacity=capacity, classes=classes, path_contains=needle,
                    data_bytes=data_bytes)
    try:
        rec = DosTrace(dos, **settings) if dos is not None else \
            GuestDosTrace(ctl.machine, **settings)
    except TraceConfigError as exc:
        if exc.limit is not None:
            raise limit(str(exc), field=exc.field, limit=exc.limit) from None
        raise invalid(str(exc), field=exc.field) from None
    if dos is None and handler_entry(ctl.machine, 0x21) is None:
        raise invalid("dos.trace.start: this machine has no built-in DOS and no DOS has "
                      "installed an INT 21h handler yet (the vector is empty or the BIOS's "
                      "IRET): start the trace once the DOS has booted", "PRECONDITION_FAILED")
    ctl.parts.pop(DosTraceJournal)      # (stops the one it replaces first)
    rec.start()
    ctl.parts.put(DosTraceJournal, DosTraceJournal(rec))
    return _meta(rec)


def read(ctl, params):
    rec = _current(ctl, "dos.trace.read")
    n = P.length(params.get("limit", DEFAULT_READ), "limit", MAX_READ)
    cursor = params.get("cursor")
    after = P.ring_cursor(cursor, CURSOR_PREFIX, rec.first_available, rec.next_sequence)
    events = [_shape(e) for e in rec.page(after, n)]
    out = _meta(rec)
    out["events"] = events
    out["next_cursor"] = f"{CURSOR_PREFIX}{events[-1]['sequence']}" if events else cursor
    return out


def stop(ctl, params):
    rec = _current(ctl, "dos.trace.stop")
    rec.stop()
    return _meta(rec)


@hookimpl
def pypc_rpc_methods():
    return {"dos.trace.start": start, "dos.trace.read": read, "dos.trace.stop": stop}
