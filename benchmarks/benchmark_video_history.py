"""What ``video.history`` recording costs a guest that rewrites the text
screen continuously (REP STOSW over all 2,000 cells, a new character each
pass: every byte write changes a byte), over RPC in turbo: the host time of
``execution.run_until`` for N emulated ms with no history, then with one
recording.  The figures are host time on whatever machine runs this (a
busy one makes them noisy); the events and losses are exact.  Each round
runs without and then with a recording; the last line is the median of
the rounds' ratios.  The recorder is warmed up first (its compiled code
loaded), so the figure is its steady cost.

    python benchmarks/benchmark_video_history.py [--video cga|vga] [--ms N] [--rounds N]
"""

import argparse
import base64
import time

from _rpc_bench import RpcFixture

# l: mov ax,B800h / mov es,ax / xor di,di / mov cx,2000 / mov ax,bx / rep stosw /
#    inc bx / jmp l
GUEST = bytes.fromhex("B800B8 8EC0 31FF B9D007 89D8 F3AB 43 EBF1")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--video", choices=("cga", "vga"), default="cga")
    ap.add_argument("--ms", type=int, default=2000, help="emulated ms per run")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    f = RpcFixture(plugins=[args.video])
    try:
        c = f.client()
        c.call("execution.pause")
        c.call("memory.write", {"address": 0x10000,
                                "data_base64": base64.b64encode(GUEST).decode()})
        r = c.call("state.get")
        c.call("state.set_registers", {
            "expected_state_revision": r["state_revision"],
            "expected": {"cs": r["segments"]["cs"], "ip": r["ip"], "flags": r["flags"]},
            "set": {"cs": 0x1000, "ip": 0, "flags": 2}})

        def run(ms):
            t = time.perf_counter()
            op = c.call("execution.run_until", {"max_emulated_ns": ms * 1_000_000})
            while c.call("execution.wait", {"operation_id": op["operation_id"],
                                            "timeout_ms": 60000}).get("running"):
                pass
            return time.perf_counter() - t

        run(50)                                   # compiled and warm
        c.call("video.history.start", {"capacity": 1_000_000})
        run(50)                                   # the recorder's code too
        c.call("video.history.stop")
        ratios = []
        for _ in range(args.rounds):
            off = run(args.ms)
            c.call("video.history.start", {"capacity": 1_000_000})
            on = run(args.ms)
            out = c.call("video.history.stop")
            ratios.append(on / off)
            print(f"{args.video}: {args.ms} emulated ms  no history {off * 1000:7.1f} ms  "
                  f"recording {on * 1000:7.1f} ms  ({(on / off - 1) * 100:+.0f} %)  "
                  f"events {out['events']}  lost {out['lost_events']}")
        ratios.sort()
        print(f"{args.video}: recording costs {(ratios[len(ratios) // 2] - 1) * 100:+.1f} % "
              f"(median of {len(ratios)} rounds; min {(ratios[0] - 1) * 100:+.1f} %, "
              f"max {(ratios[-1] - 1) * 100:+.1f} %)")
    finally:
        f.close()


if __name__ == "__main__":
    main()
