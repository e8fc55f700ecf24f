"""session.stop over TCP against the real server: the graceful stop
(``graceful_timeout_ms``: Ctrl-Break typed, the program may end by itself,
forced at the timeout counted in emulated time), the immediate one, the
edge cases (a program that ignores the break, one that has exited, two
stops, execution.pause or a breakpoint during the wait, bad timeouts), and
SESSION_NOT_FOUND for unknown session ids.

The guest is tests/guest/dos/breakme.asm; its command-tail letter picks
how it meets Ctrl-Break."""

import json

import pytest

from guest import dos as progs
from session_common import runtime_folder, srv, start_session  # noqa: F401  (srv: a fixture)

CPU_NS = 1_000_000_000
CONTRACT_HZ = 4_770_000                 # docs/rpc.md: ns = cycles x 10^9 / 4,770,000
LONG_MS = 60000                         # the longest graceful timeout


@pytest.fixture
def workdir(tmp_path):
    return runtime_folder(tmp_path, {"breakme": "BREAKME.COM"})


def start(c, folder, mode):
    return start_session(c, folder, "BREAKME.COM", [mode])


def wait(c, op):
    """The operation's stop (polls of up to 60 s of host time, so a loaded
    host or a cold compile never fails a test)."""
    for _ in range(20):
        out = c.call("execution.wait", {"operation_id": op, "timeout_ms": 60000})
        if out.get("state") == "stopped":
            return out["stop_reason"]
    pytest.fail(f"operation {op} did not end in 20 minutes of host time")


def deadline(clock, ms):
    """The emulated cycle a graceful stop asked at ``clock`` ends the program at."""
    ns = clock * CPU_NS // CONTRACT_HZ + ms * 1_000_000
    return -(-ns * CONTRACT_HZ // CPU_NS)


def pipeline(c, *calls):
    """Send every request in one write, then read the replies (in order)."""
    data = b""
    ids = []
    for method, params in calls:
        rid = next(c.ids)
        ids.append(rid)
        data += json.dumps({"jsonrpc": "2.0", "id": rid, "method": method,
                            "params": params}).encode() + b"\n"
    c.send_raw(data)
    out = []
    for (method, _), rid in zip(calls, ids):
        reply = c.read_reply()
        assert reply["id"] == rid and "result" in reply, reply
        assert not c.schemas.result_errors(method, reply["result"]), reply
        out.append(reply["result"])
    return out


def strip(stop):
    """A stop without the revision (a restored run repeats everything else)."""
    return {**stop, "registers": {k: v for k, v in stop["registers"].items()
                                  if k != "state_revision"}}


def screen(c):
    return "\n".join(c.call("video.text")["text"])


def test_the_dos_ends_a_program_that_reads_the_keyboard(srv, workdir):
    c = srv.client()
    start(c, workdir, "d")
    clock = c.call("session.status")["clock"]
    out = c.call("session.stop", {"session_id": "ses-1", "graceful_timeout_ms": 5000})
    assert out["session_id"] == "ses-1" and out["state"] == "running"
    stop = wait(c, out["operation_id"])
    assert stop["kind"] == "program_exit" and stop["forced"] is False
    assert stop["exit_code"] == 0                       # the DOS's INT 23h: AL = 0
    assert clock < stop["registers"]["clock"] < deadline(clock, 5000)
    status = c.call("session.status")
    assert status["state"] == "exited" and status["exit_code"] == 0
    assert status["last_stop"] == stop
    assert c.call("dos.status")["exited"] is True
    assert "^C" in screen_after_exit(srv)
    assert c.error("state.get_registers")["data"]["reason"] == "TARGET_EXITED"


def screen_after_exit(srv):
    return bytes(srv.controller.machine.dos.console_out).decode("cp437")


def test_the_programs_int_23h_handler_ends_it_with_its_own_code(srv, workdir):
    c = srv.client()
    start(c, workdir, "h")
    out = c.call("session.stop", {"graceful_timeout_ms": "5000"})   # numeric strings too
    stop = wait(c, out["operation_id"])
    assert stop["kind"] == "program_exit" and stop["forced"] is False
    assert stop["exit_code"] == 23
    assert "caught Ctrl-Break" in screen(c)
    assert c.call("session.status")["exit_code"] == 23


def test_an_int_1bh_handler_sees_the_break_without_any_dos_call(srv, workdir):
    c = srv.client()
    start(c, workdir, "b")
    stop = wait(c, c.call("session.stop", {"graceful_timeout_ms": 5000})["operation_id"])
    assert stop["kind"] == "program_exit" and stop["forced"] is False
    assert stop["exit_code"] == 27


@pytest.mark.parametrize("mode", ["i", "s", "m", "c"])
def test_a_program_that_ignores_the_break_is_ended_at_the_timeout(srv, workdir, mode):
    # i: its INT 23h handler IRETs; s: spins without DOS calls; m: IRQ 1
    # masked, so no key arrives; c: CLI, HLT
    c = srv.client()
    start(c, workdir, mode)
    clock = c.call("session.status")["clock"]
    out = c.call("session.stop", {"graceful_timeout_ms": 300})
    assert out["state"] == "running"
    stop = wait(c, out["operation_id"])
    assert stop["kind"] == "program_exit" and stop["forced"] is True
    assert stop["exit_code"] == 0
    end = stop["registers"]["clock"]
    assert deadline(clock, 300) <= end < deadline(clock, 300) + 200    # one instruction over at most
    status = c.call("session.status")
    assert status["state"] == "exited" and status["last_stop"] == stop
    assert c.call("dos.status")["exited"] is True


def test_the_same_state_and_stop_give_the_same_forced_end(srv, workdir):
    c = srv.client()
    start(c, workdir, "i")
    cp = c.call("checkpoints.create")["checkpoint_id"]
    ends = []
    for _ in range(2):
        ends.append(wait(c, c.call("session.stop", {"graceful_timeout_ms": 200})["operation_id"]))
        c.call("checkpoints.restore", {"checkpoint_id": cp})
        assert c.call("dos.status")["exited"] is False
    assert ends[0]["forced"] is True and strip(ends[0]) == strip(ends[1])


def test_a_graceful_end_repeats_from_a_checkpoint(srv, workdir):
    c = srv.client()
    start(c, workdir, "h")
    cp = c.call("checkpoints.create")["checkpoint_id"]
    first = wait(c, c.call("session.stop", {"graceful_timeout_ms": 1000})["operation_id"])
    c.call("checkpoints.restore", {"checkpoint_id": cp})
    second = wait(c, c.call("session.stop", {"graceful_timeout_ms": 1000})["operation_id"])
    assert first["forced"] is False and first["exit_code"] == 23
    assert strip(first) == strip(second)


def test_a_stop_on_an_exited_program_returns_its_end(srv, workdir):
    c = srv.client()
    start(c, workdir, "d")
    first = wait(c, c.call("session.stop", {"graceful_timeout_ms": 5000})["operation_id"])
    rev = c.call("session.status")["state_revision"]
    for params in ({"graceful_timeout_ms": 5000}, {}, {"graceful_timeout_ms": 0}):
        again = c.call("session.stop", params)
        assert again["state"] == "exited" and again["state_revision"] == rev
        assert wait(c, again["operation_id"]) == first


@pytest.mark.parametrize("params", [{"graceful_timeout_ms": 0}, {}])
def test_timeout_zero_or_absent_ends_the_program_at_once(srv, workdir, params):
    c = srv.client()
    start(c, workdir, "d")
    clock = c.call("session.status")["clock"]
    out = c.call("session.stop", params)
    assert out["state"] == "exited"
    stop = wait(c, out["operation_id"])
    assert stop["kind"] == "program_exit" and stop["forced"] is True
    assert stop["registers"]["clock"] == clock          # no emulated time passed
    assert "^C" not in screen_after_exit(srv)           # no key was typed
    assert c.call("session.status")["last_stop"] == stop


def test_a_graceful_stop_rides_on_a_running_continue(srv, workdir):
    c = srv.client()
    start(c, workdir, "h")          # waits for a key: it cannot end before the break
    running = c.call("execution.continue")["operation_id"]
    out = c.call("session.stop", {"graceful_timeout_ms": 5000})
    assert out["operation_id"] != running and out["state"] == "running"
    stop = wait(c, out["operation_id"])
    assert stop["kind"] == "program_exit" and stop["forced"] is False
    assert stop["exit_code"] == 23
    assert wait(c, running) == stop


def test_a_second_stop_keeps_the_earlier_deadline_and_types_no_second_break(srv, workdir):
    c = srv.client()
    start(c, workdir, "i")
    clock = c.call("session.status")["clock"]
    # the second request comes while the first waits (60 emulated seconds
    # are far more than the host time between two lines of one write)
    first, second = pipeline(c, ("session.stop", {"graceful_timeout_ms": LONG_MS}),
                             ("session.stop", {"graceful_timeout_ms": 100}))
    assert first["operation_id"] != second["operation_id"]
    assert second["state"] == "running"
    stop = wait(c, second["operation_id"])
    assert wait(c, first["operation_id"]) == stop
    assert stop["forced"] is True
    assert stop["registers"]["clock"] < deadline(clock, LONG_MS)
    assert screen_after_exit(srv).count("^C") == 1      # one Ctrl-Break, one ^C
    third, fourth = pipeline(c, ("session.stop", {"graceful_timeout_ms": 100}),
                             ("session.stop", {}))
    assert third["state"] == fourth["state"] == "exited"
    assert wait(c, third["operation_id"]) == wait(c, fourth["operation_id"]) == stop


def test_an_immediate_stop_during_a_graceful_one_ends_both(srv, workdir):
    c = srv.client()
    start(c, workdir, "m")
    clock = c.call("session.status")["clock"]
    graceful, forced = pipeline(c, ("session.stop", {"graceful_timeout_ms": LONG_MS}),
                                ("session.stop", {}))
    assert graceful["state"] == "running" and forced["state"] == "exited"
    stop = wait(c, forced["operation_id"])
    assert wait(c, graceful["operation_id"]) == stop
    assert stop["forced"] is True and stop["registers"]["clock"] < deadline(clock, LONG_MS)


def test_execution_pause_ends_the_graceful_wait_and_the_program_lives_on(srv, workdir):
    c = srv.client()
    start(c, workdir, "m")
    clock = c.call("session.status")["clock"]
    # the pause comes in the same write, long before 60 emulated seconds pass
    out, paused = pipeline(c, ("session.stop", {"graceful_timeout_ms": LONG_MS}),
                           ("execution.pause", {}))
    assert paused["paused"] is True
    stop = wait(c, out["operation_id"])
    assert stop["kind"] == "pause"
    status = c.call("session.status")
    assert status["state"] == "stopped" and "exit_code" not in status
    assert c.call("dos.status")["exited"] is False
    # the old deadline is gone: running past it ends nothing
    past = deadline(clock, LONG_MS) - stop["registers"]["clock"] + 4770
    ran = c.call("execution.run_until", {"max_emulated_ns": past * CPU_NS // CONTRACT_HZ + 1})
    assert wait(c, ran["operation_id"])["kind"] == "emulated_time_limit"
    assert c.call("session.status")["state"] == "stopped"
    # and a new stop still works
    end = wait(c, c.call("session.stop", {"graceful_timeout_ms": 10})["operation_id"])
    assert end["kind"] == "program_exit" and end["forced"] is True


def test_a_breakpoint_in_the_handler_ends_the_wait(srv, workdir):
    c = srv.client()
    start(c, workdir, "i")
    code = progs.program_bytes("breakme")
    handler = 0x100 + code.index(bytes([0xB8, 0x17, 0x4C, 0xCD, 0x21, 0xCF])) + 5   # just_iret
    cs = c.call("state.get_registers")["segments"]["cs"]
    bp = c.call("breakpoints.create", {"address": {"space": "segmented", "segment": cs,
                                                   "offset": handler}})
    clock = c.call("session.status")["clock"]
    stop = wait(c, c.call("session.stop", {"graceful_timeout_ms": 500})["operation_id"])
    assert stop["kind"] == "breakpoint" and stop["breakpoint_id"] == bp["breakpoint_id"]
    assert c.call("session.status")["state"] == "stopped"
    c.call("breakpoints.delete", {"breakpoint_id": bp["breakpoint_id"]})
    past = deadline(clock, 500) - stop["registers"]["clock"] + 4770
    ran = c.call("execution.run_until", {"max_emulated_ns": past * CPU_NS // CONTRACT_HZ + 1})
    assert wait(c, ran["operation_id"])["kind"] == "emulated_time_limit"
    assert c.call("dos.status")["exited"] is False


def test_a_stop_after_restoring_a_checkpoint_from_before_the_end(srv, workdir):
    c = srv.client()
    start(c, workdir, "s")
    cp = c.call("checkpoints.create")["checkpoint_id"]
    wait(c, c.call("session.stop")["operation_id"])
    c.call("checkpoints.restore", {"checkpoint_id": cp})
    assert c.call("session.status")["state"] == "stopped"
    assert c.call("dos.status")["exited"] is False
    stop = wait(c, c.call("session.stop")["operation_id"])
    assert stop["kind"] == "program_exit" and stop["forced"] is True
    assert c.call("dos.status")["exited"] is True


@pytest.mark.parametrize("value", [-1, 60001, "60001", "soon", 1.5, True, None, [100], "-5"])
def test_a_bad_timeout_is_refused_and_changes_nothing(srv, workdir, value):
    c = srv.client()
    err = c.error("session.stop", {"graceful_timeout_ms": value})    # no session yet
    assert err["data"]["reason"] == "INVALID_PARAMS"
    start(c, workdir, "d")
    before = c.call("session.status")
    regs = c.call("state.get_registers")
    err = c.error("session.stop", {"graceful_timeout_ms": value})
    assert err["code"] == -32602 and err["data"]["reason"] == "INVALID_PARAMS"
    assert "graceful_timeout_ms" in err["message"]
    assert c.call("session.status") == before
    assert c.call("state.get_registers") == regs
    assert srv.controller.machine.keyboard.typing_pending() == 0    # no Ctrl-Break typed
    ops = c.call("execution.step")["operation_id"]
    assert ops == "op-1"                                # no operation was made


def test_unknown_session_ids_are_session_not_found(srv, workdir):
    c = srv.client()
    assert c.call("session.status", {"session_id": "pypc"})["session_id"] == "pypc"
    for method, params in (("session.status", {"session_id": "other"}),
                           ("session.status", {"session_id": "ses-1"}),
                           ("session.stop", {}),
                           ("session.stop", {"session_id": "pypc"}),
                           ("session.stop", {"session_id": "ses-1",
                                             "graceful_timeout_ms": 100})):
        err = c.error(method, params)
        assert err["code"] == -32602 and err["data"]["reason"] == "SESSION_NOT_FOUND", err
    start(c, workdir, "d")
    before = c.call("session.status")
    assert c.call("session.status", {"session_id": "pypc"}) == before     # 003: accepted
    for method, params in (("session.status", {"session_id": "ses-2"}),
                           ("session.stop", {"session_id": "ses-2"}),
                           ("session.stop", {"session_id": "SES-1",
                                             "graceful_timeout_ms": 100})):
        err = c.error(method, params)
        assert err["data"]["reason"] == "SESSION_NOT_FOUND"
        assert err["data"]["session_id"] == params["session_id"]
    assert c.call("session.status") == before
    assert c.call("dos.status")["exited"] is False


def test_a_graceful_stop_rides_on_a_run_until_and_the_earlier_limit_wins(srv, workdir):
    c = srv.client()
    start(c, workdir, "i")                  # ignores the break: only a limit ends the run
    cp = c.call("checkpoints.create")["checkpoint_id"]
    # the run_until's 30 s come before the stop's 60 s: its time limit ends both
    ran, out = pipeline(c, ("execution.run_until", {"max_emulated_ns": 30 * CPU_NS}),
                        ("session.stop", {"graceful_timeout_ms": LONG_MS}))
    assert out["state"] == "running"
    stop = wait(c, out["operation_id"])
    assert stop["kind"] == "emulated_time_limit" and wait(c, ran["operation_id"]) == stop
    assert c.call("dos.status")["exited"] is False
    # the stop's 100 ms come before the run_until's 60 s: the program is ended
    c.call("checkpoints.restore", {"checkpoint_id": cp})
    clock = c.call("session.status")["clock"]
    ran, out = pipeline(c, ("execution.run_until", {"max_emulated_ns": 60 * CPU_NS}),
                        ("session.stop", {"graceful_timeout_ms": 100}))
    stop = wait(c, out["operation_id"])
    assert stop["kind"] == "program_exit" and stop["forced"] is True
    assert wait(c, ran["operation_id"]) == stop
    assert stop["registers"]["clock"] < clock + 60 * CONTRACT_HZ
