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

from rpc_fixtures import server_fixture

SEG = 0x1000
LOOP = bytes([0xB8, 0x00, 0x00, 0x40, 0xA3, 0x00, 0x02, 0xCD, 0x60, 0xEB, 0xF8])


def seg(off):
    return {"space": "segmented", "segment": SEG, "offset": off}


fx = server_fixture()


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
    assert 0 <= lim["overshoot_ns"] < 50_000        # at most one instruction or IRQ entry late
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


# -- CPU trace -----------------------------------------------------------------

def test_cpu_trace_records_the_loop(c):
    c.call("memory.write", {"address": seg(0x200), "data_base64": "AAA="})
    out = c.call("trace.start", {"detail": "normal", "instruction_count": 40})
    assert out == {"active": True, "detail": "normal", "instruction_count": 40, "event_count": 0}
    assert c.error("trace.start", {})["data"]["reason"] == "PRECONDITION_FAILED"
    op = c.call("execution.continue")["operation_id"]
    import time
    end = time.monotonic() + 300
    while c.call("trace.read", {"limit": 1})["active"] and time.monotonic() < end:
        time.sleep(0.01)
    c.call("execution.pause")
    c.call("execution.wait", {"operation_id": op})
    page = c.call("trace.read", {"cursor": None, "limit": 16})
    assert page["event_count"] == 40 and page["active"] is False
    assert page["next_cursor"] == "trace-16" and len(page["events"]) == 16
    ev = page["events"]
    assert [e["sequence"] for e in ev] == list(range(16))
    first = ev[0]
    assert first["address"] == seg(0) and first["opcode_hex"].startswith("b80000")
    assert first["physical"] == 0x10000 and first["kind"] == "instruction"
    assert first["registers_after"]["general"]["ax"] == 0
    assert ev[1]["registers_before"] == first["registers_after"]
    assert all(e["clock_after"] == n["clock_before"] for e, n in zip(ev, ev[1:])
               if e["address"]["segment"] == n["address"]["segment"] == SEG
               and e["opcode_hex"][:2] != "cd")
    store = ev[2]                               # mov [0200h], ax
    assert store["address"] == seg(4)
    assert store["effects"] == [
        {"kind": "memory_write", "address": {"space": "linear", "offset": 0x10200},
         "byte_count": 1, "before_base64": "AA==", "after_base64": "AQ=="},
        {"kind": "memory_write", "address": {"space": "linear", "offset": 0x10201},
         "byte_count": 1, "before_base64": "AA==", "after_base64": "AA=="}]
    rest = c.call("trace.read", {"cursor": "trace-16", "limit": 256})
    assert len(rest["events"]) == 24 and "next_cursor" not in rest
    assert c.call("trace.stop") == {"active": False, "event_count": 40}
    assert c.call("trace.read", {"cursor": "trace-40"})["events"] == []


def test_cpu_trace_by_steps_and_detail(c):
    c.call("trace.start", {"detail": "csip", "instruction_count": 3})
    for _ in range(5):
        op = c.call("execution.step")["operation_id"]
        c.call("execution.wait", {"operation_id": op})
    page = c.call("trace.read")
    assert page["event_count"] == 3 and page["active"] is False
    assert [e["address"]["offset"] for e in page["events"]] == [0, 3, 4]
    assert all("registers_before" not in e for e in page["events"])
    c.call("trace.start", {"detail": "short", "instruction_count": 1})   # a new start replaces
    op = c.call("execution.step")["operation_id"]
    c.call("execution.wait", {"operation_id": op})
    ev = c.call("trace.read")["events"][0]
    assert "registers_before" in ev and "registers_after" not in ev


@pytest.mark.parametrize("method, params, reason", [
    ("trace.start", {"detail": "verbose"}, "INVALID_PARAMS"),
    ("trace.start", {"instruction_count": 65537}, "LIMIT_EXCEEDED"),
    ("trace.start", {"instruction_count": 0}, "INVALID_PARAMS"),
    ("trace.read", {}, "PRECONDITION_FAILED"),
    ("trace.stop", {}, "PRECONDITION_FAILED"),
])
def test_cpu_trace_rejections(c, method, params, reason):
    assert c.error(method, params)["data"]["reason"] == reason


def test_cpu_trace_cursor_rules(c):
    c.call("trace.start", {"instruction_count": 2})
    for params in ({"cursor": "trace-3"}, {"cursor": "bogus"}, {"limit": 257}, {"limit": 0}):
        assert c.error("trace.read", params)["code"] == -32602
    c.call("execution.continue")
    assert c.error("trace.start", {})["data"]["reason"] == "TARGET_NOT_PAUSED"
    c.call("execution.pause")


# -- hardware trace ------------------------------------------------------------

def test_hardware_trace_of_port_io_and_irqs(c):
    meta = c.call("hardware.trace.start", {"capacity": 16})
    assert meta == {"active": True, "capacity": 16, "dropped_event_count": 0,
                    "first_available_sequence": 1}
    c.call("io.write", {"port": "0x3D9", "value": 7})
    c.call("io.read", {"port": "0x3DA"})
    page = c.call("hardware.trace.read", {"cursor": None, "limit": 10})
    assert [(e["kind"], e["port"], e["sequence"]) for e in page["events"]] == \
        [("io_write", 0x3D9, 1), ("io_read", 0x3DA, 2)]
    assert page["events"][0]["value"] == 7 and page["next_cursor"] == "hardware-2"
    # the guest's timer interrupts (IRQ0) arrive while it runs
    op = c.call("execution.run_until", {"max_emulated_ns": 1_000_000_000})["operation_id"]
    c.call("execution.wait", {"operation_id": op, "timeout_ms": 20000})
    first = c.call("hardware.trace.read", {"limit": 1})["first_available_sequence"]
    page = c.call("hardware.trace.read", {"cursor": f"hardware-{first - 1}", "limit": 65536})
    kinds = {e["kind"] for e in page["events"]}
    assert {"irq_raise", "irq_dispatch"} <= kinds
    dispatch = next(e for e in page["events"] if e["kind"] == "irq_dispatch")
    assert dispatch["irq"] == 0 and dispatch["vector"] == 8
    assert page["dropped_event_count"] > 0                    # 16 is small: it wrapped
    assert page["first_available_sequence"] > 1
    err = c.error("hardware.trace.read", {"cursor": "hardware-1"})
    assert err["data"]["reason"] == "CURSOR_EXPIRED"
    stopped = c.call("hardware.trace.stop")
    assert stopped["active"] is False
    n = c.call("hardware.trace.read", {"limit": 65536})
    c.call("io.read", {"port": "0x3DA"})
    assert c.call("hardware.trace.read", {"limit": 65536})["events"] == n["events"]


def test_hardware_trace_filters(c):
    c.call("hardware.trace.start", {"include_irq": False,
                                    "ports": [{"first": "0x3d8", "last": "0x3d9"}]})
    c.call("io.write", {"port": 0x3D9, "value": 1})
    c.call("io.write", {"port": 0x3D4, "value": 1})
    c.call("io.read", {"port": 0x3D8})
    assert [e["port"] for e in c.call("hardware.trace.read")["events"]] == [0x3D9, 0x3D8]
    c.call("hardware.trace.start", {"include_io": False, "irqs": [1]})
    op = c.call("execution.run_until", {"max_emulated_ns": 100_000_000})["operation_id"]
    c.call("execution.wait", {"operation_id": op, "timeout_ms": 20000})
    assert c.call("hardware.trace.read")["events"] == []        # no keyboard IRQ
    c.call("hardware.trace.stop")


@pytest.mark.parametrize("method, params, reason", [
    ("hardware.trace.start", {"include_io": False, "include_irq": False}, "INVALID_PARAMS"),
    ("hardware.trace.start", {"capacity": 65537}, "LIMIT_EXCEEDED"),
    ("hardware.trace.start", {"capacity": 0}, "INVALID_PARAMS"),
    ("hardware.trace.start", {"irqs": [16]}, "INVALID_PARAMS"),
    ("hardware.trace.start", {"ports": [{"first": 5, "last": 4}]}, "INVALID_PARAMS"),
    ("hardware.trace.read", {}, "PRECONDITION_FAILED"),
    ("hardware.trace.stop", {}, "PRECONDITION_FAILED"),
])
def test_hardware_trace_rejections(c, method, params, reason):
    assert c.error(method, params)["data"]["reason"] == reason
