"""Contract exactness (issue 22), over a real server and socket with the
raw JSON-lines client of ``rpc_client`` (no pypc client code): operations
from before a snapshot import are unknown after it (C584, C459), a
run_until hit has the matching breakpoint's shape (COMPAT "run_until hit"),
and trace events carry the full register object (C478, COMPAT "Register
object keys, exactly").

Guest programs are written into RAM with memory.write at 1000:0000."""

import base64

import pytest

from rpc_fixtures import c, server_fixture  # noqa: F401  (c: a fixture)

fx = server_fixture()

SEG = 0x1000
REGISTER_KEYS = {"general", "segments", "ip", "flags", "flags_text", "clock", "in_hlt",
                 "state_revision"}
# mov ax,0 / inc ax / mov [0200h],ax / int 60h / jmp 0003 (INT 60h: an IRET at 1000:0100)
LOOP = bytes.fromhex("B80000 40 A30002 CD60 EBF8")


def b64(data):
    return base64.b64encode(data).decode()


def seg(off):
    return {"space": "segmented", "segment": SEG, "offset": off}


def load(c, code, flags=0x0002):
    c.call("execution.pause")
    c.call("memory.write", {"address": seg(0), "data_base64": b64(code)})
    c.call("memory.write", {"address": seg(0x100), "data_base64": b64(b"\xCF")})
    c.call("memory.write", {"address": 0x60 * 4, "data_base64": b64(bytes([0, 1, 0, 0x10]))})
    r = c.call("state.get")
    return c.call("state.set_registers", {
        "expected_state_revision": r["state_revision"],
        "expected": {"cs": r["segments"]["cs"], "ip": r["ip"], "ds": r["segments"]["ds"],
                     "ss": r["segments"]["ss"], "sp": r["general"]["sp"], "flags": r["flags"]},
        "set": {"cs": SEG, "ip": 0, "ds": SEG, "ss": 0x2000, "sp": 0x1000,
                "flags": flags}})["after"]


def wait(c, op):
    done = c.call("execution.wait", {"operation_id": op, "timeout_ms": 20000})
    assert done["state"] == "stopped", done
    return done["stop_reason"]


def revision(c):
    return c.call("session.status")["state_revision"]


# -- point 3: operations are unknown after a snapshot import ----------------------

def test_operations_from_before_an_import_are_unknown_after_it(c, tmp_path):
    load(c, LOOP)
    step = c.call("execution.step")["operation_id"]
    wait(c, step)
    out = c.call("machine.snapshot.export", {"path": str(tmp_path / "m.zip"),
                                             "expected_state_revision": revision(c)})
    run = c.call("execution.run_until", {"predicate": {"address": seg(7)}})["operation_id"]
    wait(c, run)
    c.call("machine.snapshot.import", {"path": out["path"], "disk_root": str(tmp_path / "d"),
                                       "expected_sha256": out["sha256"],
                                       "expected_state_revision": revision(c)})
    for op in (step, run):
        err = c.error("execution.wait", {"operation_id": op})
        assert err["code"] == -32602 and err["data"]["reason"] == "NOT_FOUND", err
    # ids are not reused: the next operation is a new one, and it is known
    nxt = c.call("execution.step")["operation_id"]
    assert int(nxt.split("-")[1]) > int(run.split("-")[1])
    assert wait(c, nxt)["kind"] == "step"


def test_an_operation_started_after_the_import_stays_known(c, tmp_path):
    load(c, LOOP)
    out = c.call("machine.snapshot.export", {"path": str(tmp_path / "m.zip"),
                                             "expected_state_revision": revision(c)})
    c.call("machine.snapshot.import", {"path": out["path"], "disk_root": str(tmp_path / "d"),
                                       "expected_sha256": out["sha256"],
                                       "expected_state_revision": revision(c)})
    op = c.call("execution.run_until", {"predicate": {"address": seg(4)}})["operation_id"]
    assert wait(c, op)["kind"] == "run_until"
    assert wait(c, op)["kind"] == "run_until"        # retained, repeatable


# -- point 4: run_until stop shapes -------------------------------------------------

def test_run_until_execution_hit_has_the_breakpoint_shape(c):
    load(c, LOOP)
    bp = c.call("breakpoints.create", {"address": seg(4)})
    bp_stop = wait(c, c.call("execution.continue")["operation_id"])
    c.call("breakpoints.delete", {"breakpoint_id": bp["breakpoint_id"]})
    load(c, LOOP)
    out = c.call("execution.run_until", {"predicate": {"address": seg(4)}})
    stop = wait(c, out["operation_id"])
    assert set(stop) == set(bp_stop) | {"predicate_id"}
    assert set(bp_stop) == {"kind", "breakpoint_id", "address", "hit_count", "registers"}
    assert stop["kind"] == "run_until"
    assert stop["predicate_id"] == stop["breakpoint_id"] == out["predicate_id"]
    assert stop["address"] == bp_stop["address"] and stop["hit_count"] == 1
    assert set(stop["registers"]) == REGISTER_KEYS


def test_run_until_deadline_stop_has_no_breakpoint_fields(c):
    load(c, bytes.fromhex("EBFE"))
    out = c.call("execution.run_until", {"max_emulated_ns": 1000})
    stop = wait(c, out["operation_id"])
    assert stop["kind"] == "emulated_time_limit"
    assert "breakpoint_id" not in stop and "predicate_id" not in stop


# -- point 4: trace register objects -------------------------------------------------

def trace(c, count, detail="normal"):
    c.call("trace.start", {"detail": detail, "instruction_count": count})
    for _ in range(count):
        wait(c, c.call("execution.step")["operation_id"])
    return c.call("trace.read", {"limit": 256})["events"]


def test_trace_registers_are_the_register_object(c):
    regs = load(c, LOOP)
    events = trace(c, 4)
    assert len(events) == 4
    for ev in events:
        assert set(ev["registers_before"]) == REGISTER_KEYS
        assert set(ev["registers_after"]) == REGISTER_KEYS
        assert ev["registers_before"]["in_hlt"] is False
    first = events[0]["registers_before"]
    assert first == regs                       # the same object state.get gives
    for a, b in zip(events, events[1:]):
        assert a["registers_after"] == b["registers_before"]
    revs = [e["registers_before"]["state_revision"] for e in events]
    assert revs == list(range(revs[0], revs[0] + 4))
    assert events[-1]["registers_after"] == c.call("state.get")


def test_trace_state_revision_follows_rpc_changes_between_steps(c):
    load(c, LOOP)
    c.call("trace.start", {"detail": "short", "instruction_count": 3})
    wait(c, c.call("execution.step")["operation_id"])
    c.call("memory.write", {"address": 0x500, "data_base64": b64(b"\x01")})   # +1
    wait(c, c.call("execution.step")["operation_id"])
    wait(c, c.call("execution.step")["operation_id"])
    events = c.call("trace.read")["events"]
    revs = [e["registers_before"]["state_revision"] for e in events]
    assert revs[1] == revs[0] + 2 and revs[2] == revs[1] + 1
    assert "registers_after" not in events[0]


def test_trace_in_hlt_through_a_halt_and_its_waits(c):
    # hlt with interrupts off: the HLT instruction, then waits of a halted CPU
    regs = load(c, bytes.fromhex("F4 EBFD"))
    events = trace(c, 3)
    kinds = [e["kind"] for e in events]
    assert kinds == ["instruction", "hlt", "hlt"], kinds
    assert events[0]["registers_before"]["in_hlt"] is False
    assert events[0]["registers_after"]["in_hlt"] is True
    assert all(e["registers_before"]["in_hlt"] and e["registers_after"]["in_hlt"]
               for e in events[1:])
    assert events[-1]["registers_after"] == c.call("state.get")
    assert events[0]["registers_before"]["state_revision"] == regs["state_revision"]


@pytest.mark.parametrize("detail", ["csip", "short"])
def test_trace_detail_levels_keep_their_register_keys(c, detail):
    load(c, LOOP)
    events = trace(c, 2, detail)
    for ev in events:
        assert "registers_after" not in ev
        if detail == "csip":
            assert "registers_before" not in ev
        else:
            assert set(ev["registers_before"]) == REGISTER_KEYS


# -- point 2: serial is flow-controlled (C598-C606, COMPAT serial) ---------------

COM1, LSR, MCR = 0x3F8, 0x3FD, 0x3FC


@pytest.fixture
def serial():
    """A client of a fresh CGA + COM1 server (the default serial timing)."""
    from rpc_client import RpcFixture
    f = RpcFixture(plugins=["cga", "uart"])
    try:
        yield f.client()
    finally:
        f.close()


def io_read(c, port):
    return c.call("io.read", {"port": port})["value"]


def test_serial_status_says_flow_controlled(serial):
    st = serial.call("serial.status")
    assert st["transport"] == "flow-controlled-rpc" and st["wire_timing"] is False
    assert st["divisor"] == 0                   # nobody programmed the UART yet


def test_queued_input_waits_for_rbr_reads_with_the_divisor_never_set(serial):
    c = serial
    c.call("execution.pause")
    assert c.call("serial.status")["divisor"] == 0
    assert c.call("serial.write", {"data_base64": b64(b"R\r")})["rx_pending"] == 2
    assert io_read(c, LSR) & 0x01               # data ready at once, no baud delay
    assert io_read(c, COM1) == 0x52
    assert c.call("serial.status")["rx_pending"] == 1
    assert io_read(c, LSR) & 0x01               # the next byte moved in when RBR was read
    assert io_read(c, COM1) == 0x0D
    assert not io_read(c, LSR) & 0x01 and c.call("serial.status")["rx_pending"] == 0
    assert c.call("serial.status")["divisor"] == 0


def test_a_guest_polling_loop_receives_every_byte_in_order(serial):
    # mov dx,3FDh / poll: in al,dx / test al,1 / jz poll / mov dl,0F8h /
    # in al,dx / stosb / mov dl,0FDh / jmp poll    (ES:DI = 1000:0200h)
    c = serial
    code = bytes.fromhex("BAFD03 EC A801 74FB B2F8 EC AA B2FD EBF3")
    regs = load(c, code)
    c.call("state.set_registers", {"expected_state_revision": regs["state_revision"],
                                   "expected": {"es": regs["segments"]["es"],
                                                "di": regs["general"]["di"]},
                                   "set": {"es": SEG, "di": 0x200}})
    data = bytes(range(1, 200))
    c.call("serial.write", {"data_base64": b64(data)})
    op = c.call("execution.run_until", {"max_emulated_ns": 5_000_000})["operation_id"]
    assert wait(c, op)["kind"] == "emulated_time_limit"      # 5 ms of guest time
    got = base64.b64decode(c.call("memory.read", {"address": seg(0x200),
                                                  "length": len(data)})["data_base64"])
    assert got == data
    assert c.call("serial.status")["rx_pending"] == 0


def test_transmit_is_immediate(serial):
    c = serial
    c.call("execution.pause")
    out = c.call("io.write", {"port": COM1, "value": 0x41})
    assert out["handled"] is True
    assert c.call("serial.read", {"offset": 0}) == {"offset": 0, "next_offset": 1,
                                                     "data_base64": "QQ=="}
    assert io_read(c, LSR) & 0x60 == 0x60       # THR and the transmitter empty again


def test_loopback_is_immediate_and_refuses_host_input(serial):
    c = serial
    c.call("execution.pause")
    c.call("io.write", {"port": MCR, "value": 0x10})        # loopback
    c.call("io.write", {"port": COM1, "value": 0x5A})
    assert io_read(c, LSR) & 0x01 and io_read(c, COM1) == 0x5A
    assert c.call("serial.read", {"offset": 0})["next_offset"] == 0   # looped, not sent
    err = c.error("serial.write", {"data_base64": b64(b"x")})
    assert err["code"] == -32602 and err["data"]["reason"] == "PRECONDITION_FAILED"
    c.call("io.write", {"port": MCR, "value": 0x00})


def test_serial_timing_wire_is_the_opt_in():
    import argparse
    from rpc_client import RpcFixture
    f = RpcFixture(plugins=["cga", "uart"], options=argparse.Namespace(serial_timing="wire"))
    try:
        c = f.client()
        c.call("execution.pause")
        assert c.call("serial.status")["wire_timing"] is True
        c.call("io.write", {"port": COM1, "value": 0x41})
        # divisor 0 (65536): one character takes about 5.7 s of guest time
        assert c.call("serial.read", {"offset": 0})["next_offset"] == 0
        c.call("serial.write", {"data_base64": b64(b"R")})
        assert not io_read(c, LSR) & 0x01
    finally:
        f.close()
