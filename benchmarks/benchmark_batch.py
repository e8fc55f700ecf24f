"""``pypc batch`` figures (issue 23):

* jobs/s for 200 short jobs (SQUARE.COM, tests/guest/dos/square.asm, under
  the built-in DOS) on a local pool of 1 and of 2 workers, and on 2 Ray
  actors (a local Ray runtime; skipped without Ray) -- on warm workers
  (the pool has run a few jobs first) and counting the pool's start;
* the per-job overhead on a warm worker: 50 jobs of a two-byte program
  (INT 20h) one after another on one worker, the mean time from handing a
  job over to getting its result, and the median ``wall_s`` inside the
  worker (parse, check, copy the drive folder, build the machine, run,
  collect, close);
* the RSS of a warm worker while it holds a machine (read from
  /proc/PID/status and smaps during a job that runs for a few seconds),
  and its peak, split into the worker's own (anonymous) memory and the
  mapped files (libllvmlite.so's code is most of them) that every worker
  shares, with its PSS (shared pages divided among the processes mapping
  them); then what that RSS is made of: a fresh interpreter going through
  a worker's start step by step (Python, NumPy, numba, numba's runtime,
  numba's CPU target, pypc's modules, the warm-up), RSS after each step;
* with a FreeDOS floppy (``--freedos IMAGE`` or PYPC_FREEDOS_IMAGE): jobs/s
  of 20 jobs that each boot it and set a prompt, against 20 jobs started
  from a snapshot taken at its prompt (``--from-snapshot``).

    python benchmarks/benchmark_batch.py [--jobs 200] [--freedos fd360.img] [--no-ray]

Speed figures depend on the host and on what else runs on it: quote them
with the host's load.
"""

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

from pypc_core import batch  # noqa: E402
from pypc_core.scheduler import CPU_HZ  # noqa: E402


def square_jobs(count):
    return [{"id": n, "program": "SQUARE.COM", "args": [n % 256]} for n in range(count)]


def checked(jobs, folder, from_snapshot=None):
    """The jobs checked up front, as ``pypc batch`` does before it runs any."""
    return batch.check_all(list(enumerate(jobs, 1)), folder, from_snapshot)


def timed_batch(folder, jobs, warm=4, **options):
    """(seconds for ``jobs`` on warm workers, seconds including the pool's
    start, results)."""
    t0 = time.perf_counter()
    with batch.Batch(**options) as b:
        for r in b.submit(square_jobs(warm * b.size), base_dir=folder):
            assert r["reason"] == "exit", r
        t1 = time.perf_counter()
        results = list(b.submit(checked(jobs, folder), base_dir=folder))
        t2 = time.perf_counter()
    bad = [r for r in results if r["reason"] != "exit"]
    assert not bad, bad[:3]
    return t2 - t1, (t2 - t0), results


def rss_of(pid):
    """MB (kB / 1024, as /proc counts) of process ``pid``: VmRSS, VmHWM,
    RssAnon, RssFile (status), Pss (smaps_rollup) and llvmlite (the RSS of
    libllvmlite.so's mappings, smaps)."""
    out = {}
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                out[key] = int(value.split()[0]) / 1024
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    out["Pss"] = int(line.split()[1]) / 1024
        llvm = 0
        name = ""
        with open(f"/proc/{pid}/smaps") as fh:
            for line in fh:
                first = line.split(None, 6)
                if len(first) >= 5 and "-" in first[0] and not first[0].endswith(":"):
                    name = first[5].strip() if len(first) > 5 else ""
                elif first and first[0] == "Rss:" and "libllvmlite" in name:
                    llvm += int(first[1])
        out["llvmlite"] = llvm / 1024
    except OSError:
        pass
    return out


# A fresh interpreter going through a batch worker's start in steps (the
# steps of pypc_core.batch.worker.warm_up, taken apart): RSS after each.
BREAKDOWN = r"""
import json, sys
def rss():
    out = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "RssAnon", "RssFile"):
                out[key] = int(value.split()[0]) / 1024
    return out
steps = [("Python", rss())]
import numpy
steps.append(("NumPy", rss()))
from pypc_core.cpu import numba_start
steps.append(("pypc's package, its batch module (pluggy, argparse, ...)", rss()))
with numba_start.without_scipy():
    import numba
    steps.append(("numba imported (libllvmlite.so mapped and initialised)", rss()))
    cache_dir = numba_start.core_cache_dir()
    # declaring the core's numba functions sets up numba's typing and target
    # contexts: LLVM's target machine and JIT engine
    steps.append(("pypc's core module (numba's contexts, LLVM's JIT set up)", rss()))
    how = numba_start.start_runtime(cache_dir)
    steps.append((f"numba's runtime ({how} from its file)" if how == "loaded" else
                  f"numba's runtime ({how})", rss()))
    from numba.core.registry import cpu_target
    cpu_target.target_context.refresh()
    steps.append(("numba's CPU target (its NumPy and Python implementations)", rss()))
    import pypc_core.cli.headless, pypc_core.cli.run, pypc_core.machine
    import pypc_core.batch.local, pypc_core.batch.worker
    import pypc_plugins.cga.cga, pypc_plugins.fdc.fdc, pypc_plugins.uart.uart
    steps.append(("pypc's other modules (machine, DOS, cards, cli)", rss()))
from pypc_core.batch.worker import warm_up
warm_up()
steps.append(("warm-up: the core loaded from the cache, a throw-away job", rss()))
print(json.dumps(steps))
"""


def breakdown():
    """[(step, {VmRSS, RssAnon, RssFile})] of BREAKDOWN, or None."""
    import json
    import subprocess
    proc = subprocess.run([sys.executable, "-c", BREAKDOWN], capture_output=True, text=True,
                          timeout=600, cwd=ROOT)
    if proc.returncode != 0 or not proc.stdout.strip():
        print(f"  (no breakdown: {proc.stderr.strip().splitlines()[-1:]})")
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def overhead_and_rss(folder):
    with open(os.path.join(folder, "WARM.COM"), "wb") as fh:
        fh.write(b"\xcd\x20")
    with batch.Batch(workers=1) as b:
        list(b.submit([{"program": "WARM.COM"}] * 5, base_dir=folder))
        trivial = [{"id": n, "program": "WARM.COM"} for n in range(50)]
        t0 = time.perf_counter()
        specs = checked(trivial, folder)
        check = (time.perf_counter() - t0) / len(trivial)
        t0 = time.perf_counter()
        results = list(b.submit(specs, base_dir=folder))
        per_job = (time.perf_counter() - t0) / len(trivial)
        inside = statistics.median(r["wall_s"] for r in results)
        # a job that holds its machine for a few seconds: the worker's RSS then
        seen = {}

        def probe():
            while "rss" not in seen:
                pid = b.running().get("hold")
                if pid is not None:
                    time.sleep(1.0)
                    seen["rss"] = rss_of(pid)
                    return
                time.sleep(0.05)
        thread = threading.Thread(target=probe, daemon=True)
        thread.start()
        list(b.submit([{"id": "hold", "program": "SQUARE.COM", "args": ["loop"],
                        "timeout": 1e6, "wall_timeout": 4}], base_dir=folder))
        thread.join(10)
    return check, per_job, inside, seen.get("rss", {})


def freedos(image, folder, count):
    import subprocess
    shutil.copy(image, os.path.join(folder, "fd.img"))
    snap = os.path.join(folder, "booted.zip")
    subprocess.run([sys.executable, "-m", "pypc_core.cli", "run", "--headless", "--turbo",
                    "--no-rpc", "--no-viewers", "--floppy", os.path.join(folder, "fd.img"),
                    "--cow", "--until-text", "A:\\>", "--timeout", "60",
                    "--save-snapshot", snap], check=True, capture_output=True)
    boot = [{"id": n, "floppy": "fd.img", "type_after": "A:\\>", "type": f"prompt job{n}$g\r",
             "until_text": f"job{n}>", "timeout": 120} for n in range(count)]
    fan = [{"id": n, "type": f"prompt job{n}$g\r", "until_text": f"job{n}>", "timeout": 60}
           for n in range(count)]
    figures = {}
    for label, jobs, snapshot in (("boot each job", boot, None),
                                  ("from the snapshot", fan, snap)):
        with batch.Batch(workers=2, from_snapshot=snapshot) as b:
            list(b.submit([dict(jobs[0], id="warm")], base_dir=folder))
            t0 = time.perf_counter()
            results = list(b.submit(checked(jobs, folder, snapshot), base_dir=folder))
            seconds = time.perf_counter() - t0
        assert all(r["reason"] == "until_text" for r in results), results[:2]
        figures[label] = (count / seconds,
                          statistics.median(r["run_cycles"] for r in results) / CPU_HZ)
    return figures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=200)
    ap.add_argument("--freedos", default=os.environ.get("PYPC_FREEDOS_IMAGE"))
    ap.add_argument("--no-ray", action="store_true")
    opts = ap.parse_args()
    from guest import dos as progs
    folder = tempfile.mkdtemp(prefix="pypc-bench-batch-")
    try:
        progs.install(folder, "square")
        jobs = square_jobs(opts.jobs)
        load0 = os.getloadavg()[0]
        print(f"host: {os.cpu_count()} cores, load average {load0:.2f} at the start")
        rows = []
        for label, options in (("local, 1 worker", {"workers": 1}),
                               ("local, 2 workers", {"workers": 2})):
            warm, whole, _ = timed_batch(folder, jobs, **options)
            rows.append((label, opts.jobs / warm, opts.jobs / whole))
        if not opts.no_ray:
            try:
                import ray
            except ImportError:
                print("ray is not installed: no Ray figures (pip install 'pypc[ray]')")
            else:
                ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                         configure_logging=False)
                try:
                    warm, whole, _ = timed_batch(folder, jobs, workers=2, ray=True)
                    rows.append(("Ray, 2 actors", opts.jobs / warm, opts.jobs / whole))
                finally:
                    ray.shutdown()
        print(f"\n{opts.jobs} short jobs (SQUARE.COM under the built-in DOS):")
        print(f"  {'backend':<20} {'jobs/s warm':>12} {'jobs/s with start':>18}")
        for label, warm, whole in rows:
            print(f"  {label:<20} {warm:>12.1f} {whole:>18.1f}")
        if len(rows) >= 2:
            print(f"  scaling 1 -> 2 workers: {rows[1][1] / rows[0][1]:.2f}x (warm)")
        check, per_job, inside, rss = overhead_and_rss(folder)
        print("\nper-job overhead on a warm worker (INT 20h program, 50 jobs in a row):")
        print(f"  checking a job before the batch (driver side): {check * 1000:.1f} ms")
        print(f"  handed over -> result: {per_job * 1000:.1f} ms a job (target <= 50 ms)")
        print(f"  inside the worker (median wall_s): {inside * 1000:.1f} ms")
        if rss:
            print(f"\nwarm worker holding a machine: RSS {rss['VmRSS']:.0f} MB, "
                  f"peak {rss['VmHWM']:.0f} MB (target <= 150 MB; MB = /proc's kB / 1024)")
            if "RssAnon" in rss:
                print(f"  of which {rss['RssAnon']:.0f} MB the worker's own (anonymous) and "
                      f"{rss['RssFile']:.0f} MB mapped files (libllvmlite.so "
                      f"{rss.get('llvmlite', 0):.0f} MB, NumPy, Python: shared by the workers)")
            if "Pss" in rss:
                print(f"  PSS {rss['Pss']:.0f} MB (shared pages divided among the processes "
                      f"mapping them)")
        steps = breakdown()
        if steps:
            print("what it is made of (a fresh interpreter through a worker's start):")
            print(f"  {'step':<60} {'RSS':>6} {'+anon':>6} {'+file':>6}")
            before = None
            for label, now in steps:
                if before is None:
                    print(f"  {label:<60} {now['VmRSS']:6.1f} {now['RssAnon']:6.1f} "
                          f"{now['RssFile']:6.1f}")
                else:
                    print(f"  {label:<60} {now['VmRSS']:6.1f} "
                          f"{now['RssAnon'] - before['RssAnon']:+6.1f} "
                          f"{now['RssFile'] - before['RssFile']:+6.1f}")
                before = now
            if rss:
                label = "a job's machine and its run (the held worker above)"
                print(f"  {label:<60} "
                      f"{rss['VmRSS']:6.1f} {rss['RssAnon'] - before['RssAnon']:+6.1f} "
                      f"{rss['RssFile'] - before['RssFile']:+6.1f}")
        if opts.freedos:
            figures = freedos(opts.freedos, folder, 20)
            print("\nFreeDOS, 20 jobs setting a prompt, 2 workers:")
            for label, (rate, emulated) in figures.items():
                print(f"  {label:<20} {rate:6.2f} jobs/s  (a job runs {emulated:.1f} emulated s, "
                      f"median)")
        else:
            print("\nno FreeDOS figures: give --freedos IMAGE or PYPC_FREEDOS_IMAGE")
        print(f"\nload average {os.getloadavg()[0]:.2f} at the end (figures from a busy host "
              f"are not claims)")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
