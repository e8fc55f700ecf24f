"""The machine's diagnostics ring: a bounded journal of what the machine,
its cards and the guest have to say.

Every :class:`~pypc_core.machine.Machine` owns one (``machine.diagnostics``).
These writers feed it:

* the machine itself, through ``Machine.note(level, message, source=...)``
  (source ``machine``, ``bios``, ``dos``): an image opened read-only, a
  fault stop naming the opcode, a guest disk write the firmware refused, a
  DOS function that is not provided, a restored state;
* cards, through their board: ``board.log(level, message)`` (source = the
  card's name, e.g. ``fdc``), for what a card refuses or ignores;
* viewers: the VNC server notes a pixel format it refused (source ``vnc``);
* the RPC dispatcher: a method handler that raised, or whose result did not
  match its schema (source ``rpc``: an ``error`` record naming the method
  and its plugin, then a ``debug`` record with the traceback on one line);
* the guest, through the opt-in debug console port
  (:mod:`pypc_core.debugcon`, ``pypc run --debug-port``; source ``guest``).

A record is ``{sequence, clock, level, source, message}``:

``sequence``
    1, 2, 3, ... in the order written; never reused (a ring that replaces
    another one continues its numbering: :meth:`Diagnostics.follow`).
``clock``
    the emulated CPU cycle when it was written (the machine's time; runs are
    deterministic, so a record's clock is too).  No host time is kept.
``level``
    ``debug``, ``info``, ``warning`` or ``error`` (:data:`LEVELS`).
``source``
    who said it: ``machine``, ``bios``, ``dos``, ``guest``, ``rpc`` or a
    card's name.
``message``
    one line of text, at most :data:`MAX_MESSAGE` characters (longer ones
    are cut and end with ``...``).

The ring holds the last :data:`CAPACITY` records; older ones are dropped,
and ``first_sequence - 1`` of them are gone (every sequence before the
first retained one), so a reader always knows how many it missed.

The ring is host-side, like the instruction and hardware traces: it is not
machine state.  Snapshots and checkpoints do not contain it and restoring
one neither clears nor rewinds it (the restore adds a record saying so).
"""

import collections
import threading

LEVELS = ("debug", "info", "warning", "error")
LEVEL_RANK = {name: i for i, name in enumerate(LEVELS)}
CAPACITY = 4096             # records retained
MAX_MESSAGE = 1024          # characters in one record's message
MAX_SOURCE = 64             # characters in a source name


class DiagnosticsError(ValueError):
    """A bad level, source or message given to :meth:`Diagnostics.add`."""


class Diagnostics:
    """A bounded, numbered journal of diagnostic records (see the module
    docstring).  ``clock`` is a function returning the emulated cycle.
    Writing and reading are safe from any thread."""

    def __init__(self, clock=None, capacity=CAPACITY):
        if not isinstance(capacity, int) or capacity < 1:
            raise DiagnosticsError(f"the capacity must be a positive integer, not {capacity!r}")
        self.clock = clock if clock is not None else (lambda: 0)
        self.capacity = capacity
        self._records = collections.deque(maxlen=capacity)
        self._lock = threading.Lock()
        self.next_sequence = 1
        self._listeners = []

    # -- writing --------------------------------------------------------------------
    def add(self, level, message, source):
        """Append one record; returns it.  ``level`` must be one of
        :data:`LEVELS`, ``source`` a non-empty name; ``message`` is any
        text (cut at :data:`MAX_MESSAGE` characters)."""
        if level not in LEVEL_RANK:
            raise DiagnosticsError(f"level must be one of {', '.join(LEVELS)}, not {level!r}")
        if not isinstance(source, str) or not source or len(source) > MAX_SOURCE:
            raise DiagnosticsError(f"source must be a name of 1-{MAX_SOURCE} characters, "
                                   f"not {source!r}")
        message = str(message)
        if len(message) > MAX_MESSAGE:
            message = message[:MAX_MESSAGE - 3] + "..."
        with self._lock:
            record = {"sequence": self.next_sequence, "clock": int(self.clock()),
                      "level": level, "source": source, "message": message}
            self.next_sequence += 1
            self._records.append(record)
            listeners = list(self._listeners)
        for fn in listeners:
            fn(record)
        return record

    def subscribe(self, fn):
        """Call ``fn(record)`` for every record added from now on (the
        launcher echoes guest lines of a headless run to stderr)."""
        self._listeners.append(fn)

    def unsubscribe(self, fn):
        if fn in self._listeners:
            self._listeners.remove(fn)

    def follow(self, previous):
        """Continue the numbering of ``previous``, the ring of a machine this
        one replaces (an RPC ``session.start``): the records already here are
        renumbered to come after every record ``previous`` ever had, which
        count as dropped here.  Call it before anyone has read this ring."""
        with self._lock:
            delta = previous.next_sequence - 1
            if delta <= 0:
                return
            for rec in self._records:
                rec["sequence"] += delta
            self.next_sequence += delta

    # -- reading --------------------------------------------------------------------
    @property
    def first_sequence(self):
        """The sequence of the oldest retained record (``next_sequence``
        when the ring is empty)."""
        with self._lock:
            return self._records[0]["sequence"] if self._records else self.next_sequence

    @property
    def dropped(self):
        """How many records are no longer retained (overwritten, or of the
        machine this one replaced)."""
        return self.first_sequence - 1

    def __len__(self):
        return len(self._records)

    def records(self):
        """Copies of every retained record, oldest first."""
        with self._lock:
            return [dict(r) for r in self._records]

    def read(self, after=None, limit=None, min_level=None, sources=None):
        """Up to ``limit`` records with a sequence above ``after`` (None:
        from the oldest retained), of at least ``min_level`` and, if given,
        from one of ``sources``.  Returns ``(records, last_scanned, more)``:
        ``last_scanned`` is the sequence a next read continues after (the
        last record returned, or, when the filters skipped the rest, the
        last one looked at), ``more`` whether retained records follow it.
        Raises :class:`CursorExpired` when records after ``after`` were
        already dropped, :class:`DiagnosticsError` for an ``after`` beyond
        the last record."""
        rank = LEVEL_RANK[min_level] if min_level is not None else 0
        wanted = set(sources) if sources else None
        with self._lock:
            first = self._records[0]["sequence"] if self._records else self.next_sequence
            last = self.next_sequence - 1
            if after is None:
                after = first - 1
            elif after > last:
                raise DiagnosticsError(f"sequence {after} is beyond the last record ({last})")
            elif after < first - 1:
                raise CursorExpired(after, first)
            out = []
            scanned = after
            for rec in list(self._records)[after + 1 - first:]:
                if limit is not None and len(out) >= limit:
                    break
                scanned = rec["sequence"]
                if LEVEL_RANK[rec["level"]] >= rank and (wanted is None
                                                         or rec["source"] in wanted):
                    out.append(dict(rec))
            return out, scanned, scanned < last


class CursorExpired(DiagnosticsError):
    """A read after a sequence whose successors were already dropped."""

    def __init__(self, after, first):
        super().__init__(f"records after {after} were dropped: the oldest retained is {first}")
        self.after = after
        self.first = first


__all__ = ["CAPACITY", "CursorExpired", "Diagnostics", "DiagnosticsError", "LEVELS",
           "MAX_MESSAGE"]
