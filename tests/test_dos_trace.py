"""dos.trace.start/read/stop over TCP: the built-in DOS's record of the file,
directory, program and memory calls a program makes, checked against what
tests/guest/dos/dostrace.asm does (in order, with results), run through
session.start on the real server (``rpc_client.RpcFixture``).  Also: the
class and path filters, the data bytes kept, overflow of the ring, paging
with limit 1, cursors, bad params that change nothing, no recording without
a trace or after its stop, session.start dropping the trace, and a machine
without the built-in DOS."""

import base64
import os

import pytest

from guest import dos as progs
from pypc_core.dos.trace import DosTrace
from pypc_core.rpc.stops import cycles_to_ns
from pypc_rpc_methods.dos_trace import DosTraceJournal
import session_common
from session_common import runtime_folder, srv  # noqa: F401  (srv: a fixture)

INT21 = b"\xcd\x21"


@pytest.fixture
def workdir(tmp_path):
    return runtime_folder(tmp_path, {"dostrace": "DOSTRACE.COM", "child": "CHILD.COM"})


def start_session(c, folder, command="DOSTRACE.COM"):
    return session_common.start_session(c, folder, command)


def run_to_exit(c):
    op = c.call("execution.continue")["operation_id"]
    stop = c.call("execution.wait", {"operation_id": op, "timeout_ms": 60000})["stop_reason"]
    return stop


def read_all(c, limit=65536):
    return c.call("dos.trace.read", {"cursor": None, "limit": limit})


def b64(data):
    return base64.b64encode(data).decode()


def expected_calls(folder, data_bytes=64):
    """(name, function, args, result) of every call dostrace.asm makes, in
    order (the child's exit between exec and get_return_code)."""
    root = os.path.realpath(folder)

    def host(name):
        return os.path.join(root, name)

    def data(raw):
        return {"data_base64": b64(raw[:data_bytes])} if data_bytes else {}
    data_file = {"handle": 5, "file_name": "DATA.TMP", "host_path": host("DATA.TMP"),
                 "path": "DATA.TMP"}
    return [
        ("resize", 0x4A, {"segment": "PSP", "paragraphs": "SIZE"}, {"ok": True}),
        ("create", 0x3C, {"path": "DATA.TMP", "host_path": host("DATA.TMP"), "attributes": 0},
         {"ok": True, "handle": 5}),
        ("write", 0x40, dict(data_file, byte_count=16, buffer="BUF"),
         dict({"ok": True, "byte_count": 16}, **data(b"0123456789ABCDEF"))),
        ("ioctl", 0x44, dict(data_file, subfunction=0), {"ok": True, "info": 2}),
        ("seek", 0x42, dict(data_file, origin="start", offset=4), {"ok": True, "position": 4}),
        ("read", 0x3F, dict(data_file, byte_count=6, buffer="BUF"),
         dict({"ok": True, "byte_count": 6}, **data(b"456789"))),
        ("seek", 0x42, dict(data_file, origin="end", offset=-2), {"ok": True, "position": 14}),
        ("read", 0x3F, dict(data_file, byte_count=8, buffer="BUF"),
         dict({"ok": True, "byte_count": 2}, **data(b"EF"))),
        ("close", 0x3E, data_file, {"ok": True}),
        ("close", 0x3E, {"handle": 5},
         {"ok": False, "error": {"code": 6, "name": "invalid_handle"}}),
        ("open", 0x3D, {"path": "MISSING.DAT", "mode": 0, "access": "read"},
         {"ok": False, "error": {"code": 2, "name": "file_not_found"}}),
        ("fcb_open", 0x0F, {"fcb": {"address": "FCB", "extended": False, "drive": 0,
                                    "name": "DATA.TMP"}},
         {"ok": False, "not_provided": True}),
        ("rename", 0x56, {"path": "DATA.TMP", "host_path": host("DATA.TMP"),
                          "new_path": "RENAMED.TMP", "new_host_path": host("RENAMED.TMP")},
         {"ok": True}),
        ("mkdir", 0x39, {"path": "SUB", "host_path": host("SUB")}, {"ok": True}),
        ("chdir", 0x3B, {"path": "SUB", "host_path": host("SUB")}, {"ok": True}),
        ("get_cwd", 0x47, {"drive": 0}, {"ok": True, "path": "SUB"}),
        ("chdir", 0x3B, {"path": "\\", "host_path": root}, {"ok": True}),
        ("rmdir", 0x3A, {"path": "SUB", "host_path": host("SUB")}, {"ok": True}),
        ("find_first", 0x4E, {"attributes": 0, "path": "*.TMP", "host_folder": root},
         {"ok": True, "found": {"name": "RENAMED.TMP", "attributes": 0x20, "size": 16,
                                "time": "T", "date": "D"}}),
        ("find_next", 0x4F, {}, {"ok": False, "error": {"code": 18, "name": "no_more_files"}}),
        ("delete", 0x41, {"path": "RENAMED.TMP", "host_path": host("RENAMED.TMP")},
         {"ok": True}),
        ("delete", 0x41, {"path": "RENAMED.TMP"},
         {"ok": False, "error": {"code": 2, "name": "file_not_found"}}),
        ("write", 0x40, {"handle": 1, "device": "CON", "byte_count": 6, "buffer": "BUF"},
         dict({"ok": True, "byte_count": 6}, **data(b"done\r\n"))),
        ("exec", 0x4B, {"subfunction": 0, "path": "CHILD.COM", "host_path": host("CHILD.COM"),
                        "command_tail": " hi", "environment": 0},
         {"ok": True, "child_psp": "CHILD", "entry": "ENTRY"}),
        ("exit", 0x4C, {"exit_code": 42, "parent_psp": "PSP"}, {"ok": True}),
        ("get_return_code", 0x4D, {}, {"ok": True, "exit_code": 42, "exit_type": 0}),
        ("exit", 0x4C, {"exit_code": 7, "parent_psp": 0x0060}, {"ok": True}),
    ]


CLASS = {"resize": "memory", "exec": "program", "exit": "program", "get_return_code": "program",
         "mkdir": "directory", "chdir": "directory", "get_cwd": "directory",
         "rmdir": "directory", "find_first": "directory", "find_next": "directory"}


def check_events(events, expected, psp, child_bytes, parent_bytes):
    """``events`` are exactly ``expected``; the placeholders are checked
    here: PSP (the program's PSP), CHILD (the child's), BUF/FCB (addresses
    in the program), T/D (the host file's time stamp)."""
    assert [(e["name"], e["function"]) for e in events] == [(n, f) for n, f, _a, _r in expected]
    child_psp = None
    for e, (name, function, args, result) in zip(events, expected):
        assert e["interrupt"] == 0x21
        assert e["class"] == CLASS.get(name, "file"), e
        assert e["emulated_time"] == cycles_to_ns(e["clock"])
        got_args = dict(e["args"])
        want_args = dict(args)
        for key, value in list(want_args.items()):
            if value == "PSP":
                want_args[key] = psp
            elif value == "SIZE":
                assert 0 < got_args[key] < 0x1000
                want_args[key] = got_args[key]
            elif value == "BUF":
                assert got_args[key]["segment"] == psp
                want_args[key] = got_args[key]
            elif key == "fcb":
                # the FCB in the program's image, at the linear address given
                offset = got_args[key]["address"] - psp * 16
                assert parent_bytes[offset - 0x100:offset - 0x100 + 12] == b"\0DATA    TMP"
                want_args[key] = dict(value, address=got_args[key]["address"])
        assert got_args == want_args, (name, got_args, want_args)
        got_result = dict(e["result"])
        want_result = dict(result)
        if "found" in want_result:
            found = dict(got_result["found"])
            assert 0 <= found.pop("time") <= 0xFFFF and 0 <= found.pop("date") <= 0xFFFF
            want_found = {k: v for k, v in want_result["found"].items()
                          if k not in ("time", "date")}
            assert found == want_found
            got_result.pop("found")
            want_result.pop("found")
        if want_result.get("child_psp") == "CHILD":
            child_psp = got_result["child_psp"]
            assert child_psp != psp
            assert got_result["entry"] == {"space": "segmented", "segment": child_psp,
                                           "offset": 0x100}
            want_result["child_psp"], want_result["entry"] = child_psp, got_result["entry"]
        assert got_result == want_result, (name, got_result, want_result)
        # the caller: the INT 21h instruction of the program that made the call
        owner = child_psp if (name == "exit" and e["args"]["exit_code"] == 42) else psp
        assert e["psp"] == owner
        where = e["address"]
        assert where["segment"] == owner
        assert e["return_address"] == dict(where, offset=where["offset"] + 2)
        image = child_bytes if owner == child_psp else parent_bytes
        assert image[where["offset"] - 0x100:where["offset"] - 0x100 + 2] == INT21
    sequences = [e["sequence"] for e in events]
    assert sequences == list(range(sequences[0], sequences[0] + len(events)))
    clocks = [e["clock"] for e in events]
    assert clocks == sorted(clocks) and len(set(clocks)) == len(clocks)


def test_the_trace_is_what_the_program_did(srv, workdir):
    c = srv.client()
    started = start_session(c, workdir)
    psp = started["stop_reason"]["registers"]["segments"]["cs"]
    meta = c.call("dos.trace.start", {"data_bytes": 16})
    assert meta == {"active": True, "capacity": 4096, "dropped_event_count": 0,
                    "first_available_sequence": 1, "event_count": 0,
                    "classes": ["file", "directory", "program", "memory"], "data_bytes": 16,
                    "dos": "built_in"}
    stop = run_to_exit(c)
    assert stop["kind"] == "program_exit" and stop["exit_code"] == 7
    out = read_all(c)
    events = out.pop("events")
    expected = expected_calls(workdir, data_bytes=16)
    assert out == {"active": True, "capacity": 4096, "dropped_event_count": 0,
                   "first_available_sequence": 1, "event_count": len(expected),
                   "classes": ["file", "directory", "program", "memory"], "data_bytes": 16,
                   "dos": "built_in", "next_cursor": f"dos-{len(expected)}"}
    check_events(events, expected, psp, progs.program_bytes("child"),
                 progs.program_bytes("dostrace"))
    assert events[0]["sequence"] == 1
    # what the trace says happened did happen on the host
    assert sorted(os.listdir(workdir)) == ["CHILD.COM", "DOSTRACE.COM"]
    # reading again from the last cursor: nothing new, the same cursor back
    again = c.call("dos.trace.read", {"cursor": out["next_cursor"]})
    assert again["events"] == [] and again["next_cursor"] == out["next_cursor"]
    final = c.call("dos.trace.stop")
    assert final["active"] is False and final["event_count"] == len(expected)
    assert read_all(c)["events"] == events         # stop keeps the events


def test_data_bytes_zero_and_large(srv, workdir):
    c = srv.client()
    start_session(c, workdir)
    c.call("dos.trace.start", {"data_bytes": 0, "classes": ["file"]})
    run_to_exit(c)
    events = read_all(c)["events"]
    assert all(e["class"] == "file" for e in events)
    assert [e["name"] for e in events if e["name"] in ("read", "write")] == \
        ["write", "read", "read", "write"]
    assert not any("data_base64" in e["result"] for e in events)


def test_class_and_path_filters(srv, workdir):
    c = srv.client()
    start_session(c, workdir)
    c.call("dos.trace.start", {"classes": ["program"]})
    run_to_exit(c)
    names = [(e["name"], e["class"]) for e in read_all(c)["events"]]
    assert names == [("exec", "program"), ("exit", "program"),
                     ("get_return_code", "program"), ("exit", "program")]

    start_session(c, workdir)                       # a new session, a new machine
    meta = c.call("dos.trace.start", {"classes": ["all"], "path_contains": "renamed"})
    assert meta["path_contains"] == "renamed"
    run_to_exit(c)
    events = read_all(c)["events"]
    assert [(e["name"], e["result"]["ok"]) for e in events] == [
        ("rename", True), ("find_first", True), ("delete", True), ("delete", False)]
    assert events[1]["result"]["found"]["name"] == "RENAMED.TMP"
    assert [e["sequence"] for e in events] == [1, 2, 3, 4]

    start_session(c, workdir)
    c.call("dos.trace.start", {"classes": ["directory", "memory"]})
    run_to_exit(c)
    assert [e["name"] for e in read_all(c)["events"]] == [
        "resize", "mkdir", "chdir", "get_cwd", "chdir", "rmdir", "find_first", "find_next"]


def test_overflow_keeps_the_newest_and_says_so(srv, workdir):
    c = srv.client()
    start_session(c, workdir)
    c.call("dos.trace.start", {"capacity": 4})
    run_to_exit(c)
    total = len(expected_calls(workdir))
    out = read_all(c)
    assert out["capacity"] == 4 and out["event_count"] == total
    assert out["dropped_event_count"] == total - 4
    assert out["first_available_sequence"] == total - 3
    assert [e["sequence"] for e in out["events"]] == list(range(total - 3, total + 1))
    assert [e["name"] for e in out["events"]] == ["exec", "exit", "get_return_code", "exit"]
    err = c.error("dos.trace.read", {"cursor": "dos-0"})
    assert err["data"]["reason"] == "CURSOR_EXPIRED"
    assert err["data"]["first_available_sequence"] == total - 3
    # the cursor just before the first retained event is still good
    page = c.call("dos.trace.read", {"cursor": f"dos-{total - 4}", "limit": 2})
    assert [e["sequence"] for e in page["events"]] == [total - 3, total - 2]


def test_paging_with_limit_one_has_no_gaps_or_repeats(srv, workdir):
    c = srv.client()
    start_session(c, workdir)
    c.call("dos.trace.start")
    run_to_exit(c)
    whole = read_all(c)["events"]
    paged, cursor = [], None
    for _ in range(len(whole) + 2):
        page = c.call("dos.trace.read", {"cursor": cursor, "limit": 1})
        assert len(page["events"]) <= 1
        if not page["events"]:
            assert page["next_cursor"] == cursor
            break
        paged += page["events"]
        cursor = page["next_cursor"]
        assert cursor == f"dos-{page['events'][0]['sequence']}"
    assert paged == whole and len(whole) == len(expected_calls(workdir))


def test_bad_params_are_refused_and_change_nothing(srv, workdir):
    c = srv.client()
    start_session(c, workdir)
    c.call("dos.trace.start", {"capacity": 64, "data_bytes": 8})
    run_to_exit(c)
    before = read_all(c)
    assert before["active"] is True and before["event_count"] > 0
    for params, reason in (
            ({"capacity": 0}, "INVALID_PARAMS"),
            ({"capacity": 65537}, "LIMIT_EXCEEDED"),
            ({"capacity": "many"}, "INVALID_PARAMS"),
            ({"capacity": True}, "INVALID_PARAMS"),
            ({"data_bytes": -1}, "INVALID_PARAMS"),
            ({"data_bytes": 4097}, "LIMIT_EXCEEDED"),
            ({"capacity": 65536, "data_bytes": 4096}, "LIMIT_EXCEEDED"),
            ({"classes": []}, "INVALID_PARAMS"),
            ({"classes": ["disk"]}, "INVALID_PARAMS"),
            ({"classes": "file"}, "INVALID_PARAMS"),
            ({"path_contains": ""}, "INVALID_PARAMS"),
            ({"path_contains": "x" * 129}, "INVALID_PARAMS"),
            ({"include_io": True}, "INVALID_PARAMS")):
        err = c.error("dos.trace.start", params)
        assert err["code"] == -32602 and err["data"]["reason"] == reason, (params, err)
    for params, reason in (
            ({"limit": 0}, "INVALID_PARAMS"),
            ({"limit": 65537}, "LIMIT_EXCEEDED"),
            ({"cursor": "hardware-1"}, "INVALID_PARAMS"),
            ({"cursor": "dos-x"}, "INVALID_PARAMS"),
            ({"cursor": f"dos-{before['event_count'] + 1}"}, "INVALID_PARAMS"),
            ({"cursor": 3}, "INVALID_PARAMS"),
            ({"history_id": "dos-1"}, "INVALID_PARAMS")):
        err = c.error("dos.trace.read", params)
        assert err["data"]["reason"] == reason, (params, err)
    err = c.error("dos.trace.stop", {"now": True})
    assert err["data"]["reason"] == "INVALID_PARAMS"
    assert read_all(c) == before                   # still recording, the same events
    assert srv.controller.machine.dos.tracer is not None


def test_nothing_is_recorded_without_a_trace_or_after_its_stop(srv, workdir):
    c = srv.client()
    start_session(c, workdir)
    assert srv.controller.machine.dos.tracer is None
    err = c.error("dos.trace.read")                 # before any start
    assert err["data"]["reason"] == "PRECONDITION_FAILED"
    assert c.error("dos.trace.stop")["data"]["reason"] == "PRECONDITION_FAILED"
    # the program runs untraced: nothing is kept anywhere
    assert run_to_exit(c)["exit_code"] == 7
    assert srv.controller.machine.dos.tracer is None
    meta = c.call("dos.trace.start")                # after the exit: nothing more happens
    assert read_all(c)["events"] == [] and meta["event_count"] == 0

    # stopped before the rename: the calls after it are not recorded
    start_session(c, workdir)
    c.call("dos.trace.start")
    c.call("breakpoints.create", {"kind": "interrupt",
                                  "event": {"type": "software_interrupt", "number": "0x21",
                                            "ah": "0x56"}})
    stop = run_to_exit(c)
    assert stop["kind"] == "breakpoint"
    stopped = c.call("dos.trace.stop")
    assert stopped["active"] is False and stopped["event_count"] == 12
    assert srv.controller.machine.dos.tracer is None
    for bp in c.call("breakpoints.list")["breakpoints"]:
        c.call("breakpoints.delete", {"breakpoint_id": bp["breakpoint_id"]})
    assert run_to_exit(c)["kind"] == "program_exit"
    out = read_all(c)
    assert out["active"] is False and out["event_count"] == 12
    assert [e["name"] for e in out["events"]][-2:] == ["open", "fcb_open"]
    assert c.call("dos.trace.stop") == stopped      # stop again: the same, nothing lost


def test_a_new_start_replaces_the_trace_and_session_start_drops_it(srv, workdir):
    c = srv.client()
    start_session(c, workdir)
    c.call("dos.trace.start", {"classes": ["memory"]})
    first = srv.controller.parts.get(DosTraceJournal).trace
    c.call("dos.trace.start", {"classes": ["program"]})
    assert first.active is False
    assert srv.controller.machine.dos.tracer is srv.controller.parts.get(DosTraceJournal).trace
    run_to_exit(c)
    assert [e["name"] for e in read_all(c)["events"]] == [
        "exec", "exit", "get_return_code", "exit"]
    old_dos = srv.controller.machine.dos
    start_session(c, workdir)
    assert old_dos.tracer is None
    assert c.error("dos.trace.read")["data"]["reason"] == "PRECONDITION_FAILED"


def test_a_checkpoint_restore_keeps_recording_the_same_machine(srv, workdir):
    c = srv.client()
    start_session(c, workdir)
    cp = c.call("checkpoints.create")["checkpoint_id"]
    c.call("dos.trace.start", {"classes": ["program"]})
    run_to_exit(c)
    c.call("checkpoints.restore", {"checkpoint_id": cp})
    run_to_exit(c)
    events = read_all(c)["events"]
    assert [e["name"] for e in events] == ["exec", "exit", "get_return_code", "exit"] * 2
    assert [e["sequence"] for e in events] == list(range(1, 9))


def test_methods_are_advertised(srv):
    c = srv.client()
    methods = c.call("agent.capabilities")["methods"]
    for name in ("dos.trace.start", "dos.trace.read", "dos.trace.stop"):
        assert name in methods
    discovered = {m["name"] for m in c.call("rpc.discover")["methods"]}
    assert {"dos.trace.start", "dos.trace.read", "dos.trace.stop"} <= discovered


def test_a_machine_without_any_dos_is_refused(srv):
    c = srv.client()
    err = c.error("dos.trace.start")            # the BIOS's IRET is all INT 21h has
    assert err["code"] == -32602 and err["data"]["reason"] == "PRECONDITION_FAILED", err
    assert "no DOS has installed an INT 21h handler" in err["message"]
    for method in ("dos.trace.read", "dos.trace.stop"):
        assert c.error(method)["data"]["reason"] == "PRECONDITION_FAILED"
    assert DosTraceJournal not in srv.controller.parts
    assert not [bp for bp in srv.machine.breakpoints.all() if bp.internal]


def test_the_recorder_in_process_refuses_bad_settings(tmp_path):
    class FakeDos:
        tracer = machine = mem = None
    for kwargs in ({"capacity": 0}, {"data_bytes": 5000}, {"classes": ()},
                   {"classes": ("file", "disk")}, {"path_contains": ""}):
        with pytest.raises(ValueError):
            DosTrace(FakeDos(), **kwargs)
    rec = DosTrace(FakeDos(), classes=("memory", "file"))
    assert rec.classes == ("file", "memory")


def run_traced(folder, program, typed=None, **settings):
    """Run ``program`` (C:\\NAME on ``folder``) in-process with a DosTrace
    from its first instruction; ``typed`` is typed once it waits for a key."""
    from pypc_core.dos import DosConfig
    from pypc_core.machine import CPU_HZ, Machine, MachineConfig
    m = Machine(MachineConfig(plugins=["cga"], dos=DosConfig(drives={"C": str(folder)},
                                                            program=program)))
    try:
        rec = DosTrace(m.dos, **settings)
        rec.start()
        end = m.clock() + 20 * CPU_HZ
        while not m.dos.exited and m.clock() < end:
            if typed and m.waiting_for_key():
                m.type_text(typed)
                typed = None
            m.run_for(CPU_HZ // 50)
        assert m.dos.exited
        return list(rec.events), m.dos.exit_code
    finally:
        m.close()


# mov ah,3Fh / xor bx,bx / mov cx,10 / mov dx,0200h / int 21h / mov ax,4C00h / int 21h
READ_CON = bytes([0xB4, 0x3F, 0x31, 0xDB, 0xB9, 0x0A, 0x00, 0xBA, 0x00, 0x02, 0xCD, 0x21,
                  0xB8, 0x00, 0x4C, 0xCD, 0x21])


def test_a_read_that_waits_for_keys_is_recorded_once_when_it_completes(tmp_path):
    (tmp_path / "READ.COM").write_bytes(READ_CON)
    events, code = run_traced(tmp_path, "C:\\READ.COM", typed="abc\r")
    assert code == 0
    assert [(e["name"], e["args"], e["result"]) for e in events] == [
        ("read", {"handle": 0, "device": "CON", "byte_count": 10,
                  "buffer": {"space": "segmented", "segment": events[0]["psp"],
                             "offset": 0x200}},
         {"ok": True, "byte_count": 5, "data_base64": b64(b"abc\r\n")}),
        ("exit", {"exit_code": 0, "parent_psp": 0x60}, {"ok": True})]
    assert events[0]["address"]["offset"] == 0x10A


def test_ctrl_c_at_a_read_and_the_other_program_ends(tmp_path):
    (tmp_path / "READ.COM").write_bytes(READ_CON)
    events, code = run_traced(tmp_path, "C:\\READ.COM", typed="\x03")
    assert code == 0
    assert [(e["name"], e["result"]) for e in events] == [
        ("read", {"ok": False, "ctrl_c": True})]       # the default INT 23h ended it

    # mov dx,0200h / int 27h: resident, 20h paragraphs
    (tmp_path / "TSR.COM").write_bytes(bytes([0xBA, 0x00, 0x02, 0xCD, 0x27]))
    events, _ = run_traced(tmp_path, "C:\\TSR.COM")
    assert len(events) == 1
    e = events[0]
    assert (e["interrupt"], e["name"], e["class"], e["args"], e["result"]) == (
        0x27, "keep", "program", {"exit_code": 0, "paragraphs": 0x20, "parent_psp": 0x60},
        {"ok": True})
    assert "function" not in e and e["address"]["offset"] == 0x103

    (tmp_path / "END.COM").write_bytes(bytes([0x90, 0xCD, 0x20]))      # nop / int 20h
    events, _ = run_traced(tmp_path, "C:\\END.COM", classes=("program",))
    assert [(e["interrupt"], e["name"], e["address"]["offset"]) for e in events] == [
        (0x20, "terminate", 0x101)]
    events, _ = run_traced(tmp_path, "C:\\END.COM", classes=("file", "memory"))
    assert events == []


def test_a_snapshot_import_drops_the_trace(srv, workdir, tmp_path):
    c = srv.client()
    start_session(c, workdir)
    rev = c.call("session.status")["state_revision"]
    out = c.call("machine.snapshot.export", {"path": str(tmp_path / "m.zip"),
                                             "expected_state_revision": rev})
    c.call("dos.trace.start")
    rev = c.call("session.status")["state_revision"]
    c.call("machine.snapshot.import", {"path": out["path"], "disk_root": str(tmp_path / "d"),
                                       "expected_sha256": out["sha256"],
                                       "expected_state_revision": rev})
    assert srv.controller.machine.dos.tracer is None
    assert c.error("dos.trace.read")["data"]["reason"] == "PRECONDITION_FAILED"
    assert run_to_exit(c)["exit_code"] == 7         # the program runs on, untraced


# -- a DOS in guest code ----------------------------------------------------------------
# tests/guest/dos/guestdos.asm: an INT 21h handler of its own at 1000:dos21 and the
# calls of a program; on the fixture's machine (built-in BIOS, no DOS).

GSEG = 0x1000


def guest_offsets():
    image = progs.program_bytes("guestdos")
    ready, done, handler = (int.from_bytes(image[i:i + 2], "little") for i in (2, 4, 6))
    return image, ready, done, handler


def end20_offset():
    return int.from_bytes(progs.program_bytes("guestdos")[8:10], "little")


def gseg(offset):
    return {"space": "segmented", "segment": GSEG, "offset": offset}


def load_guest_dos(c):
    """Load guestdos.bin, run it to "ready" (its handler installed)."""
    image, ready, done, handler = guest_offsets()
    c.call("execution.pause")
    c.call("memory.write", {"address": gseg(0), "data_base64": b64(image)})
    r = c.call("state.get_registers")
    c.call("state.set_registers", {
        "expected_state_revision": r["state_revision"],
        "expected": {"cs": r["segments"]["cs"], "ip": r["ip"]},
        "set": {"cs": GSEG, "ip": 0}})
    bp = c.call("breakpoints.create", {"address": gseg(ready)})
    assert run_to_exit(c)["kind"] == "breakpoint"
    c.call("breakpoints.delete", {"breakpoint_id": bp["breakpoint_id"]})
    return ready, done, handler


def guest_calls():
    """(name, function, args, result) of guestdos.asm's recorded calls."""
    return [
        ("open", 0x3D, {"path": "MISSING.DAT", "mode": 0, "access": "read"},
         {"ok": False, "error": {"code": 2, "name": "file_not_found"}}),
        ("create", 0x3C, {"path": "NEW.DAT", "attributes": 0}, {"ok": True, "handle": 5}),
        ("set_dta", 0x1A, {"address": "DTA"}, {"ok": True}),
        ("read", 0x3F, {"handle": 5, "byte_count": 8, "buffer": "BUF"},
         {"ok": True, "byte_count": 4, "data_base64": b64(b"DATA")}),
        ("find_first", 0x4E, {"attributes": 0, "path": "*.DAT"},
         {"ok": True, "found": {"name": "NEW.DAT", "attributes": 0x20, "size": 4,
                                "time": 0, "date": 0}}),
        ("close", 0x3E, {"handle": 5}, {"ok": True}),
        ("exit", 0x4C, {"exit_code": 3}, {"ok": True}),
    ]


def check_guest_events(events):
    image = progs.program_bytes("guestdos")
    expected = guest_calls()
    assert [(e["name"], e["function"]) for e in events] == [(n, f) for n, f, _a, _r in expected]
    for e, (name, _f, args, result) in zip(events, expected):
        assert "psp" not in e and e["interrupt"] == 0x21
        got = dict(e["args"])
        for key in ("address", "buffer"):
            if args.get(key) in ("DTA", "BUF"):
                assert got[key]["segment"] == GSEG
                args = dict(args, **{key: got[key]})
        assert got == args, (name, got, args)
        assert e["result"] == result, (name, e["result"], result)
        ret = e["return_address"]
        assert ret["segment"] == GSEG
        if name == "close":                      # a far call: no INT instruction there
            assert "address" not in e
            assert image[ret["offset"] - 5:ret["offset"] - 2] == b"\x9c\xff\x1e"   # pushf; call far
        else:
            assert e["address"] == dict(ret, offset=ret["offset"] - 2)
            assert image[ret["offset"] - 2:ret["offset"]] == INT21
    assert [e["sequence"] for e in events] == list(range(1, len(events) + 1))


def test_a_guest_dos_is_recorded_at_its_handler(srv):
    c = srv.client()
    ready, done, handler = load_guest_dos(c)
    meta = c.call("dos.trace.start", {"data_bytes": 8})
    assert meta["dos"] == "guest" and meta["handler"] == gseg(handler)
    bp = c.call("breakpoints.create", {"address": gseg(done)})
    stop = run_to_exit(c)
    assert stop["kind"] == "breakpoint" and stop["breakpoint_id"] == bp["breakpoint_id"]
    out = read_all(c)
    check_guest_events(out["events"])
    assert out["event_count"] == 7 and out["dos"] == "guest"
    # the recorder's breakpoints never show; stopping removes them all
    assert [b["breakpoint_id"] for b in c.call("breakpoints.list")["breakpoints"]] == \
        [bp["breakpoint_id"]]
    assert any(b.internal for b in srv.machine.breakpoints.all())
    # INT 20h ends a program too: complete when made
    r = c.call("state.get_registers")
    c.call("state.set_registers", {"expected_state_revision": r["state_revision"],
                                   "expected": {"ip": r["ip"]}, "set": {"ip": end20_offset()}})
    assert run_to_exit(c)["kind"] == "breakpoint"
    last = read_all(c)["events"][-1]
    assert (last["interrupt"], last["name"], last["class"], last["args"], last["result"]) == \
        (0x20, "terminate", "program", {"exit_code": 0}, {"ok": True})
    assert "function" not in last and last["address"] == gseg(end20_offset())
    c.call("dos.trace.stop")
    assert not [b for b in srv.machine.breakpoints.all() if b.internal]
    assert read_all(c)["events"][:7] == out["events"]


@pytest.mark.parametrize("mode", ["into", "over"])
def test_a_guest_dos_traced_while_stepping(srv, mode):
    c = srv.client()
    ready, done, handler = load_guest_dos(c)
    c.call("dos.trace.start", {"data_bytes": 8})
    for _ in range(400):
        r = c.call("state.get_registers")
        if r["ip"] == done:
            break
        op = c.call("execution.step", {"mode": mode})["operation_id"]
        c.call("execution.wait", {"operation_id": op, "timeout_ms": 20000})
    else:
        raise AssertionError("never reached done")
    check_guest_events(read_all(c)["events"])


def test_a_guest_dos_with_breakpoints_on_its_calls(srv):
    c = srv.client()
    ready, done, handler = load_guest_dos(c)
    c.call("dos.trace.start", {"data_bytes": 8, "classes": ["file", "directory", "program"]})
    c.call("breakpoints.create", {"address": gseg(handler)})           # the handler's entry
    c.call("breakpoints.create", {"kind": "interrupt",
                                  "event": {"type": "software_interrupt", "number": "0x21"}})
    c.call("breakpoints.create", {"address": gseg(done)})
    kinds = []
    for _ in range(40):
        stop = run_to_exit(c)
        kinds.append(stop["kind"])
        r = c.call("state.get_registers")
        if r["ip"] == done:
            break
        if r["ip"] == handler and r["general"]["ax"] >> 8 != 0x02:
            # in the handler: the call is recorded and has not returned
            last = read_all(c)["events"][-1]
            assert last["result"] == ({"ok": True} if last["name"] == "exit"
                                      else {"pending": True}), last
    assert set(kinds) == {"breakpoint"}
    check_guest_events(read_all(c)["events"])


def test_a_guest_dos_trace_filtered_and_replaced(srv):
    c = srv.client()
    ready, done, handler = load_guest_dos(c)
    c.call("dos.trace.start", {"classes": ["memory"]})
    c.call("dos.trace.start", {"path_contains": "new.dat"})      # replaces: one set of hooks
    assert len(srv.controller.parts.after_slice) == 1        # one set of hooks
    c.call("breakpoints.create", {"address": gseg(done)})
    run_to_exit(c)
    events = read_all(c)["events"]
    assert [(e["name"], e["result"]["ok"]) for e in events] == [("create", True)]


def _local_images():
    from test_dos_images_local import IMAGES, find_images
    return find_images(IMAGES)


LOCAL_IMAGES, LOCAL_SKIP = _local_images()


@pytest.mark.skipif(LOCAL_SKIP is not None, reason=LOCAL_SKIP or "")
@pytest.mark.parametrize("image", LOCAL_IMAGES or [None],
                         ids=[p.name for p in LOCAL_IMAGES] or ["none"])
def test_a_real_dos_from_a_boot_floppy(image):
    """PYPC_DOS_IMAGES=folder (see test_dos_images_local.py): the DOS's own
    INT 21h handler, recorded while its shell runs a second shell."""
    from pypc_core.dos.guest_trace import GuestDosTrace
    from pypc_core.machine import Machine, MachineConfig
    with Machine(MachineConfig(floppy_a=str(image), cow=True)) as m:
        assert m.run_until_text("A:\\>", 120), "\n".join(m.screen_text())
        for _ in range(20):
            m.run_seconds(0.05)
        rec = GuestDosTrace(m, classes=("file", "program"))
        rec.start()
        m.type_text("command /c ver\r")
        for _ in range(120):
            m.run_seconds(0.5)
            if any(e["name"] == "exit" for e in rec.events) and m.waiting_for_key():
                break
        events = list(rec.events)
        rec.stop()
    execs = [e for e in events if e["name"] == "exec"]
    assert len(execs) == 1, events
    assert execs[0]["args"]["path"].upper().endswith("COMMAND.COM")
    assert execs[0]["args"]["command_tail"] == " /c ver"
    assert execs[0]["result"] == {"ok": True}
    after = events[events.index(execs[0]) + 1:]
    assert [e["name"] for e in after if e["class"] == "program"][:1] == ["exit"]
    assert not [e for e in events if e["result"].get("pending")]
