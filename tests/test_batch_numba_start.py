"""How a pypc process starts numba (pypc_core/cpu/numba_start.py; issue 23's
memory figure): numba's runtime is compiled once, saved and then loaded
from its object file by later processes, a damaged or foreign file is
compiled again, code numba compiles afterwards links against the loaded
runtime, and numba's first load does not import SciPy.  Each case runs in
a fresh interpreter, as a spawned worker starts."""

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from pypc_core.cpu import numba_start

START = r"""
import json, sys
from pypc_core.cpu import numba_start
how = numba_start.start_runtime(sys.argv[1])
import numpy as np
from numba import njit

@njit                                   # compiled here, with reference counting
def squares(n):
    a = np.empty(n, dtype=np.int64)
    for i in range(n):
        a[i] = i * i
    return a

@njit
def total(a):
    return a.sum()

got = squares(6)
print(json.dumps({"how": how, "squares": got.tolist(), "total": int(total(got)),
                  "again": numba_start.start_runtime(sys.argv[1])}))
"""


def start(cache_dir):
    proc = subprocess.run([sys.executable, "-c", START, str(cache_dir)], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["squares"] == [0, 1, 4, 9, 16, 25] and out["total"] == 55
    assert out["again"] == "started"    # once a process's runtime is up, nothing more
    return out["how"]


def runtime_files(folder):
    return sorted(p for p in os.listdir(folder) if p.startswith("pypc-nrt-"))


def test_the_runtime_is_compiled_once_then_loaded(tmp_path):
    assert start(tmp_path) == "compiled"
    files = runtime_files(tmp_path)
    assert len(files) == 1 and files[0].endswith(".bin")
    data = (tmp_path / files[0]).read_bytes()
    assert data.startswith(numba_start.MAGIC)
    assert start(tmp_path) == "loaded"      # and code compiled after it links and runs
    assert runtime_files(tmp_path) == files


@pytest.mark.parametrize("damage", ["truncated", "another key", "a flipped byte"])
def test_a_damaged_runtime_file_is_compiled_again(tmp_path, damage):
    assert start(tmp_path) == "compiled"
    [name] = runtime_files(tmp_path)
    path = tmp_path / name
    data = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(data[:len(data) // 2])
    elif damage == "a flipped byte":            # in the machine code itself
        at = len(data) - 100
        path.write_bytes(data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1:])
    else:
        head = numba_start.MAGIC + b"0" * 64 + b"\n"
        path.write_bytes(head + data[data.index(b"\n", len(numba_start.MAGIC)) + 1:])
    assert start(tmp_path) == "compiled"
    assert path.read_bytes() == data        # written again, whole
    assert start(tmp_path) == "loaded"


def test_no_cache_folder_means_numbas_own_compile(tmp_path):
    missing = tmp_path / "no-such-folder"
    assert start(missing) == "compiled"
    assert not missing.exists()


def test_the_key_follows_the_runtime_code():
    from numba.core.registry import cpu_target
    from numba.core.runtime import nrtdynmod
    ctx = cpu_target.target_context
    module, _library = nrtdynmod.create_nrt_module(ctx)
    key = numba_start.runtime_key(ctx, module)
    assert key == numba_start.runtime_key(ctx, nrtdynmod.create_nrt_module(ctx)[0])
    module.add_named_metadata("pypc.test", ["changed"])
    assert numba_start.runtime_key(ctx, module) != key


NO_SCIPY = r"""
import json, sys
if sys.argv[1] == "numba first":
    import numba                        # which imports SciPy's package to check its version
from pypc_core.cpu import numba_start
with numba_start.without_scipy():
    from numba import njit
    @njit
    def one(x):
        return x + 1
    one(1)                              # numba sets up its CPU target (and NumPy support)
during = "numba.np.arraymath" in sys.modules
after = "scipy.linalg" in sys.modules
import scipy.linalg                     # and SciPy imports as usual afterwards
print(json.dumps({"arraymath": during, "linalg_after": after,
                  "linalg_now": sys.modules["scipy.linalg"] is not None}))
"""


@pytest.mark.skipif(importlib.util.find_spec("scipy") is None, reason="SciPy is not installed")
@pytest.mark.parametrize("order", ["numba first", "numba inside"])
def test_numbas_first_load_leaves_scipys_linear_algebra_out(order):
    proc = subprocess.run([sys.executable, "-c", NO_SCIPY, order], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out == {"arraymath": True, "linalg_after": False, "linalg_now": True}


LEAN = r"""
import json, sys
from pypc_core.cpu import Cpu
cpu = Cpu()                             # the process's first CPU starts numba lean
cpu.step()
from numba.core.runtime import nrt
print(json.dumps({"linalg": "scipy.linalg" in sys.modules, "runtime": bool(nrt.rtsys._init),
                  "instructions": cpu.instructions}))
"""


@pytest.mark.skipif(importlib.util.find_spec("scipy") is None, reason="SciPy is not installed")
@pytest.mark.parametrize("lean", ["1", "0"])
def test_a_process_first_cpu_starts_numba_lean_unless_told_not_to(lean):
    env = dict(os.environ, PYPC_LEAN_NUMBA=lean)
    proc = subprocess.run([sys.executable, "-c", LEAN], capture_output=True, text=True,
                          timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out == {"linalg": lean == "0", "runtime": True, "instructions": 1}
