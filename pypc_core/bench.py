"""Benchmarks that print their figures.

    python -m pypc_core.bench cpu      # the standard ALU/memory loop
    python -m pypc_core.bench system   # the whole XT (needs the platform)
    python -m pypc_core.bench ab REV   # REV against the working tree, A B A B ...

The last line printed is one JSON object with the figures.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from .bench_loop import standard_loop_code

REAL_8088_MHZ = 4.77
CODE_SEG = 0x1000
DATA_SEG = 0x2000


def standard_loop_data():
    return bytes(((i * 7 + 3) ^ (i >> 3)) & 0xFF for i in range(0x300))


def expected_instructions(outer, inner):
    return 3 + outer * (4 + 10 * inner + inner // 256)


def load_standard_loop(cpu, outer, inner):
    from .cpu import state as S
    cpu.mem[:] = 0
    code = standard_loop_code(outer, inner)
    base = (CODE_SEG << 4) + 0x100
    cpu.mem[base:base + len(code)] = np.frombuffer(code, dtype=np.uint8)
    data = (DATA_SEG << 4) + 0x200
    cpu.mem[data:data + 0x300] = np.frombuffer(standard_loop_data(), dtype=np.uint8)
    cpu.regs[:] = 0
    cpu.regs[S.CS] = CODE_SEG
    cpu.regs[S.IP] = 0x100
    cpu.regs[S.DS] = cpu.regs[S.SS] = cpu.regs[S.ES] = DATA_SEG
    cpu.regs[S.SP] = 0xFFFE
    cpu.regs[S.FLAGS] = S.FLAGS_FIXED_ONES
    cpu.ctl[:] = 0


def run_standard_loop(cpu, outer, inner):
    """Runs to the HLT; returns (seconds, instructions, cycles)."""
    from .cpu import state as S
    load_standard_loop(cpu, outer, inner)
    t0 = time.perf_counter()
    reason = cpu.run(1 << 62)
    dt = time.perf_counter() - t0
    if reason != S.EXIT_HALT:
        raise RuntimeError(f"standard loop stopped with exit {S.EXIT_NAMES.get(reason)}")
    return dt, cpu.instructions, cpu.cycles


def _best_of(n, fn):
    best = None
    for _ in range(n):
        r = fn()
        if best is None or r[0] < best[0]:
            best = r
    return best


def measure_exit_cost(cpu, iterations=200_000):
    """µs per exit to a Python port handler: a guest loop doing OUT to a
    Python-claimed port, versus the same loop to an unclaimed port."""
    from .cpu import state as S

    def program(port):
        # mov cx, N ; l: out dx, al ; loop l ; hlt   (N <= 65535, repeated)
        return bytes([0xBA, port & 0xFF, port >> 8, 0xB9, 0xFF, 0xFF,
                      0xEE, 0xE2, 0xFD, 0xF4])

    def run(port, handler):
        cpu.mem[:] = 0
        code = program(port)
        cpu.mem[0x10100:0x10100 + len(code)] = np.frombuffer(code, dtype=np.uint8)
        cpu.regs[:] = 0
        cpu.regs[S.CS] = 0x1000
        cpu.regs[S.IP] = 0x100
        cpu.regs[S.SS] = 0x2000
        cpu.regs[S.SP] = 0xFFFE
        cpu.regs[S.FLAGS] = S.FLAGS_FIXED_ONES
        cpu.ctl[:] = 0
        exits = 0
        t0 = time.perf_counter()
        while True:
            reason = cpu.run(1 << 62)
            if reason == S.EXIT_IO_OUT:
                handler(int(cpu.ctl[S.C_EXIT_PORT]), int(cpu.ctl[S.C_EXIT_VALUE]))
                exits += 1
                continue
            break
        return time.perf_counter() - t0, exits

    sink = []
    cpu.port_kind[:] = 0
    cpu.port_kind[0x3F8] = 1
    run(0x3F8, lambda p, v: sink.append(v))     # warm
    sink.clear()
    t_exit, exits = min(run(0x3F8, lambda p, v: sink.append(v)) for _ in range(3))
    t_base, _ = min(run(0x300, None) for _ in range(3))
    cpu.port_kind[:] = 0
    return (t_exit - t_base) / max(exits, 1) * 1e6, exits


def measure_start(cache_dir):
    """Seconds from spawning a fresh process until its first guest
    instruction ran (the moment its report line arrives: the process's own
    exit, which tears numba and LLVM down, is not part of a start), and
    the same from the child's own clock (after the interpreter started)."""
    code = (
        "import time; t0=time.perf_counter()\n"
        "from pypc_core.cpu import Cpu\n"
        "c=Cpu(); c.step()\n"
        "print(time.perf_counter()-t0, flush=True)\n"
    )
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    t0 = time.perf_counter()
    with subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as child:
        line = child.stdout.readline()
        wall = time.perf_counter() - t0
        err = child.stderr.read()
        if child.wait() != 0 or not line.strip():
            raise RuntimeError(f"the start-up probe failed: {err.strip()[-500:]}")
    return wall, float(line)


def unicorn_runner(outer, inner):
    """A function running the same loop in unicorn (QEMU's JIT) once and
    returning its MIPS, or None when unicorn is not installed.  Each call
    starts a fresh emulator (its translation included: a few blocks)."""
    try:
        import unicorn
        from unicorn import x86_const as X
    except ImportError:
        return None
    code = standard_loop_code(outer, inner)
    data = standard_loop_data()

    def run():
        uc = unicorn.Uc(unicorn.UC_ARCH_X86, unicorn.UC_MODE_16)
        uc.mem_map(0, 0x100000)
        uc.mem_write((CODE_SEG << 4) + 0x100, code)
        uc.mem_write((DATA_SEG << 4) + 0x200, data)
        uc.reg_write(X.UC_X86_REG_CS, CODE_SEG)
        for reg in (X.UC_X86_REG_DS, X.UC_X86_REG_SS, X.UC_X86_REG_ES):
            uc.reg_write(reg, DATA_SEG)
        uc.reg_write(X.UC_X86_REG_SP, 0xFFFE)
        start = (CODE_SEG << 4) + 0x100
        end = start + len(code) - 1        # stop at the HLT
        uc.reg_write(X.UC_X86_REG_IP, 0x100)
        t0 = time.perf_counter()
        uc.emu_start(start, end)
        dt = time.perf_counter() - t0
        return expected_instructions(outer, inner) / dt / 1e6

    return run


def unicorn_loop(outer, inner):
    """Same loop in unicorn, one run: its MIPS, or None without unicorn."""
    run = unicorn_runner(outer, inner)
    return None if run is None else run()


# pypc against unicorn: this many pairs, each a pypc run and a unicorn run
# back to back (in alternating order), the ratio taken pair by pair
UNICORN_PAIRS = 9


def versus_unicorn(cpu, outer, inner, pairs=UNICORN_PAIRS):
    """``(pypc MIPS, unicorn MIPS, ratios)`` of ``pairs`` side-by-side pairs
    (lists, pair by pair), or None without unicorn."""
    uc_run = unicorn_runner(outer, inner)
    if uc_run is None:
        return None
    want = expected_instructions(outer, inner)

    def ours():
        return want / run_standard_loop(cpu, outer, inner)[0] / 1e6

    uc_run()                                   # (its first use loads QEMU's code)
    mine, theirs = [], []
    for i in range(pairs):
        if i % 2 == 0:
            mine.append(ours())
            theirs.append(uc_run())
        else:
            theirs.append(uc_run())
            mine.append(ours())
    return mine, theirs, [a / b for a, b in zip(mine, theirs)]


def bench_cpu(outer=40, inner=50000):
    from .cpu import Cpu
    from .cpu import state as S

    figures = {}
    with tempfile.TemporaryDirectory(prefix="pypc-numba-cache-") as cache:
        cold_wall, cold_inner = measure_start(cache)
        warm_wall, warm_inner = measure_start(cache)
    print(f"cold compile (empty numba cache, fresh process): {cold_wall:.2f} s "
          f"({cold_inner:.2f} s after interpreter start)")
    print(f"warm start (cache hit, fresh process, from spawn to first instruction): {warm_wall:.2f} s "
          f"({warm_inner:.2f} s after interpreter start)")
    figures["cold_compile_s"] = round(cold_wall, 3)
    figures["warm_start_s"] = round(warm_wall, 3)

    cpu = Cpu()
    run_standard_loop(cpu, 2, 1000)     # warm up (compile in this process)
    dt, insns, cycles = _best_of(3, lambda: run_standard_loop(cpu, outer, inner))
    want = expected_instructions(outer, inner)
    if insns != want + 1:   # the HLT counts as an instruction here
        raise RuntimeError(f"instruction count {insns} != expected {want} + HLT")
    mips = want / dt / 1e6
    mhz = cycles / dt / 1e6
    print(f"standard loop OUTER={outer} INNER={inner}: {want:,} instructions + HLT, "
          f"{cycles:,} emulated cycles (documented 8088 timings: 245,938,162)")
    print(f"  {dt:.3f} s  ->  {mips:.1f} MIPS, {mhz:.1f} emulated MHz, "
          f"{mhz / REAL_8088_MHZ:.0f}x a real 4.77 MHz 8088")
    figures.update(mips=round(mips, 2), emulated_mhz=round(mhz, 2),
                   x_real_8088=round(mhz / REAL_8088_MHZ, 1))

    # one execution breakpoint armed (never hit: the cost of having it armed)
    cpu.xflags[0xF0000] |= S.XF_BREAKPOINT
    dt_bp, _, _ = _best_of(3, lambda: run_standard_loop(cpu, outer, inner))
    cpu.xflags[0xF0000] &= ~np.uint8(S.XF_BREAKPOINT)
    slowdown = dt_bp / dt
    print(f"one execution breakpoint armed: {dt_bp:.3f} s ({(slowdown - 1) * 100:+.1f} %)")
    figures["breakpoint_slowdown"] = round(slowdown, 3)

    exit_us, exits = measure_exit_cost(cpu)
    print(f"exit to a Python port handler: {exit_us:.2f} µs per exit ({exits:,} exits)")
    figures["exit_us"] = round(exit_us, 3)

    tr = bench_translator(outer, inner, want)
    figures.update(tr)
    print(f"block translator, a fresh translator each run, no region cache (its compile time "
          f"included): {tr['translate_mips']:.1f} MIPS = {tr['translate_mips'] / mips:.2f}x the "
          f"interpreter ({tr['translate_compile_ms']:.1f} ms compiling "
          f"{tr['translate_regions']} region(s))")
    print(f"block translator, a fresh translator finding its regions in the region cache on disk "
          f"(a later run): {tr['translate_cached_mips']:.1f} MIPS = "
          f"{tr['translate_cached_mips'] / mips:.2f}x the interpreter "
          f"({tr['translate_cached_ms']:.1f} ms for {tr['translate_cached_hits']} cached region(s))")
    print(f"block translator, regions already translated: {tr['translate_warm_mips']:.1f} MIPS "
          f"= {tr['translate_warm_mips'] / mips:.2f}x the interpreter")
    print(f"  its memory: {tr['translate_rss_mib']:.1f} MiB more RSS (the 8 MiB entry table, "
          f"LLVM and the code)")

    vs = versus_unicorn(cpu, outer, inner)
    if vs is not None:
        mine, theirs, ratios = vs
        x_uc = statistics.median(ratios)
        uc_mips = statistics.median(theirs)
        print(f"unicorn (QEMU JIT) same loop, same process, {len(ratios)} pairs side by side "
              f"(pypc run, unicorn run, alternating): unicorn {min(theirs):.1f}-"
              f"{max(theirs):.1f} MIPS, pypc {min(mine):.1f}-{max(mine):.1f}; pypc / unicorn "
              f"pair by pair {min(ratios):.2f}-{max(ratios):.2f}, median {x_uc:.2f}x; "
              f"with the translator {tr['translate_mips'] / uc_mips:.2f}x (unicorn's median)")
        figures["unicorn_mips"] = round(uc_mips, 2)
        figures["x_unicorn"] = round(x_uc, 3)
        figures["x_unicorn_range"] = [round(min(ratios), 3), round(max(ratios), 3)]
        figures["translate_x_unicorn"] = round(tr["translate_mips"] / uc_mips, 3)
    else:
        print("unicorn not installed (pip install unicorn): skipped")
    figures["host_cpu"] = host_cpu()
    print(f"host: {figures['host_cpu']}")
    print(json.dumps(figures))
    return figures


def host_cpu():
    """The CPU model (from /proc/cpuinfo where there is one) and LLVM's name for it."""
    model = ""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    import llvmlite.binding as llvm
    return f"{model or 'unknown model'} (LLVM: {llvm.get_host_cpu_name()})"


def _rss_mib():
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def bench_translator(outer, inner, want):
    """The standard loop under the block translator: best of three fresh
    translators with no region cache (each compiles what it runs), best of
    three fresh translators that find the regions in a region cache on disk
    (a later run's case: each links them), then best of three runs that find
    their regions translated; the RSS the first translator added."""
    import tempfile

    from .cpu import Cpu
    from .cpu import region_cache, translator

    def fresh(cache):
        cpu = Cpu()
        cpu.translate(cache=cache)
        dt, insns, _ = run_standard_loop(cpu, outer, inner)
        if insns != want + 1:
            raise RuntimeError(f"translated run: instruction count {insns} != {want} + HLT")
        return dt, cpu

    rss0 = _rss_mib()
    cold = []
    for _ in range(3):
        dt, cpu = fresh(None)
        cold.append((dt, cpu.translator.stats()))
        if len(cold) == 1:
            rss = _rss_mib() - rss0
    dt, stats = min(cold, key=lambda c: c[0])
    warm, _, _ = _best_of(3, lambda: run_standard_loop(cpu, outer, inner))
    with tempfile.TemporaryDirectory(prefix="pypc-bench-regions-") as folder:
        fresh(region_cache.RegionCache(translator.recipe(), folder))       # fills it
        cached = []
        for _ in range(3):
            # a new cache object on the same folder: what a later process finds
            dt_c, cpu_c = fresh(region_cache.RegionCache(translator.recipe(), folder))
            cached.append((dt_c, cpu_c.translator.stats()))
    dt_c, stats_c = min(cached, key=lambda c: c[0])
    return {
        "translate_mips": round(want / dt / 1e6, 2),
        "translate_compile_ms": round(stats["compile_seconds"] * 1e3, 2),
        "translate_regions": stats["regions"],
        "translate_cached_mips": round(want / dt_c / 1e6, 2),
        "translate_cached_ms": round(stats_c["compile_seconds"] * 1e3, 2),
        "translate_cached_hits": stats_c["cache_hits"],
        "translate_warm_mips": round(want / warm / 1e6, 2),
        "translate_rss_mib": round(rss, 1),
    }


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    what = argv[0] if argv else "cpu"
    if what == "cpu":
        bench_cpu()
        return 0
    if what == "system":
        from .system_bench import bench_system
        bench_system(argv[1:])
        return 0
    if what == "ab":
        from .bench_ab import main as ab_main
        return ab_main(argv[1:])
    print(f"unknown benchmark {what!r}: choose cpu, system or ab", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
