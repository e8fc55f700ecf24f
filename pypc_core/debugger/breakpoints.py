"""Breakpoints and the machine's table of them (``m.breakpoints``).

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
Conditions are ``conditions.py``'s.
"""

import attrs
import numpy as np

from ..cpu import state as S
from ..errors import PypcError
from .addresses import MEM_TOP, parse_address, parse_number
from .conditions import condition_text, evaluate, parse_condition
from .errors import BreakpointError

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
