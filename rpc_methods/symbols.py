"""Method group ``symbols``: ``symbols.load``, ``symbols.list``,
``symbols.lookup`` and ``symbols.clear`` -- names for addresses from link
maps (MS/IBM LINK ``/MAP``, Borland TLINK, Watcom WLINK, bin86 ``ld86 -M``)
and plain ``NAME SEG:OFF`` lists, as thin adapters over the machine's
symbol table (``Machine.symbols``, ``pypc_core.symbols``).

``symbols.load`` reads a host file; a link map's segments are relative to
the program image and get ``base`` added: by default the load segment of the
program the built-in DOS loaded last (PSP+10h for an .EXE, the PSP for a
.COM), 0 without one.  A plain list is absolute unless ``base`` is given.
Loading the same file again replaces its symbols.  A map that does not
parse is refused with its file and line and nothing is loaded.

With symbols loaded, stops, CPU trace events and the gdb stub's ``monitor``
commands carry ``symbol`` (``name`` or ``name+0x12``), and the
``address`` of ``breakpoints.create`` and of a ``run_until`` predicate may
be ``{"symbol": "name+0x10"}``.  The symbols are host-side: not machine
state, not in snapshots or checkpoints, and ``session.start`` starts its new
machine with none but the map beside its program (``PROG.MAP``)."""

from pypc_core import hookimpl
from pypc_core.rpc import params as P
from pypc_core.rpc.errors import invalid
from pypc_core.symbols import FORMATS, SymbolError, read_map

MAX_LIST = 4096
DEFAULT_LIST = 1024
MAX_LOOKUP = 256


def _segmented(seg, off):
    return {"space": "segmented", "segment": int(seg), "offset": int(off)}


def _program_base(machine):
    dos = getattr(machine, "dos", None)
    return getattr(dos, "program_load_segment", None) or 0


def load(ctl, params):
    path = params["path"]
    fmt = params.get("format")
    if fmt is not None and fmt not in FORMATS:
        raise invalid(f"format must be one of {', '.join(FORMATS)}", field="format")
    base = None
    if params.get("base") is not None:
        base = P.number(params["base"], "base", 0, 0xFFFF)
    try:
        mapfile = read_map(path, fmt)
    except SymbolError as exc:
        # (without the text quoted from the file: any host file can be named)
        raise invalid(exc.brief, field="path") from None
    if base is None:
        base = _program_base(ctl.machine) if mapfile.relative else 0
    table = ctl.machine.symbols
    group = table.add(mapfile, base)
    return {"path": group.path, "format": group.format, "base": group.base,
            "symbols": len(group.symbols), "total": len(table)}


def _entry(sym):
    return {"name": sym.name, "address": _segmented(sym.segment, sym.offset),
            "linear": sym.linear, "source": sym.source}


def list_(ctl, params):
    table = ctl.machine.symbols
    start = P.number(params.get("offset", 0), "offset", 0, (1 << 31) - 1)
    limit = P.number(params.get("limit", DEFAULT_LIST), "limit", 1, MAX_LIST)
    prefix = params.get("prefix")
    rows = table.symbols()
    if prefix:
        low = prefix.lower()
        rows = [s for s in rows if s.name.lower().startswith(low)]
    page = rows[start:start + limit]
    nxt = start + len(page)
    return {"symbols": [_entry(s) for s in page], "total": len(rows),
            "next_offset": nxt if nxt < len(rows) else None,
            "files": table.summary()}


def _at(table, linear, address):
    hit = table.lookup(linear)
    out = {"address": address, "linear": linear, "symbol": None, "name": None, "offset": None}
    if hit is not None:
        sym, delta = hit
        out.update(symbol=sym.name if delta == 0 else f"{sym.name}+{delta:#x}",
                   name=sym.name, offset=delta)
    return out


def lookup(ctl, params):
    table = ctl.machine.symbols
    given = [k for k in ("name", "address", "addresses") if k in params]
    if len(given) != 1:
        raise invalid("symbols.lookup takes exactly one of name, address, addresses",
                      field="name")
    if "name" in params:
        try:
            seg, off = table.resolve(params["name"])
        except SymbolError as exc:
            raise invalid(str(exc), field="name") from None
        linear = ((seg << 4) + off) & 0xFFFFF
        return {"results": [_at(table, linear, _segmented(seg, off))]}
    if "address" in params:
        linear, norm = P.address(params["address"])
        return {"results": [_at(table, linear, norm)]}
    items = params["addresses"]
    if not isinstance(items, list) or not 1 <= len(items) <= MAX_LOOKUP:
        raise invalid(f"addresses must be a list of 1..{MAX_LOOKUP} addresses",
                      field="addresses")
    out = []
    for i, a in enumerate(items):
        linear, norm = P.address(a, f"addresses[{i}]")
        out.append(_at(table, linear, norm))
    return {"results": out}


def clear(ctl, params):
    return {"cleared": ctl.machine.symbols.clear()}


@hookimpl
def pypc_rpc_methods():
    return {"symbols.load": load, "symbols.list": list_, "symbols.lookup": lookup,
            "symbols.clear": clear}
