"""The console's view of one pypc over JSON-RPC (no UI here).

:class:`DebugSession` wraps the generated client (``pypc_core.client``):
it reads what the panes show (:meth:`snapshot`), runs DEBUG-style commands
(:meth:`command`) and keeps track of the execution operation in progress, so
the UI can wait for its stop on a worker thread (:meth:`wait_stop`).
Every write is guarded: registers with ``expected_state_revision`` and the
values shown, memory with the revision of the bytes read and their sha256.
"""

import collections
import hashlib
import re
import shlex
from dataclasses import dataclass, field

from ..client import (Client, ClientError, InvalidParams, MethodNotFound, RevisionMismatch,
                      RpcError, Unsupported, models as M)
from ..cpu import disasm

REG16 = ("ax", "bx", "cx", "dx", "sp", "bp", "si", "di")
SEGS = ("cs", "ds", "es", "ss")
FLAG_BITS = (("OF", 11, "OV", "NV"), ("DF", 10, "DN", "UP"), ("IF", 9, "EI", "DI"),
             ("SF", 7, "NG", "PL"), ("ZF", 6, "ZR", "NZ"), ("AF", 4, "AC", "NA"),
             ("PF", 2, "PE", "PO"), ("CF", 0, "CY", "NC"))
DISASM_LINES = 16
DUMP_ROWS = 8
TRACE_TAIL = 8
HELP = ("t [n] step | p step over | g [addr] go (to addr) | pause | bp addr | bc id|* | "
        "bl | d [addr] dump | u [addr] unassemble | r [reg=val] | e addr bytes | "
        "trace [n] | q quit")


class CommandError(Exception):
    """A command the console refuses (bad syntax, machine running, ...)."""


def parse_value(text, what="value"):
    """A DEBUG number: hex by default (``1234``, ``0x1234``, ``1234h``)."""
    t = text.strip().lower()
    if t.endswith("h"):
        t = t[:-1]
    if t.startswith("0x"):
        t = t[2:]
    if not t or not re.fullmatch(r"[0-9a-f]+", t):
        raise CommandError(f"{what} {text!r} is not a hex number")
    return int(t, 16)


def parse_address(text, default_segment):
    """``SSSS:OOOO``, ``OOOO`` in ``default_segment``, or a linear address
    of five hex digits (``B8000`` is ``B800:0000``); returns
    ``(segment, offset)``."""
    text = text.strip()
    if ":" in text:
        seg_text, off_text = text.split(":", 1)
        segment = parse_value(seg_text, "segment")
        offset = parse_value(off_text, "offset")
    else:
        segment, offset = default_segment, parse_value(text, "offset")
        if 0xFFFF < offset <= 0xFFFFF:            # five hex digits: a linear address
            segment, offset = offset >> 4, offset & 0xF
    if segment > 0xFFFF or offset > 0xFFFF:
        raise CommandError(f"address {text!r}: segment and offset are 16-bit")
    return segment, offset


def seg_addr(segment, offset):
    return {"space": "segmented", "segment": segment, "offset": offset}


@dataclass
class View:
    """Everything the panes show, read at one moment."""
    running: bool
    revision: int
    registers: M.Registers | None = None
    disasm: list = field(default_factory=list)          # (cs, ip, hex, text, is_current, bp)
    dump_address: tuple = (0, 0)
    dump: bytes = b""
    screen: list = field(default_factory=list)
    breakpoints: list = field(default_factory=list)
    stop: str = ""
    trace: list = field(default_factory=list)


class DebugSession:
    def __init__(self, port=2301, host="127.0.0.1", client=None):
        self.client = client or Client(host=host, port=port, timeout=30)
        self.operation = None            # the execution operation id being waited on
        self.dump_at = None              # (segment, offset) of the memory pane
        self.unassemble_at = None        # (segment, offset) the disassembly starts at
        self.cursor = 0                  # selected disassembly line
        self.last_csip = None
        self.last_lines = []             # the disassembly shown last [(cs, ip, insn)]
        self.stop_text = ""
        self.trace_on = False
        self.trace_cursor = None
        self.trace_lines = collections.deque(maxlen=TRACE_TAIL)
        self.revision = None             # the revision the panes were read at
        self.quit = False

    # -- reading ------------------------------------------------------------------
    def registers(self):
        return self.client.state.get_registers()

    def snapshot(self):
        c = self.client
        status = c.session.status()
        running = status.state == "running"
        view = View(running=running, revision=status.state_revision)
        if status.last_stop is not None:
            self.stop_text = describe_stop(status.last_stop)
        view.stop = ("running" if running else "stopped") + \
            (f" -- last stop: {self.stop_text}" if self.stop_text else "")
        regs = c.state.get_registers()
        view.registers = regs
        cs, ip = regs.segments.cs, regs.ip
        bps = c.breakpoints.list().breakpoints
        view.breakpoints = [describe_breakpoint(b) for b in bps]
        bp_at = {bp_location(b) for b in bps}
        view.disasm = self._disassembly(cs, ip, bp_at, running)
        if self.dump_at is None:
            self.dump_at = (regs.segments.ds, 0)
        seg, off = self.dump_at
        block = c.memory.read(address=seg_addr(seg, off), length=16 * DUMP_ROWS)
        view.dump_address, view.dump = (seg, off), block.data
        view.screen = c.video.text().text
        if self.trace_on:
            view.trace = self._trace_tail()
        self.revision = regs.state_revision
        return view

    def _disassembly(self, cs, ip, bp_at, running):
        # the listing stays where it is (where 'u' put it) until CS:IP moves
        # off it; then it starts at CS:IP
        start = self.unassemble_at
        moved = (cs, ip) != self.last_csip
        shown = any(s == cs and i == ip for s, i, _ in self.last_lines)
        if start is None or (moved and not shown):
            start = (cs, ip)
        self.unassemble_at = start
        seg, off = start
        base = (seg << 4) + off
        length = min(DISASM_LINES * 6, 0x100000 - base) if base < 0x100000 else 0
        buf = self.client.memory.read(address=seg_addr(seg, off), length=max(length, 1)).data
        cache = {}

        def read_byte(linear):
            k = linear - ((seg << 4) + off)
            if 0 <= k < len(buf):
                return buf[k]
            if linear not in cache:
                cache[linear] = self.client.memory.read(address=linear, length=1).data[0]
            return cache[linear]
        insns = disasm.disassemble_range(read_byte, seg, off, DISASM_LINES)
        self.last_lines = [(seg, i.ip, i) for i in insns]
        if (cs, ip) != self.last_csip:           # a new CS:IP: the cursor goes there
            self.last_csip = (cs, ip)
            self.cursor = next((k for k, i in enumerate(insns) if seg == cs and i.ip == ip),
                               0)
        self.cursor = min(self.cursor, len(insns) - 1)
        def linear(s, o):
            return ((s << 4) + o) & 0xFFFFF

        def target(i):
            if i.target is not None:
                return linear(seg, i.target)
            if i.far_target is not None:
                return linear(*i.far_target)
            return None
        wanted = [linear(seg, i.ip) for i in insns]
        wanted += [t for t in (target(i) for i in insns) if t is not None]
        names = self._symbol_names(wanted)

        def text(i):
            out = i.text
            t = target(i)
            if t is not None and t in names:
                out += f" <{names[t]}>"
            here = names.get(linear(seg, i.ip))
            if here is not None and "+" not in here:
                out = f"{out}  ; {here}"
            return out
        return [(seg, i.ip, i.bytes.hex().upper(), text(i), seg == cs and i.ip == ip,
                 (seg, i.ip) in bp_at) for i in insns]

    def _trace_tail(self):
        """The last events of the trace, read on from where the last read
        ended (256 a page)."""
        for _ in range(64):
            page = self.client.trace.read(cursor=self.trace_cursor, limit=256)
            for ev in page.events:
                a = ev.address
                text = disasm.disassemble(bytes.fromhex(ev.opcode_hex), a.offset,
                                          a.segment).text
                sym = getattr(ev, "symbol", None)
                self.trace_lines.append(f"{a.segment:04X}:{a.offset:04X}  {text}"
                                        + (f"  ; {sym}" if sym else ""))
            if page.next_cursor is None or not page.events:
                break
            self.trace_cursor = page.next_cursor
        return list(self.trace_lines)

    def _address(self, text, default_segment):
        """parse_address, or a symbol the server has loaded (``name``,
        ``name+0x10``: symbols.lookup)."""
        try:
            return parse_address(text, default_segment)
        except CommandError as exc:
            try:
                hit = self.client.symbols.lookup(name=text.strip()).results[0]
            except (Unsupported, MethodNotFound):
                raise exc from None
            except ClientError as err:
                raise CommandError(f"{text!r}: not an address, and {err}") from None
            a = hit.address
            return a.segment, a.offset

    def _symbol_names(self, linears):
        """{linear: name+offset} from the server's symbols (symbols.lookup,
        256 a call); empty when it has none or no symbols group."""
        names = {}
        wanted = sorted(set(linears))
        try:
            for k in range(0, len(wanted), 256):
                out = self.client.symbols.lookup(addresses=wanted[k:k + 256])
                names.update((r.linear, r.symbol) for r in out.results if r.symbol)
        except (Unsupported, MethodNotFound, InvalidParams):
            return {}
        return names

    def cursor_address(self):
        if not self.last_lines:
            raise CommandError("no disassembly shown yet")
        seg, ip, _ = self.last_lines[self.cursor]
        return seg, ip

    def move_cursor(self, delta):
        if self.last_lines:
            self.cursor = max(0, min(len(self.last_lines) - 1, self.cursor + delta))

    # -- execution ----------------------------------------------------------------
    def _need_paused(self, what):
        if self.client.session.status().state == "running":
            raise CommandError(f"{what}: the machine is running (pause first: F6 or 'pause')")

    def step(self):
        self._need_paused("step")
        op = self.client.execution.step(mode="into")
        return self._finish(op.operation_id, "step")

    def step_over(self):
        """CALL, INT, LOOP and REP run through to the next instruction;
        anything else is one step.  The server's ``execution.step`` mode
        ``over`` does it; a server without it gets a one-shot run_until to
        the next instruction instead."""
        self._need_paused("step over")
        try:
            op = self.client.execution.step(mode="over")
        except (Unsupported, InvalidParams):
            pass
        else:
            return self._finish(op.operation_id, "step over")
        regs = self.registers()
        cs, ip = regs.segments.cs, regs.ip
        code = self.client.memory.read(address=seg_addr(cs, ip), length=8).data
        insn = disasm.disassemble(code, ip, cs)
        if not insn.call_like:
            return self.step()
        return self.run_to(cs, insn.next_ip)

    def run_to(self, segment, offset):
        self._need_paused("go")
        op = self.client.execution.run_until(
            predicate={"kind": "execution", "address": seg_addr(segment, offset)})
        self.operation = op.operation_id
        self.stop_text = f"running to {segment:04X}:{offset:04X}"
        return f"running to {segment:04X}:{offset:04X}"

    def go(self):
        self._need_paused("go")
        op = self.client.execution.continue_()
        self.operation = op.operation_id
        self.stop_text = ""
        return "running"

    def pause(self):
        self.client.execution.pause()
        if self.operation is not None:
            self.wait_stop(2000)
        return "paused"

    def _finish(self, operation_id, what):
        done = self.client.execution.wait(operation_id=operation_id, timeout_ms=5000)
        if isinstance(done, M.ExecutionWaitResultStopped):
            self.stop_text = describe_stop(done.stop_reason)
            return self.stop_text
        self.operation = operation_id
        return f"{what} still running"

    def wait_stop(self, timeout_ms=250):
        """Wait up to ``timeout_ms`` for the operation in progress; the stop
        text when it stopped, else None.  Safe on a worker thread."""
        op = self.operation
        if op is None:
            return None
        done = self.client.execution.wait(operation_id=op, timeout_ms=timeout_ms,
                                          rpc_timeout=timeout_ms / 1000 + 30)
        if isinstance(done, M.ExecutionWaitResultStopped):
            if self.operation == op:
                self.operation = None
            self.stop_text = describe_stop(done.stop_reason)
            return self.stop_text
        return None

    # -- breakpoints ----------------------------------------------------------------
    def toggle_breakpoint(self, segment, offset):
        for b in self.client.breakpoints.list().breakpoints:
            if bp_location(b) == (segment, offset):
                self.client.breakpoints.delete(breakpoint_id=b.breakpoint_id)
                return f"breakpoint {b.breakpoint_id} at {segment:04X}:{offset:04X} cleared"
        b = self.client.breakpoints.create(kind="execution", address=seg_addr(segment, offset))
        return f"breakpoint {b.breakpoint_id} at {segment:04X}:{offset:04X}"

    # -- guarded writes ------------------------------------------------------------
    def set_register(self, name, value):
        name = name.lower()
        if name not in REG16 + SEGS + ("ip", "flags"):
            raise CommandError(f"no register {name!r} (ax..di, cs ds es ss, ip, flags)")
        if value > 0xFFFF:
            raise CommandError(f"{value:X} does not fit in 16 bits")
        self._need_paused("r")
        regs = self.registers()
        if self.revision is not None and regs.state_revision != self.revision:
            raise CommandError("the machine changed since the panes were read; "
                               "refreshed: check and retry")
        current = _reg_value(regs, name)
        try:
            out = self.client.state.set_registers(expected_state_revision=regs.state_revision,
                                                  expected={name: current}, set={name: value})
        except RevisionMismatch:
            raise CommandError("the machine changed under the write; nothing written") \
                from None
        self.revision = out.after.state_revision     # our own change is seen
        return f"{name.upper()} {current:04X} -> {value:04X}"

    def edit_memory(self, segment, offset, data):
        self._need_paused("e")
        block = self.client.memory.read(address=seg_addr(segment, offset), length=len(data))
        if self.revision is not None and block.state_revision != self.revision:
            raise CommandError("the machine changed since the panes were read; "
                               "refreshed: check and retry")
        out = self.client.memory.write(address=seg_addr(segment, offset), data=data,
                                       expected_sha256=hashlib.sha256(block.data).hexdigest())
        self.revision = out.state_revision
        return (f"{segment:04X}:{offset:04X} {block.data.hex(' ').upper()} -> "
                f"{data.hex(' ').upper()}")

    # -- the command line -----------------------------------------------------------
    def command(self, line):
        """Run one command line; returns the message to show.  Raises
        :class:`CommandError` for a command it refuses (nothing changed)."""
        try:
            words = shlex.split(line)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if not words:
            return ""
        verb, args = words[0].lower(), words[1:]
        try:
            return self._command(verb, args)
        except RpcError as exc:
            raise CommandError(f"{exc.reason}: {exc.message}") from None
        except ClientError as exc:
            raise CommandError(str(exc)) from None

    def _regs_default_seg(self, which="cs"):
        regs = self.registers()
        return getattr(regs.segments, which)

    def _command(self, verb, args):
        if verb in ("t", "step"):
            n = parse_value(args[0], "count") if args else 1
            msg = ""
            for _ in range(max(n, 1)):
                msg = self.step()
                if not msg.startswith("step"):
                    break
            return msg
        if verb == "p":
            return self.step_over()
        if verb == "g":
            if args:
                return self.run_to(*self._address(args[0], self._regs_default_seg()))
            return self.go()
        if verb in ("pause", "break"):
            return self.pause()
        if verb == "bp":
            if len(args) != 1:
                raise CommandError("usage: bp SSSS:OOOO")
            seg, off = self._address(args[0], self._regs_default_seg())
            b = self.client.breakpoints.create(kind="execution", address=seg_addr(seg, off))
            return f"breakpoint {b.breakpoint_id} at {seg:04X}:{off:04X}"
        if verb == "bc":
            if len(args) != 1:
                raise CommandError("usage: bc ID | bc *")
            bps = self.client.breakpoints.list().breakpoints
            ids = [b.breakpoint_id for b in bps]
            if args[0] != "*":
                want = args[0] if args[0].startswith("bp-") else f"bp-{args[0]}"
                if want not in ids:
                    raise CommandError(f"no breakpoint {args[0]} (bl lists them)")
                ids = [want]
            for bid in ids:
                self.client.breakpoints.delete(breakpoint_id=bid)
            return f"cleared {len(ids)} breakpoint(s)"
        if verb == "bl":
            bps = self.client.breakpoints.list().breakpoints
            return "; ".join(describe_breakpoint(b) for b in bps) or "no breakpoints"
        if verb == "d":
            if args:
                self.dump_at = self._address(args[0], self._regs_default_seg("ds"))
            elif self.dump_at is not None:
                seg, off = self.dump_at
                self.dump_at = (seg, (off + 16 * DUMP_ROWS) & 0xFFFF)
            return f"dump at {self.dump_at[0]:04X}:{self.dump_at[1]:04X}"
        if verb == "u":
            if args:
                self.unassemble_at = self._address(args[0], self._regs_default_seg())
            else:
                self.unassemble_at = None
            self.cursor = 0
            return "unassemble" + (f" at {self.unassemble_at[0]:04X}:"
                                   f"{self.unassemble_at[1]:04X}" if self.unassemble_at else
                                   " at CS:IP")
        if verb == "r":
            if not args:
                regs = self.registers()
                return register_line(regs)
            text = " ".join(args)
            m = re.fullmatch(r"\s*([a-zA-Z]+)\s*[= ]\s*(\S+)\s*", text)
            if not m:
                raise CommandError("usage: r REG=VALUE (hex), e.g. r ax=5")
            return self.set_register(m.group(1), parse_value(m.group(2)))
        if verb == "e":
            if len(args) < 2:
                raise CommandError("usage: e SSSS:OOOO BYTE [BYTE ...] (hex)")
            seg, off = self._address(args[0], self._regs_default_seg("ds"))
            values = [parse_value(a, "byte") for a in args[1:]]
            if any(v > 0xFF for v in values):
                raise CommandError("e takes bytes (00..FF)")
            return self.edit_memory(seg, off, bytes(values))
        if verb == "trace":
            self._need_paused("trace")
            if args and args[0] == "off":
                self.client.trace.stop()
                self.trace_on = False
                return "trace off"
            n = parse_value(args[0], "count") if args else 0x100
            self.client.trace.start(detail="short", instruction_count=n)
            self.trace_on = True
            self.trace_cursor = None
            self.trace_lines.clear()
            return f"tracing the next {n} instructions"
        if verb in ("q", "quit"):
            self.quit = True
            return "quit"
        if verb in ("?", "help", "h"):
            return HELP
        raise CommandError(f"unknown command {verb!r}: {HELP}")

    def close(self):
        self.client.close()


def _reg_value(regs, name):
    if name in REG16:
        return getattr(regs.general, name)
    if name in SEGS:
        return getattr(regs.segments, name)
    return getattr(regs, name)


def flags_line(flags):
    return " ".join(on if flags & (1 << bit) else off for _, bit, on, off in FLAG_BITS)


def register_line(regs):
    g, s = regs.general, regs.segments
    return (" ".join(f"{n.upper()}={getattr(g, n):04X}" for n in REG16) + "  " +
            " ".join(f"{n.upper()}={getattr(s, n):04X}" for n in SEGS) +
            f"  IP={regs.ip:04X}  {flags_line(regs.flags)}")


def bp_location(b):
    a = b.address
    if a is not None and getattr(a, "segment", None) is not None and b.kind == "execution":
        return (a.segment, a.offset)
    return None


def describe_breakpoint(b):
    a = b.address
    if a is not None and getattr(a, "segment", None) is not None:
        where = f"{a.segment:04X}:{a.offset:04X}"
    elif a is not None:
        where = f"{a.offset:05X}"
    else:
        where = f"int {b.event.number:02X}" if b.event is not None else "-"
    return f"{b.breakpoint_id} {b.kind} {where} hits={b.hit_count}"


def describe_stop(stop):
    regs = stop.registers
    where = f" at {regs.segments.cs:04X}:{regs.ip:04X}" if regs is not None else ""
    if getattr(stop, "symbol", None):
        where += f" ({stop.symbol})"
    extra = f" {stop.breakpoint_id}" if stop.breakpoint_id else ""
    if stop.kind == "fault" and stop.message:
        extra += f" ({stop.message})"
    return f"{stop.kind}{extra}{where}"
