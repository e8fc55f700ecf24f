"""debug.output.read over the real server and a real socket: the guest's
debug console lines (--debug-port), machine notes and a card's log, paging
with a cursor, an expired cursor, bad params, reads while running, and the
numbering across session.start."""

import os

import pytest

from rpc_client import RpcFixture
from test_diagnostics import BASE, lines_then

JMP_SELF = b"\xEB\xFE"
HLT = b"\xF4"


def many_lines(n):
    """cli; mov dx, E9h; mov cx, n; l: mov al, 'x'; out dx, al; mov al, 10;
    out dx, al; loop l; hlt -- ``n`` one-character lines."""
    return bytes.fromhex("FA BAE900 B9") + n.to_bytes(2, "little") + \
        bytes.fromhex("B078 EE B00A EE E2F8 F4")


def bare_fixture(code, **config):
    return RpcFixture(plugins=[], bare=True, loads=[(code, BASE)], entry=(0, BASE), **config)


def wait_halt(c):
    """Run 200 emulated ms (the bare guests end in HLT with interrupts off
    well before) and check the CPU sits on that HLT."""
    op = c.call("execution.run_until", {"max_emulated_ns": 200_000_000})["operation_id"]
    c.call("execution.wait", {"operation_id": op, "timeout_ms": 60000})
    regs = c.call("state.get_registers")
    assert regs["in_hlt"] and not regs["flags"] & 0x200, regs
    return regs


@pytest.fixture
def lines():
    f = bare_fixture(lines_then(HLT, b"first\r\nsecond\nthird\n\nfifth\nhalf"), debug_port=0xE9)
    c = f.client()
    c.call("execution.pause")
    wait_halt(c)
    yield f, c
    f.close()


def test_guest_lines_and_the_record_shape(lines):
    f, c = lines
    out = c.call("debug.output.read")
    assert [r["message"] for r in out["records"]] == ["first", "second", "third", "", "fifth"]
    assert all(r["source"] == "guest" and r["level"] == "info" for r in out["records"])
    assert [r["sequence"] for r in out["records"]] == [1, 2, 3, 4, 5]
    r = out["records"][0]
    assert set(r) == {"sequence", "timestamp", "clock", "level", "source", "message"}
    assert r["timestamp"] == r["clock"] * 10 ** 9 // 4_770_000 and r["clock"] > 0
    assert out["next_cursor"] == "debug-5" and out["has_more"] is False
    assert out["first_available_sequence"] == 1 and out["dropped_record_count"] == 0
    assert out["capacity"] == 4096
    assert c.call("state.get_registers")["general"]["ax"] & 0xFF == 0xE9
    # nothing new: the same position, again and again
    assert c.call("debug.output.read", {"cursor": "debug-5"})["records"] == []
    assert c.call("debug.output.read", {"cursor": "debug-5"})["next_cursor"] == "debug-5"


def test_pages_of_one_are_continuous(lines):
    f, c = lines
    seen, cursor = [], None
    for _ in range(20):
        params = {"limit": 1} if cursor is None else {"limit": 1, "cursor": cursor}
        out = c.call("debug.output.read", params)
        seen += [(r["sequence"], r["message"]) for r in out["records"]]
        assert len(out["records"]) <= 1
        cursor = out["next_cursor"]
        if not out["has_more"]:
            break
    assert seen == [(1, "first"), (2, "second"), (3, "third"), (4, ""), (5, "fifth")]
    assert cursor == "debug-5"


def test_filters(lines):
    f, c = lines
    f.machine.note("warning", "a machine note")         # the ring is thread-safe
    out = c.call("debug.output.read", {"min_level": "warning"})
    assert [(r["source"], r["message"]) for r in out["records"]] == [
        ("machine", "a machine note")]
    assert out["next_cursor"] == "debug-6"
    out = c.call("debug.output.read", {"sources": ["guest"], "cursor": "debug-3"})
    assert [r["message"] for r in out["records"]] == ["", "fifth"]
    assert out["next_cursor"] == "debug-6"               # past the skipped note


def test_bad_params_are_refused_and_change_nothing(lines):
    f, c = lines
    before = c.call("debug.output.read")
    revision = c.call("state.get")["state_revision"]
    bad = [({"cursor": "5"}, "INVALID_PARAMS"),
           ({"cursor": "debug-"}, "INVALID_PARAMS"),
           ({"cursor": "debug-0x5"}, "INVALID_PARAMS"),
           ({"cursor": "debug-\u0665"}, "INVALID_PARAMS"),         # a digit, not ASCII
           ({"cursor": "debug-" + "9" * 30}, "INVALID_PARAMS"),
           ({"cursor": "hardware-5"}, "INVALID_PARAMS"),
           ({"cursor": "debug-6"}, "INVALID_PARAMS"),          # beyond the last record
           ({"cursor": 5}, "INVALID_PARAMS"),
           ({"limit": 0}, "INVALID_PARAMS"),
           ({"limit": 1025}, "LIMIT_EXCEEDED"),
           ({"limit": True}, "INVALID_PARAMS"),
           ({"min_level": "loud"}, "INVALID_PARAMS"),
           ({"sources": []}, "INVALID_PARAMS"),
           ({"sources": [""]}, "INVALID_PARAMS"),
           ({"sources": [f"s{i}" for i in range(17)]}, "LIMIT_EXCEEDED"),
           ({"follow": True}, "INVALID_PARAMS")]
    for params, reason in bad:
        err = c.error("debug.output.read", params)
        assert err["code"] == -32602 and err["data"]["reason"] == reason, (params, err)
    assert c.call("debug.output.read") == before
    assert c.call("state.get")["state_revision"] == revision


def test_an_overwritten_cursor_expires():
    f = bare_fixture(many_lines(5000), debug_port=0xE9)
    try:
        c = f.client()
        c.call("execution.pause")
        wait_halt(c)
        out = c.call("debug.output.read", {"limit": 2})
        assert out["first_available_sequence"] == 905 and out["dropped_record_count"] == 904
        assert [r["sequence"] for r in out["records"]] == [905, 906]
        for cursor in ("debug-0", "debug-903"):
            err = c.error("debug.output.read", {"cursor": cursor})
            assert err["data"]["reason"] == "CURSOR_EXPIRED"
            assert err["data"]["first_available_sequence"] == 905
        out = c.call("debug.output.read", {"cursor": "debug-904", "limit": 1024})
        assert out["records"][0]["sequence"] == 905 and out["has_more"] is True
        assert out["next_cursor"] == "debug-1928"
        assert c.call("debug.output.read", {"cursor": "debug-5000"})["records"] == []
    finally:
        f.close()


def test_reads_are_allowed_while_the_guest_runs():
    f = bare_fixture(lines_then(JMP_SELF, b"one\ntwo\n"), debug_port=0xE9)
    try:
        c = f.client()
        assert c.call("session.status")["state"] == "running"
        messages = []
        for _ in range(2000):                 # until the guest has written both lines
            out = c.call("debug.output.read")
            messages = [r["message"] for r in out["records"]]
            if len(messages) == 2:
                break
        assert messages == ["one", "two"]
        assert c.error("trace.start")["data"]["reason"] == "TARGET_NOT_PAUSED"
        assert c.call("session.status")["state"] == "running"
    finally:
        f.close()


def test_off_by_default():
    f = bare_fixture(lines_then(HLT, b"hello\n"))
    try:
        c = f.client()
        c.call("execution.pause")
        wait_halt(c)
        assert c.call("state.get_registers")["general"]["ax"] & 0xFF == 0xFF
        assert c.call("io.read", {"port": 0xE9})["value"] == 0xFF
        out = c.call("debug.output.read")
        assert out["records"] == [] and out["next_cursor"] == "debug-0"
        assert out["first_available_sequence"] == 1 and out["has_more"] is False
    finally:
        f.close()


def test_a_card_and_the_machine_report_a_read_only_floppy(tmp_path):
    from test_launcher import WRITE_BOOT, floppy
    img = floppy(tmp_path / "ro.img", WRITE_BOOT)
    os.chmod(img, 0o444)
    try:
        f = RpcFixture(plugins=["cga", "fdc"], floppy_a=str(img))
        try:
            c = f.client()
            c.call("execution.pause")
            for _ in range(50):
                op = c.call("execution.run_until", {"max_emulated_ns": 200_000_000})
                c.call("execution.wait", {"operation_id": op["operation_id"],
                                          "timeout_ms": 60000})
                done = c.call("memory.read", {"address": 0x502, "length": 1})
                if done["data_base64"] == "qg==":          # AAh: the guest finished
                    break
            out = c.call("debug.output.read", {"min_level": "warning"})
        finally:
            f.close()
    finally:
        os.chmod(img, 0o644)
    recs = out["records"]
    assert recs[0]["source"] == "machine" and "0444" in recs[0]["message"]
    fdc = [r for r in recs if r["source"] == "fdc"]
    assert fdc and all("write-protected" in r["message"] for r in fdc)


def test_listed_in_capabilities_and_discover():
    f = RpcFixture(plugins=["cga"])
    try:
        c = f.client()
        assert "debug.output.read" in c.call("agent.capabilities")["methods"]
        doc = c.call("rpc.discover")
        assert "debug.output.read" in [m["name"] for m in doc["methods"]]
    finally:
        f.close()


def test_numbering_goes_on_across_session_start(tmp_path):
    # mov ah, 6Ch; int 21h (a function the built-in DOS lacks), then the text
    # to port E9h and mov ax, 4C00h; int 21h
    code = bytearray.fromhex("B46C CD21 BAE900 BE0000 AC 08C0 7403 EE EBF8 B8004C CD21")
    code[8:10] = (0x100 + len(code)).to_bytes(2, "little")
    (tmp_path / "NOFN.COM").write_bytes(bytes(code) + b"in the session\n\x00")
    f = RpcFixture(plugins=["cga"], debug_port=0xE9)
    try:
        c = f.client()
        for i in range(3):
            f.machine.note("info", f"old machine {i}")
        out = c.call("debug.output.read")
        assert out["next_cursor"] == "debug-3"
        c.call("execution.pause")
        c.call("session.start", {"target": {"command": "NOFN.COM", "arguments": []},
                                 "mounts": [{"drive": "C", "host_path": str(tmp_path)}]})
        op = c.call("execution.continue")["operation_id"]
        stop = c.call("execution.wait", {"operation_id": op, "timeout_ms": 60000})
        assert stop["stop_reason"]["kind"] == "program_exit"
        out = c.call("debug.output.read", {"cursor": "debug-3"})
        assert out["first_available_sequence"] == 4 and out["dropped_record_count"] == 3
        dos = [r for r in out["records"] if r["source"] == "dos"]
        assert len(dos) == 1 and "6Ch" in dos[0]["message"] and dos[0]["level"] == "warning"
        guest = [(r["source"], r["message"]) for r in out["records"] if r["source"] == "guest"]
        assert guest == [("guest", "in the session")]   # the session's machine has the console
        assert all(r["sequence"] >= 4 for r in out["records"])
        assert c.error("debug.output.read", {"cursor": "debug-2"})["data"]["reason"] \
            == "CURSOR_EXPIRED"
    finally:
        f.close_with_session()
