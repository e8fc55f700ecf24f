"""Schema-driven fuzzing of the RPC server over a real socket (hypothesis
strategies generated from schemas/, see rpc_strategies.py) plus broken
framing.  About 3,000 requests against a paused machine; checked: the
server never crashes, every request with an id gets exactly one reply with
that id, every result matches its schema, and a rejected request changes
nothing (CPU state, all of memory, keyboard queues, execution state,
operations, snapshots).  benchmarks/fuzz_rpc_long.py runs the same for
100,000+ requests."""

import hashlib
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pypc_rpc_methods.video import Snapshots
from rpc_client import RpcFixture
from rpc_strategies import SchemaStrategies, broken_lines

# continue/go/step change state after their reply (the guest runs, the step
# executes): they have their own tests.  machine.snapshot.* read and write
# host files named by their params (another suite's business).
EXCLUDED = {"execution.continue", "execution.go", "execution.step",
            "machine.snapshot.export", "machine.snapshot.import"}
STRATEGIES = SchemaStrategies()


@pytest.fixture(scope="module")
def fx():
    f = RpcFixture()
    f.client().call("execution.pause")
    yield f
    f.close()


def fingerprint(fx):
    """The machine and the server's execution state (read while the paused
    machine thread waits for requests)."""
    m, ctl = fx.machine, fx.controller
    kb = m.keyboard
    part = ctl.parts.get(Snapshots)
    snaps = part.items if part is not None else {}
    return (ctl.revision, m.cpu.regs.tobytes(), m.cpu.ctl.tobytes(),
            hashlib.sha1(m.memory.mem.tobytes()).digest(), tuple(kb.typing), tuple(kb.fifo),
            tuple(sorted(ctl.pressed)), json.dumps(ctl.last_stop, sort_keys=True),
            ctl.running, tuple(ctl.operations), tuple(snaps))


def methods(fx):
    return sorted(set(fx.server.methods) - EXCLUDED)


class Counter:
    requests = 0
    outcomes = {}


def settled(fx, c):
    """The fingerprint once the machine holds still again: a request that
    succeeded may have set it running (an execution.run_until): pause it,
    so that the next rejected request is judged against a machine that
    cannot have moved by itself."""
    if fx.controller.running:
        c.call("execution.pause")
    return fingerprint(fx)


@settings(max_examples=600, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_fuzz_requests(fx, data):
    c = fx.clients[0]
    names = methods(fx)
    batch = data.draw(st.lists(st.one_of(
        STRATEGIES.request(names).map(lambda r: ("call",) + r),
        STRATEGIES.request(names).map(lambda r: ("notify",) + r),
        broken_lines().map(lambda line: ("raw", line, None))), min_size=4, max_size=16))
    live = data.draw(st.lists(st.booleans(), min_size=len(batch), max_size=len(batch)))
    before = fingerprint(fx)
    for (kind, a, b), current in zip(batch, live):
        Counter.requests += 1
        if current and isinstance(b, dict) and "expected_state_revision" in b:
            b = dict(b, expected_state_revision=fx.controller.revision)   # get past the guard
        if kind == "call":
            reply = c.request(a, b)                  # checks id and result schema
            key = (a, reply["error"]["data"]["reason"] if "error" in reply else "ok")
            Counter.outcomes[key] = Counter.outcomes.get(key, 0) + 1
            if "error" in reply:
                assert reply["error"]["code"] in (-32600, -32601, -32602), reply
                assert fingerprint(fx) == before, (a, b, reply)
            else:
                before = settled(fx, c)
        elif kind == "notify":
            c.notify(a, b)
            reply = c.request("session.status", rid="ping")   # exactly one reply comes
            assert reply["id"] == "ping" and "result" in reply
            before = settled(fx, c)
        else:
            c.send_raw(a + b"\n")
            reply = c.read_reply()
            assert reply["id"] in (None, 1), reply
            if "error" in reply:
                assert reply["error"]["code"] in (-32700, -32600, -32601, -32602), reply
                assert fingerprint(fx) == before
            else:
                before = settled(fx, c)
    assert fx.controller.running is False


def test_fuzz_sent_thousands_of_requests(fx):
    """(runs after the fuzzer in this module) the server is alive and the
    fuzzer really sent thousands of requests."""
    assert Counter.requests >= 2000
    ok = {m for (m, outcome) in Counter.outcomes if outcome == "ok"}
    assert len(ok) >= 12, sorted(ok)            # the valid-shaped params do succeed
    assert fx.clients[0].call("state.get")["state_revision"] >= 0
