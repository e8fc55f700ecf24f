"""Breakpoints, run-until predicates, deadlines and steps over the RPC,
on a guest loop written here (loaded through memory.write)::

    1000:0000  B8 00 00    mov ax, 0
    1000:0003  40          inc ax            <- loop
    1000:0004  A3 00 02    mov [0200h], ax   (DS = 1000h: linear 10200h)
    1000:0007  CD 60       int 60h           (vector 60h -> 1000:0100, IRET)
    1000:0009  EB F8       jmp 0003
    1000:0100  CF          iret
"""

import base64

import pytest

from rpc_client import RpcFixture

SEG = 0x1000
LOOP = bytes([0xB8, 0x00, 0x00, 0x40, 0xA3, 0x00, 0x02, 0xCD, 0x60, 0xEB, 0xF8])


def seg(off):
    return {"space": "segmented", "segment": SEG, "offset": off}


@pytest.fixture
def fx():
    f = RpcFixture()
    yield f
    f.close()


@pytest.fixture
def c(fx):
    c = fx.client()
    c.call("execution.pause")
    b64 = lambda data: base64.b64encode(data).decode()
    c.call("memory.write", {"address": seg(0), "data_base64": b64(LOOP)})
    c.call("memory.write", {"address": seg(0x100), "data_base64": b64(b"\xCF")})
    c.call("memory.write", {"address": 0x60 * 4, "data_base64": b64(bytes([0, 1, 0, 0x10]))})
    r = c.call("state.get")
    c.call("state.set_registers", {
        "expected_state_revision": r["state_revision"],
        "expected": {"cs": r["segments"]["cs"], "ip": r["ip"], "ds": r["segments"]["ds"],
                     "ss": r["segments"]["ss"], "sp": r["general"]["sp"]},
        "set": {"cs": SEG, "ip": 0, "ds": SEG, "ss": 0x2000, "sp": 0x1000}})
    return c


def run_to_stop(c, method="execution.continue", params=None):
    op = c.call(method, params)["operation_id"]
    done = c.call("execution.wait", {"operation_id": op, "timeout_ms": 20000})
    assert done["state"] == "stopped", done
    return done["stop_reason"]


def test_execution_breakpoint_stops_every_iteration(c):
    bp = c.call("breakpoints.create", {"address": seg(4)})
    assert bp == {"breakpoint_id": "bp-1", "kind": "execution", "once": False,
                  "hit_filter": {"skip": 0, "every": 1}, "hit_count": 0,
                  "address": seg(4), "length": 1}
    for n in range(1, 6):
        stop = run_to_stop(c)
        assert stop["kind"] == "breakpoint" and stop["breakpoint_id"] == "bp-1"
        assert stop["address"] == seg(4) and stop["hit_count"] == n
        regs = stop["registers"]
        assert (regs["segments"]["cs"], regs["ip"], regs["general"]["ax"]) == (SEG, 4, n)
        assert c.call("session.status")["last_stop"] == stop
    assert c.call("breakpoints.list")["breakpoints"][0]["hit_count"] == 5


def test_hit_filter_counts_every_match_across_slices(c):
    """skip 3000 then every 2: the stops come at the 3001st and 3003rd pass
    exactly, so no pass was let through uncounted at a slice boundary."""
    c.call("breakpoints.create", {"address": seg(3), "hit_filter": {"skip": 3000, "every": 2}})
    stop = run_to_stop(c)
    assert stop["hit_count"] == 3001 and stop["registers"]["general"]["ax"] == 3000
    stop = run_to_stop(c)
    assert stop["hit_count"] == 3003 and stop["registers"]["general"]["ax"] == 3002


def test_condition_and_once(c):
    bp = c.call("breakpoints.create", {
        "kind": "execution", "address": {"space": "linear", "offset": "0x10004"},
        "once": True, "condition": {"register": "ax", "operator": "eq", "value": "0x0010"}})
    assert bp["condition"] == {"register": "ax", "operator": "eq", "value": 16}
    stop = run_to_stop(c)
    assert stop["registers"]["general"]["ax"] == 16 and stop["hit_count"] == 1
    assert stop["address"] == {"space": "linear", "offset": 0x10004}
    assert c.call("breakpoints.list") == {"breakpoints": []}         # one-shot: gone


def test_segmented_breakpoint_matches_cs_ip_exactly(c):
    c.call("breakpoints.create", {"address": {"space": "segmented", "segment": "0x0FFF",
                                              "offset": "0x0014"}})    # same linear 10004h
    c.call("breakpoints.create", {"address": seg(9)})
    stop = run_to_stop(c)
    assert stop["breakpoint_id"] == "bp-2" and stop["registers"]["ip"] == 9


def test_memory_write_breakpoint(c):
    bp = c.call("breakpoints.create", {"kind": "memory_write",
                                       "address": {"space": "linear", "offset": 0x10200},
                                       "length": 2})
    assert bp["length"] == 2
    stop = run_to_stop(c)
    assert stop["kind"] == "breakpoint" and stop["length"] == 2
    acc = stop["access"]
    assert acc["kind"] == "memory_write" and acc["byte_count"] == 1
    assert acc["address"] == {"space": "linear", "offset": 0x10200}
    assert acc["instruction_address"] == seg(4)
    assert acc["new_value"] == 1 and "old_value" in acc
    assert stop["registers"]["ip"] == 7                  # after the instruction


def test_memory_read_breakpoint_on_the_vector(c):
    c.call("breakpoints.create", {"kind": "memory_access",
                                  "address": {"space": "linear", "offset": 0x180}, "length": 4})
    stop = run_to_stop(c)
    acc = stop["access"]
    assert acc["kind"] == "memory_read" and acc["old_value"] == acc["new_value"]
    assert 0x180 <= acc["address"]["offset"] < 0x184


def test_interrupt_breakpoint_before_the_handler(c):
    bp = c.call("breakpoints.create", {"kind": "interrupt",
                                       "event": {"type": "software_interrupt", "number": "0x60"}})
    assert bp["event"] == {"type": "software_interrupt", "number": 0x60}
    assert "address" not in bp
    stop = run_to_stop(c)
    assert stop["event"] == {"type": "software_interrupt", "phase": "before_handler",
                             "number": 0x60, "ah": 0, "al": 1}
    assert stop["registers"]["ip"] == 7 and "address" not in stop
    stop = run_to_stop(c)                                # resuming lets this INT through
    assert stop["event"]["al"] == 2 and stop["hit_count"] == 2


def test_interrupt_breakpoint_ah_filter(c):
    c.call("breakpoints.create", {"kind": "interrupt",
                                  "event": {"type": "software_interrupt", "number": 0x60,
                                            "ah": 1}})
    c.call("breakpoints.create", {"address": seg(9), "condition": {
        "register": "ax", "operator": "ge", "value": 0x180}})
    stop = run_to_stop(c)
    assert stop["event"]["ah"] == 1 and stop["registers"]["general"]["ax"] == 0x100


def test_delete(c):
    bp = c.call("breakpoints.create", {"address": seg(4)})
    assert c.call("breakpoints.delete", {"breakpoint_id": bp["breakpoint_id"]}) == \
        {"breakpoint_id": "bp-1", "deleted": True}
    assert c.call("breakpoints.list") == {"breakpoints": []}
    err = c.error("breakpoints.delete", {"breakpoint_id": "bp-1"})
    assert err["data"]["reason"] == "NOT_FOUND"


@pytest.mark.parametrize("params", [
    {"kind": "memory_write", "address": seg(0), "condition": {
        "register": "ax", "operator": "eq", "value": 1}},
    {"kind": "memory_read", "address": {"space": "physical", "offset": 0}},
    {"kind": "execution", "address": "0x10004"},
    {"kind": "execution"},
    {"kind": "watch", "address": seg(0)},
    {"kind": "interrupt"},
    {"kind": "interrupt", "event": {"number": 256}},
    {"kind": "interrupt", "event": {"number": 1}, "address": seg(0)},
    {"address": seg(0), "hit_filter": {"every": 0}},
    {"address": seg(0), "condition": {"register": "eax", "operator": "eq", "value": 1}},
    {"address": seg(0), "condition": {"register": "ax", "operator": "like", "value": 1}},
    {"address": seg(0), "once": "yes"},
    {"kind": "memory_write", "address": {"space": "linear", "offset": 0xFFFFF}, "length": 2},
    {"address": seg(0), "length": 2},
])
def test_bad_breakpoints_change_nothing(c, params):
    before = c.call("breakpoints.list")
    rev = c.call("state.get")["state_revision"]
    err = c.error("breakpoints.create", params)
    assert err["code"] == -32602
    assert c.call("breakpoints.list") == before
    assert c.call("state.get")["state_revision"] == rev
    assert len(c_machine_bps(c)) == 0


def c_machine_bps(c):
    return c.call("breakpoints.list")["breakpoints"]


def test_run_until_predicate_is_private_and_one_shot(c):
    c.call("breakpoints.create", {"address": seg(0x100)})     # never reached first
    out = c.call("execution.run_until", {"predicate": {"address": seg(9), "condition": {
        "register": "ax", "operator": "eq", "value": 3}}})
    assert out["state"] == "running" and out["predicate_id"] == "until-1"
    assert [b["breakpoint_id"] for b in c.call("breakpoints.list")["breakpoints"]] == ["bp-1"]
    done = c.call("execution.wait", {"operation_id": out["operation_id"], "timeout_ms": 20000})
    stop = done["stop_reason"]
    assert stop["kind"] == "breakpoint" and stop["breakpoint_id"] == "bp-1"   # the IRET came first
    assert c.call("breakpoints.list")["breakpoints"][0]["breakpoint_id"] == "bp-1"
    c.call("breakpoints.delete", {"breakpoint_id": "bp-1"})
    out = c.call("execution.run_until", {"predicate": {"address": seg(9), "condition": {
        "register": "ax", "operator": "eq", "value": 3}}})
    assert out["predicate_id"] == "until-2"
    done = c.call("execution.wait", {"operation_id": out["operation_id"], "timeout_ms": 20000})
    assert done["stop_reason"]["kind"] == "run_until"
    assert done["stop_reason"]["predicate_id"] == "until-2"


def test_run_until_hits_its_predicate(c):
    out = c.call("execution.run_until", {"predicate": {"kind": "execution", "address": seg(9),
                                                       "condition": {"register": "ax",
                                                                     "operator": "eq",
                                                                     "value": 7}}})
    done = c.call("execution.wait", {"operation_id": out["operation_id"], "timeout_ms": 20000})
    stop = done["stop_reason"]
    assert stop["kind"] == "run_until" and stop["predicate_id"] == out["predicate_id"]
    assert stop["registers"]["general"]["ax"] == 7 and stop["registers"]["ip"] == 9
    assert stop["address"] == seg(9)
    assert c.call("breakpoints.list") == {"breakpoints": []}
    # the predicate is gone: continuing runs on
    op = c.call("execution.continue")["operation_id"]
    assert c.call("execution.wait", {"operation_id": op, "timeout_ms": 50}) == {"running": True}
    c.call("execution.pause")


def test_run_until_deadline(c):
    start = c.call("state.get")["clock"]
    out = c.call("execution.run_until", {"max_emulated_ns": "1000000"})    # 1 ms
    done = c.call("execution.wait", {"operation_id": out["operation_id"], "timeout_ms": 20000})
    stop = done["stop_reason"]
    assert stop["kind"] == "emulated_time_limit"
    lim = stop["emulated_time_limit"]
    assert lim["requested_duration_ns"] == 1_000_000
    assert lim["deadline_emulated_time_ns"] == lim["start_emulated_time_ns"] + 1_000_000
    assert lim["start_emulated_time_ns"] == start * 10 ** 9 // 4_770_000
    assert lim["reached"] is True
    assert lim["actual_stop_emulated_time_ns"] == stop["emulated_time_ns"]
    assert 0 <= lim["overshoot_ns"] < 10_000        # at most one instruction late
    assert stop["registers"]["clock"] >= start + 4770


def test_breakpoint_wins_over_a_far_deadline(c):
    out = c.call("execution.run_until", {"predicate": {"kind": "memory_write",
                                                       "address": seg(0x200)},
                                         "max_emulated_ns": 10 ** 12})
    done = c.call("execution.wait", {"operation_id": out["operation_id"], "timeout_ms": 20000})
    assert done["stop_reason"]["kind"] == "run_until"
    assert done["stop_reason"]["access"]["kind"] == "memory_write"


@pytest.mark.parametrize("params, reason", [
    ({"predicate": {"address": seg(9), "once": True}}, "INVALID_PARAMS"),
    ({}, "INVALID_PARAMS"),
    ({"max_emulated_ns": 0}, "INVALID_PARAMS"),
    ({"max_emulated_ns": 2 ** 64}, "INVALID_PARAMS"),
    ({"predicate": {"kind": "memory_read", "address": seg(0),
                    "condition": {"register": "ax", "operator": "eq", "value": 1}}},
     "INVALID_PARAMS"),
])
def test_run_until_rejections(c, params, reason):
    rev = c.call("state.get")["state_revision"]
    err = c.error("execution.run_until", params)
    assert err["data"]["reason"] == reason
    assert c.call("session.status")["state"] == "stopped"
    assert c.call("state.get")["state_revision"] == rev


def test_run_until_needs_a_paused_machine(c):
    c.call("execution.continue")
    err = c.error("execution.run_until", {"max_emulated_ns": 1000})
    assert err["data"]["reason"] == "TARGET_NOT_PAUSED"
    c.call("execution.pause")


def test_step_reports_a_memory_breakpoint_of_its_instruction(c):
    c.call("breakpoints.create", {"kind": "memory_write", "address": seg(0x200), "length": 2})
    kinds = []
    for _ in range(3):
        op = c.call("execution.step")["operation_id"]
        kinds.append(c.call("execution.wait", {"operation_id": op})["stop_reason"]["kind"])
    assert kinds == ["step", "step", "breakpoint"]


def test_pause_during_run_until_clears_the_predicate(c):
    out = c.call("execution.run_until", {"predicate": {"address": seg(0x50)}})  # never reached
    stopped = c.call("execution.pause")
    done = c.call("execution.wait", {"operation_id": out["operation_id"]})
    assert done["stop_reason"]["kind"] == "pause"
    stopped.pop("paused")
    assert done["stop_reason"]["registers"] == stopped
    assert c.call("breakpoints.list") == {"breakpoints": []}
