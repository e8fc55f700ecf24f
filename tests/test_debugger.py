"""The debugger in the Machine API: breakpoints of every kind with
conditions and hit filters, stops as data, stepping (into, over, out),
run_until, pause, and the instruction trace recorded by the compiled loop.

The guest is tests/guest/debugee.asm (source and bytes committed), loaded at
0000:7C00 and entered there; its labels are below.
"""

import os
import threading
import time

import numpy as np
import pytest

from pypc_core.cpu import state as S
from pypc_core.debugger import BreakpointError, parse_condition, evaluate
from pypc_core.machine import Machine, MachineConfig

HERE = os.path.dirname(os.path.abspath(__file__))
START, FIRST, CALL1, AFTER1, REP1, AFTER2 = 0x7C00, 0x7C18, 0x7C1E, 0x7C21, 0x7C2C, 0x7C2E
INT1, AFTER3, LOOP1, LOOP_INSN, AFTER4, DONE = 0x7C32, 0x7C34, 0x7C37, 0x7C38, 0x7C3A, 0x7C44
PROC, INNER, INT60 = 0x7C45, 0x7C4E, 0x7C4F
DATA = 0x0500


def program():
    with open(os.path.join(HERE, "guest", "debugee.bin"), "rb") as fh:
        return fh.read()


@pytest.fixture(scope="module")
def machine():
    m = Machine(MachineConfig(plugins=["cga"]))
    yield m
    m.close()


@pytest.fixture
def m(machine):
    """The machine at the program's first instruction, no breakpoints."""
    machine.breakpoints.clear()
    machine.trace.stop()
    machine.memory.write(START, program())
    machine.memory.write(DATA, bytes(0x400))
    regs = machine.cpu.regs
    regs[:] = 0
    regs[S.FLAGS] = S.FLAGS_FIXED_ONES
    regs[S.IP] = START
    machine.cpu.ctl[S.C_HALTED] = 0
    machine.cancel_pause()
    return machine


def ip(m):
    return int(m.cpu.regs[S.IP])


def run_to(m, address):
    bp = m.breakpoints.add("exec", address)
    stop = m.run_for(1_000_000)
    m.breakpoints.remove(bp.id)
    assert stop.kind == "breakpoint" and stop.linear == address, stop
    return stop


def test_the_committed_program_matches_its_source(tmp_path):
    import shutil
    import subprocess
    nasm = shutil.which("nasm")
    if nasm is None:
        pytest.skip("nasm is not installed (the committed .bin is used as it is)")
    out = tmp_path / "debugee.bin"
    subprocess.run([nasm, "-f", "bin", "-o", str(out),
                    os.path.join(HERE, "guest", "debugee.asm")], check=True)
    assert out.read_bytes() == program()


# ---------------------------------------------------------------------------
# execution breakpoints
# ---------------------------------------------------------------------------

def test_exec_breakpoint_stops_before_the_instruction(m):
    bp = m.breakpoints.add("exec", "0000:7C18")
    stop = m.run_for(100_000)
    assert stop.kind == "breakpoint" and stop.breakpoint is bp
    assert (stop.cs, stop.ip, stop.linear) == (0, FIRST, FIRST)
    assert m.cpu.regs[S.AX] == 0                     # mov ax,1234h not yet run
    assert bp.hits == 1
    assert stop.to_dict()["breakpoint"] == bp.id
    # resuming goes past it (it does not stop again at once)
    stop = m.run_for(100_000)
    assert stop.kind == "halt" and ip(m) == DONE + 1


def test_seg_off_and_linear_forms_are_one_address(m):
    a = m.breakpoints.add("exec", "07C0:0018")
    b = m.breakpoints.add("exec", FIRST)
    c = m.breakpoints.add("exec", (0x0700, 0x0C18))
    assert a.address == b.address == c.address == FIRST
    stop = m.run_for(100_000)
    assert stop.linear == FIRST
    assert a.hits == b.hits == c.hits == 1


def test_condition_ignore_every_oneshot_and_disable(m):
    # inside the LOOP at loop1: dx counts 1..1000
    cond = m.breakpoints.add("exec", LOOP_INSN, condition="dx == 500 and cx > 1")
    stop = m.run_for(1_000_000)
    assert stop.breakpoint is cond and m.cpu.regs[S.DX] == 500
    m.breakpoints.remove(cond.id)
    every = m.breakpoints.add("exec", LOOP_INSN, ignore=3, every=100)
    seen = []
    for _ in range(3):
        stop = m.run_for(1_000_000)
        assert stop.breakpoint is every
        seen.append(int(m.cpu.regs[S.DX]))
    # hits count from the breakpoint's creation (dx was 500 there)
    assert seen == [504, 604, 704]
    every.enabled = True
    m.breakpoints.enable(every.id, False)
    one = m.breakpoints.add("exec", LOOP_INSN, oneshot=True)
    stop = m.run_for(1_000_000)
    assert stop.breakpoint is one and one.id not in [b.id for b in m.breakpoints.list()]
    stop = m.run_for(1_000_000)
    assert stop.kind == "halt"                          # disabled and one-shot: no more stops


def test_condition_language():
    regs = np.zeros(16, dtype=np.uint16)
    mem = np.zeros(1 << 20, dtype=np.uint8)
    regs[S.AX], regs[S.DS], regs[S.SI] = 0x1234, 0x0040, 0x001A
    mem[0x41A], mem[0x41B] = 0x1E, 0x00
    mem[0x41C] = 0x20
    ok = ["ax == 0x1234", "ah == 12h && al == 0x34", "not ax != 4660",
          "word[ds:si] == 0x1e", "byte[0x41c] > byte[0x41a]", "word[ds:si+2] == 0x20",
          "(ax < 0 or ax >= 0x1234) and flags & 0x40 == 0", "ax & 0xff == 0x34",
          "byte[40h:1ch] == 0x20", "bx == 0 || ax == 1"]
    for text in ok:
        assert evaluate(parse_condition(text), regs, mem), text
    for text in ["ax == 1", "word[ds:si] == 0x20", "!(ax == 0x1234)"]:
        assert not evaluate(parse_condition(text), regs, mem), text
    contract = [{"register": "ax", "op": "eq", "value": "0x1234"},
                {"register": "ds", "op": "ge", "value": 64}]
    assert evaluate(parse_condition(contract), regs, mem)


@pytest.mark.parametrize("kwargs", [
    dict(kind="exec", address=0x100000),
    dict(kind="exec", address="12345:0000"),
    dict(kind="exec", address="zz:10"),
    dict(kind="exec", address=-1),
    dict(kind="mem_write", address=0xFFFFF, length=2),
    dict(kind="mem_read", address=0x500, length=0),
    dict(kind="io_read", port=0x10000),
    dict(kind="io_write", port=0xFFFF, length=2),
    dict(kind="int", number=256),
    dict(kind="irq", number=16),
    dict(kind="warp", address=0),
    dict(kind="exec"),
    dict(kind="exec", address=0x7C00, condition="ax =="),
    dict(kind="exec", address=0x7C00, condition="ax == 1 and"),
    dict(kind="exec", address=0x7C00, condition="foo == 1"),
    dict(kind="exec", address=0x7C00, condition="__import__('os')"),
    dict(kind="exec", address=0x7C00, condition=[{"register": "ax", "op": "like", "value": 1}]),
    dict(kind="exec", address=0x7C00, every=0),
    dict(kind="exec", address=0x7C00, ignore=-1),
    dict(kind="exec", address=0x7C00, ah=1),
    dict(kind="int", number=0x21, ah=0x100),
])
def test_nonsense_is_refused_and_changes_nothing(m, kwargs):
    keep = m.breakpoints.add("exec", FIRST)
    xf = m.memory.xflags.copy()
    ctl = m.cpu.ctl.copy()
    pf = m.cpu.page_flags.copy()
    kind = kwargs.pop("kind")
    with pytest.raises(BreakpointError):
        m.breakpoints.add(kind, **kwargs)
    assert [b.id for b in m.breakpoints.list()] == [keep.id]
    assert np.array_equal(m.memory.xflags, xf)
    assert np.array_equal(m.cpu.ctl, ctl)
    assert np.array_equal(m.cpu.page_flags, pf)
    with pytest.raises(BreakpointError):
        m.breakpoints.remove(keep.id + 100)


def test_nothing_armed_leaves_no_flag_behind(m):
    bps = [m.breakpoints.add("exec", FIRST), m.breakpoints.add("mem_access", DATA, length=64),
           m.breakpoints.add("io_access", port=0x60, length=4), m.breakpoints.add("int", number=0x60)]
    assert m.memory.xflags[FIRST] & S.XF_BREAKPOINT
    for bp in bps:
        m.breakpoints.remove(bp.id)
    assert not (m.memory.xflags[DATA:DATA + 64] & (S.XF_WATCH_R | S.XF_WATCH_W)).any()
    assert not m.memory.xflags[FIRST] & S.XF_BREAKPOINT
    assert m.cpu.ctl[S.C_IOW_N] == 0
    assert not m.cpu.ctl[S.C_INT_MASK:S.C_INT_MASK + 4].any()
    assert not (m.cpu.page_flags & (S.PG_WATCH_R | S.PG_WATCH_W)).any()


# ---------------------------------------------------------------------------
# memory, I/O, interrupt breakpoints
# ---------------------------------------------------------------------------

def test_memory_write_breakpoint_reports_the_access(m):
    bp = m.breakpoints.add("mem_write", DATA, length=2)
    stop = m.run_for(1_000_000)
    # the first write in DATA..DATA+1 is proc's mov [DATA],ax
    assert stop.breakpoint is bp
    a = stop.access
    assert a["space"] == "memory" and a["kind"] == "write"
    assert a["address"] == DATA and a["value"] == 0x34 and a["old"] == 0
    assert (a["cs"], a["ip"]) == (0, INNER - 3)     # the accessing instruction
    assert ip(m) == INNER                           # stopped after it


def test_memory_read_and_access_breakpoints(m):
    rd = m.breakpoints.add("mem_read", DATA + 3)
    stop = m.run_for(1_000_000)
    # rep movsb reads DATA..DATA+999 first
    assert stop.breakpoint is rd and stop.access["kind"] == "read"
    assert stop.access["address"] == DATA + 3
    assert stop.access["old"] == stop.access["value"]
    m.breakpoints.remove(rd.id)
    acc = m.breakpoints.add("mem_access", DATA + 4, length=2)
    stop = m.run_for(1_000_000)
    assert stop.breakpoint is acc and stop.access["kind"] == "read"   # still inside the REP
    assert stop.access["address"] == DATA + 4 and ip(m) == REP1           # (mid-REP)
    stop = m.run_for(1_000_000)
    assert stop.access["kind"] == "read" and stop.access["address"] == DATA + 5
    stop = m.run_for(1_000_000)
    assert stop.breakpoint is acc and stop.access["kind"] == "write"  # int60's mov [DATA+4],ax
    assert stop.access["value"] == 7 and acc.hits == 3
    assert (stop.access["cs"], stop.access["ip"]) == (0, INT60)


def test_io_breakpoints_on_unclaimed_and_core_answered_ports(m):
    w = m.breakpoints.add("io_write", port=0x80)
    r = m.breakpoints.add("io_read", port=0x60, length=2)     # 60h..61h
    stop = m.run_for(1_000_000)
    assert stop.breakpoint is w
    assert stop.access == {"space": "io", "kind": "write", "address": 0x80, "width": 1,
                           "value": 7, "old": None, "cs": -1, "ip": -1}
    assert ip(m) == AFTER4 + 2
    stop = m.run_for(1_000_000)
    assert stop.breakpoint is r and stop.access["kind"] == "read"
    assert stop.access["address"] == 0x61
    assert ip(m) == AFTER4 + 4                      # the IN completed
    assert m.cpu.regs[S.AX] & 0xFF == stop.access["value"]
    stop = m.run_for(1_000_000)
    assert stop.kind == "halt"


def test_int_breakpoint_stops_before_the_handler_with_ah_filter(m):
    no = m.breakpoints.add("int", number=0x60, ah=0x4B)
    yes = m.breakpoints.add("int", number=0x60, ah=0x4C, al=7)
    stop = m.run_for(1_000_000)
    assert stop.breakpoint is yes and ip(m) == INT1
    assert stop.interrupt == {"number": 0x60, "ah": 0x4C, "al": 7, "source": "int",
                              "phase": "before_handler"}
    assert no.hits == 0
    stop = m.step()                                   # into the handler
    assert stop.kind == "step" and ip(m) == INT60


def test_irq_breakpoint_stops_at_the_handler(machine):
    m = Machine(MachineConfig(plugins=["cga"]))       # the BIOS runs from reset
    try:
        bp = m.breakpoints.add("irq", number=0)
        stop = m.run_seconds(2)
        assert stop.breakpoint is bp
        assert stop.interrupt == {"number": 0, "source": "irq"}
        vector = m.memory.read_word(8 * 4), m.memory.read_word(8 * 4 + 2)
        assert (stop.ip, stop.cs) == vector
    finally:
        m.close()


# ---------------------------------------------------------------------------
# stepping
# ---------------------------------------------------------------------------

class CountRuns:
    def __init__(self, m):
        self.m = m
        self.calls = 0
        self.orig = m.cpu.run

    def __enter__(self):
        def run(until):
            self.calls += 1
            return self.orig(until)
        self.m.cpu.run = run
        return self

    def __exit__(self, *exc):
        self.m.cpu.run = self.orig


@pytest.mark.parametrize("at,after", [(CALL1, AFTER1), (REP1, AFTER2), (INT1, AFTER3),
                                      (LOOP_INSN, AFTER4)])
def test_step_over_runs_through_in_one_run(m, at, after):
    user = m.breakpoints.add("exec", DONE)
    run_to(m, at)
    listed = [b.to_dict() for b in m.breakpoints.list()]
    with CountRuns(m) as runs:
        stop = m.step_over()
    assert stop.kind == "step" and ip(m) == after
    assert runs.calls <= 3                 # not an exit per iteration
    assert [b.to_dict() for b in m.breakpoints.list()] == listed
    assert m.breakpoints.list() == [user]


def test_step_over_results_match_stepping_into(m):
    run_to(m, CALL1)
    ref = Machine(MachineConfig(plugins=["cga"]))
    try:
        ref.memory.mem[:] = m.memory.mem
        ref.cpu.regs[:] = m.cpu.regs
        while ref.cpu.regs[S.IP] != AFTER1:
            ref.step()
        m.step_over()
        assert np.array_equal(ref.cpu.regs, m.cpu.regs)
        assert np.array_equal(ref.memory.mem[:0xA0000], m.memory.mem[:0xA0000])
    finally:
        ref.close()


def test_a_user_breakpoint_inside_ends_step_over_early(m):
    run_to(m, CALL1)
    inner = m.breakpoints.add("exec", INNER)
    stop = m.step_over()
    assert stop.breakpoint is inner and ip(m) == INNER
    assert m.breakpoints.list() == [inner]
    assert not m.memory.xflags[AFTER1] & S.XF_BREAKPOINT      # the helper is gone


def test_step_over_plain_instruction_is_a_step(m):
    run_to(m, FIRST)
    stop = m.step_over()
    assert stop.kind == "step" and ip(m) == FIRST + 3 and m.cpu.regs[S.AX] == 0x1234


def test_step_into_call_and_step_out(m):
    run_to(m, CALL1)
    m.step()
    assert ip(m) == PROC
    m.step()
    m.step()                                # inside the loop
    stop = m.step_out()
    assert stop.kind == "step" and ip(m) == AFTER1
    assert m.cpu.regs[S.BX] == 1000
    assert m.breakpoints.list() == []


def test_step_out_of_an_interrupt_handler(m):
    run_to(m, INT60)
    stop = m.step_out()
    assert stop.kind == "step" and ip(m) == AFTER3


def test_run_until_address_condition_and_memory(m):
    stop = m.run_until("exec", LOOP_INSN, condition="dx == 10")
    assert stop.kind == "until" and m.cpu.regs[S.DX] == 10
    stop = m.run_until(condition="cx == 0")
    assert stop.kind == "until" and m.cpu.regs[S.CX] == 0
    assert ip(m) == AFTER4
    stop = m.run_until("mem_write", DATA + 2, length=2)
    assert stop.kind == "until" and stop.access["address"] == DATA + 2
    assert m.breakpoints.list() == []
    stop = m.run_until("exec", 0x12345, max_cycles=1000)
    assert stop.kind in ("budget", "halt")


def test_halt_budget_and_pause_stops(m):
    stop = m.run_for(1_000_000)
    assert stop.kind == "halt" and ip(m) == DONE + 1
    stop = m.run_for(1000)
    assert stop.kind == "budget"
    # a guest that spins for ever: another thread pauses it
    m.memory.write(0x8000, b"\xEB\xFE")        # jmp $
    m.cpu.regs[S.IP] = 0x8000
    m.cpu.ctl[S.C_HALTED] = 0
    timer = threading.Timer(0.2, m.request_pause)
    timer.start()
    t0 = time.monotonic()
    stop = m.run_for(10 ** 12)
    assert stop.kind == "pause"
    assert time.monotonic() - t0 < 30
    assert ip(m) == 0x8000


def test_a_decoding_gap_is_a_fault_stop(m, monkeypatch):
    """The core reports an opcode it failed to decode as EXIT_FAULT; the
    machine makes it a fault stop naming the opcode (nothing is executed)."""
    cpu = m.cpu
    orig = cpu.run

    def faulty(until):
        cpu.ctl[S.C_EXIT_VALUE] = 0x0F
        return S.EXIT_FAULT
    monkeypatch.setattr(cpu, "run", faulty)
    stop = m.run_for(1000)
    monkeypatch.setattr(cpu, "run", orig)
    assert stop.kind == "fault" and stop.detail["opcode"] == 0x0F
    assert "0Fh" in stop.detail["message"]


# ---------------------------------------------------------------------------
# the trace
# ---------------------------------------------------------------------------

def test_trace_records_what_stepping_sees(m):
    ref = Machine(MachineConfig(plugins=["cga"]))
    try:
        ref.memory.mem[:] = m.memory.mem
        ref.cpu.regs[:] = m.cpu.regs
        expected = []
        while ref.cpu.regs[S.IP] != AFTER1:
            expected.append((int(ref.cpu.regs[S.IP]), {n: int(ref.cpu.regs[i]) for i, n in
                                                        enumerate(S.REG16_NAMES)}))
            ref.step()
    finally:
        ref.close()
    m.trace.start(capacity=100_000, registers=True, effects=True)
    run_to(m, AFTER1)
    m.trace.stop()
    recs = m.trace.read(0, m.trace.count)
    assert [r["ip"] for r in recs] == [e[0] for e in expected]
    for rec, (_, regs) in zip(recs, expected):
        assert {k: rec["regs"][k] for k in S.REG16_NAMES} == regs
    first = recs[0]
    assert first["bytes"] == bytes([0xFA]) and first["linear"] == START
    writes = [e for r in recs for e in r["effects"] if e["kind"] == "mem_write"]
    # the vector writes, the call's return address, proc's mov [DATA],ax
    assert {"kind": "mem_write", "address": DATA, "value": 0x34, "old": 0} in writes
    assert m.trace.total == len(expected)


def test_trace_ring_keeps_the_latest(m):
    m.trace.start(capacity=64)
    stop = m.run_for(1_000_000)
    assert stop.kind == "halt"
    assert m.trace.count == 64 and m.trace.total > 2000
    recs = m.trace.read(count=64)
    assert recs[-1]["ip"] == DONE and recs[-1]["index"] == m.trace.total - 1
    assert "regs" not in recs[0] and "effects" not in recs[0]
    with pytest.raises(BreakpointError):
        m.trace.read(0, 1)                       # long overwritten
    with pytest.raises(BreakpointError):
        m.trace.start(capacity=0)
    assert m.trace.active                        # a refused start changes nothing
    m.trace.stop()


def test_restoring_a_state_keeps_the_breakpoints_and_the_trace(m):
    snap = m.get_state()
    bp = m.breakpoints.add("int", number=0x60)
    w = m.breakpoints.add("io_write", port=0x80)
    m.trace.start(capacity=128)
    m.set_state(snap)                       # taken before the breakpoints existed
    stop = m.run_for(1_000_000)
    assert stop.breakpoint is bp
    stop = m.run_for(1_000_000)
    assert stop.breakpoint is w
    assert m.trace.total > 100


def test_a_breakpoint_where_a_budget_slice_ends_still_stops_the_next_run(m):
    """Runs cut into slices must not skip a breakpoint that a slice happens
    to end on; only resuming from a stop there steps past it."""
    state = m.get_state()
    while ip(m) != FIRST:
        m.step()
    at_first = m.clock()
    m.set_state(state)
    stop = m.run_until_cycle(at_first)             # the slice ends right at FIRST
    assert stop.kind == "budget" and ip(m) == FIRST
    bp = m.breakpoints.add("exec", FIRST)
    stop = m.run_for(1_000_000)
    assert stop.breakpoint is bp and ip(m) == FIRST and bp.hits == 1
    stop = m.run_for(1_000_000)                    # resuming from its stop goes on
    assert stop.kind == "halt" and bp.hits == 1
    # the same for the INT breakpoint
    m.breakpoints.clear()
    m.set_state(state)
    while ip(m) != INT1:
        m.step()
    at_int = m.clock()
    m.set_state(state)
    assert m.run_until_cycle(at_int).kind == "budget" and ip(m) == INT1
    intbp = m.breakpoints.add("int", number=0x60)
    stop = m.run_for(1_000_000)
    assert stop.breakpoint is intbp and ip(m) == INT1
    assert m.step().kind == "step" and ip(m) == INT60     # a step always executes


def test_a_reset_keeps_the_breakpoints_armed(m):
    bp = m.breakpoints.add("int", number=0x60)
    w = m.breakpoints.add("io_write", port=0x80)
    m.cpu.reset()
    assert m.cpu.ctl[S.C_IOW_N] == 1 and m.cpu.ctl[S.C_INT_MASK + 1]
    m.memory.write(START, program())
    m.cpu.regs[S.CS], m.cpu.regs[S.IP] = 0, START
    assert m.run_for(1_000_000).breakpoint is bp
    assert m.run_for(1_000_000).breakpoint is w
