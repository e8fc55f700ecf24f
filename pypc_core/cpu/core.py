"""The numba-compiled Intel 8088 core.

``run()`` executes instructions until its cycle budget ends or something needs
Python (port I/O to a Python device, a breakpoint, a firmware trap, an
interrupt acknowledge, a memory watch, HLT).  All state is in arrays passed as
arguments (see ``state.py``), so the functions are cacheable and a snapshot is
a copy of the arrays.

Structure (see ARCHITECTURE.md section 5): the loop in ``run`` handles the
instruction boundary (interrupts, breakpoints, traps, budget) and the hottest
opcode families inline; colder families live in their own functions so numba
compiles many small functions instead of one giant one.  Every function is
compiled with ``_nrt=False``: numba's reference counting would otherwise be
emitted around every array argument inside the loop and cost a factor of two
or more.

A call to an out-of-line family is priced by two things numba does: it
passes an array as all its fields (seven arrays were some 50 words pushed at
every call), and the callee zeroes the stack slot of each of its variables
on entry (a family of many opcodes paid for about a hundred of them on every
call).  So ``run`` hands the families ctl's address alone (they rebuild the
arrays from the addresses ``run`` leaves in ctl, ``state.C_A_*``), and the
opcodes DOS code runs out of line all the time are split into small
families by the variables they need (``op_segs``, ``op_misc_regs``,
``op_misc_common``, ``op_int``, ``op_io``), all reached through one call
site in ``run`` (``op_out_of_line``): 15-23 ns for a PUSH DS, a CBW, an
INT n or IRET against 29-80 before (docs/architecture-notes.md).

Argument conventions:
    regs  uint16[16]  registers (state.AX ... state.FLAGS)
    r8    uint8[32]   byte view of regs (AL=0, AH=1, CL=2, ...)
    mem   uint8[1Mi]  physical memory
    pf    int64[1Ki]  page table: PG_* flags per 4 KiB page, then the alias
                      rings and memory handlers (state.PT_*)
    xf    uint8[1Mi]  per-byte execution/watch flags (XF_*)
    ctl   int64[64]   counters, interrupt lines, exit mailbox (C_*)
    eff   int64[N,4]  effect records (EFF_*), used while C_RECORD is set
    pk    uint8[64Ki] port kinds (PORT_*): unclaimed, Python, or answered in
                      the JIT from ``pio``
    pio   int64[PIO_SIZE] fast ports: pio[port] is the value of a
                      PORT_VALUE port or the index of the port's parameter
                      block (raster, counter, stamp, one-shot, handler) in
                      the pool pio[PIO_POOL:]
"""

import numpy as np
from numba import njit

from .cache_key import invalidate_if_stale
from .state import (
    AX, CX, DX, BX, SP, BP, SI, DI, ES, CS, SS, DS, IP, FLAGS,
    F_CF, F_PF, F_AF, F_ZF, F_SF, F_TF, F_IF, F_DF, F_OF,
    C_CYCLES, C_INSTRUCTIONS, C_DEADLINE, C_EXIT, C_EXIT_PORT, C_EXIT_VALUE,
    C_EXIT_WIDTH, C_IO_READY, C_IO_VALUE, C_INTR, C_NMI, C_HALTED, C_HLT_WAITS, C_SKIP_BP,
    C_STEP, C_RECORD, C_EFFECTS, C_WATCH_HIT, C_WATCH_KIND, C_WATCH_VALUE,
    C_WATCH_OLD, C_TRAP_ENABLE, C_WATCH_IP, C_WATCH_CS, C_INHIBIT,
    C_REP_RESUME, C_NOW, C_TRACE, C_TRACE_N, C_SKIP_INT, C_INT_MASK, C_IOW_N, C_IOW,
    TR_CYCLES, TR_CSIP, TR_BYTES, TR_REGS, TR_EFFECT, TR_KIND, TRK_INSTRUCTION, TRK_HLT,
    EXIT_INT_BREAK,
    EXIT_BUDGET, EXIT_IO_IN, EXIT_IO_OUT, EXIT_BREAKPOINT, EXIT_TRAP, EXIT_STEP,
    EXIT_HALT, EXIT_WATCH, EXIT_IRQ, EXIT_FAULT,
    PG_READONLY, PG_WATCH_R,
    XF_BREAKPOINT, XF_TRAP, XF_WATCH_R, XF_WATCH_W, XF_BLOCK, C_BLOCK_INSNS,
    EFF_MEM_READ, EFF_MEM_WRITE, EFF_IO_READ, EFF_IO_WRITE,
)

# generic fast paths: memory handlers and aliases, ports answered in the core
from .state import (
    PG_ALIAS, PG_HANDLER, PG_CLOCKED, PT_TWIN, PT_FN, PT_CTX, HANDLER_READ, HANDLER_WRITE,
    PG_JOURNAL, PT_JLOG, PT_JENTRY, JL_COUNT, JL_MASK, JL_VIEW, JL_HEADER, JE_WORDS,
    JE_OFFSET,
    PORT_NONE, PORT_PY, PORT_VALUE, PORT_RASTER, PORT_COUNTER, PORT_STAMP,
    PORT_ONESHOT, PORT_CALL, PORT_TIMER, PIO_POOL, PIO_SIZE,
    R_EPOCH, R_LINE, R_HDISP, R_FRAME, R_VDISP, R_VS0, R_VS1, R_CONST, R_BLANK,
    R_VSYNC, R_NUM, R_DEN,
    T_KIND, T_START, T_CE, T_OUT, T_RELOAD, T_LIMIT, T_ACCESS, T_READ_MSB,
    T_LATCHED, T_LATCH, T_READS, T_DIV,
    O_CONST, O_COUNT, O_FIRES, O_LAST, O_FIRST, ONESHOT_WORDS_EACH, K_FN, K_CTX,
)
from .callptr import (call_handler, call_region, load_word, store_u8, store_word, u8_at,
                      i64_at, state_views)
from .state import C_A_EFF, C_A_MEM, C_A_PF, C_A_PIO, C_A_PK, C_A_REGS, C_A_XF, C_N_EFF
from .opcodes import PREFIXES

invalidate_if_stale()      # before anything here is compiled (see cache_key.py)

JIT = dict(cache=True, nogil=True, _nrt=False, error_model="numpy")
# Small helpers are inlined at numba-IR level: numba links separately
# compiled functions without LLVM inlining, and a call passing seven arrays
# costs more than the work it does.
INLINE = dict(JIT, inline="always")

M20 = 0xFFFFF
ARITH = F_CF | F_PF | F_AF | F_ZF | F_SF | F_OF
PG_RECORD = 0x08          # set on every page while effects are recorded
PG_SLOW_READ = PG_WATCH_R | PG_RECORD | PG_HANDLER

# Parity flag value (0 or F_PF) for each byte: a small constant table.
PARITY = np.array([F_PF if bin(i).count("1") % 2 == 0 else 0 for i in range(256)],
                  dtype=np.int64)

# What the boundary asks of an opcode byte, in one load instead of chains
# of compares: bit 0, is it a prefix (segment override, LOCK, REP)?  Bit 1,
# is it one of run's ModR/M data family (00-3F ALU r/m,reg and reg,r/m;
# 80-83 ALU r/m,imm; 84-85 TEST; 88-8B MOV)?  257 entries: OP_STUCK is an
# opcode too.  (Standard loop, against compare chains: 1.05x for the prefix
# test alone, 1.09x with a table for each, 1.16x with the one table.)
OPC_PREFIX = 1
OPC_MODRM_DATA = 2
OP_CLASS = np.array([(OPC_PREFIX if op in PREFIXES else 0)
                     | (OPC_MODRM_DATA if (op < 0x40 and (op & 7) < 4)
                        or (0x80 <= op <= 0x8B and (op < 0x86 or op >= 0x88)) else 0)
                     for op in range(0x100 + 1)], dtype=np.uint8)

# Status codes returned by the opcode-family functions.
ST_OK = 0
ST_IO_IN = 1      # needs a value from Python; instruction not executed
ST_IO_OUT = 2     # executed an OUT to a Python port; exit after bookkeeping
ST_HALT = 3       # executed HLT
ST_INHIBIT = 4    # executed; interrupts are held off for one instruction
# statuses from ST_FAULT up, like ST_IO_IN, mean "not executed" (run() relies on it)
ST_FAULT = 5      # an opcode this core does not decode (a bug): not executed
ST_INT_BREAK = 6  # a software INT the debugger watches: not executed
ST_STUCK = 7      # a whole segment of prefixes (see MAX_PREFIXES): not executed
OP_STUCK = 0x100  # the pseudo-opcode run() hands op_misc for that
# A code segment made only of prefixes would keep the prefix loop going for
# ever (the 8088 takes no interrupt between a prefix and its instruction, so
# it really would spin).  After one full lap of the segment the core lets
# the rest of the budget pass with IP unchanged: time passes, nothing runs.
MAX_PREFIXES = 0x10000
EXIT_REGION = 100    # run() stopped where a translated region is entered (run_translated's)
EXIT_SAMPLE = 101    # run_sliced: a sampling slice ended (the translator's)
EXIT_LOOK = 1 << 16  # run_sliced: or-ed into its exit when blk[M20 + 4] (look) is set


# ---------------------------------------------------------------------------
# memory access
# ---------------------------------------------------------------------------

@njit(**JIT)
def _record(ctl, eff, kind, a, v, extra):
    # a ring: the latest effects win (Python knows how many were lost)
    n = ctl[C_EFFECTS]
    row = n % eff.shape[0]
    eff[row, 0] = kind
    eff[row, 1] = a
    eff[row, 2] = v
    eff[row, 3] = extra
    ctl[C_EFFECTS] = n + 1


@njit(**JIT)
def _watch_hit(regs, ctl, a, kind, v, old):
    if ctl[C_WATCH_KIND] == 0:
        ctl[C_WATCH_KIND] = kind
        ctl[C_WATCH_HIT] = a
        ctl[C_WATCH_VALUE] = v
        ctl[C_WATCH_OLD] = old


@njit(**JIT)
def _rb_slow(regs, mem, pf, xf, ctl, eff, a):
    page = a >> 12
    if pf[page] & PG_HANDLER:
        # a device's window: its handler answers (see callptr.py)
        v = call_handler(pf[PT_FN + page], pf[PT_CTX + page], np.int64(a),
                         np.int64(0), np.int64(HANDLER_READ)) & 0xFF
    else:
        v = np.int64(mem[a])
    if pf[page] & PG_RECORD:
        _record(ctl, eff, EFF_MEM_READ, a, v, 0)
    if xf[a] & XF_WATCH_R:
        _watch_hit(regs, ctl, a, 1, v, v)
    return v


@njit(**INLINE)
def rb(regs, mem, pf, xf, ctl, eff, a):
    """Data read of the byte at linear address ``a`` (already 20-bit)."""
    if pf[a >> 12] & PG_SLOW_READ:
        return _rb_slow(regs, mem, pf, xf, ctl, eff, a)
    return np.int64(mem[a])


@njit(**INLINE)
def _journal(pf, page, a, old, new, cycle):
    # one entry into the page's write journal, a ring (see state.py: JL_*,
    # JE_*), and the new byte into the log's view; inlined into _wb_slow (a
    # call of its own cost more than the append: the guest that rewrites
    # the screen pays this for every byte it changes)
    page &= 0xFF                # (known non-negative: no wraparound code for the index)
    log = pf[PT_JLOG + page]
    n = load_word(log + 8 * JL_COUNT)
    w = pf[PT_JENTRY + page] + ((a & 0xFFF) << JE_OFFSET) + (old << 8) + new
    e = log + 8 * (JL_HEADER + JE_WORDS * (n & load_word(log + 8 * JL_MASK)))
    store_word(e, w)
    store_word(e + 8, cycle)
    store_word(log + 8 * JL_COUNT, n + 1)
    store_u8(load_word(log + 8 * JL_VIEW) + ((w >> JE_OFFSET) & 0xFFFF), new)


@njit(**JIT)
def _wb_slow(regs, mem, pf, xf, ctl, eff, a, v):
    page = a >> 12
    p = pf[page]
    old = np.int64(mem[a])
    if p & PG_HANDLER:
        op = np.int64(HANDLER_WRITE)
        if p & PG_CLOCKED:
            op |= ctl[C_NOW] << 1      # a journal: the write's cycle
        call_handler(pf[PT_FN + page], pf[PT_CTX + page], np.int64(a),
                     np.int64(v & 0xFF), op)
    elif not p & PG_READONLY:
        mem[a] = v
        if p & PG_ALIAS:
            # every copy in the page's alias ring gets the byte
            off = a & 0xFFF
            q = pf[PT_TWIN + page]
            for _ in range(256):
                if q == page:
                    break
                mem[(q << 12) | off] = v
                q = pf[PT_TWIN + q]
        if p & PG_JOURNAL and old != v & 0xFF:
            _journal(pf, page, a, old, v & 0xFF, ctl[C_NOW])
    if p & PG_RECORD:
        _record(ctl, eff, EFF_MEM_WRITE, a, v & 0xFF, old)
    if xf[a] & XF_WATCH_W:
        _watch_hit(regs, ctl, a, 2, v & 0xFF, old)


@njit(**INLINE)
def wb(regs, mem, pf, xf, ctl, eff, a, v):
    """Data write of a byte at linear address ``a`` (already 20-bit)."""
    if pf[a >> 12] == 0:
        mem[a] = v
    else:
        _wb_slow(regs, mem, pf, xf, ctl, eff, a, v)


@njit(**INLINE)
def rw(regs, mem, pf, xf, ctl, eff, sb, off):
    """Word read at segment base ``sb`` + offset ``off``: the second byte
    wraps inside the segment (offset FFFFh -> 0000h) and at 1 MiB."""
    lo = rb(regs, mem, pf, xf, ctl, eff, (sb + off) & M20)
    hi = rb(regs, mem, pf, xf, ctl, eff, (sb + ((off + 1) & 0xFFFF)) & M20)
    return lo | (hi << 8)


@njit(**INLINE)
def ww(regs, mem, pf, xf, ctl, eff, sb, off, v):
    wb(regs, mem, pf, xf, ctl, eff, (sb + off) & M20, v & 0xFF)
    wb(regs, mem, pf, xf, ctl, eff, (sb + ((off + 1) & 0xFFFF)) & M20, (v >> 8) & 0xFF)


@njit(**INLINE)
def push(regs, mem, pf, xf, ctl, eff, v):
    sp = (np.int64(regs[SP]) - 2) & 0xFFFF
    regs[SP] = sp
    ww(regs, mem, pf, xf, ctl, eff, np.int64(regs[SS]) << 4, sp, v)


@njit(**INLINE)
def pop(regs, mem, pf, xf, ctl, eff):
    sp = np.int64(regs[SP])
    v = rw(regs, mem, pf, xf, ctl, eff, np.int64(regs[SS]) << 4, sp)
    regs[SP] = (sp + 2) & 0xFFFF
    return v


# ---------------------------------------------------------------------------
# flag arithmetic (pure scalar helpers)
# ---------------------------------------------------------------------------

@njit(**INLINE)
def szp(r, w):
    f = PARITY[r & 0xFF]
    if w:
        r &= 0xFFFF
        if r & 0x8000:
            f |= F_SF
    else:
        r &= 0xFF
        if r & 0x80:
            f |= F_SF
    if r == 0:
        f |= F_ZF
    return f


@njit(**INLINE)
def alu(op, a, b, fl, w):
    """The eight ALU operations (ADD OR ADC SBB AND SUB XOR CMP).
    Returns (result, flags)."""
    if w:
        mask = 0xFFFF
        sgn = 0x8000
    else:
        mask = 0xFF
        sgn = 0x80
    if op == 0 or op == 2:
        r = a + b
        if op == 2:
            r += fl & F_CF
        f = szp(r, w)
        if r > mask:
            f |= F_CF
        if (r ^ a) & (r ^ b) & sgn:
            f |= F_OF
        if (a ^ b ^ r) & 0x10:
            f |= F_AF
        return r & mask, (fl & ~ARITH) | f
    if op == 1:
        r = a | b
    elif op == 4:
        r = a & b
    elif op == 6:
        r = a ^ b
    else:
        r = a - b
        if op == 3:
            r -= fl & F_CF
        f = szp(r, w)
        if r < 0:
            f |= F_CF
        if (a ^ b) & (a ^ r) & sgn:
            f |= F_OF
        if (a ^ b ^ r) & 0x10:
            f |= F_AF
        return r & mask, (fl & ~ARITH) | f
    return r, (fl & ~ARITH) | szp(r, w)


@njit(**INLINE)
def incdec(v, dec, fl, w):
    if w:
        mask = 0xFFFF
        sgn = 0x8000
    else:
        mask = 0xFF
        sgn = 0x80
    if dec:
        r = (v - 1) & mask
        f = szp(r, w)
        if v == sgn:
            f |= F_OF
        if (v & 0xF) == 0:
            f |= F_AF
    else:
        r = (v + 1) & mask
        f = szp(r, w)
        if r == sgn:
            f |= F_OF
        if (r & 0xF) == 0:
            f |= F_AF
    return r, (fl & ~(ARITH & ~F_CF)) | f


@njit(**INLINE)
def cond(cc, fl):
    """Jcc condition ``cc`` (low nibble of 70h-7Fh) on flags ``fl``."""
    c = cc >> 1
    if c == 0:
        t = (fl & F_OF) != 0
    elif c == 1:
        t = (fl & F_CF) != 0
    elif c == 2:
        t = (fl & F_ZF) != 0
    elif c == 3:
        t = (fl & (F_CF | F_ZF)) != 0
    elif c == 4:
        t = (fl & F_SF) != 0
    elif c == 5:
        t = (fl & F_PF) != 0
    elif c == 6:
        t = ((fl & F_SF) != 0) != ((fl & F_OF) != 0)
    else:
        t = ((fl & F_ZF) != 0) or (((fl & F_SF) != 0) != ((fl & F_OF) != 0))
    if cc & 1:
        return not t
    return t


# ---------------------------------------------------------------------------
# decoding helpers
# ---------------------------------------------------------------------------

@njit(**INLINE)
def r8i(r):
    """Index into the byte view of regs for 8-bit register number r."""
    return ((r & 3) << 1) | (r >> 2)


@njit(**INLINE)
def modrm(regs, mem, csb, ip, sov):
    """Decode a ModR/M byte at CS:IP.

    Returns (modrm, segbase, offset, new_ip, ea_cycles); segbase is -1 for a
    register operand (mod == 3).  ``sov`` is the segment-override base or -1.
    """
    m = np.int64(mem[(csb + ip) & M20])
    ip = (ip + 1) & 0xFFFF
    mod = m >> 6
    rm = m & 7
    if mod == 3:
        return m, -1, rm, ip, 0
    ss_default = False
    if rm == 0:
        off = np.int64(regs[BX]) + np.int64(regs[SI])
        cyc = 7
    elif rm == 1:
        off = np.int64(regs[BX]) + np.int64(regs[DI])
        cyc = 8
    elif rm == 2:
        off = np.int64(regs[BP]) + np.int64(regs[SI])
        cyc = 8
        ss_default = True
    elif rm == 3:
        off = np.int64(regs[BP]) + np.int64(regs[DI])
        cyc = 7
        ss_default = True
    elif rm == 4:
        off = np.int64(regs[SI])
        cyc = 5
    elif rm == 5:
        off = np.int64(regs[DI])
        cyc = 5
    elif rm == 6:
        if mod == 0:
            off = fetch16(mem, csb, ip)
            ip = (ip + 2) & 0xFFFF
            cyc = 6
        else:
            off = np.int64(regs[BP])
            cyc = 5
            ss_default = True
    else:
        off = np.int64(regs[BX])
        cyc = 5
    if mod == 1:
        d = np.int64(mem[(csb + ip) & M20])
        ip = (ip + 1) & 0xFFFF
        if d & 0x80:
            d -= 256
        off += d
        cyc += 4
    elif mod == 2:
        d = fetch16(mem, csb, ip)
        ip = (ip + 2) & 0xFFFF
        off += d
        cyc += 4
    off &= 0xFFFF
    if sov >= 0:
        sb = sov
    elif ss_default:
        sb = np.int64(regs[SS]) << 4
    else:
        sb = np.int64(regs[DS]) << 4
    return m, sb, off, ip, cyc


@njit(**INLINE)
def get_rm(regs, r8, mem, pf, xf, ctl, eff, sb, off, w):
    if sb < 0:
        if w:
            return np.int64(regs[off])
        return np.int64(r8[r8i(off)])
    if w:
        return rw(regs, mem, pf, xf, ctl, eff, sb, off)
    return rb(regs, mem, pf, xf, ctl, eff, (sb + off) & M20)


@njit(**INLINE)
def set_rm(regs, r8, mem, pf, xf, ctl, eff, sb, off, w, v):
    if sb < 0:
        if w:
            regs[off] = v & 0xFFFF
        else:
            r8[r8i(off)] = v & 0xFF
    elif w:
        ww(regs, mem, pf, xf, ctl, eff, sb, off, v)
    else:
        wb(regs, mem, pf, xf, ctl, eff, (sb + off) & M20, v & 0xFF)


@njit(**INLINE)
def get_reg(regs, r8, r, w):
    if w:
        return np.int64(regs[r])
    return np.int64(r8[r8i(r)])


@njit(**INLINE)
def set_reg(regs, r8, r, w, v):
    if w:
        regs[r] = v & 0xFFFF
    else:
        r8[r8i(r)] = v & 0xFF


@njit(**INLINE)
def fetch16(mem, csb, ip):
    """The word at CS:ip; both bytes wrap inside the code segment (a word at
    CS:FFFF takes its high byte from CS:0000), whatever ``ip`` the caller
    passes (ip + 2 for a far pointer's segment may be past FFFFh)."""
    return (np.int64(mem[(csb + (ip & 0xFFFF)) & M20])
            | (np.int64(mem[(csb + ((ip + 1) & 0xFFFF)) & M20]) << 8))


def _py(dispatcher):
    # the Python function behind a dispatcher (itself under NUMBA_DISABLE_JIT=1)
    return getattr(dispatcher, "py_func", dispatcher)


# Out-of-line twins of the bigger helpers for the cold opcode families: they
# have many call sites, and inlining all of them doubles the cold compile time.
# A call passes each array argument as a seven-word structure on the stack
# (six arrays: 42 words) and the callee sets up its frame, so the families
# that DOS runs all the time inline their stack and segment work instead:
# PUSH/POP sreg, MOV sreg, PUSHF/POPF, CALL/RET far, IRET, LES/LDS, POP r/m.
# Counted with callgrind (host instructions in JIT code per guest
# instruction): a loop of PUSH DS/POP ES/MOV sreg/LES 413 -> 328, one of
# CALL far/RETF/LES/PUSHF/POPF 508 -> 406; the standard loop (all inline
# in run) unchanged at 173; about 3 s more cold compile.
modrm_c = njit(**JIT)(_py(modrm))
get_rm_c = njit(**JIT)(_py(get_rm))
set_rm_c = njit(**JIT)(_py(set_rm))
alu_c = njit(**JIT)(_py(alu))
push_c = njit(**JIT)(_py(push))
pop_c = njit(**JIT)(_py(pop))
rw_c = njit(**JIT)(_py(rw))
ww_c = njit(**JIT)(_py(ww))


# ... and the same for the families, which have ctl's address (a_ctl) and
# rebuild the arrays from it (see the module docstring): one word passed
# instead of 42.
@njit(**JIT)
def get_rm_a(a_ctl, sb, off, w):
    ctl, regs, r8, mem, pf, xf, eff = state_views(a_ctl)
    return get_rm(regs, r8, mem, pf, xf, ctl, eff, sb, off, w)


@njit(**JIT)
def set_rm_a(a_ctl, sb, off, w, v):
    ctl, regs, r8, mem, pf, xf, eff = state_views(a_ctl)
    set_rm(regs, r8, mem, pf, xf, ctl, eff, sb, off, w, v)


@njit(**JIT)
def push_a(a_ctl, v):
    ctl, regs, r8, mem, pf, xf, eff = state_views(a_ctl)
    push(regs, mem, pf, xf, ctl, eff, v)


@njit(**JIT)
def pop_a(a_ctl):
    ctl, regs, r8, mem, pf, xf, eff = state_views(a_ctl)
    return pop(regs, mem, pf, xf, ctl, eff)


@njit(**JIT)
def rw_a(a_ctl, sb, off):
    ctl, regs, r8, mem, pf, xf, eff = state_views(a_ctl)
    return rw(regs, mem, pf, xf, ctl, eff, sb, off)


@njit(**JIT)
def ww_a(a_ctl, sb, off, v):
    ctl, regs, r8, mem, pf, xf, eff = state_views(a_ctl)
    ww(regs, mem, pf, xf, ctl, eff, sb, off, v)


# ---------------------------------------------------------------------------
# ports answered inside the JIT
# ---------------------------------------------------------------------------

# The port kinds, the pool of parameter blocks and the block layouts are in
# state.py; the bus (pypc_core/bus/fastpath.py) fills them from Python.


@njit(**JIT)
def raster_read(pio, b, cycle):
    """Raster status bits from block ``pio[b:]``: dot = cycle * num // den -
    epoch, wrapped to a frame; ``blank`` outside the displayed area, ``vsync``
    on lines [vs0, vs1), the constant bits always."""
    pos = (cycle * pio[b + R_NUM] // pio[b + R_DEN] - pio[b + R_EPOCH]) % pio[b + R_FRAME]
    line = pos // pio[b + R_LINE]
    hpos = pos - line * pio[b + R_LINE]
    v = pio[b + R_CONST]
    if line >= pio[b + R_VDISP] or hpos >= pio[b + R_HDISP]:
        v |= pio[b + R_BLANK]
    if line >= pio[b + R_VS0] and line < pio[b + R_VS1]:
        v |= pio[b + R_VSYNC]
    return v & 0xFF


@njit(**JIT)
def oneshot_read(pio, b, cycle):
    """One-shot bits: each one-shot's mask while ``cycle`` is before its
    expiry, over the constant bits."""
    v = pio[b + O_CONST]
    e = b + O_FIRST
    for _ in range(pio[b + O_COUNT]):
        if cycle < pio[e + 2]:
            v |= pio[e]
        e += ONESHOT_WORDS_EACH
    return v & 0xFF


@njit(**JIT)
def oneshot_fire(pio, b, cycle):
    """A write: every one-shot starts again and expires ``duration`` later."""
    e = b + O_FIRST
    for _ in range(pio[b + O_COUNT]):
        pio[e + 2] = cycle + pio[e + 1]
        e += ONESHOT_WORDS_EACH
    pio[b + O_FIRES] += 1
    pio[b + O_LAST] = cycle


@njit(**INLINE)
def fast_port_read(pk, pio, port, cycle):
    k = pk[port]
    if k == PORT_VALUE:
        return pio[port] & 0xFF
    if k == PORT_RASTER:
        return raster_read(pio, pio[port], cycle)
    if k == PORT_COUNTER:
        return timer_read(pio, pio[port], cycle)
    if k == PORT_ONESHOT:
        return oneshot_read(pio, pio[port], cycle)
    if k == PORT_CALL:
        b = pio[port]
        # a port handler's op carries the cycle of the access: op >> 1
        return call_handler(pio[b + K_FN], pio[b + K_CTX], np.int64(port), np.int64(0),
                            np.int64(HANDLER_READ) | (cycle << 1)) & 0xFF
    return 0xFF


@njit(**JIT)
def _jit_write_kind(k):
    return k == PORT_STAMP or k == PORT_ONESHOT or k == PORT_CALL


@njit(**INLINE)
def _stamp(pio, b, v, now):
    """A firmware mark (the BIOS's empty keyboard poll): count it and note
    its burst; Python looks at the count and times when it wants, no exit."""
    pio[b] += 1
    if now - pio[b + 1] > pio[b + 5]:
        pio[b + 2] = now          # a new burst begins
        pio[b + 3] = 0
    pio[b + 3] += 1
    pio[b + 1] = now
    pio[b + 4] = v


@njit(**JIT)
def stamp_write(pio, b, v, now):
    """``_stamp`` for Python callers (bus/fastpath.py's Stamp.write)."""
    _stamp(pio, b, v, now)


@njit(**JIT)
def _fast_write_byte(pk, pio, port, v, now):
    k = pk[port]
    b = pio[port]
    if k == PORT_STAMP:
        _stamp(pio, b, v, now)
    elif k == PORT_ONESHOT:
        oneshot_fire(pio, b, now)
    else:
        call_handler(pio[b + K_FN], pio[b + K_CTX], np.int64(port), np.int64(v & 0xFF),
                     np.int64(HANDLER_WRITE) | (now << 1))


@njit(**INLINE)
def fast_port_write(pk, pio, port, v, now, w):
    """An OUT the core completes itself (stamp, one-shot and compiled-handler
    ports; a word needs both ports to be such).  False: Python must.  The
    test for the other kinds and the stamp (the BIOS's keyboard-poll mark,
    written at every idle poll) are inline."""
    k = pk[port]
    if k < PORT_STAMP:
        return False
    if k == PORT_STAMP and w == 0:
        _stamp(pio, pio[port], v & 0xFF, now)       # (inlined: the idle poll's path)
        return True
    return _fast_port_write_slow(pk, pio, port, v, now, w)


@njit(**JIT)
def _fast_port_write_slow(pk, pio, port, v, now, w):
    if not _jit_write_kind(pk[port]):
        return False
    if w:
        hi = (port + 1) & 0xFFFF
        if not _jit_write_kind(pk[hi]):
            return False
        _fast_write_byte(pk, pio, port, v & 0xFF, now)
        _fast_write_byte(pk, pio, hi, (v >> 8) & 0xFF, now)
    else:
        _fast_write_byte(pk, pio, port, v & 0xFF, now)
    return True


@njit(**JIT)
def timer_stale(pk, pio, port, cycle):
    """True when a PORT_COUNTER port's model does not cover ``cycle`` (a
    load written earlier takes effect by then): Python must answer."""
    if pk[port] != PORT_COUNTER:
        return False
    t = pio[port]
    return cycle // pio[t + T_DIV] >= pio[t + T_LIMIT]


@njit(**INLINE)
def timer_rule(kind, n, ce, out, reload):
    """The 8253's counting element ``n`` edges into a segment, not yet
    wrapped to the count's range: kind 0 counts down by one from ``ce``, 1 is
    stopped at ``ce``, 2 is mode 2 (``reload`` down to 1, again), 3 is mode 3
    (by twos, each half-cycle; ``out`` the level the segment started at).
    The one rule: ``timer_count`` wraps it to 16 bits, the PIT
    (``chipset.pit``) to its binary or BCD modulus."""
    if kind == 1:
        return ce
    if kind == 0:
        return ce - n
    if kind == 2:
        return reload - n % reload
    if out:
        first = (reload + 1) // 2
    else:
        first = reload // 2
    p = n % reload
    off = p if p < first else p - first
    return reload - (reload & 1) - 2 * off


@njit(**JIT)
def timer_count(pio, t, edge):
    """The down counter at edge ``edge`` (binary counts)."""
    return timer_rule(pio[t + T_KIND], edge - pio[t + T_START], pio[t + T_CE],
                      pio[t + T_OUT], pio[t + T_RELOAD]) & 0xFFFF


@njit(**JIT)
def timer_read(pio, t, cycle):
    """A read of a counter port: the latch or the live count, one byte at a
    time through the read flip-flop (as the 8253 does)."""
    if pio[t + T_LATCHED]:
        value = pio[t + T_LATCH]
    else:
        value = timer_count(pio, t, cycle // pio[t + T_DIV])
    access = pio[t + T_ACCESS]
    if access == 1:
        done = True
        byte = value & 0xFF
    elif access == 2:
        done = True
        byte = value >> 8
    else:
        done = pio[t + T_READ_MSB] != 0
        byte = value >> 8 if done else value & 0xFF
        pio[t + T_READ_MSB] = 0 if done else 1
    if done:
        pio[t + T_LATCHED] = 0
    pio[t + T_READS] += 1
    return byte & 0xFF


# ---------------------------------------------------------------------------
# interrupts
# ---------------------------------------------------------------------------

@njit(**JIT)
def interrupt(regs, mem, pf, xf, ctl, eff, vector, return_ip):
    """Enter interrupt ``vector``: push FLAGS, CS, ``return_ip``; clear IF/TF."""
    if ctl[C_REP_RESUME] != 0:
        # we are between two iterations of a REP string instruction that our
        # own time slice paused (IP is on its first prefix): the 8088 returns
        # to the last prefix before the opcode, losing any earlier ones
        csb = np.int64(regs[CS]) << 4
        ip = return_ip
        for _ in range(MAX_PREFIXES):
            op = mem[(csb + ip) & M20]
            if not (op == 0x26 or op == 0x2E or op == 0x36 or op == 0x3E or op == 0xF0
                    or op == 0xF1 or op == 0xF2 or op == 0xF3):
                break
            ip = (ip + 1) & 0xFFFF
        return_ip = (ip - 1) & 0xFFFF
    fl = np.int64(regs[FLAGS])
    push(regs, mem, pf, xf, ctl, eff, fl)
    regs[FLAGS] = fl & ~(F_IF | F_TF)
    push(regs, mem, pf, xf, ctl, eff, np.int64(regs[CS]))
    push(regs, mem, pf, xf, ctl, eff, return_ip)
    a = (vector & 0xFF) * 4
    regs[IP] = rw(regs, mem, pf, xf, ctl, eff, 0, a)
    regs[CS] = rw(regs, mem, pf, xf, ctl, eff, 0, a + 2)
    ctl[C_HALTED] = 0
    ctl[C_REP_RESUME] = 0       # a string instruction interrupted here restarts in full
    # 8088: INT n takes 71 cycles (51 on the 8086 plus 4 per word moved on
    # the 8-bit bus: three pushes and the two vector words)
    return 71


_interrupt_inline = njit(**INLINE)(_py(interrupt))


@njit(**JIT)
def interrupt_a(a_ctl, vector, return_ip):
    """``interrupt`` for ``run``'s NMI and trap entries, with ctl's address
    for the arrays (see the module docstring)."""
    ctl, regs, r8, mem, pf, xf, eff = state_views(a_ctl)
    return _interrupt_inline(regs, mem, pf, xf, ctl, eff, vector, return_ip)


# ---------------------------------------------------------------------------
# opcode families that are not on the hottest path
# ---------------------------------------------------------------------------

@njit(**JIT)
def op_shift(a_ctl, op, ip, csb, sov):
    """D0-D3: rotates and shifts by 1 or CL (count not masked on the 8088)."""
    ctl, regs, r8, mem, pf, xf, eff = state_views(a_ctl)
    w = op & 1
    m, sb, off, ip, eac = modrm_c(regs, mem, csb, ip, sov)
    kind = (m >> 3) & 7
    v = get_rm_a(a_ctl, sb, off, w)
    if op & 2:
        count = np.int64(r8[2])
        cyc = 8 + 4 * count if sb < 0 else 20 + eac + 4 * count + 8 * w
    else:
        count = 1
        cyc = 2 if sb < 0 else 15 + eac + 8 * w
    if count == 0:
        regs[IP] = ip
        return cyc
    if w:
        bits = 16
        mask = 0xFFFF
    else:
        bits = 8
        mask = 0xFF
    top = bits - 1
    fl = np.int64(regs[FLAGS])
    cf = fl & F_CF
    of = 0
    for _ in range(count):
        msb = (v >> top) & 1
        if kind == 0:      # ROL
            cf = msb
            v = ((v << 1) | msb) & mask
            of = ((v >> top) & 1) ^ cf
        elif kind == 1:    # ROR
            cf = v & 1
            v = (v >> 1) | (cf << top)
            of = ((v >> top) ^ (v >> (top - 1))) & 1
        elif kind == 2:    # RCL
            nv = ((v << 1) | cf) & mask
            cf = msb
            v = nv
            of = ((v >> top) & 1) ^ cf
        elif kind == 3:    # RCR
            nv = (v >> 1) | (cf << top)
            cf = v & 1
            v = nv
            of = ((v >> top) ^ (v >> (top - 1))) & 1
        elif kind == 4:    # SHL
            cf = msb
            v = (v << 1) & mask
            of = ((v >> top) & 1) ^ cf
        elif kind == 5:    # SHR
            cf = v & 1
            of = msb
            v = v >> 1
        elif kind == 6:    # SETMO (undocumented): result all ones
            cf = 0
            of = 0
            v = mask
        else:              # SAR
            cf = v & 1
            v = (v >> 1) | (msb << top)
            of = 0
    fl &= ~(F_CF | F_OF)
    if cf:
        fl |= F_CF
    if of:
        fl |= F_OF
    if kind >= 4:
        fl = (fl & ~(F_SF | F_ZF | F_PF | F_AF)) | szp(v, w)
        if kind == 4 and v & 0x10:
            # AF is officially undefined; the 8088's ALU shifts left by adding
            # the operand to itself, so AF is the carry out of bit 3
            fl |= F_AF
    regs[FLAGS] = fl
    set_rm_a(a_ctl, sb, off, w, v)
    regs[IP] = ip
    return cyc


@njit(**JIT)
def op_group3(a_ctl, op, ip, csb, sov, rep, start_ip):
    """F6/F7: TEST imm, NOT, NEG, MUL, IMUL, DIV, IDIV.

    Returns cycles; a divide error enters INT 0 with the address after the
    instruction (as the 8088 does)."""
    ctl, regs, r8, mem, pf, xf, eff = state_views(a_ctl)
    w = op & 1
    m, sb, off, ip, eac = modrm_c(regs, mem, csb, ip, sov)
    kind = (m >> 3) & 7
    v = get_rm_a(a_ctl, sb, off, w)
    fl = np.int64(regs[FLAGS])
    memop = sb >= 0
    if kind <= 1:      # TEST r/m, imm
        if w:
            imm = fetch16(mem, csb, ip)
            ip = (ip + 2) & 0xFFFF
        else:
            imm = np.int64(mem[(csb + ip) & M20])
            ip = (ip + 1) & 0xFFFF
        r, fl = alu_c(4, v, imm, fl, w)
        regs[FLAGS] = fl
        regs[IP] = ip
        return 11 + eac if memop else 5
    if kind == 2:      # NOT
        set_rm_a(a_ctl, sb, off, w, ~v)
        regs[IP] = ip
        return 16 + eac + 8 * w if memop else 3
    if kind == 3:      # NEG
        r, fl = alu_c(5, 0, v, fl, w)
        regs[FLAGS] = fl
        set_rm_a(a_ctl, sb, off, w, r)
        regs[IP] = ip
        return 16 + eac + 8 * w if memop else 3
    f1 = 1 if rep != 0 else 0     # the REP prefix sets the microcode's F1 flag
    if kind == 4 or kind == 5:   # MUL / IMUL
        a = np.int64(regs[AX]) if w else np.int64(r8[0])
        hi, lo, fl = multiply(a, v, w, kind == 5, f1, fl)
        if w:
            regs[AX] = lo
            regs[DX] = hi
            cyc = 124 if kind == 4 else 134
        else:
            regs[AX] = (hi << 8) | lo
            cyc = 73 if kind == 4 else 80
        regs[FLAGS] = fl
        regs[IP] = ip
        return cyc + (eac + 4 + 4 * w if memop else 0)
    # DIV / IDIV
    cyc = 162 if w else 90
    if kind == 7:
        cyc += 22
    if memop:
        cyc += eac + 4 + 4 * w
    if w:
        hi = np.int64(regs[DX])
        lo = np.int64(regs[AX])
    else:
        hi = np.int64(r8[1])
        lo = np.int64(r8[0])
    ok, q, rmd, fl = divide(hi, lo, v, w, kind == 7, f1, fl)
    regs[FLAGS] = fl
    if not ok:
        regs[IP] = ip
        return cyc + interrupt(regs, mem, pf, xf, ctl, eff, 0, ip)
    if w:
        regs[AX] = q
        regs[DX] = rmd
    else:
        r8[0] = q
        r8[1] = rmd
    regs[IP] = ip
    return cyc


@njit(**JIT)
def _sub_flags(a, b, w):
    """Flags of the microcode ALU subtraction a - b (operands already masked)."""
    r = a - b
    f = szp(r, w)
    if r < 0:
        f |= F_CF
    sgn = 0x8000 if w else 0x80
    if (a ^ b) & (a ^ r) & sgn:
        f |= F_OF
    if (a ^ b ^ r) & 0x10:
        f |= F_AF
    return f


@njit(**JIT)
def multiply(a, b, w, signed, f1, fl):
    """MUL/IMUL as the 8088 microcode does it (shift-and-add with operand
    negation for IMUL; the F1 flag, set by a REP prefix, negates the product).
    Returns (high, low, flags)."""
    if w:
        mask = 0xFFFF
        top = 15
    else:
        mask = 0xFF
        top = 7
    if signed:
        if a >> top:
            a = (-a) & mask
            f1 ^= 1
        if b >> top:
            b = (-b) & mask
            f1 ^= 1
    p = a * b
    hi = (p >> (top + 1)) & mask
    lo = p & mask
    if f1:
        borrow = lo != 0
        lo = (-lo) & mask
        hi = (~hi) & mask if borrow else (-hi) & mask
    af = 0
    if signed:
        # the overflow test adds the low half's sign bit to the high half
        c = lo >> top
        s = (hi + c) & mask
        if (hi ^ c ^ s) & 0x10:
            af = F_AF
    else:
        s = hi
    f = szp(s, w) | af
    if s != 0:
        f |= F_CF | F_OF
    return hi, lo, (fl & ~ARITH) | f


@njit(**JIT)
def divide(hi, lo, d, w, signed, f1, fl):
    """DIV/IDIV as the 8088 microcode does it: a restoring shift-and-subtract
    loop whose intermediate subtractions leave the (officially undefined)
    flags, with the overflow checks where the silicon makes them.
    Returns (ok, quotient, remainder, flags)."""
    if w:
        mask = 0xFFFF
        top = 15
        bits = 16
    else:
        mask = 0xFF
        top = 7
        bits = 8
    tmpa = hi
    tmpc = lo
    tmpb = d
    dividend_negative = (hi >> top) & 1
    if signed:
        if dividend_negative:
            borrow = tmpc != 0
            tmpc = (-tmpc) & mask
            tmpa = (~tmpa) & mask if borrow else (-tmpa) & mask
            f1 ^= 1
        if tmpb >> top:
            tmpb = (-tmpb) & mask
            f1 ^= 1
    f = _sub_flags(tmpa, tmpb, w)
    if tmpa >= tmpb:
        return False, 0, 0, (fl & ~ARITH) | f
    cf = 1
    for _ in range(bits):
        out = tmpc >> top
        tmpc = ((tmpc << 1) | cf) & mask
        cf = out
        out = tmpa >> top
        tmpa = ((tmpa << 1) | cf) & mask
        cf = out
        r = tmpa - tmpb
        if cf:
            cf = 0
            tmpa = r & mask
        else:
            f = _sub_flags(tmpa, tmpb, w)
            if r < 0:
                cf = 1
            else:
                tmpa = r
    out = tmpc >> top
    tmpc = ((tmpc << 1) | cf) & mask
    cf = tmpc >> top
    f = (f & ~F_CF) | cf
    if not signed:
        return True, (~tmpc) & mask, tmpa, (fl & ~ARITH) | f
    if not cf:
        return False, 0, 0, (fl & ~ARITH) | f
    if dividend_negative:
        tmpa = (-tmpa) & mask
    if f1:
        q = (tmpc + 1) & mask
    else:
        q = (~tmpc) & mask
    f &= ~(F_CF | F_OF)
    return True, q, tmpa, (fl & ~ARITH) | f


@njit(**JIT)
def op_string(a_ctl, op, ip, sov, rep, start_ip, last_prefix_ip,
              now, deadline, resumed):
    """A4-A7, AA-AF: MOVS CMPS STOS LODS SCAS with optional REP/REPE/REPNE.

    A repeated instruction runs to completion unless the cycle budget ends or
    an interrupt becomes pending; then IP is rewound so the instruction
    resumes (to its first prefix for our own budget; to the last prefix for a
    real interrupt, as the 8088 does).  Returns cycles."""
    ctl, regs, r8, mem, pf, xf, eff = state_views(a_ctl)
    w = op & 1
    kind = (op >> 1) & 7   # 2 MOVS, 3 CMPS, 5 STOS, 6 LODS, 7 SCAS
    step = 2 if w else 1
    fl = np.int64(regs[FLAGS])
    if fl & F_DF:
        step = -step
    src_sb = sov if sov >= 0 else np.int64(regs[DS]) << 4
    es_sb = np.int64(regs[ES]) << 4
    cyc = 0
    if rep and not resumed:
        cyc = 9
    while True:
        if rep:
            if regs[CX] == 0:
                break
            ctl[C_NOW] = now + cyc      # this iteration's cycle (a journal's clock)
        if kind == 2:      # MOVS
            si = np.int64(regs[SI])
            di = np.int64(regs[DI])
            if w:
                v = rw(regs, mem, pf, xf, ctl, eff, src_sb, si)
                ww(regs, mem, pf, xf, ctl, eff, es_sb, di, v)
                cyc += 26 if not rep else 25
            else:
                v = rb(regs, mem, pf, xf, ctl, eff, (src_sb + si) & M20)
                wb(regs, mem, pf, xf, ctl, eff, (es_sb + di) & M20, v)
                cyc += 18 if not rep else 17
            regs[SI] = (si + step) & 0xFFFF
            regs[DI] = (di + step) & 0xFFFF
        elif kind == 3:    # CMPS
            si = np.int64(regs[SI])
            di = np.int64(regs[DI])
            if w:
                a = rw(regs, mem, pf, xf, ctl, eff, src_sb, si)
                b = rw(regs, mem, pf, xf, ctl, eff, es_sb, di)
                cyc += 30
            else:
                a = rb(regs, mem, pf, xf, ctl, eff, (src_sb + si) & M20)
                b = rb(regs, mem, pf, xf, ctl, eff, (es_sb + di) & M20)
                cyc += 22
            r, fl = alu(7, a, b, fl, w)
            regs[SI] = (si + step) & 0xFFFF
            regs[DI] = (di + step) & 0xFFFF
        elif kind == 5:    # STOS
            di = np.int64(regs[DI])
            if w:
                ww(regs, mem, pf, xf, ctl, eff, es_sb, di, np.int64(regs[AX]))
                cyc += 15 if not rep else 14
            else:
                wb(regs, mem, pf, xf, ctl, eff, (es_sb + di) & M20, np.int64(r8[0]))
                cyc += 11 if not rep else 10
            regs[DI] = (di + step) & 0xFFFF
        elif kind == 6:    # LODS
            si = np.int64(regs[SI])
            if w:
                regs[AX] = rw(regs, mem, pf, xf, ctl, eff, src_sb, si)
                cyc += 16 if not rep else 17
            else:
                r8[0] = rb(regs, mem, pf, xf, ctl, eff, (src_sb + si) & M20)
                cyc += 12 if not rep else 13
            regs[SI] = (si + step) & 0xFFFF
        else:              # SCAS
            di = np.int64(regs[DI])
            if w:
                b = rw(regs, mem, pf, xf, ctl, eff, es_sb, di)
                r, fl = alu(7, np.int64(regs[AX]), b, fl, 1)
                cyc += 19
            else:
                b = rb(regs, mem, pf, xf, ctl, eff, (es_sb + di) & M20)
                r, fl = alu(7, np.int64(r8[0]), b, fl, 0)
                cyc += 15
            regs[DI] = (di + step) & 0xFFFF
        if not rep:
            break
        regs[CX] = (np.int64(regs[CX]) - 1) & 0xFFFF
        if kind == 3 or kind == 7:
            z = (fl & F_ZF) != 0
            if rep == 1 and not z:      # REPE/REPZ stops on not-equal
                break
            if rep == 2 and z:          # REPNE/REPNZ stops on equal
                break
        if regs[CX] == 0:
            break
        # resumption point: let the machine run devices or take an interrupt
        if ctl[C_WATCH_KIND] != 0:
            regs[FLAGS] = fl
            regs[IP] = start_ip
            return cyc
        if ctl[C_INTR] != 0 and (fl & F_IF):
            regs[FLAGS] = fl
            regs[IP] = last_prefix_ip
            return cyc
        if ctl[C_NMI] != 0 or now + cyc >= deadline:
            # our own time slice ended, not a guest event: resuming must not
            # cost the guest the REP start-up again
            ctl[C_REP_RESUME] = 1
            regs[FLAGS] = fl
            regs[IP] = start_ip
            return cyc
    regs[FLAGS] = fl
    regs[IP] = ip
    if cyc == 0:
        cyc = 2
    return cyc


@njit(**JIT)
def op_bcd(regs, r8, op, fl):
    """27 DAA, 2F DAS, 37 AAA, 3F AAS.  Returns the new flags."""
    al = np.int64(r8[0])
    cf = fl & F_CF
    af = fl & F_AF
    if op == 0x27 or op == 0x2F:
        old_al = al
        ncf = 0
        naf = 0
        if (al & 0xF) > 9 or af:
            if op == 0x27:
                al = al + 6
            else:
                al = al - 6
            naf = F_AF
        if old_al > (0x9F if af else 0x99) or cf:
            if op == 0x27:
                al = al + 0x60
            else:
                al = al - 0x60
            ncf = F_CF
        al &= 0xFF
        r8[0] = al
        f = szp(al, 0) | ncf | naf
        # OF (officially undefined): the 8088 sets it like an addition/subtraction
        if op == 0x27:
            if (old_al & 0x80) == 0 and (al & 0x80) != 0:
                f |= F_OF
        else:
            if (old_al & 0x80) != 0 and (al & 0x80) == 0:
                f |= F_OF
        return (fl & ~ARITH) | f
    ah = np.int64(r8[1])
    old_al = al
    if (al & 0xF) > 9 or af:
        # the officially undefined OF/SF/ZF/PF come from the ALU's AL+-6
        if op == 0x37:
            al = al + 6
            ah = ah + 1
            if (al ^ old_al) & (al ^ 6) & 0x80:
                f = F_AF | F_CF | F_OF
            else:
                f = F_AF | F_CF
        else:
            al = al - 6
            ah = ah - 1
            if (old_al ^ 6) & (old_al ^ al) & 0x80:
                f = F_AF | F_CF | F_OF
            else:
                f = F_AF | F_CF
    else:
        f = 0
    al &= 0xFF
    r8[1] = ah & 0xFF
    r8[0] = al & 0x0F
    return (fl & ~ARITH) | f | szp(al, 0)


@njit(**JIT)
def op_int(a_ctl, op, ip, csb, sov, start_ip, now):
    """INT 3, INT n, INTO: MISC_COMMON 4, in a small function (see
    op_segs).  Returns (cycles, status)."""
    ctl, regs, r8, mem, pf, xf, eff = state_views(a_ctl)
    fl = np.int64(regs[FLAGS])
    if op == 0xCC or op == 0xCD or (op == 0xCE and fl & F_OF):   # INT 3, INT n, INTO
        if op == 0xCC:
            v = np.int64(3)
            extra = 1
        elif op == 0xCD:
            v = np.int64(mem[(csb + ip) & M20])
            ip = (ip + 1) & 0xFFFF
            extra = 0
        else:
            v = np.int64(4)
            extra = 2
        if (ctl[C_INT_MASK + (v >> 6)] >> (v & 63)) & 1:
            # the debugger stops before this INT's handler (once per resume)
            if ctl[C_SKIP_INT] == 0:
                ctl[C_EXIT_VALUE] = v
                return 0, ST_INT_BREAK
            ctl[C_SKIP_INT] = 0
        return extra + interrupt(regs, mem, pf, xf, ctl, eff, v, ip), ST_OK
    if op == 0xCE:                 # INTO, no overflow
        regs[IP] = ip
        return 4, ST_OK
    return 0, ST_FAULT          # (op_out_of_line sends only INT_OPS here)


@njit(**JIT)
def op_io(a_ctl, op, ip, csb, sov, start_ip, now):
    """IN and OUT: MISC_COMMON 5, in a small function (see op_segs).
    Returns (cycles, status)."""
    ctl, regs, r8, mem, pf, xf, eff = state_views(a_ctl)
    pk = u8_at(ctl[C_A_PK], 65536)
    pio = i64_at(ctl[C_A_PIO], PIO_SIZE)
    fl = np.int64(regs[FLAGS])
    if (op >= 0xE4 and op <= 0xE7) or (op >= 0xEC and op <= 0xEF):   # IN / OUT
        w = op & 1
        if op < 0xE8:
            port = np.int64(mem[(csb + ip) & M20])
            ip = (ip + 1) & 0xFFFF
            cyc = 10 + 4 * w
        else:
            port = np.int64(regs[DX])
            cyc = 8 + 4 * w
        if op & 2:   # OUT
            v = np.int64(regs[AX]) if w else np.int64(r8[0])
            if ctl[C_RECORD]:
                _record(ctl, eff, EFF_IO_WRITE, port, v, 1 + w)
            regs[IP] = ip
            if fast_port_write(pk, pio, port, v, now + cyc, w):
                # a stamp, one-shot or compiled-handler port: no exit (it
                # sees the cycle after the OUT, as a Python handler does)
                return cyc, ST_OK
            if (pk[port] != 0 or (w and pk[(port + 1) & 0xFFFF] != 0)
                    or (ctl[C_IOW_N] != 0 and io_watched(ctl, port, w, 2))):
                ctl[C_EXIT_PORT] = port
                ctl[C_EXIT_VALUE] = v
                ctl[C_EXIT_WIDTH] = 1 + w
                return cyc, ST_IO_OUT
            return cyc, ST_OK
        python_port = (pk[port] == PORT_PY or (w and pk[(port + 1) & 0xFFFF] == PORT_PY)
                       or timer_stale(pk, pio, port, now)
                       or (w and timer_stale(pk, pio, (port + 1) & 0xFFFF, now))
                       or (ctl[C_IOW_N] != 0 and io_watched(ctl, port, w, 1)))
        # IN
        if ctl[C_IO_READY] != 0:
            # Python answered this IN after an exit: its value stands, even if
            # the port became CPU-answered meanwhile (the PIT republishes its
            # model while answering a stale read).  The flag must be consumed
            # here, or the next boundaries would skip the budget check.
            ctl[C_IO_READY] = 0
            v = ctl[C_IO_VALUE]
        elif python_port:
            ctl[C_EXIT_PORT] = port
            ctl[C_EXIT_WIDTH] = 1 + w
            return 0, ST_IO_IN
        else:
            v = fast_port_read(pk, pio, port, now)
            if w:
                v |= fast_port_read(pk, pio, (port + 1) & 0xFFFF, now) << 8
        if w:
            regs[AX] = v & 0xFFFF
        else:
            r8[0] = v & 0xFF
            v &= 0xFF
        if ctl[C_RECORD]:
            _record(ctl, eff, EFF_IO_READ, port, v & (0xFFFF if w else 0xFF), 1 + w)
        regs[IP] = ip
        return cyc, ST_OK
    return 0, ST_FAULT          # (op_out_of_line sends only IO_OPS here)


@njit(**JIT)
def op_misc(a_ctl, op, ip, csb, sov, start_ip, now):
    """The rare out-of-line opcodes (MISC_COMMON 0: WAIT, AAM, AAD, SALC,
    ESC, HLT, the BCD adjusts, the stuck pseudo-opcode); run sends FE/FF to
    op_group45 and the others to their small family.  Returns (cycles,
    status)."""
    ctl, regs, r8, mem, pf, xf, eff = state_views(a_ctl)
    fl = np.int64(regs[FLAGS])
    if op == 0x9B:                 # WAIT: no coprocessor, TEST is never asserted
        regs[IP] = ip
        return 4, ST_OK
    if op == 0xD4:                 # AAM
        base = np.int64(mem[(csb + ip) & M20])
        ip = (ip + 1) & 0xFFFF
        if base == 0:
            regs[FLAGS] = (fl & ~ARITH) | szp(0, 0)
            return 83 + interrupt(regs, mem, pf, xf, ctl, eff, 0, ip), ST_OK
        al = np.int64(r8[0])
        r8[1] = al // base
        r8[0] = al % base
        regs[FLAGS] = (fl & ~ARITH) | szp(al % base, 0)
        regs[IP] = ip
        return 83, ST_OK
    if op == 0xD5:                 # AAD
        base = np.int64(mem[(csb + ip) & M20])
        ip = (ip + 1) & 0xFFFF
        t = np.int64(r8[1]) * base
        r, fl = alu_c(0, np.int64(r8[0]), t & 0xFF, fl, 0)
        regs[AX] = r
        regs[FLAGS] = fl
        regs[IP] = ip
        return 60, ST_OK
    if op == 0xD6:                 # SALC (undocumented)
        r8[0] = 0xFF if fl & F_CF else 0
        regs[IP] = ip
        return 4, ST_OK
    if op >= 0xD8 and op <= 0xDF:  # ESC: no coprocessor, but the operand is read
        m, sb, off, ip, eac = modrm_c(regs, mem, csb, ip, sov)
        if sb >= 0:
            rw_a(a_ctl, sb, off)
        regs[IP] = ip
        return (2 if sb < 0 else 8 + eac), ST_OK
    if op == 0xF4:                 # HLT
        regs[IP] = ip
        ctl[C_HALTED] = 1
        return 2, ST_HALT
    if op == 0x27 or op == 0x2F or op == 0x37 or op == 0x3F:
        regs[FLAGS] = op_bcd(regs, r8, op, fl)
        regs[IP] = ip
        return (4 if op < 0x30 else 8), ST_OK
    if op == OP_STUCK:
        return 0, ST_STUCK
    # Every opcode is decoded above or in run(); reaching this line is a
    # decoding gap in this core, which Python reports (EXIT_FAULT) rather
    # than letting it run silently.  Nothing was executed: IP stays.
    ctl[C_EXIT_VALUE] = op
    return 0, ST_FAULT


# The small family that serves an out-of-line opcode (op_out_of_line looks
# it up): each family's opcodes below; 0, op_misc, for the rest.  Index
# OP_STUCK included, so the pseudo-opcode can be looked up.
COMMON_OPS = (0x86, 0x87, 0x8F, 0xA0, 0xA1, 0xA2, 0xA3,      # XCHG r/m, POP r/m, MOV moffs
              0xC4, 0xC5, 0xC6, 0xC7,                        # LES/LDS, MOV r/m imm
              0xD0, 0xD1, 0xD2, 0xD3, 0xD7)                  # shifts, XLAT
SEGS_OPS = (0x06, 0x07, 0x0E, 0x0F, 0x16, 0x17, 0x1E, 0x1F,  # PUSH/POP sreg
            0x8C, 0x8E, 0x9C, 0x9D,                          # MOV sreg, PUSHF/POPF
            0xC8, 0xC9, 0xCA, 0xCB, 0xCF,                    # RETF, IRET
            0xF5, 0xF8, 0xF9, 0xFA, 0xFB, 0xFC, 0xFD)        # CMC, flags
MISC_REGS_OPS = (0x8D, 0x91, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97,  # LEA, XCHG AX, reg
                 0x98, 0x99, 0x9A, 0x9E, 0x9F,               # CBW CWD CALLF SAHF LAHF
                 0xA8, 0xA9, 0xC0, 0xC1, 0xC2, 0xC3,         # TEST imm, RET near
                 0xE9, 0xEA)                                 # JMP near, far
INT_OPS = (0xCC, 0xCD, 0xCE)
IO_OPS = (0xE4, 0xE5, 0xE6, 0xE7, 0xEC, 0xED, 0xEE, 0xEF)
MISC_COMMON = np.zeros(OP_STUCK + 1, dtype=np.uint8)
for _family, _ops in ((1, COMMON_OPS), (2, SEGS_OPS), (3, MISC_REGS_OPS), (4, INT_OPS),
                      (5, IO_OPS)):
    MISC_COMMON[list(_ops)] = _family


@njit(**JIT)
def op_segs(a_ctl, op, ip, csb, sov):
    """The out-of-line instructions DOS code runs most (segment registers to
    and from registers and the stack, far returns, IRET, the flag
    instructions): SEGS_OPS, in the smallest function that holds them, for
    numba zeroes the stack slot of every variable of a function at each
    call (see the module docstring).  Returns (cycles, status)."""
    ctl, regs, r8, mem, pf, xf, eff = state_views(a_ctl)
    fl = np.int64(regs[FLAGS])
    if op == 0x8E:                 # MOV sreg, r/m (8E /1 loads CS on the 8088)
        m, sb, off, ip, eac = modrm(regs, mem, csb, ip, sov)
        regs[8 + ((m >> 3) & 3)] = get_rm(regs, r8, mem, pf, xf, ctl, eff, sb, off, 1)
        regs[IP] = ip
        return (2 if sb < 0 else 12 + eac), ST_INHIBIT
    # --- segment register push/pop (06 07 0E 0F 16 17 1E 1F)
    if op < 0x20 and (op & 7) >= 6:
        seg = 8 + ((op >> 3) & 3)
        regs[IP] = ip
        if op & 1:     # POP seg (0F = POP CS on the 8088)
            regs[seg] = pop(regs, mem, pf, xf, ctl, eff)
            return 12, ST_INHIBIT
        push(regs, mem, pf, xf, ctl, eff, np.int64(regs[seg]))
        return 14, ST_OK
    if op == 0x8C:                 # MOV r/m, sreg
        m, sb, off, ip, eac = modrm(regs, mem, csb, ip, sov)
        set_rm(regs, r8, mem, pf, xf, ctl, eff, sb, off, 1, np.int64(regs[8 + ((m >> 3) & 3)]))
        regs[IP] = ip
        return (2 if sb < 0 else 13 + eac), ST_OK
    if op == 0x9C:                 # PUSHF
        push(regs, mem, pf, xf, ctl, eff, (fl & 0x0FD5) | 0xF002)
        regs[IP] = ip
        return 14, ST_OK
    if op == 0x9D:                 # POPF
        v = pop(regs, mem, pf, xf, ctl, eff)
        regs[FLAGS] = (v & 0x0FD5) | 0xF002
        regs[IP] = ip
        return 12, ST_OK
    if op >= 0xC8 and op <= 0xCB:  # RETF (C8/C9 alias CA/CB)
        if op & 1:
            n = 0
        else:
            n = fetch16(mem, csb, ip)
        regs[IP] = pop(regs, mem, pf, xf, ctl, eff)
        regs[CS] = pop(regs, mem, pf, xf, ctl, eff)
        regs[SP] = (np.int64(regs[SP]) + n) & 0xFFFF
        return (34 if op & 1 else 33), ST_OK
    if op == 0xCF:                 # IRET
        regs[IP] = pop(regs, mem, pf, xf, ctl, eff)
        regs[CS] = pop(regs, mem, pf, xf, ctl, eff)
        regs[FLAGS] = (pop(regs, mem, pf, xf, ctl, eff) & 0x0FD5) | 0xF002
        return 44, ST_OK
    if op == 0xF5:                 # CMC
        regs[FLAGS] = fl ^ F_CF
        regs[IP] = ip
        return 2, ST_OK
    if op >= 0xF8 and op <= 0xFD:  # CLC STC CLI STI CLD STD
        bit = F_CF if op < 0xFA else (F_IF if op < 0xFC else F_DF)
        if op & 1:
            regs[FLAGS] = fl | bit
        else:
            regs[FLAGS] = fl & ~bit
        regs[IP] = ip
        if op == 0xFB:
            return 2, ST_INHIBIT
        return 2, ST_OK
    return 0, ST_FAULT          # (op_out_of_line sends only SEGS_OPS here)


@njit(**JIT)
def op_misc_regs(a_ctl, op, ip, csb, sov):
    """The out-of-line instructions of MISC_REGS_OPS: registers and flags,
    near and far jumps, the far call and near returns (LEA, XCHG AX, CBW,
    CWD, SAHF, LAHF, TEST AL|AX imm), few variables for the same reason as
    op_segs.  Returns (cycles, status)."""
    ctl, regs, r8, mem, pf, xf, eff = state_views(a_ctl)
    fl = np.int64(regs[FLAGS])
    if op == 0x8D:                 # LEA
        m, sb, off, ip, eac = modrm_c(regs, mem, csb, ip, sov)
        if sb >= 0:
            regs[(m >> 3) & 7] = off
        else:
            # register form (undefined): the 8088 stores its last internal
            # effective address, which the conformance vectors show is the
            # register operand's index; we leave the register unchanged
            pass
        regs[IP] = ip
        return 2 + eac, ST_OK
    if op >= 0x91 and op <= 0x97:  # XCHG AX, reg
        r = op & 7
        t = np.int64(regs[r])
        regs[r] = regs[AX]
        regs[AX] = t
        regs[IP] = ip
        return 3, ST_OK
    if op == 0x98:                 # CBW
        regs[AX] = (0xFF00 | np.int64(r8[0])) if r8[0] & 0x80 else np.int64(r8[0])
        regs[IP] = ip
        return 2, ST_OK
    if op == 0x99:                 # CWD
        regs[DX] = 0xFFFF if regs[AX] & 0x8000 else 0
        regs[IP] = ip
        return 5, ST_OK
    if op == 0x9A:                 # CALL far
        noff = fetch16(mem, csb, ip)
        nseg = fetch16(mem, csb, ip + 2)
        ip = (ip + 4) & 0xFFFF
        push(regs, mem, pf, xf, ctl, eff, np.int64(regs[CS]))
        push(regs, mem, pf, xf, ctl, eff, ip)
        regs[CS] = nseg
        regs[IP] = noff
        return 36, ST_OK
    if op == 0x9E:                 # SAHF
        regs[FLAGS] = (fl & ~0xD5) | (np.int64(r8[1]) & 0xD5)
        regs[IP] = ip
        return 4, ST_OK
    if op == 0x9F:                 # LAHF
        r8[1] = (fl & 0xD5) | 0x02
        regs[IP] = ip
        return 4, ST_OK
    if op == 0xA8 or op == 0xA9:   # TEST AL/AX, imm
        w = op & 1
        if w:
            imm = fetch16(mem, csb, ip)
            ip = (ip + 2) & 0xFFFF
            r, fl = alu_c(4, np.int64(regs[AX]), imm, fl, 1)
        else:
            imm = np.int64(mem[(csb + ip) & M20])
            ip = (ip + 1) & 0xFFFF
            r, fl = alu_c(4, np.int64(r8[0]), imm, fl, 0)
        regs[FLAGS] = fl
        regs[IP] = ip
        return 4, ST_OK
    if op == 0xC0 or op == 0xC2 or op == 0xC1 or op == 0xC3:   # RET near (C0/C1 alias)
        if op & 1:
            n = 0
        else:
            n = fetch16(mem, csb, ip)
        regs[IP] = pop(regs, mem, pf, xf, ctl, eff)
        regs[SP] = (np.int64(regs[SP]) + n) & 0xFFFF
        return (20 if op & 1 else 24), ST_OK
    if op == 0xE9:                 # JMP near
        d = fetch16(mem, csb, ip)
        regs[IP] = (ip + 2 + d) & 0xFFFF
        return 15, ST_OK
    if op == 0xEA:                 # JMP far
        noff = fetch16(mem, csb, ip)
        regs[CS] = fetch16(mem, csb, ip + 2)
        regs[IP] = noff
        return 15, ST_OK
    return 0, ST_FAULT          # (op_out_of_line sends only MISC_REGS_OPS here)


@njit(**JIT)
def op_misc_common(a_ctl, op, ip, csb, sov):
    """The out-of-line instructions DOS code runs often that op_segs and
    op_misc_regs do not have (POP r/m, MOV moffs, LES/LDS, MOV r/m imm,
    XCHG r/m, shifts, XLAT): the opcodes of MISC_COMMON 1, in a function of
    their own because numba zeroes the stack slot of every variable of a
    function at each call (see the module docstring), and op_misc's many
    (I/O, INT n, ESC, BCD ...) made each of these pay for about 130 of
    them.  Returns (cycles, status)."""
    ctl, regs, r8, mem, pf, xf, eff = state_views(a_ctl)
    fl = np.int64(regs[FLAGS])
    if op == 0x8F:                 # POP r/m (reg field ignored)
        m, sb, off, ip, eac = modrm_c(regs, mem, csb, ip, sov)
        v = pop(regs, mem, pf, xf, ctl, eff)
        if sb < 0:
            regs[off] = v
        else:
            # the EA was computed before SP moved, as the 8088 does
            ww(regs, mem, pf, xf, ctl, eff, sb, off, v)
        regs[IP] = ip
        return (12 if sb < 0 else 25 + eac), ST_OK
    if op >= 0xA0 and op <= 0xA3:  # MOV AL/AX <-> moffs
        w = op & 1
        off = fetch16(mem, csb, ip)
        ip = (ip + 2) & 0xFFFF
        sb = sov if sov >= 0 else np.int64(regs[DS]) << 4
        if op < 0xA2:
            if w:
                regs[AX] = rw_a(a_ctl, sb, off)
            else:
                r8[0] = rb(regs, mem, pf, xf, ctl, eff, (sb + off) & M20)
        else:
            if w:
                ww_a(a_ctl, sb, off, np.int64(regs[AX]))
            else:
                wb(regs, mem, pf, xf, ctl, eff, (sb + off) & M20, np.int64(r8[0]))
        regs[IP] = ip
        return 10 + 4 * w, ST_OK
    if op == 0xC4 or op == 0xC5:   # LES / LDS
        m, sb, off, ip, eac = modrm_c(regs, mem, csb, ip, sov)
        if sb < 0:
            # register form (undefined): reads from the segment base with the
            # register number as offset; approximate with DS:reg
            sb = np.int64(regs[DS]) << 4 if sov < 0 else sov
        v = rw(regs, mem, pf, xf, ctl, eff, sb, off)
        s = rw(regs, mem, pf, xf, ctl, eff, sb, (off + 2) & 0xFFFF)
        regs[(m >> 3) & 7] = v
        regs[ES if op == 0xC4 else DS] = s
        regs[IP] = ip
        return 24 + eac, ST_OK
    if op == 0xC6 or op == 0xC7:   # MOV r/m, imm (reg field ignored)
        w = op & 1
        m, sb, off, ip, eac = modrm_c(regs, mem, csb, ip, sov)
        if w:
            imm = fetch16(mem, csb, ip)
            ip = (ip + 2) & 0xFFFF
        else:
            imm = np.int64(mem[(csb + ip) & M20])
            ip = (ip + 1) & 0xFFFF
        set_rm_a(a_ctl, sb, off, w, imm)
        regs[IP] = ip
        return (4 if sb < 0 else 10 + eac + 4 * w), ST_OK
    if op >= 0xD0 and op <= 0xD3:
        return op_shift(a_ctl, op, ip, csb, sov), ST_OK
    if op == 0xD7:                 # XLAT
        sb = sov if sov >= 0 else np.int64(regs[DS]) << 4
        r8[0] = rb(regs, mem, pf, xf, ctl, eff, (sb + ((np.int64(regs[BX]) + np.int64(r8[0])) & 0xFFFF)) & M20)
        regs[IP] = ip
        return 11, ST_OK
    if op == 0x86 or op == 0x87:   # XCHG r/m, reg
        w = op & 1
        m, sb, off, ip, eac = modrm_c(regs, mem, csb, ip, sov)
        reg = (m >> 3) & 7
        a = get_rm_a(a_ctl, sb, off, w)
        b = get_reg(regs, r8, reg, w)
        set_rm_a(a_ctl, sb, off, w, b)
        set_reg(regs, r8, reg, w, a)
        regs[IP] = ip
        return (4 if sb < 0 else 17 + eac + 8 * w), ST_OK
    return 0, ST_FAULT          # (op_out_of_line sends only COMMON_OPS here)


@njit(**JIT)
def op_out_of_line(a_ctl, op, ip, csb, sov, start_ip, now):
    """The one call ``run`` makes for the opcodes it has no branch of its
    own for: to the small family that has ``op`` (MISC_COMMON).  Each call
    site in ``run`` changes how the registers of its hot loop are
    allocated: with one site here instead of six the standard loop ran
    1.07x (median of 12 alternating pairs), while the extra call costs an
    out-of-line instruction about 8 ns.  Returns (cycles, status)."""
    common = MISC_COMMON[op]
    if common == 2:
        return op_segs(a_ctl, op, ip, csb, sov)
    if common == 3:
        return op_misc_regs(a_ctl, op, ip, csb, sov)
    if common == 5:
        return op_io(a_ctl, op, ip, csb, sov, start_ip, now)
    if common == 4:
        return op_int(a_ctl, op, ip, csb, sov, start_ip, now)
    if common == 1:
        return op_misc_common(a_ctl, op, ip, csb, sov)
    return op_misc(a_ctl, op, ip, csb, sov, start_ip, now)


@njit(**JIT)
def op_group45(a_ctl, op, ip, csb, sov):
    """FE/FF: INC, DEC, CALL, CALL far, JMP, JMP far, PUSH (FF /7 = PUSH).

    FE /2-/7 (undefined) act on a word made of the byte operand and 0xFF
    upper half on the 8088... we follow the word form with the byte operand
    zero-extended, which keeps the machine consistent."""
    ctl, regs, r8, mem, pf, xf, eff = state_views(a_ctl)
    w = op & 1
    m, sb, off, ip, eac = modrm_c(regs, mem, csb, ip, sov)
    kind = (m >> 3) & 7
    fl = np.int64(regs[FLAGS])
    if kind <= 1:
        v = get_rm_a(a_ctl, sb, off, w)
        r, fl = incdec(v, kind, fl, w)
        set_rm_a(a_ctl, sb, off, w, r)
        regs[FLAGS] = fl
        regs[IP] = ip
        return (3 if sb < 0 else 15 + eac + 8 * w), ST_OK
    if kind == 2 or kind == 4 or kind == 6 or kind == 7:
        v = get_rm_a(a_ctl, sb, off, w)
        if not w:
            v |= 0xFF00
        if kind == 2:      # CALL near indirect
            push_a(a_ctl, ip)
            regs[IP] = v
            return (20 if sb < 0 else 29 + eac), ST_OK
        if kind == 4:      # JMP near indirect
            regs[IP] = v
            return (11 if sb < 0 else 18 + eac), ST_OK
        # PUSH r/m: PUSH SP pushes the decremented value
        if sb < 0 and off == SP and w:
            sp = (np.int64(regs[SP]) - 2) & 0xFFFF
            regs[SP] = sp
            ww_a(a_ctl, np.int64(regs[SS]) << 4, sp, sp)
        else:
            push_a(a_ctl, v)
        regs[IP] = ip
        return (15 if sb < 0 else 24 + eac), ST_OK
    # CALL far / JMP far indirect (kind 3, 5).  A register operand is undefined:
    # the 8088 reads from its last internal address; we use DS:reg-number.
    if sb < 0:
        sb = np.int64(regs[DS]) << 4 if sov < 0 else sov
    noff = rw_a(a_ctl, sb, off)
    nseg = rw_a(a_ctl, sb, (off + 2) & 0xFFFF)
    if kind == 3:
        push_a(a_ctl, np.int64(regs[CS]))
        push_a(a_ctl, ip)
        regs[CS] = nseg
        regs[IP] = noff
        return 53 + eac, ST_OK
    regs[CS] = nseg
    regs[IP] = noff
    return 24 + eac, ST_OK


# ---------------------------------------------------------------------------
# the debugger's helpers: watched port ranges, the instruction trace
# ---------------------------------------------------------------------------

@njit(**JIT)
def in_at(mem, csb, ip):
    """True when the instruction at CS:ip is an IN (after any prefixes)."""
    for _ in range(16):
        op = mem[(csb + ip) & M20]
        if not (op == 0x26 or op == 0x2E or op == 0x36 or op == 0x3E or op == 0xF0
                or op == 0xF1 or op == 0xF2 or op == 0xF3):
            return op == 0xE4 or op == 0xE5 or op == 0xEC or op == 0xED
        ip = (ip + 1) & 0xFFFF
    return False


@njit(**JIT)
def io_watched(ctl, port, w, direction):
    """True when ``port`` (and ``port + 1`` for a word) meets a watched range
    for ``direction`` (1 read, 2 write): the access goes through Python,
    where the debugger's I/O breakpoints look at it."""
    last = port + w
    for i in range(ctl[C_IOW_N]):
        r = ctl[C_IOW + i]
        if (r >> 32) & direction and last >= (r & 0xFFFF) and port <= ((r >> 16) & 0xFFFF):
            return True
    return False


@njit(**JIT)
def trace_fill(regs, mem, ctl, trc, row, mode, csb, ip, cycles):
    """Fill trace record ``row`` for the instruction at CS:ip (before it runs)."""
    trc[row, TR_CYCLES] = cycles
    trc[row, TR_CSIP] = ((csb >> 4) << 16) | ip
    b = np.int64(0)
    for k in range(8):
        b |= np.int64(mem[(csb + ((ip + k) & 0xFFFF)) & M20]) << (8 * k)
    trc[row, TR_BYTES] = b
    if mode & 2:
        for k in range(4):
            trc[row, TR_REGS + k] = (np.int64(regs[4 * k]) | (np.int64(regs[4 * k + 1]) << 16)
                                     | (np.int64(regs[4 * k + 2]) << 32)
                                     | (np.int64(regs[4 * k + 3]) << 48))
    trc[row, TR_EFFECT] = ctl[C_EFFECTS]
    trc[row, TR_KIND] = TRK_INSTRUCTION


# ---------------------------------------------------------------------------
# the run loop
# ---------------------------------------------------------------------------

@njit(**JIT)
def enter_region(regs, mem, pf, xf, ctl, blk, pc, ip0, cycles, deadline):
    """Run the translated region entered at ``pc`` (translator.py): returns
    the instructions it executed (then ``ctl[C_BLOCK_INSNS]`` holds the new
    cycle count) or 0 (nothing done: the loop interprets).  Out of line, so
    that the interpreter's loop carries only the call."""
    if blk[pc] == 0:
        return 0
    new_cycles = call_region(blk[pc], np.int64(regs.ctypes.data),
                             np.int64(mem.ctypes.data), np.int64(pf.ctypes.data),
                             np.int64(xf.ctypes.data), np.int64(ctl.ctypes.data),
                             cycles, deadline, ip0)
    k = ctl[C_BLOCK_INSNS]
    if k > 0:
        ctl[C_BLOCK_INSNS] = new_cycles
        # the translator's own counters, after its table (not machine
        # state: what the translator learns from)
        blk[M20 + 1] += k
        blk[M20 + 2] += 1
        return k
    ctl[C_BLOCK_INSNS] = 0
    if k < 0:
        # its code changed: never enter it here again (Python drops the
        # region when it sees the count)
        blk[pc] = 0
        xf[pc] &= ~XF_BLOCK
        blk[M20 + 3] += 1
        blk[M20 + 4] = 1
    return 0


@njit(**JIT)
def run_sliced(regs, mem, pf, xf, ctl, eff, pk, pio, blk, until, slice_cycles):
    """``run_translated`` to cycle ``until`` in slices of ``slice_cycles``
    (the translator samples where they end): returns EXIT_SAMPLE when a
    slice ended before ``until`` (call again after sampling), else the
    run's exit.  The slices are invisible: C_DEADLINE is left at ``until``
    and a REP string a slice paused is counted once, as in one run.
    ``blk[M20 + 4]`` is set when Python should look (a run long enough to
    sample, a region found changed), and then EXIT_LOOK is or-ed into the
    exit.  The translator's every run comes here, so the choices the
    interpreter's path makes in Python are made here, in one call: a
    halted CPU with no NMI due runs no instruction (``run`` at once), and a
    step (C_STEP) is ``run_translated`` to ``until`` without slices."""
    if ctl[C_STEP] != 0 or (ctl[C_HALTED] != 0 and ctl[C_NMI] == 0):
        ctl[C_DEADLINE] = until
        if ctl[C_STEP] != 0:
            reason = run_translated(regs, mem, pf, xf, ctl, eff, pk, pio, blk)
        else:
            reason = run(regs, mem, pf, xf, ctl, eff, pk, pio)
        if blk[M20 + 4] != 0:
            reason |= EXIT_LOOK
        return reason
    before = ctl[C_CYCLES]
    stop = before + slice_cycles
    if stop > until:
        stop = until
    ctl[C_DEADLINE] = stop
    reason = run_translated(regs, mem, pf, xf, ctl, eff, pk, pio, blk)
    ctl[C_DEADLINE] = until
    if reason == EXIT_BUDGET and stop < until and ctl[C_CYCLES] < until:
        if ctl[C_REP_RESUME] != 0:
            # the slice paused a REP string, which the core counts as an
            # instruction again when the next slice resumes it; one run to
            # ``until`` would have counted it once (one paused at or past
            # ``until`` paused where that run would have: no resume comes)
            ctl[C_INSTRUCTIONS] -= 1
        return EXIT_SAMPLE
    if ctl[C_CYCLES] - before >= slice_cycles >> 3:
        blk[M20 + 4] = 1
    if blk[M20 + 4] != 0:
        reason |= EXIT_LOOK
    return reason


@njit(**JIT)
def run_translated(regs, mem, pf, xf, ctl, eff, pk, pio, blk):
    """``run`` with the block translator on (``blk``: its table, the address
    of the region to enter at each linear address flagged XF_BLOCK, then
    its counters; see translator.py): where ``run`` stops at an
    entry into a translated region (EXIT_REGION, at an instruction boundary
    whose checks are made), the region runs, then ``run`` goes on; a region
    that runs nothing has ``run`` interpret that instruction.  Returns
    ``run``'s other exits.""" 
    while True:
        reason = run(regs, mem, pf, xf, ctl, eff, pk, pio)
        if reason != EXIT_REGION:
            return reason
        ip0 = np.int64(regs[IP])
        pc = ((np.int64(regs[CS]) << 4) + ip0) & M20
        k = enter_region(regs, mem, pf, xf, ctl, blk, pc, ip0, ctl[C_CYCLES], ctl[C_DEADLINE])
        if k > 0:
            ctl[C_CYCLES] = ctl[C_BLOCK_INSNS]
            ctl[C_BLOCK_INSNS] = 0
            ctl[C_INSTRUCTIONS] += k
            continue
        # the region ran nothing: interpret this one instruction.  Its
        # boundary was checked when run stopped (an interrupt it did not
        # take was held off, as now), so the step skips the interrupt
        # checks; the stop at a region needs no step left, so none is lost
        ctl[C_INHIBIT] = 1
        ctl[C_STEP] = 1
        reason = run(regs, mem, pf, xf, ctl, eff, pk, pio)
        ctl[C_STEP] = 0         # (left at 1 by an exit before the step's end)
        if reason != EXIT_STEP:
            return reason


@njit(**JIT)
def run(regs, mem, pf, xf, ctl, eff, pk, pio):
    """Execute until the budget (C_DEADLINE) or an exit; returns EXIT_*.
    (It has no trace code at all: see ``run_traced``; where a translated
    region can be entered it stops with EXIT_REGION: see ``run_translated``.)"""
    r8 = regs.view(np.uint8)
    # the out-of-line families find the other arrays through ctl (see
    # state.C_A_REGS): one argument instead of the arrays' every field
    ctl[C_A_REGS] = regs.ctypes.data
    ctl[C_A_MEM] = mem.ctypes.data
    ctl[C_A_PF] = pf.ctypes.data
    ctl[C_A_XF] = xf.ctypes.data
    ctl[C_A_EFF] = eff.ctypes.data
    ctl[C_N_EFF] = eff.shape[0]
    ctl[C_A_PK] = pk.ctypes.data
    ctl[C_A_PIO] = pio.ctypes.data
    cycles = ctl[C_CYCLES]
    deadline = ctl[C_DEADLINE]
    insns = ctl[C_INSTRUCTIONS]
    exit_reason = 0
    # Something for the boundary to look at: an IN's answer, an NMI, the INTR
    # line, a halted CPU or an interrupt shadow.  Only Python sets those
    # words, between runs (inside a run the core itself clears them, and
    # HLT exits), so one test of a local covers them while none is set.
    # A step count and the interrupt shadow are attention too: they stay in
    # ctl (C_STEP, C_INHIBIT) rather than in locals of the loop, and the work
    # after an instruction is one test while none of them is set (both
    # together made the standard loop 1.02x: fewer values live in the loop)
    attention = (ctl[C_IO_READY] | ctl[C_NMI] | ctl[C_INTR] | ctl[C_HALTED]
                 | ctl[C_STEP] | ctl[C_INHIBIT]) != 0
    while True:
        # ---------------- instruction boundary ----------------
        # An IN answered by Python re-executes with nothing in between: no
        # interrupt may take its value, no breakpoint or trap may stop it.
        io_resume = attention and ctl[C_IO_READY] != 0
        if not attention:
            if cycles >= deadline:
                exit_reason = EXIT_BUDGET
                break
        elif not io_resume:
            if cycles >= deadline:
                exit_reason = EXIT_BUDGET
                break
            if ctl[C_INHIBIT] == 0:
                if ctl[C_NMI] != 0:
                    ctl[C_NMI] = 0
                    ctl[C_HALTED] = 0
                    ctl[C_NOW] = cycles
                    cycles += interrupt_a(np.int64(ctl.ctypes.data), 2, np.int64(regs[IP]))
                    insns += 1
                    continue
                if ctl[C_INTR] != 0 and (regs[FLAGS] & F_IF):
                    exit_reason = EXIT_IRQ
                    break
            ctl[C_INHIBIT] = 0
            if ctl[C_HALTED] != 0:
                # idle until the next device deadline (interrupts wake us
                # above); the wait is one CPU Tick (the RPC's state_revision
                # and the trace count it)
                cycles = deadline
                ctl[C_HLT_WAITS] += 1
                exit_reason = EXIT_BUDGET
                break
        elif not in_at(mem, np.int64(regs[CS]) << 4, np.int64(regs[IP])):
            # the answer was for an IN, but IP was moved meanwhile: void
            ctl[C_IO_READY] = 0
            continue
        ctl[C_NOW] = cycles         # the instruction's cycle, for a clocked handler
        csb = np.int64(regs[CS]) << 4
        ip0 = np.int64(regs[IP])
        pc = (csb + ip0) & M20
        x = xf[pc]
        if x & (XF_BREAKPOINT | XF_TRAP | XF_BLOCK) and not io_resume:
            if x & XF_TRAP and ctl[C_TRAP_ENABLE] != 0:
                ctl[C_EXIT_VALUE] = pc
                exit_reason = EXIT_TRAP
                break
            if x & XF_BREAKPOINT:
                if ctl[C_SKIP_BP] != 0:
                    ctl[C_SKIP_BP] = 0
                else:
                    exit_reason = EXIT_BREAKPOINT
                    break
            elif ctl[C_STEP] == 0 and not x & XF_TRAP:
                # a translated region can be entered here (XF_BLOCK, the
                # only flag left): run_translated enters it (the loop itself
                # carries no call: one here cost the interpreter 12 % on
                # the standard loop)
                exit_reason = EXIT_REGION
                break
        tf = regs[FLAGS] & F_TF
        # ---------------- prefixes ----------------
        op = np.int64(mem[pc])       # (the loop below only after a prefix)
        ip = ip0
        sov = -1
        rep = 0
        last_prefix_ip = ip0
        cyc = 0
        cls = OP_CLASS[op]
        if cls & OPC_PREFIX:
            nprefix = 0
            while True:
                op = np.int64(mem[(csb + ip) & M20])
                if op == 0x26 or op == 0x2E or op == 0x36 or op == 0x3E:
                    sov = np.int64(regs[8 + ((op >> 3) & 3)]) << 4
                elif op == 0xF2:
                    rep = 2
                elif op == 0xF3:
                    rep = 1
                elif op == 0xF0 or op == 0xF1:
                    pass
                else:
                    break
                last_prefix_ip = ip
                ip = (ip + 1) & 0xFFFF
                cyc += 2
                nprefix += 1
                if nprefix >= MAX_PREFIXES:
                    op = OP_STUCK        # (handled by op_misc, off the hot path)
                    break
            cls = OP_CLASS[op]
        ip = (ip + 1) & 0xFFFF
        status = ST_OK
        # ---------------- hot families inline ----------------
        if cls & OPC_MODRM_DATA:
            # the ModR/M data family in one place (one inlined copy of the
            # operand access, which keeps the compile time down):
            # 00-3F ALU r/m,reg and reg,r/m; 80-83 ALU r/m,imm; 84-85 TEST;
            # 88-8B MOV
            w = op & 1
            m, sb, off, ip, eac = modrm(regs, mem, csb, ip, sov)
            reg = (m >> 3) & 7
            memop = sb >= 0
            if op < 0x40:
                aop = op >> 3
                to_reg = (op & 2) != 0
                src = get_reg(regs, r8, reg, w)
            elif op >= 0x84 and op <= 0x85:
                aop = 4                      # TEST: AND without the store
                to_reg = False
                src = get_reg(regs, r8, reg, w)
            elif op < 0x84:
                aop = reg
                to_reg = False
                if op == 0x81:
                    src = fetch16(mem, csb, ip)
                    ip = (ip + 2) & 0xFFFF
                else:
                    src = np.int64(mem[(csb + ip) & M20])
                    ip = (ip + 1) & 0xFFFF
                    if op == 0x83 and src & 0x80:
                        src |= 0xFF00
            else:
                aop = 8                      # MOV
                to_reg = (op & 2) != 0
                src = 0 if to_reg else get_reg(regs, r8, reg, w)
            rmv = 0
            if aop != 8 or to_reg:
                rmv = get_rm(regs, r8, mem, pf, xf, ctl, eff, sb, off, w)
            if aop == 8:
                r = rmv if to_reg else src
                if to_reg:
                    cyc += 8 + eac + 4 * w if memop else 2
                else:
                    cyc += 9 + eac + 4 * w if memop else 2
            else:
                if to_reg:
                    r, fl = alu(aop, src, rmv, np.int64(regs[FLAGS]), w)
                else:
                    r, fl = alu(aop, rmv, src, np.int64(regs[FLAGS]), w)
                regs[FLAGS] = fl
                if op >= 0x84:               # TEST
                    cyc += 9 + eac + 4 * w if memop else 3
                    aop = 7                  # no store
                elif op >= 0x80:
                    if memop:
                        cyc += 10 + eac + 4 * w if aop == 7 else 17 + eac + 8 * w
                    else:
                        cyc += 4
                elif memop:
                    cyc += 9 + eac + 4 * w if (to_reg or aop == 7) else 16 + eac + 8 * w
                else:
                    cyc += 3
            if aop != 7:
                if to_reg:
                    set_reg(regs, r8, reg, w, r)
                else:
                    set_rm(regs, r8, mem, pf, xf, ctl, eff, sb, off, w, r)
            regs[IP] = ip
        elif op < 0x40 and (op & 7) < 6:     # ALU AL|AX, imm
            aop = op >> 3
            w = op & 1
            if w:
                b = fetch16(mem, csb, ip)
                ip = (ip + 2) & 0xFFFF
                a = np.int64(regs[AX])
            else:
                b = np.int64(mem[(csb + ip) & M20])
                ip = (ip + 1) & 0xFFFF
                a = np.int64(r8[0])
            r, fl = alu(aop, a, b, np.int64(regs[FLAGS]), w)
            if aop != 7:
                if w:
                    regs[AX] = r
                else:
                    r8[0] = r
            regs[FLAGS] = fl
            cyc += 4
            regs[IP] = ip
        elif op >= 0x40 and op < 0x50:       # INC/DEC reg16
            r = op & 7
            v, fl = incdec(np.int64(regs[r]), (op >> 3) & 1, np.int64(regs[FLAGS]), 1)
            regs[r] = v
            regs[FLAGS] = fl
            regs[IP] = ip
            cyc += 2
        elif op >= 0x50 and op < 0x60:       # PUSH/POP reg16
            r = op & 7
            regs[IP] = ip
            if op < 0x58:
                # PUSH SP pushes the value after the decrement (8088)
                sp = (np.int64(regs[SP]) - 2) & 0xFFFF
                regs[SP] = sp
                ww(regs, mem, pf, xf, ctl, eff, np.int64(regs[SS]) << 4, sp, np.int64(regs[r]))
                cyc += 15
            else:
                regs[r] = pop(regs, mem, pf, xf, ctl, eff)
                cyc += 12
        elif op >= 0x60 and op < 0x80:       # Jcc (60-6F alias 70-7F on the 8088)
            d = np.int64(mem[(csb + ip) & M20])
            ip = (ip + 1) & 0xFFFF
            if cond(op & 0xF, np.int64(regs[FLAGS])):
                if d & 0x80:
                    d -= 256
                ip = (ip + d) & 0xFFFF
                cyc += 16
            else:
                cyc += 4
            regs[IP] = ip
        elif op >= 0xB0 and op < 0xC0:       # MOV reg, imm
            if op & 8:
                regs[op & 7] = fetch16(mem, csb, ip)
                ip = (ip + 2) & 0xFFFF
            else:
                r8[r8i(op & 7)] = mem[(csb + ip) & M20]
                ip = (ip + 1) & 0xFFFF
            regs[IP] = ip
            cyc += 4
        elif op == 0x90:
            regs[IP] = ip
            cyc += 3
        elif op >= 0xE0 and op <= 0xE3:      # LOOPNE LOOPE LOOP JCXZ
            d = np.int64(mem[(csb + ip) & M20])
            ip = (ip + 1) & 0xFFFF
            if d & 0x80:
                d -= 256
            fl = np.int64(regs[FLAGS])
            if op == 0xE3:
                take = regs[CX] == 0
                cyc += 18 if take else 6
            else:
                cx = (np.int64(regs[CX]) - 1) & 0xFFFF
                regs[CX] = cx
                if op == 0xE2:
                    take = cx != 0
                    cyc += 17 if take else 5
                elif op == 0xE1:
                    take = cx != 0 and (fl & F_ZF) != 0
                    cyc += 18 if take else 6
                else:
                    take = cx != 0 and (fl & F_ZF) == 0
                    cyc += 19 if take else 5
            regs[IP] = (ip + d) & 0xFFFF if take else ip
        elif op == 0xE8:                     # CALL near
            d = fetch16(mem, csb, ip)
            ip = (ip + 2) & 0xFFFF
            push(regs, mem, pf, xf, ctl, eff, ip)
            regs[IP] = (ip + d) & 0xFFFF
            cyc += 23
        elif op == 0xC3:                     # RET near
            regs[IP] = pop(regs, mem, pf, xf, ctl, eff)
            cyc += 20
        elif op == 0xEB:                     # JMP short
            d = np.int64(mem[(csb + ip) & M20])
            if d & 0x80:
                d -= 256
            regs[IP] = (ip + 1 + d) & 0xFFFF
            cyc += 15
        elif (op >= 0xA4 and op <= 0xA7) or (op >= 0xAA and op <= 0xAF):
            resumed = ctl[C_REP_RESUME] != 0
            if resumed:
                ctl[C_REP_RESUME] = 0
                cyc = 0          # the prefixes were paid for before the budget exit
            cyc += op_string(np.int64(ctl.ctypes.data), op, ip, sov, rep,
                             ip0, last_prefix_ip, cycles + cyc, deadline, resumed)
        elif op == 0xF6 or op == 0xF7:
            cyc += op_group3(np.int64(ctl.ctypes.data), op, ip, csb, sov, rep, ip0)
        elif op == 0xFE or op == 0xFF:
            # INC/DEC/CALL/JMP/PUSH r/m: straight to their family (through
            # op_misc this was two calls, each passing the arrays on the stack)
            c, status = op_group45(np.int64(ctl.ctypes.data), op, ip, csb, sov)
            cyc += c
        else:
            # fast port reads see the cycle the instruction starts at, the same
            # clock a Python port handler sees after an exit
            c, status = op_out_of_line(np.int64(ctl.ctypes.data), op, ip, csb, sov, ip0,
                                       cycles)
            cyc += c
            if status == ST_IO_IN or status >= ST_FAULT:
                # not executed: IP stays on the instruction and Python is told
                regs[IP] = ip0
                if status == ST_IO_IN:
                    exit_reason = EXIT_IO_IN
                elif status == ST_FAULT:
                    exit_reason = EXIT_FAULT
                elif status == ST_INT_BREAK:
                    exit_reason = EXIT_INT_BREAK
                else:
                    # ST_STUCK: nothing but prefixes in the whole segment, stuck
                    # for good (see MAX_PREFIXES); the budget passes
                    cycles = deadline
                    exit_reason = EXIT_BUDGET
                break
        # ---------------- after the instruction ----------------
        cycles += cyc
        insns += 1
        if status != ST_OK or attention or tf or ctl[C_WATCH_KIND] != 0:
            if status == ST_INHIBIT:
                ctl[C_INHIBIT] = 1
                attention = True
            elif attention:
                # (an IN consumed its answer, an NMI was taken, the shadow passed)
                attention = (ctl[C_IO_READY] | ctl[C_NMI] | ctl[C_INTR] | ctl[C_HALTED]
                             | ctl[C_STEP] | ctl[C_INHIBIT]) != 0
            if tf and ctl[C_INHIBIT] == 0:
                cycles += interrupt_a(np.int64(ctl.ctypes.data), 1, np.int64(regs[IP]))
            if status == ST_IO_OUT:
                exit_reason = EXIT_IO_OUT
                break
            if status == ST_HALT:
                exit_reason = EXIT_HALT
                break
            if ctl[C_WATCH_KIND] != 0:
                ctl[C_WATCH_IP] = ip0
                ctl[C_WATCH_CS] = csb >> 4
                exit_reason = EXIT_WATCH
                break
            if ctl[C_STEP] > 0:
                ctl[C_STEP] -= 1
                if ctl[C_STEP] == 0:
                    exit_reason = EXIT_STEP
                    break
    ctl[C_CYCLES] = cycles
    ctl[C_INSTRUCTIONS] = insns
    ctl[C_EXIT] = exit_reason
    return exit_reason


@njit(**JIT)
def run_traced(regs, mem, pf, xf, ctl, eff, pk, pio, trc):
    """``run`` one instruction at a time, writing a trace record (ring
    ``trc``, int64[capacity, TRACE_WORDS]) for each instruction executed
    and for each wait of a halted CPU (``TRK_HLT``: the clock moved on to
    the next device event).  The machine adds the records of PIC interrupt
    entries (``TRK_DISPATCH``), which it makes itself.

    Used only while a trace is on: ``run`` itself carries no trace code, so
    an idle trace costs the common path nothing (a record call inside the
    big loop cost it about 10 %).  A record is kept when the instruction
    ran: not for exits before it (breakpoint, trap, IRQ, an IN waiting for
    Python), not for the resumed part of a REP string a slice paused, and
    not for a step that began with an NMI entry."""
    mode = ctl[C_TRACE]
    user_steps = ctl[C_STEP]          # > 0: the caller asked for that many instructions
    while True:
        csb = np.int64(regs[CS]) << 4
        ip = np.int64(regs[IP])
        n = ctl[C_TRACE_N]
        trace_fill(regs, mem, ctl, trc, n % trc.shape[0], mode, csb, ip, ctl[C_CYCLES])
        insns = ctl[C_INSTRUCTIONS]
        waits = ctl[C_HLT_WAITS]
        resumed = ctl[C_REP_RESUME] != 0
        ctl[C_STEP] = 1
        reason = run(regs, mem, pf, xf, ctl, eff, pk, pio)
        ran = ctl[C_INSTRUCTIONS] - insns
        if ran == 1 and not resumed:
            ctl[C_TRACE_N] = n + 1          # the record stands
        elif ran == 0 and ctl[C_HLT_WAITS] != waits:
            trc[n % trc.shape[0], TR_KIND] = TRK_HLT
            ctl[C_TRACE_N] = n + 1          # a wait: the record stands as one
        if ran >= 1 and user_steps > 0:
            user_steps -= 1
            if user_steps == 0:
                break
        if reason != EXIT_STEP:
            break
    ctl[C_STEP] = user_steps
    return reason
