"""The ring a trace recorder keeps its events in (the DOS trace, the
hardware trace): at most ``capacity`` events numbered from 1 in the order
they came; when the ring is full a new event drops the oldest, and the
drops are counted."""

import collections
import itertools


class EventRing:
    """``events``: the retained events, oldest first, each with its
    ``sequence``; ``next_sequence``: the number the next event gets;
    ``dropped``: how many events the ring has lost; ``first_available``:
    the number of the oldest retained event (``next_sequence`` while the
    ring is empty)."""

    def __init__(self, capacity):
        self.capacity = capacity
        self.events = collections.deque(maxlen=capacity)
        self.next_sequence = 1
        self.dropped = 0

    def _add(self, event):
        """Number ``event`` and keep it (dropping the oldest from a full ring)."""
        if len(self.events) == self.capacity:
            self.dropped += 1
        event["sequence"] = self.next_sequence
        self.next_sequence += 1
        self.events.append(event)

    @property
    def first_available(self):
        return self.events[0]["sequence"] if self.events else self.next_sequence

    def page(self, after, n):
        """The (at most ``n``) retained events numbered after ``after``
        (at least ``first_available - 1``), oldest first."""
        skip = after + 1 - self.first_available
        return list(itertools.islice(self.events, skip, skip + n))
