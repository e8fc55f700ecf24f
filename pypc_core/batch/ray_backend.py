"""The Ray backend (``pypc batch --ray [ADDRESS]``, the optional extra
``pypc[ray]``): one Ray actor per worker, each a warm process that runs
job after job with :func:`pypc_core.batch.worker.run_timed`.  The bundle
of ``--from-snapshot`` is put into Ray's object store once; each node
keeps one copy, fetched the first time an actor there needs it, and the
actors remove it and the jobs' folders at the batch's end.  A job past its wall-clock limit has its actor killed (reason
``wall_timeout``), an actor that dies under a job gives ``worker_crashed``;
a fresh actor takes its place.

Paths in jobs (programs, drives, images) are read on the node that runs
the job: on a cluster they must exist there too."""

import hashlib
import os
import tempfile
import time
import uuid

from ..errors import PypcError
from .results import lost_result


def _import_ray():
    try:
        import ray
    except ImportError:
        raise PypcError("--ray needs Ray: pip install 'pypc[ray]'") from None
    return ray


class _Actor:
    """The body of a Ray actor (wrapped by ``ray.remote`` at run time)."""

    def __init__(self, batch_id):
        from .worker import warm_up
        # the jobs' folders on this node, shared by the batch's actors here:
        # what a killed actor's job left goes at the batch's end (cleanup)
        self.root = os.path.join(tempfile.gettempdir(), f"pypc-batch-{batch_id}")
        os.makedirs(self.root, exist_ok=True)
        try:
            warm_up()
        except Exception:
            pass
        self.snapshot = None            # (sha256, local path)

    def pid(self):
        return os.getpid()

    def run(self, spec, snapshot):
        from .worker import run_timed
        path = None
        if snapshot is not None and spec.get("fanout"):
            sha, refs = snapshot
            if self.snapshot is None or self.snapshot[0] != sha:
                # one copy per node, shared by its actors (written whole, then renamed)
                path = os.path.join(tempfile.gettempdir(), f"pypc-batch-snapshot-{sha}.zip")
                if not _holds(path, sha):
                    import ray
                    data = ray.get(refs[0])
                    fd, part = tempfile.mkstemp(prefix="pypc-batch-snapshot-", suffix=".part")
                    with os.fdopen(fd, "wb") as fh:
                        fh.write(data)
                    os.replace(part, path)
                self.snapshot = (sha, path)
            path = self.snapshot[1]
        return run_timed(spec, path, self.root)

    def cleanup(self):
        """Remove this node's job folders and copy of the shared bundle (at
        the batch's end)."""
        import shutil
        shutil.rmtree(self.root, ignore_errors=True)
        if self.snapshot is not None:
            try:
                os.unlink(self.snapshot[1])
            except OSError:
                pass
            self.snapshot = None


def _holds(path, sha):
    try:
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest() == sha
    except OSError:
        return False


class RayPool:
    def __init__(self, workers=None, address=None, snapshot_path=None, wall_timeout=None):
        self.ray = _import_ray()
        if not self.ray.is_initialized():
            if address:
                self.ray.init(address=address, log_to_driver=False)
            else:
                self.ray.init(num_cpus=workers or os.cpu_count(), include_dashboard=False,
                              log_to_driver=False)
            self._own_runtime = True
        else:
            self._own_runtime = False
        if workers is None:
            workers = max(1, int(self.ray.cluster_resources().get("CPU", 1)))
        self.size = max(1, int(workers))
        self.wall_timeout = wall_timeout
        self.snapshot = None
        if snapshot_path is not None:
            with open(snapshot_path, "rb") as fh:
                data = fh.read()
            # a list, so the actors receive the reference and fetch it once
            self.snapshot = (hashlib.sha256(data).hexdigest(), [self.ray.put(data)])
        self.actor_class = self.ray.remote(num_cpus=1, max_restarts=0)(_Actor)
        self.batch_id = uuid.uuid4().hex[:12]
        self.actors = [self.actor_class.remote(self.batch_id) for _ in range(self.size)]
        # asked before any job, so answered even while the actor is busy later
        self.pid_refs = [a.pid.remote() for a in self.actors]
        self.jobs = {}                  # task ref -> (actor index, spec, started)

    def running(self):
        return {spec["id"]: i for _ref, (i, spec, _t) in self.jobs.items()}

    def run(self, specs, on_start=None):
        """``(result, blobs)`` as the jobs finish (see LocalPool.run)."""
        specs = iter(specs)
        free = list(range(self.size))
        try:
            yield from self._loop(specs, free, on_start)
        finally:
            # left early: the jobs still running are abandoned with their actors
            for _ref, (i, _spec, _t) in list(self.jobs.items()):
                self._replace(i)
            self.jobs.clear()

    def _loop(self, specs, free, on_start):
        ray = self.ray
        exhausted = False
        while True:
            while free and not exhausted:
                try:
                    spec = next(specs)
                except StopIteration:
                    exhausted = True
                    break
                if isinstance(spec, tuple):
                    yield spec
                    continue
                i = free.pop(0)
                ref = self.actors[i].run.remote(spec, self.snapshot)
                self.jobs[ref] = (i, spec, time.monotonic())
                if on_start is not None:
                    on_start(spec)
            if not self.jobs:
                if exhausted:
                    return
                continue
            now = time.monotonic()
            timeout = None
            for _i, spec, started in self.jobs.values():
                limit = spec.get("wall_timeout") or self.wall_timeout
                if limit:
                    left = max(0.0, started + limit - now)
                    timeout = left if timeout is None else min(timeout, left)
            done, _rest = ray.wait(list(self.jobs), num_returns=1, timeout=timeout)
            for ref in done:
                i, spec, started = self.jobs.pop(ref)
                try:
                    yield ray.get(ref)
                except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError):
                    self._replace(i)
                    yield lost_result(spec, "worker_crashed", time.monotonic() - started), {}
                free.append(i)
            now = time.monotonic()
            for ref, (i, spec, started) in list(self.jobs.items()):
                limit = spec.get("wall_timeout") or self.wall_timeout
                if limit and now - started >= limit:
                    del self.jobs[ref]
                    self._replace(i)
                    yield lost_result(spec, "wall_timeout", now - started), {}
                    free.append(i)

    def _replace(self, i):
        try:
            self.ray.kill(self.actors[i], no_restart=True)
        except Exception:
            pass
        self.actors[i] = self.actor_class.remote(self.batch_id)
        self.pid_refs[i] = self.actors[i].pid.remote()

    def pid_of(self, i):
        """The process id of actor ``i`` (on its node)."""
        return self.ray.get(self.pid_refs[i])

    def close(self):
        if self.actors:
            try:
                self.ray.get([a.cleanup.remote() for a in self.actors], timeout=30)
            except Exception:
                pass
        for a in self.actors:
            try:
                self.ray.kill(a, no_restart=True)
            except Exception:
                pass
        self.actors = []
        if self._own_runtime:
            self.ray.shutdown()
