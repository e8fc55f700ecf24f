"""Hostile and broken bundles are refused before anything changes: the live
machine (its whole state, disks and breakpoints) stays as it was and
nothing is written, neither disk_root nor anything outside it.  Each test
builds its bundle from a good one."""

import hashlib
import json
import os
import stat
import struct
import zipfile

import pytest

from pypc_core.snapshot import SnapshotError
from pypc_core.snapshot.replay import state_sha256

import snapshot_support as T


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    """A good bundle of a CGA machine running snapkeys with an HDD, and its
    members."""
    folder = tmp_path_factory.mktemp("good")
    img = folder / "c.img"
    img.write_bytes(bytes(range(256)) * 2 * 2040)
    m = T.start_guest(T.make_machine(hdd=str(img), cow=True))
    m.disks[0x80].write_sectors(3, b"\x55" * 512)
    T.run_frames(m, 2)
    path = str(folder / "good.zip")
    m.save(path, disk_mode="embed", progress=None)
    m.close()
    with zipfile.ZipFile(path) as zf:
        members = {name: zf.read(name) for name in zf.namelist()}
    return {"path": path, "members": members, "image": str(img)}


@pytest.fixture
def live(tmp_path, good):
    """The machine a bundle is imported into (same configuration), with a
    breakpoint, and a scratch directory to watch."""
    img = tmp_path / "live.img"
    img.write_bytes(bytes(512 * 2040))
    m = T.start_guest(T.make_machine(hdd=str(img), cow=True))
    m.breakpoints.add("exec", (0x1000, 0x117))
    T.run_frames(m, 1)
    work = tmp_path / "work"
    work.mkdir()
    yield m, work
    m.close()


def build(work, name, members, *, manifest=None, fix=True, infos=None):
    """Write a bundle ``name`` in ``work`` from ``members`` (name -> bytes;
    ``manifest.json`` as a dict in ``manifest`` or taken from members);
    ``fix`` recomputes the manifest's member table.  ``infos``: extra
    (ZipInfo, bytes) entries written as they are.  Returns (path, sha256)."""
    members = dict(members)
    man = manifest if manifest is not None else json.loads(members.pop("manifest.json"))
    members.pop("manifest.json", None)
    if fix:
        man["members"] = {n: {"size": len(d), "sha256": hashlib.sha256(d).hexdigest()}
                          for n, d in members.items()}
    path = work / name
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for n, d in members.items():
            zf.writestr(n, d)
        for info, d in infos or ():
            zf.writestr(info, d)
        zf.writestr("manifest.json", json.dumps(man))
    return str(path), hashlib.sha256(path.read_bytes()).hexdigest()


def manifest_of(good):
    return json.loads(good["members"]["manifest.json"])


def state_of(good):
    return json.loads(good["members"]["state.json"])


def refused(m, work, path, digest, check=None, kind=None, **kw):
    """Import must fail, leaving the machine and the file system as they were."""
    before = state_sha256(m)
    disks = {d: (disk.path, disk.overlay_sectors) for d, disk in m.disks.items()}
    bps = [b.to_dict() for b in m.breakpoints.list()]
    files = sorted(os.listdir(work))
    root = work / "disks"
    with pytest.raises(SnapshotError) as exc:
        m.load(path, disk_root=str(root), expected_sha256=digest, progress=None, **kw)
    assert state_sha256(m) == before
    assert {d: (disk.path, disk.overlay_sectors) for d, disk in m.disks.items()} == disks
    assert [b.to_dict() for b in m.breakpoints.list()] == bps
    assert sorted(os.listdir(work)) == files and not root.exists()
    if check is not None:
        assert exc.value.check == check, exc.value
    if kind is not None:
        assert exc.value.kind == kind, exc.value
    return exc.value


def test_the_good_bundle_imports(live, good):
    m, work = live
    digest = hashlib.sha256(open(good["path"], "rb").read()).hexdigest()
    m.load(good["path"], disk_root=str(work / "disks"), expected_sha256=digest, progress=None)
    assert os.listdir(work / "disks") == ["disk0-C.img"]
    assert m.disks[0x80].overlay_sectors == [3]


def test_rebuilt_good_bundle_imports(live, good):
    """The builder itself makes importable bundles (so each refusal below
    is the one check it breaks)."""
    m, work = live
    path, digest = build(work, "same.zip", good["members"])
    m.load(path, disk_root=str(work / "disks"), expected_sha256=digest, progress=None)


def test_wrong_archive_digest(live, good):
    m, work = live
    refused(m, work, good["path"], "0" * 64, "archive_sha256", "guard")


@pytest.mark.parametrize("evil", ["../evil.bin", "/tmp/pypc-evil.bin", "payload/../../evil.bin",
                                  "disks/0.img/../../../evil", "C:\\evil.bin", "payload/x.bin"])
def test_path_traversal_and_absolute_names(live, good, evil):
    m, work = live
    members = dict(good["members"], **{evil: b"pwned"})
    path, digest = build(work, "evil.zip", members, fix=False)
    refused(m, work, path, digest, "member_name")
    assert not os.path.exists("/tmp/pypc-evil.bin")
    assert not os.path.exists(os.path.join(os.path.dirname(str(work)), "evil.bin"))


def test_symlink_member(live, good):
    m, work = live
    members = dict(good["members"])
    name = next(n for n in members if n.startswith("payload/"))
    data = members.pop(name)
    info = zipfile.ZipInfo(name)
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    info.create_system = 3
    path, digest = build(work, "link.zip", members, manifest=manifest_of(good), fix=False,
                         infos=[(info, data)])
    refused(m, work, path, digest, "member_type")


def test_duplicate_names(live, good):
    m, work = live
    name = next(n for n in good["members"] if n.startswith("payload/"))
    info = zipfile.ZipInfo(name)
    with pytest.warns(UserWarning):
        path, digest = build(work, "dup.zip", good["members"], manifest=manifest_of(good),
                             fix=False, infos=[(info, good["members"][name])])
    refused(m, work, path, digest, "duplicate_member")


def test_wrong_member_hash(live, good):
    m, work = live
    members = dict(good["members"])
    name = next(n for n in members if n.startswith("payload/"))
    members[name] = bytes(len(members[name]))             # same size, other bytes
    path, digest = build(work, "hash.zip", members, manifest=manifest_of(good), fix=False)
    refused(m, work, path, digest, "member_sha256")
    # with the table fixed up, the payload is no longer named by its hash
    path, digest = build(work, "hash2.zip", members)
    refused(m, work, path, digest, "member_sha256")


def test_missing_hash_and_missing_member(live, good):
    m, work = live
    man = manifest_of(good)
    name = next(n for n in man["members"] if n.startswith("payload/"))
    del man["members"][name]["sha256"]
    path, digest = build(work, "nohash.zip", good["members"], manifest=man, fix=False)
    refused(m, work, path, digest, "manifest")
    members = dict(good["members"])
    del members[name]
    path, digest = build(work, "nomember.zip", members, manifest=manifest_of(good), fix=False)
    refused(m, work, path, digest, "missing_member")
    members = dict(good["members"])
    del members["state.json"]
    path, digest = build(work, "nostate.zip", members)
    refused(m, work, path, digest, "missing_member")


def test_truncated_archive_and_corrupt_member(live, good):
    m, work = live
    data = open(good["path"], "rb").read()
    cut = work / "cut.zip"
    cut.write_bytes(data[:len(data) // 2])
    refused(m, work, str(cut), hashlib.sha256(cut.read_bytes()).hexdigest(), "archive")
    # a member whose stored bytes end early: its header still says the full size
    members = dict(good["members"])
    path, _ = build(work, "stored.zip", members)
    raw = bytearray(open(path, "rb").read())
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("state.json")
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    raw[start:start + info.compress_size] = bytes(info.compress_size)   # zeroed stream
    bad = work / "corrupt.zip"
    bad.write_bytes(bytes(raw))
    refused(m, work, str(bad), hashlib.sha256(bytes(raw)).hexdigest(), "member_corrupt")


def _set_central_size(raw, name, size):
    """Patch the uncompressed size of ``name`` in the central directory."""
    i = 0
    while True:
        i = raw.find(b"PK\x01\x02", i)
        assert i >= 0, name
        n = struct.unpack_from("<H", raw, i + 28)[0]
        if raw[i + 46:i + 46 + n] == name.encode():
            struct.pack_into("<I", raw, i + 24, size)
            return
        i += 4


def test_zip_bombs(live, good):
    m, work = live
    # a member that says 100 bytes and inflates to 50 MB
    members = dict(good["members"])
    bomb = bytes(50 << 20)
    name = "payload/" + hashlib.sha256(bomb[:100]).hexdigest() + ".bin"
    members[name] = bomb
    path, _ = build(work, "bomb.zip", members)
    man_fixed = manifest_of(good)
    raw = bytearray(open(path, "rb").read())
    _set_central_size(raw, name, 100)
    bad = work / "bomb1.zip"
    bad.write_bytes(bytes(raw))
    refused(m, work, str(bad), hashlib.sha256(bytes(raw)).hexdigest())
    # a member that declares more than the 1 GiB the format allows
    _set_central_size(raw, name, 0xFFFFFFF0)
    bad2 = work / "bomb2.zip"
    bad2.write_bytes(bytes(raw))
    refused(m, work, str(bad2), hashlib.sha256(bytes(raw)).hexdigest(), "size", "limit")
    assert man_fixed["members"]


def test_huge_json(live, good):
    m, work = live
    state = state_of(good)
    state["host"]["padding"] = "x" * (5 << 20)
    members = dict(good["members"], **{"state.json": json.dumps(state).encode()})
    path, digest = build(work, "huge.zip", members)
    refused(m, work, path, digest, "json_size", "limit")
    man = manifest_of(good)
    man["created_by"] = "y" * (5 << 20)
    path, digest = build(work, "hugeman.zip", good["members"], manifest=man)
    refused(m, work, path, digest, "json_size", "limit")
    deep = "[" * 100000 + "]" * 100000
    members = dict(good["members"], **{"state.json": deep.encode()})
    path, digest = build(work, "deep.zip", members)
    refused(m, work, path, digest, "json")


@pytest.mark.parametrize("where, value, check", [
    (("machine", "devices", "pic", "irr"), "lots", "state_type"),
    (("machine", "devices", "pic", "irr"), 10 ** 30, "state_range"),
    (("machine", "devices", "pit", "channels"), {"a": 1}, "state_type"),
    (("machine", "interrupts_taken"), [1, 2], "state_type"),
    (("machine", "devices", "keyboard", "fifo"), {"$t": ["x"]}, "state_type"),
    (("machine", "devices", "pic"), {"irr": 0}, "state_shape"),
    (("machine", "devices", "nosuchcard"), {}, "state_shape"),
    (("machine", "cpu", "regs"), {"$evil": 1}, "state"),
    (("machine", "memory"), {"$a": {"sha256": "0" * 64, "size": 1, "dtype": "uint8",
                                   "shape": [1]}}, "state"),
])
def test_wrong_types_and_shapes(live, good, where, value, check):
    m, work = live
    state = state_of(good)
    node = state
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    members = dict(good["members"], **{"state.json": json.dumps(state).encode()})
    path, digest = build(work, "types.zip", members)
    refused(m, work, path, digest, check)


def test_wrong_array_dtype(live, good):
    m, work = live
    state = state_of(good)
    regs = state["machine"]["cpu"]["regs"]["$a"]
    payload = good["members"][f"payload/{regs['sha256']}.bin"]
    regs["dtype"], regs["shape"] = "uint8", [len(payload)]
    members = dict(good["members"], **{"state.json": json.dumps(state).encode()})
    path, digest = build(work, "dtype.zip", members)
    refused(m, work, path, digest, "state_type")


@pytest.mark.parametrize("change, check, kind", [
    (lambda man: man.update(version=9), "version", "unsupported"),
    (lambda man: man.update(version=3), "version", "invalid"),
    (lambda man: man.update(version=2), "version", "unsupported"),
    (lambda man: man.update(layout=2), "layout", "unsupported"),
    (lambda man: man.update(format="zip"), "manifest", "invalid"),
    (lambda man: man["emulator"].update(source_sha256="0" * 64), "emulator_source", "config"),
    (lambda man: man["configuration"].update(memory_kib=512), "configuration", "config"),
    (lambda man: man["configuration"].update(video_adapter="VGA"), "configuration", "config"),
    (lambda man: man["configuration"]["devices"].update(cga="evil.Card"), "configuration",
     "config"),
    (lambda man: man["disks"][0].update(size=1000), "manifest", "invalid"),
    (lambda man: man.update(extra=1), "manifest", "invalid"),
])
def test_manifest_versions_and_configuration(live, good, change, check, kind):
    m, work = live
    man = manifest_of(good)
    change(man)
    path, digest = build(work, "man.zip", good["members"], manifest=man)
    refused(m, work, path, digest, check, kind)


def test_a_bundle_of_another_configuration(live, good, tmp_path):
    m, work = live
    for plugins, config in ((("cga",), {}),                         # no hard disk
                            (("cga", "uart"), {"hdd": good["image"], "cow": True}),
                            (("cga",), {"hdd": good["image"], "cow": True,
                                        "memory_kib": 512})):
        other = T.make_machine(plugins, **config)
        out = other.save(str(work / f"other{len(os.listdir(work))}.zip"), progress=None)
        other.close()
        refused(m, work, out["path"], out["sha256"], "configuration", "config")


def test_not_a_zip_and_not_a_file(live, good):
    m, work = live
    junk = work / "junk.zip"
    junk.write_bytes(b"this is not a zip file at all")
    refused(m, work, str(junk), hashlib.sha256(junk.read_bytes()).hexdigest(), "archive")
    with pytest.raises(SnapshotError) as exc:
        m.load(str(work / "missing.zip"), progress=None)
    assert exc.value.kind == "io"
    with pytest.raises(SnapshotError):
        m.load(str(work), progress=None)                    # a directory
