"""What a batch worker keeps out of its memory (issue 23): after its
warm-up and a job it has not imported jsonschema (the driver checks the
jobs; rpc.schemas and snapshot.reader import it only to validate) nor
SciPy's linear algebra (numba_start.without_scipy), its numba runtime was loaded from the
object file rather than compiled (numba_start.start_runtime), the
warm-up's objects are frozen out of the collector's sight (so the
collection after each job looks at that job's objects only), and its RSS
is within issue 23's 150 MB.  Run in a fresh interpreter, as a spawned
worker is."""

import importlib.util
import json
import subprocess
import sys

import pytest

from pypc_core.batch.jobs import JobError, check_job

SCRIPT = r"""
import gc, json, os, shutil, sys, tempfile
import pypc_core.cli                         # what a spawned worker of `pypc batch` imports
from pypc_core.cpu import numba_start
from pypc_core.batch.worker import release_free_heap, run_timed, warm_up
from pypc_core.batch.jobs import check_job
from numba.core.runtime import nrtdynmod
compiled = []
compile_nrt = nrtdynmod.compile_nrt_functions
nrtdynmod.compile_nrt_functions = lambda ctx: compiled.append(1) or compile_nrt(ctx)
warm_up()
nrtdynmod.compile_nrt_functions = compile_nrt
frozen = gc.get_freeze_count()
folder = tempfile.mkdtemp()
with open(os.path.join(folder, "HI.COM"), "wb") as fh:
    fh.write(bytes.fromhex("B44CB007CD21"))  # mov ah,4Ch; mov al,7; int 21h
result, _ = run_timed(check_job({"program": "HI.COM"}, 1, folder, validate=False))
release_free_heap()
shutil.rmtree(folder)
with open("/proc/self/status") as fh:
    rss = [int(line.split()[1]) / 1024 for line in fh if line.startswith("VmRSS:")]
runtime = [name for name in os.listdir(numba_start.core_cache_dir())
           if name.startswith("pypc-nrt-")]
print(json.dumps({"frozen": frozen, "exit": result["exit_code"],
                  "jsonschema": "jsonschema" in sys.modules,
                  "scipy_linalg": "scipy.linalg" in sys.modules,
                  "runtime_files": len(runtime), "compiled_nrt": len(compiled),
                  "rss_mb": rss[0] if rss else None}))
"""


def warm_worker():
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["exit"] == 7                   # the job ran
    return out


def test_a_warm_worker_imports_no_jsonschema_and_collects_cheaply():
    warm_worker()                             # the core's and the runtime's caches filled
    out = warm_worker()
    assert out["jsonschema"] is False
    assert out["frozen"] > 10_000             # numba's and the core's objects
    assert out["runtime_files"] >= 1 and out["compiled_nrt"] == 0
    if importlib.util.find_spec("scipy") is not None:
        assert out["scipy_linalg"] is False
    if out["rss_mb"] is not None:             # Linux
        assert out["rss_mb"] <= 150, out


def test_the_driver_still_validates_jobs():
    with pytest.raises(JobError, match="collect.screen"):
        check_job({"program": "X.COM", "collect": {"screen": 1}}, 1, ".")
