"""What a method group keeps on a controller: its parts.

A method group (a plugin of ``pypc.rpc_methods``) is a module of functions;
what it must remember between requests -- a trace journal, a video history,
a checkpoint store, a cache -- it keeps as a *part* of the controller that
serves it, under a key of its own (its class, or a constant of its module;
never a string another group could spell)::

    rec = ctl.parts.get(Recorder)             # None until started
    ctl.parts.put(Recorder, Recorder(ctl))    # closes the one it replaces
    store = ctl.parts.setdefault(Store, lambda: Store())

The part protocol (every method optional):

``before_run(ctl)``
    before every slice or single step the controller runs;
``limit(ctl, cycles) -> cycles``
    the largest slice the part allows now (a trace that must see every
    instruction caps it);
``after_slice(ctl)``
    after every slice or step;
``on_event(event, ctl) -> bool``
    a lifecycle event: :data:`MACHINE_REPLACED` (``session.start`` put a new
    machine in place; ``ctl.machine`` is the new one) or
    :data:`STATE_IMPORTED` (``machine.snapshot.import`` replaced the
    machine's state).  True keeps the part (it may have adjusted itself);
    False -- the default for a part without ``on_event`` -- closes and drops
    it, as a journal of the old machine must be;
``close()``
    the part is dropped (replaced, popped, or by an event): stop recording,
    give back what it took.

The controller runs the hooks in the order the parts were put.  Groups
never reach into each other's parts: a group that must know of another's
state asks the machine (which owns every emulation rule), not the group.
"""

MACHINE_REPLACED = "machine_replaced"
STATE_IMPORTED = "snapshot_imported"
EVENTS = (MACHINE_REPLACED, STATE_IMPORTED)


class Parts:
    """The parts of one controller, and its run hooks gathered from them."""

    def __init__(self):
        self._parts = {}
        self.before_run = ()            # bound before_run of every part, in order
        self.limits = ()
        self.after_slice = ()

    def get(self, key):
        return self._parts.get(key)

    def __contains__(self, key):
        return key in self._parts

    def setdefault(self, key, factory):
        """The part under ``key``, made by ``factory()`` if there is none."""
        part = self._parts.get(key)
        if part is None:
            part = self.put(key, factory())
        return part

    def put(self, key, part):
        """Keep ``part`` under ``key``; the part it replaces is closed.
        Returns ``part``."""
        old = self._parts.pop(key, None)
        if old is not None and old is not part:
            _close(old)
        self._parts[key] = part
        self._gather()
        return part

    def pop(self, key):
        """Drop and close the part under ``key`` (none: nothing happens);
        returns it."""
        part = self._parts.pop(key, None)
        if part is not None:
            _close(part)
            self._gather()
        return part

    def event(self, event, ctl):
        """Tell every part of ``event``; those that do not keep themselves
        are closed and dropped."""
        if event not in EVENTS:
            raise ValueError(f"unknown controller event {event!r}")
        for key, part in list(self._parts.items()):
            handler = getattr(part, "on_event", None)
            if handler is None or not handler(event, ctl):
                del self._parts[key]
                _close(part)
        self._gather()

    def _gather(self):
        parts = list(self._parts.values())
        self.before_run = tuple(p.before_run for p in parts if hasattr(p, "before_run"))
        self.limits = tuple(p.limit for p in parts if hasattr(p, "limit"))
        self.after_slice = tuple(p.after_slice for p in parts if hasattr(p, "after_slice"))


def _close(part):
    close = getattr(part, "close", None)
    if close is not None:
        close()


class Counter:
    """Numbers handed out in sequence (breakpoint, session, history ids): a
    part that outlives the machine, so ids are never reused in a server's
    life."""

    def __init__(self, first=1):
        self.next = first

    def take(self):
        n = self.next
        self.next += 1
        return n

    def on_event(self, event, ctl):
        return True
