"""The 8088 core's exits to Python and its interrupt interface.

Every program here is real 8088 machine code, hand-assembled; the assembly is
in the comment beside the bytes.  Layout used throughout: code at 1000:0100
(linear 10100h), stack 2000:1000, DS = ES = 3000h, interrupt handlers at
0500:xxxx (linear 5000h + xxxx).
"""

import numpy as np
import pytest

from pypc_core.cpu import state as S

from cpu_programs import BIG, load, make_cpu, set_vector

CODE = 0x10100


def stack_words(cpu, n):
    base = int(cpu.regs[S.SS]) << 4
    sp = int(cpu.regs[S.SP])
    return [int(cpu.mem[base + sp + 2 * i]) | int(cpu.mem[base + sp + 2 * i + 1]) << 8
            for i in range(n)]


# ---------------------------------------------------------------------------
# port I/O
# ---------------------------------------------------------------------------

def test_out_to_python_port_exits_after_executing():
    cpu = make_cpu([
        0xB0, 0x5A,         # 0100 mov al, 5Ah
        0xE6, 0x42,         # 0102 out 42h, al
        0xF4,               # 0104 hlt
    ])
    cpu.port_kind[0x42] = 1
    assert cpu.run(BIG) == S.EXIT_IO_OUT
    assert cpu.r.ip == 0x104                       # the OUT has executed
    assert cpu.ctl[S.C_EXIT_PORT] == 0x42
    assert cpu.ctl[S.C_EXIT_VALUE] == 0x5A
    assert cpu.ctl[S.C_EXIT_WIDTH] == 1
    assert cpu.instructions == 2
    assert cpu.cycles == 4 + 10                    # MOV r8,imm 4; OUT imm8,AL 10
    assert cpu.run(BIG) == S.EXIT_HALT
    assert cpu.instructions == 3


def test_word_out_exits_with_width_2():
    cpu = make_cpu([
        0xB8, 0x34, 0x12,   # 0100 mov ax, 1234h
        0xBA, 0x78, 0x03,   # 0103 mov dx, 378h
        0xEF,               # 0106 out dx, ax
        0xF4,               # 0107 hlt
    ])
    cpu.port_kind[0x378] = 1
    assert cpu.run(BIG) == S.EXIT_IO_OUT
    assert cpu.r.ip == 0x107
    assert (cpu.ctl[S.C_EXIT_PORT], cpu.ctl[S.C_EXIT_VALUE], cpu.ctl[S.C_EXIT_WIDTH]) == (0x378, 0x1234, 2)


def test_word_out_exits_when_only_the_high_port_is_claimed():
    # a word OUT is two byte cycles on the 8088: port and port+1
    cpu = make_cpu([
        0xB8, 0x34, 0x12,   # mov ax, 1234h
        0xBA, 0x78, 0x03,   # mov dx, 378h
        0xEF,               # out dx, ax
        0xF4,               # hlt
    ])
    cpu.port_kind[0x379] = 1
    assert cpu.run(BIG) == S.EXIT_IO_OUT
    assert (cpu.ctl[S.C_EXIT_PORT], cpu.ctl[S.C_EXIT_WIDTH]) == (0x378, 2)


def test_out_to_unclaimed_port_does_not_exit():
    cpu = make_cpu([
        0xB0, 0x5A,         # mov al, 5Ah
        0xE6, 0x42,         # out 42h, al
        0xBA, 0x78, 0x03,   # mov dx, 378h
        0xEF,               # out dx, ax
        0xF4,               # hlt
    ])
    assert cpu.run(BIG) == S.EXIT_HALT
    assert cpu.instructions == 5


def test_in_from_python_port_exits_before_executing_then_completes():
    cpu = make_cpu([
        0xE4, 0x60,         # 0100 in al, 60h
        0xF4,               # 0102 hlt
    ], ax=0x1234)
    cpu.port_kind[0x60] = 1
    assert cpu.run(BIG) == S.EXIT_IO_IN
    assert cpu.r.ip == 0x100                       # not executed yet
    assert cpu.r.ax == 0x1234
    assert cpu.ctl[S.C_EXIT_PORT] == 0x60
    assert cpu.ctl[S.C_EXIT_WIDTH] == 1
    assert cpu.instructions == 0 and cpu.cycles == 0
    cpu.answer_in(0xA5)
    assert cpu.run(BIG) == S.EXIT_HALT
    assert cpu.r.ax == 0x12A5                      # AL loaded, AH untouched
    assert cpu.r.ip == 0x103
    assert cpu.instructions == 2
    assert cpu.cycles == 10 + 2                    # IN AL,imm8 10; HLT 2


def test_in_with_segment_prefix_rewinds_to_the_prefix():
    cpu = make_cpu([
        0x2E, 0xE4, 0x60,   # 0100 cs: in al, 60h   (prefix is meaningless but legal)
        0xF4,               # 0103 hlt
    ])
    cpu.port_kind[0x60] = 1
    assert cpu.run(BIG) == S.EXIT_IO_IN
    assert cpu.r.ip == 0x100                       # back to the prefix, not 0101
    cpu.answer_in(0x3C)
    assert cpu.run(BIG) == S.EXIT_HALT
    assert cpu.r.al == 0x3C
    assert cpu.r.ip == 0x104
    assert cpu.instructions == 2


def test_answered_in_completes_before_anything_else():
    # While Python answers the IN, an IRQ may be raised and a breakpoint may
    # sit on the IN: the answered IN must still complete first, once.
    cpu = make_cpu([
        0x90,               # 0100 nop
        0xE4, 0x60,         # 0101 in al, 60h     <- breakpoint
        0x40,               # 0103 inc ax
        0xF4,               # 0104 hlt
    ], flags=S.F_IF)
    cpu.port_kind[0x60] = 1
    cpu.xflags[CODE + 1] |= S.XF_BREAKPOINT
    assert cpu.run(BIG) == S.EXIT_BREAKPOINT
    cpu.ctl[S.C_SKIP_BP] = 1
    assert cpu.run(BIG) == S.EXIT_IO_IN
    assert cpu.r.ip == 0x101
    cycles = cpu.cycles
    cpu.ctl[S.C_INTR] = 1
    cpu.answer_in(0x5A)
    assert cpu.run(cycles) == S.EXIT_BUDGET       # even with the budget used up
    assert cpu.r.al == 0x5A and cpu.r.ip == 0x103
    assert cpu.cycles == cycles + 10
    assert cpu.ctl[S.C_IO_READY] == 0
    assert cpu.run(BIG) == S.EXIT_IRQ              # the IRQ comes after the IN
    assert cpu.r.ip == 0x103 and cpu.r.ax == 0x005A


def test_word_in_from_python_port():
    cpu = make_cpu([
        0xBA, 0x00, 0x02,   # 0100 mov dx, 200h
        0xED,               # 0103 in ax, dx
        0xF4,               # 0104 hlt
    ])
    cpu.port_kind[0x200] = 1
    assert cpu.run(BIG) == S.EXIT_IO_IN
    assert cpu.r.ip == 0x103
    assert (cpu.ctl[S.C_EXIT_PORT], cpu.ctl[S.C_EXIT_WIDTH]) == (0x200, 2)
    cpu.answer_in(0xBEEF)
    assert cpu.run(BIG) == S.EXIT_HALT
    assert cpu.r.ax == 0xBEEF


def test_repeated_in_exits_every_time():
    cpu = make_cpu([
        0xB9, 0x03, 0x00,   # 0100 mov cx, 3
        0xE4, 0x60,         # 0103 l: in al, 60h
        0x00, 0xC4,         # 0105 add ah, al
        0xE2, 0xFA,         # 0107 loop l
        0xF4,               # 0109 hlt
    ])
    cpu.port_kind[0x60] = 1
    answers = [0x10, 0x20, 0x30]
    for v in answers:
        assert cpu.run(BIG) == S.EXIT_IO_IN
        assert cpu.r.ip == 0x103
        cpu.answer_in(v)
    assert cpu.run(BIG) == S.EXIT_HALT
    assert cpu.r.ah == 0x60


def test_unclaimed_ports_read_all_ones_without_exiting():
    cpu = make_cpu([
        0xE4, 0x61,         # in al, 61h
        0x88, 0xC3,         # mov bl, al
        0xBA, 0x00, 0x03,   # mov dx, 300h
        0xED,               # in ax, dx
        0xF4,               # hlt
    ])
    assert cpu.run(BIG) == S.EXIT_HALT
    assert cpu.r.bl == 0xFF
    assert cpu.r.ax == 0xFFFF


# ---------------------------------------------------------------------------
# breakpoints and firmware traps
# ---------------------------------------------------------------------------

def test_breakpoint_stops_before_the_instruction_and_skip_resumes_once():
    cpu = make_cpu([
        0xB9, 0x03, 0x00,   # 0100 mov cx, 3
        0x40,               # 0103 l: inc ax         <- breakpoint
        0xE2, 0xFD,         # 0104 loop l
        0xF4,               # 0106 hlt
    ])
    cpu.xflags[CODE + 3] |= S.XF_BREAKPOINT
    seen = []
    while True:
        reason = cpu.run(BIG)
        if reason == S.EXIT_HALT:
            break
        assert reason == S.EXIT_BREAKPOINT
        assert cpu.r.ip == 0x103
        seen.append(cpu.r.ax)
        # without the skip flag it stops again at once, executing nothing
        n = cpu.instructions
        assert cpu.run(BIG) == S.EXIT_BREAKPOINT
        assert cpu.instructions == n and cpu.r.ip == 0x103
        cpu.ctl[S.C_SKIP_BP] = 1
    assert seen == [0, 1, 2]                       # each pass stops once
    assert cpu.r.ax == 3
    assert cpu.ctl[S.C_SKIP_BP] == 0


def test_breakpoint_on_a_prefixed_instruction_stops_at_the_prefix():
    cpu = make_cpu([
        0x90,               # 0100 nop
        0x2E, 0xA0, 0x00, 0x00,   # 0101 mov al, cs:[0000]
        0xF4,               # 0105 hlt
    ])
    cpu.xflags[CODE + 1] |= S.XF_BREAKPOINT
    assert cpu.run(BIG) == S.EXIT_BREAKPOINT
    assert cpu.r.ip == 0x101 and cpu.instructions == 1


def test_firmware_trap_only_when_enabled():
    code = [
        0x40,               # 0100 inc ax     <- trap flag on this byte
        0xF4,               # 0101 hlt
    ]
    cpu = make_cpu(code)
    cpu.xflags[CODE] |= S.XF_TRAP
    assert cpu.ctl[S.C_TRAP_ENABLE] == 0
    assert cpu.run(BIG) == S.EXIT_HALT             # the byte executed normally
    assert cpu.r.ax == 1

    cpu = make_cpu(code)
    cpu.xflags[CODE] |= S.XF_TRAP
    cpu.ctl[S.C_TRAP_ENABLE] = 1
    assert cpu.run(BIG) == S.EXIT_TRAP
    assert cpu.ctl[S.C_EXIT_VALUE] == CODE         # linear address
    assert cpu.r.ip == 0x100 and cpu.r.ax == 0
    assert cpu.instructions == 0


# ---------------------------------------------------------------------------
# budget and cycle accounting
# ---------------------------------------------------------------------------

def test_budget_exit_with_exact_cycle_accounting():
    cpu = make_cpu([
        0xB8, 0x34, 0x12,   # 0100 mov ax, 1234h   4 cycles
        0x90,               # 0103 nop             3
        0x40,               # 0104 inc ax          2
        0xEB, 0xFE,         # 0105 jmp $           15
    ])
    # the budget is checked at instruction boundaries: the instruction that
    # crosses the deadline completes
    assert cpu.run(1) == S.EXIT_BUDGET
    assert (cpu.cycles, cpu.instructions, cpu.r.ip) == (4, 1, 0x103)
    assert cpu.ctl[S.C_EXIT] == S.EXIT_BUDGET
    assert cpu.run(5) == S.EXIT_BUDGET
    assert (cpu.cycles, cpu.instructions, cpu.r.ip) == (7, 2, 0x104)
    assert cpu.run(8) == S.EXIT_BUDGET
    assert (cpu.cycles, cpu.instructions, cpu.r.ip) == (9, 3, 0x105)
    assert cpu.r.ax == 0x1235
    assert cpu.run(9 + 15 * 10) == S.EXIT_BUDGET     # ten JMPs exactly
    assert (cpu.cycles, cpu.instructions, cpu.r.ip) == (159, 13, 0x105)
    assert cpu.run(160) == S.EXIT_BUDGET
    assert (cpu.cycles, cpu.instructions) == (174, 14)
    # a deadline already reached executes nothing
    assert cpu.run(100) == S.EXIT_BUDGET
    assert (cpu.cycles, cpu.instructions) == (174, 14)


def test_step_executes_exactly_one_instruction():
    cpu = make_cpu([
        0xB8, 0x34, 0x12,   # mov ax, 1234h
        0x90,               # nop
        0x40,               # inc ax
    ])
    assert cpu.step() == S.EXIT_STEP
    assert (cpu.r.ip, cpu.instructions, cpu.cycles) == (0x103, 1, 4)
    assert cpu.step() == S.EXIT_STEP
    assert (cpu.r.ip, cpu.instructions, cpu.cycles) == (0x104, 2, 7)
    assert cpu.ctl[S.C_STEP] == 0


def test_budget_ends_near_the_deadline_after_a_long_rep_string():
    # A REP string instruction yields when the budget ends; the check must
    # use the cycles of the current run, not those at run() entry.
    cpu = make_cpu([0x90] * 50 + [         # 0100 50 x nop  (150 cycles)
        0xF3, 0xAA,                         # 0132 rep stosb (CX = 1000)
        0xF4,                               # 0134 hlt
    ], cx=1000)
    assert cpu.run(200) == S.EXIT_BUDGET
    assert cpu.r.ip == 0x132                # rewound to resume the string
    # one REP STOSB iteration is 10 cycles: the overshoot must be small
    assert cpu.cycles - 200 < 20, f"ran to cycle {cpu.cycles} for a deadline of 200"


# ---------------------------------------------------------------------------
# HLT and interrupts
# ---------------------------------------------------------------------------

def test_hlt_exits_then_idles_to_the_deadline():
    cpu = make_cpu([
        0xF4,               # 0100 hlt
        0x40,               # 0101 inc ax
    ])
    assert cpu.run(1000) == S.EXIT_HALT
    assert cpu.r.ip == 0x101 and cpu.cycles == 2
    assert cpu.ctl[S.C_HALTED] == 1
    assert cpu.run(5000) == S.EXIT_BUDGET          # nothing pending: idle
    assert cpu.cycles == 5000
    assert cpu.r.ip == 0x101 and cpu.r.ax == 0
    assert cpu.ctl[S.C_HALTED] == 1
    # INTR with IF=0 does not wake it either
    cpu.ctl[S.C_INTR] = 1
    assert cpu.run(6000) == S.EXIT_BUDGET
    assert cpu.cycles == 6000 and cpu.r.ax == 0


def test_intr_wakes_hlt_and_returns_after_it():
    cpu = make_cpu([
        0xF4,               # 0100 hlt
        0x40,               # 0101 inc ax
        0xF4,               # 0102 hlt
    ], flags=S.F_IF)
    set_vector(cpu, 8, 0x0500, 0x0000)
    load(cpu, 0x5000, [0xCF])                      # iret
    assert cpu.run(1000) == S.EXIT_HALT
    cpu.ctl[S.C_INTR] = 1
    assert cpu.run(2000) == S.EXIT_IRQ
    assert cpu.ctl[S.C_HALTED] == 1
    cpu.ctl[S.C_INTR] = 0
    cpu.interrupt(8)
    assert cpu.ctl[S.C_HALTED] == 0
    assert stack_words(cpu, 2) == [0x101, 0x1000]  # returns after the HLT
    assert cpu.run(3000) == S.EXIT_HALT
    assert cpu.r.ax == 1 and cpu.r.ip == 0x103


def test_intr_with_if_set_exits_at_an_instruction_boundary():
    cpu = make_cpu([
        0x90,               # 0100 nop
        0x90,               # 0101 nop
        0xF4,               # 0102 hlt
    ], flags=S.F_IF)
    cpu.ctl[S.C_INTR] = 1
    assert cpu.run(BIG) == S.EXIT_IRQ
    assert cpu.r.ip == 0x100 and cpu.instructions == 0 and cpu.cycles == 0
    # the core does not acknowledge by itself: it exits again
    assert cpu.run(BIG) == S.EXIT_IRQ


def test_intr_with_if_clear_is_ignored():
    cpu = make_cpu([
        0x90,               # nop
        0x90,               # nop
        0xF4,               # hlt
    ])
    cpu.ctl[S.C_INTR] = 1
    assert cpu.run(BIG) == S.EXIT_HALT
    assert cpu.instructions == 3


def test_interrupt_pushes_flags_cs_ip_and_loads_the_vector():
    cpu = make_cpu([0x90], flags=S.F_IF | S.F_TF | S.F_CF | S.F_ZF)
    cpu.r.ip = 0x1234
    set_vector(cpu, 0x08, 0x0500, 0x0010)
    set_vector(cpu, 0x09, 0x0600, 0x0020)          # neighbour: must not be used
    flags_before = cpu.r.flags
    n = cpu.instructions
    cpu.interrupt(8)
    assert (cpu.r.cs, cpu.r.ip) == (0x0500, 0x0010)
    assert cpu.r.sp == 0x1000 - 6
    assert stack_words(cpu, 3) == [0x1234, 0x1000, flags_before]
    assert not cpu.r.if_ and not cpu.r.tf
    assert cpu.r.cf and cpu.r.zf                   # other flags kept
    assert cpu.instructions == n + 1
    assert cpu.cycles > 0


def test_sti_inhibits_interrupts_for_one_instruction():
    cpu = make_cpu([
        0xFB,               # 0100 sti
        0x90,               # 0101 nop        (runs: STI shadow)
        0x90,               # 0102 nop
        0xF4,               # 0103 hlt
    ])
    cpu.ctl[S.C_INTR] = 1
    assert cpu.run(BIG) == S.EXIT_IRQ
    assert cpu.r.ip == 0x102
    assert cpu.instructions == 2


@pytest.mark.parametrize("load_ss", [
    [0x8E, 0xD0],       # mov ss, ax
    [0x17],             # pop ss
], ids=["mov_ss", "pop_ss"])
def test_stack_segment_load_inhibits_interrupts_for_one_instruction(load_ss):
    code = [0xFB] + load_ss + [   # sti ; <load ss>
        0xBC, 0x00, 0x08,         # mov sp, 800h   (runs: SS shadow)
        0x40,                     # inc ax
        0xF4,                     # hlt
    ]
    cpu = make_cpu(code, ax=0x2100)
    cpu.mem[(0x2000 << 4) + 0x1000:(0x2000 << 4) + 0x1002] = [0x00, 0x21]   # for POP SS
    cpu.ctl[S.C_INTR] = 1
    assert cpu.run(BIG) == S.EXIT_IRQ
    assert cpu.r.ss == 0x2100 and cpu.r.sp == 0x800
    assert cpu.r.ip == 0x100 + len(code) - 2       # at INC AX
    assert cpu.instructions == 3


def test_mov_ss_shadow_survives_the_end_of_a_run():
    # The machine runs the core in slices (device deadlines).  A slice that
    # ends right after MOV SS must not let an interrupt in before MOV SP.
    cpu = make_cpu([
        0x8E, 0xD0,         # 0100 mov ss, ax
        0xBC, 0x00, 0x08,   # 0102 mov sp, 800h
        0x40,               # 0105 inc ax
        0xF4,               # 0106 hlt
    ], flags=S.F_IF, ax=0x2100)
    assert cpu.run(1) == S.EXIT_BUDGET             # slice ends after MOV SS
    assert cpu.r.ip == 0x102
    cpu.ctl[S.C_INTR] = 1                          # the PIC raised INTR meanwhile
    assert cpu.run(BIG) == S.EXIT_IRQ
    assert cpu.r.ip == 0x105, "interrupt taken between MOV SS and MOV SP"


def test_nmi_is_taken_inside_the_jit_even_with_if_clear():
    cpu = make_cpu([
        0x90,               # 0100 nop
        0xF4,               # 0101 hlt
    ])
    set_vector(cpu, 2, 0x0500, 0x0000)
    load(cpu, 0x5000, [
        0xB8, 0x22, 0x22,   # 0500:0000 mov ax, 2222h
        0xF4,               # 0500:0003 hlt
    ])
    cpu.ctl[S.C_NMI] = 1
    assert cpu.run(BIG) == S.EXIT_HALT
    assert cpu.r.ax == 0x2222 and cpu.r.cs == 0x0500 and cpu.r.ip == 0x0004
    assert cpu.ctl[S.C_NMI] == 0
    assert cpu.r.sp == 0x1000 - 6
    assert stack_words(cpu, 2) == [0x100, 0x1000]


def test_nmi_wakes_a_halted_cpu():
    cpu = make_cpu([0xF4, 0xF4])        # hlt ; hlt
    set_vector(cpu, 2, 0x0500, 0x0000)
    load(cpu, 0x5000, [0x40, 0xCF])     # inc ax ; iret
    assert cpu.run(BIG) == S.EXIT_HALT
    cpu.ctl[S.C_NMI] = 1
    assert cpu.run(BIG) == S.EXIT_HALT  # handler ran, IRET, second HLT
    assert cpu.r.ax == 1 and cpu.r.ip == 0x102 and cpu.r.cs == 0x1000


def test_single_step_trap_after_each_instruction():
    cpu = make_cpu([
        0x90,               # 0100 nop
        0x40,               # 0101 inc ax
        0xB3, 0x07,         # 0102 mov bl, 7
        0xF4,               # 0104 hlt     <- breakpoint (stop here)
    ], flags=S.F_TF, di=0x0000)
    cpu.xflags[CODE + 4] |= S.XF_BREAKPOINT
    set_vector(cpu, 1, 0x0500, 0x0000)
    load(cpu, 0x5000, [
        0x55,               # push bp
        0x89, 0xE5,         # mov bp, sp
        0x50,               # push ax
        0x8B, 0x46, 0x02,   # mov ax, [bp+2]     ; the pushed IP
        0xAB,               # stosw              ; log it at ES:DI
        0x8B, 0x46, 0x06,   # mov ax, [bp+6]     ; the pushed FLAGS
        0xAB,               # stosw
        0x58,               # pop ax
        0x5D,               # pop bp
        0xCF,               # iret
    ])
    assert cpu.run(BIG) == S.EXIT_BREAKPOINT
    assert cpu.r.ip == 0x104 and cpu.r.ax == 1 and cpu.r.bl == 7
    log = cpu.mem[0x30000:0x30000 + cpu.r.di].view(np.uint16).tolist()
    ips, flags = log[0::2], log[1::2]
    assert ips == [0x101, 0x102, 0x104]
    assert all(f & S.F_TF for f in flags)
    assert cpu.r.tf                                # restored by IRET


def test_divide_error_pushes_the_address_after_the_div():
    cpu = make_cpu([
        0xB8, 0x64, 0x00,   # 0100 mov ax, 100
        0xB3, 0x00,         # 0103 mov bl, 0
        0xF6, 0xF3,         # 0105 div bl
        0xF4,               # 0107 hlt
    ], flags=S.F_IF)
    set_vector(cpu, 0, 0x0500, 0x0000)
    load(cpu, 0x5000, [0xF4])                      # hlt
    assert cpu.run(BIG) == S.EXIT_HALT
    assert (cpu.r.cs, cpu.r.ip) == (0x0500, 0x0001)
    assert stack_words(cpu, 2) == [0x107, 0x1000]  # 8088: after the DIV
    assert not cpu.r.if_


@pytest.mark.parametrize("code, regs", [
    # mov ax,1000h ; mov bl,2 ; div bl   (quotient 800h overflows AL)
    ([0xB8, 0x00, 0x10, 0xB3, 0x02, 0xF6, 0xF3], {}),
    # idiv bx with BX = 0                  (F7 /7, rm=BX)
    ([0x90, 0x90, 0x90, 0x90, 0x90, 0xF7, 0xFB], {"bx": 0}),
    # div word [bx] with [bx] = 0, via a DS: prefix: ds: div word [bx]
    ([0x90, 0x90, 0x90, 0x90, 0x3E, 0xF7, 0x37], {"bx": 0x40}),
], ids=["div8_overflow", "idiv16_by_zero", "prefixed_div16_mem"])
def test_divide_error_variants(code, regs):
    cpu = make_cpu(code + [0xF4], **regs)
    set_vector(cpu, 0, 0x0500, 0x0000)
    load(cpu, 0x5000, [0xF4])
    assert cpu.run(BIG) == S.EXIT_HALT
    assert cpu.r.cs == 0x0500
    assert stack_words(cpu, 2) == [0x100 + len(code), 0x1000]


# ---------------------------------------------------------------------------
# memory watches and read-only pages
# ---------------------------------------------------------------------------

def test_write_watch_exits_after_the_writing_instruction():
    cpu = make_cpu([
        0xB8, 0xCD, 0xAB,   # 0100 mov ax, 0ABCDh
        0xA2, 0x12, 0x00,   # 0103 mov [0012h], al   same page, unwatched byte
        0xA3, 0x10, 0x00,   # 0106 mov [0010h], ax   high byte watched
        0x40,               # 0109 inc ax
        0xF4,               # 010A hlt
    ])
    cpu.mem[0x30011] = 0x77
    cpu.page_flags[0x30] |= S.PG_WATCH_W
    cpu.xflags[0x30011] |= S.XF_WATCH_W
    assert cpu.run(BIG) == S.EXIT_WATCH
    assert cpu.r.ip == 0x109                       # the instruction completed
    assert cpu.mem[0x30010] == 0xCD and cpu.mem[0x30011] == 0xAB
    assert cpu.ctl[S.C_WATCH_HIT] == 0x30011
    assert cpu.ctl[S.C_WATCH_KIND] == 2
    assert cpu.ctl[S.C_WATCH_VALUE] == 0xAB
    assert cpu.ctl[S.C_WATCH_OLD] == 0x77
    assert cpu.ctl[S.C_WATCH_IP] == 0x106
    assert cpu.ctl[S.C_WATCH_CS] == 0x1000
    assert cpu.instructions == 3
    cpu.ctl[S.C_WATCH_KIND] = 0
    assert cpu.run(BIG) == S.EXIT_HALT
    assert cpu.r.ax == 0xABCE


def test_read_watch():
    cpu = make_cpu([
        0x90,               # 0100 nop
        0x2E, 0xA1, 0x10, 0x00,   # 0101 mov ax, cs:[0010h]  (unwatched segment)
        0xA1, 0x10, 0x00,   # 0105 mov ax, [0010h]
        0xF4,               # 0108 hlt
    ])
    cpu.mem[0x30010:0x30012] = [0x34, 0x12]
    cpu.page_flags[0x30] |= S.PG_WATCH_R
    cpu.xflags[0x30010] |= S.XF_WATCH_R
    assert cpu.run(BIG) == S.EXIT_WATCH
    assert cpu.r.ip == 0x108 and cpu.r.ax == 0x1234
    assert cpu.ctl[S.C_WATCH_HIT] == 0x30010
    assert cpu.ctl[S.C_WATCH_KIND] == 1
    assert cpu.ctl[S.C_WATCH_VALUE] == 0x34
    assert (cpu.ctl[S.C_WATCH_CS], cpu.ctl[S.C_WATCH_IP]) == (0x1000, 0x105)
    cpu.ctl[S.C_WATCH_KIND] = 0
    assert cpu.run(BIG) == S.EXIT_HALT


def test_write_watch_inside_rep_movsb_stops_and_resumes():
    cpu = make_cpu([
        0xF3, 0xA4,         # 0100 rep movsb   DS:0000 -> ES:0100, CX = 8
        0xF4,               # 0102 hlt
    ], cx=8, si=0x0000, di=0x0100)
    cpu.mem[0x30000:0x30008] = np.arange(1, 9, dtype=np.uint8)
    cpu.page_flags[0x30] |= S.PG_WATCH_W
    cpu.xflags[0x30103] |= S.XF_WATCH_W
    assert cpu.run(BIG) == S.EXIT_WATCH
    assert cpu.ctl[S.C_WATCH_HIT] == 0x30103 and cpu.ctl[S.C_WATCH_VALUE] == 4
    assert cpu.r.ip == 0x100 and cpu.r.cx == 4     # four bytes moved, resumable
    cpu.ctl[S.C_WATCH_KIND] = 0
    assert cpu.run(BIG) == S.EXIT_HALT
    assert cpu.r.cx == 0
    assert cpu.mem[0x30100:0x30108].tolist() == list(range(1, 9))


def test_writes_to_a_readonly_page_are_ignored():
    cpu = make_cpu([
        0xC6, 0x06, 0x10, 0x00, 0x99,   # mov byte [0010h], 99h
        0xB8, 0xAA, 0xBB,               # mov ax, 0BBAAh
        0xA3, 0xFF, 0x0F,               # mov [0FFFh], ax   straddles into page 31h (RAM)
        0xA1, 0x10, 0x00,               # mov ax, [0010h]   reads still work
        0xF4,                           # hlt
    ])
    cpu.mem[0x30010] = 0x11
    cpu.mem[0x30FFF] = 0x22
    cpu.page_flags[0x30] |= S.PG_READONLY
    assert cpu.run(BIG) == S.EXIT_HALT
    assert cpu.mem[0x30010] == 0x11
    assert cpu.mem[0x30FFF] == 0x22
    assert cpu.mem[0x31000] == 0xBB                # the RAM half was written
    assert cpu.r.ax == 0x0011
