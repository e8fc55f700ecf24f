"""``python -m pypc_core.bench ab REV [--rounds N] [--floppy DOS.IMG]``.

A speed figure counts only as a ratio measured side by side in one run, so
this compares a git revision REV ("A") with the working tree ("B"):

* REV is unpacked with ``git archive`` into a temporary folder and installed,
  not editable and without its dependencies, into a temporary venv that sees
  this interpreter's packages (numba, numpy, ...) but has its *own* pypc: its
  own ``pypc_core``, its own cards and method groups (entry points of the
  venv's distribution win over the editable install's) and, because its
  sources live in the venv, its own numba cache.  The tool checks both.
* Each round runs fresh processes A then B (or B then A, alternating, so a
  drift of the host does not favour one side): the standard CPU loop
  (best of 3 in-process), then the whole-XT figures of ``bench system``
  (idle guest, CPU-bound guest, the machine exit, DOS idle with
  ``--floppy``).
* During every process the host's other load is measured from /proc/stat
  (busy CPU time minus the child's own); a pair run while something else
  used more than ``--busy`` of a core gives no ratio, and the tool says so.

The last line printed is one JSON object with every figure and ratio.
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import venv

# Figures: (json key in the child's output, label, higher_is_better)
FIGURES = (
    ("mips", "bare standard loop, MIPS", True),
    ("idle_x_real", "idle guest, x real time", True),
    ("dos_idle_x_real", "DOS idle at the prompt, x real", True),
    ("machine_exit_us", "machine exit, µs", False),
    ("cpu_x_real", "CPU-bound guest in the XT, x real", True),
)

# The standard loop through APIs every revision since the core was written
# has (Cpu, bench.run_standard_loop): best of three, after a warm-up.
_CPU_DRIVER = r"""
import json, sys
from pypc_core.cpu import Cpu
from pypc_core.bench import run_standard_loop, expected_instructions
cpu = Cpu()
run_standard_loop(cpu, 2, 1000)
best = min(run_standard_loop(cpu, 40, 50000)[0] for _ in range(3))
print(json.dumps({"mips": expected_instructions(40, 50000) / best / 1e6}))
"""

_WHERE_DRIVER = r"""
import json, importlib.metadata as md
import pypc_core
eps = {ep.name: ep for ep in md.entry_points(group="pypc.devices")}
mod = __import__(eps["cga"].module, fromlist=["_"]) if "cga" in eps else None
print(json.dumps({"core": pypc_core.__file__,
                  "cga": getattr(mod, "__file__", None)}))
"""


class AbError(Exception):
    """A one-line reason the comparison cannot run."""


def _git(repo, *args):
    out = subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise AbError(f"git {' '.join(args)}: {out.stderr.strip() or 'failed'}")
    return out.stdout.strip()


def working_tree():
    """The folder of the pypc this interpreter imports (a git checkout)."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not os.path.isdir(os.path.join(here, ".git")) and not os.path.isfile(
            os.path.join(here, ".git")):
        raise AbError(f"{here} is not a git checkout: bench ab compares a revision "
                      "with the working tree of an editable install")
    return here


def prepare_revision(repo, rev, tmp):
    """Unpack REV and give it a venv of its own; returns that venv's python."""
    commit = _git(repo, "rev-parse", "--verify", f"{rev}^{{commit}}")
    src = os.path.join(tmp, "src")
    os.makedirs(src)
    archive = subprocess.Popen(["git", "-C", repo, "archive", commit],
                               stdout=subprocess.PIPE)
    untar = subprocess.run(["tar", "-x", "-C", src], stdin=archive.stdout,
                           capture_output=True)
    archive.stdout.close()
    if archive.wait() != 0 or untar.returncode != 0:
        raise AbError(f"cannot unpack {rev}: {untar.stderr.decode().strip()}")
    env_dir = os.path.join(tmp, "venv")
    venv.EnvBuilder(system_site_packages=True, with_pip=False).create(env_dir)
    python = os.path.join(env_dir, "bin", "python")
    # pip's --python (22.3+) installs into the venv with this interpreter's pip
    inst = subprocess.run([sys.executable, "-m", "pip", "--python", python, "install",
                           "-q", "--no-deps", src], capture_output=True, text=True)
    if inst.returncode != 0:
        lines = inst.stderr.strip().splitlines() or ["failed"]
        why = next((ln for ln in lines if "error" in ln.lower()), lines[-1]).strip()
        raise AbError(f"cannot install {rev} into its venv: {why}")
    return commit, python


def where(python, cwd):
    out = subprocess.run([python, "-c", _WHERE_DRIVER], capture_output=True, text=True,
                         cwd=cwd)
    if out.returncode != 0:
        raise AbError(f"{python} cannot import pypc: "
                      f"{(out.stderr.strip().splitlines() or ['?'])[-1]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _proc_busy():
    with open("/proc/stat") as fh:
        f = [int(x) for x in fh.readline().split()[1:]]
    idle = f[3] + (f[4] if len(f) > 4 else 0)
    return sum(f[:8]) - idle


def run_child(python, args, cwd, env):
    """Runs one fresh process; returns (figures dict, others' load in cores)."""
    hz = os.sysconf("SC_CLK_TCK")
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    b0 = _proc_busy()
    t0 = time.perf_counter()
    out = subprocess.run([python, *args], capture_output=True, text=True, cwd=cwd, env=env)
    wall = time.perf_counter() - t0
    b1 = _proc_busy()
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        tail = (out.stderr.strip().splitlines() or ["no output"])[-1]
        raise AbError(f"{python} {' '.join(args[:3])}: exit {out.returncode}: {tail}")
    own = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    others = max(0.0, ((b1 - b0) / hz - own) / wall)
    return json.loads(out.stdout.strip().splitlines()[-1]), others


def measure_side(python, cwd, floppy, seconds, env):
    figs, load1 = run_child(python, ["-c", _CPU_DRIVER], cwd, env)
    sys_args = ["-m", "pypc_core.bench", "system", "--seconds", str(seconds)]
    if floppy:
        sys_args += ["--floppy", floppy]
    sysfigs, load2 = run_child(python, sys_args, cwd, env)
    figs.update(sysfigs)
    return figs, max(load1, load2)


def _span(values):
    return f"{min(values):9.3f} {statistics.median(values):9.3f} {max(values):9.3f}"


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="python -m pypc_core.bench ab",
        description="A/B speed: git revision REV against the working tree, fresh "
                    "processes alternating, the host's load checked during each.")
    ap.add_argument("rev", help="the git revision to compare with (A)")
    ap.add_argument("--rounds", type=int, default=3, help="A/B pairs (default 3)")
    ap.add_argument("--floppy", help="a DOS floppy image for the DOS-idle figure")
    ap.add_argument("--seconds", type=float, default=60.0,
                    help="emulated seconds per whole-XT figure (default 60)")
    ap.add_argument("--busy", type=float, default=0.15,
                    help="others' load, in cores, above which a pair gives no ratio "
                         "(default 0.15)")
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    if args.floppy and not os.path.isfile(args.floppy):
        ap.error(f"--floppy {args.floppy}: no such file")
    try:
        return _compare(args)
    except AbError as exc:
        print(f"pypc: error: {exc}", file=sys.stderr)
        return 2


def _compare(args):
    repo = working_tree()
    floppy = os.path.abspath(args.floppy) if args.floppy else None
    head = _git(repo, "rev-parse", "--short", "HEAD")
    dirty = bool(_git(repo, "status", "--porcelain", "--untracked-files=no"))
    tmp = tempfile.mkdtemp(prefix="pypc-bench-ab-")
    try:
        commit, python_a = prepare_revision(repo, args.rev, tmp)
        run_dir = os.path.join(tmp, "run")          # cwd outside both trees
        os.makedirs(run_dir)
        env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
        env.pop("PYTHONPATH", None)
        loc_a, loc_b = where(python_a, run_dir), where(sys.executable, run_dir)
        if not loc_a["core"].startswith(tmp) or (loc_a["cga"] and not loc_a["cga"].startswith(tmp)):
            raise AbError(f"the venv of {args.rev} imports pypc from {loc_a}, not its own copy")
        if not loc_b["core"].startswith(repo):
            raise AbError(f"this interpreter imports pypc_core from {loc_b['core']}, "
                          f"not the working tree {repo}")
        print(f"A = {args.rev} ({commit[:10]}), its own venv: {os.path.dirname(loc_a['core'])}")
        print(f"B = working tree {repo} at {head}{' + uncommitted changes' if dirty else ''}")
        print(f"cpu: {_cpu_name()}; {args.rounds} rounds, {args.seconds:g} emulated s "
              f"per XT figure{'' if floppy else '; no --floppy: no DOS-idle figure'}")
        sides = {"A": python_a, "B": sys.executable}
        print("warming up (compiling each side's core into its own cache) ...", flush=True)
        for side in "AB":
            measure_side(sides[side], run_dir, floppy, 1.0, env)
        results = {"A": [], "B": []}
        loads = []
        for rnd in range(args.rounds):
            order = "AB" if rnd % 2 == 0 else "BA"
            pair, load = {}, 0.0
            for side in order:
                figs, ld = measure_side(sides[side], run_dir, floppy, args.seconds, env)
                pair[side] = figs
                load = max(load, ld)
            results["A"].append(pair["A"])
            results["B"].append(pair["B"])
            loads.append(load)
            quiet = "quiet" if load <= args.busy else "BUSY: no ratio from this pair"
            print(f"round {rnd + 1} ({order}): others' load {load:.2f} cores, {quiet}",
                  flush=True)
        return _report(args, results, loads, commit)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _cpu_name():
    """The host CPU: /proc/cpuinfo's model name and number, LLVM's name for it."""
    info = {}
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if not line.strip():
                    break                      # the first processor is enough
                key, _, value = line.partition(":")
                info[key.strip()] = value.strip()
    except OSError:
        pass
    name = f"{info.get('model name', '?')} (family {info.get('cpu family', '?')} " \
           f"model {info.get('model', '?')})"
    try:
        import llvmlite.binding as llvm
        name += f", LLVM host cpu {llvm.get_host_cpu_name()}"
    except Exception:        # llvmlite missing or too old: the model is enough
        pass
    return name


def _report(args, results, loads, commit):
    quiet = [i for i, ld in enumerate(loads) if ld <= args.busy]
    print()
    print(f"{'figure':<36} {'side':<5} {'min':>9} {'median':>9} {'max':>9}")
    out = {"rev": commit, "rounds": len(loads), "quiet_rounds": len(quiet),
           "loads": [round(x, 3) for x in loads], "figures": {}}
    for key, label, higher in FIGURES:
        a = [r[key] for r in results["A"] if key in r]
        b = [r[key] for r in results["B"] if key in r]
        if not a or not b:
            print(f"{label:<36} (not measured)")
            continue
        print(f"{label:<36} {'A':<5} {_span(a)}")
        print(f"{'':<36} {'B':<5} {_span(b)}")
        ratios = [results["B"][i][key] / results["A"][i][key] for i in quiet
                  if key in results["A"][i] and key in results["B"][i]
                  and results["A"][i][key]]
        fig = {"A": a, "B": b}
        if ratios:
            note = "(B/A; lower is better)" if not higher else "(B/A)"
            print(f"{'':<36} {'B/A':<5} {_span(ratios)}  {note}")
            fig["ratio"] = ratios
            fig["ratio_median"] = statistics.median(ratios)
        else:
            print(f"{'':<36} {'B/A':<5} no ratio: every pair ran on a busy host")
        out["figures"][key] = fig
    if len(quiet) < len(loads):
        print(f"{len(loads) - len(quiet)} of {len(loads)} pairs ran while other processes "
              f"used more than {args.busy} of a core: their ratios are left out")
    print(json.dumps(out))
    return 0
