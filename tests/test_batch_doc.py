"""docs/batch.md runs as written: the sweep example (its shell block with
the installed ``pypc``, then its Python block), the Python API block on
the folder it made, and -- with a FreeDOS floppy in PYPC_FREEDOS_IMAGE --
the FreeDOS fan-out example."""

import hashlib
import os
import re
import shutil
import subprocess
import sys

import pytest

from guest import dos as progs

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                   "docs", "batch.md")


def section(title):
    text = open(DOC, encoding="utf-8").read()
    start = text.index(f"\n## {title}")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def blocks(text, lang):
    return re.findall(rf"```{lang}\n(.*?)```", text, re.S)


def shell(script, cwd):
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep
               + os.environ.get("PATH", ""))
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done


def python(code, cwd, capsys):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        exec(compile(code, DOC, "exec"), {"__name__": "__doc__"})
    finally:
        os.chdir(old)
    return capsys.readouterr().out


def test_the_sweep_example_and_the_python_api(tmp_path, capsys):
    # "from the repository root": the program where the example copies it from
    (tmp_path / "tests" / "guest" / "dos").mkdir(parents=True)
    shutil.copy(progs.path("square"), tmp_path / "tests" / "guest" / "dos" / "square.com")
    example = section("Example: one program over 100 argument sets")
    (sh,) = blocks(example, "sh")
    done = shell(sh, tmp_path)
    assert "100 jobs in" in done.stderr and "2 local workers" in done.stderr
    (py,) = blocks(example, "python")
    assert python(py, tmp_path, capsys) == "12 squared is 144\n25 squared is 625\n"   # text mode: CR LF read as a newline
    with open(tmp_path / "sweep" / "SQUARE.COM", "rb") as fh:
        assert fh.read() == progs.program_bytes("square")
    assert sorted(os.listdir(tmp_path / "sweep")) == [
        "SQUARE.COM", "jobs.jsonl", "results.blobs", "results.jsonl"]
    assert sorted(os.listdir(tmp_path / "sweep" / "results.blobs")) == [
        "job-1", "job-26", "job-51", "job-76"]
    (api,) = blocks(section("Python API"), "python")
    python(api, tmp_path, capsys)


def test_the_freedos_fan_out_example(tmp_path):
    image = os.environ.get("PYPC_FREEDOS_IMAGE")
    if not image:
        pytest.skip("PYPC_FREEDOS_IMAGE (a FreeDOS 360K floppy image) is not set")
    shutil.copy(image, tmp_path / "fd360.img")
    sha = hashlib.sha256((tmp_path / "fd360.img").read_bytes()).hexdigest()
    (sh,) = blocks(section("Example: a FreeDOS fan-out"), "sh")
    done = shell(sh, tmp_path)
    assert "20 jobs in" in done.stderr
    import json
    results = [json.loads(line) for line in open(tmp_path / "fanout-results.jsonl")]
    assert [(r["id"], r["reason"], r["exit_code"]) for r in results] == [
        (n, "until_text", 0) for n in range(20)]
    assert all(f"job{r['id']}>" in r["screen"] for r in results)
    starts = {r["cycles"] - r["run_cycles"] for r in results}
    assert len(starts) == 1 and starts.pop() > 0       # all from the snapshot's cycle
    assert hashlib.sha256((tmp_path / "fd360.img").read_bytes()).hexdigest() == sha
