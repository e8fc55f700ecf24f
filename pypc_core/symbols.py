"""Symbols from link maps: names for addresses and addresses for names.

:func:`parse_map` reads the map files DOS toolchains write and a plain list:

* MS/IBM LINK ``/MAP`` and Borland TLINK ``.MAP``: the segment table
  (``Start Stop Length Name Class``, addresses ``00000H``), the publics
  (``Address Publics by Name`` / ``by Value``, lines ``SSSS:OOOO  NAME``;
  ``Abs`` constants and ``Imp`` imports are not addresses and are left out,
  TLINK's ``idle`` symbols are kept) and ``Program entry point at
  SSSS:OOOO``.  Other sections (groups, TLINK's detailed segment map, line
  numbers) are skipped.
* Watcom WLINK maps: the ``Segments`` table and the ``Memory Map``
  section's ``SSSS:OOOO[*+]  symbol`` lines (``*`` unreferenced, ``+`` only
  referenced locally), ``Entry point address: SSSS:OOOO``.
* bin86 ``ld86 -M``: ``module symbol segment value flags`` lines and
  ``Total memory used``; ``A`` (absolute) symbols are constants and left
  out.  The values are offsets in one segment (``ld86 -d``, combined
  instructions and data).
* a plain list, one symbol a line: ``NAME SSSS:OOOO``, ``NAME LINEAR``
  (or the address first); numbers are hex (``1234``, ``0x1234``,
  ``1234h``); blank lines and lines starting ``;`` or ``#`` are skipped.

Link maps give addresses relative to the program image (segment 0 is the
first paragraph of the load image); a :class:`SymbolTable` adds the load
segment (``base``) when it loads them.  A plain list is absolute.

A line that does not parse is a :class:`SymbolError` naming the file and
the line, and nothing of that file is loaded.  Nothing here runs per
instruction: lookups are a binary search over the loaded symbols.
"""

import bisect
import os
import re

import attrs

from .errors import PypcError

MEM_MASK = 0xFFFFF
MAX_MAP_BYTES = 16 << 20            # a map larger than this is refused
MAX_DISTANCE = 0x10000              # name+offset only within 64 KiB of the name

FORMATS = ("ms-link", "tlink", "wlink", "ld86", "list")
RELATIVE_FORMATS = ("ms-link", "tlink", "wlink", "ld86")


class SymbolError(PypcError, ValueError):
    """A map that cannot be read, or a name that is not loaded; nothing was
    changed.  ``brief`` is the message without the text quoted from the
    file (what a JSON-RPC client is told: it names any host file)."""

    def __init__(self, message, brief=None):
        super().__init__(message)
        self.brief = brief or message


@attrs.frozen
class Symbol:
    name: str
    segment: int            # after relocation
    offset: int
    source: str             # the file it came from

    @property
    def linear(self):
        return ((self.segment << 4) + self.offset) & MEM_MASK


@attrs.frozen
class MapFile:
    """A parsed map: symbols as the file gives them (not relocated)."""
    path: str
    format: str
    symbols: tuple          # ((name, segment, offset), ...)
    extent: int = None      # the image's length in bytes, when the map says
    entry: tuple = None     # (segment, offset) of the program entry, when given

    @property
    def relative(self):
        return self.format in RELATIVE_FORMATS


# ---------------------------------------------------------------------------
# parsing
# ---------------------------------------------------------------------------

_HEX = r"[0-9A-Fa-f]"
_SEGOFF = re.compile(rf"^({_HEX}{{1,4}}):({_HEX}{{1,8}})$")
_LINK_SEGTABLE_HEAD = re.compile(r"^\s*Start\s+Stop\s+Length\s+Name\s+Class\s*$", re.I)
_LINK_SEGLINE = re.compile(rf"^\s*({_HEX}{{5,8}})H\s+({_HEX}{{5,8}})H\s+({_HEX}{{5,8}})H\s+"
                           r"(\S+)(?:\s+(\S+))?\s*$", re.I)
_LINK_PUBLICS_HEAD = re.compile(r"^\s*Address\s+Publics\s+by\s+(Name|Value)\s*$", re.I)
_LINK_PUBLIC = re.compile(rf"^\s*({_HEX}{{4}}):({_HEX}{{4,8}})\s+(?:(Abs|Imp|idle|Res)\s+)?"
                          r"(\S+)(?:\s+.*)?$")
_LINK_ENTRY = re.compile(rf"^\s*Program\s+entry\s+point\s+at\s+({_HEX}{{4}}):({_HEX}{{4,8}})"
                         r"\s*$", re.I)
_WLINK_BOX = re.compile(r"^\s*\+-+\+\s*$")
_WLINK_TITLE = re.compile(r"^\s*\|\s*(.*?)\s*\|\s*$")
_WLINK_SYMBOL = re.compile(rf"^({_HEX}{{4}}):({_HEX}{{4,8}})([*+]?)\s+(\S.*?)\s*$")
_WLINK_SEGLINE = re.compile(rf"^(\S+)\s+(\S+)\s+(\S+)\s+({_HEX}{{4}}):({_HEX}{{4,8}})\s+"
                            rf"({_HEX}{{1,8}})\s*$")
_WLINK_ENTRY = re.compile(rf"^\s*Entry\s+point\s+address:\s+({_HEX}{{4}}):({_HEX}{{4,8}})\s*$",
                          re.I)
_LD86_LINE = re.compile(r"^\s*(\S+)\s+(\S+)\s+([0-9A-Fa-f]{1,2})\s+([0-9A-Fa-f]{8})\s+"
                        r"([A-Z]+)\s*$")
_LD86_TOTAL = re.compile(r"^\s*Total\s+memory\s+used:\s+([0-9A-Fa-f]+)\s*$")


def _fail(path, lineno, message, quoted=None):
    """A SymbolError for line ``lineno``; ``quoted`` (text from the file)
    ends the message but not its ``brief``."""
    brief = f"{path}:{lineno}: {message}"
    raise SymbolError(brief if quoted is None else f"{brief}: {quoted}", brief)


def _segoff(path, lineno, seg_text, off_text):
    seg, off = int(seg_text, 16), int(off_text, 16)
    if off > 0xFFFF:
        _fail(path, lineno, "an offset beyond 64 KiB (a 16-bit map has SSSS:OOOO "
                            "addresses)", off_text)
    return seg, off


def _linear_to_segoff(linear):
    """A linear address as a 64 KiB-aligned segment and an offset."""
    return (linear >> 4) & 0xF000, linear & 0xFFFF


def detect_format(lines):
    """The map format of ``lines`` (one of :data:`FORMATS`)."""
    text_head = "\n".join(lines[:400])
    if re.search(r"Open Watcom Linker|WATCOM Linker", text_head, re.I) or any(
            _WLINK_TITLE.match(ln) and _WLINK_TITLE.match(ln).group(1) == "Memory Map"
            for ln in lines):
        return "wlink"
    if any(_LINK_SEGTABLE_HEAD.match(ln) or _LINK_PUBLICS_HEAD.match(ln) for ln in lines):
        if any(re.search(r"Detailed map of segments|ACBP=|^\s*Line numbers for ", ln)
               or re.match(rf"^\s*{_HEX}{{4}}:{_HEX}{{4}}\s+idle\s", ln) for ln in lines):
            return "tlink"
        return "ms-link"
    if any(_LD86_TOTAL.match(ln) for ln in lines):
        return "ld86"
    return "list"


def _parse_link(path, lines, fmt):
    symbols, entry, extent = [], None, None
    section = None
    seen_table = seen_publics = False
    for n, raw in enumerate(lines, 1):
        line = raw.rstrip()
        if not line.strip():
            continue
        if _LINK_SEGTABLE_HEAD.match(line):
            section, seen_table = "segments", True
            continue
        if _LINK_PUBLICS_HEAD.match(line):
            section, seen_publics = "publics", True
            continue
        m = _LINK_ENTRY.match(line)
        if m:
            entry = _segoff(path, n, *m.groups())
            section = None
            continue
        if section == "segments":
            m = _LINK_SEGLINE.match(line)
            if m:
                start, stop = int(m.group(1), 16), int(m.group(2), 16)
                if stop + 1 < start:
                    _fail(path, n, "a segment that stops before it starts",
                          line.strip()[:60])
                extent = max(extent or 0, stop + 1)
                continue
            section = None          # the table has ended: another section
        elif section == "publics":
            m = _LINK_PUBLIC.match(line)
            if m:
                seg, off = _segoff(path, n, m.group(1), m.group(2))
                if m.group(3) not in ("Abs", "Imp"):
                    symbols.append((m.group(4), seg, off))
                continue
            if re.match(rf"^\s*{_HEX}+:", line) or re.match(r"^\s*\S+:\S+\s", line):
                _fail(path, n, "not a public symbol line (SSSS:OOOO NAME)",
                      repr(line.strip()[:60]))
            section = None
    if not seen_table and not seen_publics:
        _fail(path, 1, "no segment table and no publics")
    # by Name and by Value list the same symbols: keep each (name, address) once
    return _unique(symbols), extent, entry


def _parse_wlink(path, lines):
    symbols, entry, extent = [], None, None
    section = None
    title_next = False
    for n, raw in enumerate(lines, 1):
        line = raw.rstrip()
        if _WLINK_BOX.match(line):
            title_next = not title_next
            continue
        m = _WLINK_TITLE.match(line)
        if m and title_next:
            section = m.group(1)
            continue
        if not line.strip():
            continue
        m = _WLINK_ENTRY.match(line)
        if m:
            entry = _segoff(path, n, *m.groups())
            continue
        if section == "Segments":
            m = _WLINK_SEGLINE.match(line)
            if m:
                seg, off = _segoff(path, n, m.group(4), m.group(5))
                extent = max(extent or 0, (seg << 4) + off + int(m.group(6), 16))
        elif section == "Memory Map":
            stripped = line.strip()
            if (stripped.startswith("Module:") or re.match(r"^[*+] = ", stripped)
                    or re.match(r"^Address\s+Symbol$", stripped) or re.match(r"^=+\s+=+$", stripped)):
                continue
            m = _WLINK_SYMBOL.match(stripped)
            if not m:
                _fail(path, n, "not a Memory Map line (SSSS:OOOO[*+] symbol)",
                      repr(stripped[:60]))
            seg, off = _segoff(path, n, m.group(1), m.group(2))
            symbols.append((m.group(4), seg, off))
    if section is None and not symbols:
        _fail(path, 1, "no Memory Map section")
    return _unique(symbols), extent, entry


def _parse_ld86(path, lines):
    symbols = []
    for n, raw in enumerate(lines, 1):
        line = raw.rstrip()
        if not line.strip():
            continue
        if _LD86_TOTAL.match(line):
            continue
        m = _LD86_LINE.match(line)
        if not m:
            _fail(path, n, "not an ld86 -M line (module symbol segment value flags)",
                  repr(line.strip()[:60]))
        value = int(m.group(4), 16)
        if "A" in m.group(5):
            continue                 # an absolute symbol: a constant, not an address
        if value > MEM_MASK:
            _fail(path, n, "a value beyond 1 MiB", m.group(4))
        seg, off = (0, value) if value <= 0xFFFF else _linear_to_segoff(value)
        symbols.append((m.group(2), seg, off))
    # (the total does not count a -T text base: no image extent from it)
    return _unique(symbols), None, None


def _number(text):
    """A hex map number: ``1234``, ``0x1234``, ``1234h``; None if not one."""
    t = text.lower()
    if t.startswith("0x"):
        t = t[2:]
    elif t.endswith("h"):
        t = t[:-1]
    if not t or not re.fullmatch(r"[0-9a-f]+", t):
        return None
    return int(t, 16)


def _list_address(text):
    """(segment, offset) of ``SSSS:OOOO`` or a linear number; None if neither."""
    m = _SEGOFF.match(text)
    if m:
        seg, off = int(m.group(1), 16), int(m.group(2), 16)
        return (seg, off) if off <= 0xFFFF else None
    v = _number(text)
    if v is None or v > MEM_MASK:
        return None
    return _linear_to_segoff(v)


def _parse_list(path, lines):
    symbols = []
    for n, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line[0] in ";#":
            continue
        parts = line.split()
        if len(parts) != 2:
            _fail(path, n, "expected NAME SSSS:OOOO (or NAME LINEAR)", repr(line[:60]))
        a, b = parts
        where = _list_address(b)
        name = a
        if where is None or (_list_address(a) is not None and ":" in a):
            where, name = _list_address(a), b
        if where is None:
            _fail(path, n, "no address: NAME SSSS:OOOO or NAME LINEAR (hex)", repr(line[:60]))
        symbols.append((name, *where))
    return _unique(symbols), None, None


def _unique(symbols):
    seen, out = set(), []
    for s in symbols:
        if s not in seen:
            seen.add(s)
            out.append(s)
    return tuple(out)


def parse_map(text, path="<map>", fmt=None):
    """Parse a map's text; returns a :class:`MapFile`.  ``fmt`` forces one
    of :data:`FORMATS` (default: detected)."""
    lines = text.splitlines()
    fmt = fmt or detect_format(lines)
    if fmt not in FORMATS:
        raise SymbolError(f"unknown map format {fmt!r} (one of {', '.join(FORMATS)})")
    if fmt in ("ms-link", "tlink"):
        symbols, extent, entry = _parse_link(path, lines, fmt)
    elif fmt == "wlink":
        symbols, extent, entry = _parse_wlink(path, lines)
    elif fmt == "ld86":
        symbols, extent, entry = _parse_ld86(path, lines)
    else:
        symbols, extent, entry = _parse_list(path, lines)
    if not symbols:
        raise SymbolError(f"{path}: no symbols in this {fmt} map")
    return MapFile(path=path, format=fmt, symbols=symbols, extent=extent, entry=entry)


def decode_map(data, path):
    """The text of a map file's bytes (ASCII, or Latin-1 for odd names);
    a file with NUL bytes is not a map."""
    if b"\0" in data:
        raise SymbolError(f"{path}: a binary file, not a map")
    return data.decode("latin-1")


def read_map(path, fmt=None):
    """Read and parse the map file at ``path``."""
    try:
        size = os.path.getsize(path)
        if size > MAX_MAP_BYTES:
            raise SymbolError(f"{path}: {size} bytes: a map is at most {MAX_MAP_BYTES} bytes")
        with open(path, "rb") as f:
            data = f.read(MAX_MAP_BYTES + 1)
    except OSError as exc:
        raise SymbolError(f"cannot read map {path}: {exc.strerror or exc}") from None
    return parse_map(decode_map(data, path), path, fmt)


def parse_spec(text):
    """``FILE`` or ``FILE@SEG`` (``SEG`` hex, ``0`` for absolute) ->
    (path, base or None).  A path that itself contains ``@`` keeps it
    unless what follows the last ``@`` is a number."""
    path, sep, tail = text.rpartition("@")
    if sep and path:
        if tail.lower() in ("abs", "absolute"):
            return path, 0
        v = _number(tail)
        if v is not None:
            if v > 0xFFFF:
                raise SymbolError(f"--symbols {text}: the base segment {tail} is not 16-bit")
            return path, v
    return text, None


# ---------------------------------------------------------------------------
# the table
# ---------------------------------------------------------------------------

@attrs.define
class Group:
    """The symbols of one loaded file."""
    key: str
    path: str
    format: str
    base: int               # the segment added to the map's segments (0: absolute)
    symbols: list
    extent: tuple = None    # (first linear, end linear) of the image, when known


_EXPR = re.compile(r"^(.*?)\s*([+-])\s*(0[xX][0-9a-fA-F]+|[0-9][0-9a-fA-F]*[hH]|[0-9]+)$")


class SymbolTable:
    """The loaded symbols of a machine (host-side: not machine state, not in
    snapshots).  Groups are keyed by their file (loading a file again
    replaces it); names are looked up exactly, then case-insensitively."""

    def __init__(self):
        self.groups = {}
        self.pending = []           # [MapFile]: to relocate when the DOS loads the program
        self._sorted = None

    def __len__(self):
        return sum(len(g.symbols) for g in self.groups.values())

    def __bool__(self):
        return bool(self.groups)

    def add(self, mapfile, base=0, key=None):
        """Load a parsed map, its segments relocated by ``base`` (0:
        as the file gives them).  Loading a file again (the same ``key``,
        default its absolute path) replaces it.  Returns the group."""
        base = int(base) & 0xFFFF
        syms = [Symbol(name, (seg + base) & 0xFFFF, off, mapfile.path)
                for name, seg, off in mapfile.symbols]
        extent = None
        if mapfile.extent is not None:
            start = (base << 4) & MEM_MASK
            extent = (start, start + mapfile.extent)
        key = key or os.path.abspath(mapfile.path)
        self.groups.pop(key, None)
        group = Group(key=key, path=mapfile.path, format=mapfile.format, base=base,
                      symbols=syms, extent=extent)
        self.groups[key] = group
        self._sorted = None
        return group

    def holds(self, mapfile, base):
        """Whether a loaded file already gives exactly ``mapfile``'s symbols
        at ``base`` (the same map named twice: --symbols and PROG.MAP)."""
        base = int(base) & 0xFFFF
        names = [(name, (seg + base) & 0xFFFF, off) for name, seg, off in mapfile.symbols]
        return any(g.format == mapfile.format and g.base == base
                   and [(x.name, x.segment, x.offset) for x in g.symbols] == names
                   for g in self.groups.values())

    def load(self, path, base=None, fmt=None):
        """Read ``path`` and load it: a link map relocated by ``base``
        (default 0), a plain list absolute unless ``base`` is given."""
        mapfile = read_map(path, fmt)
        return self.add(mapfile, base or 0)

    def defer(self, mapfile):
        """Keep a link map until :meth:`program_loaded` gives its base."""
        self.pending.append(mapfile)

    def program_loaded(self, load_segment):
        """The built-in DOS loaded the program the deferred maps belong to."""
        pending, self.pending = self.pending, []
        for mapfile in pending:
            self.add(mapfile, load_segment)

    def clear(self):
        n = len(self)
        self.groups.clear()
        self.pending = []
        self._sorted = None
        return n

    def symbols(self):
        """Every symbol, by address then name."""
        return [s for _, _, s in self._by_address()]

    def _by_address(self):
        if self._sorted is None:
            rows = []
            for gi, g in enumerate(self.groups.values()):
                for s in g.symbols:
                    rows.append((s.linear, gi, s))
            rows.sort(key=lambda r: (r[0], r[1], r[2].name))
            self._sorted = (rows, [r[0] for r in rows], list(self.groups.values()))
        return self._sorted[0]

    def find(self, name):
        """The Symbol called ``name`` (the most recently loaded file wins;
        exact case first), or None."""
        folded = None
        for g in reversed(list(self.groups.values())):
            for s in g.symbols:
                if s.name == name:
                    return s
                if folded is None and s.name.lower() == name.lower():
                    folded = s
        return folded

    def resolve(self, expr):
        """``name``, ``name+N`` or ``name-N`` (N decimal, ``0x..`` or
        ``..h`` hex) -> (segment, offset).  Unknown names raise
        SymbolError."""
        if not isinstance(expr, str) or not expr.strip():
            raise SymbolError(f"not a symbol: {expr!r}")
        text = expr.strip()
        sym, delta = self.find(text), 0
        if sym is None:
            m = _EXPR.match(text)
            if m:
                sym = self.find(m.group(1))
                num = m.group(3).lower()
                delta = int(num[:-1], 16) if num.endswith("h") else int(num, 0)
                if m.group(2) == "-":
                    delta = -delta
        if sym is None:
            loaded = f"{len(self)} symbols loaded" if self else "no symbols are loaded"
            raise SymbolError(f"unknown symbol {text!r} ({loaded})")
        off = sym.offset + delta
        if not 0 <= off <= 0xFFFF:
            raise SymbolError(f"{text}: offset {off:#x} leaves the symbol's segment "
                              f"{sym.segment:04X}h")
        return sym.segment, off

    def lookup(self, linear):
        """(Symbol, delta) of the nearest symbol at or below ``linear``
        (within its file's image when the map gives the image's length,
        else within 64 KiB), or None."""
        if not self.groups:
            return None
        rows = self._by_address()
        keys = self._sorted[1]
        groups = self._sorted[2]
        linear = int(linear) & MEM_MASK
        i = bisect.bisect_right(keys, linear)
        k = i - 1
        while k >= 0:
            addr, gi, sym = rows[k]
            delta = linear - addr
            if delta >= MAX_DISTANCE:
                return None
            if self._inside(groups[gi], linear):
                best = sym
                # of equal addresses, the first by file order and name
                k -= 1
                while k >= 0 and keys[k] == addr:
                    if self._inside(groups[rows[k][1]], linear):
                        best = rows[k][2]
                    k -= 1
                return best, delta
            k -= 1
        return None

    @staticmethod
    def _inside(group, linear):
        ext = group.extent
        return ext is None or ext[0] <= linear < ext[1]

    def describe(self, linear):
        """``name`` or ``name+0x12`` for ``linear``, or None."""
        hit = self.lookup(linear)
        if hit is None:
            return None
        sym, delta = hit
        return sym.name if delta == 0 else f"{sym.name}+{delta:#x}"

    def summary(self):
        return [{"path": g.path, "format": g.format, "base": g.base,
                 "symbols": len(g.symbols)} for g in self.groups.values()]


# ---------------------------------------------------------------------------
# disassembly with names
# ---------------------------------------------------------------------------

_SYMBOLIC = None


def _symbolic_class():
    """``SymbolicInstruction``: a ``cpu.disasm.Instruction`` with two more
    fields, made on first use (the disassembler is not imported to read
    maps)."""
    global _SYMBOLIC
    if _SYMBOLIC is None:
        from .cpu.disasm import Instruction

        @attrs.frozen
        class SymbolicInstruction(Instruction):
            """An Instruction and the loaded symbols' names: ``symbol`` for
            its own address, ``target_symbol`` for its branch target
            (``name`` or ``name+0x12``; None when no symbol is near)."""
            symbol: str = None
            target_symbol: str = None

            @property
            def symbolic_text(self):
                """The listing text, the target's name after a branch."""
                if self.target_symbol:
                    return f"{self.text} <{self.target_symbol}>"
                return self.text

        _SYMBOLIC = SymbolicInstruction
    return _SYMBOLIC


def annotate(insn, table):
    """``insn`` (a cpu.disasm.Instruction with a known cs) with the names
    of its address and of its branch target in ``table``."""
    cls = _symbolic_class()
    cs = insn.cs or 0
    symbol = table.describe((cs << 4) + insn.ip)
    target = None
    if insn.target is not None:
        target = table.describe((cs << 4) + insn.target)
    elif insn.far_target is not None:
        seg, off = insn.far_target
        target = table.describe((seg << 4) + off)
    fields = {a.name: getattr(insn, a.name) for a in attrs.fields(type(insn))
              if a.name not in ("symbol", "target_symbol")}
    return cls(**fields, symbol=symbol, target_symbol=target)
