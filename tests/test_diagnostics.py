"""The machine's diagnostics ring (pypc_core.diagnostics), the guest debug
console on port E9h (pypc_core.debugcon) and what feeds the ring: machine
notes, cards through ``board.log``, the guest.  The RPC side is in
tests/test_rpc_debug_output.py."""

import os

import pytest

from pypc_core.board import Backplane, ClaimError
from pypc_core.cpu import state as S
from pypc_core.debugcon import MAX_LINE, DebugConsole
from pypc_core.device import Device, DeviceDeclaration
from pypc_core.diagnostics import (CAPACITY, MAX_MESSAGE, CursorExpired, Diagnostics,
                                   DiagnosticsError)
from pypc_core.machine import Machine, MachineConfig, MachineError

BASE = 0x7C00


def lines_then(end, text):
    """A bare-machine program at 0000:7C00: write ``text`` byte by byte to
    port E9h, read the port once (AL), then ``end`` (bytes: hlt, jmp $)."""
    code = bytes.fromhex("FA 31C0 8ED8 BAE900")
    msg_at = BASE + len(code) + 3 + 9 + len(end)
    code += bytes([0xBE]) + msg_at.to_bytes(2, "little")     # mov si, msg
    code += bytes.fromhex("AC 08C0 7403 EE EBF8 EC") + end   # lodsb / or / jz / out / jmp / in
    assert BASE + len(code) == msg_at
    return code + text + b"\x00"


def bare(code, **config):
    return Machine(MachineConfig(plugins=[], bare=True, loads=[(code, BASE)],
                                 entry=(0, BASE), **config))


def run_to_halt(m):
    stop = m.run_for(4_772_727)
    assert stop.kind == "halt", stop
    return stop


# -- the ring ---------------------------------------------------------------------------

def test_the_ring_numbers_records_and_keeps_the_last_capacity():
    clock = [100]
    ring = Diagnostics(lambda: clock[0], capacity=4)
    for i in range(10):
        clock[0] = 100 + i
        rec = ring.add("info", f"m{i}", "machine")
        assert rec["sequence"] == i + 1 and rec["clock"] == 100 + i
    assert len(ring) == 4 and ring.capacity == 4
    assert ring.first_sequence == 7 and ring.dropped == 6 and ring.next_sequence == 11
    assert [r["message"] for r in ring.records()] == ["m6", "m7", "m8", "m9"]


def test_reading_pages_with_a_cursor_and_refuses_a_dropped_or_future_one():
    ring = Diagnostics(capacity=4)
    for i in range(6):
        ring.add("info", f"m{i}", "machine")          # 1..6; 3..6 retained
    recs, last, more = ring.read(None, 1)
    assert [r["sequence"] for r in recs] == [3] and last == 3 and more
    seen = []
    after = 2
    while True:
        recs, after, more = ring.read(after, 1)
        seen += [r["sequence"] for r in recs]
        if not more:
            break
    assert seen == [3, 4, 5, 6] and after == 6
    assert ring.read(6, 10) == ([], 6, False)         # nothing new: the same position
    with pytest.raises(CursorExpired) as exc:
        ring.read(1, 10)                              # record 2 is gone
    assert exc.value.first == 3
    assert ring.read(2, 10)[0][0]["sequence"] == 3    # right before the oldest: fine
    with pytest.raises(DiagnosticsError):
        ring.read(7, 10)


def test_filters_skip_records_and_the_cursor_moves_past_them():
    ring = Diagnostics()
    ring.add("debug", "d", "fdc")
    ring.add("warning", "w", "fdc")
    ring.add("info", "i", "guest")
    ring.add("error", "e", "machine")
    recs, last, more = ring.read(None, 10, min_level="warning")
    assert [r["message"] for r in recs] == ["w", "e"] and last == 4 and not more
    recs, last, more = ring.read(None, 10, sources=["guest", "fdc"])
    assert [r["message"] for r in recs] == ["d", "w", "i"] and last == 4
    recs, last, more = ring.read(None, 1, min_level="error")
    assert [r["message"] for r in recs] == ["e"] and last == 4 and not more
    recs, last, more = ring.read(None, 10, sources=["nobody"])
    assert recs == [] and last == 4 and not more


def test_bad_records_are_refused_and_change_nothing():
    ring = Diagnostics()
    ring.add("info", "kept", "machine")
    for level, source in (("loud", "machine"), ("INFO", "machine"), ("info", ""),
                          ("info", None), ("info", "x" * 65)):
        with pytest.raises(DiagnosticsError):
            ring.add(level, "no", source)
    assert ring.next_sequence == 2 and [r["message"] for r in ring.records()] == ["kept"]
    with pytest.raises(DiagnosticsError):
        Diagnostics(capacity=0)


def test_a_long_message_is_cut():
    ring = Diagnostics()
    rec = ring.add("info", "y" * (MAX_MESSAGE + 50), "machine")
    assert len(rec["message"]) == MAX_MESSAGE and rec["message"].endswith("...")


def test_a_ring_that_follows_another_continues_its_numbering():
    old = Diagnostics(capacity=2)
    for i in range(5):
        old.add("info", f"o{i}", "machine")
    new = Diagnostics()
    new.add("warning", "built", "machine")            # written before anyone read it
    new.follow(old)
    assert [r["sequence"] for r in new.records()] == [6]
    assert new.dropped == 5 and new.add("info", "next", "guest")["sequence"] == 7
    with pytest.raises(CursorExpired):
        new.read(4, 10)
    assert [r["message"] for r in new.read(5, 10)[0]] == ["built", "next"]


def test_the_default_capacity():
    assert Diagnostics().capacity == CAPACITY == 4096


# -- the debug console device -------------------------------------------------------------

def console():
    out = []
    dev = DebugConsole(0xE9, sink=out.append)
    return dev, out


def feed(dev, data):
    for b in data:
        dev.port_write(0xE9, b)


def test_line_ends_cr_lf_crlf_and_empty_lines():
    dev, out = console()
    feed(dev, b"one\r\ntwo\nthree\rfour\n\n\r\n\r\rtail")
    assert out == ["one", "two", "three", "four", "", "", "", ""]
    assert dev.line == bytearray(b"tail")          # no end yet: not a record
    feed(dev, b"\n")
    assert out[-1] == "tail"


def test_a_long_line_is_cut_at_max_line_and_bytes_are_cp437():
    dev, out = console()
    feed(dev, b"a" * (MAX_LINE * 2 + 5) + b"\n")
    assert out == ["a" * MAX_LINE, "a" * MAX_LINE, "aaaaa"]
    feed(dev, b"\xb0\xdb\x01\n")
    assert out[-1] == "\u2591\u2588\x01"


def test_the_pending_line_is_device_state():
    dev, out = console()
    feed(dev, b"half\r")
    feed(dev, b"par")
    state = dev.get_state()
    feed(dev, b"tial\n")
    assert out == ["half", "partial"]
    dev.set_state(state)
    feed(dev, b"ty\n")
    assert out[-1] == "party"
    with pytest.raises(ValueError):
        dev.set_state({"line": "61" * MAX_LINE, "after_cr": False})
    assert dev.port_read(0xE9) == 0xE9 and dev.port_peek(0xE9) == 0xE9
    with pytest.raises(ValueError):
        DebugConsole(0x10000)


# -- the machine ---------------------------------------------------------------------------

def test_guest_lines_reach_the_ring_and_the_port_reads_e9h():
    code = lines_then(b"\xF4", b"hello, E9\r\nsecond\nno end")
    with bare(code, debug_port=0xE9) as m:
        run_to_halt(m)
        assert m.cpu.r.ax & 0xFF == 0xE9
        recs = [r for r in m.diagnostics.records() if r["source"] == "guest"]
        assert [(r["level"], r["message"]) for r in recs] == [("info", "hello, E9"),
                                                              ("info", "second")]
        assert 0 < recs[0]["clock"] <= recs[1]["clock"] <= m.clock()
        assert m.devices["debugcon"].line == bytearray(b"no end")


def test_off_by_default_the_port_floats_and_nothing_is_recorded():
    code = lines_then(b"\xF4", b"hello\n")
    with bare(code) as m:
        run_to_halt(m)
        assert m.cpu.r.ax & 0xFF == 0xFF
        assert "debugcon" not in m.devices and m.ports.owner(0xE9) is None
        assert m.diagnostics.records() == []


def test_another_port_and_a_port_conflict():
    code = lines_then(b"\xF4", b"hello\n")
    with bare(code, debug_port=0x402) as m:             # the guest writes E9h: nothing
        run_to_halt(m)
        assert m.diagnostics.records() == [] and m.ports.owner(0x402) == "debugcon"
    with pytest.raises(ClaimError, match="3F8h.*uart.*debugcon|uart and debugcon"):
        Machine(MachineConfig(plugins=["cga", "uart"], debug_port=0x3F8))
    with pytest.raises(MachineError):
        Machine(MachineConfig(plugins=["cga"], debug_port=0x10000))


def test_a_checkpoint_keeps_the_ring_and_the_pending_line():
    code = lines_then(b"\xF4", b"before\npend")
    with bare(code, debug_port=0xE9) as m:
        cp = m.checkpoint()                         # at the entry, nothing written
        run_to_halt(m)
        n = m.diagnostics.next_sequence
        m.restore(cp)
        recs = m.diagnostics.records()
        assert [r["message"] for r in recs][:1] == ["before"]       # still there
        assert recs[-1]["source"] == "machine" and "restored" in recs[-1]["message"]
        assert recs[-1]["sequence"] == n                            # numbering goes on
        assert m.devices["debugcon"].line == bytearray()           # the guest's, rewound
        run_to_halt(m)
        assert [r["message"] for r in m.diagnostics.records()
                if r["source"] == "guest"] == ["before", "before"]


def test_a_fault_stop_is_noted(monkeypatch):
    with bare(b"\xF4") as m:
        cpu = m.cpu

        def faulty(until):
            cpu.ctl[S.C_EXIT_VALUE] = 0x0F
            return S.EXIT_FAULT
        monkeypatch.setattr(cpu, "run", faulty)
        stop = m.run_for(1000)
        monkeypatch.undo()
        assert stop.kind == "fault"
        rec = m.diagnostics.records()[-1]
        assert rec["level"] == "error" and rec["source"] == "machine"
        assert "0Fh" in rec["message"] and "fault" in rec["message"]


def test_a_card_logs_through_its_board():
    class Chatty(Device):
        declaration = DeviceDeclaration(name="chatty", ports=[0x300])

        def attach(self, board):
            self.board = board
            board.claim_ports([0x300], write=self.write)

        def write(self, port, value):
            self.board.log("warning", f"value {value:02X}h ignored")

    bp = Backplane(clock=lambda: 1234)
    dev = Chatty()
    dev.attach(bp.board(dev.declaration))
    bp.ports.write(0x300, 0x5A)
    [rec] = bp.diagnostics.records()
    assert rec == {"sequence": 1, "clock": 1234, "level": "warning", "source": "chatty",
                   "message": "value 5Ah ignored"}
    with pytest.raises(DiagnosticsError):
        dev.board.log("shout", "no")
    assert len(bp.diagnostics) == 1


def test_a_read_only_image_and_the_refused_floppy_write_are_recorded(tmp_path):
    from test_launcher import WRITE_BOOT, floppy
    img = floppy(tmp_path / "ro.img", WRITE_BOOT)
    os.chmod(img, 0o444)
    try:
        with Machine(MachineConfig(floppy_a=str(img))) as m:
            first = m.diagnostics.records()[0]       # noted while the machine was built
            for _ in range(100):
                if m.memory.read_byte(0x502) == 0xAA:
                    break
                m.run_for(4_772_727 // 10)
            ah, cf = m.memory.read_byte(0x500), m.memory.read_byte(0x501)
            notes = m.diagnostics.records()
    finally:
        os.chmod(img, 0o644)
    assert (ah, cf) == (0x03, 1)                     # write-protected, as before
    assert first["source"] == "machine" and first["level"] == "warning"
    assert "0444" in first["message"] and first["clock"] == 0
    fdc = [r for r in notes if r["source"] == "fdc" and r["level"] == "warning"]
    assert fdc and "write-protected" in fdc[0]["message"] and "A:" in fdc[0]["message"]
    assert all(r["level"] != "error" for r in notes)
