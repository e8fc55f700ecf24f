"""The machine thread's request queue: fair between connections.

Requests of one connection come out in the order they went in; between
connections the queue takes turns, one request each (round-robin), so a
client with a thousand requests queued delays another client's request by at
most one request of each other connection, not by its whole backlog.

It has the part of :class:`queue.SimpleQueue`'s interface the controller
uses: :meth:`put`, :meth:`get_nowait`, :meth:`get` with a timeout (both
raise :class:`queue.Empty`).  An item's source is ``item.conn.source`` when
it has one (the server's per-request reply slot names its connection), else
``item.conn``.
"""

import collections
import queue
import threading
import time


def _source(item):
    conn = getattr(item, "conn", None)
    return getattr(conn, "source", conn)


class FairQueue:
    def __init__(self):
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)
        self._queues = {}                       # source -> deque of items
        self._turns = collections.deque()       # sources with items, in turn order
        self._count = 0

    def put(self, item):
        source = _source(item)
        with self._lock:
            q = self._queues.get(source)
            if q is None:
                q = self._queues[source] = collections.deque()
                self._turns.append(source)
            q.append(item)
            self._count += 1
            self._ready.notify()

    def _take(self):
        source = self._turns.popleft()
        q = self._queues[source]
        item = q.popleft()
        if q:
            self._turns.append(source)          # its next request waits for its turn
        else:
            del self._queues[source]
        self._count -= 1
        return item

    def get_nowait(self):
        with self._lock:
            if not self._count:
                raise queue.Empty
            return self._take()

    def get(self, timeout=None):
        end = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while not self._count:
                if end is None:
                    self._ready.wait()
                    continue
                left = end - time.monotonic()
                if left <= 0:
                    raise queue.Empty
                self._ready.wait(left)
            return self._take()

    def qsize(self):
        with self._lock:
            return self._count

    def empty(self):
        return self.qsize() == 0
