"""A new client's latency while other clients keep the server busy (issue 19,
point 7).

``--clients`` loaders (default 20), in another process, each pipeline
``--requests`` (default 1,000) ``memory.read`` of 64 KiB on its own
connection and read the replies as they come.  Once every loader has sent
its requests, a new client connects and makes ``--probes`` round trips of
``state.get_registers``, one at a time; the script prints their latency
(first, p50, max) and how many loader requests the server had done by then.
The machine thread takes connections in turns (pypc_core/rpc/fairqueue.py),
so a probe waits for at most one request of each loader, not for their
backlog.

    python benchmarks/benchmark_rpc_fairness.py [--clients N] [--requests N] [--probes N]

A figure, not a test: on a shared or busy host the numbers say little.
"""

import argparse
import json
import multiprocessing
import socket
import threading
import time

from _rpc_bench import RpcFixture, percentile, us


def loader_process(port, clients, requests, ready, done):
    line = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "memory.read",
                       "params": {"address": 0, "length": 65536}}).encode() + b"\n"

    def one():
        with socket.create_connection(("127.0.0.1", port), timeout=600) as s:
            f = s.makefile("rb")
            sender = threading.Thread(target=s.sendall, args=(line * requests,))
            sender.start()
            sender.join()
            ready.release()
            for _ in range(requests):
                if not f.readline():
                    break
    threads = [threading.Thread(target=one) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done.set()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--probes", type=int, default=20)
    a = ap.parse_args()
    fx = RpcFixture()
    try:
        ctx = multiprocessing.get_context("fork")
        ready, done = ctx.Semaphore(0), ctx.Event()
        proc = ctx.Process(target=loader_process,
                           args=(fx.port, a.clients, a.requests, ready, done))
        t_start = time.perf_counter()
        proc.start()
        for _ in range(a.clients):
            ready.acquire()                 # every loader has sent its whole backlog
        queued_at = time.perf_counter() - t_start
        served0 = fx.controller.requests_served
        times = []
        with socket.create_connection(("127.0.0.1", fx.port), timeout=600) as s:
            f = s.makefile("rb")
            for i in range(a.probes):
                t0 = time.perf_counter()
                s.sendall(json.dumps({"jsonrpc": "2.0", "id": i,
                                      "method": "state.get_registers"}).encode() + b"\n")
                reply = json.loads(f.readline())
                times.append(time.perf_counter() - t0)
                assert reply.get("id") == i and "result" in reply, reply
        served = fx.controller.requests_served - served0
        done.wait(timeout=3600)
        total = time.perf_counter() - t_start
        proc.join()
        total_requests = a.clients * a.requests
        print(f"loaders: {a.clients} x {a.requests} memory.read of 64 KiB "
              f"({total_requests} requests, queued after {queued_at:.2f} s, "
              f"all served after {total:.2f} s)")
        print(f"new client, {a.probes} round trips of state.get_registers: "
              f"first {us(times[0])}  p50 {us(percentile(times, 50))}  "
              f"max {us(max(times))}")
        print(f"loader requests served while the new client made them: {served} "
              f"of {total_requests}")
    finally:
        fx.close()


if __name__ == "__main__":
    main()
