"""The core's write journal (PG_JOURNAL pages, ``bus.journal.RamJournal``),
checked against an independent witness: the core's effect recording, which
logs every byte write with the byte before it.  Whatever a guest does to a
CGA's window -- byte and word stores at either copy, REP STOSB/STOSW up or
down, MOVS, read-modify-write, stores that do not change the byte, a word
across the two copies' seam -- the journal holds exactly the writes that
changed a byte, in program order, each with its offset in the first copy;
and with the journal stopped the page table is what it was."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pypc_core.bus.journal import TEXT, WriteLog
from pypc_core.cpu import state as S
from pypc_core.machine import Machine, MachineConfig

CODE = 0x10000
WINDOW, SIZE, COPIES = 0xB8000, 0x4000, 2
_MACHINE = []


def machine():
    if not _MACHINE:
        m = Machine(MachineConfig(plugins=["cga"]))
        m.run_seconds(0.05)
        _MACHINE.append(m)
    return _MACHINE[0]


def seg(value):                        # mov ax, value / mov es, ax / mov ds, ax
    return bytes([0xB8, value & 0xFF, value >> 8, 0x8E, 0xC0, 0x8E, 0xD8])


def regs(di, si, cx, ax):
    return (bytes([0xBF]) + di.to_bytes(2, "little") + bytes([0xBE]) + si.to_bytes(2, "little")
            + bytes([0xB9]) + cx.to_bytes(2, "little") + bytes([0xB8]) + ax.to_bytes(2, "little"))


segments = st.sampled_from([0xB800, 0xBC00, 0xBB00, 0xBFFF])     # BB00:5000h.. the seam
offsets = st.integers(0, 0xFFFF)
small = st.integers(0, 40)
byte = st.integers(0, 255)
word = st.integers(0, 0xFFFF)

instructions = st.one_of(
    # mov byte [di+k], imm8 / mov word [di+k], imm16 (ES: prefix)
    st.builds(lambda s, di, k, v: seg(s) + regs(di, 0, 0, 0) + bytes([0x26, 0xC6, 0x85])
              + k.to_bytes(2, "little") + bytes([v]), segments, offsets, offsets, byte),
    st.builds(lambda s, di, k, v: seg(s) + regs(di, 0, 0, 0) + bytes([0x26, 0xC7, 0x85])
              + k.to_bytes(2, "little") + v.to_bytes(2, "little"), segments, offsets, offsets, word),
    # cld or std, rep stosb / rep stosw
    st.builds(lambda s, di, n, v, down, w: seg(s) + regs(di, 0, n, v)
              + bytes([0xFD if down else 0xFC, 0xF3, 0xAB if w else 0xAA]),
              segments, offsets, small, word, st.booleans(), st.booleans()),
    # rep movsw / movsb inside the window (DS = ES)
    st.builds(lambda s, di, si, n, w: seg(s) + regs(di, si, n, 0)
              + bytes([0xFC, 0xF3, 0xA5 if w else 0xA4]), segments, offsets, offsets, small,
              st.booleans()),
    # inc byte [es:di] / not word [es:di] / xchg [es:di], al
    st.builds(lambda s, di, op: seg(s) + regs(di, 0, 0, 0x1234) + op, segments, offsets,
              st.sampled_from([b"\x26\xFE\x05", b"\x26\xF7\x15", b"\x26\x86\x05"])),
)


def first_copy_offset(a):
    return (a - WINDOW) & (SIZE - 1)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(instructions, min_size=1, max_size=10), st.binary(min_size=64, max_size=64))
def test_the_journal_holds_every_changing_write_in_order(program, fill):
    m = machine()
    cga = m.video
    # a known window (some bytes equal to what the guest stores: no events)
    m.memory.write(WINDOW, (fill * (SIZE // len(fill))))
    code = b"".join(program) + b"\xFA\xF4"          # cli / hlt
    m.memory.write(CODE, code)
    m.set_registers(cs=CODE >> 4, ip=0, flags=2)
    table = m.memory.page_table.copy()
    log = WriteLog(1 << 16)
    cga.journal_start(log)
    m.cpu.begin_record()
    start = m.clock()
    try:
        stop = m.run_for(2_000_000)
    finally:
        m.cpu.end_record()
        cga.journal_stop()
    assert stop.kind == "halt"
    assert m.cpu.effects_lost == 0
    entries, lost = log.drain()
    assert lost == 0
    witness = [(first_copy_offset(a), old, new)
               for kind, a, new, old in m.cpu.recorded()
               if kind == S.EFF_MEM_WRITE and WINDOW <= a < WINDOW + SIZE * COPIES
               and old != new]
    assert [tuple(e[1:4]) for e in entries.tolist()] == witness
    assert (entries[:, 0] == TEXT).all()
    cycles = entries[:, 4]
    assert (np.diff(cycles) >= 0).all() and (cycles >= start).all() and \
        (cycles < m.clock()).all()
    # the copies stayed equal, and the page table is what it was
    mem = m.memory.mem
    assert (mem[WINDOW:WINDOW + SIZE] == mem[WINDOW + SIZE:WINDOW + 2 * SIZE]).all()
    assert (m.memory.page_table == table).all()


def test_paused_logging_leaves_plain_pages_and_python_writes_are_journaled():
    m = machine()
    log = WriteLog(64)
    m.video.journal_start(log)
    try:
        j = m.video._journal
        j.set_logging(False)
        assert not any(m.memory.page_flags[p] & S.PG_JOURNAL for p in j.pages)
        m.memory.write(WINDOW + 10, b"\x11\x22")
        assert log.drain()[0].shape == (0, 5)
        j.set_logging(True)
        assert all(m.memory.page_flags[p] & S.PG_JOURNAL for p in j.pages)
        m.memory.write(WINDOW + SIZE + 10, b"\x11\x33")      # the second copy, one change
        entries, _ = log.drain()
        assert [tuple(e[:4]) for e in entries.tolist()] == [(TEXT, 11, 0x22, 0x33)]
        assert m.memory.mem[WINDOW + 11] == 0x33
    finally:
        m.video.journal_stop()


def test_a_small_ring_keeps_the_newest_entries_and_counts_the_overwritten():
    m = machine()
    m.memory.write(WINDOW, bytes(64))
    code = seg(0xB800) + regs(0, 0, 32, 0x0101) + b"\xFC\xF3\xAB\xFA\xF4"   # 64 changed bytes
    m.memory.write(CODE, code)
    m.set_registers(cs=CODE >> 4, ip=0, flags=2)
    log = WriteLog(5)                       # 8 rows: the newest 8 entries stay
    assert log.rows == 8
    m.video.journal_start(log)
    try:
        assert m.run_for(1_000_000).kind == "halt"
    finally:
        m.video.journal_stop()
    assert log.count == 64
    entries, lost = log.drain()
    assert [tuple(e[1:4]) for e in entries.tolist()] == [(i, 0, 1) for i in range(56, 64)]
    assert lost == 56
    # the view saw every entry, the overwritten ones too
    assert (log.views[TEXT][:64] == 1).all() and not log.views[TEXT][64:].any()


def test_the_view_is_the_window_as_the_journal_shows_it():
    """Whoever appends (the core, Python's writes) stores the new byte in
    the log's view: after any journaled writes the view equals the window
    where it was journaled, and a write made with logging paused is the
    only difference left."""
    m = machine()
    m.memory.write(WINDOW, bytes(SIZE))
    code = (seg(0xBC00) + regs(100, 0, 50, 0x4142) + b"\xFC\xF3\xAB"    # the second copy
            + seg(0xB800) + b"\x26\xC6\x06\x00\x00\x7F" + b"\xFA\xF4")
    m.memory.write(CODE, code)
    m.set_registers(cs=CODE >> 4, ip=0, flags=2)
    log = WriteLog(1)
    view = log.views[TEXT]
    m.video.journal_start(log)
    try:
        assert m.run_for(1_000_000).kind == "halt"
        m.memory.write(WINDOW + 1000, b"\x55\x66")
        assert (view[:SIZE] == m.memory.mem[WINDOW:WINDOW + SIZE]).all()
        assert log.count == 100 + 1 + 2
        j = m.video._journal
        j.set_logging(False)
        m.memory.write(WINDOW + 2000, b"\x77")
        j.set_logging(True)
    finally:
        m.video.journal_stop()
    differ = np.nonzero(view[:SIZE] != m.memory.mem[WINDOW:WINDOW + SIZE])[0]
    assert differ.tolist() == [2000]
    assert not view[SIZE:].any()


TRAP_HANDLER = 0x200                    # an IRET, CODE's offset


def _writes_by_every_path():
    # DS = ES = SS = B800h, SP = 0100h, BX = 0010h, DI = 0030h, AX = 1234h
    return (seg(0xB800) + b"\x8E\xD0" + b"\xBC\x00\x01" + b"\xBB\x10\x00"
            + regs(0x30, 0, 0, 0x1234)
            + b"\x88\x47\x01"           # mov [bx+1], al        (run's ModR/M family)
            + b"\x46"                   # inc si                (writes nothing)
            + b"\xC6\x07\x11"           # mov byte [bx], 11h    (out of line)
            + b"\x50"                   # push ax               (run's PUSH)
            + b"\xE8\x00\x00"           # call $+3              (run's CALL)
            + b"\xFE\x47\x02"           # inc byte [bx+2]       (group 4/5)
            + b"\xA3\x20\x00"           # mov [0020h], ax       (out of line)
            + b"\xF7\x57\x04"           # not word [bx+4]       (group 3)
            + b"\xAA"                   # stosb                 (strings)
            + b"\xB8\x02\x01\x50\x9D"   # mov ax, 0102h / push ax / popf: TF on
            + b"\x46\x46\x90"           # inc si, inc si, nop: each traps (pushes)
            + b"\x31\xC0\x50\x9D"       # xor ax, ax / push ax / popf: TF off
            + b"\xFA\xF4")              # cli / hlt


def test_every_journaled_write_carries_the_cycle_its_instruction_began_at():
    """A journaled page's entries carry the cycle of the instruction that
    wrote them (``ctl[C_NOW]``), whichever path of the core made the write:
    run's ModR/M family, PUSH and CALL, the out-of-line families, a string
    instruction, the pushes of a single-step trap (whose entry belongs to
    the instruction that trapped).  Stepped one instruction at a time, the
    entries each step adds carry the clock before it; run in one go, the
    entries are the same."""
    m = machine()
    code = _writes_by_every_path()
    assert len(code) < TRAP_HANDLER

    def start():
        m.memory.write(WINDOW, b"\xEE" * 0x200)
        m.memory.write(CODE, code)
        m.memory.write(CODE + TRAP_HANDLER, b"\xCF")                  # iret
        m.memory.write(4, TRAP_HANDLER.to_bytes(2, "little") + (CODE >> 4).to_bytes(2, "little"))
        m.set_registers(cs=CODE >> 4, ip=0, flags=2)
        log = WriteLog(1 << 12)
        m.video.journal_start(log)
        return log

    log = start()
    stepped = []
    try:
        for _ in range(200):
            before = m.clock()
            stop = m.step()
            entries, _ = log.drain()
            assert (entries[:, 4] == before).all(), (hex(m.cpu.pc), entries.tolist(), before)
            stepped += entries.tolist()
            if m.cpu.halted:
                break
        else:
            raise AssertionError("the program never halted")
    finally:
        m.video.journal_stop()
    # every path wrote: ModR/M, out of line, PUSH, CALL, group 4/5, moffs,
    # group 3, STOSB, and 3 traps of 3 words each
    assert len(stepped) >= 25, stepped
    log = start()
    try:
        assert m.run_for(1_000_000).kind == "halt"
    finally:
        m.video.journal_stop()
    entries, _ = log.drain()
    offset = stepped[0][4] - int(entries[0, 4])
    assert [e[:4] + [e[4] - offset] for e in stepped] == entries.tolist()
