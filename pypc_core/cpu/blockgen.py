"""Guest code to LLVM IR: the block translator's code generator.

A *region* is the guest code reachable from one entry CS:IP through
instructions this generator knows (straight-line code, the branches between
them, loops), up to a size limit, all in one code segment.  It becomes one
LLVM function that any of its instructions can be entered at::

    int64 region(int64 regs, int64 mem, int64 pf, int64 xf, int64 ctl,
                 int64 cycles, int64 deadline, int64 entry_ip)

(addresses of the core's arrays, the cycle counter, the run's deadline and
the IP to start at).  It returns the new cycle count and leaves the number of
instructions it executed in ``ctl[C_BLOCK_INSNS]``: 0 when it executed none
(CS is not the segment it was made for, or its entry check failed at once),
-1 when its code bytes changed since translation (the caller drops it).

Exactly the interpreter's machine: every instruction executes only where
the interpreter would have executed it with nothing else happening in
between, so before each instruction the region makes the interpreter's own
instruction-boundary checks that can fail inside it (the cycle deadline, an
execution breakpoint or firmware trap at the address) and, before an
instruction touches memory, the page checks of the interpreter's fast path
(a page with a handler, a watch, an alias ring, read-only or effect
recording sends the instruction to the interpreter).  Every such exit leaves
the registers, flags, IP, cycles and instruction count of an instruction
boundary.  The checks the region need not repeat hold for its whole run:
nothing it executes changes IF, TF, the segment registers, the interrupt
lines or the shadow after MOV SS (those instructions end a region), and the
caller enters only where the interpreter would have gone on without a stop.
A write into the region's own code ends the region after that instruction,
and the entry check compares the code bytes with the ones translated, so the
interpreter sees self-modifying code as it always did.

Registers live in LLVM values across the region (allocas that LLVM's
mem2reg turns into SSA), flags are computed as full FLAGS words and LLVM's
optimiser keeps only the bits something reads (a branch, an exit).
"""

from . import irtext as ir

from . import state as S

M20 = 0xFFFFF
ARITH = S.F_CF | S.F_PF | S.F_AF | S.F_ZF | S.F_SF | S.F_OF
PG_RECORD = 0x08
PG_SLOW_READ = S.PG_WATCH_R | PG_RECORD | S.PG_HANDLER
MAX_REGION_INSNS = 128

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
# the arrays come as pointers (the C ABI passes them like the int64s the
# core's call_region hands over) marked noalias: a store into guest memory
# never changes the registers, page flags or control words under LLVM's feet
REGION_TYPE = ir.FunctionType(I64, [I16.as_pointer(), I8.as_pointer(), I64.as_pointer(),
                                    I8.as_pointer(), I64.as_pointer(), I64, I64, I64])


class Untranslatable(Exception):
    """The instruction at this address is left to the interpreter."""


# ---------------------------------------------------------------------------
# decoding
# ---------------------------------------------------------------------------

class Insn:
    """One decoded instruction of a region."""

    __slots__ = ("ip", "length", "op", "prefixes", "sov", "w", "mod", "reg", "rm",
                 "disp", "eac", "imm", "succ", "kind")

    def __init__(self, ip):
        self.ip = ip
        self.prefixes = 0
        self.sov = None          # segment override: index 8..11 or None
        self.mod = self.reg = self.rm = None
        self.disp = 0
        self.eac = 0
        self.imm = 0
        self.w = 0
        self.succ = ()           # static successor IPs inside the segment
        self.kind = None

    @property
    def memop(self):
        return self.mod is not None and self.mod != 3

    @property
    def next_ip(self):
        return (self.ip + self.length) & 0xFFFF


# EA cycles by r/m (mod 0..2; rm 6 with mod 0 is the direct address)
_EA_CYCLES = (7, 8, 8, 7, 5, 5, 5, 5)


def decode(read, csb, ip):
    """Decode the instruction at CS:ip (``read(linear)`` gives a byte);
    raises Untranslatable for what the generator leaves to the interpreter
    (and for an instruction whose bytes wrap at the end of the segment)."""
    ins = Insn(ip)
    pos = ip

    def byte():
        nonlocal pos
        if pos > 0xFFFF:
            raise Untranslatable("wraps at the end of the segment")
        v = read((csb + pos) & M20)
        pos += 1
        return v

    def word():
        lo = byte()
        return lo | (byte() << 8)

    while True:
        op = byte()
        if op in (0x26, 0x2E, 0x36, 0x3E):
            ins.sov = 8 + ((op >> 3) & 3)
        elif op in (0xF0, 0xF1):
            pass
        elif op in (0xF2, 0xF3):
            raise Untranslatable("REP prefix")
        else:
            break
        ins.prefixes += 1
        if ins.prefixes > 8:
            raise Untranslatable("long prefix run")
    ins.op = op

    def modrm():
        m = byte()
        ins.mod, ins.reg, ins.rm = m >> 6, (m >> 3) & 7, m & 7
        if ins.mod == 3:
            return
        if ins.mod == 0 and ins.rm == 6:
            ins.disp = word()
            ins.eac = 6
            return
        ins.eac = _EA_CYCLES[ins.rm]
        if ins.mod == 1:
            d = byte()
            ins.disp = d - 256 if d & 0x80 else d
            ins.eac += 4
        elif ins.mod == 2:
            ins.disp = word()
            ins.eac += 4

    def rel8():
        d = byte()
        return d - 256 if d & 0x80 else d

    if (op < 0x40 and (op & 7) < 4) or (0x80 <= op <= 0x8B and not 0x86 <= op <= 0x87):
        ins.kind = "modrm_alu"
        ins.w = op & 1
        modrm()
        if op == 0x81:
            ins.imm = word()
        elif 0x80 <= op <= 0x83:
            ins.imm = byte()
            if op == 0x83 and ins.imm & 0x80:
                ins.imm |= 0xFF00
    elif op < 0x40 and (op & 7) < 6:
        ins.kind = "alu_acc"
        ins.w = op & 1
        ins.imm = word() if ins.w else byte()
    elif 0x40 <= op < 0x50:
        ins.kind = "incdec16"
    elif 0x50 <= op < 0x60:
        ins.kind = "pushpop16"
    elif 0x60 <= op < 0x80:
        ins.kind = "jcc"
        ins.imm = rel8()
    elif 0xB0 <= op < 0xC0:
        ins.kind = "mov_imm"
        ins.w = (op >> 3) & 1
        ins.imm = word() if ins.w else byte()
    elif op == 0x90:
        ins.kind = "nop"
    elif 0x91 <= op <= 0x97:
        ins.kind = "xchg_ax"
    elif op == 0x98 or op == 0x99:
        ins.kind = "cbw_cwd"
    elif 0xE0 <= op <= 0xE3:
        ins.kind = "loop"
        ins.imm = rel8()
    elif op == 0xE8:
        ins.kind = "call"
        ins.imm = word()
    elif op == 0xC3:
        ins.kind = "ret"
    elif op == 0xEB:
        ins.kind = "jmp"
        ins.imm = rel8()
    elif op == 0xE9:
        ins.kind = "jmp"
        ins.imm = word()
    elif op == 0x8D:
        modrm()
        if ins.mod == 3:
            raise Untranslatable("LEA of a register")
        ins.kind = "lea"
    elif op == 0x8C:
        modrm()
        ins.kind = "mov_from_sreg"
        ins.w = 1
    elif 0xA0 <= op <= 0xA3:
        ins.kind = "mov_moffs"
        ins.w = op & 1
        ins.disp = word()
    elif op == 0xA8 or op == 0xA9:
        ins.kind = "test_acc"
        ins.w = op & 1
        ins.imm = word() if ins.w else byte()
    elif op == 0xC6 or op == 0xC7:
        ins.kind = "mov_rm_imm"
        ins.w = op & 1
        modrm()
        ins.imm = word() if ins.w else byte()
    elif op in (0xF5, 0xF8, 0xF9, 0xFC, 0xFD):
        ins.kind = "flag_op"
    elif 0xD0 <= op <= 0xD3:
        ins.kind = "shift"
        ins.w = op & 1
        modrm()
    elif op == 0xF6 or op == 0xF7:
        ins.w = op & 1
        modrm()
        if ins.reg > 3:
            ins.kind = "muldiv"           # through the interpreter's arithmetic (arith_calls.py)
        else:
            ins.kind = "group3"
            if ins.reg <= 1:
                ins.imm = word() if ins.w else byte()
    elif op == 0xFE or op == 0xFF:
        ins.w = op & 1
        modrm()
        if ins.reg <= 1:
            ins.kind = "incdec_rm"
        elif op == 0xFF and ins.reg in (2, 4):
            ins.kind = "call_jmp_indirect"
        else:
            raise Untranslatable("FE/FF /%d" % ins.reg)
    elif op == 0x86 or op == 0x87:
        ins.kind = "xchg_rm"
        ins.w = op & 1
        modrm()
    elif op in (0xA4, 0xA5, 0xA6, 0xA7, 0xAA, 0xAB, 0xAC, 0xAD, 0xAE, 0xAF):
        ins.kind = "string"
        ins.w = op & 1
    elif op == 0xD7:
        ins.kind = "xlat"
    else:
        raise Untranslatable("opcode %02Xh" % op)
    ins.length = pos - ip
    nxt = ins.next_ip
    if ins.kind in ("jcc", "loop"):
        ins.succ = (nxt, (nxt + ins.imm) & 0xFFFF)
    elif ins.kind == "jmp":
        ins.succ = ((nxt + ins.imm) & 0xFFFF,)
    elif ins.kind == "call":
        ins.succ = ((nxt + ins.imm) & 0xFFFF,)
    elif ins.kind in ("ret", "call_jmp_indirect"):
        ins.succ = ()
    else:
        ins.succ = (nxt,)
    return ins


_BRANCHES = ("jcc", "loop", "jmp", "call", "ret", "call_jmp_indirect")


def static_cycles(ins):
    """The cycles of ``ins`` where they do not depend on the run (all but a
    taken or not-taken branch), prefixes included; None for a branch."""
    if ins.kind in ("jcc", "loop") or (ins.kind == "shift" and ins.op & 2):
        return None
    return _CYCLES[ins.kind](ins) + 2 * ins.prefixes


def _modrm_alu_cycles(ins):
    op, w, eac, memop = ins.op, ins.w, ins.eac, ins.memop
    if 0x88 <= op <= 0x8B:
        return (8 + eac + 4 * w if op & 2 else 9 + eac + 4 * w) if memop else 2
    if 0x84 <= op <= 0x85:
        return 9 + eac + 4 * w if memop else 3
    if op >= 0x80:
        return (10 + eac + 4 * w if ins.reg == 7 else 17 + eac + 8 * w) if memop else 4
    if memop:
        return 9 + eac + 4 * w if (op & 2 or op >> 3 == 7) else 16 + eac + 8 * w
    return 3


_CYCLES = {
    "modrm_alu": _modrm_alu_cycles,
    "alu_acc": lambda ins: 4,
    "incdec16": lambda ins: 2,
    "pushpop16": lambda ins: 15 if ins.op < 0x58 else 12,
    "mov_imm": lambda ins: 4,
    "nop": lambda ins: 3,
    "xchg_ax": lambda ins: 3,
    "cbw_cwd": lambda ins: 2 if ins.op == 0x98 else 5,
    "call": lambda ins: 23,
    "ret": lambda ins: 20,
    "jmp": lambda ins: 15,
    "lea": lambda ins: 2 + ins.eac,
    "mov_from_sreg": lambda ins: 13 + ins.eac if ins.memop else 2,
    "mov_moffs": lambda ins: 10 + 4 * ins.w,
    "test_acc": lambda ins: 4,
    "mov_rm_imm": lambda ins: 10 + ins.eac + 4 * ins.w if ins.memop else 4,
    "flag_op": lambda ins: 2,
    "shift": lambda ins: 15 + ins.eac + 8 * ins.w if ins.memop else 2,
    "group3": lambda ins: ((11 + ins.eac if ins.memop else 5) if ins.reg <= 1
                           else (16 + ins.eac + 8 * ins.w if ins.memop else 3)),
    "incdec_rm": lambda ins: 15 + ins.eac + 8 * ins.w if ins.memop else 3,
    "muldiv": lambda ins: _MULDIV_CYCLES[ins.reg][ins.w] + (
        ins.eac + 4 + 4 * ins.w if ins.memop else 0),
    "call_jmp_indirect": lambda ins: ((29 + ins.eac if ins.memop else 20) if ins.reg == 2
                                      else (18 + ins.eac if ins.memop else 11)),
    "xchg_rm": lambda ins: 17 + ins.eac + 8 * ins.w if ins.memop else 4,
    "string": lambda ins: _STRING_CYCLES[(ins.op >> 1) & 7][ins.w],
    "xlat": lambda ins: 11,
}

# MUL, IMUL, DIV, IDIV (F6/F7 /4../7): (byte, word), the interpreter's
_MULDIV_CYCLES = {4: (73, 124), 5: (80, 134), 6: (90, 162), 7: (112, 184)}
# non-repeated string instructions by kind ((op >> 1) & 7): (byte, word)
_STRING_CYCLES = {2: (18, 26), 3: (22, 30), 5: (11, 15), 6: (12, 16), 7: (15, 19)}


def segments(insns):
    """{ip: cycles} for the straight-line run of instructions from each ip
    to the end of its segment, the last instruction's own cycles left out
    (a segment ends at a branch or where a branch target starts the next);
    and the set of leaders (the IPs a segment starts at)."""
    leaders = set()
    for ins in insns.values():
        if ins.kind in _BRANCHES:
            leaders.update(ins.succ)
    for ins in insns.values():
        if static_cycles(ins) is None and ins.kind not in _BRANCHES:
            leaders.add(ins.next_ip)        # its cost is known only when it runs
    rest = {}
    for ip in insns:
        total, cur = 0, insns[ip]
        while True:
            if cur.kind in _BRANCHES or static_cycles(cur) is None:
                break
            nxt = insns.get(cur.next_ip)
            if nxt is None or nxt.ip in leaders:
                break
            total += static_cycles(cur)
            cur = nxt
        rest[ip] = total
    return rest, leaders


_TOUCHES_MEMORY = ("pushpop16", "call", "mov_moffs", "string", "xlat", "call_jmp_indirect")


def entry_points(insns, leaders, first):
    """The IPs a region can be entered at: its first instruction, the
    leaders (branch targets, the instruction after a branch) and the
    instruction after each one that may leave for the interpreter on a
    memory access (where the core comes back after running that one).
    Every entry point costs the optimiser a merge of every register, so a
    region is not entered everywhere; the core interprets up to the next
    entry point instead."""
    out = {first} | (leaders & set(insns))
    for ins in insns.values():
        if ins.memop or ins.kind in _TOUCHES_MEMORY:
            if ins.next_ip in insns:
                out.add(ins.next_ip)
    return sorted(out)


def has_loop(insns):
    """True when the region's own instructions form a cycle: a loop it runs
    natively, entered once.  (A loop through an instruction left to the
    interpreter, an INT say, leaves the region every time round.)"""
    state = {}                      # ip -> 1 on the DFS stack, 2 done
    for root in insns:
        if root in state:
            continue
        stack = [(root, iter(insns[root].succ))]
        state[root] = 1
        while stack:
            ip, it = stack[-1]
            for s in it:
                if s not in insns:
                    continue
                if state.get(s) == 1:
                    return True
                if s not in state:
                    state[s] = 1
                    stack.append((s, iter(insns[s].succ)))
                    break
            else:
                state[ip] = 2
                stack.pop()
    return False


def discover(read, cs, entry_ip, max_insns=MAX_REGION_INSNS):
    """The region from CS:entry_ip: {ip: Insn} in discovery order (breadth
    first over static successors), and the set of exit IPs (successors that
    are not in it).  Empty when the entry itself is untranslatable."""
    csb = cs << 4
    insns = {}
    exits = set()
    queue = [entry_ip]
    seen = {entry_ip}
    while queue:
        ip = queue.pop(0)
        if len(insns) >= max_insns:
            exits.add(ip)
            continue
        try:
            ins = decode(read, csb, ip)
        except Untranslatable:
            exits.add(ip)
            continue
        insns[ip] = ins
        for s in ins.succ:
            if s not in seen:
                seen.add(s)
                queue.append(s)
    # instructions must not overlap: a byte decoded twice (jumps into the
    # middle of an instruction) would make the code check ambiguous
    owner = {}
    for ip, ins in list(insns.items()):
        for k in range(ins.length):
            if ip + k in owner:
                raise Untranslatable("overlapping instructions")
            owner[ip + k] = ip
    return insns, exits


# ---------------------------------------------------------------------------
# code generation
# ---------------------------------------------------------------------------

# the arithmetic calls read and write nothing but their arguments and result
_PURE = "nounwind willreturn memory(none)"
# how their results are packed (arith_calls.py): part of the region cache's
# recipe, since a region's object code unpacks them
CALLS_ABI = 1


def _c32(v):
    return ir.Constant(I32, v)


def _c64(v):
    return ir.Constant(I64, v)


class RegionCompiler:
    """Emits one region as an LLVM function named ``name``."""

    def __init__(self, name, cs, insns, code_bytes):
        self.first = next(iter(insns))
        self.cs = cs
        self.csb = cs << 4
        self.insns = insns
        self.code_bytes = code_bytes          # [(linear, byte)] as translated
        self.module = ir.Module(name=name)
        self.fn = ir.Function(self.module, REGION_TYPE, name=name)
        self.fn.linkage = "external"
        for arg in self.fn.args[:5]:
            arg.add_attribute("noalias")
        (self.a_regs, self.a_mem, self.a_pf, self.a_xf, self.a_ctl,
         self.a_cycles, self.a_deadline, self.a_entry) = self.fn.args
        lo = min(a for a, _ in code_bytes)
        hi = max(a for a, _ in code_bytes) + 1
        self.code_lo, self.code_span = lo, hi - lo
        self._ctpop = self.module.declare_intrinsic("llvm.ctpop", [I32])

    # -- plumbing --------------------------------------------------------------
    def _ptr(self, b, addr, ty):
        return b.inttoptr(addr, ty.as_pointer())

    def _gep(self, b, base, index):
        return b.gep(base, [index], inbounds=True)

    def compile(self):
        fn = self.fn
        entry = self.entry = fn.append_basic_block("entry")
        b = ir.IRBuilder(entry)
        self.regs_p, self.mem_p, self.pf_p, self.xf_p, self.ctl_p = (
            self.a_regs, self.a_mem, self.a_pf, self.a_xf, self.a_ctl)
        self.r = [b.alloca(I32, name="r%d" % i) for i in range(8)]
        self.flags = b.alloca(I32, name="flags")
        self.cyc = b.alloca(I64, name="cyc")
        self.n = b.alloca(I64, name="n")
        self.ip_slot = b.alloca(I32, name="ip")
        self._exits = {}
        self._exit_dynamic = None
        self.dirty = set()            # registers some instruction writes
        self.flags_dirty = False
        b.store(self.a_cycles, self.cyc)
        b.store(_c64(0), self.n)
        self.rest, self.leaders = segments(self.insns)
        self.entries = entry_points(self.insns, self.leaders, self.first)
        self.bb_none = fn.append_basic_block("executed_none")
        self.bb_stale = fn.append_basic_block("stale")
        # CS, then the code bytes, then no breakpoint or trap anywhere in
        # the code (nothing can set one while the region runs: no Python
        # runs inside it), then the entry IP
        seg = lambda i: b.zext(b.load(self._gep(b, self.regs_p, _c32(i))), I64)
        cs_ok = b.icmp_unsigned("==", seg(S.CS), _c64(self.cs))
        bb_cs_ok = fn.append_basic_block("cs_ok")
        b.cbranch(cs_ok, bb_cs_ok, self.bb_none)
        b.position_at_end(bb_cs_ok)
        same = self._code_unchanged(b)
        bb_code_ok = fn.append_basic_block("code_ok")
        b.cbranch(same, bb_code_ok, self.bb_stale)
        b.position_at_end(bb_code_ok)
        armed = self._stops_armed(b)
        # an interrupt pending at entry: the caller entered in the shadow of
        # MOV SS / STI (it takes one otherwise), and the interrupt is due
        # after the first instruction; or TF set (a trap after each
        # instruction): leave that one to the interpreter
        intr = b.icmp_unsigned("!=", b.load(self._gep(b, self.ctl_p, _c32(S.C_INTR))), _c64(0))
        fl0 = b.zext(b.load(self._gep(b, self.regs_p, _c32(S.FLAGS))), I32)
        if_on = b.icmp_unsigned("!=", b.and_(fl0, _c32(S.F_IF)), _c32(0))
        nmi = b.icmp_unsigned("!=", b.load(self._gep(b, self.ctl_p, _c32(S.C_NMI))), _c64(0))
        tf_on = b.icmp_unsigned("!=", b.and_(fl0, _c32(S.F_TF)), _c32(0))
        armed = b.or_(armed, b.or_(b.or_(b.and_(intr, if_on), nmi), tf_on))
        bb_go = fn.append_basic_block("go")
        b.cbranch(armed, self.bb_none, bb_go)
        b.position_at_end(bb_go)
        for i in range(8):
            b.store(b.zext(b.load(self._gep(b, self.regs_p, _c32(i))), I32), self.r[i])
        b.store(b.zext(b.load(self._gep(b, self.regs_p, _c32(S.FLAGS))), I32), self.flags)
        self.segbase = {i: b.shl(seg(i), _c64(4)) for i in (S.ES, S.CS, S.SS, S.DS)}
        self.bb_insn = {ip: fn.append_basic_block("i%04x" % ip) for ip in self.insns}
        sw = b.switch(b.trunc(self.a_entry, I32), self.bb_none)
        for ip in self.entries:
            bb = self.bb_insn[ip]
            # entered here: the deadline must allow the rest of the segment
            stub = fn.append_basic_block("e%04x" % ip)
            sw.add_case(_c32(ip), stub)
            b.position_at_end(stub)
            late = b.icmp_signed(">=", b.add(self.a_cycles, _c64(self.rest[ip])), self.a_deadline)
            b.cbranch(late, self.bb_none, bb)
        b.position_at_end(self.bb_none)
        b.store(_c64(0), self._gep(b, self.ctl_p, _c32(S.C_BLOCK_INSNS)))
        b.ret(self.a_cycles)
        b.position_at_end(self.bb_stale)
        b.store(_c64(-1), self._gep(b, self.ctl_p, _c32(S.C_BLOCK_INSNS)))
        b.ret(self.a_cycles)
        for ip, ins in self.insns.items():
            b.position_at_end(self.bb_insn[ip])
            self._emit(b, ins)
        self._finish_exits(b)
        return self.module

    def _stops_armed(self, b):
        """i1: an execution breakpoint or trap flag on any code byte."""
        mask = S.XF_BREAKPOINT | S.XF_TRAP
        hit = None
        addrs = sorted(a for a, _ in self.code_bytes)
        i = 0
        while i < len(addrs):
            if i + 8 <= len(addrs) and addrs[i + 7] == addrs[i] + 7:
                p = b.bitcast(self._gep(b, self.xf_p, _c64(addrs[i])), I64.as_pointer())
                v = b.and_(b.load(p, align=1), _c64(int.from_bytes(bytes([mask] * 8), "little")))
                i += 8
            else:
                v = b.zext(b.and_(b.load(self._gep(b, self.xf_p, _c64(addrs[i]))),
                                  ir.Constant(I8, mask)), I64)
                i += 1
            hit = v if hit is None else b.or_(hit, v)
        return b.icmp_unsigned("!=", hit, _c64(0))

    def _code_unchanged(self, b):
        ok = ir.Constant(I1, 1)
        data = sorted(self.code_bytes)
        i = 0
        while i < len(data):
            # runs of consecutive addresses compare eight bytes at a time
            j = i
            while j + 1 < len(data) and data[j + 1][0] == data[j][0] + 1 and j + 1 - i < 8:
                j += 1
            n = j - i + 1
            if n == 8:
                val = 0
                for k in range(8):
                    val |= data[i + k][1] << (8 * k)
                p = b.bitcast(self._gep(b, self.mem_p, _c64(data[i][0])), I64.as_pointer())
                got = b.load(p, align=1)
                ok = b.and_(ok, b.icmp_unsigned("==", got, _c64(val)))
                i += 8
            else:
                got = b.load(self._gep(b, self.mem_p, _c64(data[i][0])))
                ok = b.and_(ok, b.icmp_unsigned("==", got, ir.Constant(I8, data[i][1])))
                i += 1
        return ok

    def _leave(self, b, ip_value):
        """Leave the region at an instruction boundary with IP ``ip_value``.
        Every exit to one IP shares a block, and the blocks are filled in
        at the end (``_finish_exits``), when it is known which registers the
        region writes: only those are stored back."""
        if isinstance(ip_value, int):
            block = self._exits.get(ip_value)
            if block is None:
                block = self._exits[ip_value] = self.fn.append_basic_block("x%04x" % ip_value)
            b.branch(block)
            return
        b.store(ip_value, self.ip_slot)
        if self._exit_dynamic is None:
            self._exit_dynamic = self.fn.append_basic_block("x_dynamic")
        b.branch(self._exit_dynamic)

    def _finish_exits(self, b):
        ends = [(blk, _c32(ip)) for ip, blk in self._exits.items()]
        if self._exit_dynamic is not None:
            ends.append((self._exit_dynamic, None))
        for block, ip in ends:
            b.position_at_end(block)
            for i in sorted(self.dirty):
                b.store(b.trunc(b.load(self.r[i]), I16), self._gep(b, self.regs_p, _c32(i)))
            if self.flags_dirty:
                b.store(b.trunc(b.load(self.flags), I16), self._gep(b, self.regs_p, _c32(S.FLAGS)))
            if ip is None:
                ip = b.load(self.ip_slot)
            b.store(b.trunc(ip, I16), self._gep(b, self.regs_p, _c32(S.IP)))
            b.store(b.load(self.n), self._gep(b, self.ctl_p, _c32(S.C_BLOCK_INSNS)))
            b.ret(b.load(self.cyc))

    def _exit_if(self, b, cond, ip, name):
        """If ``cond``: leave before the instruction at ``ip`` (nothing of it done)."""
        out = self.fn.append_basic_block(name + "_out")
        go = self.fn.append_basic_block(name + "_go")
        b.cbranch(cond, out, go)
        b.position_at_end(out)
        self._leave(b, ip)
        b.position_at_end(go)

    def _goto(self, b, ip_value, smc=None):
        """End of an instruction: continue at ``ip_value`` (a constant inside
        the region branches there; anything else leaves)."""
        if smc is not None:
            out = self.fn.append_basic_block("smc_out")
            go = self.fn.append_basic_block("smc_go")
            b.cbranch(smc, out, go)
            b.position_at_end(out)
            self._leave(b, ip_value)
            b.position_at_end(go)
        if isinstance(ip_value, int) and ip_value in self.bb_insn:
            b.branch(self.bb_insn[ip_value])
        else:
            self._leave(b, ip_value)

    def _set_flags(self, b, v):
        self.flags_dirty = True
        b.store(v, self.flags)

    # -- registers ---------------------------------------------------------------
    def get16(self, b, r):
        return b.load(self.r[r])

    def set16(self, b, r, v):
        self.dirty.add(r)
        b.store(b.and_(v, _c32(0xFFFF)), self.r[r])

    def get8(self, b, r):
        v = b.load(self.r[r & 3])
        if r >= 4:
            v = b.lshr(v, _c32(8))
        return b.and_(v, _c32(0xFF))

    def set8(self, b, r, v):
        self.dirty.add(r & 3)
        old = b.load(self.r[r & 3])
        v = b.and_(v, _c32(0xFF))
        if r >= 4:
            new = b.or_(b.and_(old, _c32(0x00FF)), b.shl(v, _c32(8)))
        else:
            new = b.or_(b.and_(old, _c32(0xFF00)), v)
        b.store(new, self.r[r & 3])

    def get_reg(self, b, r, w):
        return self.get16(b, r) if w else self.get8(b, r)

    def set_reg(self, b, r, w, v):
        if w:
            self.set16(b, r, v)
        else:
            self.set8(b, r, v)

    # -- memory ------------------------------------------------------------------
    def ea(self, b, ins):
        """(segment base i64, offset i32) of a memory operand."""
        rm, mod = ins.rm, ins.mod
        ss_default = False
        if mod == 0 and rm == 6:
            off = _c32(ins.disp)
        else:
            base = {0: (S.BX, S.SI), 1: (S.BX, S.DI), 2: (S.BP, S.SI), 3: (S.BP, S.DI),
                    4: (S.SI,), 5: (S.DI,), 6: (S.BP,), 7: (S.BX,)}[rm]
            ss_default = rm in (2, 3, 6)
            off = self.get16(b, base[0])
            for r in base[1:]:
                off = b.add(off, self.get16(b, r))
            if ins.disp:
                off = b.add(off, _c32(ins.disp & 0xFFFF))
        off = b.and_(off, _c32(0xFFFF))
        if ins.sov is not None:
            sb = self.segbase[ins.sov]
        else:
            sb = self.segbase[S.SS if ss_default else S.DS]
        return sb, off

    def lin(self, b, sb, off, plus=0):
        if plus:
            off = b.and_(b.add(off, _c32(plus)), _c32(0xFFFF))
        return b.and_(b.add(sb, b.zext(off, I64)), _c64(M20))

    def _page_flags(self, b, a):
        return b.load(self._gep(b, self.pf_p, b.lshr(a, _c64(12))))

    def check(self, b, ins, reads=(), writes=()):
        """Leave before ``ins`` unless every byte address in ``reads`` is on
        a page the interpreter reads directly and every one in ``writes`` on
        a page it writes directly (no flags at all)."""
        bad = ir.Constant(I1, 0)
        for a in reads:
            bad = b.or_(bad, b.icmp_unsigned("!=", b.and_(self._page_flags(b, a),
                                                           _c64(PG_SLOW_READ)), _c64(0)))
        for a in writes:
            bad = b.or_(bad, b.icmp_unsigned("!=", self._page_flags(b, a), _c64(0)))
        if reads or writes:
            self._exit_if(b, bad, ins.ip, "mem%04x" % ins.ip)

    def load8(self, b, a):
        return b.zext(b.load(self._gep(b, self.mem_p, a)), I32)

    def store8(self, b, a, v):
        b.store(b.trunc(v, I8), self._gep(b, self.mem_p, a))

    def in_code(self, b, a):
        return b.icmp_unsigned("<", b.sub(a, _c64(self.code_lo)), _c64(self.code_span))

    def mem_operand(self, b, ins, w):
        """Byte addresses of a memory operand: [a0] or [a0, a1]."""
        sb, off = self.ea(b, ins)
        return self.mem_addrs(b, sb, off, w)

    def mem_addrs(self, b, sb, off, w):
        a0 = self.lin(b, sb, off)
        if not w:
            return [a0]
        return [a0, self.lin(b, sb, off, 1)]

    def read_mem(self, b, addrs):
        v = self.load8(b, addrs[0])
        if len(addrs) == 2:
            v = b.or_(v, b.shl(self.load8(b, addrs[1]), _c32(8)))
        return v

    def write_mem(self, b, addrs, v):
        """Store; returns the i1 'wrote into the region's own code'."""
        self.store8(b, addrs[0], v)
        smc = self.in_code(b, addrs[0])
        if len(addrs) == 2:
            self.store8(b, addrs[1], b.lshr(v, _c32(8)))
            smc = b.or_(smc, self.in_code(b, addrs[1]))
        return smc

    # -- flags -------------------------------------------------------------------
    def szp(self, b, r, w):
        """PF, ZF, SF of result r (i32, already masked to the width)."""
        par = b.and_(b.call(self._ctpop, [b.and_(r, _c32(0xFF))]), _c32(1))
        f = b.select(b.icmp_unsigned("==", par, _c32(0)), _c32(S.F_PF), _c32(0))
        sgn = 0x8000 if w else 0x80
        f = b.or_(f, b.select(b.icmp_unsigned("!=", b.and_(r, _c32(sgn)), _c32(0)),
                              _c32(S.F_SF), _c32(0)))
        f = b.or_(f, b.select(b.icmp_unsigned("==", r, _c32(0)), _c32(S.F_ZF), _c32(0)))
        return f

    def alu(self, b, op, x, y, w):
        """The eight ALU operations on i32 values of the width; returns the
        masked result and stores the new flags."""
        mask = 0xFFFF if w else 0xFF
        sgn = 0x8000 if w else 0x80
        fl = b.load(self.flags)
        keep = b.and_(fl, _c32(~ARITH & 0xFFFF))
        nz = lambda v: b.icmp_unsigned("!=", v, _c32(0))
        if op in (0, 2):
            r = b.add(x, y)
            if op == 2:
                r = b.add(r, b.and_(fl, _c32(S.F_CF)))
            rm = b.and_(r, _c32(mask))
            f = self.szp(b, rm, w)
            f = b.or_(f, b.select(b.icmp_signed(">", r, _c32(mask)), _c32(S.F_CF), _c32(0)))
            f = b.or_(f, b.select(nz(b.and_(b.and_(b.xor(r, x), b.xor(r, y)), _c32(sgn))),
                                  _c32(S.F_OF), _c32(0)))
            f = b.or_(f, b.select(nz(b.and_(b.xor(b.xor(x, y), r), _c32(0x10))),
                                  _c32(S.F_AF), _c32(0)))
        elif op in (3, 5, 7):
            r = b.sub(x, y)
            if op == 3:
                r = b.sub(r, b.and_(fl, _c32(S.F_CF)))
            rm = b.and_(r, _c32(mask))
            f = self.szp(b, rm, w)
            f = b.or_(f, b.select(b.icmp_signed("<", r, _c32(0)), _c32(S.F_CF), _c32(0)))
            f = b.or_(f, b.select(nz(b.and_(b.and_(b.xor(x, y), b.xor(x, r)), _c32(sgn))),
                                  _c32(S.F_OF), _c32(0)))
            f = b.or_(f, b.select(nz(b.and_(b.xor(b.xor(x, y), r), _c32(0x10))),
                                  _c32(S.F_AF), _c32(0)))
        else:
            rm = {1: b.or_, 4: b.and_, 6: b.xor}[op](x, y)
            f = self.szp(b, rm, w)
        self._set_flags(b, b.or_(keep, f))
        return rm

    def incdec(self, b, v, dec, w):
        mask = 0xFFFF if w else 0xFF
        sgn = 0x8000 if w else 0x80
        fl = b.load(self.flags)
        keep = b.and_(fl, _c32(~(ARITH & ~S.F_CF) & 0xFFFF))
        if dec:
            r = b.and_(b.sub(v, _c32(1)), _c32(mask))
            f = self.szp(b, r, w)
            f = b.or_(f, b.select(b.icmp_unsigned("==", v, _c32(sgn)), _c32(S.F_OF), _c32(0)))
            f = b.or_(f, b.select(b.icmp_unsigned("==", b.and_(v, _c32(0xF)), _c32(0)),
                                  _c32(S.F_AF), _c32(0)))
        else:
            r = b.and_(b.add(v, _c32(1)), _c32(mask))
            f = self.szp(b, r, w)
            f = b.or_(f, b.select(b.icmp_unsigned("==", r, _c32(sgn)), _c32(S.F_OF), _c32(0)))
            f = b.or_(f, b.select(b.icmp_unsigned("==", b.and_(r, _c32(0xF)), _c32(0)),
                                  _c32(S.F_AF), _c32(0)))
        self._set_flags(b, b.or_(keep, f))
        return r

    def cond(self, b, cc):
        fl = b.load(self.flags)
        bit = lambda m: b.icmp_unsigned("!=", b.and_(fl, _c32(m)), _c32(0))
        c = cc >> 1
        if c == 0:
            t = bit(S.F_OF)
        elif c == 1:
            t = bit(S.F_CF)
        elif c == 2:
            t = bit(S.F_ZF)
        elif c == 3:
            t = bit(S.F_CF | S.F_ZF)
        elif c == 4:
            t = bit(S.F_SF)
        elif c == 5:
            t = bit(S.F_PF)
        elif c == 6:
            t = b.xor(bit(S.F_SF), bit(S.F_OF))
        else:
            t = b.or_(bit(S.F_ZF), b.xor(bit(S.F_SF), bit(S.F_OF)))
        if cc & 1:
            t = b.not_(t)
        return t

    # -- one instruction -----------------------------------------------------------
    def _emit(self, b, ins):
        ip = ins.ip
        if ip in self.leaders:
            # the interpreter's deadline check at every boundary of the
            # segment starting here, made once: if one of them would stop,
            # the interpreter runs the segment instead
            late = b.icmp_signed(">=", b.add(b.load(self.cyc), _c64(self.rest[ip])),
                                 self.a_deadline)
            self._exit_if(b, late, ip, "d%04x" % ip)
        cycles, nxt, smc = getattr(self, "_k_" + ins.kind)(b, ins)
        if isinstance(cycles, int):
            cycles += 2 * ins.prefixes
            assert cycles == static_cycles(ins), (ins.kind, hex(ins.op))
        else:
            cycles = b.add(cycles, _c64(2 * ins.prefixes))
        b.store(b.add(b.load(self.cyc), cycles if isinstance(cycles, ir.Value) else _c64(cycles)),
                self.cyc)
        b.store(b.add(b.load(self.n), _c64(1)), self.n)
        if isinstance(nxt, tuple):           # (condition, taken ip, not-taken ip)
            cnd, t_ip, f_ip = nxt
            bt = self.fn.append_basic_block("t%04x" % ip)
            bf = self.fn.append_basic_block("f%04x" % ip)
            b.cbranch(cnd, bt, bf)
            b.position_at_end(bt)
            self._goto(b, t_ip)
            b.position_at_end(bf)
            self._goto(b, f_ip)
        else:
            self._goto(b, nxt, smc)

    # each returns (cycles, next ip | (cond, taken, not taken), smc i1 or None)

    def _k_modrm_alu(self, b, ins):
        op, w = ins.op, ins.w
        memop = ins.memop
        eac = ins.eac
        if op < 0x40:
            aop, to_reg = op >> 3, (op & 2) != 0
        elif op <= 0x83:
            aop, to_reg = ins.reg, False
        elif op <= 0x85:
            aop, to_reg = 4, False
        else:
            aop, to_reg = 8, (op & 2) != 0
        test = 0x84 <= op <= 0x85
        stores = not (aop == 7 or test or (aop == 8 and to_reg))
        addrs = None
        if memop:
            addrs = self.mem_operand(b, ins, w)
            needs_read = aop != 8 or to_reg
            writes = addrs if (stores and not to_reg) else ()
            self.check(b, ins, reads=addrs if needs_read and not writes else (), writes=writes)
        if 0x80 <= op <= 0x83:
            src = _c32(ins.imm)
        elif aop == 8 and to_reg:
            src = None
        else:
            src = self.get_reg(b, ins.reg, w)
        rmv = None
        if aop != 8 or to_reg:
            rmv = self.read_mem(b, addrs) if memop else self.get_reg(b, ins.rm, w)
        if aop == 8:
            r = rmv if to_reg else src
            cyc = (8 + eac + 4 * w if to_reg else 9 + eac + 4 * w) if memop else 2
        else:
            r = self.alu(b, aop, src, rmv, w) if to_reg else self.alu(b, aop, rmv, src, w)
            if test:
                cyc = 9 + eac + 4 * w if memop else 3
            elif op >= 0x80:
                cyc = (10 + eac + 4 * w if aop == 7 else 17 + eac + 8 * w) if memop else 4
            elif memop:
                cyc = 9 + eac + 4 * w if (to_reg or aop == 7) else 16 + eac + 8 * w
            else:
                cyc = 3
        smc = None
        if not (aop == 7 or test):
            if to_reg:
                self.set_reg(b, ins.reg, w, r)
            elif memop:
                smc = self.write_mem(b, addrs, r)
            else:
                self.set_reg(b, ins.rm, w, r)
        return cyc, ins.next_ip, smc

    def _k_alu_acc(self, b, ins):
        aop, w = ins.op >> 3, ins.w
        a = self.get_reg(b, 0, w)
        r = self.alu(b, aop, a, _c32(ins.imm), w)
        if aop != 7:
            self.set_reg(b, 0, w, r)
        return 4, ins.next_ip, None

    def _k_incdec16(self, b, ins):
        r = ins.op & 7
        self.set16(b, r, self.incdec(b, self.get16(b, r), (ins.op >> 3) & 1, 1))
        return 2, ins.next_ip, None

    def _push_addrs(self, b):
        sp = b.and_(b.sub(self.get16(b, S.SP), _c32(2)), _c32(0xFFFF))
        return sp, self.mem_addrs(b, self.segbase[S.SS], sp, 1)

    def _k_pushpop16(self, b, ins):
        r = ins.op & 7
        if ins.op < 0x58:
            sp, addrs = self._push_addrs(b)
            self.check(b, ins, writes=addrs)
            self.set16(b, S.SP, sp)
            smc = self.write_mem(b, addrs, self.get16(b, r))   # PUSH SP: the new SP
            return 15, ins.next_ip, smc
        sp = self.get16(b, S.SP)
        addrs = self.mem_addrs(b, self.segbase[S.SS], sp, 1)
        self.check(b, ins, reads=addrs)
        v = self.read_mem(b, addrs)
        self.set16(b, S.SP, b.add(sp, _c32(2)))
        self.set16(b, r, v)
        return 12, ins.next_ip, None

    def _k_jcc(self, b, ins):
        c = self.cond(b, ins.op & 0xF)
        cyc = b.select(c, _c64(16), _c64(4))
        return cyc, (c, ins.succ[1], ins.succ[0]), None

    def _k_mov_imm(self, b, ins):
        self.set_reg(b, ins.op & 7, ins.w, _c32(ins.imm))
        return 4, ins.next_ip, None

    def _k_nop(self, b, ins):
        return 3, ins.next_ip, None

    def _k_xchg_ax(self, b, ins):
        r = ins.op & 7
        t = self.get16(b, r)
        self.set16(b, r, self.get16(b, S.AX))
        self.set16(b, S.AX, t)
        return 3, ins.next_ip, None

    def _k_cbw_cwd(self, b, ins):
        ax = self.get16(b, S.AX)
        if ins.op == 0x98:
            al = b.and_(ax, _c32(0xFF))
            neg = b.icmp_unsigned("!=", b.and_(al, _c32(0x80)), _c32(0))
            self.set16(b, S.AX, b.select(neg, b.or_(al, _c32(0xFF00)), al))
            return 2, ins.next_ip, None
        neg = b.icmp_unsigned("!=", b.and_(ax, _c32(0x8000)), _c32(0))
        self.set16(b, S.DX, b.select(neg, _c32(0xFFFF), _c32(0)))
        return 5, ins.next_ip, None

    def _k_loop(self, b, ins):
        op = ins.op
        nt, tk = ins.succ
        if op == 0xE3:
            take = b.icmp_unsigned("==", self.get16(b, S.CX), _c32(0))
            return b.select(take, _c64(18), _c64(6)), (take, tk, nt), None
        cx = b.and_(b.sub(self.get16(b, S.CX), _c32(1)), _c32(0xFFFF))
        self.set16(b, S.CX, cx)
        nz = b.icmp_unsigned("!=", cx, _c32(0))
        zf = b.icmp_unsigned("!=", b.and_(b.load(self.flags), _c32(S.F_ZF)), _c32(0))
        if op == 0xE2:
            take, yes, no = nz, 17, 5
        elif op == 0xE1:
            take, yes, no = b.and_(nz, zf), 18, 6
        else:
            take, yes, no = b.and_(nz, b.not_(zf)), 19, 5
        return b.select(take, _c64(yes), _c64(no)), (take, tk, nt), None

    def _k_call(self, b, ins):
        sp, addrs = self._push_addrs(b)
        self.check(b, ins, writes=addrs)
        self.set16(b, S.SP, sp)
        smc = self.write_mem(b, addrs, _c32(ins.next_ip))
        return 23, ins.succ[0], smc

    def _k_ret(self, b, ins):
        sp = self.get16(b, S.SP)
        addrs = self.mem_addrs(b, self.segbase[S.SS], sp, 1)
        self.check(b, ins, reads=addrs)
        target = self.read_mem(b, addrs)
        self.set16(b, S.SP, b.add(sp, _c32(2)))
        return 20, target, None

    def _k_jmp(self, b, ins):
        return 15, ins.succ[0], None

    def _k_lea(self, b, ins):
        _, off = self.ea(b, ins)
        self.set16(b, ins.reg, off)
        return 2 + ins.eac, ins.next_ip, None

    def _k_mov_from_sreg(self, b, ins):
        seg = 8 + (ins.reg & 3)
        v = b.trunc(b.lshr(self.segbase[seg], _c64(4)), I32)
        if not ins.memop:
            self.set16(b, ins.rm, v)
            return 2, ins.next_ip, None
        addrs = self.mem_operand(b, ins, 1)
        self.check(b, ins, writes=addrs)
        return 13 + ins.eac, ins.next_ip, self.write_mem(b, addrs, v)

    def _k_mov_moffs(self, b, ins):
        w = ins.w
        sb = self.segbase[ins.sov if ins.sov is not None else S.DS]
        addrs = self.mem_addrs(b, sb, _c32(ins.disp), w)
        if ins.op < 0xA2:
            self.check(b, ins, reads=addrs)
            self.set_reg(b, 0, w, self.read_mem(b, addrs))
            return 10 + 4 * w, ins.next_ip, None
        self.check(b, ins, writes=addrs)
        return 10 + 4 * w, ins.next_ip, self.write_mem(b, addrs, self.get_reg(b, 0, w))

    def _k_test_acc(self, b, ins):
        self.alu(b, 4, self.get_reg(b, 0, ins.w), _c32(ins.imm), ins.w)
        return 4, ins.next_ip, None

    def _k_mov_rm_imm(self, b, ins):
        w = ins.w
        if not ins.memop:
            self.set_reg(b, ins.rm, w, _c32(ins.imm))
            return 4, ins.next_ip, None
        addrs = self.mem_operand(b, ins, w)
        self.check(b, ins, writes=addrs)
        return 10 + ins.eac + 4 * w, ins.next_ip, self.write_mem(b, addrs, _c32(ins.imm))

    def _rm_operand(self, b, ins, w, write):
        """The r/m operand: (addresses or None, value); leaves before the
        instruction unless its bytes are on direct pages."""
        if not ins.memop:
            return None, self.get_reg(b, ins.rm, w)
        addrs = self.mem_operand(b, ins, w)
        if write:
            self.check(b, ins, writes=addrs)
        else:
            self.check(b, ins, reads=addrs)
        return addrs, self.read_mem(b, addrs)

    def _rm_store(self, b, ins, w, addrs, v):
        if addrs is None:
            self.set_reg(b, ins.rm, w, v)
            return None
        return self.write_mem(b, addrs, v)

    def _shift_once(self, b, kind, v, cf, w):
        """One step of the shift/rotate ``kind``: (value, cf, of) as i32."""
        top = 15 if w else 7
        mask = 0xFFFF if w else 0xFF
        one = _c32(1)
        bit = lambda x, n: b.and_(b.lshr(x, _c32(n)), one)
        msb = bit(v, top)
        if kind == 0:            # ROL
            cf = msb
            v = b.and_(b.or_(b.shl(v, one), msb), _c32(mask))
            of = b.xor(bit(v, top), cf)
        elif kind == 1:          # ROR
            cf = b.and_(v, one)
            v = b.or_(b.lshr(v, one), b.shl(cf, _c32(top)))
            of = b.and_(b.xor(b.lshr(v, _c32(top)), b.lshr(v, _c32(top - 1))), one)
        elif kind == 2:          # RCL
            v = b.and_(b.or_(b.shl(v, one), cf), _c32(mask))
            cf = msb
            of = b.xor(bit(v, top), cf)
        elif kind == 3:          # RCR
            nv = b.or_(b.lshr(v, one), b.shl(cf, _c32(top)))
            cf = b.and_(v, one)
            v = nv
            of = b.and_(b.xor(b.lshr(v, _c32(top)), b.lshr(v, _c32(top - 1))), one)
        elif kind == 4:          # SHL
            cf = msb
            v = b.and_(b.shl(v, one), _c32(mask))
            of = b.xor(bit(v, top), cf)
        elif kind == 5:          # SHR
            cf = b.and_(v, one)
            of = msb
            v = b.lshr(v, one)
        elif kind == 6:          # SETMO (undocumented): all ones
            cf, of, v = _c32(0), _c32(0), _c32(mask)
        else:                    # SAR
            cf = b.and_(v, one)
            v = b.or_(b.lshr(v, one), b.shl(msb, _c32(top)))
            of = _c32(0)
        return v, cf, of

    def _shift_flags(self, b, kind, v, cf, of, w):
        fl = b.and_(b.load(self.flags), _c32(~(S.F_CF | S.F_OF) & 0xFFFF))
        fl = b.or_(fl, b.or_(cf, b.shl(of, _c32(11))))          # CF bit 0, OF bit 11
        if kind >= 4:
            keep = ~(S.F_SF | S.F_ZF | S.F_PF | S.F_AF) & 0xFFFF
            fl = b.or_(b.and_(fl, _c32(keep)), self.szp(b, v, w))
            if kind == 4:
                fl = b.or_(fl, b.and_(v, _c32(S.F_AF)))            # AF = bit 4 (0x10)
        self._set_flags(b, fl)

    def _k_shift(self, b, ins):
        w, kind = ins.w, ins.reg
        addrs, v = self._rm_operand(b, ins, w, write=True)
        cf0 = b.and_(b.load(self.flags), _c32(S.F_CF))
        if not ins.op & 2:       # by 1
            v, cf, of = self._shift_once(b, kind, v, cf0, w)
            self._shift_flags(b, kind, v, cf, of, w)
            return static_cycles(ins) - 2 * ins.prefixes, ins.next_ip, \
                self._rm_store(b, ins, w, addrs, v)
        # by CL (not masked on the 8088): a loop; a count of 0 changes nothing
        count = self.get8(b, 1)
        cyc = b.zext(b.add(_c32(8 if not ins.memop else 20 + ins.eac + 8 * w),
                           b.shl(count, _c32(2))), I64)
        fn = self.fn
        slot_v, slot_cf, slot_of, slot_n = (b.alloca(I32, entry=self.entry) for _ in range(4))
        b.store(v, slot_v)
        b.store(cf0, slot_cf)
        b.store(_c32(0), slot_of)
        b.store(count, slot_n)
        head, body, done, skip, join = (fn.append_basic_block(n + "%04x" % ins.ip) for n in
                                        ("sh_head", "sh_body", "sh_done", "sh_skip", "sh_join"))
        b.cbranch(b.icmp_unsigned("==", count, _c32(0)), skip, head)
        b.position_at_end(head)
        n = b.load(slot_n)
        b.cbranch(b.icmp_unsigned("==", n, _c32(0)), done, body)
        b.position_at_end(body)
        v2, cf2, of2 = self._shift_once(b, kind, b.load(slot_v), b.load(slot_cf), w)
        b.store(v2, slot_v)
        b.store(cf2, slot_cf)
        b.store(of2, slot_of)
        b.store(b.sub(n, _c32(1)), slot_n)
        b.branch(head)
        b.position_at_end(done)
        v = b.load(slot_v)
        self._shift_flags(b, kind, v, b.load(slot_cf), b.load(slot_of), w)
        smc = self._rm_store(b, ins, w, addrs, v)
        smc_slot = b.alloca(I1, entry=self.entry)
        b.store(smc if smc is not None else ir.Constant(I1, 0), smc_slot)
        b.branch(join)
        b.position_at_end(skip)
        b.store(ir.Constant(I1, 0), smc_slot)
        b.branch(join)
        b.position_at_end(join)
        return b.sub(cyc, _c64(0)), ins.next_ip, b.load(smc_slot)

    def _k_group3(self, b, ins):
        w, kind = ins.w, ins.reg
        addrs, v = self._rm_operand(b, ins, w, write=kind >= 2)
        cyc = static_cycles(ins) - 2 * ins.prefixes
        if kind <= 1:
            self.alu(b, 4, v, _c32(ins.imm), w)
            return cyc, ins.next_ip, None
        if kind == 2:
            r = b.and_(b.xor(v, _c32(-1)), _c32(0xFFFF if w else 0xFF))
        else:
            r = self.alu(b, 5, _c32(0), v, w)
        return cyc, ins.next_ip, self._rm_store(b, ins, w, addrs, r)

    def _k_muldiv(self, b, ins):
        """MUL/IMUL/DIV/IDIV: a call of the interpreter's arithmetic
        (arith_calls.py); a divide error leaves before the instruction, for
        the interpreter to take INT 0 exactly as it does."""
        w, kind = ins.w, ins.reg
        _, v = self._rm_operand(b, ins, w, write=False)
        fl = b.zext(b.load(self.flags), I64)
        mode = _c64(w | ((kind & 1) << 1))
        cyc = static_cycles(ins) - 2 * ins.prefixes
        mask = _c64(0xFFFF)
        if kind <= 5:
            a = self.get16(b, S.AX) if w else self.get8(b, 0)
            fn = self.module.declare_function("pypc_multiply", I64, [I64] * 4, _PURE)
            r = b.call(fn, [b.zext(a, I64), b.zext(v, I64), mode, fl])
            hi = b.trunc(b.and_(r, mask), I32)
            lo = b.trunc(b.and_(b.lshr(r, _c64(16)), mask), I32)
            if w:
                self.set16(b, S.AX, lo)
                self.set16(b, S.DX, hi)
            else:
                self.set16(b, S.AX, b.or_(b.shl(hi, _c32(8)), lo))
        else:
            if w:
                hi, lo = self.get16(b, S.DX), self.get16(b, S.AX)
            else:
                hi, lo = self.get8(b, 4), self.get8(b, 0)
            fn = self.module.declare_function("pypc_divide", I64, [I64] * 5, _PURE)
            r = b.call(fn, [b.zext(hi, I64), b.zext(lo, I64), b.zext(v, I64), mode, fl])
            error = b.icmp_unsigned("==", b.and_(r, _c64(1)), _c64(0))
            self._exit_if(b, error, ins.ip, "de%04x" % ins.ip)
            q = b.trunc(b.and_(b.lshr(r, _c64(1)), mask), I32)
            rem = b.trunc(b.and_(b.lshr(r, _c64(17)), mask), I32)
            if w:
                self.set16(b, S.AX, q)
                self.set16(b, S.DX, rem)
            else:
                self.set8(b, 0, q)
                self.set8(b, 4, rem)
            r = b.lshr(r, _c64(1))          # the flags at bit 32 as for a multiply
        self._set_flags(b, b.trunc(b.and_(b.lshr(r, _c64(32)), mask), I32))
        return cyc, ins.next_ip, None

    def _k_incdec_rm(self, b, ins):
        w = ins.w
        addrs, v = self._rm_operand(b, ins, w, write=True)
        r = self.incdec(b, v, ins.reg, w)
        return static_cycles(ins) - 2 * ins.prefixes, ins.next_ip, \
            self._rm_store(b, ins, w, addrs, r)

    def _k_call_jmp_indirect(self, b, ins):
        cyc = static_cycles(ins) - 2 * ins.prefixes
        if ins.reg == 4:
            _, target = self._rm_operand(b, ins, 1, write=False)
            return cyc, target, None
        # CALL: the operand and the push checked together, read before SP moves
        if ins.memop:
            addrs = self.mem_operand(b, ins, 1)
            sp, paddrs = self._push_addrs(b)
            self.check(b, ins, reads=addrs, writes=paddrs)
            target = self.read_mem(b, addrs)
        else:
            target = self.get16(b, ins.rm)
            sp, paddrs = self._push_addrs(b)
            self.check(b, ins, writes=paddrs)
        self.set16(b, S.SP, sp)
        smc = self.write_mem(b, paddrs, _c32(ins.next_ip))
        return cyc, target, smc

    def _k_xchg_rm(self, b, ins):
        w = ins.w
        addrs, a = self._rm_operand(b, ins, w, write=True)
        reg = self.get_reg(b, ins.reg, w)
        smc = self._rm_store(b, ins, w, addrs, reg)
        self.set_reg(b, ins.reg, w, a)
        return static_cycles(ins) - 2 * ins.prefixes, ins.next_ip, smc

    def _k_xlat(self, b, ins):
        sb = self.segbase[ins.sov if ins.sov is not None else S.DS]
        off = b.and_(b.add(self.get16(b, S.BX), self.get8(b, 0)), _c32(0xFFFF))
        addrs = self.mem_addrs(b, sb, off, 0)
        self.check(b, ins, reads=addrs)
        self.set8(b, 0, self.read_mem(b, addrs))
        return 11, ins.next_ip, None

    def _k_string(self, b, ins):
        w = ins.w
        kind = (ins.op >> 1) & 7
        size = 2 if w else 1
        df = b.icmp_unsigned("!=", b.and_(b.load(self.flags), _c32(S.F_DF)), _c32(0))
        step = b.select(df, _c32(-size & 0xFFFF), _c32(size))
        src_sb = self.segbase[ins.sov if ins.sov is not None else S.DS]
        es_sb = self.segbase[S.ES]
        si, di = self.get16(b, S.SI), self.get16(b, S.DI)
        src = self.mem_addrs(b, src_sb, si, w) if kind in (2, 3, 6) else []
        dst = self.mem_addrs(b, es_sb, di, w) if kind in (2, 3, 5, 7) else []
        writes = dst if kind in (2, 5) else []
        reads = src + (dst if kind in (3, 7) else [])
        self.check(b, ins, reads=reads, writes=writes)
        smc = None
        if kind == 2:                          # MOVS
            smc = self.write_mem(b, dst, self.read_mem(b, src))
        elif kind == 3:                        # CMPS
            self.alu(b, 7, self.read_mem(b, src), self.read_mem(b, dst), w)
        elif kind == 5:                        # STOS
            smc = self.write_mem(b, dst, self.get_reg(b, 0, w))
        elif kind == 6:                        # LODS
            self.set_reg(b, 0, w, self.read_mem(b, src))
        else:                                  # SCAS
            self.alu(b, 7, self.get_reg(b, 0, w), self.read_mem(b, dst), w)
        if kind in (2, 3, 6):
            self.set16(b, S.SI, b.add(si, step))
        if kind in (2, 3, 5, 7):
            self.set16(b, S.DI, b.add(di, step))
        return static_cycles(ins) - 2 * ins.prefixes, ins.next_ip, smc

    def _k_flag_op(self, b, ins):
        fl = b.load(self.flags)
        op = ins.op
        if op == 0xF5:
            fl = b.xor(fl, _c32(S.F_CF))
        else:
            bit = S.F_CF if op < 0xFA else S.F_DF
            fl = b.or_(fl, _c32(bit)) if op & 1 else b.and_(fl, _c32(~bit & 0xFFFF))
        self._set_flags(b, fl)
        return 2, ins.next_ip, None


def region_code_bytes(read, insns, csb):
    """[(linear address, byte)] of every instruction byte, for the entry check."""
    return [((csb + ins.ip + k) & M20, read((csb + ins.ip + k) & M20))
            for ins in insns.values() for k in range(ins.length)]
