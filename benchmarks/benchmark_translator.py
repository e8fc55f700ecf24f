"""The block translator against the interpreter, side by side in one run.

    python benchmarks/benchmark_translator.py [--rounds N] [--freedos IMG] [--seconds S]
                                              [--warm S] [--cache cold|warm]

Each round measures every figure under the interpreter, then under the
translator (A B A B ...), each in a fresh Cpu or Machine (the numba cache is
warm; each translator starts empty, so its compile time is inside its
figure).  ``--cache cold`` (the default) runs with no region cache, so every
region is compiled in the figure it is used in; ``--cache warm`` gives the
run a region cache of its own, filled by one untimed pass of every figure
first, as a machine finds it that runs software it (or another run) has run
before:

* the standard loop (shared/bench), bare CPU, MIPS, and unicorn on it where
  unicorn is installed;
* the whole XT running the standard loop forever with the timer on (the
  ``cpu`` guest of ``bench system``), emulated MHz;
* the idle guest (the BIOS's key wait) and, with ``--freedos``, FreeDOS at
  its prompt (DOS idle), emulated MHz;
* the first emulated second of a cold machine booting the idle guest
  (``--warm S``: the XT figures start after S emulated seconds, 1 by
  default; 30 shows a machine past its compiling)
  (the translator's compile time and sampling against the interpreter).

Prints min / median / max of each side and the median of the per-round
ratios (translator / interpreter), the other processes' CPU load during the
run (from /proc/stat) and the host CPU; the last line is one JSON object.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from pypc_core import bench                                   # noqa: E402
from pypc_core import system_bench as sb                      # noqa: E402
from pypc_core.cpu import Cpu                                 # noqa: E402
from pypc_core.cpu import region_cache                        # noqa: E402
from pypc_core.machine import CPU_HZ, Machine, MachineConfig  # noqa: E402


def busy_jiffies():
    with open("/proc/stat") as fh:
        parts = fh.readline().split()[1:]
    vals = [int(x) for x in parts]
    idle = vals[3] + vals[4]
    return sum(vals) - idle


def own_jiffies():
    with open("/proc/self/stat") as fh:
        parts = fh.read().rsplit(")", 1)[1].split()
    return int(parts[11]) + int(parts[12])


def standard_loop(engine):
    cpu = Cpu()
    if engine == "translate":
        cpu.translate()
    dt, insns, _ = bench.run_standard_loop(cpu, 40, 50000)
    return (insns - 1) / dt / 1e6


def xt_guest(engine, image, seconds, warm=1.0):
    with Machine(MachineConfig(floppy_a=image, cow=True, cpu=engine)) as m:
        m.run_seconds(warm)
        return sb.measure(m, seconds)["emulated_mhz"]


def dos_idle(engine, image, seconds, warm=0.0):
    with Machine(MachineConfig(floppy_a=image, cow=True, cpu=engine)) as m:
        if not m.run_until_text("A:\\>", 120):
            raise SystemExit(f"{image}: no A:\\> prompt within 120 emulated s")
        m.run_seconds(warm)
        return sb.measure(m, seconds)["emulated_mhz"]


def cold_first_second(engine, image):
    t0 = time.perf_counter()
    with Machine(MachineConfig(floppy_a=image, cow=True, cpu=engine)) as m:
        m.run_for(CPU_HZ)
    return time.perf_counter() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=10.0, help="emulated seconds per XT figure")
    ap.add_argument("--freedos", help="a FreeDOS boot floppy for the DOS idle figure")
    ap.add_argument("--warm", type=float, default=1.0,
                    help="emulated seconds each XT runs before its figure (default 1: a "
                         "young machine, compile time inside the figure; 30: steady state)")
    ap.add_argument("--cache", choices=("cold", "warm"), default="cold",
                    help="cold: no region cache, every region compiled in its figure; "
                         "warm: a region cache filled by an untimed pass first")
    args = ap.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="pypc-tr-bench-")
    os.environ[region_cache.ENV] = "off" if args.cache == "cold" else os.path.join(tmp, "regions")
    idle_img, cpu_img = os.path.join(tmp, "idle.img"), os.path.join(tmp, "cpu.img")
    sb.floppy_image(idle_img, sb.idle_guest())
    sb.floppy_image(cpu_img, sb.cpu_guest())
    figures = {
        "standard loop, MIPS": lambda e: standard_loop(e),
        "XT cpu guest, emulated MHz": lambda e: xt_guest(e, cpu_img, args.seconds, args.warm),
        "XT idle guest, emulated MHz": lambda e: xt_guest(e, idle_img, args.seconds, args.warm),
        "cold first emulated second, host s (lower is better)": lambda e: cold_first_second(e, idle_img),
    }
    if args.freedos:
        figures["FreeDOS at the prompt, emulated MHz"] = \
            lambda e: dos_idle(e, args.freedos, args.seconds, args.warm)
    standard_loop("interpret")            # compile the core outside the measurement
    if args.cache == "warm":
        for fn in figures.values():
            fn("translate")
    results = {name: {"interpret": [], "translate": []} for name in figures}
    unicorn = []
    busy0, own0, wall0 = busy_jiffies(), own_jiffies(), time.perf_counter()
    for _ in range(args.rounds):
        for name, fn in figures.items():
            for engine in ("interpret", "translate"):
                results[name][engine].append(fn(engine))
        u = bench.unicorn_loop(40, 50000)
        if u is not None:
            unicorn.append(u)
    wall = time.perf_counter() - wall0
    hz = os.sysconf("SC_CLK_TCK")
    others = max(0.0, (busy_jiffies() - busy0 - (own_jiffies() - own0)) / hz / wall)
    out = {"rounds": args.rounds, "others_load_cores": round(others, 3),
           "host_cpu": bench.host_cpu(), "region_cache": args.cache}
    print(f"host: {out['host_cpu']}; other processes' load during the run: {others:.2f} cores; "
          f"region cache: {args.cache}")
    for name, r in results.items():
        a, b = r["interpret"], r["translate"]
        ratios = [y / x for x, y in zip(a, b)]
        med = statistics.median(ratios)
        print(f"{name}:")
        print(f"  interpreter {min(a):10.2f} {statistics.median(a):10.2f} {max(a):10.2f}")
        print(f"  translator  {min(b):10.2f} {statistics.median(b):10.2f} {max(b):10.2f}")
        print(f"  translator / interpreter, per round: median {med:.3f} "
              f"(min {min(ratios):.3f}, max {max(ratios):.3f})")
        out[name] = {"interpret_median": round(statistics.median(a), 3),
                     "translate_median": round(statistics.median(b), 3),
                     "ratio_median": round(med, 3)}
    if unicorn:
        u = statistics.median(unicorn)
        t = statistics.median(results["standard loop, MIPS"]["translate"])
        i = statistics.median(results["standard loop, MIPS"]["interpret"])
        print(f"unicorn on the standard loop: median {u:.1f} MIPS; the translator is "
              f"{t / u:.2f}x unicorn, the interpreter {i / u:.2f}x")
        out["unicorn_mips_median"] = round(u, 2)
        out["translate_x_unicorn"] = round(t / u, 3)
        out["interpret_x_unicorn"] = round(i / u, 3)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
