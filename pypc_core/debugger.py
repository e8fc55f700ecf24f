"""The debugger's data: breakpoints, conditions, stops and the instruction
trace.  ``Machine`` owns one of each (``m.breakpoints``, ``m.trace``) and
its run methods return a :class:`Stop`; the JSON-RPC methods, the session API
and the console are thin adapters over this module.

How breakpoints reach the compiled core (nothing here runs per instruction):

* execution: the per-byte ``XF_BREAKPOINT`` flag; the core exits before the
  instruction and Python filters (condition, hit counts);
* memory read/write/access: the per-byte ``XF_WATCH_R``/``XF_WATCH_W`` flags
  and their page flags; the core finishes the instruction, then exits;
* I/O: watched port ranges in ``ctl[C_IOW..]`` send those ports' accesses
  through Python even when the core could answer them;
* software INT n: a 256-bit mask in ``ctl[C_INT_MASK..]``; the core exits
  before the INT is taken;
* hardware IRQ n: the interrupt acknowledge already happens in Python.

With nothing armed none of these costs anything on the common path.

Conditions are parsed into tuples (never ``eval``)::

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

import attrs
import numpy as np

from .cpu import state as S
from .errors import PypcError

MEM_TOP = 1 << 20


class BreakpointError(PypcError, ValueError):
    """A breakpoint (or condition, or address) that makes no sense; nothing
    was changed."""


# ---------------------------------------------------------------------------
# addresses
# ---------------------------------------------------------------------------

def parse_number(text):
    """``123``, ``0x7B``, ``7Bh``, ``0b1111011``, ``0o17`` -> int."""
    if isinstance(text, bool):
        raise BreakpointError(f"not a number: {text!r}")
    if isinstance(text, (int, np.integer)):
        return int(text)
    if not isinstance(text, str):
        raise BreakpointError(f"not a number: {text!r}")
    t = text.strip().lower().replace("_", "")
    try:
        if t.endswith("h") and re.fullmatch(r"[0-9a-f]+h", t):
            return int(t[:-1], 16)
        return int(t, 0)
    except ValueError:
        raise BreakpointError(f"not a number: {text!r}") from None


def parse_address(address, what="address"):
    """A linear address from an int, ``"SSSS:OOOO"`` (hex), ``(seg, off)``
    or a number string.  Returns (linear, segment or None, offset or None)."""
    seg = off = None
    if isinstance(address, (tuple, list)) and len(address) == 2:
        seg, off = (parse_number(x) for x in address)
    elif isinstance(address, str) and ":" in address:
        a, _, b = address.partition(":")
        try:
            seg, off = int(a.strip(), 16), int(b.strip().rstrip("hH"), 16)
        except ValueError:
            raise BreakpointError(f"bad {what} {address!r}: use SSSS:OOOO (hex)") from None
    else:
        linear = parse_number(address)
        if not 0 <= linear < MEM_TOP:
            raise BreakpointError(f"{what} {linear:#x} is beyond 1 MiB")
        return linear, None, None
    if not (0 <= seg <= 0xFFFF and 0 <= off <= 0xFFFF):
        raise BreakpointError(f"bad {what} {address!r}: segment and offset are 16-bit")
    return ((seg << 4) + off) & (MEM_TOP - 1), seg, off


# ---------------------------------------------------------------------------
# conditions
# ---------------------------------------------------------------------------

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

    def or_expr(self):
        node = self.and_expr()
        while self.peek() in (("op", "||"), ("word", "or")):
            self.i += 1
            node = ("or", node, self.and_expr())
        return node

    def and_expr(self):
        node = self.not_expr()
        while self.peek() in (("op", "&&"), ("word", "and")):
            self.i += 1
            node = ("and", node, self.not_expr())
        return node

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


# ---------------------------------------------------------------------------
# breakpoints
# ---------------------------------------------------------------------------

KINDS = ("exec", "mem_read", "mem_write", "mem_access", "io_read", "io_write", "io_access",
         "int", "irq")
KIND_ALIASES = {"execution": "exec", "memory_read": "mem_read", "memory_write": "mem_write",
                "memory_access": "mem_access", "interrupt": "int",
                "software_interrupt": "int"}


@attrs.define(eq=False)
class Breakpoint:
    id: int
    kind: str
    address: int = None            # exec / mem_*: linear address; io_*: port; int/irq: number
    length: int = 1
    segment: int = None            # as given (seg:off forms), for listings
    offset: int = None
    ah: int = None                 # int: AH / AL filters
    al: int = None
    condition: object = None       # parsed tree, or None
    ignore: int = 0                # condition matches to let pass before the first stop
    every: int = 1                 # then stop on every Nth match
    oneshot: bool = False
    enabled: bool = True
    hits: int = 0                  # condition matches so far
    internal: bool = False         # a stepping helper: never listed
    stop_kind: str = None          # internal: the Stop kind it gives ("step", "until")
    return_check: bool = False     # internal (step out): stop only at a return

    @property
    def number(self):
        return self.address

    @property
    def port(self):
        return self.address

    def covers(self, lo, hi):
        """True when [lo, hi] meets this breakpoint's range."""
        return lo <= self.address + self.length - 1 and hi >= self.address

    def to_dict(self):
        d = {"id": self.id, "kind": self.kind, "enabled": self.enabled, "hits": self.hits,
             "ignore": self.ignore, "every": self.every, "oneshot": self.oneshot}
        if self.kind == "exec":
            d["address"] = self.address
            if self.segment is not None:
                d["segment"], d["offset"] = self.segment, self.offset
        elif self.kind.startswith("mem_"):
            d["address"], d["length"] = self.address, self.length
            if self.segment is not None:
                d["segment"], d["offset"] = self.segment, self.offset
        elif self.kind.startswith("io_"):
            d["port"], d["length"] = self.address, self.length
        else:
            d["number"] = self.address
            if self.ah is not None:
                d["ah"] = self.ah
            if self.al is not None:
                d["al"] = self.al
        if self.condition is not None:
            d["condition"] = condition_text(self.condition)
        return d

    def matches(self, regs, mem):
        """Count a hit and say whether this one stops (condition, ignore,
        every).  Called only when the event itself (address, port, INT
        number, AH/AL) matched."""
        if not self.enabled:
            return False
        if self.condition is not None and not evaluate(self.condition, regs, mem):
            return False
        self.hits += 1
        n = self.hits - self.ignore
        return n >= 1 and (n - 1) % self.every == 0


class BreakpointTable:
    """The machine's breakpoints.  Every change re-arms the core's flags
    (``xflags``, page flags, ``ctl`` masks) from the whole table, so the core
    never holds a stale bit."""

    def __init__(self, cpu, memory, resolve=None):
        self._cpu = cpu
        self._memory = memory
        # resolve(text) -> (segment, offset): names for exec and memory
        # addresses (``Machine.symbols.resolve``); None: numbers only
        self._resolve = resolve
        self._bps = {}
        self._next_id = 1
        self._armed_exec = np.zeros(0, dtype=np.int64)
        self._armed_watch = np.zeros(0, dtype=np.int64)
        self._armed_pages = set()
        self.io_armed = False          # any I/O breakpoint armed (read per port exit)
        self.irq_armed = False         # any IRQ breakpoint armed (read per IRQ exit)

    # -- the public interface ------------------------------------------------
    def add(self, kind, address=None, *, port=None, number=None, length=1, ah=None, al=None,
            condition=None, ignore=0, every=1, oneshot=False, enabled=True, internal=False):
        """Create a breakpoint (see the module docstring); returns it.  Bad
        input raises BreakpointError and changes nothing."""
        return self.insert(self.build(kind, address, port=port, number=number, length=length,
                                      ah=ah, al=al, condition=condition, ignore=ignore,
                                      every=every, oneshot=oneshot, enabled=enabled,
                                      internal=internal))

    def insert(self, bp):
        """Give a built breakpoint its id and arm it."""
        bp.id = self._next_id
        self._next_id += 1
        self._bps[bp.id] = bp
        self.rearm()
        return bp

    def discard(self, bp):
        """Remove ``bp`` if it is still there (stepping helpers, one-shots)."""
        if self._bps.pop(bp.id, None) is not None:
            self.rearm()

    def build(self, kind, address=None, *, port=None, number=None, length=1, ah=None, al=None,
              condition=None, ignore=0, every=1, oneshot=False, enabled=True, internal=False):
        """Validate and build a Breakpoint without adding it (id 0)."""
        kind = KIND_ALIASES.get(kind, kind)
        if kind not in KINDS:
            raise BreakpointError(f"unknown breakpoint kind {kind!r} (one of {', '.join(KINDS)})")
        for name, v, low in (("ignore", ignore, 0), ("every", every, 1)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
                raise BreakpointError(f"{name} must be an integer >= {low}, not {v!r}")
        seg = off = None
        if kind == "exec" or kind.startswith("mem_"):
            if address is None:
                raise BreakpointError(f"a {kind} breakpoint needs an address")
            linear, seg, off = self._address(address)
            ln = _length(length)
            if kind == "exec":
                if ln != 1:
                    raise BreakpointError("an exec breakpoint is one address (length 1)")
            elif linear + ln > MEM_TOP:
                raise BreakpointError(f"range {linear:#x}+{ln:#x} goes beyond 1 MiB")
            target, length = linear, ln
        elif kind.startswith("io_"):
            p = port if port is not None else address
            if p is None:
                raise BreakpointError(f"an {kind} breakpoint needs a port")
            target = parse_number(p)
            length = _length(length)
            if not 0 <= target <= 0xFFFF or target + length > 0x10000:
                raise BreakpointError(f"port range {target:#x}+{length} is outside 0..FFFFh")
        else:
            n = number if number is not None else address
            if n is None:
                raise BreakpointError(f"an {kind} breakpoint needs a number")
            target = parse_number(n)
            top = 0xFF if kind == "int" else 15
            if not 0 <= target <= top:
                raise BreakpointError(f"{kind} number {target} is outside 0..{top}")
            length = 1
        if kind != "int" and (ah is not None or al is not None):
            raise BreakpointError("ah/al filters belong to int breakpoints")
        ah = None if ah is None else _byte(ah, "ah")
        al = None if al is None else _byte(al, "al")
        return Breakpoint(id=0, kind=kind, address=target, length=length, segment=seg,
                          offset=off, ah=ah, al=al, condition=parse_condition(condition),
                          ignore=int(ignore), every=int(every), oneshot=bool(oneshot),
                          enabled=bool(enabled), internal=internal)

    def _address(self, address):
        """parse_address, and a loaded symbol (``name``, ``name+0x10``) for a
        string that is not a number or SSSS:OOOO."""
        try:
            return parse_address(address)
        except BreakpointError:
            if self._resolve is None or not isinstance(address, str):
                raise
        try:
            seg, off = self._resolve(address)
        except (ValueError, PypcError) as exc:
            raise BreakpointError(f"bad address {address!r}: not a number, not SSSS:OOOO: "
                                  f"{exc}") from None
        return ((seg << 4) + off) & (MEM_TOP - 1), seg, off

    def remove(self, bp_id):
        bp = self._bps.get(_id(bp_id))
        if bp is None:
            raise BreakpointError(f"no breakpoint {bp_id}")
        del self._bps[bp.id]
        self.rearm()
        return bp

    def get(self, bp_id):
        bp = self._bps.get(_id(bp_id))
        if bp is None or bp.internal:
            raise BreakpointError(f"no breakpoint {bp_id}")
        return bp

    def enable(self, bp_id, flag=True):
        bp = self.get(bp_id)
        bp.enabled = bool(flag)
        self.rearm()
        return bp

    def list(self):
        """The user's breakpoints (stepping helpers are never listed)."""
        return [bp for bp in self._bps.values() if not bp.internal]

    def clear(self):
        for bp in self.list():
            del self._bps[bp.id]
        self.rearm()

    def __len__(self):
        return len(self.list())

    def __iter__(self):
        return iter(self.list())

    def all(self):
        return list(self._bps.values())

    # -- arming the core -------------------------------------------------------
    def rearm(self):
        cpu, xf = self._cpu, self._memory.xflags
        ctl = cpu.ctl
        xf[self._armed_exec] &= np.uint8(~S.XF_BREAKPOINT & 0xFF)
        xf[self._armed_watch] &= np.uint8(~(S.XF_WATCH_R | S.XF_WATCH_W) & 0xFF)
        pf = cpu.page_flags
        for page in self._armed_pages:
            pf[page] &= ~pf.dtype.type(S.PG_WATCH_R | S.PG_WATCH_W)
        exec_addrs, watch_addrs, pages = [], [], set()
        int_mask = [0, 0, 0, 0]
        io_ranges = {1: [], 2: []}
        for bp in self._bps.values():
            if not bp.enabled:
                continue
            if bp.kind == "exec":
                exec_addrs.append(bp.address)
            elif bp.kind.startswith("mem_"):
                flag = {"mem_read": S.XF_WATCH_R, "mem_write": S.XF_WATCH_W,
                        "mem_access": S.XF_WATCH_R | S.XF_WATCH_W}[bp.kind]
                page_flag = ((S.PG_WATCH_R if flag & S.XF_WATCH_R else 0)
                             | (S.PG_WATCH_W if flag & S.XF_WATCH_W else 0))
                rng = np.arange(bp.address, bp.address + bp.length, dtype=np.int64)
                xf[rng] |= np.uint8(flag)
                watch_addrs.append(rng)
                for page in range(bp.address >> S.PAGE_SHIFT,
                                  ((bp.address + bp.length - 1) >> S.PAGE_SHIFT) + 1):
                    pf[page] |= pf.dtype.type(page_flag)
                    pages.add(page)
            elif bp.kind.startswith("io_"):
                dirs = {"io_read": (1,), "io_write": (2,), "io_access": (1, 2)}[bp.kind]
                for d in dirs:
                    io_ranges[d].append((bp.address, bp.address + bp.length - 1))
            elif bp.kind == "int":
                int_mask[bp.address >> 6] |= 1 << (bp.address & 63)
        exec_arr = np.array(sorted(set(exec_addrs)), dtype=np.int64)
        xf[exec_arr] |= np.uint8(S.XF_BREAKPOINT)
        self._armed_exec = exec_arr
        self._armed_watch = (np.unique(np.concatenate(watch_addrs)) if watch_addrs
                             else np.zeros(0, dtype=np.int64))
        self._armed_pages = pages
        for i in range(4):
            # the mask words are int64: bit 63 wraps to the sign
            ctl[S.C_INT_MASK + i] = np.int64(int_mask[i] - (1 << 64) if int_mask[i] >> 63
                                             else int_mask[i])
        words = _io_words(io_ranges)
        self.io_armed = bool(words)
        self.irq_armed = any(bp.kind == "irq" and bp.enabled for bp in self._bps.values())
        ctl[S.C_IOW_N] = len(words)
        for i, w in enumerate(words):
            ctl[S.C_IOW + i] = w


def _io_words(io_ranges):
    """Merge the watched port ranges of each direction into at most IOW_MAX
    ctl words (merging neighbours covers a superset; Python filters)."""
    words = []
    per_dir = max(1, S.IOW_MAX // 2)
    for d in (1, 2):
        rs = sorted(io_ranges[d])
        merged = []
        for lo, hi in rs:
            if merged and lo <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], hi)
            else:
                merged.append([lo, hi])
        while len(merged) > per_dir:
            # join the two closest neighbours
            gaps = [merged[i + 1][0] - merged[i][1] for i in range(len(merged) - 1)]
            i = gaps.index(min(gaps))
            merged[i][1] = merged[i + 1][1]
            del merged[i + 1]
        words += [lo | (hi << 16) | (d << 32) for lo, hi in merged]
    return words


def _length(length):
    if isinstance(length, bool):
        raise BreakpointError(f"bad length {length!r}")
    n = parse_number(length)
    if n < 1:
        raise BreakpointError(f"the range is empty (length {n})")
    return n


def _byte(v, name):
    n = parse_number(v)
    if not 0 <= n <= 0xFF:
        raise BreakpointError(f"{name} must be a byte, not {v!r}")
    return n


def _id(bp_id):
    if isinstance(bp_id, Breakpoint):
        return bp_id.id
    if isinstance(bp_id, str) and bp_id.startswith("bp-"):
        bp_id = bp_id[3:]
    try:
        return int(bp_id)
    except (TypeError, ValueError):
        raise BreakpointError(f"no breakpoint {bp_id!r}") from None


# ---------------------------------------------------------------------------
# stops
# ---------------------------------------------------------------------------

STOP_KINDS = ("budget", "breakpoint", "step", "halt", "pause", "until", "fault", "key_wait")


@attrs.define
class Stop:
    """Why a run returned, and where the CPU stands now.

    kind: budget (the cycle budget was used up), breakpoint, step (a step,
    step over or step out finished), halt (HLT with interrupts disabled),
    pause (``request_pause``), until (a ``run_until`` target), fault (an
    opcode the core failed to decode, or a device's port handler that
    raised: ``machine.DeviceFault``), key_wait (the guest waits for a key,
    only when asked for).
    """
    kind: str
    cycles: int
    detail: dict = attrs.Factory(dict)
    cs: int = 0
    ip: int = 0
    breakpoint: object = None          # the Breakpoint that stopped the run
    access: dict = None                # memory / I/O access of a breakpoint stop
    interrupt: dict = None             # INT / IRQ breakpoint stops

    @property
    def linear(self):
        return ((self.cs << 4) + self.ip) & (MEM_TOP - 1)

    def to_dict(self):
        d = {"kind": self.kind, "cycles": self.cycles, "cs": self.cs, "ip": self.ip,
             "linear": self.linear}
        if self.breakpoint is not None and not self.breakpoint.internal:
            d["breakpoint"] = self.breakpoint.id
        if self.access is not None:
            d["access"] = dict(self.access)
        if self.interrupt is not None:
            d["interrupt"] = dict(self.interrupt)
        if self.detail:
            d["detail"] = dict(self.detail)
        return d


# ---------------------------------------------------------------------------
# the instruction trace
# ---------------------------------------------------------------------------

EFFECT_KINDS = {S.EFF_MEM_READ: "mem_read", S.EFF_MEM_WRITE: "mem_write",
                S.EFF_IO_READ: "io_read", S.EFF_IO_WRITE: "io_write"}
REG_ORDER = S.REG16_NAMES + S.SEG_NAMES + ("ip", "flags")
MAX_TRACE = 1 << 22


TRACE_KINDS = {S.TRK_INSTRUCTION: "instruction", S.TRK_HLT: "hlt",
               S.TRK_DISPATCH: "interrupt_dispatch"}


class Trace:
    """A bounded ring of CPU Ticks, mostly written by compiled code
    (``run_traced`` in the core, which runs the core an instruction at a
    time while a trace is on, so ``run`` itself carries no trace code).
    A record is one of three kinds (``kind``): an executed ``instruction``;
    a ``hlt`` wait (a halted CPU's clock moving on to the next device
    event); an ``interrupt_dispatch``, the entry of a PIC interrupt, which
    the machine records (:meth:`record_dispatch`) with its ``irq`` and
    ``vector``.  Each has CS:IP (for a wait or a dispatch: the context
    waiting or interrupted), the 8 bytes there, the cycle it started at,
    optionally the registers before it and the memory and I/O effects it
    had (a dispatch: its stack pushes and vector reads)."""

    def __init__(self, cpu):
        self._cpu = cpu
        self.active = False
        self.capacity = 0
        self.registers = False
        self.effects = False
        self._start_n = 0
        self._saved_effects = None
        self._eff_base = 0

    def start(self, capacity=65536, registers=False, effects=False):
        capacity = parse_number(capacity)
        if not 1 <= capacity <= MAX_TRACE:
            raise BreakpointError(f"trace capacity must be 1..{MAX_TRACE}, not {capacity}")
        cpu = self._cpu
        if self.active:
            self.stop()
        cpu.trace_buf = np.zeros((capacity, S.TRACE_WORDS), dtype=np.int64)
        self.capacity = capacity
        self.registers = bool(registers)
        self.effects = bool(effects)
        cpu.ctl[S.C_TRACE_N] = 0
        cpu.ctl[S.C_TRACE] = 1 | (2 if registers else 0) | (4 if effects else 0)
        cpu.tracing = True
        if effects:
            # a bigger effect ring for the trace's lifetime
            self._saved_effects = cpu.effects
            cpu.effects = np.zeros((max(S.MAX_EFFECTS, 4 * capacity), 4), dtype=np.int64)
            cpu.begin_record()
        self.active = True

    def stop(self):
        cpu = self._cpu
        if not self.active:
            return
        cpu.ctl[S.C_TRACE] = 0
        cpu.tracing = False
        if self.effects:
            cpu.end_record()
        self.active = False

    def record_dispatch(self, irq, vector):
        """Record the entry of PIC interrupt ``irq`` through ``vector``;
        called just before the CPU enters it (registers, clock and effect
        count are those before the entry)."""
        if not self.active:
            return
        from .cpu import core
        cpu = self._cpu
        ctl = cpu.ctl
        n = int(ctl[S.C_TRACE_N])
        row = n % self.capacity
        # the record the compiled loop writes before an instruction, then
        # its kind
        core.trace_fill(cpu.regs, cpu.mem, ctl, cpu.trace_buf, row, ctl[S.C_TRACE],
                        np.int64(cpu.regs[S.CS]) << 4, np.int64(cpu.regs[S.IP]),
                        ctl[S.C_CYCLES])
        cpu.trace_buf[row, S.TR_KIND] = (S.TRK_DISPATCH | (irq & 0xFF) << 8
                                         | (vector & 0xFF) << 16)
        ctl[S.C_TRACE_N] = n + 1

    @property
    def total(self):
        """Ticks recorded since the trace started."""
        return int(self._cpu.ctl[S.C_TRACE_N]) if self.capacity else 0

    @property
    def count(self):
        """Records still retained (the ring keeps the latest ``capacity``)."""
        return min(self.total, self.capacity)

    @property
    def first(self):
        """Index of the oldest retained record."""
        return self.total - self.count

    def read(self, start=None, count=128):
        """Records ``start`` .. ``start + count - 1`` (indices count from the
        trace's start; the default is the oldest retained)."""
        if not self.capacity:
            raise BreakpointError("no trace has been started")
        from .cpu.disasm import disassemble
        cpu = self._cpu
        total, first = self.total, self.first
        start = first if start is None else parse_number(start)
        count = parse_number(count)
        if start < first or start > total:
            raise BreakpointError(f"trace index {start} is not retained ({first}..{total})")
        if count < 0:
            raise BreakpointError("count must be >= 0")
        end = min(total, start + count)
        buf = cpu.trace_buf
        eff = cpu.effects
        eff_total = int(cpu.ctl[S.C_EFFECTS])
        out = []
        for n in range(start, end):
            row = buf[n % self.capacity]
            cs, ip = int(row[S.TR_CSIP]) >> 16, int(row[S.TR_CSIP]) & 0xFFFF
            raw = int(row[S.TR_BYTES]).to_bytes(8, "little", signed=True)
            length = disassemble(raw, ip).length
            kind = int(row[S.TR_KIND])
            rec = {"index": n, "kind": TRACE_KINDS[kind & 0xFF],
                   "cycles": int(row[S.TR_CYCLES]), "cs": cs, "ip": ip,
                   "linear": ((cs << 4) + ip) & (MEM_TOP - 1), "bytes": raw[:length],
                   "raw": raw}
            if kind & 0xFF == S.TRK_DISPATCH:
                rec["irq"], rec["vector"] = (kind >> 8) & 0xFF, (kind >> 16) & 0xFF
            if self.registers:
                vals = {}
                for k in range(4):
                    word = int(row[S.TR_REGS + k]) & ((1 << 64) - 1)
                    for j in range(4):
                        if 4 * k + j < len(REG_ORDER):
                            vals[REG_ORDER[4 * k + j]] = (word >> (16 * j)) & 0xFFFF
                rec["regs"] = vals
            if self.effects:
                e0 = int(row[S.TR_EFFECT])
                e1 = (int(buf[(n + 1) % self.capacity][S.TR_EFFECT]) if n + 1 < total
                      else eff_total)
                size = eff.shape[0]
                effects = []
                lost = e0 < eff_total - size
                if not lost:
                    for e in range(e0, e1):
                        k, a, v, x = (int(t) for t in eff[e % size])
                        item = {"kind": EFFECT_KINDS.get(k, str(k))}
                        if k in (S.EFF_MEM_READ, S.EFF_MEM_WRITE):
                            item["address"], item["value"] = a, v
                            if k == S.EFF_MEM_WRITE:
                                item["old"] = x
                        else:
                            item["port"], item["value"], item["width"] = a, v, x
                        effects.append(item)
                rec["effects"] = effects
                if lost:
                    rec["effects_lost"] = True
            out.append(rec)
        return out
