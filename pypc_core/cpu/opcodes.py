"""The 8088 opcode table: every first byte 00h-FFh, and every ModR/M ``reg``
value of the group opcodes, described once.

Each entry (:class:`OpForm`) gives the mnemonic, the operand form, the
status of the encoding and its base cycle counts.  The disassembler
(:mod:`pypc_core.cpu.disasm`) decodes with this table, and
``tests/test_disasm.py`` runs a representative instance of every form through
the compiled core and checks the cycles it counts against the figures here,
so this is the one place the core's timing is written down and checked.

Operand codes (the classic opcode-map notation):

====== ==================================================================
``Eb`` ``Ew``  ModR/M r/m operand, byte / word (register or memory)
``Gb`` ``Gw``  register named by the ModR/M ``reg`` field
``Sw``         segment register named by ``reg`` (the 8088 decodes 2 bits)
``M``          memory operand of LEA (no size; register form undefined)
``Mp``         32-bit pointer in memory (LES, LDS)
``Mf``         far pointer in memory for CALL/JMP FAR
``Ib`` ``Iw``  immediate byte / word
``Is``         immediate byte sign-extended to a word (83h)
``Jb`` ``Jw``  relative branch target, 8 / 16-bit displacement
``Ap``         immediate far address SEG:OFF
``Ob`` ``Ow``  memory offset word in the instruction (A0h-A3h)
``Zb`` ``Zw``  byte / word register from the low 3 opcode bits
``Fe``         ESC: coprocessor opcode and its r/m operand (shown as the
               8087 instruction where there is one: :data:`FPU_MEM`,
               :data:`FPU_REG`)
fixed          ``AL`` ``AX`` ``CL`` ``DX`` ``1`` ``ES`` ``CS`` ``SS`` ``DS``
====== ==================================================================

Status values: ``documented``; ``alias`` (an undocumented encoding that does
exactly what a documented one does: 60h-6Fh = 70h-7Fh, C0h/C1h = C2h/C3h,
C8h/C9h = CAh/CBh, 82h = 80h, F6/F7 /1 = /0, FF /7 = /6, 8C/8E ``reg`` 4-7 =
0-3, F1h = F0h); ``undocumented`` (an operation of its own: D6h SALC,
D0h-D3h /6 SETMO, 0Fh POP CS, 8E /1 MOV CS); ``undefined`` (the vectors'
word for forms whose ``reg`` field is ignored or whose operand makes no sense:
8F/C6/C7 ``reg`` 1-7, FE /2-/7, and the register forms of LEA, LES, LDS and
CALL/JMP FAR -- the table gives what the core executes); ``prefix``; and
``fpu`` (D8h-DFh ESC, which the XT without an 8087 reads and ignores; the
8087 instruction names are in :data:`FPU_MEM` / :data:`FPU_REG`).

Cycles (:class:`Timing`) are 8088 clocks: the Intel figures for the 8086 with
four clocks added for every word the 8-bit bus moves, which is what the
8088 tables list.  Memory forms add the effective-address time
(:func:`ea_cycles`); each prefix byte costs 2.  Branches give not-taken and
taken counts, shifts by CL add ``per_count`` per bit, string instructions
give the single form and the REP form (``rep_base`` + ``per_rep`` per
iteration, plus 2 for the REP prefix byte), and MUL/DIV give the published
range (``base`` .. ``hi``) within which the core's fixed figure must lie.

Where the published sources are silent or disagree, the table has the core's
figure: SALC 4 (undocumented, no published figure); TEST r/m16,imm16 in memory
11+EA (the four-clocks-per-word rule would give 15+EA); RETF 34 and RETF imm
33 (some 8088 tables list 32 and 31); ESC with a memory operand 8+EA (the
word rule would give 12+EA); the undefined forms (as the core executes them).
The test marks the core's known departures from the published figures
(AAA/AAS, WAIT, IMUL r/m8 in memory) as expected failures.
"""

from __future__ import annotations

import attrs

DOCUMENTED = "documented"
ALIAS = "alias"
UNDOCUMENTED = "undocumented"
UNDEFINED = "undefined"
PREFIX = "prefix"
FPU = "fpu"
STATUSES = (DOCUMENTED, ALIAS, UNDOCUMENTED, UNDEFINED, PREFIX, FPU)

# opcodes whose ModR/M reg field selects the operation: one entry per reg
GROUPS = frozenset({0x80, 0x81, 0x82, 0x83, 0x8C, 0x8E, 0x8F, 0xC6, 0xC7,
                    0xD0, 0xD1, 0xD2, 0xD3, 0xF6, 0xF7, 0xFE, 0xFF})
PREFIXES = frozenset({0x26, 0x2E, 0x36, 0x3E, 0xF0, 0xF1, 0xF2, 0xF3})
MODRM_OPERANDS = frozenset({"Eb", "Ew", "Gb", "Gw", "Sw", "M", "Mp", "Mf", "Fe"})


@attrs.frozen
class Timing:
    """Clock counts of one form (register form, or memory form before EA)."""
    base: int                       # cycles (not taken, for conditional transfers)
    ea: bool = False                # add the effective-address cycles
    taken: int | None = None        # conditional transfers: cycles when taken
    hi: int | None = None           # data-dependent (MUL/DIV): base .. hi
    per_count: int = 0              # shifts/rotates by CL: cycles per bit
    rep_base: int | None = None     # string instructions under REP: start-up ...
    per_rep: int | None = None      # ... plus this per iteration

    def __str__(self):
        s = str(self.base) if self.hi is None else f"{self.base}-{self.hi}"
        if self.ea:
            s = f"({s})+EA" if self.hi is not None else f"{s}+EA"
        if self.per_count:
            s += f"+{self.per_count}/bit"
        if self.taken is not None:
            s = f"{s}/{self.taken}"
        if self.per_rep is not None:
            s += f", rep {self.rep_base}+{self.per_rep}n"
        return s


@attrs.frozen
class OpForm:
    """One opcode byte (or one ``reg`` value of a group opcode)."""
    opcode: int
    reg: int | None                 # ModR/M reg for group opcodes, else None
    mnemonic: str
    operands: tuple[str, ...]
    status: str
    cycles: Timing | None           # register form, or the only form
    cycles_mem: Timing | None = None  # memory form (ModR/M with mod != 3)
    alias_of: str | None = None     # "70", "FF/6" ... for aliases
    note: str = ""

    @property
    def has_modrm(self):
        return self.opcode in GROUPS or any(o in MODRM_OPERANDS for o in self.operands)

    @property
    def key(self):
        return self.opcode if self.reg is None else (self.opcode, self.reg)

    def __str__(self):
        where = f"{self.opcode:02X}" + ("" if self.reg is None else f"/{self.reg}")
        ops = ",".join(self.operands)
        cyc = str(self.cycles) if self.cycles is not None else "-"
        if self.cycles_mem is not None:
            cyc += f" | mem {self.cycles_mem}"
        return f"{where} {self.mnemonic} {ops} [{self.status}] {cyc}"


def ea_cycles(mod: int, rm: int) -> int:
    """Effective-address cycles of a ModR/M memory operand (mod 0-2)."""
    if mod == 0 and rm == 6:
        return 6                                  # [disp16]
    base = (7, 8, 8, 7, 5, 5, 5, 5)[rm]           # bx+si bx+di bp+si bp+di si di bp bx
    return base + (4 if mod in (1, 2) else 0)


# ---------------------------------------------------------------------------
# building the table
# ---------------------------------------------------------------------------

_T = Timing
_FORMS: list[OpForm] = []


def _op(opcode, mnemonic, operands=(), cycles=None, mem=None, status=DOCUMENTED,
        reg=None, alias_of=None, note=""):
    _FORMS.append(OpForm(opcode, reg, mnemonic, tuple(operands), status, cycles, mem,
                         alias_of, note))


def _mem(base):
    return _T(base, ea=True)


ALU = ("add", "or", "adc", "sbb", "and", "sub", "xor", "cmp")
SEGS = ("ES", "CS", "SS", "DS")

# 00-3F: the eight ALU operations in six forms each, and the segment
# push/pop, prefix and BCD bytes in the seventh and eighth slots
for _i, _name in enumerate(ALU):
    _b = _i << 3
    _cmp = _name == "cmp"
    _op(_b + 0, _name, ("Eb", "Gb"), _T(3), _mem(9 if _cmp else 16))
    _op(_b + 1, _name, ("Ew", "Gw"), _T(3), _mem(13 if _cmp else 24))
    _op(_b + 2, _name, ("Gb", "Eb"), _T(3), _mem(9))
    _op(_b + 3, _name, ("Gw", "Ew"), _T(3), _mem(13))
    _op(_b + 4, _name, ("AL", "Ib"), _T(4))
    _op(_b + 5, _name, ("AX", "Iw"), _T(4))
for _i, _seg in enumerate(SEGS):
    _op((_i << 3) + 6, "push", (_seg,), _T(14))
    if _seg == "CS":
        _op(0x0F, "pop", ("CS",), _T(12), status=UNDOCUMENTED,
            note="POP CS: the 8088 loads CS (the 80186 and later use 0Fh as an escape)")
    else:
        _op((_i << 3) + 7, "pop", (_seg,), _T(12))
for _i, _seg in enumerate(SEGS):
    _op(0x26 + (_i << 3), _seg.lower(), (), _T(2), status=PREFIX,
        note="segment override prefix")
_op(0x27, "daa", (), _T(4))
_op(0x2F, "das", (), _T(4))
_op(0x37, "aaa", (), _T(4))
_op(0x3F, "aas", (), _T(4))

for _r in range(8):
    _op(0x40 + _r, "inc", ("Zw",), _T(2))
    _op(0x48 + _r, "dec", ("Zw",), _T(2))
    _op(0x50 + _r, "push", ("Zw",), _T(15), note="PUSH SP pushes the decremented SP" if _r == 4 else "")
    _op(0x58 + _r, "pop", ("Zw",), _T(12))

JCC = ("jo", "jno", "jc", "jnc", "jz", "jnz", "jna", "ja",
       "js", "jns", "jpe", "jpo", "jl", "jnl", "jng", "jg")
for _cc, _name in enumerate(JCC):
    _op(0x70 + _cc, _name, ("Jb",), _T(4, taken=16))
    _op(0x60 + _cc, _name, ("Jb",), _T(4, taken=16), status=ALIAS, alias_of=f"{0x70 + _cc:02X}")

# 80-83: ALU r/m, immediate
for _reg, _name in enumerate(ALU):
    _cmp = _name == "cmp"
    _op(0x80, _name, ("Eb", "Ib"), _T(4), _mem(10 if _cmp else 17), reg=_reg)
    _op(0x81, _name, ("Ew", "Iw"), _T(4), _mem(14 if _cmp else 25), reg=_reg)
    _op(0x82, _name, ("Eb", "Ib"), _T(4), _mem(10 if _cmp else 17), reg=_reg,
        status=ALIAS, alias_of=f"80/{_reg}")
    _op(0x83, _name, ("Ew", "Is"), _T(4), _mem(14 if _cmp else 25), reg=_reg)

_op(0x84, "test", ("Eb", "Gb"), _T(3), _mem(9))
_op(0x85, "test", ("Ew", "Gw"), _T(3), _mem(13))
_op(0x86, "xchg", ("Eb", "Gb"), _T(4), _mem(17))
_op(0x87, "xchg", ("Ew", "Gw"), _T(4), _mem(25))
_op(0x88, "mov", ("Eb", "Gb"), _T(2), _mem(9))
_op(0x89, "mov", ("Ew", "Gw"), _T(2), _mem(13))
_op(0x8A, "mov", ("Gb", "Eb"), _T(2), _mem(8))
_op(0x8B, "mov", ("Gw", "Ew"), _T(2), _mem(12))
for _reg in range(8):
    _alias = _reg >= 4
    _op(0x8C, "mov", ("Ew", "Sw"), _T(2), _mem(13), reg=_reg,
        status=ALIAS if _alias else DOCUMENTED, alias_of=f"8C/{_reg & 3}" if _alias else None)
    _op(0x8E, "mov", ("Sw", "Ew"), _T(2), _mem(12), reg=_reg,
        status=ALIAS if _alias else (UNDOCUMENTED if _reg == 1 else DOCUMENTED),
        alias_of=f"8E/{_reg & 3}" if _alias else None,
        note="MOV CS: the 8088 loads CS" if _reg & 3 == 1 else "")
_op(0x8D, "lea", ("Gw", "M"), _T(2), _mem(2),
    note="register form undefined: the core leaves the register unchanged")
for _reg in range(8):
    _op(0x8F, "pop", ("Ew",), _T(12), _mem(25), reg=_reg,
        status=DOCUMENTED if _reg == 0 else UNDEFINED,
        note="" if _reg == 0 else "reg field ignored: POP r/m")

_op(0x90, "nop", (), _T(3))
for _r in range(1, 8):
    _op(0x90 + _r, "xchg", ("AX", "Zw"), _T(3))
_op(0x98, "cbw", (), _T(2))
_op(0x99, "cwd", (), _T(5))
_op(0x9A, "call", ("Ap",), _T(36))
_op(0x9B, "wait", (), _T(3), note="3+5n; n = 0 here: no coprocessor drives TEST")
_op(0x9C, "pushf", (), _T(14))
_op(0x9D, "popf", (), _T(12))
_op(0x9E, "sahf", (), _T(4))
_op(0x9F, "lahf", (), _T(4))
_op(0xA0, "mov", ("AL", "Ob"), _T(10))
_op(0xA1, "mov", ("AX", "Ow"), _T(14))
_op(0xA2, "mov", ("Ob", "AL"), _T(10))
_op(0xA3, "mov", ("Ow", "AX"), _T(14))
_op(0xA4, "movsb", (), _T(18, rep_base=9, per_rep=17))
_op(0xA5, "movsw", (), _T(26, rep_base=9, per_rep=25))
_op(0xA6, "cmpsb", (), _T(22, rep_base=9, per_rep=22))
_op(0xA7, "cmpsw", (), _T(30, rep_base=9, per_rep=30))
_op(0xA8, "test", ("AL", "Ib"), _T(4))
_op(0xA9, "test", ("AX", "Iw"), _T(4))
_op(0xAA, "stosb", (), _T(11, rep_base=9, per_rep=10))
_op(0xAB, "stosw", (), _T(15, rep_base=9, per_rep=14))
_op(0xAC, "lodsb", (), _T(12, rep_base=9, per_rep=13))
_op(0xAD, "lodsw", (), _T(16, rep_base=9, per_rep=17))
_op(0xAE, "scasb", (), _T(15, rep_base=9, per_rep=15))
_op(0xAF, "scasw", (), _T(19, rep_base=9, per_rep=19))
for _r in range(8):
    _op(0xB0 + _r, "mov", ("Zb", "Ib"), _T(4))
    _op(0xB8 + _r, "mov", ("Zw", "Iw"), _T(4))

_op(0xC2, "ret", ("Iw",), _T(24))
_op(0xC3, "ret", (), _T(20))
_op(0xC0, "ret", ("Iw",), _T(24), status=ALIAS, alias_of="C2")
_op(0xC1, "ret", (), _T(20), status=ALIAS, alias_of="C3")
_op(0xC4, "les", ("Gw", "Mp"), _T(24), _mem(24),
    note="register form undefined: the core reads the pointer at DS:reg-number")
_op(0xC5, "lds", ("Gw", "Mp"), _T(24), _mem(24),
    note="register form undefined: the core reads the pointer at DS:reg-number")
for _reg in range(8):
    _st = DOCUMENTED if _reg == 0 else UNDEFINED
    _n = "" if _reg == 0 else "reg field ignored: MOV r/m, imm"
    _op(0xC6, "mov", ("Eb", "Ib"), _T(4), _mem(10), reg=_reg, status=_st, note=_n)
    _op(0xC7, "mov", ("Ew", "Iw"), _T(4), _mem(14), reg=_reg, status=_st, note=_n)
_op(0xCA, "retf", ("Iw",), _T(33))
_op(0xCB, "retf", (), _T(34))
_op(0xC8, "retf", ("Iw",), _T(33), status=ALIAS, alias_of="CA")
_op(0xC9, "retf", (), _T(34), status=ALIAS, alias_of="CB")
_op(0xCC, "int3", (), _T(72))
_op(0xCD, "int", ("Ib",), _T(71))
_op(0xCE, "into", (), _T(4, taken=73))
_op(0xCF, "iret", (), _T(44))

SHIFTS = ("rol", "ror", "rcl", "rcr", "shl", "shr", "setmo", "sar")
for _reg, _name in enumerate(SHIFTS):
    _st = UNDOCUMENTED if _reg == 6 else DOCUMENTED
    _n = "SETMO: the result is all ones (by CL: only if CL != 0)" if _reg == 6 else ""
    _op(0xD0, _name, ("Eb", "1"), _T(2), _mem(15), reg=_reg, status=_st, note=_n)
    _op(0xD1, _name, ("Ew", "1"), _T(2), _mem(23), reg=_reg, status=_st, note=_n)
    _op(0xD2, _name, ("Eb", "CL"), _T(8, per_count=4), _T(20, ea=True, per_count=4),
        reg=_reg, status=_st, note=_n)
    _op(0xD3, _name, ("Ew", "CL"), _T(8, per_count=4), _T(28, ea=True, per_count=4),
        reg=_reg, status=_st, note=_n)
_op(0xD4, "aam", ("Ib",), _T(83))
_op(0xD5, "aad", ("Ib",), _T(60))
_op(0xD6, "salc", (), _T(4), status=UNDOCUMENTED,
    note="SALC: AL = FFh if CF else 00h (no published timing; the core's figure)")
_op(0xD7, "xlatb", (), _T(11))
for _i in range(8):
    _op(0xD8 + _i, "esc", ("Fe",), _T(2), _mem(8), status=FPU,
        note="no coprocessor: the operand is read and ignored")

_op(0xE0, "loopne", ("Jb",), _T(5, taken=19))
_op(0xE1, "loope", ("Jb",), _T(6, taken=18))
_op(0xE2, "loop", ("Jb",), _T(5, taken=17))
_op(0xE3, "jcxz", ("Jb",), _T(6, taken=18))
_op(0xE4, "in", ("AL", "Ib"), _T(10))
_op(0xE5, "in", ("AX", "Ib"), _T(14))
_op(0xE6, "out", ("Ib", "AL"), _T(10))
_op(0xE7, "out", ("Ib", "AX"), _T(14))
_op(0xE8, "call", ("Jw",), _T(23))
_op(0xE9, "jmp", ("Jw",), _T(15))
_op(0xEA, "jmp", ("Ap",), _T(15))
_op(0xEB, "jmp", ("Jb",), _T(15))
_op(0xEC, "in", ("AL", "DX"), _T(8))
_op(0xED, "in", ("AX", "DX"), _T(12))
_op(0xEE, "out", ("DX", "AL"), _T(8))
_op(0xEF, "out", ("DX", "AX"), _T(12))
_op(0xF0, "lock", (), _T(2), status=PREFIX)
_op(0xF1, "lock", (), _T(2), status=PREFIX, alias_of="F0",
    note="an alias of LOCK on the 8088")
_op(0xF2, "repne", (), _T(2), status=PREFIX)
_op(0xF3, "rep", (), _T(2), status=PREFIX)
_op(0xF4, "hlt", (), _T(2))
_op(0xF5, "cmc", (), _T(2))

_GROUP3 = (
    ("test", ("Eb", "Ib"), _T(5), _mem(11), ("Ew", "Iw"), _T(5), _mem(11)),
    ("test", ("Eb", "Ib"), _T(5), _mem(11), ("Ew", "Iw"), _T(5), _mem(11)),
    ("not", ("Eb",), _T(3), _mem(16), ("Ew",), _T(3), _mem(24)),
    ("neg", ("Eb",), _T(3), _mem(16), ("Ew",), _T(3), _mem(24)),
    ("mul", ("Eb",), _T(70, hi=77), _T(76, ea=True, hi=83),
     ("Ew",), _T(118, hi=133), _T(128, ea=True, hi=143)),
    ("imul", ("Eb",), _T(80, hi=98), _T(86, ea=True, hi=104),
     ("Ew",), _T(128, hi=154), _T(138, ea=True, hi=164)),
    ("div", ("Eb",), _T(80, hi=90), _T(86, ea=True, hi=96),
     ("Ew",), _T(144, hi=162), _T(154, ea=True, hi=172)),
    ("idiv", ("Eb",), _T(101, hi=112), _T(107, ea=True, hi=118),
     ("Ew",), _T(165, hi=184), _T(175, ea=True, hi=194)),
)
for _reg, (_name, _ob, _rb, _mb, _ow, _rw, _mw) in enumerate(_GROUP3):
    _st = ALIAS if _reg == 1 else DOCUMENTED
    _al = f"/0" if _reg == 1 else None
    _n = "a REP prefix negates the product / quotient on the 8088" if _reg >= 4 else ""
    _op(0xF6, _name, _ob, _rb, _mb, reg=_reg, status=_st,
        alias_of="F6" + _al if _al else None, note=_n)
    _op(0xF7, _name, _ow, _rw, _mw, reg=_reg, status=_st,
        alias_of="F7" + _al if _al else None, note=_n)

for _i, _name in enumerate(("clc", "stc", "cli", "sti", "cld", "std")):
    _op(0xF8 + _i, _name, (), _T(2))

# FE/FF: INC DEC CALL CALL-FAR JMP JMP-FAR PUSH (PUSH)
_G5 = (
    ("inc", "E", _T(3), 15, 23),
    ("dec", "E", _T(3), 15, 23),
    ("call", "E", _T(20), 29, 29),
    ("call", "Mf", _T(53), 53, 53),
    ("jmp", "E", _T(11), 18, 18),
    ("jmp", "Mf", _T(24), 24, 24),
    ("push", "E", _T(15), 24, 24),
    ("push", "E", _T(15), 24, 24),
)
for _reg, (_name, _kind, _rt, _mb, _mw) in enumerate(_G5):
    _far = _kind == "Mf"
    if _reg <= 1:
        _op(0xFE, _name, ("Eb",), _rt, _mem(_mb), reg=_reg)
    else:
        _op(0xFE, _name, ("Mf",) if _far else ("Eb",), _rt, _mem(_mb), reg=_reg,
            status=UNDEFINED,
            note=("the far pointer is read as for FF" if _far else
                  "acts on the byte operand with FFh as its high byte"))
    _st = ALIAS if _reg == 7 else DOCUMENTED
    _op(0xFF, _name, ("Mf",) if _far else ("Ew",), _rt, _mem(_mw), reg=_reg, status=_st,
        alias_of="FF/6" if _reg == 7 else None,
        note="register form undefined: the core reads the pointer at DS:reg-number"
        if _far else "")

# 8087 mnemonics of the ESC opcodes, which the disassembler shows (on the XT
# without a coprocessor they only read their operand).  Memory forms:
# (mnemonic, NASM size keyword or "") per D8h-DFh and reg; None = no 8087
# instruction.
_ARITH = ("fadd", "fmul", "fcom", "fcomp", "fsub", "fsubr", "fdiv", "fdivr")
FPU_MEM = {
    0xD8: tuple((m, "dword") for m in _ARITH),
    0xD9: (("fld", "dword"), None, ("fst", "dword"), ("fstp", "dword"),
           ("fldenv", ""), ("fldcw", "word"), ("fnstenv", ""), ("fnstcw", "word")),
    0xDA: tuple(("fi" + m[1:], "dword") for m in _ARITH),
    0xDB: (("fild", "dword"), None, ("fist", "dword"), ("fistp", "dword"),
           None, ("fld", "tword"), None, ("fstp", "tword")),
    0xDC: tuple((m, "qword") for m in _ARITH),
    0xDD: (("fld", "qword"), None, ("fst", "qword"), ("fstp", "qword"),
           ("frstor", ""), None, ("fnsave", ""), ("fnstsw", "word")),
    0xDE: tuple(("fi" + m[1:], "word") for m in _ARITH),
    0xDF: (("fild", "word"), None, ("fist", "word"), ("fistp", "word"),
           ("fbld", "tword"), ("fild", "qword"), ("fbstp", "tword"), ("fistp", "qword")),
}
# Register forms: per (opcode, reg) either (mnemonic, operands) with "i" for
# ST(i) -- "i,0" is ``sti,st0`` -- or a dict rm -> mnemonic without operands.
FPU_REG = {
    # D8h: ST(0) op ST(i), written with the one operand (NASM's ``fadd st0,st0``
    # would be DC C0)
    (0xD8, 0): ("fadd", "i"), (0xD8, 1): ("fmul", "i"), (0xD8, 2): ("fcom", "i"),
    (0xD8, 3): ("fcomp", "i"), (0xD8, 4): ("fsub", "i"), (0xD8, 5): ("fsubr", "i"),
    (0xD8, 6): ("fdiv", "i"), (0xD8, 7): ("fdivr", "i"),
    (0xD9, 0): ("fld", "i"), (0xD9, 1): ("fxch", "i"), (0xD9, 2): {0: "fnop"},
    (0xD9, 4): {0: "fchs", 1: "fabs", 4: "ftst", 5: "fxam"},
    (0xD9, 5): {0: "fld1", 1: "fldl2t", 2: "fldl2e", 3: "fldpi", 4: "fldlg2", 5: "fldln2",
                6: "fldz"},
    (0xD9, 6): {0: "f2xm1", 1: "fyl2x", 2: "fptan", 3: "fpatan", 4: "fxtract", 6: "fdecstp",
                7: "fincstp"},
    (0xD9, 7): {0: "fprem", 1: "fyl2xp1", 2: "fsqrt", 4: "frndint", 5: "fscale"},
    (0xDB, 4): {0: "fneni", 1: "fndisi", 2: "fnclex", 3: "fninit"},
    (0xDC, 0): ("fadd", "i,0"), (0xDC, 1): ("fmul", "i,0"), (0xDC, 4): ("fsubr", "i,0"),
    (0xDC, 5): ("fsub", "i,0"), (0xDC, 6): ("fdivr", "i,0"), (0xDC, 7): ("fdiv", "i,0"),
    (0xDD, 0): ("ffree", "i"), (0xDD, 2): ("fst", "i"), (0xDD, 3): ("fstp", "i"),
    (0xDE, 0): ("faddp", "i,0"), (0xDE, 1): ("fmulp", "i,0"), (0xDE, 3): {1: "fcompp"},
    (0xDE, 4): ("fsubrp", "i,0"), (0xDE, 5): ("fsubp", "i,0"), (0xDE, 6): ("fdivrp", "i,0"),
    (0xDE, 7): ("fdivp", "i,0"),
}


def fpu_mnemonic(opcode: int, modrm: int):
    """The 8087 instruction of ESC ``opcode`` (D8h-DFh) with ``modrm``:
    ``(mnemonic, size keyword)`` for a memory form, ``(mnemonic, operands)``
    for a register form (operands like ``"st0,st3"`` or ``""``), or None when
    the 8087 has no such instruction."""
    reg, rm = (modrm >> 3) & 7, modrm & 7
    if modrm >> 6 != 3:
        return FPU_MEM[opcode][reg]
    entry = FPU_REG.get((opcode, reg))
    if entry is None:
        return None
    if isinstance(entry, dict):
        name = entry.get(rm)
        return None if name is None else (name, "")
    name, pattern = entry
    return name, ",".join("st0" if p == "0" else f"st{rm}" for p in pattern.split(","))


TABLE: tuple[OpForm, ...] = tuple(sorted(_FORMS, key=lambda f: (f.opcode, -1 if f.reg is None else f.reg)))
_BY_KEY = {f.key: f for f in TABLE}
del _FORMS


def lookup(opcode: int, reg: int | None = None) -> OpForm:
    """The table entry for ``opcode`` (and, for a group opcode, its ModR/M
    ``reg`` field 0-7)."""
    if not isinstance(opcode, int) or not 0 <= opcode <= 0xFF:
        raise ValueError(f"opcode must be an int 0..0xFF, not {opcode!r}")
    if opcode in GROUPS:
        if not isinstance(reg, int) or not 0 <= reg <= 7:
            raise ValueError(f"opcode {opcode:02X}h is a group opcode: reg must be 0..7, not {reg!r}")
        return _BY_KEY[(opcode, reg)]
    if reg is not None:
        raise ValueError(f"opcode {opcode:02X}h takes no reg selector")
    return _BY_KEY[opcode]


def _check_complete():
    missing = [f"{op:02X}/{reg}" for op in sorted(GROUPS) for reg in range(8)
               if (op, reg) not in _BY_KEY]
    missing += [f"{op:02X}" for op in range(256) if op not in GROUPS and op not in _BY_KEY]
    if missing or len(_BY_KEY) != len(TABLE):
        raise RuntimeError(f"opcode table incomplete or duplicated: {missing}")


_check_complete()
