"""The gdb stub's ``monitor`` commands (``qRcmd``): what gdb has no word for
on a real-mode 8088 -- segmented addresses and registers, the text screen,
software-interrupt breakpoints, the JSON-RPC breakpoint list.

:func:`run` runs on the machine thread (a controller request, as every
stub packet) and returns ``(output text, ok)``; ``ok`` False makes the
reply ``E01`` after the output (gdb prints the output, then an error)."""

from ..cpu import state as S

MAX_DUMP = 4096
MAX_DISASM = 64

HELP = """pypc monitor commands (addresses SEG:OFF in hex, a linear hex number, or a loaded
symbol: NAME or NAME+N, which wins over a hex number spelt the same):
  monitor help                   this list
  monitor regs                   the 8088 registers, CS:IP and SS:SP segmented
  monitor linear SEG:OFF         the linear address of SEG:OFF
  monitor x SEG:OFF [COUNT]      COUNT (hex, default 40) bytes of memory
  monitor disasm [SEG:OFF] [N]   N (decimal, default 8) instructions, default at CS:IP
  monitor break SEG:OFF          an execution breakpoint at SEG:OFF (CS and IP must match)
  monitor int N [AH]             a breakpoint before software INT N (hex; AH filter)
  monitor breakpoints            every breakpoint (gdb's, JSON-RPC's, monitor's)
  monitor delete bp-N            delete a breakpoint by its JSON-RPC id
  monitor screen                 the text screen
  monitor sym NAME|ADDR          a symbol's address, or an address's NAME+offset
  monitor syms [PREFIX]          the loaded symbols (--symbols, symbols.load, PROG.MAP)
"""
MAX_SYMS = 200


class MonitorError(Exception):
    pass


def _hexnum(text, what, top):
    t = text.strip().lower()
    if t.endswith("h"):
        t = t[:-1]
    if t.startswith("0x"):
        t = t[2:]
    try:
        v = int(t, 16)
    except ValueError:
        raise MonitorError(f"{what} {text!r} is not a hexadecimal number") from None
    if not 0 <= v <= top:
        raise MonitorError(f"{what} {text!r} is outside 0..{top:X}h")
    return v


def parse_where(text):
    """``SEG:OFF`` -> (linear, seg, off); a plain hex number is linear
    (seg and off None)."""
    if ":" in text:
        a, _, b = text.partition(":")
        seg = _hexnum(a, "segment", 0xFFFF)
        off = _hexnum(b, "offset", 0xFFFF)
        return ((seg << 4) + off) & 0xFFFFF, seg, off
    return _hexnum(text, "address", 0xFFFFF), None, None


def _where(m, text):
    """parse_where, or a loaded symbol (NAME, NAME+N) -> (linear, seg, off)."""
    table = getattr(m, "symbols", None)
    if table:
        try:
            seg, off = table.resolve(text)
        except ValueError:
            pass
        else:
            return ((seg << 4) + off) & 0xFFFFF, seg, off
    try:
        return parse_where(text)
    except MonitorError:
        if table:
            raise MonitorError(f"{text!r} is neither SEG:OFF, a hex number nor a loaded "
                               f"symbol") from None
        raise


def _regs_text(regs):
    from ..rpc.controller import flags_text
    g = {n: int(regs[S.REG_INDEX[n]]) for n in ("ax", "bx", "cx", "dx", "sp", "bp", "si",
                                                "di", "cs", "ds", "es", "ss", "ip", "flags")}
    line1 = "  ".join(f"{n.upper()}={g[n]:04X}" for n in ("ax", "bx", "cx", "dx", "sp", "bp",
                                                         "si", "di"))
    line2 = "  ".join(f"{n.upper()}={g[n]:04X}" for n in ("ds", "es", "ss", "cs", "ip"))
    pc = ((g["cs"] << 4) + g["ip"]) & 0xFFFFF
    return (f"{line1}\n{line2}  FLAGS={g['flags']:04X} {flags_text(g['flags'])}\n"
            f"CS:IP={g['cs']:04X}:{g['ip']:04X} (linear {pc:05X})  "
            f"SS:SP={g['ss']:04X}:{g['sp']:04X} (linear {((g['ss'] << 4) + g['sp']) & 0xFFFFF:05X})\n")


def _describe(desc):
    if "event" in desc:
        ev = desc["event"]
        where = f"INT {ev['number']:02X}h" + (f" AH={ev['ah']:02X}h" if "ah" in ev else "")
    else:
        a = desc["address"]
        where = (f"{a['segment']:04X}:{a['offset']:04X}" if a.get("space") == "segmented"
                 else f"{a['offset']:05X}")
        if desc["kind"] != "execution":
            where += f" +{desc['length']:X}h"
    return f"{desc['breakpoint_id']:>6}  {desc['kind']:<14} {where}  hits {desc['hit_count']}"


def run(target, ctl, text):
    words = text.split()
    if not words:
        return HELP, True
    try:
        return _command(target, ctl, words[0].lower(), words[1:]), True
    except MonitorError as exc:
        return f"monitor {words[0]}: {exc}\n", False


def _command(target, ctl, cmd, args):
    m = ctl.machine
    regs = ctl.cpu.regs

    def want(n_min, n_max, usage):
        if not n_min <= len(args) <= n_max:
            raise MonitorError(f"usage: monitor {usage}")

    if cmd == "help":
        return HELP
    if cmd == "regs":
        want(0, 0, "regs")
        return _regs_text(regs)
    if cmd == "linear":
        want(1, 1, "linear SEG:OFF")
        linear, _, _ = _where(m, args[0])
        return f"{linear:05X}\n"
    if cmd == "x":
        want(1, 2, "x SEG:OFF [COUNT]")
        linear, seg, off = _where(m, args[0])
        count = _hexnum(args[1], "count", MAX_DUMP) if len(args) > 1 else 0x40
        lines = []
        for row in range(0, count, 16):
            n = min(16, count - row)
            if seg is None:
                a = (linear + row) & 0xFFFFF
                label = f"{a:05X}"
                data = m.memory.read(a, n)
            else:
                o = (off + row) & 0xFFFF
                label = f"{seg:04X}:{o:04X}"
                data = bytes(m.memory.read(((seg << 4) + ((o + k) & 0xFFFF)) & 0xFFFFF, 1)[0]
                             for k in range(n))
            text = "".join(chr(b) if 32 <= b < 127 else "." for b in data)
            lines.append(f"{label}  {data.hex(' '):<47}  {text}")
        return "\n".join(lines) + "\n"
    if cmd == "disasm":
        want(0, 2, "disasm [SEG:OFF] [N]")
        cs, ip = int(regs[S.CS]), int(regs[S.IP])
        count = 8
        rest = list(args)
        if rest and not rest[0].isdigit():
            _, cs, ip = _where(m, rest.pop(0))
            if cs is None:
                raise MonitorError("give SEG:OFF or a symbol (a linear address has no CS)")
        if rest:
            try:
                count = int(rest.pop(0), 10)
            except ValueError:
                raise MonitorError("N is a decimal count") from None
            if not 1 <= count <= MAX_DISASM:
                raise MonitorError(f"N is 1..{MAX_DISASM}")
        if rest:
            raise MonitorError("usage: monitor disasm [SEG:OFF] [N]")
        out = []
        for ins in m.disassemble(cs, ip, count):
            name = getattr(ins, "symbol", None)
            if name is not None and "+" not in name:
                out.append(f"{name}:")
            text = getattr(ins, "symbolic_text", ins.text)
            out.append(f"{cs:04X}:{ins.ip:04X}  {ins.bytes.hex():<14} {text}")
        return "\n".join(out) + "\n"
    if cmd == "break":
        want(1, 1, "break SEG:OFF")
        _, seg, off = _where(m, args[0])
        if seg is None:
            raise MonitorError("give SEG:OFF (gdb's own 'break *ADDR' takes a linear one)")
        desc = _create(ctl, {"kind": "execution", "address": {
            "space": "segmented", "segment": seg, "offset": off}})
        return f"{desc['breakpoint_id']}: execution breakpoint at {seg:04X}:{off:04X}\n"
    if cmd == "int":
        want(1, 2, "int N [AH]")
        event = {"type": "software_interrupt", "number": _hexnum(args[0], "N", 0xFF)}
        if len(args) > 1:
            event["ah"] = _hexnum(args[1], "AH", 0xFF)
        desc = _create(ctl, {"kind": "interrupt", "event": event})
        ah = f" with AH={event['ah']:02X}h" if "ah" in event else ""
        return f"{desc['breakpoint_id']}: breakpoint before INT {event['number']:02X}h{ah}\n"
    if cmd == "breakpoints":
        want(0, 0, "breakpoints")
        listed = ctl.call("breakpoints.list")["breakpoints"]
        if not listed:
            return "no breakpoints\n"
        mine = set(target.gdb_bps.values())
        return "".join(_describe(d) + ("  (gdb)" if d["breakpoint_id"] in mine else "") + "\n"
                       for d in listed)
    if cmd == "delete":
        want(1, 1, "delete bp-N")
        try:
            ctl.call("breakpoints.delete", {"breakpoint_id": args[0]})
        except Exception as exc:
            raise MonitorError(str(exc)) from None
        return f"deleted {args[0]}\n"
    if cmd == "screen":
        want(0, 0, "screen")
        rows = m.screen_text()
        if not rows:
            return "no text screen (this machine has no video card)\n"
        return "\n".join(r.rstrip() for r in rows).rstrip("\n") + "\n"
    if cmd == "sym":
        want(1, 1, "sym NAME|SEG:OFF|LINEAR")
        table = m.symbols
        if not table:
            raise MonitorError("no symbols are loaded (--symbols FILE, symbols.load)")
        try:
            seg, off = table.resolve(args[0])
        except ValueError:
            linear, seg, off = _where(m, args[0])
            name = table.describe(linear)
            where = f"{seg:04X}:{off:04X}" if seg is not None else f"{linear:05X}"
            return f"{where} (linear {linear:05X}) is {name or 'not near any symbol'}\n"
        linear = ((seg << 4) + off) & 0xFFFFF
        return f"{args[0]} = {seg:04X}:{off:04X} (linear {linear:05X})\n"
    if cmd == "syms":
        want(0, 1, "syms [PREFIX]")
        table = m.symbols
        rows = table.symbols()
        if args:
            rows = [s for s in rows if s.name.lower().startswith(args[0].lower())]
        if not rows:
            return "no symbols\n" if not args else f"no symbols starting {args[0]!r}\n"
        out = [f"{s.segment:04X}:{s.offset:04X}  {s.linear:05X}  {s.name}"
               for s in rows[:MAX_SYMS]]
        if len(rows) > MAX_SYMS:
            out.append(f"... {len(rows) - MAX_SYMS} more (monitor syms PREFIX narrows)")
        return "\n".join(out) + "\n"
    raise MonitorError("unknown command (monitor help lists them)")


def _create(ctl, spec):
    try:
        return ctl.call("breakpoints.create", spec)
    except Exception as exc:
        raise MonitorError(str(exc)) from None
