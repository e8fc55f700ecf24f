"""What a batch worker keeps out of its memory (issue 23): after its
warm-up and a job it has not imported jsonschema (the driver checks the
jobs; rpc.schemas and snapshot.reader import it only to validate), the
warm-up's objects are frozen out of the collector's sight (so the
collection after each job looks at that job's objects only).  Run in a fresh interpreter, as a
spawned worker is."""

import json
import subprocess
import sys

import pytest

from pypc_core.batch.jobs import JobError, check_job

SCRIPT = r"""
import gc, json, os, shutil, sys, tempfile
import pypc_core.cli                         # what a spawned worker of `pypc batch` imports
from pypc_core.batch.worker import release_free_heap, run_timed, warm_up
from pypc_core.batch.jobs import check_job
warm_up()
frozen = gc.get_freeze_count()
folder = tempfile.mkdtemp()
with open(os.path.join(folder, "HI.COM"), "wb") as fh:
    fh.write(bytes.fromhex("B44CB007CD21"))  # mov ah,4Ch; mov al,7; int 21h
result, _ = run_timed(check_job({"program": "HI.COM"}, 1, folder, validate=False))
release_free_heap()
shutil.rmtree(folder)
print(json.dumps({"frozen": frozen, "exit": result["exit_code"],
                  "jsonschema": "jsonschema" in sys.modules}))
"""


def test_a_warm_worker_imports_no_jsonschema_and_collects_cheaply():
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["exit"] == 7                   # the job ran
    assert out["jsonschema"] is False
    assert out["frozen"] > 10_000             # numba's and the core's objects


def test_the_driver_still_validates_jobs():
    with pytest.raises(JobError, match="collect.screen"):
        check_job({"program": "X.COM", "collect": {"screen": 1}}, 1, ".")
