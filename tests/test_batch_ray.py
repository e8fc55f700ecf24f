"""``pypc batch --ray`` (issue 23): the 50-job batch of tests/test_batch.py
on a local Ray runtime (``ray.init`` here, two CPUs, no dashboard, no
network) gives the same result lines as the local pool, byte for byte but
for the wall times; the snapshot fan-out goes through Ray's object store
and gives the local pool's results; a killed actor is a worker_crashed
result and the rest complete."""

import json
import os
import signal

import pytest

ray = pytest.importorskip("ray", reason="Ray is the optional extra pypc[ray] "
                                        "(the test extra installs it)")

from guest import dos as progs
from pypc_core import batch
from pypc_core.cli import main

from test_batch import (N_JOBS, hold_snapshot, square_jobs, strip_wall,   # noqa: F401
                        two_worker_run, tools, write_jobs)


@pytest.fixture(scope="module")
def ray_runtime():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    yield
    ray.shutdown()


def test_ray_gives_the_local_pools_lines(ray_runtime, two_worker_run, tmp_path):
    lines, _work = two_worker_run
    jobs = write_jobs(tmp_path / "jobs.jsonl", square_jobs())
    progs.install(tmp_path, "square")
    out = tmp_path / "results.jsonl"
    assert main(["batch", str(jobs), "--out", str(out), "--ray", "--workers", "2",
                 "--quiet"]) == 0
    got = out.read_text().splitlines()
    assert len(got) == N_JOBS
    assert strip_wall(got) == strip_wall(lines)
    # the blobs are written on the driver's side, beside the results
    first = json.loads(got[0])
    assert (tmp_path / first["files"][0]["blob"]).read_bytes() == b"0 squared is 0\r\n"


def test_fan_out_through_the_object_store(ray_runtime, hold_snapshot, tmp_path):
    work, snapshot = hold_snapshot
    jobs = [{"id": f"k{n}", "drive": {"C": str(work / "a")}, "type": key, "plugins": "cga"}
            for n, key in enumerate("abcd")]
    with batch.Batch(workers=2, from_snapshot=snapshot) as local:
        expected = [batch.without_wall(r) for r in local.run_all(jobs)]
    with batch.Batch(workers=2, ray=True, from_snapshot=snapshot) as on_ray:
        got = [batch.without_wall(r) for r in on_ray.run_all(jobs)]
    assert got == expected
    assert all(r["reason"] == "exit" and r["exit_code"] == 0 for r in got)
    assert not os.path.exists(snapshot + ".disks")
    # the actors' copy of the bundle is gone with them
    import glob
    import tempfile
    assert not glob.glob(os.path.join(tempfile.gettempdir(), "pypc-batch-snapshot-*"))


def test_a_killed_actor_is_worker_crashed(ray_runtime, tools):
    jobs = [{"id": "victim", "program": "SQUARE.COM", "args": ["loop"], "timeout": 1e6,
             "wall_timeout": 300}] + [{"id": f"ok{n}", "program": "SQUARE.COM", "args": [n]}
                                      for n in range(4)]
    with batch.Batch(workers=2, ray=True) as b:
        results = {}
        for r in b.submit(jobs, base_dir=tools,
                          on_start=lambda spec: spec["id"] == "victim" and _kill_soon(b)):
            results[r["id"]] = r
    import tempfile
    assert not os.path.exists(os.path.join(tempfile.gettempdir(),
                                           f"pypc-batch-{b.backend.batch_id}"))
    assert results["victim"]["reason"] == "worker_crashed"
    for n in range(4):
        assert results[f"ok{n}"]["reason"] == "exit"
        assert results[f"ok{n}"]["exit_code"] == n


def _kill_soon(b):
    """Kill the process of the actor that runs the victim (from a thread:
    the driver is inside ray.wait then)."""
    import threading
    import time

    def kill():
        index = None
        while index is None:
            index = b.running().get("victim")
            time.sleep(0.05)
        pid = b.backend.pid_of(index)
        os.kill(pid, signal.SIGKILL)
    threading.Thread(target=kill, daemon=True).start()
