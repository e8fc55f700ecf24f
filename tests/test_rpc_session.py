"""The session API over TCP: session.start (a program on the built-in DOS,
stopped on its first instruction), session.status, session.stop, step
over, checkpoints, request_id retries, and bad input -- against the real
server with a real machine (``rpc_client.RpcFixture``).

The spec's fixture (tests/guest/dos/agent_fixture.asm, section 10) runs in
a fresh copy of its folder for every test."""

import base64
import hashlib
import os

import pytest

from session_common import runtime_folder, srv, start_session  # noqa: F401  (srv: a fixture)


@pytest.fixture
def workdir(tmp_path):
    return runtime_folder(tmp_path, {"agent_fixture": "AGENTFIX.COM", "stepover": "STEPOVER.COM",
                                     "conio": "CONIO.COM"})


def start(c, folder, command, arguments=()):
    return start_session(c, folder, command, arguments, break_at="entry")


def seg(segment, offset):
    return {"space": "segmented", "segment": segment, "offset": offset}


def wait(c, op):
    return c.call("execution.wait", {"operation_id": op, "timeout_ms": 30000})


def step(c, mode="into"):
    op = c.call("execution.step", {"mode": mode})["operation_id"]
    return wait(c, op)["stop_reason"]


def resume(c):
    return wait(c, c.call("execution.continue")["operation_id"])["stop_reason"]


def regs(c):
    return c.call("state.get_registers")


def read(c, segment, offset, length):
    out = c.call("memory.read", {"address": seg(segment, offset), "length": length})
    return base64.b64decode(out["data_base64"]), out


def tree(folder):
    """Every file under ``folder`` with its bytes and mtime."""
    out = {}
    for root, _dirs, files in os.walk(folder):
        for name in files:
            p = os.path.join(root, name)
            with open(p, "rb") as fh:
                out[p] = (fh.read(), os.stat(p).st_mtime_ns)
    return out


def test_the_fixture_flow_through_session_start(srv, workdir):
    c = srv.client()
    started = start(c, workdir, "AGENTFIX.COM")
    assert started["state"] == "stopped" and started["session_id"] == "ses-1"
    stop = started["stop_reason"]
    assert stop["kind"] == "startup" and stop["address"]["offset"] == 0x0100
    status = c.call("session.status", {"session_id": "ses-1"})
    assert status["state"] == "stopped" and status["last_stop"]["kind"] == "startup"
    assert status["target"]["command"] == "AGENTFIX.COM"
    assert status["target"]["mounts"] == [{"drive": "C", "host_path": str(workdir)}]
    assert "exit_code" not in status
    r = regs(c)
    assert r["ip"] == 0x0100
    cs = r["segments"]["cs"]
    assert r["segments"]["ds"] == cs
    entry = c.call("checkpoints.create")

    assert step(c)["kind"] == "step"
    r = regs(c)
    assert r["general"]["ax"] == 0x1234 and r["ip"] == 0x0103

    bp = c.call("breakpoints.create", {"kind": "execution", "address": seg(cs, 0x0106)})
    stop = resume(c)
    assert stop["kind"] == "breakpoint" and stop["breakpoint_id"] == bp["breakpoint_id"]
    assert regs(c)["ip"] == 0x0106
    c.call("breakpoints.delete", {"breakpoint_id": bp["breakpoint_id"]})

    c.call("checkpoints.restore", {"checkpoint_id": entry["checkpoint_id"]})
    assert regs(c)["ip"] == 0x0100
    for _ in range(5):
        assert step(c)["kind"] == "step"
    data, _ = read(c, cs, 0x0200, 4)
    assert data[:3] == b"\x41\x43\x42"

    new = bytes([0xDE, 0xAD, 0xBE, 0xEF])
    wrote = c.call("memory.write", {"address": seg(cs, 0x0200),
                                    "data_base64": base64.b64encode(new).decode()})
    back, out = read(c, cs, 0x0200, 4)
    assert back == new
    assert out["sha256"] == wrote["after_sha256"] == hashlib.sha256(new).hexdigest()

    stop = resume(c)                       # NOP, INT 20h
    assert stop["kind"] == "program_exit" and stop["exit_code"] == 0
    status = c.call("session.status")
    assert status["state"] == "exited" and status["exit_code"] == 0
    assert status["last_stop"]["kind"] == "program_exit"
    for method, params in (("state.get_registers", None), ("execution.continue", None),
                           ("execution.step", {"mode": "into"}),
                           ("memory.read", {"address": seg(cs, 0), "length": 1})):
        err = c.error(method, params)
        assert err["data"]["reason"] == "TARGET_EXITED", (method, err)
    assert c.call("session.status")["state_revision"] == status["state_revision"]


def test_step_over_call_int21_and_rep_movsb(srv, workdir):
    c = srv.client()
    start(c, workdir, "STEPOVER.COM")
    cs = regs(c)["segments"]["cs"]
    parked = c.call("breakpoints.create", {"kind": "execution", "address": seg(cs, 0x0118)})
    before = c.call("breakpoints.list")["breakpoints"]

    stop = step(c, "over")                      # CALL sub1 (which calls sub2)
    assert stop["kind"] == "step"
    r = regs(c)
    assert r["ip"] == 0x0103 and r["general"]["bx"] == 2
    assert c.call("breakpoints.list")["breakpoints"] == before

    step(c)                                     # MOV AH, 02h
    step(c)                                     # MOV DL, 'A'
    assert regs(c)["ip"] == 0x0107
    console = c.call("dos.status")["console_bytes"]
    assert step(c, "over")["kind"] == "step"    # INT 21h AH=02h
    assert regs(c)["ip"] == 0x0109
    assert c.call("dos.status")["console_bytes"] == console + 1
    assert c.call("breakpoints.list")["breakpoints"] == before

    for _ in range(4):                          # MOV SI, MOV DI, MOV CX, CLD
        step(c)
    assert regs(c)["ip"] == 0x0113
    assert step(c, "over")["kind"] == "step"    # REP MOVSB
    r = regs(c)
    assert r["ip"] == 0x0115 and r["general"]["cx"] == 0
    dst = r["general"]["di"] - 5
    assert read(c, cs, dst, 5)[0] == b"hello"
    assert c.call("breakpoints.list")["breakpoints"] == before

    assert step(c, "over")["kind"] == "step"    # not call-like: one instruction
    assert regs(c)["ip"] == 0x0118
    c.call("breakpoints.delete", {"breakpoint_id": parked["breakpoint_id"]})
    stop = step(c, "over")                      # INT 21h AH=4Ch: the program ends
    assert stop["kind"] == "program_exit" and stop["exit_code"] == 0


def test_session_stop_ends_a_running_program_with_its_exit_code(srv, workdir):
    c = srv.client()
    start(c, workdir, "CONIO.COM")
    running = c.call("execution.continue")["operation_id"]
    assert c.call("execution.wait", {"operation_id": running})["running"] is True
    stopping = c.call("session.stop", {"session_id": "ses-1"})
    assert stopping["session_id"] == "ses-1"
    stop = wait(c, stopping["operation_id"])["stop_reason"]
    assert stop["kind"] == "program_exit" and stop["forced"] is True
    assert isinstance(stop["exit_code"], int)
    assert wait(c, running)["stop_reason"] == stop       # the continue ended there too
    status = c.call("session.status")
    assert status["state"] == "exited" and status["exit_code"] == stop["exit_code"]
    assert c.call("dos.status")["exited"] is True
    again = c.call("session.stop")                       # already ended: the same stop
    assert wait(c, again["operation_id"])["stop_reason"] == stop


def test_a_program_that_exits_on_its_own_reports_its_exit_code(srv, workdir):
    c = srv.client()
    start(c, workdir, "STEPOVER.COM")
    stop = resume(c)
    assert stop["kind"] == "program_exit" and stop["exit_code"] == 0
    assert "forced" not in stop
    (workdir / "EXIT42.COM").write_bytes(bytes([0xB8, 0x2A, 0x4C, 0xCD, 0x21]))  # AX=4C2Ah
    assert start(c, workdir, "EXIT42.COM")["session_id"] == "ses-2"
    stop = resume(c)
    assert stop["kind"] == "program_exit" and stop["exit_code"] == 42
    status = c.call("session.status")
    assert status["state"] == "exited" and status["exit_code"] == 42


def test_a_second_start_is_busy_and_leaves_the_first_untouched(srv, workdir):
    c = srv.client()
    start(c, workdir, "AGENTFIX.COM")
    step(c)
    status = c.call("session.status")
    r = regs(c)
    err = c.error("session.start", {"target": {"command": "STEPOVER.COM"},
                                    "mounts": [{"drive": "C", "host_path": str(workdir)}]})
    assert err["data"]["reason"] == "SESSION_BUSY" and err["data"]["session_id"] == "ses-1"
    assert c.call("session.status") == status
    assert regs(c) == r
    c.call("session.stop")
    second = start(c, workdir, "STEPOVER.COM")
    assert second["session_id"] == "ses-2"
    assert second["state_revision"] > status["state_revision"]
    err = c.error("session.status", {"session_id": "ses-1"})
    assert err["data"]["reason"] == "SESSION_NOT_FOUND"


def test_checkpoints_restore_exactly(srv, workdir):
    c = srv.client()
    start(c, workdir, "STEPOVER.COM")
    assert c.call("checkpoints.list")["checkpoints"] == []
    cp = c.call("checkpoints.create")
    assert cp["checkpoint_id"] == "cp-1"
    step(c, "over")
    cp2 = c.call("checkpoints.create")
    first = resume(c)
    assert first["kind"] == "program_exit"
    clock_end = c.call("session.status")["clock"]
    rev = c.call("session.status")["state_revision"]

    out = c.call("checkpoints.restore", {"checkpoint_id": cp["checkpoint_id"]})
    assert out["restored"] is True and out["state_revision"] > rev
    status = c.call("session.status")
    assert status["state"] == "stopped" and status["last_stop"]["kind"] == "startup"
    assert status["clock"] == cp["clock"]
    assert regs(c)["ip"] == 0x0100
    second = resume(c)
    assert second["kind"] == "program_exit"
    strip = lambda s: {**s, "registers": {k: v for k, v in s["registers"].items()  # noqa: E731
                                          if k != "state_revision"}}
    assert strip(second) == strip(first)        # the same registers on the same cycle
    assert c.call("session.status")["clock"] == clock_end

    assert [x["checkpoint_id"] for x in c.call("checkpoints.list")["checkpoints"]] == \
        ["cp-1", "cp-2"]
    c.call("checkpoints.restore", {"checkpoint_id": cp2["checkpoint_id"]})
    assert regs(c)["ip"] == 0x0103
    assert c.call("checkpoints.delete", {"checkpoint_id": "cp-1"})["deleted"] is True
    assert [x["checkpoint_id"] for x in c.call("checkpoints.list")["checkpoints"]] == ["cp-2"]
    for method in ("checkpoints.restore", "checkpoints.delete"):
        err = c.error(method, {"checkpoint_id": "cp-1"})
        assert err["data"]["reason"] == "NOT_FOUND"
    op = c.call("execution.continue")["operation_id"]
    if not wait(c, op)["stop_reason"]["kind"] == "program_exit":
        pytest.fail("the restored program did not end")


def test_checkpoints_need_a_paused_machine(srv):
    c = srv.client()            # the implicit machine runs (no session)
    err = c.error("checkpoints.create")
    assert err["data"]["reason"] == "TARGET_NOT_PAUSED"
    assert c.call("checkpoints.list")["checkpoints"] == []


def test_request_id_replays_the_result_and_runs_once(srv, workdir):
    c = srv.client()
    start(c, workdir, "AGENTFIX.COM")
    cs = regs(c)["segments"]["cs"]
    params = {"address": seg(cs, 0x0300), "data_base64": base64.b64encode(b"\x01\x02").decode(),
              "request_id": "w-1"}
    first = c.call("memory.write", params)
    rev = c.call("session.status")["state_revision"]
    assert c.call("memory.write", params) == first
    assert c.call("session.status")["state_revision"] == rev       # not written again

    conflict = dict(params, data_base64=base64.b64encode(b"\x09\x09").decode())
    err = c.error("memory.write", conflict)
    assert err["data"]["reason"] == "REQUEST_ID_CONFLICT"
    assert read(c, cs, 0x0300, 2)[0] == b"\x01\x02"
    assert c.call("session.status")["state_revision"] == rev
    err = c.error("memory.read", {"address": seg(cs, 0x0300), "length": 2,
                                  "request_id": "w-1"})
    assert err["data"]["reason"] == "REQUEST_ID_CONFLICT"

    s1 = c.call("execution.step", {"mode": "into", "request_id": "s-1"})
    again = c.call("execution.step", {"mode": "into", "request_id": "s-1"})
    assert again == s1
    wait(c, s1["operation_id"])
    assert regs(c)["ip"] == 0x0103                 # one step, not two

    err = c.error("session.status", {"request_id": 7})
    assert err["data"]["reason"] == "INVALID_PARAMS"


def test_request_id_cache_is_bounded(srv, workdir):
    c = srv.client()
    start(c, workdir, "AGENTFIX.COM")
    for i in range(1025):
        c.call("breakpoints.list", {"request_id": f"r-{i}"})
    # r-0 is forgotten: another payload under it runs; r-1 is still known
    assert "breakpoints" not in c.call("session.status", {"request_id": "r-0"})
    err = c.error("session.status", {"request_id": "r-2"})
    assert err["data"]["reason"] == "REQUEST_ID_CONFLICT"


def test_bad_input_is_refused_and_changes_nothing(srv, workdir, tmp_path):
    c = srv.client()
    c.call("execution.pause")
    (workdir / "NOTES.TXT").write_bytes(b"not a program\r\n")
    # an MZ header whose image is larger than the file
    (workdir / "BAD.EXE").write_bytes(b"MZ" + bytes([0, 0, 40, 0]) + bytes(26))
    (tmp_path / "OUT.COM").write_bytes(b"\xcd\x20")
    (workdir / "LINK.COM").symlink_to(tmp_path / "OUT.COM")
    sub = workdir / "SUB"
    sub.mkdir()
    before_files = tree(tmp_path)
    before = c.call("session.status")
    mounts = [{"drive": "C", "host_path": str(workdir)}]
    cases = [
        ({"target": {"command": "MISSING.COM"}, "mounts": mounts}, "PROGRAM_NOT_FOUND"),
        ({"target": {"command": "SUB"}, "mounts": mounts}, "NOT_EXECUTABLE"),
        ({"target": {"command": "NOTES.TXT"}, "mounts": mounts}, "NOT_EXECUTABLE"),
        ({"target": {"command": "..\\OUT.COM"}, "mounts": mounts}, "PATH_OUTSIDE_MOUNT"),
        ({"target": {"command": "SUB\\..\\..\\OUT.COM"}, "mounts": mounts},
         "PATH_OUTSIDE_MOUNT"),
        ({"target": {"command": "LINK.COM"}, "mounts": mounts}, "PATH_OUTSIDE_MOUNT"),
        ({"target": {"command": "BAD.EXE"}, "mounts": mounts}, "BAD_EXECUTABLE"),
        ({"target": {"command": "D:\\AGENTFIX.COM"}, "mounts": mounts}, "PROGRAM_NOT_FOUND"),
        ({"target": {"command": "AGENTFIX.COM"},
          "mounts": [{"drive": "C", "host_path": str(tmp_path / "nowhere")}]},
         "INVALID_PARAMS"),
        ({"target": {"command": "AGENTFIX.COM"}, "mounts": mounts, "break_at": "main"},
         "INVALID_PARAMS"),
        ({"target": {"command": "AGENTFIX.COM"}, "mounts": []}, "INVALID_PARAMS"),
    ]
    for params, reason in cases:
        err = c.error("session.start", params)
        assert err["data"]["reason"] == reason, (params, err)
        assert err["message"]
    assert c.call("session.status") == before
    assert srv.controller.session is None
    assert tree(tmp_path) == before_files
    err = c.error("session.stop")
    assert err["data"]["reason"] == "SESSION_NOT_FOUND"


def test_the_session_methods_are_listed_as_extensions(srv):
    c = srv.client()
    methods = c.call("agent.capabilities")["methods"]
    for name in ("session.start", "session.stop", "checkpoints.create", "checkpoints.list",
                 "checkpoints.restore", "checkpoints.delete"):
        assert name in methods


def test_session_start_is_unsupported_inside_pypc_run(tmp_path, workdir):
    """While a launcher loop holds the machine (its runs routed through the
    controller: a DOS program's run), session.start is refused and the
    machine stays; headless and live runs hand the loop over instead
    (tests/test_rpc_serve.py, tests/test_live_terminal.py)."""
    from pypc_core.machine import Machine, MachineConfig
    from pypc_core.rpc.errors import RpcError
    from pypc_core.rpc.routed import RoutedServer
    from pypc_rpc_methods import session

    machine = Machine(MachineConfig(plugins=["cga"]))
    rpc = RoutedServer(machine, 0)
    try:
        ctl = rpc.controller
        ctl.running = False
        with pytest.raises(RpcError) as err:
            session.start(ctl, {"target": {"command": "AGENTFIX.COM"},
                                "mounts": [{"drive": "C", "host_path": str(workdir)}]})
        assert err.value.reason == "UNSUPPORTED"
        assert ctl.machine is machine and ctl.session is None
    finally:
        rpc.close()
        machine.close()


def test_a_breakpoint_inside_a_stepped_over_call_stops_it_there(srv, workdir):
    c = srv.client()
    start(c, workdir, "STEPOVER.COM")
    cs = regs(c)["segments"]["cs"]
    inner = c.call("breakpoints.create", {"kind": "execution", "address": seg(cs, 0x0121)})
    before = c.call("breakpoints.list")["breakpoints"]
    stop = step(c, "over")                      # CALL sub1 -> CALL sub2 at 0121h
    assert stop["kind"] == "breakpoint" and stop["breakpoint_id"] == inner["breakpoint_id"]
    assert regs(c)["ip"] == 0x0121
    assert [b["breakpoint_id"] for b in c.call("breakpoints.list")["breakpoints"]] == \
        [b["breakpoint_id"] for b in before]


def test_a_trace_of_the_previous_machine_ends_with_session_start(srv, workdir):
    c = srv.client()
    c.call("execution.pause")
    c.call("trace.start", {"instruction_count": 100})
    start(c, workdir, "AGENTFIX.COM")
    parts = srv.controller.parts
    assert parts.after_slice == () and parts.limits == () and parts.before_run == ()
    err = c.error("trace.read", {"cursor": None, "limit": 10})
    assert err["data"]["reason"] == "PRECONDITION_FAILED"
    c.call("trace.start", {"instruction_count": 10})     # a new trace of the program
    step(c)
    events = c.call("trace.read", {"cursor": None, "limit": 10})["events"]
    assert [e["address"]["offset"] for e in events][:1] == [0x0100]
