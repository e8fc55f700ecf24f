"""A small LLVM IR builder that writes the IR text directly.

The block translator (blockgen.py) needs only integers, pointers, a few
dozen instructions and one intrinsic.  llvmlite's ``ir`` package builds an
object per instruction and formats them again when the module is printed;
for a region that was about half of the whole translation time.  This
module has the same names and calls for the part blockgen uses
(``IntType``, ``Constant``, ``Module``, ``Function``, ``IRBuilder`` with
``add``, ``icmp_unsigned``, ``load``, ``cbranch`` ...) and appends each
instruction to its block as a line of text: ``str(module)`` is a join.
Pointers are LLVM's opaque ``ptr``; a pointer value remembers the type it
points to, so ``load`` and ``gep`` need no type argument, as in llvmlite.
"""

import itertools


class Type:
    __slots__ = ("name", "width", "pointee")

    def __init__(self, name, width=0, pointee=None):
        self.name = name
        self.width = width
        self.pointee = pointee

    def as_pointer(self):
        return Type("ptr", 64, self)

    def __str__(self):
        return self.name

    def __eq__(self, other):
        return isinstance(other, Type) and self.name == other.name and (
            self.name != "ptr" or self.pointee == other.pointee)

    def __hash__(self):
        return hash(self.name)


_INT_TYPES = {}


def IntType(bits):
    t = _INT_TYPES.get(bits)
    if t is None:
        t = _INT_TYPES[bits] = Type(f"i{bits}", bits)
    return t


class Value:
    """An SSA value (or an argument): its type and how the IR names it."""
    __slots__ = ("type", "ref")

    def __init__(self, type_, ref):
        self.type = type_
        self.ref = ref


class Constant(Value):
    __slots__ = ()

    def __init__(self, type_, value):
        if type_.width == 1:
            text = "true" if value else "false"
        else:
            value &= (1 << type_.width) - 1
            if value >> (type_.width - 1):          # print as signed, as LLVM does
                value -= 1 << type_.width
            text = str(value)
        super().__init__(type_, text)


class FunctionType:
    def __init__(self, ret, args):
        self.ret = ret
        self.args = list(args)


class Block:
    __slots__ = ("name", "lines", "ids")

    def __init__(self, name, ids):
        self.name = name
        self.lines = []
        self.ids = ids          # the function's value numbers (shared by its blocks)


class Argument(Value):
    __slots__ = ("attrs",)

    def add_attribute(self, attr):
        self.attrs.append(attr)


class Function:
    def __init__(self, module, ftype, name):
        self.module = module
        self.ftype = ftype
        self.name = name
        self.linkage = "external"
        self.args = []
        for i, t in enumerate(ftype.args):
            a = Argument(t, f"%a{i}")
            a.attrs = []
            self.args.append(a)
        self.blocks = []
        self._block_names = set()
        # value names count from 0 in every function, so the same code
        # gives the same text (the region cache's key)
        self._ids = itertools.count()
        module.functions.append(self)

    def append_basic_block(self, name="b"):
        base, n = name, 1
        while name in self._block_names:
            n += 1
            name = f"{base}.{n}"
        self._block_names.add(name)
        block = Block(name, self._ids)
        self.blocks.append(block)
        return block

    def text(self):
        args = ", ".join(f"{a.type}{''.join(' ' + x for x in a.attrs)} {a.ref}"
                         for a in self.args)
        out = [f"define {self.ftype.ret} @{self.name}({args}) {{"]
        for block in self.blocks:
            out.append(f"{block.name}:")
            out.extend(block.lines)
        out.append("}")
        return "\n".join(out)


class _Intrinsic:
    def __init__(self, name, ret, args, attributes=""):
        self.name = name
        self.ret = ret
        self.args = args
        self.attributes = attributes


class Module:
    def __init__(self, name=""):
        self.name = name
        self.functions = []
        self.declarations = {}

    def declare_function(self, name, ret, args, attributes=""):
        """An external function (bound by name when the code is linked)."""
        if name not in self.declarations:
            self.declarations[name] = _Intrinsic(name, ret, list(args), attributes)
        return self.declarations[name]

    def declare_intrinsic(self, name, types):
        t = types[0]
        full = f"{name}.{t}"
        if full not in self.declarations:
            self.declarations[full] = _Intrinsic(full, t, [t])
        return self.declarations[full]

    def __str__(self):
        decls = [f"declare {d.ret} @{d.name}({', '.join(str(a) for a in d.args)})"
                 + (f" {d.attributes}" if d.attributes else "")
                 for d in self.declarations.values()]
        return "\n".join(decls + [f.text() for f in self.functions]) + "\n"


class _Switch:
    def __init__(self, lines, index, value, default):
        self._lines = lines
        self._index = index
        self._head = f"  switch {value.type} {value.ref}, label %{default.name} ["
        self._cases = []
        lines[index] = self._head + " ]"

    def add_case(self, const, block):
        self._cases.append(f"{const.type} {const.ref}, label %{block.name}")
        self._lines[self._index] = self._head + " " + " ".join(self._cases) + " ]"


_I1 = IntType(1)


class IRBuilder:
    def __init__(self, block=None):
        self.block = block

    def position_at_end(self, block):
        self.block = block

    def _emit(self, type_, text):
        ref = f"%v{next(self.block.ids)}"
        self.block.lines.append(f"  {ref} = {text}")
        return Value(type_, ref)

    def _bin(self, op, a, b):
        return self._emit(a.type, f"{op} {a.type} {a.ref}, {b.ref}")

    def add(self, a, b):
        return self._bin("add", a, b)

    def sub(self, a, b):
        return self._bin("sub", a, b)

    def and_(self, a, b):
        return self._bin("and", a, b)

    def or_(self, a, b):
        return self._bin("or", a, b)

    def xor(self, a, b):
        return self._bin("xor", a, b)

    def shl(self, a, b):
        return self._bin("shl", a, b)

    def lshr(self, a, b):
        return self._bin("lshr", a, b)

    def not_(self, a):
        return self._emit(a.type, f"xor {a.type} {a.ref}, {Constant(a.type, -1).ref}")

    _PRED = {"==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}

    def icmp_unsigned(self, op, a, b):
        p = self._PRED[op]
        p = p if p in ("eq", "ne") else "u" + p
        return self._emit(_I1, f"icmp {p} {a.type} {a.ref}, {b.ref}")

    def icmp_signed(self, op, a, b):
        p = self._PRED[op]
        p = p if p in ("eq", "ne") else "s" + p
        return self._emit(_I1, f"icmp {p} {a.type} {a.ref}, {b.ref}")

    def select(self, c, a, b):
        return self._emit(a.type, f"select i1 {c.ref}, {a.type} {a.ref}, {b.type} {b.ref}")

    def zext(self, v, t):
        return self._emit(t, f"zext {v.type} {v.ref} to {t}")

    def trunc(self, v, t):
        return self._emit(t, f"trunc {v.type} {v.ref} to {t}")

    def alloca(self, t, name=None, entry=None):
        """An alloca; with ``entry`` (the function's first block) it goes at
        that block's start, where every alloca belongs (LLVM's mem2reg
        promotes only those, and they dominate every use)."""
        if entry is None:
            return self._emit(t.as_pointer(), f"alloca {t}")
        ref = f"%v{next(entry.ids)}"
        entry.lines.insert(0, f"  {ref} = alloca {t}")
        return Value(t.as_pointer(), ref)

    def load(self, ptr, align=None):
        t = ptr.type.pointee
        al = f", align {align}" if align else ""
        return self._emit(t, f"load {t}, ptr {ptr.ref}{al}")

    def store(self, v, ptr):
        self.block.lines.append(f"  store {v.type} {v.ref}, ptr {ptr.ref}")

    def gep(self, ptr, indices, inbounds=False):
        t = ptr.type.pointee
        (i,) = indices
        ib = "inbounds " if inbounds else ""
        return self._emit(ptr.type, f"getelementptr {ib}{t}, ptr {ptr.ref}, {i.type} {i.ref}")

    def bitcast(self, ptr, t):
        return Value(t, ptr.ref)              # opaque pointers: only the pointee changes

    def call(self, fn, args):
        a = ", ".join(f"{x.type} {x.ref}" for x in args)
        return self._emit(fn.ret, f"call {fn.ret} @{fn.name}({a})")

    def branch(self, block):
        self.block.lines.append(f"  br label %{block.name}")

    def cbranch(self, c, t, f):
        self.block.lines.append(f"  br i1 {c.ref}, label %{t.name}, label %{f.name}")

    def ret(self, v):
        self.block.lines.append(f"  ret {v.type} {v.ref}")

    def switch(self, v, default):
        lines = self.block.lines
        lines.append("")
        return _Switch(lines, len(lines) - 1, v, default)
