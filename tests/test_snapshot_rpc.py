"""machine.snapshot.export / machine.snapshot.import over the real RPC
server: request checks before anything happens, results against the
schemas, the revision (export leaves it, import advances it by one and never
rewinds it), the stop kind, breakpoints kept or cleared, journals and held
keys, and configuration refusals with the machine untouched."""

import hashlib
import os
import time

import pytest

from rpc_client import RpcFixture


@pytest.fixture
def fx():
    f = RpcFixture()
    yield f
    f.close()


def paused(c):
    c.call("execution.pause")
    return c.call("session.status")["state_revision"]


def export(c, path, rev, **extra):
    return c.call("machine.snapshot.export", dict(path=str(path),
                                                  expected_state_revision=rev, **extra))


def test_export_and_import_round_trip(fx, tmp_path):
    c = fx.client()
    assert "machine.snapshot.export" in c.call("agent.capabilities")["methods"]
    rev = paused(c)
    regs = c.call("state.get_registers")
    out = export(c, tmp_path / "m.zip", rev)
    assert out["path"] == str(tmp_path / "m.zip") and out["state_revision"] == rev
    assert out["sha256"] == hashlib.sha256((tmp_path / "m.zip").read_bytes()).hexdigest()
    assert out["bytes"] == os.path.getsize(tmp_path / "m.zip")
    assert c.call("session.status")["state_revision"] == rev         # export changes nothing
    c.call("execution.continue")
    time.sleep(0.3)                                             # let the BIOS run a little
    rev2 = paused(c)
    assert rev2 > rev
    res = c.call("machine.snapshot.import", {
        "path": out["path"], "disk_root": str(tmp_path / "disks"),
        "expected_sha256": out["sha256"], "expected_state_revision": rev2})
    assert res["state_revision"] == rev2 + 1                   # never rewound
    stop = res["stop_reason"]
    assert stop["kind"] == "machine_snapshot_restored"
    back = dict(stop["registers"])
    assert back.pop("state_revision") == rev2 + 1
    regs.pop("state_revision")
    assert back == regs
    status = c.call("session.status")
    assert status["state"] == "stopped" and status["last_stop"]["kind"] == \
        "machine_snapshot_restored"
    assert not (tmp_path / "disks").exists()                   # no disks, nothing written
    # the legacy digest name works too; execution resumes normally
    res = c.call("machine.snapshot.import", {
        "path": out["path"], "disk_root": str(tmp_path / "disks2"), "sha256": out["sha256"],
        "expected_state_revision": rev2 + 1})
    assert res["state_revision"] == rev2 + 2
    c.call("execution.continue")
    time.sleep(0.1)
    assert paused(c) > rev2 + 2


def test_request_checks_come_first(fx, tmp_path):
    c = fx.client()
    err = c.error("machine.snapshot.export", {"path": str(tmp_path / "a.zip"),
                                              "expected_state_revision": 0})
    assert err["data"]["reason"] == "TARGET_NOT_PAUSED"
    rev = paused(c)
    err = c.error("machine.snapshot.export", {"path": str(tmp_path / "a.zip"),
                                              "expected_state_revision": rev + 5})
    assert err["data"]["reason"] == "REVISION_MISMATCH"
    err = c.error("machine.snapshot.export", {"path": str(tmp_path / "a.zip"),
                                              "expected_state_revision": rev,
                                              "disk_mode": "zip"})
    assert err["code"] == -32602
    err = c.error("machine.snapshot.export", {"path": str(tmp_path / "a.zip"),
                                              "expected_state_revision": rev, "x": 1})
    assert err["code"] == -32602
    assert os.listdir(tmp_path) == []
    out = export(c, tmp_path / "a.zip", rev)
    err = c.error("machine.snapshot.export", {"path": out["path"],
                                              "expected_state_revision": rev})
    assert err["data"]["reason"] == "PRECONDITION_FAILED"
    assert err["data"]["check"] == "path_exists"
    base = {"path": out["path"], "disk_root": str(tmp_path / "d"),
            "expected_state_revision": rev}
    for params, reason in (
            (dict(base), "INVALID_PARAMS"),                                  # no digest
            (dict(base, sha256=out["sha256"], expected_sha256=out["sha256"]),
             "INVALID_PARAMS"),                                              # both
            (dict(base, expected_sha256="xyz"), "INVALID_PARAMS"),
            (dict(base, expected_sha256=out["sha256"], preserve_breakpoints="no"),
             "INVALID_PARAMS"),
            (dict(base, expected_sha256=out["sha256"], references={"zero": "/x"}),
             "INVALID_PARAMS"),
            (dict(base, expected_sha256="0" * 64), "PRECONDITION_FAILED"),   # wrong digest
            (dict(base, expected_sha256=out["sha256"], expected_state_revision=rev + 1),
             "REVISION_MISMATCH"),
            (dict(base, expected_sha256=out["sha256"], disk_root=str(tmp_path)),
             "PRECONDITION_FAILED")):                                        # exists
        err = c.error("machine.snapshot.import", params)
        assert err["code"] == -32602 and err["data"]["reason"] == reason, (params, err)
        assert c.call("session.status")["state_revision"] == rev
    assert sorted(os.listdir(tmp_path)) == ["a.zip"]
    err = c.error("machine.snapshot.import", dict(base, path=str(tmp_path / "none.zip"),
                                                   expected_sha256="0" * 64))
    assert err["code"] == -32603                      # a host file that cannot be opened


def test_breakpoints_journals_and_held_keys(fx, tmp_path):
    c = fx.client()
    rev = paused(c)
    c.call("input.keyboard", {"events": [{"scan_code": 0x2A, "pressed": True}]})  # shift held
    rev = c.call("session.status")["state_revision"]
    out = export(c, tmp_path / "k.zip", rev)
    c.call("input.keyboard", {"events": [{"scan_code": 0x2A, "pressed": False}]})
    assert c.call("input.state")["keyboard"]["pressed_scancodes"] == []
    bp = c.call("breakpoints.create", {"address": {"space": "physical", "offset": 0x7C00}})
    snap = c.call("video.snapshot")
    rev = c.call("session.status")["state_revision"]
    res = c.call("machine.snapshot.import", {
        "path": out["path"], "disk_root": str(tmp_path / "d1"),
        "expected_sha256": out["sha256"], "expected_state_revision": rev})
    assert c.call("input.state")["keyboard"]["pressed_scancodes"] == [0x2A]
    listed = c.call("breakpoints.list")["breakpoints"]
    assert [b["breakpoint_id"] for b in listed] == [bp["breakpoint_id"]]
    err = c.error("video.snapshot.read", {"snapshot_id": snap["snapshot_id"],
                                          "component": "text"})
    assert err["data"]["reason"] == "NOT_FOUND"           # retained snapshots are cleared
    res = c.call("machine.snapshot.import", {
        "path": out["path"], "disk_root": str(tmp_path / "d2"), "expected_sha256": out["sha256"],
        "expected_state_revision": res["state_revision"], "preserve_breakpoints": False})
    assert c.call("breakpoints.list")["breakpoints"] == []
    assert fx.machine.breakpoints.list() == []


def test_a_bundle_of_another_configuration_is_refused(tmp_path):
    other = RpcFixture(plugins=["cga"], memory_kib=512)
    try:
        c = other.client()
        out = export(c, tmp_path / "small.zip", paused(c))
    finally:
        other.close()
    fx = RpcFixture()
    try:
        c = fx.client()
        rev = paused(c)
        regs = c.call("state.get_registers")
        err = c.error("machine.snapshot.import", {
            "path": out["path"], "disk_root": str(tmp_path / "d"),
            "expected_sha256": out["sha256"], "expected_state_revision": rev})
        assert err["data"]["reason"] == "PRECONDITION_FAILED"
        assert err["data"]["check"] == "configuration" and "memory" in err["message"]
        assert c.call("state.get_registers") == regs
        assert not (tmp_path / "d").exists()
    finally:
        fx.close()
