"""What ``video.history`` recording costs a guest that rewrites the text
screen continuously (REP STOSW over all 2,000 cells, a new character each
pass: every byte write changes a byte), over RPC in turbo: the host time of
``execution.run_until`` for N emulated ms with no history, then with one
recording.  The figures are host time on whatever machine runs this (a
busy one makes them noisy); the events and losses are exact.  Each round
runs once without and once with a recording, back to back, in alternating
order (off-on, on-off, ...: a host whose speed drifts favours neither);
the last lines give the median of the rounds' ratios and the ratio of each
side's fastest run (a host that slows down now and then, as shared cloud
cores do, leaves the fastest runs comparable).  The recorder is warmed up
first (its compiled code loaded), so the figure is its steady cost.

    python benchmarks/benchmark_video_history.py [--video cga|vga] [--ms N] [--rounds N]
        [--capacity N]
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
    ap.add_argument("--capacity", type=int, default=1_000_000,
                    help="the history's capacity (events; the contract's maximum by default)")
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
        c.call("video.history.start", {"capacity": args.capacity})
        run(50)                                   # the recorder's code too
        c.call("video.history.stop")
        def recorded(ms):
            c.call("video.history.start", {"capacity": args.capacity})
            t = run(ms)
            return t, c.call("video.history.stop")

        ratios, offs, ons = [], [], []
        for i in range(args.rounds):
            if i % 2 == 0:
                off = run(args.ms)
                on, out = recorded(args.ms)
            else:
                on, out = recorded(args.ms)
                off = run(args.ms)
            ratios.append(on / off)
            offs.append(off)
            ons.append(on)
            print(f"{args.video}: {args.ms} emulated ms  no history {off * 1000:7.1f} ms  "
                  f"recording {on * 1000:7.1f} ms  ({(on / off - 1) * 100:+.0f} %)  "
                  f"events {out['events']}  lost {out['lost_events']}")
        ratios.sort()
        print(f"{args.video}: fastest runs: no history {min(offs) * 1000:.1f} ms, recording "
              f"{min(ons) * 1000:.1f} ms: {(min(ons) / min(offs) - 1) * 100:+.1f} %")
        print(f"{args.video}: recording costs {(ratios[len(ratios) // 2] - 1) * 100:+.1f} % "
              f"(median of {len(ratios)} rounds; min {(ratios[0] - 1) * 100:+.1f} %, "
              f"max {(ratios[-1] - 1) * 100:+.1f} %)")
    finally:
        f.close()


if __name__ == "__main__":
    main()
