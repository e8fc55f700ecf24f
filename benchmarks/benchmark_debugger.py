"""What the debugger costs the standard CPU workload (shared/bench/README.md).

    python benchmarks/benchmark_debugger.py [--outer N]

Runs the standard ALU/memory loop on a bare machine (no firmware, no cards)
through Machine.run_for, once per setting, and prints MIPS and the slowdown
against nothing armed:

* nothing armed;
* one execution breakpoint that is never reached (the per-instruction flag
  test every run pays);
* one execution breakpoint on the inner loop with a condition that never
  holds (an exit and a Python check per iteration: the worst case);
* a memory-write breakpoint on one byte of the page the loop writes (every
  write to that page takes the checked path; the byte itself is never hit);
* the instruction trace, plain, with registers, and with effects;
* step over a 1,000-iteration LOOP and a 1,000-byte REP MOVSB: the number of
  core runs it takes (one run, not one exit per iteration).

The last line is one JSON object with the figures.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pypc_core.bench import (CODE_SEG, DATA_SEG, expected_instructions,  # noqa: E402
                             standard_loop_code, standard_loop_data)
from pypc_core.cpu import state as S  # noqa: E402
from pypc_core.machine import Machine, MachineConfig  # noqa: E402

CODE = (CODE_SEG << 4) + 0x100
DATA = DATA_SEG << 4


def load(m, outer, inner):
    m.memory.write(CODE, standard_loop_code(outer, inner))
    m.memory.write(DATA + 0x200, standard_loop_data())
    r = m.cpu.regs
    r[:] = 0
    r[S.CS], r[S.IP] = CODE_SEG, 0x100
    r[S.DS] = r[S.SS] = r[S.ES] = DATA_SEG
    r[S.SP] = 0xFFFE
    r[S.FLAGS] = S.FLAGS_FIXED_ONES
    m.cpu.ctl[S.C_HALTED] = 0


def timed(m, outer, inner, setup=None):
    m.breakpoints.clear()
    m.trace.stop()
    load(m, outer, inner)
    if setup:
        setup(m)
    i0 = m.cpu.instructions
    t0 = time.perf_counter()
    while True:
        stop = m.run_for(1 << 40)
        if stop.kind == "halt":
            break
    dt = time.perf_counter() - t0
    m.breakpoints.clear()
    m.trace.stop()
    n = m.cpu.instructions - i0
    # the HLT itself is executed too
    assert n == expected_instructions(outer, inner) + 1, (n, expected_instructions(outer, inner))
    return n / dt / 1e6


def count_runs(m, fn):
    calls = [0]
    orig = m.cpu.run

    def run(until):
        calls[0] += 1
        return orig(until)
    m.cpu.run = run
    try:
        fn()
    finally:
        m.cpu.run = orig
    return calls[0]


def step_over_runs(m):
    # mov cx,1000 / l: inc dx / loop l / mov si,0 / mov di,0x1000 / mov cx,1000 / rep movsb / hlt
    code = bytes.fromhex("B9E803" "42" "E2FD" "BE0000" "BF0010" "B9E803" "F3A4" "F4")
    m.memory.write(CODE, code)
    r = m.cpu.regs
    r[S.CS], r[S.IP], r[S.DS], r[S.ES] = CODE_SEG, 0x100, DATA_SEG, DATA_SEG
    m.cpu.ctl[S.C_HALTED] = 0
    m.step()
    m.step()
    loop_runs = count_runs(m, m.step_over)          # at the LOOP
    assert r[S.IP] == 0x106 and r[S.CX] == 0
    for _ in range(3):
        m.step()
    rep_runs = count_runs(m, m.step_over)           # at the REP MOVSB
    assert r[S.IP] == 0x111 and r[S.CX] == 0
    return loop_runs, rep_runs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--outer", type=int, default=40)
    ap.add_argument("--inner", type=int, default=50000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    outer, inner = args.outer, args.inner
    with Machine(MachineConfig(plugins=[], bare=True)) as m:
        timed(m, 1, 1000)                     # compile / warm up
        cases = [
            ("nothing armed", None),
            ("exec breakpoint, never reached",
             lambda m: m.breakpoints.add("exec", (CODE_SEG, 0x200))),
            ("exec breakpoint in the inner loop, condition never true",
             lambda m: m.breakpoints.add("exec", (CODE_SEG, 0x111), condition="ax == 0x1234 and dx == 0")),
            ("memory-write breakpoint on the page the loop writes",
             lambda m: m.breakpoints.add("mem_write", (DATA_SEG, 0x0FFF))),
            ("trace", lambda m: m.trace.start(capacity=1 << 16)),
            ("trace with registers", lambda m: m.trace.start(capacity=1 << 16, registers=True)),
            ("trace with registers and effects",
             lambda m: m.trace.start(capacity=1 << 16, registers=True, effects=True)),
        ]
        # rounds interleave the settings, and each keeps its best round, so a
        # busy host shifts every figure alike
        best = {}
        for _ in range(args.rounds):
            for name, setup in cases:
                small = name.startswith("exec breakpoint in")
                o = max(1, outer // 20) if small else outer
                best[name] = max(best.get(name, 0.0), timed(m, o, inner, setup))
        figures = {}
        base = best["nothing armed"]
        for name, _ in cases:
            mips = best[name]
            slow = 100.0 * (1 - mips / base)
            figures[name] = {"mips": round(mips, 2), "slower_percent": round(slow, 1)}
            print(f"{name:58s} {mips:8.2f} MIPS  {slow:+6.1f} %")
        loop_runs, rep_runs = step_over_runs(m)
        print(f"step over a 1,000-iteration LOOP: {loop_runs} core run(s); "
              f"a 1,000-byte REP MOVSB: {rep_runs} core run(s)")
        figures["step_over_core_runs"] = {"loop": loop_runs, "rep_movsb": rep_runs}
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
