"""The core still runs as plain Python with NUMBA_DISABLE_JIT=1 (for
debugging): the conformance runner passes a couple of opcode files."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
VECTORS = (REPO / ".." / "shared" / "cpu-tests" / "8086").resolve()

SCRIPT = r"""
import sys
from pypc_core.cpu import core, conformance, Cpu, state as S
from pypc_core import bench
assert not hasattr(core.run, "py_func"), "numba JIT is still on"
cpu = Cpu()
bench.load_standard_loop(cpu, 1, 300)
assert cpu.run(1 << 40) == S.EXIT_HALT
assert cpu.instructions == bench.expected_instructions(1, 300) + 1, cpu.instructions
print("loop ok", cpu.cycles)
rc = 0
for op in sys.argv[1:]:
    rc |= conformance.main([VECTORS, "--opcode", op])
sys.exit(rc)
""".replace("VECTORS", repr(str(VECTORS)))


@pytest.mark.skipif(not VECTORS.is_dir(), reason=f"conformance vectors not found at {VECTORS}")
def test_core_runs_with_numba_disabled():
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    proc = subprocess.run([sys.executable, "-c", SCRIPT, "00", "F6", "A4"], capture_output=True,
                          text=True, cwd=REPO, env=env, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    assert lines[0] == f"loop ok {2 + 1 * (14 + 123 * 300 - 8 * 1)}"
    summaries = [line for line in lines if re.match(r"^\d+ passed, \d+ failed$", line)]
    assert summaries == ["250 passed, 0 failed", "2000 passed, 0 failed", "250 passed, 0 failed"]
