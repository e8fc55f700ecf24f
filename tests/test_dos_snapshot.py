"""Snapshots of the built-in DOS carry drive + DOS path, never host paths
(issue 19, point 2).  HOLD.COM (tests/guest/dos/hold.asm) keeps DATA.TXT
open across a key press; the snapshot is taken while it waits.  Restored
into a machine whose C: is another folder, the open file is found again
there (by its DOS path) or the bundle is refused with nothing changed.  A
crafted bundle (manifest re-hashed) naming a path outside, and a DOS
section offered to a machine without the built-in DOS, are refused."""

import hashlib
import json
import os
import zipfile

import pytest

from pypc_core.snapshot import SnapshotError
from pypc_core.snapshot.replay import state_sha256

from guest import dos as progs
from test_dos_confinement import make_canary, tree_image


def dos_machine(folder):
    from pypc_core.dos import DosConfig
    from pypc_core.machine import Machine, MachineConfig
    return Machine(MachineConfig(plugins=["cga"],
                                 dos=DosConfig(drives={"C": str(folder)},
                                               program="C:\\HOLD.COM")))


def wait_for_key(m, must=True):
    """Run HOLD.COM to its key wait (``must``: it has to get there; else it
    may have ended already, DATA.TXT being missing)."""
    from pypc_core.machine import CPU_HZ
    end = m.clock() + 10 * CPU_HZ
    while not m.waiting_for_key() and not m.dos.exited and m.clock() < end:
        m.run_for(CPU_HZ // 50)
    assert m.waiting_for_key() or not must


def finish(m):
    from pypc_core.machine import CPU_HZ
    m.type_text("x")
    end = m.clock() + 10 * CPU_HZ
    while not m.dos.exited and m.clock() < end:
        m.run_for(CPU_HZ // 50)
    assert m.dos.exited
    return bytes(m.dos.console_out).decode("cp437")


def folder_with(path, data):
    os.mkdir(path)
    progs.install(path, "hold")
    with open(os.path.join(path, "DATA.TXT"), "wb") as fh:
        fh.write(data)
    return path


@pytest.fixture
def saved(tmp_path):
    """A bundle of HOLD.COM waiting with a/DATA.TXT open."""
    canary = make_canary(str(tmp_path))
    before = tree_image(canary)
    a = folder_with(str(tmp_path / "a"), b"AAAAAAAA")
    m = dos_machine(a)
    wait_for_key(m)
    path = str(tmp_path / "hold.zip")
    m.save(path, disk_mode="embed", progress=None)
    m.close()
    yield {"path": path, "a": a, "tmp": tmp_path, "canary": canary}
    assert tree_image(canary) == before


def refused(m, path, work, match):
    before = state_sha256(m)
    listing = sorted(os.listdir(work))
    with pytest.raises(SnapshotError, match=match) as exc:
        m.load(path, progress=None)
    assert state_sha256(m) == before
    assert sorted(os.listdir(work)) == listing
    return exc.value


def test_an_open_file_is_found_again_in_the_new_mount(saved):
    b = folder_with(str(saved["tmp"] / "b"), b"BBBBBBBB")
    m = dos_machine(b)
    try:
        wait_for_key(m)
        m.load(saved["path"], progress=None)
        text = finish(m)
        assert m.dos.exit_code == 0, text
    finally:
        m.close()
    # the restored program appended to b's DATA.TXT; a's is as it was
    assert open(os.path.join(b, "DATA.TXT"), "rb").read() == b"BBBBBBBB+"
    assert open(os.path.join(saved["a"], "DATA.TXT"), "rb").read() == b"AAAAAAAA"
    assert "data:BBBBBBBB" in text


def test_a_mount_without_the_file_refuses_the_bundle(saved):
    c = str(saved["tmp"] / "c")
    os.mkdir(c)
    progs.install(c, "hold")
    m = dos_machine(c)
    try:
        wait_for_key(m, must=False)
        err = refused(m, saved["path"], saved["tmp"], "DATA.TXT cannot be opened again")
        assert err.check == "dos_state"
        assert sorted(os.listdir(c)) == ["HOLD.COM"]
    finally:
        m.close()


def test_a_link_in_the_new_mount_is_not_followed(saved):
    """C: of the restoring machine has DATA.TXT as a link to the canary:
    the saved DOS path does not reach through it."""
    d = str(saved["tmp"] / "d")
    os.mkdir(d)
    progs.install(d, "hold")
    os.symlink(os.path.join(saved["canary"], "victim.txt"), os.path.join(d, "DATA.TXT"))
    m = dos_machine(d)
    try:
        wait_for_key(m, must=False)
        refused(m, saved["path"], saved["tmp"], "DATA.TXT cannot be opened again")
    finally:
        m.close()


def rebuilt(src, dst, change, extra=None):
    """A copy of bundle ``src`` with ``change(state)`` applied to its
    state.json, ``extra`` members added (payloads) and the manifest's member
    table re-hashed."""
    with zipfile.ZipFile(src) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    for n, d in (extra or {}).items():
        members.setdefault(n, d)
    man = json.loads(members.pop("manifest.json"))
    state = json.loads(members["state.json"])
    change(state, man)
    members["state.json"] = json.dumps(state).encode()
    man["members"] = {n: {"size": len(d), "sha256": hashlib.sha256(d).hexdigest()}
                      for n, d in members.items()}
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zf:
        for n, d in members.items():
            zf.writestr(n, d)
        zf.writestr("manifest.json", json.dumps(man))
    return dst


def _open_file(state):
    files = [e for e in state["machine"]["dos"]["sft"] if e is not None and e["kind"] == "file"]
    assert len(files) == 1, state["machine"]["dos"]["sft"]
    return files[0]


@pytest.mark.parametrize("what, change", [
    ("a host path", lambda f: f.update(path="/etc/passwd")),
    ("dot-dot", lambda f: f.update(parts=["..", "CANARY", "VICTIM.TXT"])),
    ("a slash in a name", lambda f: f.update(parts=["../../etc/passwd"])),
    ("an absolute name", lambda f: f.update(parts=["/etc/passwd"])),
    ("no path", lambda f: f.pop("parts")),
    ("another drive", lambda f: f.update(drive="Q")),
    ("a bad mode", lambda f: f.update(mode=7)),
])
def test_a_crafted_dos_state_is_refused(saved, what, change):
    bad = rebuilt(saved["path"], str(saved["tmp"] / "bad.zip"),
                  lambda state, man: change(_open_file(state)))
    b = folder_with(str(saved["tmp"] / "b"), b"BBBBBBBB")
    m = dos_machine(b)
    try:
        wait_for_key(m)
        if what == "a host path":
            # an extra field is no way in: the file is still found by its DOS path
            m.load(bad, progress=None)
            assert finish(m).count("data:BBBBBBBB") == 2
            return
        refused(m, bad, saved["tmp"], "DOS")
    finally:
        m.close()
    assert open(os.path.join(b, "DATA.TXT"), "rb").read() == b"BBBBBBBB"


def test_a_dos_section_is_refused_by_a_machine_without_the_built_in_dos(tmp_path):
    import snapshot_support as T
    plain = T.make_machine()
    path = str(tmp_path / "plain.zip")
    plain.save(path, disk_mode="embed", progress=None)
    a = folder_with(str(tmp_path / "a"), b"AAAAAAAA")
    m = dos_machine(a)
    wait_for_key(m)
    with zipfile.ZipFile(_bundle_of(m, tmp_path)) as zf:
        dos_state = json.loads(zf.read("state.json"))["machine"]["dos"]
        text = json.dumps(dos_state)          # the payloads the DOS state refers to
        payloads = {n: zf.read(n) for n in zf.namelist()
                    if n not in ("state.json", "manifest.json")
                    and os.path.basename(n).split(".")[0] in text}
    m.close()

    def add_dos(state, man):
        state["machine"]["dos"] = dos_state
    bad = rebuilt(path, str(tmp_path / "bad.zip"), add_dos, payloads)
    try:
        refused(plain, bad, tmp_path, "built-in DOS")
    finally:
        plain.close()


def _bundle_of(m, tmp_path):
    path = str(tmp_path / "dos.zip")
    m.save(path, disk_mode="embed", progress=None)
    return path
