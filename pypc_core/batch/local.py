"""The local backend: a pool of worker processes on this host.

Workers are started with the ``spawn`` context (never ``fork``: numba's
threads and the parent's locks do not survive a fork), warm up once (the
core from numba's disk cache, a throw-away machine) and then run one job
after another, each sent over the worker's own pipe.  A job that passes
its wall-clock limit has its worker killed (reason ``wall_timeout``), a
worker that dies under a job (``os._exit``, a signal, a segfault) gives
reason ``worker_crashed``; either way a fresh worker takes its place and
the batch goes on.
"""

import multiprocessing
import os
import shutil
import tempfile
import time
from collections import deque
from multiprocessing.connection import wait

from .results import lost_result


def _worker_main(conn, work_root):
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)    # Ctrl-C is the driver's: it ends us
    from .worker import run_timed, warm_up
    try:
        warm_up()
    except Exception:
        pass                            # the job itself will say what is wrong
    conn.send(("ready", os.getpid()))
    while True:
        try:
            msg = conn.recv()
        except (EOFError, KeyboardInterrupt):
            return
        if msg is None:
            return
        spec, snapshot_path = msg
        conn.send(("done", run_timed(spec, snapshot_path, work_root)))


class _Worker:
    def __init__(self, ctx, root):
        self.conn, child = ctx.Pipe()
        self.folder = tempfile.mkdtemp(prefix="worker-", dir=root)   # its jobs' folders
        self.process = ctx.Process(target=_worker_main, args=(child, self.folder), daemon=True,
                                   name="pypc-batch-worker")
        self.process.start()
        child.close()
        self.ready = False
        self.job = None                 # (spec, started)

    @property
    def pid(self):
        return self.process.pid

    def kill(self):
        try:
            self.process.kill()
        except Exception:
            pass
        self.process.join(5)
        self.conn.close()
        shutil.rmtree(self.folder, ignore_errors=True)     # what its job left

    def stop(self):
        try:
            self.conn.send(None)
        except OSError:
            pass
        self.process.join(5)
        if self.process.is_alive():
            self.kill()
        else:
            self.conn.close()


class LocalPool:
    """``workers`` processes (default: the core count)."""

    def __init__(self, workers=None, snapshot_path=None, wall_timeout=None):
        self.size = max(1, int(workers or os.cpu_count() or 1))
        self.snapshot_path = snapshot_path
        self.wall_timeout = wall_timeout
        self.ctx = multiprocessing.get_context("spawn")
        # the jobs' folders: what a killed worker's job left goes with the pool
        self.root = tempfile.mkdtemp(prefix="pypc-batch-")
        self.workers = []
        self._closed = False
        self._start_failures = 0

    def running(self):
        """{job id: pid of the worker running it}."""
        return {w.job[0]["id"]: w.pid for w in self.workers if w.job is not None}

    def run(self, specs, on_start=None):
        """Results (dicts with ``wall_s``) as they finish, with their blobs:
        ``(result, blobs)``.  ``specs`` is consumed lazily."""
        specs = iter(specs)
        queue = deque()
        exhausted = False
        if not self.workers:
            self.workers = [_Worker(self.ctx, self.root) for _ in range(self.size)]
        try:
            while True:
                for w in self.workers:
                    if w.ready and w.job is None:
                        if not queue and not exhausted:
                            try:
                                queue.append(next(specs))
                            except StopIteration:
                                exhausted = True
                        if queue:
                            spec = queue.popleft()
                            if isinstance(spec, tuple):      # (result, blobs) ready made
                                yield spec
                                continue
                            w.job = (spec, time.monotonic())
                            w.conn.send((spec, self.snapshot_path))
                            if on_start is not None:
                                on_start(spec)
                busy = [w for w in self.workers if w.job is not None]
                if exhausted and not queue and not busy:
                    return
                timeout = None
                now = time.monotonic()
                for w in busy:
                    limit = w.job[0].get("wall_timeout") or self.wall_timeout
                    if limit:
                        left = w.job[1] + limit - now
                        timeout = left if timeout is None else min(timeout, left)
                waiting = [w for w in self.workers if w.job is not None or not w.ready]
                if not waiting:
                    continue
                handles = {}
                for w in waiting:
                    handles[w.conn] = w
                    handles[w.process.sentinel] = w
                ready = wait(list(handles), timeout=max(0.0, timeout) if timeout is not None
                             else None)
                seen = set()
                for handle in ready:
                    w = handles[handle]
                    if id(w) in seen:
                        continue
                    seen.add(id(w))
                    got = None
                    if w.conn.poll():
                        try:
                            got = w.conn.recv()
                        except (EOFError, OSError):
                            got = None
                    if got is None:
                        yield from self._replace(w, "worker_crashed")
                        continue
                    kind, payload = got
                    if kind == "ready":
                        w.ready = True
                    else:
                        w.job = None
                        yield payload
                now = time.monotonic()
                for w in list(self.workers):
                    if w.job is None:
                        continue
                    limit = w.job[0].get("wall_timeout") or self.wall_timeout
                    if limit and now - w.job[1] >= limit:
                        yield from self._replace(w, "wall_timeout")
        finally:
            # left early (the caller stopped iterating, an error): the jobs
            # still running are abandoned with their workers
            for i, w in enumerate(self.workers):
                if w.job is not None:
                    w.kill()
                    self.workers[i] = _Worker(self.ctx, self.root)
            if self._closed:
                self._shutdown()

    def _replace(self, w, reason):
        """Kill worker ``w``, put a fresh one in its place; the lost job's
        result (if it was running one)."""
        job = w.job
        if not w.ready:
            self._start_failures += 1
            if self._start_failures >= 3:
                from ..errors import PypcError
                raise PypcError(f"batch workers die before they are ready (exit status "
                                f"{w.process.exitcode}); run one job with pypc run to see why")
        else:
            self._start_failures = 0
        w.kill()
        self.workers[self.workers.index(w)] = _Worker(self.ctx, self.root)
        if job is not None:
            spec, started = job
            yield lost_result(spec, reason, time.monotonic() - started), {}

    def close(self):
        self._closed = True
        self._shutdown()

    def _shutdown(self):
        for w in self.workers:
            if w.job is not None:
                w.kill()
            else:
                w.stop()
        self.workers = []
        shutil.rmtree(self.root, ignore_errors=True)
