"""Hostile files from outside the guest (issue 19, points 4, 5 and 8):
FIFOs as a snapshot path or a referenced disk are refused at once (never a
stalled machine thread); --replay honours --timeout and refuses malformed
recordings with ``pypc: error:`` and exit 2; --host-dir checks sizes before
it reads a file; a refused --load-snapshot leaves no FILE.disks behind."""

import json
import os
import subprocess
import sys
import threading

import pytest

from pypc_core.snapshot import SnapshotError
from pypc_core.snapshot.replay import state_sha256

import snapshot_support as T

CLI = [sys.executable, "-m", "pypc_core.cli", "run", "--no-rpc", "--no-viewers", "--headless"]


def within(seconds, fn):
    """fn()'s result or exception, or a failure when it is still running
    after ``seconds`` (a stall: the thread is left blocked, a daemon)."""
    out = {}

    def body():
        try:
            out["value"] = fn()
        except BaseException as exc:          # noqa: BLE001 - handed to the test
            out["error"] = exc
    t = threading.Thread(target=body, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"still blocked after {seconds} s"
    if "error" in out:
        raise out["error"]
    return out.get("value")


# -- FIFOs --------------------------------------------------------------------------------
def test_a_fifo_as_the_snapshot_path_is_refused_at_once(tmp_path):
    fifo = tmp_path / "snap.zip"
    os.mkfifo(fifo)
    m = T.make_machine()
    try:
        before = state_sha256(m)
        with pytest.raises(SnapshotError, match="not a regular file"):
            within(20, lambda: m.load(str(fifo), progress=None))
        assert state_sha256(m) == before
        assert sorted(os.listdir(tmp_path)) == ["snap.zip"]
    finally:
        m.close()


@pytest.fixture
def referenced(tmp_path):
    """A bundle of a machine whose hard disk is referenced, not embedded,
    and the image it references."""
    img = tmp_path / "c.img"
    img.write_bytes(bytes(range(256)) * 2 * 2040)
    m = T.make_machine(hdd=str(img), cow=True)
    out = m.save(str(tmp_path / "ref.zip"), disk_mode="reference", progress=None)
    m.close()
    return {"bundle": out["path"], "image": str(img), "tmp": tmp_path}


def test_a_fifo_as_a_referenced_disk_is_refused_at_once(referenced):
    fifo = referenced["tmp"] / "disk.fifo"
    os.mkfifo(fifo)
    live_img = referenced["tmp"] / "live.img"
    live_img.write_bytes(bytes(512 * 2040))
    m = T.make_machine(hdd=str(live_img), cow=True)
    try:
        before = state_sha256(m)
        root = referenced["tmp"] / "disks"
        with pytest.raises(SnapshotError, match="not a regular file"):
            within(20, lambda: m.load(referenced["bundle"], disk_root=str(root),
                                      references={"0": str(fifo)}, progress=None))
        assert state_sha256(m) == before and not root.exists()
    finally:
        m.close()


def test_load_snapshot_with_a_fifo_reference_is_an_error_not_a_hang(referenced):
    os.unlink(referenced["image"])
    os.mkfifo(referenced["image"])               # the saved source path is now a FIFO
    done = subprocess.run(CLI + ["--plugins", "cga", "--timeout", "0.2",
                                 "--load-snapshot", referenced["bundle"]],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("pypc: error:") and "not a regular file" in done.stderr
    assert "Traceback" not in done.stderr
    assert not os.path.exists(referenced["bundle"] + ".disks")


def test_a_refused_load_snapshot_leaves_no_disk_directory(tmp_path):
    """Without drive options the bundle's disks are written before the
    machine exists; when the machine then refuses the bundle they go."""
    floppy = tmp_path / "a.img"
    floppy.write_bytes(bytes(1474560))
    m = T.make_machine(("cga", "fdc"), floppy_a=str(floppy))
    out = m.save(str(tmp_path / "a.zip"), disk_mode="embed", progress=None)
    m.close()
    done = subprocess.run(CLI + ["--plugins", "cga,fdc,uart", "--timeout", "0.2",
                                 "--load-snapshot", out["path"]],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("pypc: error:") and "configuration" in done.stderr
    assert sorted(os.listdir(tmp_path)) == ["a.img", "a.zip"]


# -- --replay -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rec")
    path = folder / "keys.json"
    done = subprocess.run(CLI + ["--plugins", "cga", "--turbo", "--timeout", "0.3",
                                 "--type", "ab", "--record", str(path)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(path.read_text())


def replay(tmp_path, data, *extra):
    path = tmp_path / "bad.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return subprocess.run(CLI + ["--plugins", "cga", "--turbo", *extra, "--replay", str(path)],
                          capture_output=True, text=True, timeout=300)


def test_replay_honours_timeout(tmp_path, recording):
    far = json.loads(json.dumps(recording))
    far["end"]["clock"] = 10 ** 15
    done = replay(tmp_path, far, "--timeout", "0.5")
    assert done.returncode == 1, done.stderr
    assert "replay stopped by --timeout 0.5" in done.stderr
    assert f"before the recording's end at cycle {10 ** 15}" in done.stderr


@pytest.mark.parametrize("what, change", [
    ("configuration", lambda r: r.update(configuration="x")),
    ("configuration", lambda r: r.update(configuration=[1, 2])),
    ("start", lambda r: r.update(start=7)),
    ("start.clock", lambda r: r["start"].update(clock="0")),
    ("end", lambda r: r.pop("end")),
    ("events", lambda r: r.update(events={"a": 1})),
    ("each event", lambda r: r.update(events=[3])),
])
def test_malformed_recordings_are_errors(tmp_path, recording, what, change):
    bad = json.loads(json.dumps(recording))
    change(bad)
    done = replay(tmp_path, bad)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("pypc: error: --replay") and what in done.stderr
    assert "Traceback" not in done.stderr


def test_a_deeply_nested_recording_is_an_error(tmp_path):
    done = replay(tmp_path, "[" * 100_000 + "]" * 100_000)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("pypc: error: --replay") and "nested" in done.stderr
    deep = '{"format": "pypc-input-recording", "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    done = replay(tmp_path, deep)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr


# -- --host-dir sizes ----------------------------------------------------------------------------
HUGE = 768 << 20

RSS_PROBE = """
import resource, sys
from pypc_core.storage.hostdir import HostDirDisk, HostDirError
try:
    HostDirDisk(sys.argv[1])
    print("built")
except HostDirError as exc:
    print("refused:", exc)
def peak_kib():
    # VmHWM: this process image's own peak (ru_maxrss would carry the
    # parent's over fork and exec on Linux)
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(peak_kib())
"""


def test_host_dir_refuses_a_huge_sparse_file_without_reading_it(tmp_path):
    folder = tmp_path / "big"
    folder.mkdir()
    (folder / "SMALL.TXT").write_bytes(b"small")
    with open(folder / "HUGE.BIN", "wb") as fh:
        fh.truncate(HUGE)                        # sparse: no disk space used
    done = subprocess.run([sys.executable, "-c", RSS_PROBE, str(folder)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (done.stdout, done.stderr)
    lines = done.stdout.strip().splitlines()
    assert lines and lines[0].startswith("refused:") and "HUGE.BIN" in lines[0], \
        (done.stdout, done.stderr)
    assert f"is {HUGE} bytes" in lines[0]
    peak_kib = int(lines[-1])
    assert peak_kib < 300 * 1024, f"peak RSS {peak_kib} KiB: the file was read"


def test_host_dir_on_the_command_line_is_an_error(tmp_path):
    folder = tmp_path / "big"
    folder.mkdir()
    with open(folder / "HUGE.BIN", "wb") as fh:
        fh.truncate(HUGE)
    done = subprocess.run(CLI + ["--plugins", "cga", "--timeout", "0.1", "--host-dir",
                                 str(folder)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("pypc: error:") and "does not fit" in done.stderr


def test_a_fifo_as_the_rpc_import_path_stalls_no_client(tmp_path):
    """Over the real server: the import of a FIFO is refused at once and
    another client is answered right after."""
    from rpc_client import RpcFixture
    fifo = tmp_path / "snap.zip"
    os.mkfifo(fifo)
    fx = RpcFixture()
    try:
        c, other = fx.client(), fx.client()
        c.call("execution.pause")
        rev = c.call("session.status")["state_revision"]
        err = within(30, lambda: c.error("machine.snapshot.import", {
            "path": str(fifo), "expected_sha256": "0" * 64, "disk_root": str(tmp_path / "d"),
            "expected_state_revision": rev}))
        assert "not a regular file" in err["message"], err
        assert within(30, lambda: other.call("session.status"))["state_revision"] == rev
    finally:
        fx.close()


def test_fifos_as_replay_and_load_snapshot_files_are_errors(tmp_path):
    fifo = tmp_path / "x.json"
    os.mkfifo(fifo)
    for option in ("--replay", "--load-snapshot"):
        done = subprocess.run(CLI + ["--plugins", "cga", option, str(fifo)],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith(f"pypc: error: {option}") and \
            "not a regular file" in done.stderr, done.stderr
