"""Conformance audit of the JSON-RPC server against the contract
(../shared/spec/003_ef4d7f3b1308ed08.txt), second half: breakpoints,
execution control, CPU and hardware traces, serial, machine snapshots and the
portability table -- statements the other RPC tests do not check yet.  Each
test cites the contract line ("C<line>") or the compatibility note
("COMPAT <section>") it checks, over a real server and socket.

Guest programs are written into RAM with memory.write (segment 1000h, stack
2000:1000h, interrupts off unless a test says otherwise)."""

import base64
import hashlib
import os
import time
import zipfile

import pytest

from pypc_core.plugins import DEVICE_GROUP, PluginManager
from rpc_client import RpcFixture
from rpc_fixtures import c, server_fixture  # noqa: F401  (c: a fixture)

SEG = 0x1000
STACK_SEG, STACK_TOP = 0x2000, 0x1000
REGISTER_KEYS = {"general", "segments", "ip", "flags", "flags_text", "clock", "in_hlt",
                 "state_revision"}
AVAILABLE = set(PluginManager().available(DEVICE_GROUP))

# the loop of test_rpc_debugging, with its INT 60h handler (an IRET at 1000:0100)
#   1000:0000  B8 00 00    mov ax, 0
#   1000:0003  40          inc ax            <- loop
#   1000:0004  A3 00 02    mov [0200h], ax
#   1000:0007  CD 60       int 60h
#   1000:0009  EB F8       jmp 0003
LOOP = bytes.fromhex("B80000 40 A30002 CD60 EBF8")


def seg(off):
    return {"space": "segmented", "segment": SEG, "offset": off}


def b64(data):
    return base64.b64encode(data).decode()


def load(c, code, flags=0x0002, at=0, ip=None):
    """Pause, write ``code`` at 1000:``at``, an IRET at 1000:0100 as the
    handler of INT 60h and INT 1, and point CS:IP (DS = CS) at it."""
    c.call("execution.pause")
    c.call("memory.write", {"address": seg(at), "data_base64": b64(code)})
    c.call("memory.write", {"address": seg(0x100), "data_base64": b64(b"\xCF")})
    c.call("memory.write", {"address": 0x60 * 4, "data_base64": b64(bytes([0, 1, 0, 0x10]))})
    c.call("memory.write", {"address": 1 * 4, "data_base64": b64(bytes([0, 1, 0, 0x10]))})
    r = c.call("state.get")
    return c.call("state.set_registers", {
        "expected_state_revision": r["state_revision"],
        "expected": {"cs": r["segments"]["cs"], "ip": r["ip"], "ds": r["segments"]["ds"],
                     "ss": r["segments"]["ss"], "sp": r["general"]["sp"],
                     "flags": r["flags"]},
        "set": {"cs": SEG, "ip": at if ip is None else ip, "ds": SEG, "ss": STACK_SEG,
                "sp": STACK_TOP, "flags": flags}})["after"]


def wait(c, op, timeout_ms=20000):
    done = c.call("execution.wait", {"operation_id": op, "timeout_ms": timeout_ms})
    assert done["state"] == "stopped", done
    return done["stop_reason"]


def run_to_stop(c, method="execution.continue", params=None):
    return wait(c, c.call(method, params)["operation_id"])


def step(c, params=None):
    return wait(c, c.call("execution.step", params)["operation_id"])


def ip_of(stop):
    return stop["registers"]["ip"]


fx = server_fixture()


# -- breakpoints.create / list / delete (C401-C427) -----------------------------

def test_physical_execution_breakpoint_descriptor_and_match(c):
    # C403: execution addresses may be physical; COMPAT Breakpoints: a
    # physical one matches the physical address, whatever CS:IP names it
    load(c, LOOP)
    bp = c.call("breakpoints.create", {"kind": "execution",
                                       "address": {"space": "physical", "offset": "0x10009"}})
    assert bp["address"] == {"space": "physical", "offset": 0x10009} and bp["length"] == 1
    stop = run_to_stop(c)
    assert stop["kind"] == "breakpoint" and stop["address"] == bp["address"]
    assert (stop["registers"]["segments"]["cs"], ip_of(stop)) == (SEG, 9)


def test_memory_breakpoint_descriptor_is_normalised(c):
    # C413 "The result is the normalized breakpoint descriptor"; COMPAT
    # Breakpoints: {breakpoint_id, kind, once, hit_filter, hit_count, address,
    # length}, values as integers, no condition when none was set
    c.call("execution.pause")
    bp = c.call("breakpoints.create", {"kind": "memory_read", "address": {
        "space": "segmented", "segment": "0x1000", "offset": "0x0200"}, "length": "0x2"})
    assert bp == {"breakpoint_id": bp["breakpoint_id"], "kind": "memory_read", "once": False,
                  "hit_filter": {"skip": 0, "every": 1}, "hit_count": 0,
                  "address": seg(0x200), "length": 2}
    assert c.call("breakpoints.list")["breakpoints"] == [bp]


@pytest.mark.parametrize("length, ok", [(0, False), (-1, False), (1 << 20, True)])
def test_memory_breakpoint_length_is_positive_within_1mib(c, length, ok):
    # C413: "a positive contiguous length within the 1 MiB address space"
    c.call("execution.pause")
    params = {"kind": "memory_write", "address": {"space": "linear", "offset": 0},
              "length": length}
    if ok:
        bp = c.call("breakpoints.create", params)
        assert bp["length"] == length
        c.call("breakpoints.delete", {"breakpoint_id": bp["breakpoint_id"]})
    else:
        assert c.error("breakpoints.create", params)["code"] == -32602
    assert c.call("breakpoints.list") == {"breakpoints": []}


def test_a_one_shot_breakpoint_is_removed_only_when_it_stops(c):
    # C413: hit_count counts matches, skip suppresses the first ones, and "A
    # one-shot breakpoint is removed when it stops execution" (not on a
    # suppressed match)
    load(c, LOOP)
    c.call("breakpoints.create", {"address": seg(4), "once": True,
                                  "hit_filter": {"skip": 2, "every": 1}})
    stop = run_to_stop(c)
    assert stop["hit_count"] == 3 and stop["registers"]["general"]["ax"] == 3
    assert c.call("breakpoints.list") == {"breakpoints": []}


def test_interrupt_breakpoint_with_a_register_condition(c):
    # C413: "Interrupt conditions use the same register operators as
    # execution breakpoints"; the stop reports the actual AH/AL
    load(c, LOOP)
    bp = c.call("breakpoints.create", {
        "kind": "interrupt", "event": {"type": "software_interrupt", "number": "0x60"},
        "condition": {"register": "ax", "operator": "gt", "value": "4"}})
    assert bp["condition"] == {"register": "ax", "operator": "gt", "value": 4}
    assert bp["event"] == {"type": "software_interrupt", "number": 0x60}
    stop = run_to_stop(c)
    assert stop["kind"] == "breakpoint" and stop["hit_count"] == 1
    assert stop["event"] == {"type": "software_interrupt", "phase": "before_handler",
                             "number": 0x60, "ah": 0, "al": 5}
    assert ip_of(stop) == 7                         # before dispatch: at the INT


def test_interrupt_breakpoint_al_selector(c):
    # COMPAT Breakpoints/Stop reasons: an interrupt event may select AH and AL
    load(c, LOOP)
    c.call("breakpoints.create", {"kind": "interrupt", "event": {
        "type": "software_interrupt", "number": 0x60, "ah": 0, "al": "0x03"}})
    stop = run_to_stop(c)
    assert stop["event"]["al"] == 3 and stop["registers"]["general"]["ax"] == 3


def test_resuming_after_a_memory_watchpoint_does_not_suppress_the_next_access(c):
    # C427: "Memory watchpoints stop after the access; resuming does not
    # suppress the next access" -- two stores in a row, two stops
    code = bytes.fromhex("A30002 A30002 EBFE")   # mov [200h],ax / mov [200h],ax / jmp $
    load(c, code)
    c.call("breakpoints.create", {"kind": "memory_write", "address": seg(0x200)})
    first = run_to_stop(c)
    assert first["access"]["instruction_address"] == seg(0) and ip_of(first) == 3
    second = run_to_stop(c)
    assert second["access"]["instruction_address"] == seg(3) and ip_of(second) == 6
    assert second["hit_count"] == 2


def test_resuming_from_a_step_onto_a_breakpoint_still_hits_it(c):
    # C427: only "an execution or pre-dispatch software-INT stop" is skipped
    # for one Tick on resuming; a step that lands on a breakpoint's address
    # has not been checked there yet, so continuing stops at once
    load(c, LOOP)
    c.call("breakpoints.create", {"address": seg(3)})
    assert ip_of(step(c)) == 3                      # mov ax, 0
    stop = run_to_stop(c)
    assert stop["kind"] == "breakpoint" and stop["hit_count"] == 1
    assert ip_of(stop) == 3 and stop["registers"]["general"]["ax"] == 0


def test_resuming_after_a_watchpoint_still_hits_an_execution_breakpoint_there(c):
    # C427: the watchpoint stop is after the store; the execution breakpoint
    # on the next instruction is checked when execution resumes
    load(c, LOOP)
    c.call("breakpoints.create", {"kind": "memory_write", "address": seg(0x200)})
    c.call("breakpoints.create", {"address": seg(7)})
    first = run_to_stop(c)
    assert first["breakpoint_id"] == "bp-1" and ip_of(first) == 7
    second = run_to_stop(c)
    assert second["breakpoint_id"] == "bp-2" and ip_of(second) == 7
    assert second["registers"]["general"]["ax"] == 1


# -- execution.pause / continue / go (C429-C448) --------------------------------

def test_pause_result_is_the_register_object_and_nothing_runs_after_it(c):
    # C433-C436: the register fields of state.get_registers plus paused:true;
    # C431: "no further CPU instruction is executed until a continue or step"
    out = c.call("execution.pause")
    assert set(out) == REGISTER_KEYS | {"paused"} and out["paused"] is True
    time.sleep(0.2)
    regs = c.call("state.get_registers")
    out.pop("paused")
    assert regs == out


def test_pause_when_stopped_keeps_the_breakpoint_resume_context(c):
    # C431: pause while stopped preserves "the last stop, operation results,
    # revision and breakpoint resume context"
    load(c, LOOP)
    c.call("breakpoints.create", {"address": seg(4)})
    op = c.call("execution.continue")["operation_id"]
    stop = wait(c, op)
    assert stop["registers"]["general"]["ax"] == 1
    c.call("execution.pause")
    c.call("execution.pause")
    assert c.call("session.status")["last_stop"] == stop
    assert c.call("execution.wait", {"operation_id": op}) == {"state": "stopped",
                                                              "stop_reason": stop}
    again = run_to_stop(c)                         # skips the breakpoint once, then the loop
    assert again["hit_count"] == 2 and again["registers"]["general"]["ax"] == 2


@pytest.mark.parametrize("method", ["execution.continue", "execution.go"])
def test_continue_result_is_the_register_object_plus_a_handle(c, method):
    # C440-C442, C448: the current register object with paused:false plus
    # operation_id and state:"running"; execution.go is an exact alias
    regs = load(c, LOOP)
    out = c.call(method)
    assert set(out) == REGISTER_KEYS | {"operation_id", "state", "paused"}
    assert out["state"] == "running" and out["paused"] is False
    assert out["operation_id"].startswith("op-")
    assert (out["segments"]["cs"], out["ip"]) == (SEG, 0)
    assert out["state_revision"] == regs["state_revision"]
    assert c.call("session.status")["state"] == "running"
    c.call("execution.pause")


def test_wait_keeps_an_operations_stop_after_later_stops(c):
    # C444: a breakpoint hit completes a continue's operation; C470: "Later
    # stops can change session.status.last_stop without changing this
    # operation's result"
    load(c, LOOP)
    c.call("breakpoints.create", {"address": seg(9)})
    op = c.call("execution.continue")["operation_id"]
    stop = wait(c, op)
    assert stop["kind"] == "breakpoint"
    later = step(c)                                # a later stop changes last_stop only
    assert c.call("session.status")["last_stop"] == later
    assert c.call("execution.wait", {"operation_id": op})["stop_reason"] == stop


def test_a_suppressed_match_at_the_resume_address_counts_once(c):
    # C413: "hit_count counts condition matches" -- judging the breakpoint at
    # CS:IP when resuming after a step must not count that pass twice
    load(c, LOOP)
    c.call("breakpoints.create", {"address": seg(3), "hit_filter": {"skip": 1, "every": 1}})
    assert ip_of(step(c)) == 3
    stop = run_to_stop(c)
    assert stop["hit_count"] == 2 and stop["registers"]["general"]["ax"] == 1


def test_a_step_onto_an_int_with_an_interrupt_breakpoint_stops_before_it(c):
    # C520 "subject to a breakpoint ... winning first"; COMPAT Execution: "A
    # memory or interrupt breakpoint in the same Tick wins" -- no Tick runs;
    # the next step resumes from that stop and executes the INT
    load(c, LOOP, ip=7)
    c.call("breakpoints.create", {"kind": "interrupt", "event": {"number": 0x60}})
    rev = c.call("state.get")["state_revision"]
    stop = step(c)
    assert stop["kind"] == "breakpoint" and stop["event"]["phase"] == "before_handler"
    assert ip_of(stop) == 7 and stop["registers"]["state_revision"] == rev
    stop = step(c)
    assert stop["kind"] == "step"
    assert (stop["registers"]["segments"]["cs"], ip_of(stop)) == (SEG, 0x100)
    assert c.call("breakpoints.list")["breakpoints"][0]["hit_count"] == 1


def test_a_step_executes_past_an_execution_breakpoint_at_cs_ip(c):
    # COMPAT Execution: only a memory or interrupt breakpoint wins over a step
    load(c, LOOP)
    c.call("breakpoints.create", {"address": seg(0)})
    stop = step(c)
    assert stop["kind"] == "step" and ip_of(stop) == 3


# -- execution.run_until / wait / step (C450-C522) -------------------------------

def test_run_until_result_has_exactly_its_three_fields(c):
    # C462: "The result contains operation_id, predicate_id, and state:"running""
    load(c, LOOP)
    out = c.call("execution.run_until", {"predicate": {"kind": "execution", "address": seg(9)}})
    assert set(out) == {"operation_id", "predicate_id", "state"}
    assert out["state"] == "running" and out["predicate_id"].startswith("until-")
    wait(c, out["operation_id"])


def test_run_until_interrupt_predicate_stop_shape(c):
    # C452 interrupt predicate; COMPAT Stop reasons: the matching breakpoint's
    # shape (event, hit_count, no address) with kind run_until and predicate_id
    load(c, LOOP)
    out = c.call("execution.run_until", {"predicate": {
        "kind": "interrupt", "event": {"type": "software_interrupt", "number": 0x60, "al": 2}}})
    stop = wait(c, out["operation_id"])
    assert set(stop) == {"kind", "breakpoint_id", "predicate_id", "event", "hit_count",
                         "registers"}
    assert stop["kind"] == "run_until" and stop["predicate_id"] == out["predicate_id"]
    assert stop["breakpoint_id"] == out["predicate_id"]
    assert stop["event"] == {"type": "software_interrupt", "phase": "before_handler",
                             "number": 0x60, "ah": 0, "al": 2}
    assert ip_of(stop) == 7


@pytest.mark.parametrize("kind, access", [("memory_read", "memory_read"),
                                          ("memory_write", "memory_write"),
                                          ("memory_access", "memory_write")])
def test_run_until_memory_predicate_stop_shape(c, kind, access):
    # C452 memory predicates; COMPAT Stop reasons: address, length, access
    code = bytes.fromhex("A10002 A30002 EBFE")   # mov ax,[200h] / mov [200h],ax / jmp $
    if kind == "memory_access":
        code = bytes.fromhex("90 A30002 EBFE")
    load(c, code)
    out = c.call("execution.run_until", {"predicate": {
        "kind": kind, "address": {"space": "linear", "offset": 0x10200}, "length": 2}})
    stop = wait(c, out["operation_id"])
    assert set(stop) == {"kind", "breakpoint_id", "predicate_id", "address", "length",
                         "hit_count", "access", "registers"}
    assert stop["address"] == {"space": "linear", "offset": 0x10200} and stop["length"] == 2
    assert stop["access"]["kind"] == access and stop["hit_count"] == 1
    assert c.call("breakpoints.list") == {"breakpoints": []}


def test_run_until_predicate_takes_a_hit_filter(c):
    # C452: "using the same fields as breakpoints.create"
    load(c, LOOP)
    out = c.call("execution.run_until", {"predicate": {
        "address": seg(4), "hit_filter": {"skip": 4, "every": 1}}})
    stop = wait(c, out["operation_id"])
    assert stop["hit_count"] == 5 and stop["registers"]["general"]["ax"] == 5


def test_deadline_stop_shape(c):
    # C462: "the stop kind is emulated_time_limit and the stop includes
    # requested, start, deadline, actual, reached, and overshoot"; COMPAT
    # Stop reasons names the fields
    load(c, bytes.fromhex("EBFE"))
    out = c.call("execution.run_until", {"predicate": {"address": seg(0x50)},
                                         "max_emulated_ns": 2_000_000})
    stop = wait(c, out["operation_id"])
    assert set(stop) == {"kind", "emulated_time_ns", "emulated_time_limit", "registers"}
    assert set(stop["emulated_time_limit"]) == {
        "requested_duration_ns", "start_emulated_time_ns", "deadline_emulated_time_ns",
        "actual_stop_emulated_time_ns", "reached", "overshoot_ns"}
    assert stop["emulated_time_ns"] == stop["registers"]["clock"] * 10 ** 9 // 4_770_000
    assert c.call("breakpoints.list") == {"breakpoints": []}


def test_a_memory_breakpoint_in_the_deadline_tick_wins(c):
    # COMPAT Stop reasons: "A breakpoint in the same Tick wins over the
    # deadline" -- the deadline is the clock right after the store
    code = bytes.fromhex("90 90 A30002 EBFE")   # nop / nop / mov [200h],ax / jmp $
    load(c, code)
    step(c), step(c)
    before = c.call("state.get")["clock"]
    after = step(c)["registers"]["clock"]       # the store's own clock cost
    load(c, code, ip=2)
    start = c.call("state.get")["clock"]
    end = start + (after - before)
    ns = end * 10 ** 9 // 4_770_000 - start * 10 ** 9 // 4_770_000
    out = c.call("execution.run_until", {"predicate": {"kind": "memory_write",
                                                       "address": seg(0x200)},
                                         "max_emulated_ns": ns})
    stop = wait(c, out["operation_id"])
    assert stop["registers"]["clock"] == end
    assert stop["kind"] == "run_until" and stop["access"]["kind"] == "memory_write"


def test_wait_retains_256_operations(c):
    # C470: "Up to 256 operations are retained; unknown or evicted IDs are
    # invalid parameters"
    load(c, bytes.fromhex("EBFE"))
    ids = [c.call("execution.step")["operation_id"] for _ in range(257)]
    err = c.error("execution.wait", {"operation_id": ids[0]})
    assert err["code"] == -32602
    for op in (ids[1], ids[-1]):
        assert c.call("execution.wait", {"operation_id": op})["stop_reason"]["kind"] == "step"


def test_wait_default_timeout_is_non_blocking(c):
    # C466: timeout_ms "defaults to 0"; C468 a pending operation is exactly
    # {"running": true}
    load(c, bytes.fromhex("EBFE"))
    op = c.call("execution.continue")["operation_id"]
    assert c.call("execution.wait", {"operation_id": op}) == {"running": True}
    assert c.call("execution.wait", {"operation_id": op, "timeout_ms": "0"}) == \
        {"running": True}
    c.call("execution.pause")
    assert set(c.call("execution.wait", {"operation_id": op})) == {"state", "stop_reason"}


def test_step_ack_is_the_entry_register_object(c):
    # C522: "the entry register object with stepping:true and operation_id
    # added"; it is not post-step evidence
    regs = load(c, LOOP)
    ack = c.call("execution.step", {"mode": "into"})
    assert set(ack) == REGISTER_KEYS | {"stepping", "operation_id"}
    ack.pop("stepping"), ack.pop("operation_id")
    assert ack == regs


def test_step_of_a_halted_cpu_advances_the_wait(c):
    # C520: a Tick can "advance HLT waiting"; it is not an executed
    # instruction (interrupts off: the CPU stays halted)
    load(c, bytes.fromhex("F4 EBFD"))
    first = step(c)
    assert ip_of(first) == 1 and first["registers"]["in_hlt"] is True
    second = step(c)
    assert second["kind"] == "step" and ip_of(second) == 1
    assert second["registers"]["in_hlt"] is True
    assert second["registers"]["clock"] > first["registers"]["clock"]
    assert second["registers"]["state_revision"] == first["registers"]["state_revision"] + 1


def test_step_can_dispatch_a_pic_interrupt(fx, c):
    # C520: a Tick can "dispatch a PIC interrupt" (here after HLT waits);
    # the instruction at CS:IP does not execute in that Tick
    c.call("execution.pause")
    op = c.call("execution.run_until", {"max_emulated_ns": 3_000_000_000})["operation_id"]
    wait(c, op, 60000)                          # the BIOS has set up the PIC and the PIT
    table = base64.b64decode(c.call("memory.read", {"address": 8 * 4, "length": 8})[
        "data_base64"])
    handlers = {(int.from_bytes(table[k + 2:k + 4], "little"),
                 int.from_bytes(table[k:k + 2], "little")) for k in (0, 4)}   # IRQ 0, IRQ 1
    load(c, bytes.fromhex("F4 EBFD"), flags=0x0202)   # hlt / jmp back, interrupts on
    c.call("input.keyboard", {"events": [{"scan_code": 0x1E, "pressed": True}]})
    prev = step(c)                              # the HLT
    assert ip_of(prev) == 1 and prev["registers"]["in_hlt"]
    for _ in range(64):
        stop = step(c)
        regs = stop["registers"]
        if (regs["segments"]["cs"], regs["ip"]) != (SEG, 1):
            break
        prev = stop
    assert stop["kind"] == "step"
    assert (regs["segments"]["cs"], regs["ip"]) in handlers
    assert not regs["flags"] & 0x0200 and regs["in_hlt"] is False
    assert regs["general"]["sp"] == STACK_TOP - 6
    assert regs["state_revision"] == prev["registers"]["state_revision"] + 1


# -- trace.start / read / stop (C472-C490) ---------------------------------------

# mov dx,3D8h / mov ax,0129h / out dx,ax / in al,dx / nop / int 60h / jmp $
IO_CODE = bytes.fromhex("BAD803 B82901 EF EC 90 CD60 EBFE")


def traced_steps(c, code, n, detail="long", flags=0x0002):
    load(c, code, flags=flags)
    c.call("trace.start", {"detail": detail, "instruction_count": n})
    for _ in range(n):
        step(c)
    page = c.call("trace.read", {"limit": 256})
    assert page["event_count"] == n and page["active"] is False
    return page["events"]


def test_trace_start_defaults(c):
    # C474: instruction_count defaults to 256; detail normal is the usual
    # level (the contract's example)
    c.call("execution.pause")
    assert c.call("trace.start") == {"active": True, "detail": "normal",
                                     "instruction_count": 256, "event_count": 0}
    c.call("trace.stop")


def test_trace_start_accepts_the_maximum_count(c):
    # C474: "maximum 65536"
    c.call("execution.pause")
    assert c.call("trace.start", {"instruction_count": "65536"})["instruction_count"] == 65536
    c.call("trace.stop")


def test_trace_events_carry_the_contract_fields(c):
    # C478 + COMPAT Traces: kind, segmented and physical address, eight raw
    # opcode bytes, the clock interval, registers before (and after for
    # long), ordered effects
    events = traced_steps(c, IO_CODE, 4)
    first = events[0]
    assert set(first) == {"sequence", "kind", "address", "physical", "opcode_hex",
                          "clock_before", "clock_after", "clock_delta", "effects",
                          "registers_before", "registers_after"}
    assert first["opcode_hex"] == IO_CODE[:8].hex()
    for e in events:
        assert len(e["opcode_hex"]) == 16 and e["kind"] == "instruction"
        assert e["physical"] == (e["address"]["segment"] << 4) + e["address"]["offset"]
        assert e["clock_delta"] == e["clock_after"] - e["clock_before"] > 0
    assert events[1]["registers_after"]["general"]["ax"] == 0x0129


def test_instruction_fetches_are_not_memory_effects(c):
    # C478: "Instruction fetches are not reported as memory effects"
    events = traced_steps(c, IO_CODE, 5, detail="csip")
    assert [e["effects"] for e in (events[0], events[1], events[4])] == [[], [], []]


def test_io_effects_one_per_byte_with_port_value_and_handled(c):
    # C478: "io_read or io_write with port, byte count, value, and whether the
    # port was handled"; COMPAT Traces: one effect per byte (a word OUT is
    # two byte transfers, port then port + 1)
    events = traced_steps(c, IO_CODE, 4, detail="short")
    assert events[2]["effects"] == [
        {"kind": "io_write", "port": 0x3D8, "byte_count": 1, "value": 0x29, "handled": True},
        {"kind": "io_write", "port": 0x3D9, "byte_count": 1, "value": 0x01, "handled": True}]
    (read,) = events[3]["effects"]
    assert {k: read[k] for k in ("kind", "port", "byte_count", "handled")} == \
        {"kind": "io_read", "port": 0x3D8, "byte_count": 1, "handled": True}


def test_io_effect_of_an_unhandled_port(c):
    # C478 "whether the port was handled by a device"
    code = bytes.fromhex("BAF002 B05A EE EC EBFE")   # out/in at port 2F0h (nothing there)
    events = traced_steps(c, code, 4, detail="csip")
    assert events[2]["effects"] == [
        {"kind": "io_write", "port": 0x2F0, "byte_count": 1, "value": 0x5A, "handled": False}]
    assert events[3]["effects"] == [
        {"kind": "io_read", "port": 0x2F0, "byte_count": 1, "value": 0xFF, "handled": False}]


def test_a_software_int_is_one_instruction_event_with_its_stack_and_vector_effects(c):
    # C478: "Software INT ... stay instruction events because an opcode
    # executed"; the next event is the handler's first instruction
    events = traced_steps(c, IO_CODE, 7, detail="normal")
    intr, handler = events[5], events[6]
    assert intr["kind"] == "instruction" and intr["opcode_hex"].startswith("cd60")
    kinds = [e["kind"] for e in intr["effects"]]
    assert kinds == ["memory_write"] * 6 + ["memory_read"] * 4
    assert [e["address"]["offset"] for e in intr["effects"][6:]] == [0x180, 0x181, 0x182,
                                                                      0x183]
    assert handler["address"] == seg(0x100) and handler["kind"] == "instruction"


def test_a_tf_trap_stays_in_its_instruction_event(c):
    # C478: "post-instruction TF traps stay instruction events"
    events = traced_steps(c, bytes.fromhex("90 90 EBFE"), 3, detail="normal", flags=0x0102)
    nop, handler = events[0], events[1]
    assert nop["kind"] == "instruction" and nop["address"] == seg(0)
    assert [e["kind"] for e in nop["effects"]] == ["memory_write"] * 6 + ["memory_read"] * 4
    assert [e["address"]["offset"] for e in nop["effects"][6:]] == [4, 5, 6, 7]
    assert handler["address"] == seg(0x100)
    assert not handler["registers_before"]["flags"] & 0x0100
    assert events[2]["address"] == seg(1)


def test_long_detail_has_both_register_snapshots(c):
    # C478: "normal and long also include the snapshot after it"
    events = traced_steps(c, IO_CODE, 2, detail="long")
    assert events[0]["registers_after"] == events[1]["registers_before"]
    assert events[0]["registers_after"]["ip"] == 3


def test_trace_read_default_limit_is_128(c):
    # C486: "Optional limit defaults to 128"
    load(c, bytes.fromhex("EBFE"))
    c.call("trace.start", {"detail": "csip", "instruction_count": 200})
    op = c.call("execution.run_until", {"max_emulated_ns": 10_000_000})["operation_id"]
    wait(c, op)
    page = c.call("trace.read")
    assert page["event_count"] == 200 and len(page["events"]) == 128
    assert page["next_cursor"] == "trace-128"
    assert set(page) == {"events", "event_count", "active", "detail", "next_cursor"}
    rest = c.call("trace.read", {"cursor": page["next_cursor"]})
    assert len(rest["events"]) == 72 and "next_cursor" not in rest


def test_trace_refusals_change_nothing(c):
    # C486: reading or stopping before a start and starting over an active
    # trace are refused; the revision does not move
    load(c, LOOP)
    rev = c.call("state.get")["state_revision"]
    assert c.error("trace.read")["code"] == -32602
    assert c.error("trace.stop")["code"] == -32602
    c.call("trace.start", {"instruction_count": 10})
    assert c.error("trace.start", {"instruction_count": 5})["code"] == -32602
    assert c.call("trace.read")["active"] is True
    assert c.call("state.get")["state_revision"] == rev


# -- hardware.trace.start / read / stop (C492-C516) -------------------------------

def test_hardware_trace_starts_while_running_and_changes_nothing(c):
    # C494: "It may run while the CPU is running or paused ... without
    # changing the emulated machine"; COMPAT Traces: default capacity 4096
    out = c.call("hardware.trace.start")
    assert out == {"active": True, "capacity": 4096, "dropped_event_count": 0,
                   "first_available_sequence": 1}
    assert c.call("session.status")["state"] == "running"
    c.call("execution.pause")
    rev = c.call("state.get")["state_revision"]
    c.call("hardware.trace.read")
    c.call("hardware.trace.stop")
    c.call("hardware.trace.start", {"capacity": 8})
    assert c.call("state.get")["state_revision"] == rev


def test_hardware_io_events_name_the_guest_instruction(c):
    # C512: I/O events have kind, emulated_time, guest instruction address,
    # port, byte_count and value (COMPAT Traces: and sequence) -- the address
    # of the IN or OUT itself
    load(c, IO_CODE)
    c.call("hardware.trace.start", {"include_irq": False})
    for _ in range(4):
        step(c)
    page = c.call("hardware.trace.read")
    assert set(page) == {"active", "capacity", "dropped_event_count",
                         "first_available_sequence", "events", "next_cursor"}
    out, inp = page["events"]
    assert set(out) == {"kind", "emulated_time", "address", "port", "byte_count", "value",
                        "sequence"}
    assert (out["kind"], out["address"], out["port"], out["byte_count"], out["value"]) == \
        ("io_write", seg(6), 0x3D8, 2, 0x0129)
    assert (inp["kind"], inp["address"], inp["port"], inp["byte_count"]) == \
        ("io_read", seg(7), 0x3D8, 1)
    clock = c.call("state.get")["clock"]
    assert 0 < out["emulated_time"] <= clock * 10 ** 9 // 4_770_000


def test_hardware_trace_sees_ports_no_device_claims(c):
    # C494/C504: it records port I/O; empty ports means all values
    code = bytes.fromhex("B05A E6F0 E4F0 EBFE")   # out 0F0h, al / in al, 0F0h
    load(c, code)
    c.call("hardware.trace.start", {"include_irq": False, "ports": []})
    for _ in range(3):
        step(c)
    events = c.call("hardware.trace.read")["events"]
    assert [(e["kind"], e["address"], e["port"], e["value"]) for e in events] == [
        ("io_write", seg(2), 0xF0, 0x5A), ("io_read", seg(4), 0xF0, 0xFF)]
    c.call("hardware.trace.stop")
    assert c.call("io.read", {"port": 0xF0})["value"] == 0xFF


def test_hardware_port_filter_leaves_irq_events(c):
    # C504: "Port filters apply to I/O events and IRQ filters apply to IRQ
    # events"; IRQ events carry kind, emulated_time, address and irq, and a
    # dispatch the vector
    c.call("execution.pause")
    c.call("hardware.trace.start", {"ports": [{"first": "0x3d8", "last": "0x3d8"}],
                                    "irqs": []})
    op = c.call("execution.run_until", {"max_emulated_ns": 200_000_000})["operation_id"]
    wait(c, op)
    events = c.call("hardware.trace.read", {"limit": 65536})["events"]
    assert all(e["port"] == 0x3D8 for e in events if e["kind"].startswith("io_"))
    raise_ = next(e for e in events if e["kind"] == "irq_raise")
    assert set(raise_) == {"kind", "emulated_time", "address", "irq", "sequence"}
    dispatch = next(e for e in events if e["kind"] == "irq_dispatch")
    assert set(dispatch) == {"kind", "emulated_time", "address", "irq", "vector", "sequence"}
    assert dispatch["vector"] == 8 + dispatch["irq"]


@pytest.mark.parametrize("limit, ok", [(0, False), (65536, True), (65537, False)])
def test_hardware_read_limit_range(c, limit, ok):
    # C508 "bounded limit"; COMPAT Traces: read limit 1..65536
    c.call("execution.pause")
    c.call("hardware.trace.start")
    if ok:
        assert c.call("hardware.trace.read", {"limit": limit})["events"] == []
    else:
        assert c.error("hardware.trace.read", {"limit": limit})["code"] == -32602


def test_hardware_trace_stop_reports_metadata_and_keeps_events(c):
    # C516: "Stops recording without discarding retained events. The result
    # reports the final recorder metadata"
    c.call("execution.pause")
    c.call("hardware.trace.start", {"capacity": 2, "include_irq": False})
    for value in (1, 2, 3):
        c.call("io.write", {"port": 0x3D9, "value": value})
    out = c.call("hardware.trace.stop")
    assert out == {"active": False, "capacity": 2, "dropped_event_count": 1,
                   "first_available_sequence": 2}
    page = c.call("hardware.trace.read", {"cursor": None})
    assert [e["value"] for e in page["events"]] == [2, 3]
    assert page["next_cursor"] == "hardware-3"
    assert c.call("hardware.trace.read", {"cursor": "hardware-3"})["events"] == []


def test_a_suppressed_match_after_a_pause_counts_once(c):
    # C413 "hit_count counts condition matches": a pass at the address where
    # a pause left the CPU is counted once when execution resumes
    regs = load(c, LOOP, ip=3)
    c.call("state.set_registers", {"expected_state_revision": regs["state_revision"],
                                   "expected": {"ax": regs["general"]["ax"]}, "set": {"ax": 0}})
    c.call("breakpoints.create", {"address": seg(3), "hit_filter": {"skip": 1, "every": 1}})
    stop = run_to_stop(c)
    assert stop["hit_count"] == 2 and stop["registers"]["general"]["ax"] == 1


def test_hit_counts_stay_exact_across_many_slices(c):
    # C413: every pass is one match, whichever slice boundary it falls on
    load(c, LOOP)
    c.call("breakpoints.create", {"address": seg(3), "hit_filter": {"skip": 20000,
                                                                     "every": 1}})
    stop = run_to_stop(c)
    assert stop["hit_count"] == 20001 and stop["registers"]["general"]["ax"] == 20000


# -- serial.status / write / read (C596-C608) -------------------------------------

@pytest.fixture
def com1():
    if "uart" not in AVAILABLE:
        pytest.skip("the uart device plugin is not installed")
    f = RpcFixture(plugins=["cga", "uart"])
    yield f
    f.close()


def test_serial_status_fields(com1):
    # C598: port, base, irq, divisor, lcr, mcr, rx_pending, tx_start, tx_next,
    # transport and wire_timing; COMPAT serial: the values
    c = com1.client()
    st = c.call("serial.status")
    assert set(st) == {"port", "base", "irq", "divisor", "lcr", "mcr", "rx_pending",
                       "tx_start", "tx_next", "transport", "wire_timing"}
    assert (st["port"], st["base"], st["irq"]) == ("COM1", 0x3F8, 4)
    assert st["transport"] == "flow-controlled-rpc"
    # flow-controlled by default, as the contract's COM1 (--serial-timing
    # wire is the opt-in that says true)
    assert st["wire_timing"] is False
    assert (st["rx_pending"], st["tx_start"], st["tx_next"]) == (0, 0, 0)


def program_uart(c, divisor=12):
    """8N1 at 115200 / divisor baud (the BIOS leaves COM1 alone)."""
    for port, value in ((0x3FB, 0x80), (0x3F8, divisor), (0x3F9, 0), (0x3FB, 0x03)):
        c.call("io.write", {"port": port, "value": value})


def run_ns(c, ns):
    wait(c, c.call("execution.run_until", {"max_emulated_ns": ns})["operation_id"])


def test_serial_input_waits_for_the_guest_to_read_it(com1):
    # C598: "queued input waits until the guest reads its receive register"
    c = com1.client()
    c.call("execution.pause")
    program_uart(c)
    c.call("serial.write", {"data_base64": b64(b"abc")})
    run_ns(c, 50_000_000)                       # many character times
    assert c.call("serial.status")["rx_pending"] == 3         # nobody read it
    got = [c.call("io.read", {"port": 0x3F8})["value"]]
    assert c.call("serial.status")["rx_pending"] == 2
    run_ns(c, 5_000_000)
    got.append(c.call("io.read", {"port": 0x3F8})["value"])
    assert got == [ord("a"), ord("b")]
    assert c.call("serial.status")["rx_pending"] == 1


def test_serial_write_is_allowed_while_running(com1):
    # C602: "Calls remain supported while running or paused"
    c = com1.client()
    assert c.call("session.status")["state"] == "running"
    out = c.call("serial.write", {"data_base64": "Ug0="})
    assert out["accepted"] == 2 and out["rx_pending"] == 2
    assert c.call("serial.read", {"offset": 0})["offset"] == 0
    assert c.call("serial.status")["rx_pending"] == 2


def test_serial_write_fills_the_queue_and_then_refuses(com1):
    # C602: it "refuses a full 65536-byte input queue"; "rejected input
    # preserves the UART, machine and revision".  (accepted counts the bytes
    # that fit: 3 sent into room for 2 accepts 2, as the result's field says;
    # flow-controlled, the first byte is in RBR at once, so the 65,536-byte
    # queue holds the rest and rx_pending counts one more)
    c = com1.client()
    c.call("execution.pause")
    for _ in range(15):
        c.call("serial.write", {"data_base64": b64(bytes(4096))})
    c.call("serial.write", {"data_base64": b64(bytes(4095))})
    before = c.call("state.get")
    assert c.call("serial.status")["rx_pending"] == 65535
    out = c.call("serial.write", {"data_base64": b64(b"xyz")})
    assert out == {"accepted": 2, "rx_pending": 65537,
                   "state_revision": before["state_revision"] + 1}
    full = (c.call("serial.status"), c.call("state.get"))
    err = c.error("serial.write", {"data_base64": b64(b"z")})
    assert err["code"] == -32602
    assert (c.call("serial.status"), c.call("state.get")) == full


# the guest sends 65,552 bytes (0, 1, 2, ... mod 256) at 115200 baud, waiting
# for THR empty before each: DLAB, divisor 1, 8N1, then two bursts (CX = 0:
# 65,536 bytes, CX = 16) of "wait for LSR bit 5, OUT 3F8h, INC BL"; then jmp $
# at 0023h
TX_CODE = bytes.fromhex("bafb03b080eebaf803b001ee42b000eebafb03b003ee31db31c9e80800b91000"
                        "e80200ebfebafd03eca82074fbbaf80388d8eefec3e2eec3")


def test_serial_read_defaults_and_the_retained_window(com1):
    # C606: output retains the last 65536 bytes; "an offset before tx_start
    # fails explicitly"; reads are repeatable; C604 params default to offset
    # 0 and max_bytes 4096
    c = com1.client()
    load(c, TX_CODE)
    op = c.call("execution.run_until", {"predicate": {"address": seg(0x23)}})["operation_id"]
    for _ in range(10):
        done = c.call("execution.wait", {"operation_id": op, "timeout_ms": 60000})
        if done.get("state") == "stopped":
            break
    assert done["stop_reason"]["kind"] == "run_until"
    run_ns(c, 1_000_000)                        # the last byte leaves the shift register
    st = c.call("serial.status")
    assert (st["tx_start"], st["tx_next"]) == (16, 65552)
    assert c.error("serial.read", {"offset": 15})["code"] == -32602
    assert c.error("serial.read", {})["code"] == -32602        # offset 0 is gone too
    first = c.call("serial.read", {"offset": 16})
    assert first == c.call("serial.read", {"offset": 16, "max_bytes": 4096})
    data = base64.b64decode(first["data_base64"])
    assert len(data) == 4096 and data[:3] == bytes([16, 17, 18])
    assert first["next_offset"] == 16 + 4096
    whole = c.call("serial.read", {"offset": 16, "max_bytes": 65536})
    assert whole["next_offset"] == 65552
    assert base64.b64decode(whole["data_base64"]) == bytes(i & 0xFF for i in range(16, 65552))


def test_serial_state_is_in_a_machine_snapshot(com1, tmp_path):
    # C606: "The UART and both queues are included in machine snapshot
    # version 3, including offsets"
    c = com1.client()
    c.call("execution.pause")
    program_uart(c)
    c.call("io.write", {"port": 0x3F8, "value": ord("Q")})    # output ring: "Q"
    c.call("serial.write", {"data_base64": b64(b"in")})
    run_ns(c, 5_000_000)
    saved = c.call("serial.status")
    rev = c.call("session.status")["state_revision"]
    out = c.call("machine.snapshot.export", {"path": str(tmp_path / "s.zip"),
                                             "expected_state_revision": rev})
    c.call("serial.write", {"data_base64": b64(b"more")})
    c.call("io.write", {"port": 0x3F8, "value": ord("R")})
    c.call("io.write", {"port": 0x3FB, "value": 0x1B})
    rev = c.call("session.status")["state_revision"]
    c.call("machine.snapshot.import", {"path": out["path"], "disk_root": str(tmp_path / "d"),
                                       "expected_sha256": out["sha256"],
                                       "expected_state_revision": rev})
    assert c.call("serial.status") == saved
    assert c.call("serial.read", {"offset": 0}) == {"offset": 0, "next_offset": 1,
                                                     "data_base64": b64(b"Q")}
    assert c.call("io.read", {"port": 0x3F8})["value"] == ord("i")


# -- machine.snapshot.export / import (C575-C594) ---------------------------------

def paused_revision(c):
    c.call("execution.pause")
    return c.call("session.status")["state_revision"]


def export(c, path, **extra):
    return c.call("machine.snapshot.export", dict(
        path=str(path), expected_state_revision=paused_revision(c), **extra))


def import_params(out, root, rev, **extra):
    """machine.snapshot.import's params for the bundle ``out`` (an export's
    result), its disks below ``root``, at revision ``rev``."""
    params = dict(path=out["path"], disk_root=str(root), expected_sha256=out["sha256"],
                  expected_state_revision=rev)
    params.update(extra)
    return params


def import_(c, out, root, **extra):
    return c.call("machine.snapshot.import", import_params(out, root, paused_revision(c),
                                                           **extra))


def refused_import(c, path, sha256, root):
    """machine.snapshot.import of the file ``path`` (``sha256``) is refused
    with -32602 and changes nothing: the registers stay and no disk folder
    ``root`` appears."""
    rev = paused_revision(c)
    regs = c.call("state.get_registers")
    err = c.error("machine.snapshot.import", {
        "path": str(path), "disk_root": str(root), "expected_sha256": sha256,
        "expected_state_revision": rev})
    assert err["code"] == -32602
    assert c.call("state.get_registers") == regs
    assert not root.exists()


def export_from(path, **config):
    """The bundle (export's result) of a fresh machine ``RpcFixture(**config)``
    exported to ``path``; that machine is closed."""
    f = RpcFixture(**config)
    try:
        return export(f.client(), path)
    finally:
        f.close()


@pytest.mark.parametrize("mode", [None, "auto", "embed", "reference", "reference-files"])
def test_export_disk_modes_and_result(c, tmp_path, mode):
    # C579: optional disk_mode auto (default), embed, reference or
    # reference-files; the result is path, archive bytes/sha256 and the current
    # revision; "The ZIP contains JSON plus hashed binary payloads"
    extra = {} if mode is None else {"disk_mode": mode}
    rev = paused_revision(c)
    out = export(c, tmp_path / "m.zip", **extra)
    assert set(out) == {"path", "bytes", "sha256", "state_revision"}
    assert out["state_revision"] == rev
    data = (tmp_path / "m.zip").read_bytes()
    assert out["bytes"] == len(data) and out["sha256"] == hashlib.sha256(data).hexdigest()
    with zipfile.ZipFile(tmp_path / "m.zip") as z:
        names = z.namelist()
        assert any(n.endswith(".json") for n in names)
        assert any(not n.endswith(".json") for n in names)


def test_snapshot_methods_need_a_paused_machine_and_the_revision(c, tmp_path):
    # C577: "Both methods require a paused machine and expected_state_revision
    # equal to session.status.state_revision"
    out = export(c, tmp_path / "m.zip")
    c.call("execution.continue")
    err = c.error("machine.snapshot.import", {
        "path": out["path"], "disk_root": str(tmp_path / "d"), "expected_sha256": out["sha256"],
        "expected_state_revision": 0})
    assert err["code"] == -32602 and err["data"]["reason"] == "TARGET_NOT_PAUSED"
    rev = paused_revision(c)
    for method, params in (
            ("machine.snapshot.export", {"path": str(tmp_path / "n.zip")}),
            ("machine.snapshot.import", {"path": out["path"], "disk_root": str(tmp_path / "d"),
                                         "expected_sha256": out["sha256"]})):
        assert c.error(method, params)["code"] == -32602
    assert not (tmp_path / "n.zip").exists() and not (tmp_path / "d").exists()
    assert c.call("session.status")["state_revision"] == rev


def test_a_failed_export_publishes_nothing(c, tmp_path):
    # C594: "A failed archive write leaves no published archive"
    rev = paused_revision(c)
    err = c.error("machine.snapshot.export", {"path": str(tmp_path / "no" / "m.zip"),
                                              "expected_state_revision": rev})
    assert err["code"] in (-32602, -32603)
    assert os.listdir(tmp_path) == []
    assert c.call("session.status")["state_revision"] == rev


def test_import_clears_journals_and_keeps_identities(fx, c, tmp_path):
    # C590: pending operations, instruction and hardware trace journals (and
    # the video history: C327) are cleared; "Revision and operation
    # identifiers remain host-session identities and are not rewound"; "The
    # VNC frame cache is invalidated with a new display epoch"
    load(c, LOOP)
    epoch = fx.machine.display_epoch
    out = export(c, tmp_path / "m.zip")
    c.call("trace.start", {"instruction_count": 5})
    c.call("hardware.trace.start")
    c.call("video.history.start")
    last = c.call("execution.step")["operation_id"]
    c.call("execution.wait", {"operation_id": last})
    res = import_(c, out, tmp_path / "d")
    assert res["stop_reason"]["kind"] == "machine_snapshot_restored"
    assert fx.machine.display_epoch > epoch
    for method in ("trace.read", "hardware.trace.read"):
        assert c.error(method)["code"] == -32602
    assert c.error("video.history.read", {"history_id": "video-1"})["code"] == -32602
    nxt = c.call("execution.step")["operation_id"]
    assert int(nxt.split("-")[1]) > int(last.split("-")[1])


def test_import_keeps_breakpoint_hit_counts(c, tmp_path):
    # C584: preserve_breakpoints (default true) retains "permanent host
    # breakpoint definitions and hit counters"
    load(c, LOOP)
    out = export(c, tmp_path / "m.zip")
    c.call("breakpoints.create", {"address": seg(4)})
    run_to_stop(c), run_to_stop(c)
    before = c.call("breakpoints.list")
    assert before["breakpoints"][0]["hit_count"] == 2
    import_(c, out, tmp_path / "d")
    assert c.call("breakpoints.list") == before
    stop = run_to_stop(c)                       # the restored loop runs into it again
    assert stop["hit_count"] == 3 and stop["registers"]["general"]["ax"] == 1


def test_import_of_a_malformed_bundle_changes_nothing(c, tmp_path):
    # C592: "Malformed bundles/hashes are rejected before live installation"
    # with -32602 ("Invalid checksums ... remain -32602")
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"PK\x03\x04 this is not a machine bundle")
    refused_import(c, bad, hashlib.sha256(bad.read_bytes()).hexdigest(), tmp_path / "d")


def test_import_refuses_another_video_adapter(tmp_path):
    # C586: "the live video adapter type must match"
    if "vga" not in AVAILABLE:
        pytest.skip("the vga device plugin is not installed")
    out = export_from(tmp_path / "vga.zip", plugins=["vga"])
    cga = RpcFixture()
    try:
        c = cga.client()
        rev = paused_revision(c)
        regs = c.call("state.get_registers")
        err = c.error("machine.snapshot.import", import_params(out, tmp_path / "d", rev))
        assert err["code"] == -32602
        assert c.call("state.get_registers") == regs
    finally:
        cga.close()


def test_import_refuses_another_game_port_presence(tmp_path):
    # C588: "Import requires the same game-port presence as the live machine"
    if "gameport" not in AVAILABLE:
        pytest.skip("the gameport device plugin is not installed")
    out = export_from(tmp_path / "gp.zip", plugins=["cga", "gameport"])
    plain = RpcFixture()
    try:
        c = plain.client()
        rev = paused_revision(c)
        err = c.error("machine.snapshot.import", import_params(out, tmp_path / "d", rev))
        assert err["code"] == -32602
        assert c.call("session.status")["state_revision"] == rev
    finally:
        plain.close()


def test_referenced_disk_images_must_match(tmp_path):
    # C580: "Referenced images must match saved size and SHA-256"; C582:
    # import copies a verified reference into a new writable disk; C592:
    # reference host-file open failures are -32603, mismatches -32602
    if "fdc" not in AVAILABLE:
        pytest.skip("the fdc device plugin is not installed")
    image = tmp_path / "a.img"
    image.write_bytes(bytes(range(256)) * (368640 // 256))
    fx = RpcFixture(plugins=["cga", "fdc"], floppy_a=str(image))
    try:
        c = fx.client()
        out = export(c, tmp_path / "m.zip", disk_mode="reference")
        with zipfile.ZipFile(out["path"]) as z:
            assert not any(n.startswith("disks/") for n in z.namelist())   # by reference
        other = tmp_path / "b.img"
        other.write_bytes(image.read_bytes()[:-1] + b"\x01")
        rev = paused_revision(c)
        base = {"path": out["path"], "expected_sha256": out["sha256"],
                "expected_state_revision": rev}
        err = c.error("machine.snapshot.import", dict(base, disk_root=str(tmp_path / "d1"),
                                                       references={"0": str(other)}))
        assert err["code"] == -32602
        err = c.error("machine.snapshot.import", dict(base, disk_root=str(tmp_path / "d2"),
                                                       references={"0": str(tmp_path / "x")}))
        assert err["code"] == -32603
        assert not (tmp_path / "d1").exists() and not (tmp_path / "d2").exists()
        assert c.call("session.status")["state_revision"] == rev
        res = c.call("machine.snapshot.import", dict(base, disk_root=str(tmp_path / "d3"),
                                                     references={"0": str(image)}))
        assert res["state_revision"] == rev + 1
        made = [os.path.join(d, f) for d, _, fs in os.walk(tmp_path / "d3") for f in fs]
        assert len(made) == 1 and open(made[0], "rb").read() == image.read_bytes()
    finally:
        fx.close()


# -- device-backed memory (C413, COMPAT Stop reasons and Traces) -------------------

def test_a_device_backed_write_has_no_old_value(tmp_path):
    # C413: "Device-backed writes expose no old value when the device cannot
    # be read without side effects"; COMPAT Traces: before_base64 is null for
    # them.  The VGA's A0000h window is served by the card on every access.
    if "vga" not in AVAILABLE:
        pytest.skip("the vga device plugin is not installed")
    fx = RpcFixture(plugins=["vga"])
    try:
        c = fx.client()
        # mov ax,0A000h / mov ds,ax / mov byte [0],5Ah / mov al,[0] / jmp $
        load(c, bytes.fromhex("B800A0 8ED8 C60600005A A00000 EBFE"))
        c.call("breakpoints.create", {"kind": "memory_access",
                                      "address": {"space": "linear", "offset": 0xA0000}})
        c.call("trace.start", {"detail": "csip", "instruction_count": 4})
        write = run_to_stop(c)["access"]
        assert write["kind"] == "memory_write" and write["new_value"] == 0x5A
        assert "old_value" not in write
        read = run_to_stop(c)["access"]
        assert read["kind"] == "memory_read" and read["old_value"] == read["new_value"]
        step(c)
        effects = [e["effects"] for e in c.call("trace.read")["events"]]
        assert effects[2] == [{"kind": "memory_write",
                               "address": {"space": "linear", "offset": 0xA0000},
                               "byte_count": 1, "before_base64": None,
                               "after_base64": b64(b"\x5a")}]
        # RAM keeps its before value
        load(c, bytes.fromhex("C60600025A EBFE"))      # mov byte [200h],5Ah
        c.call("trace.start", {"detail": "csip", "instruction_count": 1})
        step(c)
        (effect,) = c.call("trace.read")["events"][0]["effects"]
        assert effect["before_base64"] is not None
    finally:
        fx.close()


# -- stop shapes (C427, COMPAT Stop reasons) --------------------------------------

def test_stop_objects_have_exactly_their_fields(c, tmp_path):
    # COMPAT Stop reasons: every stop carries kind and registers; pause and
    # step nothing else; an execution breakpoint adds breakpoint_id, address
    # and hit_count; a memory one also length and access; an interrupt one
    # event and hit_count (no address); a restore only its kind
    load(c, LOOP)
    assert set(c.call("session.status")["last_stop"]) == {"kind", "registers"}   # pause
    assert set(step(c)) == {"kind", "registers"}
    c.call("breakpoints.create", {"address": seg(4)})
    assert set(run_to_stop(c)) == {"kind", "breakpoint_id", "address", "hit_count",
                                   "registers"}
    c.call("breakpoints.delete", {"breakpoint_id": "bp-1"})
    c.call("breakpoints.create", {"kind": "memory_write", "address": seg(0x200)})
    assert set(run_to_stop(c)) == {"kind", "breakpoint_id", "address", "length",
                                   "hit_count", "access", "registers"}
    c.call("breakpoints.delete", {"breakpoint_id": "bp-2"})
    c.call("breakpoints.create", {"kind": "interrupt", "event": {"number": 0x60}})
    assert set(run_to_stop(c)) == {"kind", "breakpoint_id", "event", "hit_count",
                                   "registers"}
    out = export(c, tmp_path / "m.zip")
    assert set(import_(c, out, tmp_path / "d")["stop_reason"]) == {"kind", "registers"}
    assert set(c.call("session.status")["last_stop"]["registers"]) == REGISTER_KEYS


# -- the DOSBox-X portability table (C539-C573) -----------------------------------

IMPLEMENTED = ["agent.capabilities", "session.status", "execution.continue",
               "execution.run_until", "execution.wait", "execution.pause", "execution.step",
               "state.get_registers", "state.set_registers", "input.keyboard",
               "input.joystick", "input.joystick.state", "input.state", "video.snapshot",
               "video.snapshot.read", "video.history.start", "video.history.read",
               "video.history.stop", "memory.read", "memory.write", "io.write",
               "breakpoints.create", "breakpoints.list", "breakpoints.delete", "trace.start",
               "trace.read", "trace.stop", "hardware.trace.start", "hardware.trace.read",
               "hardware.trace.stop"]
DEFERRED = ["session.start", "session.stop", "dos.memory_map", "checkpoints.create",
            "checkpoints.list", "checkpoints.restore", "checkpoints.delete",
            "debug.output.read", "debugger.execute_command", "dos.trace.start",
            "dos.trace.read", "dos.trace.stop"]


def test_the_portability_table(c):
    # C541-C571: every method the table calls implemented is offered;
    # C573: "Deferred methods are intentionally omitted from the methods
    # capability list and currently return JSON-RPC -32601" -- pypc offers
    # some of them as extensions (COMPAT Capabilities: appended and listed),
    # so each deferred name is either listed and served or absent and -32601
    methods = c.call("agent.capabilities")["methods"]
    assert [m for m in IMPLEMENTED if m not in methods] == []
    for name in DEFERRED:
        reply = c.request(name, {})
        if name in methods:
            assert reply.get("error", {}).get("code") != -32601, name
            assert methods.index(name) > methods.index("machine.snapshot.import"), name
        else:
            assert reply["error"]["code"] == -32601, name
    # "Deliberately no raw debugger command escape hatch"
    assert "debugger.execute_command" not in methods
    assert c.request("debugger.execute_command", {"command": "r"})["error"]["code"] == -32601


# -- the minimal Python client (C524-C537) -----------------------------------------

def test_the_minimal_python_client_runs_from_the_repository_root(fx):
    # C526-C537: the contract's example, as written but for the port, run
    # from the repository root (a separate process: tests/guest is another
    # package of the same name)
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    script = f"""
from guest.dos_control import RPC

rpc = RPC({fx.port})
try:
    print(rpc.call("video.text"))
    print(rpc.call("input.keyboard", {{"events":[
        {{"scan_code":"0x50", "pressed":True}},
        {{"scan_code":"0x50", "pressed":False}}]}}))
    try:
        rpc.call("memory.read", {{"address": "0x100000"}})
    except Exception as exc:
        print("error", exc.code, exc.reason)
finally:
    rpc.close()
from pypc_core.client.minimal import RPC as installed
print("same class", installed is RPC)
"""
    out = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("{'adapter': 'CGA'")
    assert lines[1].startswith("{'accepted': 2, ")
    assert lines[2] == "error -32602 INVALID_PARAMS"
    assert lines[3] == "same class True"


def test_the_minimal_client_is_installed_with_pypc(fx, tmp_path):
    # the same client from anywhere (here an empty folder, no guest/ in reach)
    import subprocess
    import sys
    script = f"""
from pypc_core.client.minimal import RPC, RpcError
with RPC({fx.port}) as rpc:
    print(rpc.call("video.text")["adapter"])
    try:
        rpc.call("memory.read", {{"address": "0x100000"}})
    except RpcError as exc:
        print("error", exc.code, exc.reason)
try:
    import guest
except ImportError:
    print("no guest package here")
"""
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["CGA", "error -32602 INVALID_PARAMS",
                                       "no guest package here"]


# -- more of C413, C512, C584, C592 ---------------------------------------------------

@pytest.mark.parametrize("register", ["ax", "bx", "cx", "dx", "sp", "bp", "si", "di", "cs",
                                      "ds", "es", "ss", "ip", "flags"])
def test_every_8088_register_can_be_a_condition(c, register):
    # C413: "Supported condition registers are the 8088 general, segment,
    # ip, and flags registers"
    c.call("execution.pause")
    bp = c.call("breakpoints.create", {"address": seg(0), "condition": {
        "register": register, "operator": "ne", "value": "0xFFFF"}})
    assert bp["condition"] == {"register": register, "operator": "ne", "value": 0xFFFF}


@pytest.mark.parametrize("operator, value, first_ax", [
    ("eq", 3, 3), ("ne", 1, 2), ("lt", 3, 1), ("le", 2, 1), ("gt", 3, 4), ("ge", 3, 3)])
def test_condition_operators(c, operator, value, first_ax):
    # C413: "Supported operators are eq, ne, lt, le, gt, and ge"
    load(c, LOOP)
    c.call("breakpoints.create", {"address": seg(4), "condition": {
        "register": "ax", "operator": operator, "value": value}})
    stop = run_to_stop(c)
    assert stop["registers"]["general"]["ax"] == first_ax and stop["hit_count"] == 1


def test_flags_and_segment_conditions_match(c):
    # C413: a condition on flags (INC to 0 sets ZF, AF and PF: F056h on an 8088 with
    # interrupts off) and on a segment register
    load(c, bytes.fromhex("B8FEFF 40 A30002 EBFA"))   # mov ax,-2 / inc ax / store / jmp inc
    c.call("breakpoints.create", {"address": seg(4), "condition": {
        "register": "flags", "operator": "eq", "value": 0xF056}})   # ZF, AF, PF after 0
    c.call("breakpoints.create", {"address": seg(4), "condition": {
        "register": "ds", "operator": "ne", "value": SEG}})         # never
    stop = run_to_stop(c)
    assert stop["breakpoint_id"] == "bp-1" and stop["registers"]["general"]["ax"] == 0
    assert stop["registers"]["flags"] & 0x0040


def test_hardware_trace_records_irq_lowering(c):
    # C512: IRQ events are irq_raise, irq_lower or irq_dispatch (the timer's
    # output drops and rises again every tick)
    c.call("execution.pause")
    c.call("hardware.trace.start", {"include_io": False, "irqs": [0]})
    wait(c, c.call("execution.run_until", {"max_emulated_ns": 200_000_000})["operation_id"])
    events = c.call("hardware.trace.read", {"limit": 65536})["events"]
    kinds = {e["kind"] for e in events}
    assert kinds == {"irq_raise", "irq_lower", "irq_dispatch"}
    assert {e["irq"] for e in events} == {0}
    lower = next(e for e in events if e["kind"] == "irq_lower")
    assert set(lower) == {"kind", "emulated_time", "address", "irq", "sequence"}


def test_a_refused_import_keeps_the_debugger_configuration(c, tmp_path):
    # C584: "refused requests retain the machine and existing debugger
    # configuration"
    load(c, LOOP)
    out = export(c, tmp_path / "m.zip")
    c.call("breakpoints.create", {"address": seg(4)})
    c.call("hardware.trace.start")
    before = c.call("breakpoints.list")
    rev = paused_revision(c)
    err = c.error("machine.snapshot.import", {
        "path": out["path"], "disk_root": str(tmp_path / "d"), "expected_sha256": "0" * 64,
        "expected_state_revision": rev, "preserve_breakpoints": False})
    assert err["code"] == -32602
    assert c.call("breakpoints.list") == before
    assert c.call("hardware.trace.read")["active"] is True


def test_a_bundle_over_the_json_limit_is_refused(c, tmp_path):
    # C592: "Bundles have ... a 4 MiB JSON limit"; limits and malformed
    # bundles are -32602 before anything is installed
    bad = tmp_path / "big.zip"
    with zipfile.ZipFile(bad, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("manifest.json", b" " * ((4 << 20) + 1))
    refused_import(c, bad, hashlib.sha256(bad.read_bytes()).hexdigest(), tmp_path / "d")
