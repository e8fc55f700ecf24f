"""The RPC fuzzer of tests/test_rpc_fuzz.py, long: by default 100,000
requests (schema-shaped and bent params, notifications, broken framing)
against a paused machine over one real socket, checking that every request
with an id gets exactly one reply with that id, every result matches its
schema, and no rejected request changes the machine or the server's
execution state.

    python benchmarks/fuzz_rpc_long.py [--requests N] [--seed S]
"""

import argparse
import random
import sys
import time

from _rpc_bench import RpcFixture  # noqa: F401  (puts tests/ on sys.path)

from hypothesis import HealthCheck, Phase, given, settings, seed as hyp_seed
from hypothesis import strategies as st

import test_rpc_fuzz as fuzz
from rpc_strategies import broken_lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    fx = RpcFixture()
    c = fx.client()
    c.call("execution.pause")
    names = fuzz.methods(fx)
    strat = fuzz.STRATEGIES
    counts = {"requests": 0, "rejected": 0, "accepted": 0}
    t0 = time.perf_counter()

    @settings(max_examples=max(1, args.requests // 25), deadline=None, database=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def batch(data):
        items = data.draw(st.lists(st.one_of(
            strat.request(names).map(lambda r: ("call",) + r),
            strat.request(names).map(lambda r: ("notify",) + r),
            broken_lines().map(lambda line: ("raw", line, None))), min_size=10, max_size=40))
        before = fuzz.fingerprint(fx)
        for kind, a, b in items:
            counts["requests"] += 1
            if kind == "call":
                if isinstance(b, dict) and "expected_state_revision" in b and \
                        data.draw(st.booleans()):
                    b = dict(b, expected_state_revision=fx.controller.revision)
                reply = c.request(a, b)
            elif kind == "notify":
                c.notify(a, b)
                reply = c.request("session.status", rid="ping")
                assert reply["id"] == "ping" and "result" in reply, reply
                before = fuzz.fingerprint(fx)
                continue
            else:
                c.send_raw(a + b"\n")
                reply = c.read_reply()
            if "error" in reply:
                counts["rejected"] += 1
                assert fuzz.fingerprint(fx) == before, (kind, a, b, reply)
            else:
                counts["accepted"] += 1
                before = fuzz.fingerprint(fx)
        if counts["requests"] % 5000 < len(items):
            rate = counts["requests"] / (time.perf_counter() - t0)
            print(f"  {counts['requests']:7d} requests ({rate:.0f}/s)", flush=True)

    try:
        rounds = 0
        while counts["requests"] < args.requests:
            hyp_seed(seed + rounds)(batch)()
            rounds += 1
        assert fx.controller.running is False
        c.call("state.get")
    finally:
        fx.close()
    took = time.perf_counter() - t0
    print(f"seed {seed}: {counts['requests']} requests in {took:.0f} s, "
          f"{counts['accepted']} accepted, {counts['rejected']} rejected; no crash, "
          f"one reply per id, schema-valid results, rejections changed nothing")
    return 0


if __name__ == "__main__":
    sys.exit(main())
