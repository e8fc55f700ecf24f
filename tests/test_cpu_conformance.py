"""The core against the real-silicon vectors in ../shared/cpu-tests/8086, and
the conformance runner itself (CLI, filters, flag masks, bad input)."""

import gzip
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pypc_core.cpu import conformance

REPO = Path(__file__).resolve().parents[1]
VECTORS = (REPO / ".." / "shared" / "cpu-tests" / "8086").resolve()
_RUN_DIRECTORY = conformance.run_directory
SUMMARY = re.compile(r"^(\d+) passed, (\d+) failed$")

needs_vectors = pytest.mark.skipif(
    not VECTORS.is_dir(),
    reason=f"conformance vectors not found at {VECTORS} (expected ../shared/cpu-tests/8086 "
           "beside the repository)")


def count_vectors(directory, names=None):
    total = 0
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".jsonl.gz") or (names is not None and name not in names):
            continue
        with gzip.open(os.path.join(directory, name), "rt") as fh:
            total += sum(1 for line in fh if line.strip())
    return total


def run_in_process(directory, **kw):
    out = io.StringIO()
    passed, failed = conformance.run_directory(str(directory), out=out, **kw)
    return passed, failed, out.getvalue().splitlines()


def run_main(monkeypatch, *argv):
    """conformance.main(argv) in-process; returns (exit code, stdout text).
    (run_directory's ``out`` default is bound at import time, so the output
    is redirected explicitly rather than through capsys.)"""
    buf = io.StringIO()
    monkeypatch.setattr(conformance, "run_directory",
                        lambda *a, **k: _RUN_DIRECTORY(*a, out=buf, **k))
    rc = conformance.main([str(a) for a in argv])
    return rc, buf.getvalue()


def cli(*args, env=None, cwd=REPO):
    return subprocess.run([sys.executable, "-m", "pypc_core.cpu.conformance", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


# ---------------------------------------------------------------------------
# the real vectors
# ---------------------------------------------------------------------------

@needs_vectors
def test_all_vectors_pass_with_flag_masks():
    total = count_vectors(VECTORS)
    assert total > 80_000
    passed, failed, lines = run_in_process(VECTORS)
    failures = [line for line in lines if "first failure" in line or " error: " in line]
    assert failed == 0, "\n".join(failures[:20])
    assert passed == total
    files = sorted(f[:-len(".jsonl.gz")] for f in os.listdir(VECTORS) if f.endswith(".jsonl.gz"))
    assert len(files) >= 300
    per_file = [line.split(":")[0] for line in lines[:-1] if not line.startswith(" ")]
    assert per_file == files                       # one line per file, in order
    assert lines[-1] == f"{total} passed, 0 failed"


@needs_vectors
def test_all_vectors_pass_without_flag_masks():
    # the core matches the officially undefined flags of the silicon too
    passed, failed, lines = run_in_process(VECTORS, flag_mask=False)
    failures = [line for line in lines if "first failure" in line]
    assert failed == 0, "\n".join(failures[:20])
    assert passed > 80_000


@needs_vectors
@pytest.mark.parametrize("opcode", ["A4", "A6", "AA", "AB", "AD", "F6", "80", "FF", "8F"])
def test_recorded_runs_have_no_stray_writes(opcode):
    passed, failed, lines = run_in_process(VECTORS, opcode=opcode, record=True)
    assert failed == 0, "\n".join(line for line in lines if "first failure" in line)
    assert not any("stray" in line for line in lines)
    names = [f for f in os.listdir(VECTORS)
             if f.endswith(".jsonl.gz") and f.split(".")[0].upper() == opcode]
    assert passed == count_vectors(VECTORS, set(names)) > 0


# ---------------------------------------------------------------------------
# the runner on hand-made vectors (no shared directory needed)
# ---------------------------------------------------------------------------

REGS = ("ax", "bx", "cx", "dx", "cs", "ss", "ds", "es", "sp", "bp", "si", "di", "ip", "flags")


def vector(name, code, final_regs, regs=None, extra_final_ram=(), omit_final_ram=()):
    """One test line for ``code`` at 1000:0100 with DS = 3000h."""
    init = {r: 0 for r in REGS}
    init.update(cs=0x1000, ip=0x100, ss=0x2000, sp=0x100, ds=0x3000, es=0x3000, flags=0xF002)
    init.update(regs or {})
    ram = [[0x10100 + i, b] for i, b in enumerate(code)]
    final_ram = [r for r in ram if r[0] not in omit_final_ram] + list(extra_final_ram)
    return {"name": name, "bytes": list(code),
            "initial": {"regs": init, "ram": ram},
            "final": {"regs": final_regs, "ram": final_ram},
            "hash": f"hash-{name}", "idx": 0}


def write_vectors(path, tests, raw_lines=()):
    with gzip.open(path, "wt") as fh:
        for t in tests:
            fh.write(json.dumps(t) + "\n")
        for line in raw_lines:
            fh.write(line + "\n")


NOP = vector("nop", [0x90], {"ip": 0x101})
NOP_BAD_FLAGS = vector("nop undefined-of", [0x90], {"ip": 0x101, "flags": 0xF802})
NOP_WRONG_IP = vector("nop wrong ip", [0x90], {"ip": 0x102})
# mov [bx], al  with BX = 10h: writes 30010h, which the vector does not list
MOV_UNLISTED = vector("mov [bx], al", [0x88, 0x07], {"ip": 0x102},
                      regs={"bx": 0x10, "ax": 0x5A})


def test_runner_cli_on_the_real_vectors_last_line_and_exit_code():
    if not VECTORS.is_dir():
        pytest.skip(f"conformance vectors not found at {VECTORS}")
    proc = cli(VECTORS, "--opcode", "00")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert lines[0].startswith("00: ")
    m = SUMMARY.match(lines[-1])
    assert m and int(m.group(1)) == count_vectors(VECTORS, {"00.jsonl.gz"}) and m.group(2) == "0"
    assert len(lines) == 2


def test_runner_cli_missing_directory(tmp_path):
    missing = tmp_path / "no-such-dir"
    proc = cli(missing)
    assert proc.returncode == 2
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and str(missing) in err[0]
    assert "Traceback" not in proc.stderr


def test_runner_cli_bad_files_are_named_and_do_not_crash_it(tmp_path):
    write_vectors(tmp_path / "90.jsonl.gz", [NOP, NOP])
    write_vectors(tmp_path / "91.jsonl.gz", [NOP], raw_lines=['{"name": "broken', ])
    write_vectors(tmp_path / "92.jsonl.gz", [NOP], raw_lines=['{"name": "no initial"}'])
    (tmp_path / "93.jsonl.gz").write_text("this is not gzip\n")
    write_vectors(tmp_path / "94.jsonl.gz", [NOP_WRONG_IP, NOP])
    crash = vector("crasher", [0x90], {"ip": 0x101}, regs={"ax": "not a number"})
    write_vectors(tmp_path / "95.jsonl.gz", [crash, NOP])
    proc = cli(tmp_path)
    out = proc.stdout
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr + out
    lines = out.strip().splitlines()
    assert lines[-1] == "6 passed, 5 failed"
    text = "\n".join(lines)
    assert "90: 2 passed, 0 failed" in text
    assert re.search(r"91\.jsonl\.gz:2\b.*malformed", text)         # file and line named
    assert re.search(r"92\.jsonl\.gz:2\b.*malformed", text)
    assert re.search(r"93\.jsonl\.gz.*cannot read", text)
    assert "94: 1 passed, 1 failed" in text
    assert re.search(r"first failure: hash-nop wrong ip 'nop wrong ip': ip want 0102 got 0101", text)
    assert "95: 1 passed, 1 failed" in text
    assert re.search(r"hash-crasher 'crasher': crashed: ", text)


def test_runner_opcode_filter(tmp_path, monkeypatch, capsys):
    for stem in ("F6.0", "F6.7", "F7.7", "F6"):
        write_vectors(tmp_path / f"{stem}.jsonl.gz", [NOP])
    rc, out = run_main(monkeypatch, tmp_path, "--opcode", "F6")
    assert rc == 0
    lines = out.strip().splitlines()
    assert sorted(line.split(":")[0] for line in lines[:-1]) == ["F6", "F6.0", "F6.7"]
    assert lines[-1] == "3 passed, 0 failed"
    rc, out = run_main(monkeypatch, tmp_path, "--opcode", "f6.7")
    assert rc == 0
    assert out.strip().splitlines() == ["F6.7: 1 passed, 0 failed", "1 passed, 0 failed"]
    capsys.readouterr()
    rc, out = run_main(monkeypatch, tmp_path, "--opcode", "A5")
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "A5" in err[0]


def test_runner_flag_masks_from_metadata(tmp_path, monkeypatch):
    write_vectors(tmp_path / "90.jsonl.gz", [NOP_BAD_FLAGS])
    (tmp_path / "metadata.json").write_text(json.dumps(
        {"opcodes": {"90": {"status": "normal", "flags": "o.......", "flags-mask": 0xF7FF}}}))
    rc, out = run_main(monkeypatch, tmp_path)
    assert rc == 0 and out.strip().splitlines()[-1] == "1 passed, 0 failed"
    rc, out = run_main(monkeypatch, tmp_path, "--no-flag-mask")
    assert rc == 1
    assert "flags want F802 got F002" in out
    assert out.strip().splitlines()[-1] == "0 passed, 1 failed"


def test_runner_group_flag_masks(tmp_path, monkeypatch):
    write_vectors(tmp_path / "90.3.jsonl.gz", [NOP_BAD_FLAGS])
    meta = {"opcodes": {"90": {"reg": {"3": {"flags-mask": 0xF7FF}}}}}
    (tmp_path / "metadata.json").write_text(json.dumps(meta))
    assert run_main(monkeypatch, tmp_path)[0] == 0
    assert run_main(monkeypatch, tmp_path, "--no-flag-mask")[0] == 1


def test_runner_record_reports_stray_writes(tmp_path, monkeypatch):
    write_vectors(tmp_path / "88.jsonl.gz", [MOV_UNLISTED])
    rc, out = run_main(monkeypatch, tmp_path)
    assert rc == 0, out                            # registers and listed RAM agree
    rc, out = run_main(monkeypatch, tmp_path, "--record")
    assert rc == 1
    assert "stray write to [30010]" in out


def test_runner_cleans_memory_between_tests(tmp_path, monkeypatch):
    # the first test stores 77h at 30010h; the second loads that byte and
    # expects the runner to have cleared it (its initial RAM does not list it)
    first = vector("store", [0xA2, 0x10, 0x00], {"ip": 0x103}, regs={"ax": 0x77},   # mov [0010h], al
                   extra_final_ram=[[0x30010, 0x77]])
    second = vector("load", [0xA0, 0x10, 0x00], {"ip": 0x103}, regs={"ax": 0x1100})  # mov al, [0010h]
    write_vectors(tmp_path / "A2.jsonl.gz", [first, second])
    rc, out = run_main(monkeypatch, tmp_path)
    assert rc == 0, out
    assert "A2: 2 passed, 0 failed" in out
