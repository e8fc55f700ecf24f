"""The block translator (pypc_core/cpu/translator.py) against the interpreter:
the same programs give the same machine (registers, every byte of memory,
every control word, cycles and instruction counts), at the edges that make a
translator wrong: interrupts landing mid-region, REP strings, code that
patches the next instruction, breakpoints and watches inside a region, the
fetch wrap at CS:FFFF, snapshots moved between engines."""

import gzip
import json
import random
from pathlib import Path

import numpy as np
import pytest

from pypc_core.cpu import blockgen, conformance
from pypc_core.cpu import state as S
from pypc_core.cpu.cpu import Cpu

CS0, IP0 = 0x1000, 0x0100
DS0, SS0, ES0 = 0x2000, 0x3000, 0x4000
VECTORS = (Path(__file__).resolve().parents[1] / ".." / "shared" / "cpu-tests" / "8086").resolve()

# a machine's translator that translates whatever it samples, loops or not
EAGER_MACHINE = dict(threshold=1, slice_cycles=2000, compile_budget=False, loops_only=False)
EAGER = dict(threshold=1, slice_cycles=300, compile_budget=False, loops_only=False)


def make_cpu(code, seed=0, translate=None, ip=IP0, cs=CS0):
    cpu = Cpu()
    rng = np.random.default_rng(seed)
    cpu.mem[DS0 << 4:(DS0 << 4) + 0x10000] = rng.integers(0, 256, 0x10000, dtype=np.uint8)
    cpu.mem[(cs << 4) + ip:(cs << 4) + ip + len(code)] = np.frombuffer(bytes(code), np.uint8)
    cpu.regs[S.CS], cpu.regs[S.IP] = cs, ip
    cpu.regs[S.DS], cpu.regs[S.SS], cpu.regs[S.ES] = DS0, SS0, ES0
    cpu.regs[S.SP] = 0xFFF0
    for r in (S.AX, S.BX, S.CX, S.DX, S.SI, S.DI):
        cpu.regs[r] = int(rng.integers(0, 0x10000))
    cpu.regs[S.FLAGS] = S.FLAGS_FIXED_ONES
    if translate is not None:
        cpu.translate(**translate)
    return cpu


def machine_state(cpu):
    # (get_state's control words: without where this process has the arrays)
    return bytes(cpu.mem), cpu.regs.copy(), cpu.get_state()["ctl"]


def assert_same(a, b):
    mem_a, regs_a, ctl_a = a
    mem_b, regs_b, ctl_b = b
    assert list(regs_a) == list(regs_b)
    diff = np.nonzero(ctl_a != ctl_b)[0]
    assert not len(diff), f"control words differ at {list(diff)}: {ctl_a[diff]} vs {ctl_b[diff]}"
    if mem_a != mem_b:
        first = next(i for i in range(len(mem_a)) if mem_a[i] != mem_b[i])
        pytest.fail(f"memory differs first at {first:05X}")


def run_sliced(cpu, slices, irq_vector=None):
    """Run to each cycle in ``slices``; after each, enter an interrupt when
    IF is set (the same boundaries under both engines, or the test fails)."""
    reason = None
    for until in slices:
        while cpu.cycles < until:
            reason = cpu.run(until)
            if reason == S.EXIT_HALT:
                return reason
            if reason == S.EXIT_BREAKPOINT:
                cpu.ctl[S.C_SKIP_BP] = 1
        if irq_vector is not None and cpu.regs[S.FLAGS] & S.F_IF:
            cpu.interrupt(irq_vector)
    return reason


# ---------------------------------------------------------------------------
# random programs
# ---------------------------------------------------------------------------

GPR = (S.AX, S.CX, S.DX, S.BX, S.SI, S.DI)       # destinations (never SP, BP)


def _modrm(rng, reg, memory=False):
    mod = rng.choice((0, 1, 2) if memory else (0, 1, 2, 3, 3))
    rm = rng.randrange(8)
    if mod == 3:
        rm = rng.choice(GPR)
    out = [(mod << 6) | (reg << 3) | rm]
    if mod == 0 and rm == 6:
        out += [rng.randrange(256), rng.randrange(256)]
    elif mod == 1:
        out += [rng.randrange(256)]
    elif mod == 2:
        out += [rng.randrange(256), rng.randrange(256)]
    return out


def _insn(rng):
    """One random instruction (bytes) that leaves SP and BP alone."""
    k = rng.randrange(19)
    reg = rng.choice(GPR)
    if k < 4:            # ALU r/m, reg / reg, r/m (byte or word); to-reg forms only write GPRs
        aop = rng.randrange(8)
        op = (aop << 3) | rng.choice((0, 1))          # r/m <- r/m op reg
        if rng.random() < 0.5:
            op |= 2                                   # reg <- reg op r/m
            return [op] + _modrm(rng, reg if op & 1 else rng.choice((0, 1, 2, 3)))
        m = _modrm(rng, rng.randrange(8))
        if m[0] >> 6 == 3:
            m[0] = (m[0] & ~7) | rng.choice(GPR)
            if not op & 1:
                m[0] = (m[0] & ~7) | rng.choice((0, 1, 2, 3))
        return [op] + m
    if k == 4:           # ALU r/m, imm
        op = rng.choice((0x80, 0x81, 0x83))
        m = _modrm(rng, rng.randrange(8))
        if m[0] >> 6 == 3:
            m[0] = (m[0] & ~7) | rng.choice((0, 1, 2, 3) if op == 0x80 else GPR)
        return [op] + m + ([rng.randrange(256)] * (2 if op == 0x81 else 1))
    if k == 5:           # ALU acc, imm
        aop = rng.randrange(8)
        w = rng.randrange(2)
        return [(aop << 3) | 4 | w] + [rng.randrange(256) for _ in range(1 + w)]
    if k == 6:
        return [0x40 | reg] if rng.random() < 0.5 else [0x48 | reg]
    if k == 7:           # MOV
        op = rng.choice((0x88, 0x89, 0x8A, 0x8B))
        m = _modrm(rng, rng.choice(GPR) if op & 1 else rng.choice((0, 1, 2, 3)))
        if m[0] >> 6 == 3:
            m[0] = (m[0] & ~7) | (rng.choice(GPR) if op & 1 else rng.choice((0, 1, 2, 3)))
        return [op] + m
    if k == 8:
        return [0xB8 | reg, rng.randrange(256), rng.randrange(256)]
    if k == 9:
        return [0xB0 | rng.randrange(8), rng.randrange(256)]
    if k == 10:          # a balanced PUSH/POP pair
        return [0x50 | rng.randrange(8), 0x58 | reg]
    if k == 11:
        return [rng.choice((0x90, 0x98, 0x99, 0xF5, 0xF8, 0xF9, 0xFC, 0xFD, 0x91, 0x93, 0x96))]
    if k == 12:          # TEST, LEA, MOV moffs, MOV r/m imm
        c = rng.randrange(4)
        if c == 0:
            return [0x85] + _modrm(rng, reg)
        if c == 1:
            return [0x8D] + _modrm(rng, reg, memory=True)
        if c == 2:
            return [rng.choice((0xA0, 0xA1, 0xA2, 0xA3)), rng.randrange(256), rng.randrange(256)]
        m = _modrm(rng, 0)
        if m[0] >> 6 == 3:
            m[0] = (m[0] & ~7) | rng.choice(GPR)
        return [0xC7] + m + [rng.randrange(256), rng.randrange(256)]
    if k == 13:          # a REP string (the interpreter's: a region ends there), a short count
        return [0xB9, rng.randrange(1, 9), 0, 0xF3, rng.choice((0xA4, 0xA5, 0xAA, 0xAB, 0xAC))]
    if k == 14:          # a segment override on a memory read
        return [rng.choice((0x26, 0x2E, 0x36, 0x3E)), 0x8B] + _modrm(rng, reg)
    if k == 15:          # flags through the stack, IF on and off (the interpreter's)
        return rng.choice(([0x9C, 0x9D], [0xFB], [0xFA]))
    if k == 16:          # XCHG, shifts and rotates by 1 and by CL, on registers and memory
        c = rng.randrange(4)
        if c == 0:
            return [0x87, 0xC0 | (rng.choice(GPR) << 3) | rng.choice(GPR)]
        if c == 1:
            return [0x86] + _modrm(rng, rng.randrange(4), memory=True)
        m = _modrm(rng, rng.randrange(8))
        if m[0] >> 6 == 3:
            m[0] = (m[0] & ~7) | rng.choice(GPR)
        if c == 2:
            return [rng.choice((0xD0, 0xD1))] + m
        return [0xB1, rng.randrange(0, 20), rng.choice((0xD2, 0xD3))] + m   # mov cl, n ; shift by CL
    if k == 17:          # NOT/NEG/TEST, INC/DEC r/m, XLAT, string steps without REP
        c = rng.randrange(4)
        m = _modrm(rng, 0)
        if m[0] >> 6 == 3:
            m[0] = (m[0] & ~7) | rng.choice(GPR)
        if c == 0:
            op = rng.choice((0xF6, 0xF7))
            m[0] = (m[0] & ~0x38) | (rng.choice((0, 2, 3)) << 3)
            imm = [rng.randrange(256) for _ in range(1 + (op & 1))] if not m[0] & 0x30 else []
            return [op] + m + imm
        if c == 1:
            m[0] = (m[0] & ~0x38) | (rng.randrange(2) << 3)
            return [rng.choice((0xFE, 0xFF))] + m
        if c == 2:
            return [0xD7]
        return [rng.choice((0xA4, 0xA5, 0xA6, 0xA7, 0xAA, 0xAB, 0xAC, 0xAD, 0xAE, 0xAF))]
    return [0x90]


def _muldiv(rng):
    """MUL/IMUL/DIV/IDIV on a register or memory, byte or word; a divide
    error (a zero divisor, a quotient too big) enters INT 0 (the ISR)."""
    op = rng.choice((0xF6, 0xF7))
    m = _modrm(rng, rng.choice((4, 5, 6, 7)))
    if m[0] >> 6 == 3:
        m[0] = (m[0] & ~7) | rng.choice((1, 3, 6, 7) if op & 1 else (1, 3, 5, 7))
    pre = []
    if m[0] & 0x20 and rng.random() < 0.7:       # a DIV: mostly a dividend that fits
        pre = [0x31, 0xD2] if op & 1 else [0xB4, 0x00]   # xor dx, dx / mov ah, 0
    return pre + [op] + m


def random_program(seed, body=24, outer=40, extra=None):
    """A loop of random instructions (with forward branches, a call, code
    that patches itself) run ``outer`` times, then HLT; an IRQ handler at
    vector 8 counts in memory and IRETs."""
    rng = random.Random(seed)
    code = [0x2E, 0xC7, 0x06, 0x00, 0x00, 0x00, 0x00]       # mov word [cs:0], 0 (IRQ count)
    code += [0xBD, outer & 0xFF, outer >> 8]                # mov bp, outer
    top = len(code)
    pieces = []
    for _ in range(body):
        r = rng.random()
        if r < 0.12:       # a forward Jcc over one instruction
            skip = _insn(rng)
            pieces.append([0x70 | rng.randrange(16), len(skip)] + skip)
        elif r < 0.17:     # patch the immediate of the next instruction, then run it
            v = rng.randrange(256)
            pieces.append(("patch", v))
        elif r < 0.20:     # a LOOP over a short body with its own count
            pieces.append([0x51, 0xB9, rng.randrange(1, 5), 0x00, 0x40 | 0, 0xE2, 0xFD, 0x59])
        elif extra is not None and r < 0.35:
            pieces.append(extra(rng))
        else:
            pieces.append(_insn(rng))
    for p in pieces:
        if isinstance(p, tuple):
            # mov byte [cs:X], v ; mov al, imm  (X = the imm byte of the mov al)
            at = IP0 + len(code) + 6 + 1
            code += [0x2E, 0xC6, 0x06, at & 0xFF, at >> 8, p[1], 0xB0, 0x00]
        else:
            code += p
    code += [0x4D]                                          # dec bp
    back = top - (len(code) + 5)
    code += [0x74, 0x03, 0xE9, back & 0xFF, (back >> 8) & 0xFF]   # jz done ; jmp top
    code += [0xF4]                                          # done: hlt
    isr = len(code)
    code += [0x2E, 0xFF, 0x06, 0x00, 0x00, 0xCF]            # inc word [cs:0] ; iret
    return bytes(code), IP0 + isr


def _with_isr(cpu, isr_ip):
    # the IRQ's vector 8 and the divide error's vector 0
    for vector in (0, 8):
        cpu.mem[vector * 4:vector * 4 + 4] = np.frombuffer(
            bytes([isr_ip & 0xFF, isr_ip >> 8, CS0 & 0xFF, CS0 >> 8]), np.uint8)


def _both_engines(seed, extra=None, salt=1000):
    """A random program (``extra``: more instruction kinds) run in the same
    slices, with the same IRQs, by the interpreter and the translator: both
    machines, and the translator's stats."""
    code, isr = random_program(seed, extra=extra)
    rng = random.Random(seed + salt)
    slices = sorted(rng.sample(range(50, 300_000), 40)) + [2_000_000]
    states = []
    for translate in (None, EAGER):
        cpu = make_cpu(code, seed, translate)
        _with_isr(cpu, isr)
        run_sliced(cpu, slices, irq_vector=8)
        states.append(machine_state(cpu))
    return states, cpu.translator.stats()


@pytest.mark.parametrize("seed", [*range(10), 11, 56])   # 11, 56: a REP paused past the deadline
def test_random_programs_end_in_the_same_machine(seed):
    states, stats = _both_engines(seed)
    assert_same(*states)
    assert stats["translated"] >= 1
    assert stats["translated_instructions"] > 0        # and it ran, not only compiled


@pytest.mark.parametrize("seed", range(6))
def test_random_programs_with_mul_and_div_end_in_the_same_machine(seed):
    # MUL/IMUL/DIV/IDIV call the interpreter's arithmetic from translated
    # code; divide errors leave the region for the interpreter's INT 0
    states, stats = _both_engines(seed, extra=_muldiv, salt=2000)
    assert_same(*states)
    assert stats["translated_instructions"] > 0


def test_the_standard_loop_is_translated_and_exact():
    code = bytes.fromhex(
        "BB1000BA3412BD0300B91000BE02008B0401D0355A5A8940022A5401889400014681FE0003"
        "7503BE0002E2E34D75DAF4")
    states, executed = [], []
    for translate in (None, dict(threshold=1, slice_cycles=2000, compile_budget=False, loops_only=False)):
        cpu = make_cpu(code, 7, translate)
        assert cpu.run(1 << 40) == S.EXIT_HALT
        states.append(machine_state(cpu))
        executed.append((cpu.instructions, cpu.cycles))
    assert_same(*states)
    assert executed[0][0] == 3 + 3 * (4 + 10 * 16 + 0) + 1
    assert executed[0] == executed[1]
    stats = cpu.translator.stats()
    assert stats["regions"] >= 1
    # most of the loop ran translated (the interpreter ran it up to a sample)
    assert stats["translated_instructions"] > executed[1][0] // 2


def test_a_write_into_the_next_instruction_is_seen():
    # mov byte [cs:imm of the mov al below], 42h ; mov al, 00h ; hlt
    at = IP0 + 6 + 1
    code = bytes([0x2E, 0xC6, 0x06, at & 0xFF, at >> 8, 0x42, 0xB0, 0x00, 0xF4])
    for translate in (None, EAGER):
        cpu = make_cpu(code, 1, translate)
        if translate:
            assert cpu.translator.translate(CS0, IP0).instructions == 2
        assert cpu.run(1 << 30) == S.EXIT_HALT
        assert cpu.regs[S.AX] & 0xFF == 0x42


def test_a_region_whose_bytes_changed_is_dropped():
    code = bytes([0xB0, 0x01, 0xF4])               # mov al, 1 ; hlt
    cpu = make_cpu(code, 2, EAGER)
    region = cpu.translator.translate(CS0, IP0)
    assert region is not None
    cpu.mem[(CS0 << 4) + IP0 + 1] = 0x07            # patched from outside (DMA, a debugger)
    assert cpu.run(1 << 30) == S.EXIT_HALT
    assert cpu.regs[S.AX] & 0xFF == 0x07
    assert cpu.translator.stats()["stale"] == 1
    assert (CS0, IP0) not in cpu.translator.regions
    assert not cpu.xflags[(CS0 << 4) + IP0] & S.XF_BLOCK


def test_the_deadline_stops_a_region_where_the_interpreter_stops():
    code = bytes([0x40] * 50 + [0xF4])              # inc ax x 50 (2 cycles each)
    for budget in (1, 2, 3, 17, 60):
        got = []
        for translate in (None, EAGER):
            cpu = make_cpu(code, 3, translate)
            if translate:
                cpu.translator.translate(CS0, IP0)
            cpu._run(budget) if translate else cpu.run(budget)
            got.append((cpu.instructions, cpu.cycles, int(cpu.regs[S.AX]), int(cpu.regs[S.IP])))
        assert got[0] == got[1], budget


def test_a_breakpoint_inside_a_region_stops_there():
    code = bytes([0x40] * 10 + [0xF4])
    cpu = make_cpu(code, 4, EAGER)
    cpu.translator.translate(CS0, IP0)
    cpu.xflags[(CS0 << 4) + IP0 + 6] |= S.XF_BREAKPOINT
    assert cpu.run(1 << 30) == S.EXIT_BREAKPOINT
    assert cpu.regs[S.IP] == IP0 + 6 and cpu.instructions == 6


def test_a_memory_watch_inside_a_region_fires_on_its_instruction():
    # inc ax ; mov [0010h], ax ; inc ax ; hlt
    code = bytes([0x40, 0xA3, 0x10, 0x00, 0x40, 0xF4])
    cpu = make_cpu(code, 5, EAGER)
    cpu.translator.translate(CS0, IP0)
    a = (DS0 << 4) + 0x10
    cpu.xflags[a] |= S.XF_WATCH_W
    cpu.page_flags[a >> 12] |= S.PG_WATCH_W
    assert cpu.run(1 << 30) == S.EXIT_WATCH
    assert cpu.ctl[S.C_WATCH_HIT] == a and cpu.regs[S.IP] == IP0 + 4 and cpu.instructions == 2


def test_code_at_the_end_of_the_segment_wraps_as_in_the_interpreter():
    # at CS:FFFD: mov ax, 1234h wraps its immediate's high byte to CS:0000
    code_end = bytes([0xB8, 0x34])
    states = []
    for translate in (None, EAGER):
        cpu = make_cpu(code_end, 6, translate, ip=0xFFFE)
        cpu.mem[CS0 << 4] = 0x12
        cpu.mem[(CS0 << 4) + 1] = 0xF4               # hlt at CS:0001
        if translate:
            assert cpu.translator.translate(CS0, 0xFFFE) is None
        assert cpu.run(1 << 30) == S.EXIT_HALT
        states.append(machine_state(cpu))
    assert_same(*states)
    assert states[0][1][S.AX] == 0x1234


def test_a_snapshot_taken_under_the_translator_restores_under_the_interpreter():
    code, isr = random_program(99)
    ref = make_cpu(code, 99)
    _with_isr(ref, isr)
    assert run_sliced(ref, [1_000_000], irq_vector=8) == S.EXIT_HALT
    half = ref.cycles // 2
    ref = make_cpu(code, 99)
    _with_isr(ref, isr)
    run_sliced(ref, [half, 2_000_000], irq_vector=8)
    for first, second in ((EAGER, None), (None, EAGER)):
        a = make_cpu(code, 99, first)
        _with_isr(a, isr)
        run_sliced(a, [half], irq_vector=8)
        snap, mem = a.get_state(), a.mem.copy()
        b = make_cpu(b"", 99, second)
        b.mem[:] = mem
        b.set_state(snap)
        run_sliced(b, [2_000_000], irq_vector=8)
        assert_same(machine_state(ref), machine_state(b))


def test_the_compile_budget_holds_translation_back():
    code = bytes.fromhex("B9FFFFE2FEF4")           # mov cx, FFFFh ; loop $ ; hlt
    cpu = make_cpu(code, 8, dict(threshold=1, slice_cycles=1000, compile_share=0.0,
                                 compile_per_emulated_s=0.0))
    assert cpu.run(1 << 30) == S.EXIT_HALT
    assert cpu.translator.stats()["translated"] == 0


def test_the_cache_evicts_beyond_its_limit():
    code = bytes([0x40, 0x41, 0x42, 0x43, 0xF4])
    cpu = make_cpu(code, 9, dict(EAGER, max_regions=2))
    tr = cpu.translator
    for ip in (IP0, IP0 + 1, IP0 + 2, IP0 + 3):
        tr.translate(CS0, ip)
    assert tr.stats()["regions"] == 2 and tr.stats()["evicted"] == 2
    # the evicted entries are gone from the core's table, the kept ones stay
    assert cpu.run(1 << 30) == S.EXIT_HALT
    assert cpu.regs[S.AX] == (make_cpu(code, 9).regs[S.AX] + 1) & 0xFFFF


def test_a_renewed_engine_runs_the_regions_it_took_over():
    # after renew_after closed libraries the live regions move into a new
    # LLJIT (their table entries change) and the old one goes
    code = bytes([0x40, 0x41, 0x42, 0x43, 0xF4])
    cpu = make_cpu(code, 9, dict(EAGER, max_regions=2, renew_after=2))
    tr = cpu.translator
    for ip in (IP0, IP0 + 1, IP0 + 2, IP0 + 3):
        tr.translate(CS0, ip)
    stats = tr.stats()
    assert stats["evicted"] == 2 and stats["renewals"] == 1 and stats["regions"] == 2
    kept = {pc: int(tr.table[pc]) for r in tr.regions.values() for pc in r.pcs}
    assert all(kept.values())
    assert cpu.run(1 << 30) == S.EXIT_HALT
    plain = make_cpu(code, 9)
    assert plain.run(1 << 30) == S.EXIT_HALT
    assert_same(machine_state(cpu), machine_state(plain))
    assert tr.stats()["translated_instructions"] == 2          # the kept regions ran


def test_regions_do_not_take_untranslatable_entries():
    insns, exits = blockgen.discover(lambda a: 0xF4, CS0, IP0)     # HLT
    assert insns == {} and exits == {IP0}


def _vector_sample(runner, per_file, translatable_only=False):
    """Run the first ``per_file`` vectors of each opcode file through
    ``runner``; returns (failures, vectors run)."""
    masks = conformance.load_masks(str(VECTORS))
    failures, ran = [], 0
    for path in sorted(VECTORS.glob("*.jsonl.gz")):
        stem = path.name[:-len(".jsonl.gz")]
        if translatable_only:
            op = int(stem.split(".")[0], 16)
            try:
                blockgen.decode(lambda a, op=op: op if a == 0 else 0, 0, 0)
            except blockgen.Untranslatable:
                continue
        mask = masks.get(stem, masks.get(stem.split(".")[0], 0xFFFF))
        with gzip.open(path, "rt") as fh:
            for lineno, line in enumerate(fh, 1):
                if lineno > per_file:
                    break
                diff = runner.run_test(json.loads(line), mask)
                ran += 1
                if diff:
                    failures.append((stem, lineno, diff))
    return failures, ran


@pytest.mark.skipif(not VECTORS.is_dir(), reason="conformance vectors not found")
def test_vectors_through_the_translator():
    # a sample of each opcode file the translator handles (the whole set:
    # python -m pypc_core.cpu.conformance DIR --translate)
    runner = conformance.Runner(translate=True)
    failures, ran = _vector_sample(runner, 4, translatable_only=True)
    assert not failures, failures[:5]
    assert runner.translated >= ran * 0.9


@pytest.mark.skipif(not VECTORS.is_dir(), reason="conformance vectors not found")
def test_vectors_inside_longer_regions():
    # each vector's instruction between translated neighbours (two before,
    # one after or a breakpoint at its end), a sample of every opcode file
    # (the whole set: python -m pypc_core.cpu.conformance DIR --translate --in-block)
    runner = conformance.Runner(translate=True, in_block=True)
    failures, ran = _vector_sample(runner, 2)
    assert not failures, failures[:5]
    # most instructions the translator knows ran inside their region
    assert runner.translated_in_block >= ran * 0.5
    assert runner.block_skipped <= ran * 0.1


def _same_state(a, b, where="state"):
    """Deep comparison of Machine.get_state() trees (arrays, dicts, lists)."""
    if isinstance(a, dict):
        assert sorted(a) == sorted(b), where
        for k in a:
            _same_state(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same_state(x, y, f"{where}[{i}]")
    elif isinstance(a, np.ndarray):
        diff = np.nonzero(np.asarray(a != b).ravel())[0]
        assert not len(diff), f"{where} differs at {list(diff[:8])}"
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def test_a_cpu_heavy_dos_program_ends_in_the_same_machine(tmp_path):
    from guest import dos as progs
    from pypc_core.machine import CPU_HZ
    runs = []
    for cpu in ("interpret", "translate"):
        folder = tmp_path / cpu
        folder.mkdir()
        progs.install(folder, "crunch")
        text, code, m = progs.run(folder, "C:\\CRUNCH.COM", cpu=cpu,
                                  translator=EAGER_MACHINE if cpu == "translate" else None)
        try:
            m.run_for(CPU_HZ // 10)          # the same tenth of a second after it
            runs.append((text, code, m.screen_text(), m.get_state(), m.cpu.translator))
        finally:
            m.close()
    (text_a, code_a, screen_a, state_a, _), (text_b, code_b, screen_b, state_b, tr) = runs
    assert text_a.startswith("primes=03512 crc="), text_a
    assert (text_a, code_a, screen_a) == (text_b, code_b, screen_b)
    _same_state(state_a, state_b)
    assert tr.stats()["translated"] >= 1
    assert tr.stats()["translated_instructions"] > 0


def test_an_interrupt_due_in_the_shadow_of_mov_ss_lands_where_it_does_without_translation():
    # mov ax, 3000h ; mov ss, ax ; inc bx x 8 ; hlt -- an IRQ pending with IF on
    code = bytes([0xB8, 0x00, 0x30, 0x8E, 0xD0] + [0x43] * 8 + [0xF4])
    got = []
    for translate in (None, EAGER):
        cpu = make_cpu(code, 10, translate)
        cpu.regs[S.FLAGS] |= S.F_IF
        if translate:
            assert cpu.translator.translate(CS0, IP0 + 5) is not None
        cpu.ctl[S.C_INTR] = 1
        # MOV AX and MOV SS with IF off (the IRQ would be taken before
        # them), then IF on: the shadow of MOV SS holds it off for one INC
        cpu.regs[S.FLAGS] &= 0xFFFF & ~S.F_IF
        cpu.step()
        cpu.step()
        assert cpu.ctl[S.C_INHIBIT] == 1
        cpu.regs[S.FLAGS] |= S.F_IF
        reason = cpu.run(1 << 30)
        got.append((reason, cpu.instructions, int(cpu.regs[S.IP]), int(cpu.regs[S.BX])))
    assert got[0] == got[1]
    assert got[0][0] == S.EXIT_IRQ and got[0][2] == IP0 + 6     # after MOV SS and one INC


def test_only_regions_holding_a_loop_are_translated_from_samples():
    # a loop through INT 3 (left to the interpreter) leaves the region
    # every time round; a native loop does not
    through_int = bytes([0x40, 0xCC, 0xEB, 0xFC])          # l: inc ax ; int 3 ; jmp l
    native = bytes([0x40, 0xE2, 0xFD, 0xF4])               # l: inc ax ; loop l ; hlt
    insns, _ = blockgen.discover(lambda a: through_int[a - (CS0 << 4) - IP0]
                                 if 0 <= a - (CS0 << 4) - IP0 < 4 else 0xF4, CS0, IP0)
    assert not blockgen.has_loop(insns)
    insns, _ = blockgen.discover(lambda a: native[a - (CS0 << 4) - IP0]
                                 if 0 <= a - (CS0 << 4) - IP0 < 4 else 0xF4, CS0, IP0)
    assert blockgen.has_loop(insns)
    for code, want in ((through_int, 0), (native, 1)):
        cpu = make_cpu(code, 11, dict(threshold=1, slice_cycles=300, compile_budget=False))
        cpu.regs[S.CX] = 0xFFFF
        # INT 3 to an IRET at 0000:0000
        cpu.mem[0:1] = 0xCF
        cpu.mem[12:16] = np.frombuffer(bytes([0, 0, 0, 0]), np.uint8)
        cpu.run(200_000)
        assert cpu.translator.stats()["translated"] == want


def test_sampling_backs_off_on_judged_code_and_comes_back_for_new_code():
    """While every sample lands on code already judged (here an idle loop of
    CLI and STI, which stay with the interpreter) the slices double up to
    their limit; the first sample of other code brings the first rate back,
    and the machine runs the same either way."""
    idle = bytes.fromhex("FA FB FA EBFC")            # cli / l: sti / cli / jmp l
    hot = bytes.fromhex("40 4B 75FC EBFA")           # l: inc ax / dec bx / jnz l / jmp l
    code = idle + bytes(0x40 - len(idle)) + hot
    # a budget that never refuses (the refusal depends on host time): the
    # idle loop's places are judged at their first samples
    cpu = make_cpu(code, 3, dict(slice_cycles=1000, compile_share=1000.0))
    ref = make_cpu(code, 3)
    tr = cpu.translator
    assert tr.current_slice == 1000
    for c in (cpu, ref):
        c.run(c.cycles + 300_000)
    assert tr.current_slice == tr.max_slice_cycles == 16_000
    for c in (cpu, ref):
        c.regs[S.IP] = IP0 + 0x40                     # over to the hot loop
        c.run(c.cycles + 17_000)                      # one long slice, then a short one
    assert tr.current_slice < tr.max_slice_cycles
    assert_same(machine_state(cpu), machine_state(ref))
