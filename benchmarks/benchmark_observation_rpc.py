"""Six separate RPC calls versus one coherent ``state.observe`` over one
persistent localhost TCP connection, on a paused 8088 + CGA (the built-in
BIOS's "No bootable disk" screen).  Both must give identical registers,
RAM windows and text; the figures measure observation overhead, not
emulation speed.

    python benchmarks/benchmark_observation_rpc.py [--rounds N]
"""

import argparse
import time

from _rpc_bench import RpcFixture, percentile, us

WINDOWS = [{"address": {"space": "segmented", "segment": "0x0040", "offset": 0},
            "length": 256},
           {"address": "0x7C00", "length": 512}]


def separate(c):
    regs = c.call("state.get_registers")
    mem = [c.call("memory.read", w) for w in WINDOWS]
    text = c.call("video.text")
    vram = c.call("memory.read", {"address": "0xB8000", "length": 16384})
    again = c.call("state.get_registers")
    assert again == regs                       # nothing moved in between (paused)
    return regs, mem, text, vram


def coherent(c):
    obs = c.call("state.observe", {"expected_state_revision": coherent.revision,
                                   "memory": WINDOWS, "video_text": {},
                                   "video_memory": True})
    return obs["registers"], obs["memory"], obs["video_text"], obs["video_memory"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=300)
    args = ap.parse_args()
    fx = RpcFixture()
    try:
        c = fx.client()
        c.schemas = None                        # time the server, not the checker
        c.call("execution.pause")
        coherent.revision = c.call("state.get")["state_revision"]
        a = separate(c)
        b = coherent(c)
        vram_a, vram_b = a[3], b[3]
        assert a[0] == b[0], "registers differ"
        assert a[1] == b[1], "memory windows differ"
        assert a[2] == b[2], "video text differs"
        assert vram_a["sha256"] == vram_b["sha256"] and vram_a["data_base64"] == \
            vram_b["data_base64"], "video memory differs"
        print("identical results: registers, 2 RAM windows (768 bytes), video.text, "
              "16 KiB video memory")
        for name, fn, calls in (("6 separate calls", separate, 6),
                                ("1 state.observe", coherent, 1)):
            times = []
            for _ in range(args.rounds):
                t0 = time.perf_counter()
                fn(c)
                times.append(time.perf_counter() - t0)
            print(f"{name:18s} ({calls} round trip{'s' if calls > 1 else ''}): "
                  f"p50 {us(percentile(times, 50))}  p99 {us(percentile(times, 99))}  "
                  f"mean {us(sum(times) / len(times))}")
    finally:
        fx.close()


if __name__ == "__main__":
    main()
