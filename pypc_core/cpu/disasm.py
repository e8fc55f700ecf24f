"""8088 disassembler: NASM-compatible Intel syntax, driven by the one opcode
table in :mod:`pypc_core.cpu.opcodes`.

``disassemble(code, ip=0, cs=None)`` decodes the instruction at the start of
``code`` (``code[k]`` is the byte at CS:(ip+k) & FFFFh) and returns an
:class:`Instruction`; ``disassemble_range(read_byte, cs, ip, count)`` decodes
``count`` consecutive instructions from memory through ``read_byte(linear)``,
fetching within the code segment as the CPU does (an instruction that
straddles CS:FFFF continues at CS:0000).  Neither ever raises on odd bytes:

* every byte sequence decodes; a sequence that ends inside an instruction
  (``disassemble`` of a too-short ``code``) becomes ``db`` of what there is,
  with status ``"truncated"``;
* prefixes belong to the instruction they precede, as on the 8088 (a run of
  prefixes of any length is one instruction);
* undocumented, alias and undefined encodings show what the 8088 (and the
  core) does with them: 60h-6Fh as ``jo`` ... ``jg``, C0h/C1h as ``ret``,
  C8h/C9h as ``retf``, D6h ``salc``, 0Fh ``pop cs``, D0h-D3h /6 ``setmo``,
  F1h as ``lock``, 82h as 80h, FF /7 as ``push``, FE /2-/7 with their byte
  operand;
* D8h-DFh (ESC) show the 8087 instruction they encode (an XT without a
  coprocessor reads the operand and does nothing else).

Text and re-assembly.  ``Instruction.text`` is the listing text, e.g.
``mov al,[es:bx+si+0x12]``, ``rep movsb``, ``jmp 0x1234``, ``jz short 0x107``
(branch targets are computed from ``ip``; ``short`` because NASM otherwise
makes a near jump of a numeric target), ``call 0x1234:0x5678``,
``fld qword [bx]``, with ``byte``/``word`` where NASM
needs a size, and displacement / immediate size keywords (``[byte bx+0x0]``,
``[word bx+0x5]``, ``byte -0x1``, ``strict word 0x5``) where NASM would
otherwise choose a shorter encoding.  ``Instruction.exact`` is true when
``bits 16`` / ``cpu 8086`` NASM at ``org ip`` assembles ``text`` back to exactly
these bytes.  It is false where NASM has no way to say it: alias and
undocumented encodings it does not know (``setmo``, 60h-6Fh ...), undefined
forms, ESC encodings that are no 8087 instruction (shown as ``esc 0x9,[bx]``;
the others are shown as the 8087 instruction, ``fld qword [bx]``), encodings NASM
would write differently (``02 C3`` ``add al,bl`` -- NASM writes ``00 D8``; ``80 C0
05`` -- NASM writes ``04 05``; ``8B 06`` with AL/AX and a direct address --
NASM uses A0h-A3h; FF /6 and 8F /0 on a register; prefixes repeated, or in
another order than NASM's REP, LOCK, segment; F2h before a near branch, which
NASM takes for MPX's BND), and a short branch whose target wraps around the
segment.  ``Instruction.nasm`` always re-assembles exactly: it is
``text`` when ``exact``, else ``db 0x..,0x.. ; text``.

Step-over support for a debugger, independent of ``Machine``:
:func:`is_call_like` is true for the instructions a "step over" runs to the
following instruction instead of into: CALL (near, far, indirect, including
the FE /2 and /3 forms), INT n, INT3, INTO, LOOP/LOOPE/LOOPNE, and string
instructions with a REP/REPE/REPNE prefix; the following instruction is at
``ip + length`` (``Instruction.length``, or :func:`instruction_length`).

Command line: ``python -m pypc_core.cpu.disasm FILE [--org SEG:OFF]
[--count N]`` prints a listing (address, hex bytes, text) of the file loaded
at SEG:OFF (default 0000:0100).
"""

from __future__ import annotations

import argparse
import operator
import sys
from typing import Callable

import attrs

from .opcodes import (ALIAS, DOCUMENTED, FPU, GROUPS, PREFIXES, UNDEFINED, UNDOCUMENTED,
                      OpForm, fpu_mnemonic, lookup)

TRUNCATED = "truncated"

REG8 = ("al", "cl", "dl", "bl", "ah", "ch", "dh", "bh")
REG16 = ("ax", "cx", "dx", "bx", "sp", "bp", "si", "di")
SREG = ("es", "cs", "ss", "ds")
RM_BASE = ("bx+si", "bx+di", "bp+si", "bp+di", "si", "di", "bp", "bx")
SEG_PREFIX = {0x26: "es", 0x2E: "cs", 0x36: "ss", 0x3E: "ds"}
STRING_OPS = frozenset({0xA4, 0xA5, 0xA6, 0xA7, 0xAA, 0xAB, 0xAC, 0xAD, 0xAE, 0xAF})
MAX_INSTRUCTION = 0x10000       # a fetch never runs further than the whole segment


@attrs.frozen
class Instruction:
    """One decoded instruction (prefixes included)."""
    ip: int                     # offset of the first byte (first prefix)
    cs: int | None              # code segment, when known
    bytes: bytes                # the encoding, prefixes included
    text: str                   # listing text, NASM syntax
    exact: bool                 # NASM assembles ``text`` at ``ip`` to exactly ``bytes``
    status: str                 # opcodes.STATUSES, or "truncated"
    form: OpForm | None = None  # the opcode table entry (None for truncated input)
    prefixes: bytes = b""       # the prefix bytes, in order
    target: int | None = None   # near branch target offset (Jb/Jw), if any
    far_target: tuple[int, int] | None = None   # (segment, offset) of CALL/JMP Ap
    call_like: bool = False     # "step over" runs to ip + length

    @property
    def length(self) -> int:
        return len(self.bytes)

    @property
    def next_ip(self) -> int:
        return (self.ip + len(self.bytes)) & 0xFFFF

    @property
    def nasm(self) -> str:
        """A NASM line that assembles to exactly these bytes."""
        if self.exact:
            return self.text
        return f"{_db(self.bytes)} ; {self.text}"

    def __str__(self):
        return self.text


def _db(data) -> str:
    return "db " + ",".join(f"0x{b:02x}" for b in data)


def _hex(v: int) -> str:
    return f"0x{v:x}"


def _signed_hex(v: int) -> str:
    return f"-0x{-v:x}" if v < 0 else f"+0x{v:x}"


class _Truncated(Exception):
    pass


class _Reader:
    """Bytes of one instruction, fetched through ``fetch(k)`` (k-th byte from
    the start; None when there is no such byte)."""

    def __init__(self, fetch):
        self.fetch = fetch
        self.data = bytearray()

    def byte(self) -> int:
        if len(self.data) >= MAX_INSTRUCTION:
            raise _Truncated
        b = self.fetch(len(self.data))
        if b is None:
            raise _Truncated
        b = int(b) & 0xFF
        self.data.append(b)
        return b

    def word(self) -> int:
        lo = self.byte()
        return lo | (self.byte() << 8)


# ---------------------------------------------------------------------------
# decoding
# ---------------------------------------------------------------------------

def _decode(fetch, ip: int, cs: int | None) -> Instruction:
    rd = _Reader(fetch)
    try:
        return _decode_inner(rd, ip, cs)
    except _Truncated:
        data = bytes(rd.data)
        return Instruction(ip=ip, cs=cs, bytes=data, text=_db(data), exact=True,
                           status=TRUNCATED)


def _decode_inner(rd: _Reader, ip: int, cs: int | None) -> Instruction:
    prefixes = bytearray()
    while True:
        op = rd.byte()
        if op not in PREFIXES:
            break
        prefixes.append(op)
        if len(prefixes) >= MAX_INSTRUCTION - 1:
            raise _Truncated
    modrm = None
    if op in GROUPS:
        modrm = rd.byte()
        form = lookup(op, (modrm >> 3) & 7)
    else:
        form = lookup(op)
        if form.has_modrm:
            modrm = rd.byte()

    seg = None          # effective segment override (the last one wins)
    rep = None          # 0xF2 / 0xF3, the last one wins
    lock = False
    for p in prefixes:
        if p in SEG_PREFIX:
            seg = SEG_PREFIX[p]
        elif p in (0xF2, 0xF3):
            rep = p
        else:
            lock = True

    exact = form.status in (DOCUMENTED, UNDOCUMENTED, FPU)
    # NASM writes prefixes as REP-type, LOCK, segment, each at most once
    order = [0 if p in (0xF2, 0xF3) else 1 if p == 0xF0 else 2 if p in SEG_PREFIX else 9
             for p in prefixes]
    if order != sorted(order) or len(set(order)) != len(order) or 9 in order:
        exact = False

    mod = rm = None
    mem = None          # rendered memory operand (without size keyword)
    if modrm is not None:
        mod, rm = modrm >> 6, modrm & 7
        if mod != 3:
            mem = _memory_operand(rd, mod, rm, seg)
    seg_used = mem is not None or any(o in ("Ob", "Ow") for o in form.operands)

    ops: list[str] = []
    mnemonic = form.mnemonic
    target = None
    far_target = None
    is_mem = mem is not None
    sized_register = any(o in ("Gb", "Gw", "AL", "AX", "Sw", "Zb", "Zw") for o in form.operands)
    for kind in form.operands:
        if kind in ("Eb", "Ew"):
            if is_mem:
                if sized_register:
                    ops.append(mem)
                else:
                    ops.append(("byte " if kind == "Eb" else "word ") + mem)
            else:
                ops.append((REG8 if kind == "Eb" else REG16)[rm])
        elif kind in ("Gb", "Gw"):
            ops.append((REG8 if kind == "Gb" else REG16)[(modrm >> 3) & 7])
        elif kind == "Sw":
            ops.append(SREG[(modrm >> 3) & 3])
        elif kind in ("M", "Mp"):
            ops.append(mem if is_mem else REG16[rm])
        elif kind == "Mf":
            ops.append("far " + (mem if is_mem else (REG8 if op == 0xFE else REG16)[rm]))
        elif kind == "Fe":
            fpu = fpu_mnemonic(op, modrm)
            if fpu is None:
                ops.append(_hex(((op & 7) << 3) | ((modrm >> 3) & 7)))
                ops.append(mem if is_mem else REG16[rm])
            else:
                mnemonic = fpu[0]
                if is_mem:
                    ops.append((fpu[1] + " " if fpu[1] else "") + mem)
                elif fpu[1]:
                    ops.append(fpu[1])
        elif kind == "Ib":
            ops.append(_hex(rd.byte()))
        elif kind == "Iw":
            v = rd.word()
            if (op == 0x81 or (op < 0x40 and op & 7 == 5)) and (v < 0x80 or v >= 0xFF80):
                # NASM would pick the shorter or equal 83h form
                ops.append("strict word " + _hex(v))
            else:
                ops.append(_hex(v))
        elif kind == "Is":
            v = rd.byte()
            ops.append("byte " + _signed_hex(v - 256 if v & 0x80 else v))
        elif kind in ("Jb", "Jw"):
            d = rd.byte() if kind == "Jb" else rd.word()
            if kind == "Jb" and d & 0x80:
                d -= 256
            elif kind == "Jw" and d & 0x8000:
                d -= 0x10000
            raw = ip + len(rd.data) + d
            target = raw & 0xFFFF
            if raw != target and kind == "Jb":
                exact = False      # NASM cannot express a short branch around the segment end
            # NASM makes a near (or, for Jcc on the 8086, a two-instruction)
            # jump of a numeric target unless told ``short``
            short = op == 0xEB or 0x60 <= op <= 0x7F
            ops.append(("short " if short else "") + _hex(target))
        elif kind == "Ap":
            off = rd.word()
            segv = rd.word()
            far_target = (segv, off)
            ops.append(f"{_hex(segv)}:{_hex(off)}")
        elif kind in ("Ob", "Ow"):
            off = rd.word()
            ops.append(f"[{seg + ':' if seg else ''}{_hex(off)}]")
        elif kind in ("Zb", "Zw"):
            ops.append((REG8 if kind == "Zb" else REG16)[op & 7])
        else:                                   # fixed operands
            ops.append(kind.lower())

    if op in STRING_OPS and rep is not None:
        rep_word = ("repe" if op in (0xA6, 0xA7, 0xAE, 0xAF) else "rep") if rep == 0xF3 else "repne"
    else:
        rep_word = None if rep is None else ("rep" if rep == 0xF3 else "repne")

    # operand forms NASM writes differently, and texts it cannot assemble
    if mnemonic == "esc" or not _nasm_form_matches(op, form, mod, rm, modrm):
        exact = False
    if 0xF2 in prefixes and (0x70 <= op <= 0x7F or op in (0xE8, 0xE9, 0xC2, 0xC3)
                             or (op == 0xFF and form.reg in (2, 4))):
        exact = False       # NASM reads F2h before a near branch as MPX's BND: refused
    if op == 0x87 and mod == 3:
        ops = [ops[1], ops[0]]                  # NASM puts the first register in reg
    elif op == 0x86 and mod == 3:
        ops = [ops[1], ops[0]]
    if op in (0xD4, 0xD5) and ops == ["0xa"]:
        ops = []

    parts = []
    if rep_word:
        parts.append(rep_word)
    if lock:
        parts.append("lock")
    if seg and not seg_used:
        parts.append(seg)
    body = mnemonic + (" " + ",".join(ops) if ops else "")
    text = " ".join(parts + [body])

    status = form.status
    if mod == 3 and any(o in ("M", "Mp", "Mf") for o in form.operands):
        status = UNDEFINED          # LEA/LES/LDS/CALL FAR/JMP FAR of a register
        exact = False
    call_like = (op in (0xE8, 0x9A, 0xCC, 0xCD, 0xCE, 0xE0, 0xE1, 0xE2)
                 or (op in (0xFE, 0xFF) and form.reg in (2, 3))
                 or (op in STRING_OPS and rep is not None))
    return Instruction(ip=ip, cs=cs, bytes=bytes(rd.data), text=text, exact=exact,
                       status=status, form=form, prefixes=bytes(prefixes),
                       target=target, far_target=far_target, call_like=call_like)


def _memory_operand(rd: _Reader, mod: int, rm: int, seg: str | None) -> str:
    prefix = seg + ":" if seg else ""
    if mod == 0:
        if rm == 6:
            return f"[{prefix}{_hex(rd.word())}]"
        return f"[{prefix}{RM_BASE[rm]}]"
    if mod == 1:
        d = rd.byte()
        d = d - 256 if d & 0x80 else d
        if d == 0 and rm != 6:
            return f"[byte {prefix}{RM_BASE[rm]}+0x0]"
        return f"[{prefix}{RM_BASE[rm]}{_signed_hex(d)}]"
    d = rd.word()
    d = d - 0x10000 if d & 0x8000 else d
    size = "word " if -128 <= d <= 127 else ""
    return f"[{size}{prefix}{RM_BASE[rm]}{_signed_hex(d)}]"


def _nasm_form_matches(op, form, mod, rm, modrm) -> bool:
    """False where NASM would encode this instruction's text differently
    (it picks the shorter or canonical of two encodings) or cannot
    assemble it at all."""
    if form.status in (ALIAS, UNDEFINED):
        return False
    if form.mnemonic == "setmo":
        return False
    reg = None if modrm is None else (modrm >> 3) & 7
    if mod == 3:
        # reg,reg with the direction bit set: NASM writes the r/m,reg opcode
        if op < 0x40 and (op & 7) in (2, 3):
            return False
        if op in (0x8A, 0x8B):
            return False
        if op == 0x87 and (rm == 0 or reg == 0):
            return False                                   # NASM: 90h+r
        if op in (0x80, 0x81) and rm == 0:
            return False                                   # NASM: 04h-type AL/AX form
        if op in (0xF6, 0xF7) and reg == 0 and rm == 0:
            return False                                   # NASM: A8h/A9h
        if op in (0xC6, 0xC7):
            return False                                   # NASM: B0h+r / B8h+r
        if op == 0xFF and reg in (0, 1, 6):
            return False                                   # NASM: 40h/48h/50h+r
        if op == 0x8F:
            return False                                   # NASM: 58h+r
        if op in (0x8D, 0xC4, 0xC5):
            return False                                   # undefined register form
    elif mod == 0 and rm == 6 and reg == 0 and op in (0x88, 0x89, 0x8A, 0x8B):
        return False                                       # NASM: A0h-A3h
    return True


# ---------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------

def _check_offset(name, value, limit=0xFFFF):
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= limit:
        raise ValueError(f"{name} must be an int 0..{limit:#x}, not {value!r}")


def disassemble(code: bytes, ip: int = 0, cs: int | None = None) -> Instruction:
    """Decode the instruction at the start of ``code`` (bytes, bytearray or
    any byte buffer such as a numpy uint8 slice; ``code[k]`` is the
    byte at CS:(ip+k) & FFFFh).  Never raises for any byte content; a
    ``code`` that ends inside an instruction gives a ``db`` of its bytes with
    status ``"truncated"``.  Empty ``code`` is a ValueError."""
    try:
        view = memoryview(code)
    except TypeError:
        raise TypeError(f"code must be bytes (or a byte buffer), not {type(code).__name__}") from None
    if view.itemsize != 1:
        raise TypeError(f"code must be a buffer of bytes, not of {view.itemsize}-byte items")
    code = view.tobytes()
    if len(code) == 0:
        raise ValueError("code is empty: there is no instruction to decode")
    _check_offset("ip", ip)
    if cs is not None:
        _check_offset("cs", cs)
    return _decode(lambda k: code[k] if k < len(code) else None, ip, cs)


def disassemble_range(read_byte: Callable[[int], int], cs: int, ip: int,
                      count: int) -> list[Instruction]:
    """Decode ``count`` consecutive instructions at CS:IP; ``read_byte(linear)``
    gives the byte (an int 0..255) at a 20-bit linear address.  Offsets wrap
    within CS."""
    _check_offset("cs", cs)
    _check_offset("ip", ip)
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise ValueError(f"count must be a non-negative int, not {count!r}")
    base = cs << 4
    out = []
    for _ in range(count):
        start = ip
        insn = _decode(lambda k: _checked_byte(read_byte, (base + ((start + k) & 0xFFFF)) & 0xFFFFF),
                       start, cs)
        out.append(insn)
        ip = insn.next_ip
    return out


def _checked_byte(read_byte, addr):
    v = read_byte(addr)
    try:
        v = operator.index(v)
    except TypeError:
        raise TypeError(f"read_byte({addr:#x}) gave {v!r}, not an int") from None
    if not 0 <= v <= 0xFF:
        raise ValueError(f"read_byte({addr:#x}) gave {v}, not a byte 0..255")
    return v


def is_call_like(code: bytes) -> bool:
    """True when "step over" should run the instruction at the start of
    ``code`` through to the next one: CALL (all forms), INT n, INT3, INTO,
    LOOP/LOOPE/LOOPNE, and REP/REPE/REPNE string instructions."""
    return disassemble(code).call_like


def instruction_length(code: bytes) -> int:
    """Length in bytes of the instruction at the start of ``code``, prefixes
    included (the whole of ``code`` when it ends inside the instruction)."""
    return disassemble(code).length


def format_line(insn: Instruction, hex_width: int = 8) -> str:
    """One listing line: ``SSSS:OOOO  hex bytes  text`` (``OOOO`` alone when
    the segment is unknown)."""
    where = f"{insn.cs:04X}:{insn.ip:04X}" if insn.cs is not None else f"{insn.ip:04X}"
    hx = insn.bytes.hex().upper()
    return f"{where}  {hx:<{hex_width * 2}}  {insn.text}"


# ---------------------------------------------------------------------------
# command line
# ---------------------------------------------------------------------------

def _parse_seg_off(text: str) -> tuple[int, int]:
    parts = text.split(":")
    if len(parts) != 2:
        raise ValueError(f"expected SEG:OFF in hex, e.g. 0000:0100, not {text!r}")
    try:
        seg, off = (int(p, 16) for p in parts)
    except ValueError:
        raise ValueError(f"expected SEG:OFF in hex, e.g. 0000:0100, not {text!r}") from None
    if not (0 <= seg <= 0xFFFF and 0 <= off <= 0xFFFF):
        raise ValueError(f"segment and offset must be 0000..FFFF, not {text!r}")
    return seg, off


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pypc_core.cpu.disasm",
        description="Disassemble a raw 8088 binary (NASM syntax listing).")
    parser.add_argument("file", help="raw binary")
    parser.add_argument("--org", default="0000:0100", metavar="SEG:OFF",
                        help="where the file's first byte is (hex, default 0000:0100)")
    parser.add_argument("--count", type=int, default=None, metavar="N",
                        help="stop after N instructions")
    args = parser.parse_args(argv)
    try:
        seg, off = _parse_seg_off(args.org)
    except ValueError as e:
        parser.error(f"--org: {e}")
    if args.count is not None and args.count < 0:
        parser.error("--count must be >= 0")
    try:
        with open(args.file, "rb") as fh:
            data = fh.read()
    except OSError as e:
        parser.error(f"cannot read {args.file}: {e.strerror or e}")
    if not data:
        parser.error(f"{args.file} is empty")
    if off + len(data) > 0x10000:
        parser.error(f"{args.file} ({len(data)} bytes) does not fit in the segment "
                     f"from offset {off:04X}h (at most {0x10000 - off} bytes)")
    pos = 0
    n = 0
    lines = []
    size = len(data)
    while pos < size and (args.count is None or n < args.count):
        insn = _decode(lambda k, p=pos: data[p + k] if p + k < size else None, off + pos, seg)
        lines.append(format_line(insn))
        pos += insn.length
        n += 1
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
