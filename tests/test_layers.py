"""The layering written as import-linter contracts ([tool.importlinter] in
pyproject.toml): the layers below the machine, method groups independent of
each other, plugins and method groups on the public API only.  A change that
breaks one fails here with import-linter's own report."""

import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_import_contracts_hold():
    exe = shutil.which("lint-imports") or os.path.join(os.path.dirname(sys.executable),
                                                       "lint-imports")
    if not os.path.exists(exe):
        pytest.fail("lint-imports is not installed: pip install -e '.[test]'")
    proc = subprocess.run([exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout
