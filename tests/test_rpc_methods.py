"""The RPC methods over a real socket against a real machine (CGA, built-in
BIOS, no disk: the BIOS prints "No bootable disk." and waits).  Every result
is checked against its schema by the client; every rejected request is
checked to change nothing."""

import base64
import hashlib

import pytest

from rpc_client import RpcFixture
from rpc_fixtures import c, server_fixture  # noqa: F401  (c: a fixture)

PROGRAM_SEG = 0x1000
# mov ax,1234h / inc ax / mov [0200h],ax / jmp $
PROGRAM = bytes([0xB8, 0x34, 0x12, 0x40, 0xA3, 0x00, 0x02, 0xEB, 0xFE])


fx = server_fixture()


def pause(c):
    return c.call("execution.pause")


def snapshot(c):
    """Everything a rejected request must leave as it was (paused machine)."""
    regs = c.call("state.get_registers")
    low = c.call("memory.read", {"address": 0, "length": 65536})
    vram = c.call("memory.read", {"address": "0xB8000", "length": 16384})
    status = c.call("session.status")
    return (regs, low["sha256"], vram["sha256"], status["state"], status["last_stop"],
            c.call("input.state"))


def load_program(c):
    pause(c)
    c.call("memory.write", {"address": {"space": "segmented", "segment": PROGRAM_SEG,
                                        "offset": 0},
                            "data_base64": base64.b64encode(PROGRAM).decode()})
    regs = c.call("state.get_registers")
    return c.call("state.set_registers", {
        "expected_state_revision": regs["state_revision"],
        "expected": {"cs": regs["segments"]["cs"], "ip": regs["ip"],
                     "ds": regs["segments"]["ds"]},
        "set": {"cs": PROGRAM_SEG, "ip": 0, "ds": PROGRAM_SEG}})["after"]


def rejected(c, method, params, reason, code=-32602):
    before = snapshot(c)
    err = c.error(method, params)
    assert err["code"] == code, err
    assert err["data"]["reason"] == reason, err
    assert snapshot(c) == before
    return err


# -- agent / session -----------------------------------------------------------

def test_capabilities_and_info_are_identical(fx, c):
    caps = c.call("agent.capabilities")
    assert caps == c.call("emulator.info")
    assert caps["endpoint"] == f"127.0.0.1:{fx.port}"
    assert caps["limits"] == {"max_memory_bytes": 65536, "max_keyboard_events": 32,
                              "max_trace_events": 65536, "max_observation_windows": 16,
                              "max_observation_memory_bytes": 65536,
                              "retained_video_snapshots": 8}
    assert caps["memory_bytes"] == 1048576 and caps["cpu"] == "8088"
    assert "CGA" in caps["video_adapters"]
    assert caps["methods"][:3] == ["agent.capabilities", "emulator.info", "state.get_registers"]
    assert set(caps["methods"]) == set(fx.server.methods)
    from pypc_rpc_methods.agent import CONTRACT_METHODS
    extensions = [m for m in caps["methods"] if m not in CONTRACT_METHODS]
    assert "rpc.discover" in extensions and "session.start" in extensions
    assert caps["methods"][-len(extensions):] == sorted(extensions)   # extensions come last


def test_fresh_session_is_running_with_no_last_stop(c):
    st = c.call("session.status")
    assert st["state"] == "running" and st["last_stop"] is None
    assert st["session_id"] == "pypc"
    assert st["target"] == {"cpu": "8088", "memory_bytes": 1048576, "video": "CGA"}
    assert c.call("session.status", {"session_id": "pypc"})["session_id"] == "pypc"
    err = c.error("session.status", {"session_id": "other"})
    assert err["code"] == -32602


def test_discover_lists_every_method_with_its_schema(fx, c):
    doc = c.call("rpc.discover")
    assert doc["openrpc"].startswith("1.")
    names = [m["name"] for m in doc["methods"]]
    assert sorted(names) == sorted(fx.server.methods)
    text = str(doc)
    assert "defs.json" not in text                        # refs point into components
    read = next(m for m in doc["methods"] if m["name"] == "memory.read")
    assert {p["name"] for p in read["params"]} == {"address", "length"}
    assert "memory_block" in doc["components"]["schemas"]


# -- registers -----------------------------------------------------------------

def test_registers_and_alias(c):
    regs = pause(c)
    assert regs.pop("paused") is True
    assert c.call("state.get_registers") == regs == c.call("state.get")
    assert len(regs["flags_text"]) == 8


def test_revision_advances_with_the_guest_while_running(c):
    import time
    a = c.call("state.get_registers")
    for _ in range(2000):
        b = c.call("state.get_registers")
        if b["clock"] > a["clock"]:
            break
        time.sleep(0.01)
    assert b["clock"] > a["clock"] and b["state_revision"] > a["state_revision"]


def test_set_registers_guarded(c):
    regs = pause(c)
    rev = regs["state_revision"]
    ax = regs["general"]["ax"]
    out = c.call("state.set_registers", {"expected_state_revision": rev,
                                         "expected": {"ax": ax}, "set": {"ax": "0x1234"}})
    assert out["before"]["general"]["ax"] == ax
    assert out["after"]["general"]["ax"] == 0x1234
    assert out["after"]["state_revision"] == rev + 1
    assert c.call("state.get")["general"]["ax"] == 0x1234


@pytest.mark.parametrize("change, reason", [
    (lambda p, r: p.update(expected_state_revision=r - 1), "REVISION_MISMATCH"),
    (lambda p, r: p.update(expected={"ax": 0x1234}, set={"ax": 1, "bx": 2}),
     "PRECONDITION_FAILED"),
    (lambda p, r: p.update(expected={"ax": 0x1235}), "PRECONDITION_FAILED"),
    (lambda p, r: p.update(set={"ax": 0x10000}), "INVALID_PARAMS"),
    (lambda p, r: p.update(set={"ax": -1}), "INVALID_PARAMS"),
    (lambda p, r: p.update(expected={"eax": 0}, set={"eax": 1}), "INVALID_PARAMS"),
    (lambda p, r: p.update(set={}), "INVALID_PARAMS"),
    (lambda p, r: p.update(set={"ax": True}), "INVALID_PARAMS"),
    (lambda p, r: p.update(set={"ax": 1.0}), "INVALID_PARAMS"),
    (lambda p, r: p.update(extra=1), "INVALID_PARAMS"),
])
def test_set_registers_rejections_change_nothing(c, change, reason):
    regs = pause(c)
    c.call("state.set_registers", {"expected_state_revision": regs["state_revision"],
                                   "expected": {"ax": regs["general"]["ax"]},
                                   "set": {"ax": 0x1234}})
    rev = c.call("state.get")["state_revision"]
    params = {"expected_state_revision": rev, "expected": {"ax": 0x1234}, "set": {"ax": 7}}
    change(params, rev)
    rejected(c, "state.set_registers", params, reason)


def test_set_registers_needs_a_paused_machine(c):
    regs = c.call("state.get")
    err = c.error("state.set_registers", {"expected_state_revision": regs["state_revision"],
                                          "expected": {"ax": 0}, "set": {"ax": 1}})
    assert err["data"]["reason"] == "TARGET_NOT_PAUSED"


# -- memory --------------------------------------------------------------------

def test_memory_read_forms_agree(c):
    pause(c)
    a = c.call("memory.read", {"address": 0xF0000, "length": 32})
    b = c.call("memory.read", {"address": "0xF0000", "length": "32"})
    d = c.call("memory.read", {"address": {"offset": "0xF0000"}, "length": 32})
    e = c.call("memory.read", {"address": {"space": "linear", "offset": 983040}, "length": 32})
    f = c.call("memory.read", {"address": {"space": "segmented", "segment": "0xF000",
                                           "offset": 0}, "length": "0b100000"})
    assert a == b == d == e == f
    data = base64.b64decode(a["data_base64"])
    assert a["address"] == 0xF0000 and a["byte_count"] == 32 == len(data)
    assert a["data_hex"] == data.hex() and a["sha256"] == hashlib.sha256(data).hexdigest()
    one = c.call("memory.read", {"address": 0x400})
    assert one["byte_count"] == 1


def test_memory_read_segmented_wraps_at_1mib(c):
    pause(c)
    wrapped = c.call("memory.read", {"address": {"space": "segmented", "segment": "0xFFFF",
                                                 "offset": "0x0010"}, "length": 4})
    assert wrapped["address"] == 0
    assert wrapped["data_hex"] == c.call("memory.read", {"address": 0, "length": 4})["data_hex"]


@pytest.mark.parametrize("params, reason", [
    ({"address": 0, "length": 65537}, "LIMIT_EXCEEDED"),
    ({"address": 0, "length": 0}, "INVALID_PARAMS"),
    ({"address": 0xFFFFF, "length": 2}, "INVALID_PARAMS"),
    ({"address": 0x100000}, "INVALID_PARAMS"),
    ({"address": -1}, "INVALID_PARAMS"),
    ({"address": True}, "INVALID_PARAMS"),
    ({"address": 1.5}, "INVALID_PARAMS"),
    ({"address": "B8000"}, "INVALID_PARAMS"),
    ({"address": {"space": "segmented", "offset": 0}}, "INVALID_PARAMS"),
    ({"address": {"space": "segmented", "segment": 0x10000, "offset": 0}}, "INVALID_PARAMS"),
    ({"address": {"space": "physical", "offset": 0, "bogus": 1}}, "INVALID_PARAMS"),
    ({"address": {"space": "virtual", "offset": 0}}, "INVALID_PARAMS"),
    ({}, "INVALID_PARAMS"),
    ({"address": 0, "size": 4}, "INVALID_PARAMS"),
])
def test_memory_read_rejections(c, params, reason):
    pause(c)
    rejected(c, "memory.read", params, reason)


def test_memory_write_and_guard(c):
    pause(c)
    addr = {"space": "segmented", "segment": "0x0050", "offset": "0x0000"}
    old = c.call("memory.read", {"address": addr, "length": 2})
    rev = c.call("state.get")["state_revision"]
    out = c.call("memory.write", {"address": addr, "data_base64": "SGk=",
                                  "expected_sha256": old["sha256"]})
    assert out == {"address": 0x500, "byte_count": 2, "before_sha256": old["sha256"],
                   "after_sha256": hashlib.sha256(b"Hi").hexdigest(),
                   "state_revision": rev + 1}
    assert c.call("memory.read", {"address": 0x500, "length": 2})["data_hex"] == b"Hi".hex()
    rejected(c, "memory.write", {"address": addr, "data_base64": "AAA=",
                                 "expected_sha256": old["sha256"]}, "PRECONDITION_FAILED")


def test_memory_write_to_rom_leaves_it(c):
    pause(c)
    out = c.call("memory.write", {"address": "0xFE000", "data_base64": "AAAAAA=="})
    assert out["before_sha256"] == out["after_sha256"]


@pytest.mark.parametrize("params, reason", [
    ({"address": 0x500, "data_base64": ""}, "INVALID_PARAMS"),
    ({"address": 0x500, "data_base64": "not base64!"}, "INVALID_PARAMS"),
    ({"address": 0x500, "data_base64": "SGk"}, "INVALID_PARAMS"),
    ({"address": 0xFFFFF, "data_base64": "SGk="}, "INVALID_PARAMS"),
    ({"address": 0x500, "data_base64": base64.b64encode(bytes(65537)).decode()},
     "LIMIT_EXCEEDED"),
    ({"address": 0x500, "data_base64": "SGk=", "expected_sha256": "abc"}, "INVALID_PARAMS"),
    ({"address": 0x500, "data_base64": "SGk=", "expected_sha256": "0" * 64},
     "PRECONDITION_FAILED"),
])
def test_memory_write_rejections(c, params, reason):
    pause(c)
    rejected(c, "memory.write", params, reason)


def test_memory_write_needs_a_paused_machine(c):
    err = c.error("memory.write", {"address": 0x500, "data_base64": "SGk="})
    assert err["data"]["reason"] == "TARGET_NOT_PAUSED"


def test_full_window_write_read_roundtrip(c):
    pause(c)
    data = bytes(range(256)) * 256
    c.call("memory.write", {"address": 0x20000, "data_base64": base64.b64encode(data).decode()})
    back = c.call("memory.read", {"address": 0x20000, "length": 65536})
    assert base64.b64decode(back["data_base64"]) == data


# -- I/O -----------------------------------------------------------------------

def test_io_read_and_write(c):
    regs = pause(c)
    rev = regs["state_revision"]
    out = c.call("io.write", {"port": "0x3D9", "value": "0x01"})
    assert out == {"port": 0x3D9, "value": 1, "handled": True, "state_revision": rev + 1}
    out = c.call("io.write", {"port": 0x2E0, "value": 5})
    assert out["handled"] is False and out["state_revision"] == rev + 2
    r = c.call("io.read", {"port": 0x2E0})
    assert r == {"port": 0x2E0, "value": 0xFF, "state_revision": rev + 3}
    r = c.call("io.read", {"port": "0x21"})              # PIC mask: what the BIOS set
    assert r["state_revision"] == rev + 4


def test_io_read_is_allowed_while_running(c):
    assert c.call("io.read", {"port": 0x3DA})["port"] == 0x3DA


@pytest.mark.parametrize("params", [{"port": 0x10000, "value": 0}, {"port": 0x3D9, "value": 256},
                                    {"port": 0x3D9}, {"value": 1}, {"port": "x", "value": 1}])
def test_io_write_rejections(c, params):
    pause(c)
    rejected(c, "io.write", params, "INVALID_PARAMS")


def test_io_write_needs_a_paused_machine(c):
    assert c.error("io.write", {"port": 0x3D9, "value": 1})["data"]["reason"] == \
        "TARGET_NOT_PAUSED"


# -- input ---------------------------------------------------------------------

def test_keyboard_batches_and_state(c):
    rev = pause(c)["state_revision"]
    out = c.call("input.keyboard", {"events": [{"scan_code": "0x4D", "pressed": True},
                                               {"scan_code": 0x1E, "pressed": True},
                                               {"scan_code": "0x4D", "pressed": False}]})
    assert out == {"accepted": 3, "state_revision": rev + 1}
    out = c.call("keyboard.scancode", {"scan_code": "0x10"})
    assert out == {"accepted": 1, "state_revision": rev + 2}
    out = c.call("input.keyboard", {"scan_code": 5, "pressed": True})   # single-event form
    assert out["accepted"] == 1
    st = c.call("input.state")
    assert st["keyboard"]["pressed_scancodes"] == [5, 0x10, 0x1E]
    assert st["joysticks"] == [] and st["state_revision"] == rev + 3
    assert c.call("input.joystick.state") == {"joysticks": [], "state_revision": rev + 3}


def test_keys_reach_the_guest(c):
    """A make/break pair typed through RPC arrives in the BIOS buffer."""
    pause(c)
    head = c.call("memory.read", {"address": 0x41A, "length": 4})["data_hex"]
    c.call("input.keyboard", {"events": [{"scan_code": "0x1E", "pressed": True},
                                         {"scan_code": "0x1E", "pressed": False}]})
    op = c.call("execution.continue")["operation_id"]
    import time
    end = time.monotonic() + 20
    while time.monotonic() < end:
        if c.call("memory.read", {"address": 0x41A, "length": 4})["data_hex"] != head:
            break
        time.sleep(0.02)
    c.call("execution.pause")
    assert c.call("execution.wait", {"operation_id": op})["stop_reason"]["kind"] == "pause"
    buf = c.call("memory.read", {"address": 0x41A, "length": 4})["data_hex"]
    assert buf != head                      # the tail moved: 'a' (1E61h) is queued


@pytest.mark.parametrize("method, params, reason", [
    ("input.keyboard", {"events": [{"scan_code": 1, "pressed": True}] * 33}, "LIMIT_EXCEEDED"),
    ("input.keyboard", {"events": []}, "INVALID_PARAMS"),
    ("input.keyboard", {"events": [{"scan_code": 1, "pressed": True},
                                   {"scan_code": 0x80, "pressed": True}]}, "INVALID_PARAMS"),
    ("input.keyboard", {"events": [{"scan_code": 1}]}, "INVALID_PARAMS"),
    ("input.keyboard", {"events": [{"scan_code": 1, "pressed": 1}]}, "INVALID_PARAMS"),
    ("input.keyboard", {"events": [{"scan_code": 1, "pressed": True, "x": 1}]},
     "INVALID_PARAMS"),
    ("keyboard.scancode", {"scan_code": -1}, "INVALID_PARAMS"),
    ("keyboard.scancode", {}, "INVALID_PARAMS"),
])
def test_keyboard_rejections_change_nothing(c, method, params, reason):
    pause(c)
    rejected(c, method, params, reason)


def test_joystick_without_a_game_port(c):
    params = {"joystick": 0, "x": 0.5, "y": -1, "buttons": [True, False]}
    assert c.error("input.joystick", params)["data"]["reason"] == "TARGET_NOT_PAUSED"
    pause(c)
    rejected(c, "input.joystick", params, "DEVICE_ABSENT")


# -- video ---------------------------------------------------------------------

def test_video_text(c):
    pause(c)
    t = c.call("video.text")
    assert t["adapter"] == "CGA" and t["rows"] == 25 and len(t["text"]) == 25
    assert any("No bootable disk" in row for row in t["text"])
    assert all(len(row) == t["columns"] for row in t["cells"])
    assert t["page_count"] == 16384 // t["page_size_bytes"]
    assert t["is_active_page"] and t["page"] == t["active_page"]
    other = c.call("video.text", {"page": 1})
    assert other["page"] == 1 and not other["is_active_page"]
    assert c.call("video.text", {"display_address": "0x0FA0"})["display_address"] == 0xFA0
    assert c.call("video.text", {"page": None})["page"] == t["page"]


@pytest.mark.parametrize("params", [{"page": 0, "display_address": 0},
                                    {"page": None, "display_address": None},
                                    {"page": 99}, {"display_address": 0x4000},
                                    {"row": 1}])
def test_video_text_rejections(c, params):
    pause(c)
    rejected(c, "video.text", params, "INVALID_PARAMS")


def test_video_snapshots(c):
    pause(c)
    snap = c.call("video.snapshot")
    assert snap["snapshot_id"] == "snap-1" and snap["vram"]["byte_count"] == 16384
    vram = c.call("memory.read", {"address": "0xB8000", "length": 16384})
    assert snap["vram"]["sha256"] == vram["sha256"]
    chunk = c.call("video.snapshot.read", {"snapshot_id": "snap-1", "component": "vram",
                                           "offset": 0, "length": 64})
    assert chunk["byte_count"] == 64 and chunk["component_byte_count"] == 16384
    assert base64.b64decode(chunk["data_base64"]) == base64.b64decode(vram["data_base64"])[:64]
    text = c.call("video.snapshot.read", {"snapshot_id": "snap-1", "component": "text"})
    rows = c.call("video.text")["text"]
    assert base64.b64decode(text["data_base64"]).decode() == "\n".join(rows)
    for _ in range(8):
        last = c.call("video.snapshot")["snapshot_id"]
    assert last == "snap-9"
    assert c.error("video.snapshot.read", {"snapshot_id": "snap-1",
                                           "component": "vram"})["data"]["reason"] == "NOT_FOUND"
    assert c.call("video.snapshot.read", {"snapshot_id": "snap-2", "component": "vram",
                                          "length": 1})["byte_count"] == 1
    for params, reason in [
            ({"snapshot_id": "snap-9", "component": "graphics_vram"}, "NOT_FOUND"),
            ({"snapshot_id": "snap-9", "component": "palette"}, "INVALID_PARAMS"),
            ({"snapshot_id": "snap-9", "component": "vram", "offset": 16384}, "INVALID_PARAMS"),
            ({"snapshot_id": "snap-9", "component": "vram", "length": 65537}, "LIMIT_EXCEEDED")]:
        assert c.error("video.snapshot.read", params)["data"]["reason"] == reason


# -- observation ---------------------------------------------------------------

def test_observe_matches_separate_calls(c):
    pause(c)
    rev = c.call("state.get")["state_revision"]
    windows = [{"address": {"space": "segmented", "segment": "0x0040", "offset": 0},
                "length": 256}, {"address": "0xB8000", "length": 4000}]
    obs = c.call("state.observe", {"expected_state_revision": rev, "memory": windows,
                                   "video_text": {}, "video_memory": True})
    assert obs["state_revision"] == rev
    assert obs["registers"] == c.call("state.get")
    assert obs["memory"] == [c.call("memory.read", w) for w in windows]
    assert obs["video_text"] == c.call("video.text")
    assert obs["video_memory"]["address"] == 0xB8000
    assert obs["video_memory"]["byte_count"] == 16384
    assert c.call("state.get")["state_revision"] == rev         # nothing advanced
    bare = c.call("state.observe", {"expected_state_revision": rev})
    assert set(bare) == {"state_revision", "registers", "memory"} and bare["memory"] == []


@pytest.mark.parametrize("extra, reason", [
    ({"memory": [{"address": 0, "length": 1}] * 17}, "LIMIT_EXCEEDED"),
    ({"memory": [{"address": 0, "length": 40000}, {"address": 0, "length": 40000}]},
     "LIMIT_EXCEEDED"),
    ({"memory": [{"address": 0, "length": 65537}]}, "LIMIT_EXCEEDED"),
    ({"memory": [{"address": 0xFFFFF, "length": 2}]}, "INVALID_PARAMS"),
    ({"memory": [{"address": 0, "length": 1, "x": 1}]}, "INVALID_PARAMS"),
    ({"video_text": {"page": 0, "display_address": 0}}, "INVALID_PARAMS"),
    ({"video_text": {"page": None, "display_address": None}}, "INVALID_PARAMS"),
    ({"video_text": {"lines": 3}}, "INVALID_PARAMS"),
    ({"video_memory": 1}, "INVALID_PARAMS"),
    ({"bogus": True}, "INVALID_PARAMS"),
])
def test_observe_rejections(c, extra, reason):
    pause(c)
    params = {"expected_state_revision": c.call("state.get")["state_revision"]}
    params.update(extra)
    rejected(c, "state.observe", params, reason)


def test_observe_guards(c):
    rev = c.call("state.get")["state_revision"]
    assert c.error("state.observe", {"expected_state_revision": rev})["data"]["reason"] \
        == "TARGET_NOT_PAUSED"
    pause(c)
    rev = c.call("state.get")["state_revision"]
    rejected(c, "state.observe", {"expected_state_revision": rev + 1}, "REVISION_MISMATCH")


# -- execution -----------------------------------------------------------------

def test_pause_when_stopped_is_read_only(c):
    first = pause(c)
    status = c.call("session.status")
    assert status["state"] == "stopped" and status["last_stop"]["kind"] == "pause"
    again = pause(c)
    assert again == first
    assert c.call("session.status") == status


def test_continue_pause_and_wait(c):
    pause(c)
    op = c.call("execution.continue")
    assert op["state"] == "running" and op["paused"] is False
    assert op["operation_id"].startswith("op-")
    assert c.call("session.status")["last_stop"] is None
    err = c.error("execution.go")
    assert err["data"]["reason"] == "TARGET_RUNNING"
    assert c.call("execution.wait", {"operation_id": op["operation_id"]}) == {"running": True}
    stopped = pause(c)
    done = c.call("execution.wait", {"operation_id": op["operation_id"], "timeout_ms": 10})
    assert done["state"] == "stopped" and done["stop_reason"]["kind"] == "pause"
    stopped.pop("paused")
    assert done["stop_reason"]["registers"] == stopped
    go = c.call("execution.go")
    assert go["operation_id"] != op["operation_id"]
    pause(c)


def test_continue_while_running_without_an_operation(c):
    op = c.call("execution.continue")
    assert op["state"] == "running"
    pause(c)


def test_wait_blocks_until_another_client_pauses(fx, c):
    import threading
    other = fx.client()
    pause(c)
    op = c.call("execution.continue")["operation_id"]
    timer = threading.Timer(0.2, lambda: other.call("execution.pause"))
    timer.start()
    done = c.call("execution.wait", {"operation_id": op, "timeout_ms": 20000})
    timer.join()
    assert done["state"] == "stopped" and done["stop_reason"]["kind"] == "pause"


def test_wait_times_out_as_running(c):
    pause(c)
    op = c.call("execution.continue")["operation_id"]
    assert c.call("execution.wait", {"operation_id": op, "timeout_ms": 30}) == {"running": True}
    pause(c)


@pytest.mark.parametrize("params, reason", [
    ({"operation_id": "op-999"}, "NOT_FOUND"),
    ({"operation_id": "op-1", "timeout_ms": 60001}, "INVALID_PARAMS"),
    ({"operation_id": "op-1", "timeout_ms": -1}, "INVALID_PARAMS"),
    ({"operation_id": 1}, "INVALID_PARAMS"),
    ({}, "INVALID_PARAMS"),
])
def test_wait_rejections(c, params, reason):
    pause(c)
    op = c.call("execution.step")["operation_id"]
    c.call("execution.wait", {"operation_id": op})
    rejected(c, "execution.wait", params, reason)


def test_step_runs_one_instruction(c):
    regs = load_program(c)
    assert regs["segments"]["cs"] == PROGRAM_SEG and regs["ip"] == 0
    ack = c.call("execution.step", {"mode": "into"})
    assert ack["stepping"] is True and "state" not in ack
    assert ack["ip"] == 0 and ack["state_revision"] == regs["state_revision"]
    done = c.call("execution.wait", {"operation_id": ack["operation_id"]})
    stop = done["stop_reason"]
    assert stop["kind"] == "step"
    assert stop["registers"]["ip"] == 3 and stop["registers"]["general"]["ax"] == 0x1234
    assert stop["registers"]["state_revision"] == regs["state_revision"] + 1
    assert c.call("session.status")["last_stop"] == stop
    for _ in range(2):
        op = c.call("execution.step")["operation_id"]
        c.call("execution.wait", {"operation_id": op})
    assert c.call("memory.read", {"address": (PROGRAM_SEG << 4) + 0x200,
                                  "length": 2})["data_hex"] == "3512"


def test_step_rejections(c):
    assert c.error("execution.step")["data"]["reason"] == "TARGET_NOT_PAUSED"
    pause(c)
    rejected(c, "execution.step", {"mode": "sideways"}, "INVALID_PARAMS")
    rejected(c, "execution.step", {"mode": "into", "count": 2}, "INVALID_PARAMS")


def test_a_step_runs_before_the_next_request(fx, c):
    """A step and a pause in one packet: the step has run before the pause
    is served (no request ever finds a step pending), so the pause is
    read-only and the operation is a completed step."""
    import json
    pause(c)
    c.send_raw(b"".join(json.dumps({"jsonrpc": "2.0", "id": i, "method": m}).encode() + b"\n"
                        for i, m in ((101, "execution.step"), (102, "execution.pause"))))
    ack, paused = c.read_reply(), c.read_reply()
    assert ack["id"] == 101 and paused["id"] == 102
    done = c.call("execution.wait", {"operation_id": ack["result"]["operation_id"]})
    assert done["stop_reason"]["kind"] == "step"
    assert c.call("session.status")["last_stop"] == done["stop_reason"]
    regs = dict(paused["result"])
    regs.pop("paused")
    assert regs == done["stop_reason"]["registers"]


# -- video history -------------------------------------------------------------

def test_video_history_journals_text_ports_and_modes(c):
    pause(c)
    start = c.call("video.history.start", {"capacity": 100})
    assert start["history_id"] == "video-1" and start["first_sequence"] == 1
    vram = base64.b64decode(start["vram_base64"])
    assert hashlib.sha256(vram).hexdigest() == start["vram_sha256"]
    assert vram == base64.b64decode(c.call("memory.read", {
        "address": "0xB8000", "length": 16384})["data_base64"])
    c.call("memory.write", {"address": "0xB8000", "data_base64": base64.b64encode(b"Hi").decode()})
    c.call("io.write", {"port": "0x3D9", "value": 2})
    c.call("io.write", {"port": "0x3D8", "value": 0x28})       # 40 columns
    page = c.call("video.history.read", {"history_id": "video-1", "cursor": None})
    kinds = [(e["kind"], e["address"], e["old"], e["new"]) for e in page["events"]]
    assert kinds[0] == ("text", 0, vram[0], ord("H"))
    assert kinds[1] == ("text", 1, vram[1], ord("i"))
    assert kinds[2] == ("port", 0x3D9, 1, 2)
    assert kinds[3] == ("port", 0x3D8, 1, 0x28)
    assert kinds[4][0] == "mode" and kinds[4][2] == 40
    assert [e["sequence"] for e in page["events"]] == [1, 2, 3, 4, 5]
    assert page["next_cursor"] is None and page["next_sequence"] == 6
    assert page["lost_events"] == 0 and page["active"] is True
    two = c.call("video.history.read", {"cursor": 0, "limit": 2})
    assert [e["sequence"] for e in two["events"]] == [1, 2] and two["next_cursor"] == 2
    assert c.call("video.history.read", {"cursor": 5})["events"] == []
    stopped = c.call("video.history.stop", {"history_id": "video-1"})
    assert stopped == {"history_id": "video-1", "events": 5, "lost_events": 0}
    c.call("io.write", {"port": "0x3D9", "value": 3})
    assert len(c.call("video.history.read")["events"]) == 5      # still readable
    c.call("io.write", {"port": "0x3D8", "value": 0x29})


def test_video_history_sees_the_guest_print(c):
    pause(c)
    c.call("video.history.start", {})
    # a guest loop printing 'A'..'J' at the top-left cell, one after the other
    code = bytes([0xB8, 0x00, 0xB8, 0x8E, 0xC0, 0xB0, 0x41,    # mov ax,B800 / mov es,ax / mov al,'A'
                  0x26, 0xA2, 0x00, 0x00,                      # mov es:[0],al
                  0xFE, 0xC0, 0x3C, 0x4B, 0x75, 0xF6,          # inc al / cmp al,'K' / jne
                  0xEB, 0xFE])                                 # jmp $
    c.call("memory.write", {"address": 0x20000, "data_base64": base64.b64encode(code).decode()})
    r = c.call("state.get")
    c.call("state.set_registers", {"expected_state_revision": r["state_revision"],
                                   "expected": {"cs": r["segments"]["cs"], "ip": r["ip"]},
                                   "set": {"cs": 0x2000, "ip": 0}})
    for _ in range(40):
        op = c.call("execution.step")["operation_id"]
        c.call("execution.wait", {"operation_id": op})
    text = [e["new"] for e in c.call("video.history.read")["events"]
            if e["kind"] == "text" and e["address"] == 0]
    assert text == list(range(ord("A"), ord("K")))     # every character, in order


def test_video_history_rejections(c):
    pause(c)
    for method in ("video.history.read", "video.history.stop"):
        assert c.error(method, {})["data"]["reason"] == "PRECONDITION_FAILED"
    assert c.error("video.history.start", {"capacity": 1_000_001})["data"]["reason"] == \
        "LIMIT_EXCEEDED"
    c.call("video.history.start", {"capacity": 2})
    c.call("memory.write", {"address": "0xB8000", "data_base64": "QUJDRA=="})
    page = c.call("video.history.read")
    assert page["lost_events"] == 2 and page["first_available_sequence"] == 3
    assert c.error("video.history.read", {"cursor": 0})["data"]["reason"] == "CURSOR_EXPIRED"
    assert c.error("video.history.read", {"history_id": "video-9"})["data"]["reason"] == \
        "NOT_FOUND"
    assert c.error("video.history.read", {"limit": 4097})["data"]["reason"] == "LIMIT_EXCEEDED"


def test_vga_snapshot_has_the_font_and_graphics_planes():
    f = RpcFixture(plugins=["vga"])
    try:
        c = f.client()
        c.call("execution.pause")
        snap = c.call("video.snapshot")
        assert snap["adapter"] == "VGA" and snap["vram"]["byte_count"] == 32768
        assert snap["font"]["byte_count"] == 65536 and "graphics_vram" not in snap
        assert "cursor" in snap
        font = c.call("video.snapshot.read", {"snapshot_id": snap["snapshot_id"],
                                              "component": "font", "length": 65536})
        assert font["component_sha256"] == snap["font"]["sha256"]
        assert c.call("video.text")["adapter"] == "VGA"
        # mode 13h through the card's own BIOS: INT 10h AX=0013h at a boundary
        code = bytes([0xB8, 0x13, 0x00, 0xCD, 0x10, 0xB8, 0x00, 0xA0, 0x8E, 0xC0,
                      0x26, 0xC6, 0x06, 0x05, 0x00, 0x2A,      # mov byte es:[5], 2Ah
                      0xEB, 0xFE])
        c.call("memory.write", {"address": 0x20000,
                                "data_base64": base64.b64encode(code).decode()})
        r = c.call("state.get")
        c.call("state.set_registers", {"expected_state_revision": r["state_revision"],
                                       "expected": {"cs": r["segments"]["cs"], "ip": r["ip"]},
                                       "set": {"cs": 0x2000, "ip": 0}})
        c.call("breakpoints.create", {"address": {"space": "segmented", "segment": 0x2000,
                                                  "offset": 16}})
        op = c.call("execution.continue")["operation_id"]
        assert c.call("execution.wait", {"operation_id": op, "timeout_ms": 20000})[
            "stop_reason"]["kind"] == "breakpoint"
        snap = c.call("video.snapshot")
        assert snap["video_mode"] == 0x13
        assert snap["graphics_vram_layout"] == "chain4_guest_order"
        data = c.call("video.snapshot.read", {"snapshot_id": snap["snapshot_id"],
                                              "component": "graphics_vram", "offset": 0,
                                              "length": 8})
        assert base64.b64decode(data["data_base64"])[5] == 0x2A
    finally:
        f.close()


def test_observe_on_a_vga_reads_text_from_its_backing_and_refuses_planar_memory():
    f = RpcFixture(plugins=["vga"])
    try:
        c = f.client()
        c.call("execution.pause")
        rev = c.call("state.get")["state_revision"]
        obs = c.call("state.observe", {"expected_state_revision": rev, "memory": [
            {"address": "0xB8000", "length": 4000}, {"address": 0x400, "length": 16}],
            "video_memory": True})
        text = base64.b64decode(obs["video_memory"]["data_base64"])[:4000]
        assert base64.b64decode(obs["memory"][0]["data_base64"]) == text
        assert obs["memory"][0] == {**c.call("memory.read", {"address": "0xB8000",
                                                             "length": 4000}),
                                    "state_revision": rev}
        err = c.error("state.observe", {"expected_state_revision": rev,
                                        "memory": [{"address": "0xA0000", "length": 16}]})
        assert err["data"]["reason"] == "UNSUPPORTED"
        assert c.call("state.get")["state_revision"] == rev
    finally:
        f.close()
