"""A cold numba cache compiles the core's opcode families in two processes
(``pypc_core.cpu.precompile``), and ``run`` then finds every one of them
compiled for the signature it calls it with: loaded from the cache the
helper wrote, or compiled once here, never compiled a second time."""

import json
import os
import subprocess
import sys

import pytest

from pypc_core.cpu import precompile

PROBE = r"""
import json
from pypc_core.cpu import Cpu, core, precompile
cold = precompile.cache_is_cold()
c = Cpu()
c.mem[0] = 0x90                # NOP at 0000:0000, where a new Cpu starts
c.step()
def counts(name):
    f = getattr(core, name)
    return [sum(f.stats.cache_hits.values()), sum(f.stats.cache_misses.values())]
print(json.dumps({"cold": cold, "cold_after": precompile.cache_is_cold(),
                  "families": {n: counts(n) for n in precompile.HELPER_SHARE + precompile.OWN_SHARE},
                  "run": counts("run"), "ip": int(c.regs[12])}))
"""


def probe(cache):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYPC_LEAN_NUMBA="1")
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                         text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.splitlines()[-1])


def test_a_cold_cache_compiles_the_families_on_two_cores_and_run_reuses_them(tmp_path):
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one core: run compiles its families itself")
    first = probe(tmp_path)
    assert first["cold"] and not first["cold_after"]
    assert first["ip"] == 1                        # the NOP ran
    for name in precompile.HELPER_SHARE:           # the helper's compile, never one here
        assert first["families"][name][1] == 0, name
    assert first["families"]["op_misc_common"] == [1, 0]   # run loaded it from the cache
    for name in precompile.OWN_SHARE:              # compiled here once, for run's signature
        assert first["families"][name] == [0, 1], name
    assert first["run"] == [0, 1]
    second = probe(tmp_path)                       # warm: no helper, everything loaded
    assert not second["cold"]
    assert second["run"] == [1, 0]
    assert all(fam == [0, 0] for fam in second["families"].values())
