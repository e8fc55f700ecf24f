"""Replies on one connection come in request order, errors the reader finds
included (issue 19, point 6); the machine thread takes connections in turns,
so one client's queued backlog cannot starve another (point 7).  The
latency under load is a benchmark (benchmarks/benchmark_rpc_fairness.py);
here only the order of events is checked, never a time."""

import json
import queue
import socket
import threading

import pytest

from rpc_fixtures import server_fixture

from pypc_core.rpc.fairqueue import FairQueue

fx = server_fixture(scope="module")


def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=120)
    return s, s.makefile("rwb")


def test_reader_errors_wait_for_the_requests_before_them(fx):
    """a (many valid requests), b (bad params), a bad JSON line, c: the
    replies are a..., b, null, c -- never an error overtaking a queued
    request."""
    s, f = connect(fx.port)
    with s:
        lines = [json.dumps({"jsonrpc": "2.0", "id": i, "method": "memory.read",
                             "params": {"address": 0, "length": 4096}})
                 for i in range(200)]
        lines.append(json.dumps({"jsonrpc": "2.0", "id": "b", "method": "memory.read",
                                 "params": {"address": "nowhere", "length": 1}}))
        lines.append("{not json")
        lines.append(json.dumps({"jsonrpc": "2.0", "id": "c", "method": "state.get_registers"}))
        f.write(("\n".join(lines) + "\n").encode())
        f.flush()
        ids = []
        for _ in lines:
            reply = json.loads(f.readline())
            ids.append(reply["id"])
            if reply["id"] in ("b", None):
                assert "error" in reply
            else:
                assert "result" in reply, reply
    assert ids == list(range(200)) + ["b", None, "c"]


def test_a_parked_wait_gives_its_place_up(fx):
    """execution.wait with timeout_ms is answered when its operation ends
    (docs/rpc.md); the requests after it are not held behind it."""
    s, f = connect(fx.port)
    with s:
        def send(obj):
            f.write(json.dumps(obj).encode() + b"\n")
            f.flush()
        send({"jsonrpc": "2.0", "id": 1, "method": "execution.pause"})
        assert json.loads(f.readline())["id"] == 1
        send({"jsonrpc": "2.0", "id": 2, "method": "execution.continue"})
        op = json.loads(f.readline())["result"]["operation_id"]
        send({"jsonrpc": "2.0", "id": 3, "method": "execution.wait",
              "params": {"operation_id": op, "timeout_ms": 60000}})
        send({"jsonrpc": "2.0", "id": 4, "method": "state.get_registers"})
        assert json.loads(f.readline())["id"] == 4       # not behind the wait
        send({"jsonrpc": "2.0", "id": 5, "method": "execution.pause"})
        got = {json.loads(f.readline())["id"] for _ in range(2)}
        assert got == {3, 5}


class Item:
    def __init__(self, conn, n):
        self.conn, self.n = conn, n


def test_the_queue_takes_connections_in_turns():
    q = FairQueue()
    for n in range(5):
        q.put(Item("a", n))
    q.put(Item("b", 0))
    q.put(Item("c", 0))
    q.put(Item("b", 1))
    out = [(i.conn, i.n) for i in (q.get_nowait() for _ in range(8))]
    assert out == [("a", 0), ("b", 0), ("c", 0), ("a", 1), ("b", 1), ("a", 2), ("a", 3),
                   ("a", 4)]
    with pytest.raises(queue.Empty):
        q.get_nowait()
    with pytest.raises(queue.Empty):
        q.get(timeout=0.01)
    threading.Timer(0.05, q.put, (Item("d", 0),)).start()
    assert q.get(timeout=60).conn == "d"


def test_a_backlog_does_not_starve_a_new_client(fx):
    """A client queues 1,000 reads of 16 KiB (and does not read its
    replies yet); a second client's one request is answered before the
    first client's backlog is done.  (A reply carries the bytes in more
    than one encoding: 1,000 replies of 64 KiB pass MAX_BACKLOG, 64 MiB, and
    on a quick host the server rightly drops a client that has not read
    that much.)"""
    s_big, f_big = connect(fx.port)
    s_new, f_new = connect(fx.port)
    with s_big, s_new:
        req = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "memory.read",
                          "params": {"address": 0, "length": 16384}}).encode() + b"\n"
        f_big.write(req * 1000)
        f_big.flush()
        served_before = fx.controller.requests_served
        f_new.write(b'{"jsonrpc":"2.0","id":"new","method":"state.get_registers"}\n')
        f_new.flush()
        reply = json.loads(f_new.readline())
        served = fx.controller.requests_served - served_before
        assert reply["id"] == "new" and "result" in reply
        assert served < 1000, served
        for _ in range(1000):                   # drain the big client's replies
            assert json.loads(f_big.readline())["id"] == 0
