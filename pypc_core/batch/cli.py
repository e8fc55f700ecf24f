"""``pypc batch JOBS.jsonl --out RESULTS.jsonl``: every job checked first
(one bad field is a one-line error naming the job and the field, exit 2,
nothing run and nothing written), then run on a local pool of worker
processes (``--workers N``) or on Ray (``--ray [ADDRESS]``); one result
line per job, in job order; blobs in ``RESULTS.blobs/``; progress and a
summary on stderr."""

import argparse
import os
import signal
import sys
import time

from ..argtypes import positive_float
from ..errors import PypcError

HELP = ("Run many headless machines: JOBS.jsonl holds one job a line, a JSON object "
        "whose fields are the 'pypc run' options by their Python names (program, args, "
        "drive, floppy, type, type_after, until_text, timeout, load_snapshot, "
        "save_snapshot, plugins ...) plus id, collect (console, screen, screenshot, "
        "registers, memory, serial, files) and wall_timeout.  Every job is checked "
        "before any runs.  Results go to --out, one line per job in job order "
        "(screenshots and files the programs wrote in a folder beside it: results.jsonl "
        "gets results.blobs/); progress "
        "and a summary by stop reason and exit code on stderr.  Exit status 0 when "
        "every job ran to its own stop (exit, until_text, timeout, replay_*), 1 when one "
        "failed (error, wall_timeout, worker_crashed), 2 for bad input.  See "
        "docs/batch.md.")


def _workers(text):
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} workers: give 1 or more")
    return value


def add_parser(sub):
    p = sub.add_parser("batch", help="run many headless jobs on worker processes or Ray",
                       usage="pypc batch JOBS.jsonl --out RESULTS [options]",
                       description=HELP)
    p.add_argument("jobs", metavar="JOBS.jsonl",
                   help="the jobs, one JSON object a line (blank lines and # comments "
                        "skipped); relative paths in them are taken from its folder")
    p.add_argument("--out", required=True, metavar="RESULTS",
                   help="the results file to write (a new file: never overwritten)")
    p.add_argument("--format", choices=("jsonl", "csv"), default="jsonl",
                   help="RESULTS as JSON lines (default) or CSV for spreadsheets (index, "
                        "id, reason, exit_code, emulated_s, wall_s, console, screen, error)")
    p.add_argument("--workers", type=_workers, metavar="N",
                   help="worker processes (or Ray actors); default: the number of cores "
                        "(with --ray: the cluster's CPUs)")
    p.add_argument("--ray", nargs="?", const=True, default=None, metavar="ADDRESS",
                   help="run on Ray (pip install 'pypc[ray]'): a local Ray runtime, or "
                        "the cluster at ADDRESS")
    p.add_argument("--from-snapshot", metavar="FILE",
                   help="start every job that names no load_snapshot from this machine "
                        "bundle (pypc run --save-snapshot), its disks copy-on-write")
    p.add_argument("--wall-timeout", type=positive_float, default=600.0, metavar="SECONDS",
                   help="wall-clock seconds a job may take before its worker is killed and "
                        "replaced (reason wall_timeout; a job's own wall_timeout field "
                        "wins); default %(default)g")
    p.add_argument("--quiet", action="store_true",
                   help="no progress and no summary on stderr")
    return p


class _Progress:
    """A rich bar on a terminal (done, failed, running, jobs/s, ETA); plain
    lines otherwise, one per finished job."""

    def __init__(self, total, stream, quiet):
        self.total = total
        self.stream = stream
        self.quiet = quiet
        self.done = self.failed = self.running = 0
        self.start = time.monotonic()
        self.bar = None
        if not quiet and stream.isatty():
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                       TimeRemainingColumn)
            self.bar = Progress(TextColumn("pypc batch"), BarColumn(), MofNCompleteColumn(),
                                TextColumn("{task.fields[status]}"), TimeRemainingColumn(),
                                console=Console(file=stream), transient=True)
            self.task = self.bar.add_task("jobs", total=total, status="")
            self.bar.start()

    def _rate(self):
        elapsed = max(1e-9, time.monotonic() - self.start)
        return self.done / elapsed

    def started(self, spec):
        self.running += 1
        self._update()

    def finished(self, result):
        from .results import FAILED
        self.done += 1
        self.running = max(0, self.running - 1)
        if result["reason"] in FAILED:
            self.failed += 1
        if self.quiet:
            return
        if self.bar is not None:
            self._update()
            return
        code = result.get("exit_code")
        self.stream.write(f"pypc batch: {self.done}/{self.total} job {result['index']} "
                          f"(id {result['id']}): {result['reason']}"
                          + (f", exit code {code}" if code is not None else "")
                          + (f": {result['error']}" if result.get("error") else "") + "\n")
        self.stream.flush()

    def _update(self):
        if self.bar is not None:
            self.bar.update(self.task, completed=self.done,
                            status=f"failed {self.failed}  running {self.running}  "
                                   f"{self._rate():.1f} jobs/s")

    def close(self):
        if self.bar is not None:
            self.bar.stop()


def print_summary(results, elapsed, backend, stream):
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from .results import summary
    stream.write(f"pypc batch: {len(results)} jobs in {elapsed:.1f} s "
                 f"({len(results) / max(elapsed, 1e-9):.1f} jobs/s) on {backend}\n")
    table = Table(box=box.SIMPLE_HEAD)
    table.add_column("stop reason")
    table.add_column("exit code", justify="right")
    table.add_column("jobs", justify="right")
    for reason, code, n in summary(results):
        table.add_row(reason, "-" if code is None else str(code), str(n))
    Console(file=stream).print(table)


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def _term_as_interrupt():
    """SIGTERM ends a batch as Ctrl-C does (workers ended, results kept);
    the handler it replaces, or None off the main thread."""
    import threading
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, _interrupt)


def main(args):
    from . import Batch
    from .jobs import check_all, read_jobs
    from .results import FAILED, csv_text, dumps
    jobs_path = args.jobs
    if not os.path.isfile(jobs_path):
        raise PypcError(f"{jobs_path}: " + ("not a regular file" if os.path.exists(jobs_path)
                                            else "no such file"))
    out = args.out
    if os.path.lexists(out):
        raise PypcError(f"--out {out!r} already exists (it is never overwritten)")
    out_dir = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(out_dir):
        raise PypcError(f"--out {out!r}: no such directory {out_dir!r}")
    blob_dir = os.path.splitext(os.path.abspath(out))[0] + ".blobs"
    snapshot = args.from_snapshot
    if snapshot is not None:
        snapshot = os.path.abspath(snapshot)
        if not os.path.isfile(snapshot):
            raise PypcError(f"--from-snapshot {args.from_snapshot!r}: " + (
                "not a regular file" if os.path.exists(snapshot) else "no such file"))
    base_dir = os.path.dirname(os.path.abspath(jobs_path))
    specs = check_all(read_jobs(jobs_path), base_dir, snapshot, source=jobs_path)
    if not specs:
        raise PypcError(f"{jobs_path}: no jobs in it")
    wants_blobs = any(s["collect"]["screenshot"] or s["collect"]["files"] for s in specs)
    if wants_blobs and os.path.lexists(blob_dir):
        raise PypcError(f"{blob_dir!r} (the blobs of --out) already exists "
                        f"(it is never overwritten)")
    batch = Batch(workers=args.workers, ray=args.ray, from_snapshot=snapshot,
                  wall_timeout=args.wall_timeout, blob_dir=blob_dir if wants_blobs else None,
                  relative_to=out_dir)
    backend = (f"{batch.size} Ray actors" if args.ray else
               f"{batch.size} local worker" + ("s" if batch.size != 1 else ""))
    progress = _Progress(len(specs), sys.stderr, args.quiet)
    results, pending, next_index = [], {}, 1
    start = time.monotonic()
    fh = open(out, "x", encoding="utf-8", newline="")
    old_term = _term_as_interrupt()
    try:
        with batch:
            for result in batch.submit(specs, base_dir, on_start=progress.started):
                progress.finished(result)
                pending[result["index"]] = result
                while next_index in pending:        # in job order, as soon as possible
                    r = pending.pop(next_index)
                    results.append(r)
                    if args.format == "jsonl":
                        fh.write(dumps(r) + "\n")
                        fh.flush()
                    next_index += 1
        if args.format == "csv":
            fh.write(csv_text(results))
    except KeyboardInterrupt:
        progress.close()
        fh.close()
        sys.stderr.write(f"pypc batch: interrupted after {len(results)} of {len(specs)} "
                         f"jobs; {out} holds their results\n")
        return 130
    finally:
        progress.close()
        if not fh.closed:
            fh.close()
        if old_term is not None:
            signal.signal(signal.SIGTERM, old_term)
    if not args.quiet:
        print_summary(results, time.monotonic() - start, backend, sys.stderr)
    return 1 if any(r["reason"] in FAILED for r in results) else 0
