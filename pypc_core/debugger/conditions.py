"""Breakpoint conditions: parsed into tuples (never ``eval``), evaluated
against the registers and memory by a small interpreter::

    ax == 0x1234 and byte[ds:si] != 0
    (cx > 3 || flags & 0x40 == 0) && word[0x41a] != word[0x41c]

Operands: registers (ax..di, al..bh, cs ds es ss ip flags), numbers
(``123``, ``0x7B``, ``7Bh``, ``0b1111011``), ``byte[...]``/``word[...]``
of ``seg:off`` (each a register, a number, or a sum/difference of them) or of
a linear address.  Operators: ``== != < <= > >=``, ``&`` (bit test: a
comparison's left side may be ``x & mask``), ``and/&&``, ``or/||``,
``not/!`` and parentheses.  The JSON-RPC contract's list form
``[{"register": "ax", "op": "eq", "value": "0x1234"}, ...]`` (all must hold)
is accepted too.
"""

import re

import numpy as np

from ..cpu import state as S
from .addresses import MEM_TOP, parse_number
from .errors import BreakpointError

REG16 = {name: i for i, name in enumerate(S.REG16_NAMES)}
REG16.update({name: 8 + i for i, name in enumerate(S.SEG_NAMES)})
REG16["ip"] = S.IP
REG16["flags"] = S.FLAGS
# the index of each 8-bit register in regs.view(uint8): AX is bytes 0-1 (AL, AH),
# CX 2-3, DX 4-5, BX 6-7
REG8 = {name: i for i, name in enumerate(("al", "ah", "cl", "ch", "dl", "dh", "bl", "bh"))}
CMP_OPS = {"==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}
OP_NAMES = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}

_TOKEN = re.compile(r"\s*(?:(\|\||&&|==|!=|<=|>=|[()\[\]:<>!&+\-])|([A-Za-z_][A-Za-z0-9_]*)"
                    r"|(0[xX][0-9a-fA-F]+|0[bB][01]+|0[oO][0-7]+|[0-9][0-9a-fA-F]*[hH]?))")


def _tokens(text):
    pos, out = 0, []
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise BreakpointError(f"bad condition {text!r}: unexpected {text[pos:].strip()[:10]!r}")
        op, word, num = m.groups()
        if op:
            out.append(("op", op))
        elif word:
            out.append(("word", word.lower()))
        else:
            out.append(("num", parse_number(num)))
        pos = m.end()
    return out


class _Parser:
    def __init__(self, text):
        self.text = text
        self.toks = _tokens(text)
        self.i = 0

    def fail(self, why):
        raise BreakpointError(f"bad condition {self.text!r}: {why}")

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else (None, None)

    def take(self, kind=None, value=None):
        tok = self.peek()
        if tok[0] is None or (kind and tok[0] != kind) or (value and tok[1] != value):
            self.fail(f"expected {value or kind}" + (f", found {tok[1]!r}" if tok[1] is not None
                                                   else " at the end"))
        self.i += 1
        return tok

    def parse(self):
        if not self.toks:
            self.fail("it is empty")
        node = self.or_expr()
        if self.i != len(self.toks):
            self.fail(f"unexpected {self.peek()[1]!r}")
        return node

    def _chain(self, name, spellings, operand):
        """``operand`` (op ``operand``)*, left-associative: ``name`` nodes."""
        node = operand()
        while self.peek() in spellings:
            self.i += 1
            node = (name, node, operand())
        return node

    def or_expr(self):
        return self._chain("or", (("op", "||"), ("word", "or")), self.and_expr)

    def and_expr(self):
        return self._chain("and", (("op", "&&"), ("word", "and")), self.not_expr)

    def not_expr(self):
        if self.peek() in (("op", "!"), ("word", "not")):
            self.i += 1
            return ("not", self.not_expr())
        if self.peek() == ("op", "("):
            # a parenthesised condition, or a parenthesised value: try the
            # condition first
            save = self.i
            self.i += 1
            try:
                node = self.or_expr()
                self.take("op", ")")
                if self.peek()[0] == "op" and self.peek()[1] in CMP_OPS:
                    raise BreakpointError("value")
                return node
            except BreakpointError:
                self.i = save
        return self.comparison()

    def comparison(self):
        lhs = self.value()
        tok = self.peek()
        if tok[0] != "op" or tok[1] not in CMP_OPS:
            self.fail("expected a comparison (== != < <= > >=)")
        self.i += 1
        return ("cmp", CMP_OPS[tok[1]], lhs, self.value())

    def value(self):
        node = self.sum()
        while self.peek() == ("op", "&"):
            self.i += 1
            node = ("bitand", node, self.sum())
        return node

    def sum(self):
        node = self.atom()
        while self.peek() in (("op", "+"), ("op", "-")):
            op = self.take()[1]
            node = ("add" if op == "+" else "sub", node, self.atom())
        return node

    def atom(self):
        kind, v = self.peek()
        if kind == "num":
            self.i += 1
            return ("num", v)
        if kind == "op" and v == "(":
            self.i += 1
            node = self.value()
            self.take("op", ")")
            return node
        if kind == "word":
            self.i += 1
            if v in REG16:
                return ("reg", v)
            if v in REG8:
                return ("reg8", v)
            if v in ("byte", "word"):
                self.take("op", "[")
                first = self.sum()
                second = None
                if self.peek() == ("op", ":"):
                    self.i += 1
                    second = self.sum()
                self.take("op", "]")
                width = 1 if v == "byte" else 2
                if second is None:
                    return ("mem", width, None, first)
                return ("mem", width, first, second)
            self.fail(f"unknown name {v!r}")
        self.fail(f"unexpected {v!r}" if v is not None else "it ends too early")


def parse_condition(condition):
    """A condition (string, or the contract's list of register comparisons)
    -> a tuple tree, or None for no condition."""
    if condition is None or condition == "" or condition == []:
        return None
    if isinstance(condition, str):
        return _Parser(condition).parse()
    if isinstance(condition, dict):
        condition = [condition]
    if isinstance(condition, (list, tuple)):
        node = None
        for item in condition:
            if not isinstance(item, dict) or set(item) - {"register", "op", "value"} \
                    or not {"register", "op", "value"} <= set(item):
                raise BreakpointError(f"bad condition {item!r}: want "
                                      "{'register': ..., 'op': ..., 'value': ...}")
            reg = str(item["register"]).lower()
            if reg in REG16:
                lhs = ("reg", reg)
            elif reg in REG8:
                lhs = ("reg8", reg)
            else:
                raise BreakpointError(f"bad condition: unknown register {item['register']!r}")
            op = item["op"]
            if op in CMP_OPS:
                op = CMP_OPS[op]
            if op not in OP_NAMES:
                raise BreakpointError(f"bad condition: unknown operator {item['op']!r} "
                                      "(eq ne lt le gt ge)")
            cmp = ("cmp", op, lhs, ("num", parse_number(item["value"])))
            node = cmp if node is None else ("and", node, cmp)
        return node
    raise BreakpointError(f"bad condition {condition!r}")


def condition_text(node):
    """A tree back to text (normalised, for listings)."""
    kind = node[0]
    if kind in ("and", "or"):
        return f"({condition_text(node[1])} {kind} {condition_text(node[2])})"
    if kind == "not":
        return f"not {condition_text(node[1])}"
    if kind == "cmp":
        return f"{condition_text(node[2])} {OP_NAMES[node[1]]} {condition_text(node[3])}"
    if kind == "num":
        return f"{node[1]:#x}"
    if kind in ("reg", "reg8"):
        return node[1]
    if kind == "bitand":
        return f"({condition_text(node[1])} & {condition_text(node[2])})"
    if kind in ("add", "sub"):
        return f"{condition_text(node[1])}{'+' if kind == 'add' else '-'}{condition_text(node[2])}"
    if kind == "mem":
        name = "byte" if node[1] == 1 else "word"
        if node[2] is None:
            return f"{name}[{condition_text(node[3])}]"
        return f"{name}[{condition_text(node[2])}:{condition_text(node[3])}]"
    raise AssertionError(node)


def evaluate(node, regs, mem):
    """Evaluate a condition tree against ``regs`` (uint16[16]) and ``mem``."""
    kind = node[0]
    if kind == "and":
        return evaluate(node[1], regs, mem) and evaluate(node[2], regs, mem)
    if kind == "or":
        return evaluate(node[1], regs, mem) or evaluate(node[2], regs, mem)
    if kind == "not":
        return not evaluate(node[1], regs, mem)
    if kind == "cmp":
        a = _value(node[2], regs, mem)
        b = _value(node[3], regs, mem)
        op = node[1]
        return (a == b if op == "eq" else a != b if op == "ne" else a < b if op == "lt"
                else a <= b if op == "le" else a > b if op == "gt" else a >= b)
    raise AssertionError(node)


def _value(node, regs, mem):
    kind = node[0]
    if kind == "num":
        return node[1]
    if kind == "reg":
        return int(regs[REG16[node[1]]])
    if kind == "reg8":
        return int(regs.view(np.uint8)[REG8[node[1]]])
    if kind == "bitand":
        return _value(node[1], regs, mem) & _value(node[2], regs, mem)
    if kind == "add":
        return _value(node[1], regs, mem) + _value(node[2], regs, mem)
    if kind == "sub":
        return _value(node[1], regs, mem) - _value(node[2], regs, mem)
    if kind == "mem":
        width, seg, off = node[1], node[2], node[3]
        if seg is None:
            a = _value(off, regs, mem) & (MEM_TOP - 1)
            b = (a + 1) & (MEM_TOP - 1)
        else:
            base = (_value(seg, regs, mem) & 0xFFFF) << 4
            o = _value(off, regs, mem) & 0xFFFF
            a = (base + o) & (MEM_TOP - 1)
            b = (base + ((o + 1) & 0xFFFF)) & (MEM_TOP - 1)
        v = int(mem[a])
        if width == 2:
            v |= int(mem[b]) << 8
        return v
    raise AssertionError(node)
