"""8088 quirks, string-instruction resumption, effect recording and
determinism of the core, as small hand-assembled programs (the assembly is
in the comment beside the bytes).

Layout: code at 1000:0100 (linear 10100h), stack 2000:1000, DS = ES = 3000h,
interrupt handlers at 0500:xxxx (linear 5000h + xxxx).
"""

import numpy as np
import pytest

from pypc_core import bench
from pypc_core.cpu import Cpu
from pypc_core.cpu import state as S

from cpu_programs import BIG, load, make_cpu, set_vector, word

STACK = (0x2000 << 4) + 0x1000      # linear SS:SP at start


def run_to_halt(cpu, limit=BIG):
    reason = cpu.run(cpu.cycles + limit)
    assert reason == S.EXIT_HALT, S.EXIT_NAMES.get(reason)
    return cpu


# ---------------------------------------------------------------------------
# undocumented and alias opcodes
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("code", [
    [0x54],             # push sp
    [0xFF, 0xF4],       # push sp   (FF /6, register form)
], ids=["54", "FF_F4"])
def test_push_sp_pushes_the_decremented_value(code):
    cpu = run_to_halt(make_cpu(code + [0xF4]))
    assert cpu.r.sp == 0x0FFE
    assert word(cpu, STACK - 2) == 0x0FFE          # an 80286 would push 1000h


def test_pop_cs_loads_cs():
    cpu = make_cpu([
        0x0F,               # 1000:0100 pop cs   -> continues at 0400:0101
    ])
    load(cpu, STACK, [0x00, 0x04])                 # word 0400h on the stack
    load(cpu, 0x4101, [0xF4])                      # 0400:0101 hlt
    run_to_halt(cpu)
    assert (cpu.r.cs, cpu.r.ip, cpu.r.sp) == (0x0400, 0x0102, 0x1002)


def test_mov_cs_8e_1_loads_cs():
    cpu = make_cpu([
        0xB8, 0x00, 0x04,   # 1000:0100 mov ax, 0400h
        0x8E, 0xC8,         # 1000:0103 mov cs, ax   -> continues at 0400:0105
    ])
    load(cpu, 0x4105, [0xF4])                      # 0400:0105 hlt
    run_to_halt(cpu)
    assert (cpu.r.cs, cpu.r.ip) == (0x0400, 0x0106)


def test_segment_register_field_aliases_8c_8e():
    # the 8088 decodes only two bits of the sreg field: /4../7 = ES CS SS DS
    cpu = run_to_halt(make_cpu([
        0xB8, 0x34, 0x12,   # mov ax, 1234h
        0x8E, 0xE0,         # mov sreg4(=es), ax
        0x8E, 0xF8,         # mov sreg7(=ds), ax
        0x8C, 0xF3,         # mov bx, sreg6(=ss)
        0xF4,               # hlt
    ]))
    assert cpu.r.es == 0x1234 and cpu.r.ds == 0x1234
    assert cpu.r.bx == 0x2000


@pytest.mark.parametrize("carry, al", [(True, 0xFF), (False, 0x00)])
def test_salc(carry, al):
    cpu = make_cpu([
        0xD6,               # salc
        0xF4,               # hlt
    ], ax=0x1255, flags=S.F_CF if carry else 0)
    flags = cpu.r.flags
    run_to_halt(cpu)
    assert cpu.r.al == al and cpu.r.ah == 0x12
    assert cpu.r.flags == flags


def _cond(cc, flags):
    cf, pf, zf, sf, of = (bool(flags & b) for b in (S.F_CF, S.F_PF, S.F_ZF, S.F_SF, S.F_OF))
    base = [of, cf, zf, cf or zf, sf, pf, sf != of, zf or (sf != of)][cc >> 1]
    return base != bool(cc & 1)


def test_60_6f_are_conditional_jumps():
    flag_sets = []
    for bits in range(32):
        f = 0
        for i, b in enumerate((S.F_CF, S.F_PF, S.F_ZF, S.F_SF, S.F_OF)):
            if bits >> i & 1:
                f |= b
        flag_sets.append(f)
    cpu = make_cpu([])
    for base in (0x60, 0x70):
        for cc in range(16):
            load(cpu, 0x10100, [
                base + cc, 0x03,    # 0100 jcc 0105
                0xB0, 0x01,         # 0102 mov al, 1
                0xF4,               # 0104 hlt
                0xF4,               # 0105 hlt
            ])
            for f in flag_sets:
                cpu.r.ip, cpu.r.ax, cpu.r.flags = 0x100, 0, f
                cpu.ctl[S.C_HALTED] = 0
                run_to_halt(cpu)
                taken = _cond(cc, f)
                assert cpu.r.ip == (0x106 if taken else 0x105), (hex(base + cc), hex(f))
                assert cpu.r.al == (0 if taken else 1)


@pytest.mark.parametrize("code, ip, cs, sp", [
    ([0xC0, 0x04, 0x00], 0x0200, 0x1000, 0x1006),   # ret 4    (C0 = C2)
    ([0xC1],             0x0200, 0x1000, 0x1002),   # ret      (C1 = C3)
    ([0xC8, 0x04, 0x00], 0x0200, 0x0400, 0x1008),   # retf 4   (C8 = CA)
    ([0xC9],             0x0200, 0x0400, 0x1004),   # retf     (C9 = CB)
], ids=["C0", "C1", "C8", "C9"])
def test_c0_c1_c8_c9_are_returns(code, ip, cs, sp):
    cpu = make_cpu(code)
    load(cpu, STACK, [0x00, 0x02, 0x00, 0x04])     # return IP 0200h, CS 0400h
    load(cpu, (cs << 4) + ip, [0xF4])              # hlt at the return address
    run_to_halt(cpu)
    assert (cpu.r.cs, cpu.r.ip, cpu.r.sp) == (cs, ip + 1, sp)


def test_f1_is_a_lock_prefix_alias():
    cpu = make_cpu([
        0xF1, 0x40,         # lock(F1) inc ax
        0xF1, 0xF1, 0x43,   # lock lock inc bx
    ])
    assert cpu.step() == S.EXIT_STEP
    assert (cpu.r.ax, cpu.r.ip, cpu.instructions) == (1, 0x102, 1)
    assert cpu.step() == S.EXIT_STEP
    assert (cpu.r.bx, cpu.r.ip, cpu.instructions) == (1, 0x105, 2)
    assert cpu.cycles == (2 + 2) + (2 + 2 + 2)     # 2 per prefix + INC 2


def test_setmo_d0_d1_slash_6():
    cpu = run_to_halt(make_cpu([
        0xD0, 0xF0,                 # setmo al        (D0 /6)
        0xD1, 0xF3,                 # setmo bx        (D1 /6)
        0xD0, 0x36, 0x10, 0x00,     # setmo byte [0010h]
        0xF4,                       # hlt
    ], ax=0x1200, bx=0x0000, flags=S.F_CF | S.F_OF | S.F_ZF))
    assert cpu.r.ax == 0x12FF and cpu.r.bx == 0xFFFF
    assert cpu.mem[0x30010] == 0xFF
    assert not cpu.r.cf and not cpu.r.of and not cpu.r.zf
    assert cpu.r.sf and cpu.r.pf


def test_setmoc_d2_slash_6_by_cl():
    cpu = run_to_halt(make_cpu([
        0xD2, 0xF0,         # setmoc al, cl    (CL = 0: no change)
        0xB1, 0x05,         # mov cl, 5
        0xD3, 0xF3,         # setmoc bx, cl
        0xF4,               # hlt
    ], ax=0x0012, bx=0x0034, cx=0))
    assert cpu.r.al == 0x12
    assert cpu.r.bx == 0xFFFF


def test_shift_counts_are_not_masked():
    cpu = make_cpu([
        0xD3, 0xE0,         # shl ax, cl     CL = 33: all bits out
    ], ax=0x1234, cx=33)
    cpu.step()
    assert cpu.r.ax == 0                           # a 80186+ masks to 1: 2468h
    assert not cpu.r.cf and cpu.r.zf
    assert cpu.cycles == 8 + 4 * 33                # 8 + 4 per bit on the 8088
    cpu = make_cpu([
        0xD3, 0xF8,         # sar ax, cl     CL = 20
    ], ax=0x8000, cx=20)
    cpu.step()
    assert cpu.r.ax == 0xFFFF and cpu.r.cf
    cpu = make_cpu([
        0xD2, 0xE8,         # shr al, cl     CL = 40
    ], ax=0x55FF, cx=40)
    cpu.step()
    assert cpu.r.ax == 0x5500


@pytest.mark.parametrize("code, regs, want", [
    # idiv bl: 100 / 7 = 14 r 2
    ([0xF6, 0xFB], dict(ax=100, bx=7), dict(al=14, ah=2)),
    # rep idiv bl: the REP prefix negates the quotient on the 8088
    ([0xF3, 0xF6, 0xFB], dict(ax=100, bx=7), dict(al=0xF2, ah=2)),
    # rep idiv bl with a negative dividend (-100 / 7 = -14 r -2): quotient +14
    ([0xF3, 0xF6, 0xFB], dict(ax=0xFF9C, bx=7), dict(al=14, ah=0xFE)),
    # rep idiv bx: 1000 / 7 = 142 r 6 -> -142
    ([0xF3, 0xF7, 0xFB], dict(ax=1000, dx=0, bx=7), dict(ax=0xFF72, dx=6)),
    # imul bl: 5 * 3 = 15
    ([0xF6, 0xEB], dict(ax=5, bx=3), dict(ax=15)),
    # rep imul bl: the product is negated
    ([0xF3, 0xF6, 0xEB], dict(ax=5, bx=3), dict(ax=0xFFF1)),
    # rep imul bx
    ([0xF3, 0xF7, 0xEB], dict(ax=5, bx=3), dict(ax=0xFFF1, dx=0xFFFF)),
], ids=["idiv8", "rep_idiv8", "rep_idiv8_neg", "rep_idiv16", "imul8", "rep_imul8", "rep_imul16"])
def test_rep_prefixed_idiv_and_imul(code, regs, want):
    cpu = make_cpu(code, **regs)
    assert cpu.step() == S.EXIT_STEP
    assert cpu.r.ip == 0x100 + len(code)
    for name, value in want.items():
        assert getattr(cpu.r, name) == value, name


# ---------------------------------------------------------------------------
# address wrap-around
# ---------------------------------------------------------------------------

def test_one_mib_wrap_for_data():
    cpu = make_cpu([
        0xA1, 0x0F, 0x00,   # mov ax, [000Fh]    DS = FFFFh: bytes FFFFFh, 00000h
        0xA0, 0x10, 0x00,   # mov al, [0010h]    FFFF:0010 = linear 0
        0xB9, 0xCD, 0xAB,   # mov cx, 0ABCDh
        0x89, 0x0E, 0x0F, 0x00,   # mov [000Fh], cx
        0xF4,               # hlt
    ], ds=0xFFFF)
    cpu.mem[0xFFFFF] = 0x34
    cpu.mem[0x00000] = 0x12
    cpu.step()
    assert cpu.r.ax == 0x1234
    cpu.step()
    assert cpu.r.al == 0x12
    run_to_halt(cpu)
    assert cpu.mem[0xFFFFF] == 0xCD and cpu.mem[0x00000] == 0xAB


def test_word_at_offset_ffff_wraps_within_the_segment():
    cpu = make_cpu([
        0xA1, 0xFF, 0xFF,   # mov ax, [0FFFFh]   bytes 3FFFFh and 30000h
        0xBB, 0x22, 0x11,   # mov bx, 1122h
        0x89, 0x1E, 0xFF, 0xFF,   # mov [0FFFFh], bx
        0xF4,               # hlt
    ])
    cpu.mem[0x3FFFF] = 0x78
    cpu.mem[0x30000] = 0x56
    cpu.mem[0x40000] = 0xEE                        # 3000:FFFF + 1 without the wrap
    run_to_halt(cpu)
    assert cpu.r.ax == 0x5678
    assert cpu.mem[0x3FFFF] == 0x22 and cpu.mem[0x30000] == 0x11
    assert cpu.mem[0x40000] == 0xEE


def test_stack_wraps_within_the_segment():
    cpu = run_to_halt(make_cpu([
        0x50,               # push ax     SP = 0001h -> FFFFh
        0xF4,               # hlt
    ], ax=0xA1B2, sp=0x0001))
    assert cpu.r.sp == 0xFFFF
    assert cpu.mem[0x2FFFF] == 0xB2 and cpu.mem[0x20000] == 0xA1


def test_instruction_fetch_wraps_ip_and_1_mib():
    cpu = make_cpu([0xB0], ip=0xFFFF)              # 1000:FFFF mov al, 42h
    load(cpu, 0x10000, [0x42, 0xF4])               # 1000:0000 (42h) ; hlt
    run_to_halt(cpu)
    assert cpu.r.al == 0x42 and cpu.r.ip == 0x0002
    cpu = make_cpu([])
    cpu.r.cs, cpu.r.ip = 0xFFFF, 0x0010            # linear 100000h = 00000h
    load(cpu, 0x00000, [0xB0, 0x99, 0xF4])         # mov al, 99h ; hlt
    run_to_halt(cpu)
    assert cpu.r.al == 0x99 and cpu.r.ip == 0x0013


def test_esc_reads_its_memory_operand():
    cpu = make_cpu([
        0xD9, 0x07,         # esc 0Fh, [bx]   (FLD-style, no coprocessor)
        0xF4,               # hlt
    ], bx=0x0010)
    cpu.mem[0x30010:0x30012] = [0x11, 0x22]
    assert cpu.step(record=True) == S.EXIT_STEP
    kinds = {(k, a) for k, a, _, _ in cpu.recorded()}
    assert (S.EFF_MEM_READ, 0x30010) in kinds
    assert not cpu.recorded_writes()
    assert cpu.r.ip == 0x102


# ---------------------------------------------------------------------------
# REP string resumption
# ---------------------------------------------------------------------------

STRING_PROGRAM = [
    0xBE, 0x00, 0x02,   # 0100 mov si, 200h
    0xBF, 0x00, 0x00,   # 0103 mov di, 0
    0xB9, 0xC8, 0x00,   # 0106 mov cx, 200
    0x2E, 0xF3, 0xA4,   # 0109 cs: rep movsb     CS:0200 -> ES:0000
    0x40,               # 010C inc ax
    0xF4,               # 010D hlt
]


def _string_cpu():
    cpu = make_cpu(STRING_PROGRAM, es=0x4000)
    load(cpu, 0x10200, bytes((i * 37 + 5) & 0xFF for i in range(200)))
    load(cpu, 0x30200, bytes(200))                 # DS:0200 differs from CS:0200
    return cpu


def _run_sliced(cpu, slice_cycles):
    mid_string = 0
    while True:
        reason = cpu.run(cpu.cycles + slice_cycles)
        if reason == S.EXIT_HALT:
            return mid_string
        assert reason == S.EXIT_BUDGET
        if cpu.r.ip == 0x109 and 0 < cpu.r.cx < 200:
            mid_string += 1                        # rewound to the first prefix
        else:
            assert cpu.r.ip in (0x103, 0x106, 0x109, 0x10C, 0x10D), hex(cpu.r.ip)


def test_rep_string_with_override_resumes_after_budget_exits():
    whole = run_to_halt(_string_cpu())
    assert whole.instructions == 6                 # 5 others + the whole REP MOVSB
    assert whole.mem[0x40000:0x400C8].tolist() == whole.mem[0x10200:0x102C8].tolist()
    for slice_cycles in (7, 37, 100):
        cpu = _string_cpu()
        interrupted = _run_sliced(cpu, slice_cycles)
        assert interrupted > 5
        assert np.array_equal(cpu.mem, whole.mem)
        assert np.array_equal(cpu.regs, whole.regs)
        # each budget exit inside the string is one more instruction boundary
        assert cpu.instructions == whole.instructions + interrupted


def test_budget_exits_inside_rep_string_do_not_change_emulated_time():
    # A budget exit is not a guest event: slicing must not add cycles
    # (the pacing and device deadlines must never change what the guest sees).
    whole = run_to_halt(_string_cpu())
    cpu = _string_cpu()
    interrupted = _run_sliced(cpu, 37)
    assert interrupted > 5
    assert cpu.cycles == whole.cycles, (
        f"{interrupted} budget exits inside REP MOVSB added "
        f"{cpu.cycles - whole.cycles} cycles")


def test_irq_after_a_budget_exit_inside_rep_string():
    # The machine's slices end at device deadlines, which is when IRQs are
    # raised: a slice ending inside a REP string followed by an interrupt is
    # the common case.  The handler's own REP string must cost its full
    # documented time, and the interrupt must return where the 8088 would
    # have returned had the slice not ended there: to the last prefix (F3),
    # so the CS: override is lost for the rest of the copy.
    cpu = _string_cpu()
    cpu.r.if_ = True
    set_vector(cpu, 8, 0x0500, 0x0000)
    load(cpu, 0x5000, [
        0x51,               # 0000 push cx
        0x57,               # 0001 push di
        0xB9, 0x04, 0x00,   # 0002 mov cx, 4
        0xBF, 0x00, 0x80,   # 0005 mov di, 8000h
        0xF3, 0xAA,         # 0008 rep stosb
        0x5F,               # 000A pop di
        0x59,               # 000B pop cx
        0xCF,               # 000C iret
    ])
    while not (cpu.r.ip == 0x109 and 0 < cpu.r.cx < 200):
        assert cpu.run(cpu.cycles + 37) == S.EXIT_BUDGET
    cpu.ctl[S.C_INTR] = 1
    assert cpu.run(BIG) == S.EXIT_IRQ
    cpu.ctl[S.C_INTR] = 0
    copied = 200 - cpu.r.cx
    cpu.interrupt(8)
    assert word(cpu, (cpu.r.ss << 4) + cpu.r.sp) == 0x10A     # the REP prefix
    for _ in range(4):
        assert cpu.step() == S.EXIT_STEP
    assert cpu.r.ip == 0x0008
    before = cpu.cycles
    assert cpu.step() == S.EXIT_STEP
    assert cpu.r.ip == 0x000A and cpu.r.cx == 0
    assert cpu.cycles - before == 2 + 9 + 4 * 10   # REP prefix + 9 + 10 per byte
    run_to_halt(cpu)
    assert cpu.r.cs == 0x1000 and cpu.r.cx == 0
    # bytes before the interrupt came from CS:0200, the rest from DS:0200 (zeros)
    assert cpu.mem[0x40000:0x40000 + copied].tolist() == cpu.mem[0x10200:0x10200 + copied].tolist()
    assert not cpu.mem[0x40000 + copied:0x400C8].any()


def test_interrupt_in_rep_movsb_returns_to_the_last_prefix():
    cpu = make_cpu([
        0xFB,               # 0100 sti
        0x26, 0xF3, 0xA4,   # 0101 es: rep movsb    ES:0000 -> ES:0100, CX = 10
        0xF4,               # 0104 hlt
    ], es=0x4000, si=0x0000, di=0x0100, cx=10)
    load(cpu, 0x40000, [0xE0 + i for i in range(10)])   # ES:0000 source
    load(cpu, 0x30000, [0xD0 + i for i in range(10)])   # DS:0000
    set_vector(cpu, 8, 0x0500, 0x0000)
    load(cpu, 0x5000, [0xCF])                            # iret
    cpu.ctl[S.C_INTR] = 1
    # STI's shadow lets one iteration run; then the pending INTR is seen
    assert cpu.run(BIG) == S.EXIT_IRQ
    assert cpu.r.cx == 9
    assert cpu.r.ip == 0x102                       # the REP prefix, not the ES:
    cpu.ctl[S.C_INTR] = 0
    cpu.interrupt(8)
    assert word(cpu, (0x2000 << 4) + cpu.r.sp) == 0x102
    run_to_halt(cpu)
    assert cpu.r.cx == 0
    # the first byte came from ES:, the rest (after the IRET) from DS: -- the
    # 8088 forgot the segment override
    assert cpu.mem[0x40100:0x4010A].tolist() == [0xE0] + [0xD0 + i for i in range(1, 10)]


# ---------------------------------------------------------------------------
# effect recording
# ---------------------------------------------------------------------------

def test_record_memory_writes_with_old_values():
    cpu = make_cpu([
        0x89, 0x07,         # mov [bx], ax
        0x8B, 0x0F,         # mov cx, [bx]
        0x90,               # nop
    ], ax=0xBEEF, bx=0x0010)
    cpu.mem[0x30010:0x30012] = [0x11, 0x22]
    assert cpu.step(record=True) == S.EXIT_STEP
    assert cpu.recorded() == [
        (S.EFF_MEM_WRITE, 0x30010, 0xEF, 0x11),
        (S.EFF_MEM_WRITE, 0x30011, 0xBE, 0x22),
    ]
    assert cpu.recorded_writes() == [0x30010, 0x30011]
    assert cpu.step(record=True) == S.EXIT_STEP
    assert cpu.recorded() == [
        (S.EFF_MEM_READ, 0x30010, 0xEF, 0),
        (S.EFF_MEM_READ, 0x30011, 0xBE, 0),
    ]
    assert not cpu.page_flags.any()                # recording switched off again
    assert cpu.ctl[S.C_RECORD] == 0
    assert cpu.step(record=True) == S.EXIT_STEP
    assert cpu.recorded() == []                    # instruction fetch is not an effect


def test_record_rep_movsb_in_order():
    cpu = make_cpu([
        0xF3, 0xA4,         # rep movsb   DS:0000 -> ES:0100, CX = 3
    ], cx=3, si=0, di=0x100)
    cpu.mem[0x30000:0x30003] = [7, 8, 9]
    cpu.mem[0x30100:0x30103] = [1, 2, 3]
    assert cpu.step(record=True) == S.EXIT_STEP
    assert cpu.recorded() == [
        (S.EFF_MEM_READ, 0x30000, 7, 0), (S.EFF_MEM_WRITE, 0x30100, 7, 1),
        (S.EFF_MEM_READ, 0x30001, 8, 0), (S.EFF_MEM_WRITE, 0x30101, 8, 2),
        (S.EFF_MEM_READ, 0x30002, 9, 0), (S.EFF_MEM_WRITE, 0x30102, 9, 3),
    ]


def test_record_port_io():
    cpu = make_cpu([
        0xB0, 0x5A,         # 0100 mov al, 5Ah
        0xE6, 0x42,         # 0102 out 42h, al        unclaimed
        0xBA, 0x00, 0x03,   # 0104 mov dx, 300h
        0xED,               # 0107 in ax, dx          unclaimed: FFFFh
        0xE4, 0x60,         # 0108 in al, 60h         Python port
        0xEF,               # 010A out dx, ax         unclaimed
        0xF4,               # 010B hlt
    ])
    cpu.port_kind[0x60] = 1
    cpu.step()
    cpu.step(record=True)
    assert cpu.recorded() == [(S.EFF_IO_WRITE, 0x42, 0x5A, 1)]
    cpu.step()
    cpu.step(record=True)
    assert cpu.recorded() == [(S.EFF_IO_READ, 0x300, 0xFFFF, 2)]
    assert cpu.step(record=True) == S.EXIT_IO_IN
    assert cpu.recorded() == []                    # not executed yet
    cpu.answer_in(0x42)
    assert cpu.step(record=True) == S.EXIT_STEP
    assert cpu.recorded() == [(S.EFF_IO_READ, 0x60, 0x42, 1)]
    cpu.step(record=True)
    assert cpu.recorded() == [(S.EFF_IO_WRITE, 0x300, 0xFF42, 2)]


# ---------------------------------------------------------------------------
# determinism and documented cycle counts
# ---------------------------------------------------------------------------

def loop_cycles(outer, inner):
    """Documented 8088 clocks of the standard loop, HLT included.

    Per inner iteration (JNZ taken, LOOP taken): mov ax,[si] 8+5+4;
    add ax,dx 3; xor ax,imm 4; mov [bx+si+2],ax 9+11+4; sub dl,[si+1] 9+9;
    mov [si+100h],dl 9+9; inc si 2; cmp si,imm 4; jnz 16; loop 17 = 123.
    Every 256th iteration: jnz not taken (4) + mov si,imm (4) = 8 less.
    Last iteration: loop not taken (5): 12 less.  Per outer pass: mov cx,
    mov si 8; dec bp 2; jnz 16 (4 on the last pass).  Start: 3 movs 12;
    HLT 2.
    """
    return 2 + outer * (14 + 123 * inner - 8 * (inner // 256))


def test_loop_cycle_formula_matches_the_documented_total():
    assert loop_cycles(40, 50000) == 245_938_162   # shared/bench/README.md


def _snapshot(cpu):
    return cpu.regs.copy(), cpu.mem.copy(), cpu.cycles, cpu.instructions


@pytest.mark.parametrize("outer, inner", [(2, 300), (1, 1), (3, 513)])
def test_standard_loop_counts(outer, inner):
    cpu = Cpu()
    bench.load_standard_loop(cpu, outer, inner)
    run_to_halt(cpu)
    assert cpu.instructions == bench.expected_instructions(outer, inner) + 1   # + HLT
    assert cpu.instructions == 3 + outer * (4 + 10 * inner + inner // 256) + 1
    assert cpu.cycles == loop_cycles(outer, inner)
    assert cpu.r.ip == 0x130 and cpu.r.bp == 0 and cpu.r.cx == 0


def test_standard_loop_documented_cycles_full_size():
    cpu = Cpu()
    bench.load_standard_loop(cpu, 40, 50000)
    run_to_halt(cpu, 300_000_000)
    assert cpu.instructions == 20_007_963 + 1
    assert cpu.cycles == 245_938_162


def test_standard_loop_is_deterministic_under_slicing():
    outer, inner = 2, 300
    whole = Cpu()
    bench.load_standard_loop(whole, outer, inner)
    run_to_halt(whole)
    ref = _snapshot(whole)
    assert ref[3] == 3 + outer * (4 + 10 * inner + inner // 256) + 1
    assert ref[2] == loop_cycles(outer, inner)

    for slice_cycles in (1, 13, 97, 1000):
        cpu = Cpu()
        bench.load_standard_loop(cpu, outer, inner)
        exits = 0
        while True:
            reason = cpu.run(cpu.cycles + slice_cycles)
            if reason == S.EXIT_HALT:
                break
            assert reason == S.EXIT_BUDGET
            exits += 1
        assert exits >= ref[2] // slice_cycles // 30
        got = _snapshot(cpu)
        assert np.array_equal(got[0], ref[0]), slice_cycles
        assert np.array_equal(got[1], ref[1]), slice_cycles
        assert got[2:] == ref[2:], slice_cycles

    cpu = Cpu()                                    # one instruction at a time
    bench.load_standard_loop(cpu, outer, inner)
    while cpu.step() == S.EXIT_STEP:
        pass
    assert cpu.ctl[S.C_EXIT] == S.EXIT_HALT
    got = _snapshot(cpu)
    assert np.array_equal(got[0], ref[0]) and np.array_equal(got[1], ref[1])
    assert got[2:] == ref[2:]
