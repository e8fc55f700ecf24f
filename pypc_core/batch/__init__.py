"""Many machines: run ``pypc run`` configurations as jobs on a pool of
worker processes (or on Ray) and collect what each job asks for.

```python
from pypc_core import batch

jobs = [{"id": n, "program": "SQUARE.COM", "args": [n]} for n in range(50)]
with batch.Batch(workers=2) as b:
    for result in b.submit(jobs, base_dir="tools"):   # as they finish
        print(result["id"], result["reason"], result["exit_code"], result["console"])
```

``Batch(workers=None, ray=None, from_snapshot=None, wall_timeout=600,
blob_dir=None)``: ``workers`` processes (default: the core count), or
with ``ray=True`` (a local Ray runtime, or the one already initialised) or
``ray="ADDRESS"`` (a cluster) as many Ray actors.  ``submit(jobs,
base_dir=".")`` checks each job as it takes it (a bad one is a result
with reason ``invalid``), runs it on a free worker and yields the results
as they finish; ``run_all`` returns them in job order.  Jobs and results
are described in ``docs/batch.md``; :mod:`pypc_core.batch.jobs` checks
jobs, :mod:`pypc_core.batch.worker` runs one.
"""

from ..errors import PypcError
from .jobs import JobError, check_all, check_job, read_jobs, schema
from .results import dumps, invalid_result, place_blobs, without_wall

DEFAULT_WALL_TIMEOUT_S = 600.0

__all__ = ["Batch", "run", "check_job", "check_all", "read_jobs", "schema", "JobError",
           "dumps", "without_wall", "DEFAULT_WALL_TIMEOUT_S"]


class Batch:
    """A pool of warm workers that runs jobs (see the module's text)."""

    def __init__(self, workers=None, ray=None, from_snapshot=None,
                 wall_timeout=DEFAULT_WALL_TIMEOUT_S, blob_dir=None, relative_to=None):
        import os
        if workers is not None and int(workers) < 1:
            raise PypcError(f"workers must be 1 or more, not {workers}")
        if wall_timeout is not None and not wall_timeout > 0:
            raise PypcError(f"wall_timeout must be greater than 0, not {wall_timeout}")
        if from_snapshot is not None:
            from_snapshot = os.path.abspath(from_snapshot)
            if not os.path.isfile(from_snapshot):
                raise PypcError(f"--from-snapshot {from_snapshot!r}: no such file")
        self.from_snapshot = from_snapshot
        self.blob_dir = blob_dir
        self.relative_to = relative_to or (os.path.dirname(os.path.abspath(blob_dir))
                                           if blob_dir else None)
        if ray:
            from .ray_backend import RayPool
            self.backend = RayPool(workers, None if ray is True else ray,
                                   snapshot_path=from_snapshot, wall_timeout=wall_timeout)
        else:
            from .local import LocalPool
            self.backend = LocalPool(workers, snapshot_path=from_snapshot,
                                     wall_timeout=wall_timeout)
        self.size = self.backend.size

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self.backend.close()

    def running(self):
        """{job id: worker} of the jobs running now (a pid for the local pool)."""
        return self.backend.running()

    def _specs(self, jobs, base_dir):
        for n, job in enumerate(jobs, 1):
            if isinstance(job, dict) and "argv" in job and "collect" in job:
                yield job                       # checked already (check_all)
                continue
            try:
                yield check_job(job, n, base_dir, from_snapshot=self.from_snapshot)
            except PypcError as exc:
                job_id = job.get("id", n) if isinstance(job, dict) else n
                yield invalid_result(n, job_id, exc), {}

    def submit(self, jobs, base_dir=".", on_start=None):
        """Results as the jobs finish (dicts; ``index`` is the job's number)."""
        for result, blobs in self.backend.run(self._specs(jobs, base_dir), on_start):
            yield place_blobs(result, blobs, self.blob_dir, self.relative_to)

    def run_all(self, jobs, base_dir="."):
        """Every result, in job order."""
        return sorted(self.submit(jobs, base_dir), key=lambda r: r["index"])


def run(jobs, base_dir=".", **options):
    """Run ``jobs`` on a fresh :class:`Batch` (``options`` are its
    arguments) and yield the results as they finish."""
    with Batch(**options) as b:
        yield from b.submit(jobs, base_dir)
