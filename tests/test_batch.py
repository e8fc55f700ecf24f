"""``pypc batch`` and ``pypc_core.batch`` (issue 23): a 50-job batch of a
tiny built-in-DOS program (tests/guest/dos/square.asm) with distinct
arguments on real worker processes; the same lines from 1 and 2 workers;
a job that loops forever, a bad job and a job whose worker is killed each
give their reason while the rest complete; fan-out from a snapshot; bad
job files are one line, exit 2, nothing run, nothing written."""

import json
import os
import signal
import threading
import time

import pytest

from guest import dos as progs
from pypc_core import batch
from pypc_core.batch import without_wall
from pypc_core.cli import main

N_JOBS = 50


def expected_line(n):
    return f"{n} squared is {n * n}\n"


@pytest.fixture(scope="module")
def tools(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tools")
    progs.install(folder, "square")
    return folder


def write_jobs(path, jobs):
    with open(path, "w") as fh:
        for job in jobs:
            fh.write(json.dumps(job) + "\n")
    return path


def square_jobs(count=N_JOBS):
    # every 10th job also collects the file it wrote and its registers
    return [{"id": f"sq{n}", "program": "SQUARE.COM", "args": [n * 5],
             **({"collect": {"files": True, "registers": True}} if n % 10 == 0 else {})}
            for n in range(count)]


def tree(folder):
    return sorted((os.path.relpath(os.path.join(d, f), folder),
                   open(os.path.join(d, f), "rb").read())
                  for d, _dirs, files in os.walk(folder) for f in files)


def run_cli(capsys, *argv):
    code = main(["batch", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def strip_wall(lines):
    out = []
    for line in lines:
        result = json.loads(line)
        assert result.pop("wall_s") >= 0
        out.append(batch.dumps(result))
    return out


@pytest.fixture(scope="module")
def two_worker_run(tools, tmp_path_factory):
    """The 50 jobs through the CLI on 2 workers: (results lines, folder)."""
    work = tmp_path_factory.mktemp("batch2")
    jobs = write_jobs(work / "jobs.jsonl", square_jobs())
    # the jobs name the program relative to the jobs file's folder
    progs.install(work, "square")
    before = tree(work)
    code = main(["batch", str(jobs), "--out", str(work / "results.jsonl"), "--workers", "2",
                 "--quiet"])
    assert code == 0
    # jobs ran on copies of the folder: no RESULT.TXT in it
    assert [p for p in tree(work) if p[0] not in ("results.jsonl",)
            and not p[0].startswith("results.blobs")] == before
    return (work / "results.jsonl").read_text().splitlines(), work


def test_fifty_jobs_give_their_exit_codes_and_output_in_job_order(two_worker_run):
    lines, work = two_worker_run
    assert len(lines) == N_JOBS
    for n, line in enumerate(lines):
        r = json.loads(line)
        assert line == batch.dumps(r)           # sorted keys, compact
        assert r["index"] == n + 1 and r["id"] == f"sq{n}"
        assert r["reason"] == "exit"
        assert r["exit_code"] == n * 5
        assert r["console"] == expected_line(n * 5)
        assert r["emulated_s"] > 0 and r["cycles"] > 0
        if n % 10 == 0:
            (entry,) = r["files"]
            assert entry["path"] == "C:\\RESULT.TXT"
            blob = (work / entry["blob"]).read_bytes()
            assert blob == expected_line(n * 5).replace("\n", "\r\n").encode()
            assert set(r["registers"]) >= {"ax", "cs", "ip", "flags"}
        else:
            assert "files" not in r and "registers" not in r


def test_one_worker_gives_the_same_lines(two_worker_run, tools, tmp_path):
    lines, _work = two_worker_run
    jobs = write_jobs(tmp_path / "jobs.jsonl", square_jobs())
    progs.install(tmp_path, "square")
    # the same results file name, so blob paths are the same too
    out = tmp_path / "results.jsonl"
    assert main(["batch", str(jobs), "--out", str(out), "--workers", "1", "--quiet"]) == 0
    assert strip_wall(out.read_text().splitlines()) == strip_wall(lines)


def test_loop_forever_bad_job_and_killed_worker_give_their_reasons(tools):
    jobs = [{"id": f"ok{n}", "program": "SQUARE.COM", "args": [n]} for n in range(6)]
    jobs[2:2] = [{"id": "forever", "program": "SQUARE.COM", "args": ["loop"],
                  "timeout": 1e6, "wall_timeout": 2}]
    jobs[4:4] = [{"id": "bad", "program": "SQUARE.COM", "timeout": "soon"}]
    jobs[5:5] = [{"id": "victim", "program": "SQUARE.COM", "args": ["loop"],
                  "timeout": 1e6, "wall_timeout": 300}]
    killed = []
    with batch.Batch(workers=2) as b:
        def killer():
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                pid = b.running().get("victim")
                if pid is not None:
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
                    return
                time.sleep(0.05)
        thread = threading.Thread(target=killer, daemon=True)
        thread.start()
        results = {r["id"]: r for r in b.submit(jobs, base_dir=tools)}
        thread.join(5)
        # the killed workers' jobs left their folders: gone with them
        assert sorted(os.listdir(b.backend.root)) == sorted(
            os.path.basename(w.folder) for w in b.backend.workers)
    assert not os.path.exists(b.backend.root)
    assert killed
    assert len(results) == len(jobs)
    assert results["forever"]["reason"] == "wall_timeout"
    assert results["forever"]["wall_s"] >= 2
    assert results["victim"]["reason"] == "worker_crashed"
    assert results["bad"]["reason"] == "invalid"
    assert "field 'timeout'" in results["bad"]["error"]
    for n in range(6):
        assert results[f"ok{n}"]["reason"] == "exit"
        assert results[f"ok{n}"]["console"] == expected_line(n)


def test_emulated_timeout_and_until_text(tools):
    jobs = [{"id": "slow", "program": "SQUARE.COM", "args": ["loop"], "timeout": 0.5},
            {"id": "text", "timeout": 30, "until_text": "No bootable disk"},
            {"id": "shot", "program": "SQUARE.COM", "args": [3],
             "collect": {"screenshot": True, "memory": [["0x400", 4]], "serial": True}}]
    with batch.Batch(workers=1) as b:
        results = b.run_all(jobs, base_dir=tools)
    slow, text, shot = results
    assert (slow["reason"], slow["exit_code"]) == ("timeout", 124)
    assert 0.5 <= slow["emulated_s"] < 0.6
    # the built-in BIOS with no disk (no DOS): its screen, collected by default
    assert (text["reason"], text["exit_code"]) == ("until_text", 0)
    assert "No bootable disk" in text["screen"] and text["emulated_s"] < 30
    assert shot["screenshot"]["base64"]          # no blob folder: carried in the result
    import base64
    png = base64.b64decode(shot["screenshot"]["base64"])
    assert png.startswith(b"\x89PNG") and len(png) == shot["screenshot"]["bytes"]
    assert len(base64.b64decode(shot["memory"][0]["base64"])) == 4
    assert shot["serial"] == ""


@pytest.fixture(scope="module")
def hold_snapshot(tmp_path_factory):
    """HOLD.COM waiting for a key with DATA.TXT open, saved to a bundle."""
    from test_dos_snapshot import dos_machine, folder_with, wait_for_key
    work = tmp_path_factory.mktemp("fanout")
    a = folder_with(str(work / "a"), b"AAAAAAAA")
    m = dos_machine(a)
    wait_for_key(m)
    path = str(work / "hold.zip")
    m.save(path, disk_mode="embed", progress=None)
    m.close()
    return work, path


def test_fan_out_from_a_snapshot(hold_snapshot, capsys):
    work, snapshot = hold_snapshot
    before = tree(work)
    jobs = write_jobs(work / "jobs.jsonl",
                      [{"id": f"k{n}", "drive": {"C": "a"}, "type": key, "plugins": "cga",
                        "collect": {"files": True}}
                       for n, key in enumerate("xyz")]
                      + [{"id": "saver", "drive": {"C": "a"}, "type": "q", "plugins": "cga",
                          "save_snapshot": "after.zip"}])
    before = tree(work)
    out = work / "r.jsonl"
    code, _out, _err = run_cli(capsys, str(jobs), "--out", str(out), "--workers", "2",
                               "--from-snapshot", snapshot, "--quiet")
    assert code == 0
    results = [json.loads(line) for line in out.read_text().splitlines()]
    snap_cycles = None
    for r in results:
        assert r["reason"] == "exit" and r["exit_code"] == 0
        # every job starts where the snapshot was taken: the same cycle count
        assert r["cycles"] - r["run_cycles"] == (snap_cycles or r["cycles"] - r["run_cycles"])
        snap_cycles = r["cycles"] - r["run_cycles"]
        assert snap_cycles > 0
    for r in results[:3]:
        (entry,) = r["files"]
        assert (out.parent / entry["blob"]).read_bytes() == b"AAAAAAAA+"
    assert results[3]["snapshot"]["bytes"] == os.path.getsize(work / "after.zip")
    after = dict(tree(work))
    # the snapshot, its folder and the drive folder are as they were
    for name, data in before:
        assert after[name] == data
    assert not os.path.exists(snapshot + ".disks")


@pytest.mark.parametrize("line, where, field", [
    ('{"id": "a", "program": "SQUARE.COM", "timeout": -1}', "line 2", "timeout"),
    ('{"program": "SQUARE.COM", "flopy": "x.img"}', "line 2", "flopy"),
    ('{"program": "SQUARE.COM", "rpc_port": 2301}', "line 2", "rpc_port"),
    ('{"program": "SQUARE.COM", "web": true}', "line 2", "web"),
    ('{"program": "MISSING.COM"}', "line 2", "program"),
    ('{"floppy": "missing.img"}', "line 2", "floppy"),
    ('{"program": "SQUARE.COM", "collect": {"screen": 1}}', "line 2", "collect.screen"),
    ('{"program": "SQUARE.COM", "args": [1], "id": "sq0"}', "line 2", "id"),
    ('{"program": "SQUARE.COM", "wall_timeout": 0}', "line 2", "wall_timeout"),
    ('{"program": "SQUARE.COM", "plugins": "cga,nosuchcard"}', "line 2", None),
    ('not json', "line 2", None),
])
def test_a_bad_job_file_is_one_line_exit_2_nothing_run(tools, tmp_path, capsys, line, where,
                                                       field):
    progs.install(tmp_path, "square")
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text(json.dumps({"id": "sq0", "program": "SQUARE.COM",
                                "collect": {"files": True}}) + "\n" + line + "\n")
    before = sorted(os.listdir(tmp_path))
    code, out, err = run_cli(capsys, str(jobs), "--out", str(tmp_path / "r.jsonl"))
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("pypc: error: ")
    assert where in err
    if field is not None:
        assert f"field {field!r}" in err
    assert sorted(os.listdir(tmp_path)) == before   # no results, no blobs


def test_bad_batch_options_are_one_line(tools, tmp_path, capsys):
    jobs = write_jobs(tmp_path / "jobs.jsonl", [{"program": str(tools / "SQUARE.COM")}])
    (tmp_path / "taken.jsonl").write_text("keep me")
    for argv, text in (
            ([str(jobs), "--out", str(tmp_path / "taken.jsonl")], "already exists"),
            ([str(tmp_path / "none.jsonl"), "--out", str(tmp_path / "r.jsonl")], "no such file"),
            ([str(jobs), "--out", str(tmp_path / "r.jsonl"), "--workers", "0"], "1 or more"),
            ([str(jobs), "--out", str(tmp_path / "r.jsonl"), "--from-snapshot",
              str(tmp_path / "nope.zip")], "no such file")):
        try:
            code = main(["batch", *argv])
        except SystemExit as exc:           # argparse's own usage errors
            code = exc.code
        out, err = capsys.readouterr()
        assert code == 2 and out == ""
        assert err.count("\n") == 1 and err.startswith("pypc: error: ") and text in err
    assert (tmp_path / "taken.jsonl").read_text() == "keep me"
    assert not (tmp_path / "r.jsonl").exists()


def test_csv_format_and_summary(tools, tmp_path, capsys):
    jobs = write_jobs(tmp_path / "jobs.jsonl",
                      [{"id": f"j{n}", "program": str(tools / "SQUARE.COM"), "args": [arg]}
                       for n, arg in enumerate([2, 7, "x"])])
    out = tmp_path / "r.csv"
    code, _out, err = run_cli(capsys, str(jobs), "--out", str(out), "--format", "csv",
                              "--workers", "1")
    assert code == 0
    import csv
    with open(out, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["id"], r["reason"], r["exit_code"]) for r in rows] == [
        ("j0", "exit", "2"), ("j1", "exit", "7"), ("j2", "exit", "255")]
    assert rows[2]["console"] == "not a number\n"
    # plain progress lines (stderr is no terminal), then the summary table
    assert "pypc batch: 3/3 job" in err
    assert "3 jobs in" in err and "1 local worker" in err
    assert "stop reason" in err and "255" in err


def test_leaving_early_abandons_the_running_jobs(tools):
    with batch.Batch(workers=2) as b:
        jobs = [{"id": "forever", "program": "SQUARE.COM", "args": ["loop"], "timeout": 1e6},
                {"id": "quick", "program": "SQUARE.COM", "args": [4]}]
        for first in b.submit(jobs, base_dir=tools):
            break
        assert first["id"] == "quick"
        assert b.running() == {}                # the forever job's worker is gone
        (again,) = b.submit([{"id": "next", "program": "SQUARE.COM", "args": [9]}],
                            base_dir=tools)
        assert (again["id"], again["exit_code"]) == ("next", 9)


def test_a_terminal_gets_a_progress_bar(tools, tmp_path):
    import pty
    import subprocess
    import sys
    jobs = write_jobs(tmp_path / "jobs.jsonl",
                      [{"program": str(tools / "SQUARE.COM"), "args": [n]} for n in range(3)])
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "pypc_core.cli", "batch", str(jobs),
                             "--out", str(tmp_path / "r.jsonl"), "--workers", "1"],
                            stdin=slave, stdout=slave, stderr=slave, cwd=tmp_path)
    os.close(slave)
    out = b""
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:
            break
        if not data:
            break
        out += data
    os.close(master)
    assert proc.wait(timeout=120) == 0
    text = out.decode("utf-8", "replace")
    assert "\u2501" in text and "3/3" in text and "jobs/s" in text     # the rich bar
    assert "pypc batch: 1/3" not in text                                # not the plain lines
    assert "3 jobs in" in text and "stop reason" in text


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_ends_the_batch_keeping_the_results_so_far(tools, tmp_path, signum):
    import subprocess
    import sys
    square = str(tools / "SQUARE.COM")
    jobs = write_jobs(tmp_path / "jobs.jsonl", [
        {"id": "a", "program": square, "args": [1]},
        {"id": "b", "program": square, "args": ["loop"], "timeout": 1e6},
        {"id": "c", "program": square, "args": [3]}])
    out = tmp_path / "r.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "pypc_core.cli", "batch", str(jobs),
                             "--out", str(out), "--workers", "2", "--quiet"],
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (out.exists() and out.read_text()):
        time.sleep(0.1)
    time.sleep(0.5)                 # c has finished too (it follows a on the free worker)
    proc.send_signal(signum)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    (line,) = out.read_text().splitlines()      # a; c waits behind the unfinished b
    assert json.loads(line)["id"] == "a"
    assert err == f"pypc batch: interrupted after 1 of 3 jobs; {out} holds their results\n"


def test_record_then_replay_jobs(tmp_path):
    with batch.Batch(workers=1) as b:
        (rec,) = b.run_all([{"id": "rec", "timeout": 1, "type": "ab", "record": "keys.json",
                             "plugins": ["cga", "fdc"]}], base_dir=tmp_path)
        assert (rec["reason"], rec["exit_code"]) == ("timeout", 0)
        assert (tmp_path / "keys.json").exists()
        (rp,) = b.run_all([{"id": "rp", "replay": "keys.json", "plugins": "cga,fdc"}],
                          base_dir=tmp_path)
        assert (rp["reason"], rp["exit_code"]) == ("replay_identical", 0)
        assert rp["cycles"] == rec["cycles"]
        # a recording is a new file: the same name again is refused
        (again,) = b.run_all([{"id": "x", "timeout": 1, "record": "keys.json"}],
                             base_dir=tmp_path)
        assert again["reason"] == "invalid" and "already exists" in again["error"]


def test_disk_jobs_share_an_image_copy_on_write(tmp_path):
    import base64
    import hashlib
    from test_launcher import BOOT_MESSAGE, HELLO_BOOT, WRITE_BOOT, floppy
    writer = floppy(tmp_path / "write.img", WRITE_BOOT)
    hello = floppy(tmp_path / "hello.img", HELLO_BOOT)
    before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (writer, hello)}
    status = {"collect": {"memory": [["500h", 3]], "screen": False}, "timeout": 3}
    jobs = ([{"id": f"w{n}", "floppy": "write.img", **status} for n in range(4)]
            + [{"id": "ro", "floppy": "write.img", "readonly": True, **status},
               {"id": "hello", "floppy": "hello.img", "until_text": BOOT_MESSAGE}])
    with batch.Batch(workers=2) as b:
        results = {r["id"]: r for r in b.run_all(jobs, base_dir=tmp_path)}
    for n in range(4):      # each wrote its own copy-on-write floppy: AH 0, CF 0, done
        r = results[f"w{n}"]
        assert r["reason"] == "timeout" and r["exit_code"] == 0
        assert base64.b64decode(r["memory"][0]["base64"]) == b"\x00\x00\xaa"
    ah, cf, done = base64.b64decode(results["ro"]["memory"][0]["base64"])
    assert (ah, cf, done) == (0x03, 1, 0xAA)        # write-protected
    assert results["hello"]["reason"] == "until_text"
    assert BOOT_MESSAGE in results["hello"]["screen"]
    assert {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (writer, hello)} == before


def test_a_job_collects_a_recording_of_its_run(tools, tmp_path):
    # collect.video: the run at the card's frame rate in emulated time, the
    # same bytes from any worker; --video-out itself is refused with advice
    import base64
    import io
    import av
    job = {"id": "film", "program": "SQUARE.COM", "args": [7], "collect": {"video": "mkv"},
           "plugins": ["cga", "fdc"]}
    with batch.Batch(workers=1) as b:
        (first,) = b.run_all([job], base_dir=tools)
        (again,) = b.run_all([dict(job, id="film")], base_dir=tools)
        (refused,) = b.run_all([{"id": "v", "program": "SQUARE.COM", "video_out": "x.mp4"}],
                               base_dir=tools)
    assert first["reason"] == "exit" and first["console"] == expected_line(7)
    video = first["video"]
    assert [f["bytes"] for f in video["files"]] and video["audio"] is True
    assert abs(video["frames"] - first["emulated_s"] * video["frame_rate_hz"]) <= 1
    data = base64.b64decode(video["files"][0]["base64"])
    assert len(data) == video["files"][0]["bytes"]
    with av.open(io.BytesIO(data)) as container:
        decoded = sum(1 for _ in container.decode(video=0))
    assert decoded == video["frames"]
    assert without_wall(first) == without_wall(again)             # the same bytes again
    assert refused["reason"] == "invalid" and 'collect": {"video"' in refused["error"]
    assert not (tools / "x.mp4").exists()
