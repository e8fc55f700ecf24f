"""What the guest debug console (``--debug-port``, port E9h) costs.

    python benchmarks/benchmark_debug_port.py [--lines N] [--repeat R]

A bare machine runs a loop writing N one-character lines ("x", LF: two OUTs
each) to port E9h, then halts; once without the console (the port is
unclaimed: the core drops the writes without leaving the compiled loop) and
once with it (each OUT leaves the loop, goes through the port map to the
console, and every LF adds a record to the diagnostics ring).  Prints the
best of R runs of each and the cost per OUT; the last line is one JSON
object with the figures.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pypc_core.machine import Machine, MachineConfig  # noqa: E402
from pypc_core.scheduler import CPU_HZ  # noqa: E402

BASE = 0x7C00


def program(lines):
    """cli; mov dx, E9h; mov cx, lines; l: mov al, 'x'; out dx, al;
    mov al, 10; out dx, al; loop l; hlt"""
    return bytes.fromhex("FA BAE900 B9") + lines.to_bytes(2, "little") + \
        bytes.fromhex("B078 EE B00A EE E2F8 F4")


def best_run(code, port, repeat, lines):
    best = None
    for _ in range(repeat):
        with Machine(MachineConfig(plugins=[], bare=True, loads=[(code, BASE)],
                                   entry=(0, BASE), debug_port=port)) as m:
            t0 = time.perf_counter()
            stop = m.run_for(60 * CPU_HZ)
            dt = time.perf_counter() - t0
            if stop.kind != "halt":
                raise SystemExit(f"the guest did not halt ({stop.kind})")
            records = len(m.diagnostics)
            if port is not None and m.diagnostics.next_sequence - 1 != lines:
                raise SystemExit("the console lost lines")
        best = dt if best is None else min(best, dt)
    return best, records


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    if not 1 <= args.lines <= 0xFFFF:
        ap.error("--lines must be 1..65535")
    code = program(args.lines)
    best_run(code, None, 1, args.lines)                  # compile / load the core first
    off, _ = best_run(code, None, args.repeat, args.lines)
    on, kept = best_run(code, 0xE9, args.repeat, args.lines)
    outs = 2 * args.lines
    per_out_us = (on - off) / outs * 1e6
    print(f"{outs} OUTs to E9h: without the console {off * 1e3:.1f} ms, "
          f"with it {on * 1e3:.1f} ms ({kept} records kept): {per_out_us:.2f} us per OUT, "
          f"{2 * per_out_us:.2f} us per one-character line")
    print(json.dumps({"outs": outs, "off_s": round(off, 6), "on_s": round(on, 6),
                      "us_per_out": round(per_out_us, 3)}))


if __name__ == "__main__":
    main()
