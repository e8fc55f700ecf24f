"""The agent spec's fixture (section 10, tests/guest/dos/agent_fixture.asm)
under the in-process session API: a program started stopped on its first
instruction, stepped, broken into, read, written and ended."""

import hashlib
import os
import shutil

import pytest

from guest import dos as progs
from pypc_core.dos_session import DosSession, SessionError
from pypc_core.errors import PypcError


@pytest.fixture
def runtime(tmp_path):
    """A clean copy of the fixture in its own folder (the spec: a clean runtime)."""
    shutil.copy(progs.path("agent_fixture"), tmp_path / "AGENTFIX.COM")
    return tmp_path


def test_entry_step_and_breakpoint(runtime):
    with DosSession(str(runtime / "AGENTFIX.COM")) as s:
        stop = s.start()
        assert stop["kind"] == "startup"
        assert stop["ip"] == 0x0100
        cs = stop["cs"]
        assert s.read_memory(cs, 0, 2) == b"\xcd\x20"         # the PSP is at CS:0000
        assert s.registers["ds"] == cs and s.registers["ss"] == cs
        stop = s.step()
        assert stop["kind"] == "step"
        assert s.registers["ax"] == 0x1234
        assert s.registers["ip"] == 0x0103
        bp = s.add_breakpoint(cs, 0x0106)
        stop = s.resume()
        assert stop == {"kind": "breakpoint", "cs": cs, "ip": 0x0106, "breakpoint_id": bp}
        assert s.registers["bx"] == 0x5678
        assert s.list_breakpoints() == [{"breakpoint_id": bp, "linear": (cs << 4) + 0x106}]


def test_five_steps_write_the_data(runtime):
    with DosSession(str(runtime / "AGENTFIX.COM")) as s:
        s.start()
        before = s.read_memory(s.registers["ds"], 0x0200, 4)
        for _ in range(5):
            assert s.step()["kind"] == "step"
        data = s.read_memory(s.registers["ds"], 0x0200, 4)
        assert data[:3] == b"\x41\x43\x42"
        assert data[3] == before[3]                  # not written by the fixture
        assert s.registers["ip"] == 0x0111


def test_memory_write_then_read_agree(runtime):
    with DosSession(str(runtime / "AGENTFIX.COM")) as s:
        s.start()
        ds = s.registers["ds"]
        data = bytes([0xDE, 0xAD, 0xBE, 0xEF])
        s.write_memory(ds, 0x0200, data)
        back = s.read_memory(ds, 0x0200, 4)
        assert back == data
        assert hashlib.sha256(back).hexdigest() == hashlib.sha256(data).hexdigest()


def test_program_exit_is_a_stop_with_the_exit_code(runtime):
    with DosSession(str(runtime / "AGENTFIX.COM")) as s:
        s.start()
        stop = s.resume()
        assert stop == {"kind": "program_exit", "exit_code": 0}
        assert s.status()["state"] == "exited"
        assert s.status()["exit_code"] == 0
        with pytest.raises(SessionError) as err:
            s.registers
        assert err.value.reason == "TARGET_EXITED"
        with pytest.raises(SessionError):
            s.step()


def test_stepping_through_int_20h_ends_the_program(runtime):
    with DosSession(str(runtime / "AGENTFIX.COM")) as s:
        s.start()
        kinds = []
        while not kinds or kinds[-1] != "program_exit":
            kinds.append(s.step()["kind"])
            assert len(kinds) < 20
        # 7 instructions, then the DOS's INT 20h entry: STI and the service
        assert kinds == ["step"] * 8 + ["program_exit"]
        assert s.exit_code == 0


def test_exit_code_of_a_program_with_arguments(tmp_path):
    progs.install(tmp_path, "child")
    with DosSession(str(tmp_path / "CHILD.COM"), ["x"]) as s:
        s.start()
        assert s.resume() == {"kind": "program_exit", "exit_code": 42}
        assert s.dos.console_out.startswith(b"child tail:[ x]")


def test_stop_ends_a_stopped_program(runtime):
    with DosSession(str(runtime / "AGENTFIX.COM")) as s:
        s.start()
        stop = s.stop()
        assert stop["kind"] == "program_exit" and stop["forced"] is True
        assert s.status()["state"] == "exited"
        assert s.stop()["kind"] == "program_exit"


def test_second_start_is_refused_and_the_first_untouched(runtime):
    with DosSession(str(runtime / "AGENTFIX.COM")) as s:
        s.start()
        s.step()
        with pytest.raises(SessionError) as err:
            s.start()
        assert err.value.reason == "SESSION_BUSY"
        assert s.registers["ax"] == 0x1234 and s.status()["state"] == "stopped"


def test_memory_map_lists_the_program_and_its_environment(runtime):
    with DosSession(str(runtime / "AGENTFIX.COM")) as s:
        s.start()
        psp = s.registers["cs"]
        arena = s.memory_map()
        program = [b for b in arena if b["segment"] == psp][0]
        assert program["owner"] == psp and program["name"] == "AGENTFIX"
        env = [b for b in arena if b["owner"] == psp and b["segment"] != psp]
        assert len(env) == 1
        assert s.read_memory(psp, 0x2C, 2) == env[0]["segment"].to_bytes(2, "little")
        assert arena[-1]["last"]


def test_bad_programs_are_refused_before_a_machine_exists(tmp_path):
    (tmp_path / "NOTES.TXT").write_text("hello")
    (tmp_path / "BAD.EXE").write_bytes(b"MZ" + bytes(10))
    for program in (str(tmp_path / "MISSING.COM"), str(tmp_path / "NOTES.TXT"),
                    str(tmp_path / "BAD.EXE")):
        with pytest.raises(PypcError):
            DosSession(program)
    with pytest.raises(PypcError):
        DosSession("C:\\..\\X.COM", mounts={"C": str(tmp_path)})
    assert sorted(os.listdir(tmp_path)) == ["BAD.EXE", "NOTES.TXT"]


def test_a_restored_state_repeats_the_run(tmp_path):
    """Machine.get_state/set_state carry the DOS's own state: a run from a
    restored state repeats the original one cycle for cycle."""
    progs.install(tmp_path, "memtest")
    with DosSession(str(tmp_path / "MEMTEST.EXE")) as s:
        s.start()
        m = s.machine
        for _ in range(40):
            s.step()
        cp = s.checkpoint()
        regs = s.registers
        mark = len(m.dos.console_out)
        first = s.resume()
        out1, cycles1 = bytes(m.dos.console_out[mark:]), m.clock()
        assert s.restore(cp)["kind"] == "step"
        assert s.status()["state"] == "stopped" and s.registers == regs
        assert not m.dos.exited and m.dos.exit_code is None
        mark = len(m.dos.console_out)
        assert s.resume() == first == {"kind": "program_exit", "exit_code": 0}
        assert bytes(m.dos.console_out[mark:]) == out1 and m.clock() == cycles1
        assert out1.count(b"ok   ") == 26 and b"FAIL" not in out1
        assert s.list_checkpoints() == [cp]
        s.delete_checkpoint(cp)
        with pytest.raises(SessionError):
            s.restore(cp)


def test_step_over_a_call_an_int_21h_and_a_rep_movsb(tmp_path):
    progs.install(tmp_path, "stepover")
    with DosSession(str(tmp_path / "STEPOVER.COM")) as s:
        cs = s.start()["cs"]
        mark = s.add_breakpoint(cs, 0x0118)              # the final INT 21h
        listed = s.list_breakpoints()
        assert s.step("over") == {"kind": "step", "cs": cs, "ip": 0x0103}
        assert s.registers["bx"] == 2                   # sub1 and sub2 ran
        s.step()
        s.step()
        assert s.step("over") == {"kind": "step", "cs": cs, "ip": 0x0109}
        assert s.dos.console_out == b"A"
        for _ in range(4):
            s.step()
        assert s.registers["ip"] == 0x0113
        assert s.step("over") == {"kind": "step", "cs": cs, "ip": 0x0115}
        assert s.read_memory(cs, 0x0128, 5) == b"hello" and s.registers["cx"] == 0
        assert s.step("over")["ip"] == 0x0118                   # not call-like: one step
        assert s.list_breakpoints() == listed
        assert s.step("over") == {"kind": "program_exit", "exit_code": 0}
        assert mark in [b["breakpoint_id"] for b in s.list_breakpoints()]


def test_step_over_stops_at_a_breakpoint_inside_the_call(tmp_path):
    progs.install(tmp_path, "stepover")
    with DosSession(str(tmp_path / "STEPOVER.COM")) as s:
        cs = s.start()["cs"]
        bp = s.add_breakpoint(cs, 0x0121)               # sub2
        stop = s.step("over")
        assert stop == {"kind": "breakpoint", "cs": cs, "ip": 0x0121, "breakpoint_id": bp}
        assert s.step("over") == {"kind": "step", "cs": cs, "ip": 0x0122}
        with pytest.raises(SessionError) as err:
            s.step("sideways")
        assert err.value.reason == "INVALID_PARAMS"
