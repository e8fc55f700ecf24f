"""What method groups keep on the controller (pypc_core.rpc.parts): one
part per key, replaced parts closed, run hooks gathered in order, lifecycle
events dropping what belongs to the old machine."""

import pytest

from pypc_core.rpc.parts import MACHINE_REPLACED, STATE_IMPORTED, Counter, Parts


class Journal:
    def __init__(self, log, name):
        self.log, self.name = log, name

    def before_run(self, ctl):
        self.log.append(("before", self.name))

    def after_slice(self, ctl):
        self.log.append(("after", self.name))

    def limit(self, ctl, cycles):
        return cycles // 2

    def close(self):
        self.log.append(("close", self.name))


class Keeper:
    def __init__(self):
        self.events = []

    def on_event(self, event, ctl):
        self.events.append(event)
        return event == STATE_IMPORTED


class KeyA:
    pass


class KeyB:
    pass


def test_put_replaces_and_closes_and_hooks_follow_the_parts():
    log = []
    parts = Parts()
    a1 = parts.put(KeyA, Journal(log, "a1"))
    parts.put(KeyB, Journal(log, "b"))
    assert [h.__self__.name for h in parts.before_run] == ["a1", "b"]
    parts.put(KeyA, Journal(log, "a2"))
    assert log == [("close", "a1")] and parts.get(KeyA) is not a1
    assert [h.__self__.name for h in parts.after_slice] == ["b", "a2"]
    assert len(parts.limits) == 2
    assert parts.pop(KeyB).name == "b" and parts.pop(KeyB) is None
    assert log[-1] == ("close", "b") and KeyB not in parts
    assert [h.__self__.name for h in parts.before_run] == ["a2"]


def test_events_drop_parts_without_on_event_and_ask_the_others():
    log = []
    parts = Parts()
    parts.put(KeyA, Journal(log, "a"))
    keeper = parts.put(KeyB, Keeper())
    counter = parts.setdefault(Counter, Counter)
    assert parts.setdefault(Counter, Counter) is counter
    assert [counter.take(), counter.take()] == [1, 2]
    parts.event(STATE_IMPORTED, None)
    assert log == [("close", "a")] and KeyA not in parts and parts.get(KeyB) is keeper
    assert parts.before_run == ()
    parts.event(MACHINE_REPLACED, None)
    assert keeper.events == [STATE_IMPORTED, MACHINE_REPLACED] and KeyB not in parts
    assert parts.get(Counter) is counter and counter.take() == 3     # ids never reused
    with pytest.raises(ValueError, match="unknown controller event"):
        parts.event("reboot", None)
