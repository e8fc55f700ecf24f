"""Bare batch jobs (``"bare": true``, issue 23): ``pypc run --bare`` as
data -- raw binaries placed with ``load``, ``entry``, ``until_halt`` --
collecting registers, memory, the stop and the times.  A few bare jobs in
one batch give what ``pypc run --bare --dump-registers`` gives, the same
lines on 1 and 2 workers and on Ray; fields a bare job cannot take (and
bare options without ``bare``) are one line naming the job and the field,
exit 2, nothing run."""

import base64
import json
import os

import pytest

from pypc_core import batch
from pypc_core.batch import jobs as batch_jobs
from pypc_core.batch import without_wall
from pypc_core.cli import main

#: mov ax,1234h; mov bx,5678h; mov [0500h],ax; cli; hlt
HALT = bytes.fromhex("B83412 BB7856 A30005 FA F4")
#: jmp $ (forever)
SPIN = bytes.fromhex("EBFE")
#: mov ax,B800h; mov es,ax; mov word [es:0],1F41h ('A'); cli; hlt -- on a CGA card
CGA_A = bytes.fromhex("B800B8 8EC0 26C7060000411F FA F4")


@pytest.fixture(scope="module")
def bins(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bare")
    for name, code in (("halt.bin", HALT), ("spin.bin", SPIN), ("cga.bin", CGA_A)):
        (folder / name).write_bytes(code)
    return folder


def bare_jobs():
    return [
        {"id": "halt", "bare": True, "load": "halt.bin@0:7C00", "entry": "0:7C00",
         "until_halt": True, "collect": {"registers": True, "memory": [["0x500", 2]]}},
        {"id": "spin", "bare": True, "load": ["spin.bin@0:7C00"], "entry": "0:7C00",
         "until_halt": True, "timeout": 0.01, "collect": {"registers": True}},
        {"id": "spin-ok", "bare": True, "load": "spin.bin@0:7C00", "entry": "0:7C00",
         "timeout": 0.01},
        {"id": "cga", "bare": True, "plugins": "cga", "load": "cga.bin@0:7C00",
         "entry": "0:7C00", "until_halt": True, "collect": {"screen": True,
                                                            "memory": [["B8000h", 2]]}},
    ]


@pytest.fixture(scope="module")
def two_workers(bins):
    with batch.Batch(workers=2) as b:
        return [without_wall(r) for r in b.run_all(bare_jobs(), base_dir=str(bins))]


def test_bare_jobs_halt_time_out_and_collect(two_workers):
    halt, spin, spin_ok, cga = two_workers
    assert (halt["reason"], halt["exit_code"]) == ("halt", 0)
    assert halt["registers"]["ax"] == 0x1234 and halt["registers"]["bx"] == 0x5678
    assert halt["registers"]["ip"] == 0x7C00 + len(HALT)
    assert halt["instructions"] == 5 and halt["cycles"] == halt["run_cycles"] > 0
    assert base64.b64decode(halt["memory"][0]["base64"]) == b"\x34\x12"
    assert "screen" not in halt and "console" not in halt    # no firmware, no DOS
    # until_halt: anything but a halt is exit 1; without it the time limit is 0
    assert (spin["reason"], spin["exit_code"]) == ("timeout", 1)
    assert spin["emulated_s"] == pytest.approx(0.01, abs=1e-5)
    assert spin["registers"]["ip"] == 0x7C00                # at its jmp $
    assert (spin_ok["reason"], spin_ok["exit_code"]) == ("timeout", 0)
    assert (cga["reason"], cga["exit_code"]) == ("halt", 0)
    assert base64.b64decode(cga["memory"][0]["base64"]) == b"A\x1f"
    assert cga["screen"].splitlines()[0] == "A"


def test_a_bare_job_is_what_pypc_run_bare_gives(two_workers, bins, capsys):
    halt = two_workers[0]
    code = main(["run", "--headless", "--bare", "--turbo", "--load",
                 f"{bins / 'halt.bin'}@0:7C00", "--entry", "0:7C00", "--until-halt",
                 "--dump-registers"])
    dump = json.loads(capsys.readouterr().out)
    assert code == halt["exit_code"] == 0
    assert dump.pop("stop") == halt["reason"]
    assert dump.pop("cycles") == halt["cycles"]
    assert dump.pop("instructions") == halt["instructions"]
    assert dump == halt["registers"]


def test_one_worker_and_the_cli_give_the_same_lines(two_workers, bins, capsys):
    with batch.Batch(workers=1) as b:
        assert [without_wall(r) for r in b.run_all(bare_jobs(), base_dir=str(bins))] == \
            two_workers
    jobs = bins / "jobs.jsonl"
    jobs.write_text("".join(json.dumps(j) + "\n" for j in bare_jobs()))
    out = bins / "results.jsonl"
    assert main(["batch", str(jobs), "--out", str(out), "--workers", "1", "--quiet"]) == 0
    capsys.readouterr()
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [without_wall(r) for r in lines] == two_workers


def test_ray_gives_the_same_results(two_workers, bins):
    ray = pytest.importorskip("ray", reason="Ray is the optional extra pypc[ray]")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    try:
        with batch.Batch(workers=2, ray=True) as b:
            got = [without_wall(r) for r in b.run_all(bare_jobs(), base_dir=str(bins))]
    finally:
        ray.shutdown()
    assert got == two_workers


@pytest.mark.parametrize("job,field,text", [
    ({"bare": True, "floppy": "halt.bin"}, "floppy", "bare job"),
    ({"bare": True, "program": "HALT.COM"}, "program", "bare job"),
    ({"bare": True, "type": "dir\\r"}, "type", "bare job"),
    ({"bare": True, "until_text": "A>"}, "until_text", "bare job"),
    ({"bare": True, "load_snapshot": "x.zip"}, "load_snapshot", "bare job"),
    ({"bare": True, "dump_registers": True}, "dump_registers", "collect"),
    ({"bare": True, "dump_memory": "0:0+10=x.bin"}, "dump_memory", "collect"),
    ({"bare": True, "collect": {"console": True}}, "collect.console", "no DOS"),
    ({"load": "halt.bin@0:7C00"}, "load", "needs --bare"),
    ({"until_halt": True, "program": "X.COM"}, "until_halt", "needs --bare"),
    ({"bare": True, "entry": "7C00"}, "entry", "SEG:OFF"),
    ({"bare": True, "load": "halt.bin"}, "load", "FILE@SEG:OFF"),
    ({"bare": True, "load": "missing.bin@0:0"}, "load", "missing.bin"),
    ({"bare": True, "load": ["halt.bin@0:7C00", "spin.bin@0:7C02"]}, "load", "overlaps"),
    ({"bare": True, "load": "halt.bin@FFFF:FFFE"}, "load", "past the end"),
    ({"bare": "yes"}, "bare", "boolean"),
    ({"bare": True, "until_halt": 1}, "until_halt", "boolean"),
])
def test_bad_bare_jobs_are_one_line_naming_the_field(bins, tmp_path, capsys, job, field, text):
    for name in ("halt.bin", "spin.bin"):
        (tmp_path / name).write_bytes((bins / name).read_bytes())
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text(json.dumps(bare_jobs()[0]) + "\n" + json.dumps({"id": "bad", **job}) + "\n")
    before = sorted(os.listdir(tmp_path))
    code = main(["batch", str(jobs), "--out", str(tmp_path / "r.jsonl"), "--quiet"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("pypc: error: ")
    assert 'line 2 (id "bad")' in err and f"field {field!r}" in err and text in err
    assert sorted(os.listdir(tmp_path)) == before      # nothing run, nothing written


def test_a_bare_job_does_not_start_from_the_batch_snapshot(bins):
    with pytest.raises(batch_jobs.JobError, match="field 'bare'.*--from-snapshot"):
        batch_jobs.check_job(bare_jobs()[0], 1, str(bins), from_snapshot=str(bins / "s.zip"))
