"""`python -m pypc_core.bench ab`: bad input is one line and exit 2, before
anything is unpacked or installed (the comparison itself is a benchmark,
run by hand on a quiet host)."""

import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def bench(*args):
    return subprocess.run([sys.executable, "-m", "pypc_core.bench", "ab", *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_an_unknown_revision_is_one_line_and_exit_2():
    before = set(os.listdir(tempfile.gettempdir()))
    out = bench("no-such-revision-here")
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pypc: error: git rev-parse"), lines
    assert "no-such-revision-here" in lines[0]
    left = {n for n in set(os.listdir(tempfile.gettempdir())) - before
            if n.startswith("pypc-bench-ab-")}
    assert not left                      # no unpacked tree or venv left behind


def test_bad_options_are_refused():
    assert bench("HEAD", "--rounds", "0").returncode == 2
    out = bench("HEAD", "--floppy", "/no/such/image.img")
    assert out.returncode == 2 and "no such file" in out.stderr
