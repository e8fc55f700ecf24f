"""``pypc run --gdb [PORT]``: a GDB Remote Serial Protocol server.

gdb (and IDA, Ghidra and the other front ends that speak the protocol)
attach with ``target remote :1234``.  The stub is one more client of the
machine's controller (:class:`pypc_core.rpc.controller.Controller`): the
socket thread parses packets, and everything that touches the machine runs
on the machine thread between two slices -- at an instruction boundary --
as a request in the controller's queue, exactly like a JSON-RPC request.
Breakpoints and watchpoints go into the same breakpoint table through the
``breakpoints`` RPC methods, so a gdb breakpoint is listed by JSON-RPC
``breakpoints.list`` (as ``bp-N``) and a JSON-RPC breakpoint stops gdb's
``continue``.

The real-mode convention (see docs/gdb.md)
------------------------------------------
The target description is gdb's i386 register set with architecture
``i8086`` (gdb then disassembles 16-bit code), plus a register ``ip``:

* ``eip`` is the **linear** address of the next instruction, CS*16+IP
  (20 bits).  gdb's ``$pc`` is ``eip`` on this architecture, and every
  address gdb sends (``m``, ``M``, ``X``, ``Z``) is taken as linear, so
  ``x/3i $pc`` shows the instruction at CS:IP, ``break *0x7c00`` stops at
  linear 7C00h, and a breakpoint stop reports the address gdb asked for.
* ``ip`` is the 16-bit instruction pointer itself; ``cs ss ds es`` are the
  segment registers, ``eax``..``edi`` carry AX..DI (the upper halves read 0),
  ``eflags`` carries FLAGS.  ``fs``/``gs`` and the x87 registers (the 8088
  has none) read 0; writing them is refused (``E``), except that a ``G``
  packet may carry their zeros.
* Writing ``eip`` (``set $pc = L``) keeps CS when L is inside CS's 64 KiB
  window (IP = L - CS*16), otherwise sets CS:IP to (L >> 4):(L & 0Fh);
  writing ``ip`` or a segment register changes just that register (gdb
  reads the registers again after a write, so ``$pc`` follows).
* Memory addresses are linear and wrap at 1 MiB; writes act as the CPU's
  (ROM keeps its bytes).

Stop replies: an execution breakpoint gdb set is ``T05swbreak:;``, a
watchpoint ``T05watch:ADDR;`` (``rwatch``/``awatch`` for read/access), a
step ``T05``, an interrupt (Ctrl-C, a JSON-RPC ``execution.pause``)
``T02``, a fault ``T04``; a stop gdb did not ask for (a JSON-RPC or
``monitor`` breakpoint) is a plain ``T05``.  The ``monitor`` commands
(``qRcmd``) cover what gdb has no word for; ``monitor help`` lists them.

One gdb at a time: a second connection while one is attached is closed at
once.  Attaching pauses the machine; ``D`` (detach) lets it run on; a
client that goes away without detaching (at any point, mid-packet too)
leaves it paused, and the port takes the next client.  ``k`` ends the run.
"""

import binascii
import os
import select
import socket
import sys
import threading
import time

from ..cpu import state as S
from ..listening import close_listener, listen_socket

DEFAULT_PORT = 1234
PACKET_SIZE = 0x20100           # qSupported PacketSize: a 64 KiB m reply fits
MAX_MEMORY_READ = 0x10000       # bytes one m packet may ask for
CALL_TIMEOUT_S = 30.0           # a machine-thread request that never gets served
MEM_TOP = 1 << 20
ARCH = "i8086"

# the register numbers of the target description, in g-packet order
GPRS = ("eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi")
GPR_INDEX = (S.AX, S.CX, S.DX, S.BX, S.SP, S.BP, S.SI, S.DI)
SEGS = (("cs", S.CS), ("ss", S.SS), ("ds", S.DS), ("es", S.ES))
X87 = [f"st{i}" for i in range(8)] + ["fctrl", "fstat", "ftag", "fiseg", "fioff", "foseg",
                                     "fooff", "fop"]
# (name, byte size); regnum = position
REGISTERS = ([(n, 4) for n in GPRS] + [("eip", 4), ("eflags", 4)]
             + [(n, 4) for n, _ in SEGS] + [("fs", 4), ("gs", 4)]
             + [(n, 10 if n.startswith("st") else 4) for n in X87] + [("ip", 2)])
REG_NUM = {name: i for i, (name, _) in enumerate(REGISTERS)}


FLAGS_TYPE = ('    <flags id="i8086_flags" size="4">\n' + "".join(
    f'      <field name="{n}" start="{b}" end="{b}"/>\n' for n, b in (
        ("CF", 0), ("", 1), ("PF", 2), ("AF", 4), ("ZF", 6), ("SF", 7), ("TF", 8), ("IF", 9),
        ("DF", 10), ("OF", 11))) + "    </flags>\n")


def _target_xml():
    core = []
    types = {"eip": "code_ptr", "esp": "data_ptr", "ebp": "data_ptr", "eflags": "i8086_flags"}
    for i, (name, size) in enumerate(REGISTERS[:-1]):
        if name.startswith("st"):
            kind, group = "i387_ext", "float"
        else:
            kind = types.get(name, "int32")
            group = "float" if name in X87 else "general"
        core.append(f'    <reg name="{name}" bitsize="{size * 8}" type="{kind}" '
                    f'regnum="{i}" group="{group}"/>')
    return ('<?xml version="1.0"?>\n<!DOCTYPE target SYSTEM "gdb-target.dtd">\n'
            f'<target version="1.0">\n  <architecture>{ARCH}</architecture>\n'
            '  <osabi>none</osabi>\n'
            '  <feature name="org.gnu.gdb.i386.core">\n' + FLAGS_TYPE + "\n".join(core) + "\n  </feature>\n"
            '  <feature name="org.pypc.real-mode">\n'
            f'    <reg name="ip" bitsize="16" type="uint16" regnum="{REG_NUM["ip"]}" '
            'group="general"/>\n  </feature>\n</target>\n')


TARGET_XML = _target_xml()


class GdbError(Exception):
    """A packet the stub refuses: its ``E`` reply (``E01`` .. ``E0F``)."""

    def __init__(self, code=1, message=""):
        super().__init__(message)
        self.code = code


E_BAD = 1           # a malformed packet
E_RANGE = 2         # an address/length/register outside what exists
E_RUNNING = 3       # the machine runs (a JSON-RPC client resumed it)
E_REFUSED = 4       # the debugger refused (a breakpoint it cannot make)


# ---------------------------------------------------------------------------
# the wire format
# ---------------------------------------------------------------------------

def checksum(payload):
    return sum(payload) & 0xFF


def frame(payload):
    """``$payload#cs`` for bytes ``payload`` (escaped already)."""
    return b"$" + payload + b"#%02x" % checksum(payload)


def escape_binary(data):
    """The binary-data escaping of ``X`` packets and ``qXfer`` replies."""
    out = bytearray()
    for b in data:
        if b in (0x23, 0x24, 0x7D, 0x2A):
            out += bytes((0x7D, b ^ 0x20))
        else:
            out.append(b)
    return bytes(out)


def unescape_binary(data):
    out = bytearray()
    it = iter(data)
    for b in it:
        if b == 0x7D:
            n = next(it, None)
            if n is None:
                raise GdbError(E_BAD, "binary data ends in an escape")
            out.append(n ^ 0x20)
        else:
            out.append(b)
    return bytes(out)


def _hex(text, what="number"):
    try:
        return int(text, 16)
    except (ValueError, TypeError):
        raise GdbError(E_BAD, f"bad {what} {text!r}") from None


def _addr_len(text):
    a, sep, n = text.partition(",")
    if not sep:
        raise GdbError(E_BAD, "expected ADDR,LENGTH")
    return _hex(a, "address"), _hex(n, "length")


class PacketReader:
    """Splits the byte stream from gdb into ``("packet", payload)``,
    ``("interrupt", None)`` (a 03h outside a packet), ``("ack", "+"/"-")``
    and ``("bad", payload)`` (a checksum mismatch)."""

    def __init__(self):
        self.buf = bytearray()

    def feed(self, data):
        self.buf += data
        out = []
        while self.buf:
            b = self.buf[0]
            if b == 0x03:
                del self.buf[0]
                out.append(("interrupt", None))
            elif b in (0x2B, 0x2D):
                del self.buf[0]
                out.append(("ack", chr(b)))
            elif b == 0x24:
                end = self.buf.find(b"#")
                if end < 0 or len(self.buf) < end + 3:
                    if len(self.buf) > PACKET_SIZE + 4:
                        del self.buf[:]
                        out.append(("bad", b""))
                    break
                payload = bytes(self.buf[1:end])
                cs = bytes(self.buf[end + 1:end + 3])
                del self.buf[:end + 3]
                try:
                    good = int(cs, 16) == checksum(payload)
                except ValueError:
                    good = False
                out.append(("packet" if good else "bad", payload))
            else:
                del self.buf[0]             # noise between packets
        return out


# ---------------------------------------------------------------------------
# the machine side (runs on the machine thread, as controller requests)
# ---------------------------------------------------------------------------

def _linear_pc(regs):
    return ((int(regs[S.CS]) << 4) + int(regs[S.IP])) & (MEM_TOP - 1)


def register_value(regs, num):
    """The value of register ``num`` of the target description."""
    name = REGISTERS[num][0]
    if num < 8:
        return int(regs[GPR_INDEX[num]])
    if name == "eip":
        return _linear_pc(regs)
    if name == "eflags":
        return int(regs[S.FLAGS])
    if name == "ip":
        return int(regs[S.IP])
    for seg, i in SEGS:
        if name == seg:
            return int(regs[i])
    return 0                            # fs, gs, x87: the 8088 has none


def encode_registers(regs):
    return "".join(encode_register(regs, i) for i in range(len(REGISTERS)))


def encode_register(regs, num):
    size = REGISTERS[num][1]
    return register_value(regs, num).to_bytes(size, "little").hex()


class Target:
    """What the gdb packets do to the machine; every method runs on the
    machine thread (the stub submits them as controller requests)."""

    def __init__(self, server):
        self.server = server
        self.gdb_bps = {}           # (type, linear, length) -> rpc breakpoint id
        self.op = None              # the Operation gdb's last c/s started

    # -- registers ----------------------------------------------------------
    @staticmethod
    def _paused(ctl):
        if ctl.running or ctl.busy():
            raise GdbError(E_RUNNING, "the machine is running")

    def read_registers(self, ctl):
        return encode_registers(ctl.cpu.regs)

    def read_register(self, ctl, num):
        if not 0 <= num < len(REGISTERS):
            raise GdbError(E_RANGE, f"no register {num}")
        return encode_register(ctl.cpu.regs, num)

    def write_register(self, ctl, num, value, strict=True):
        """Set register ``num`` to ``value``; ``strict``: a non-zero value for
        a register the 8088 lacks is refused (a ``G`` passes its zeros)."""
        self._paused(ctl)
        if not 0 <= num < len(REGISTERS):
            raise GdbError(E_RANGE, f"no register {num}")
        name = REGISTERS[num][0]
        regs = ctl.cpu.regs
        r = ctl.cpu.r
        if num < 8 or name in ("eflags", "cs", "ss", "ds", "es", "ip"):
            if value > 0xFFFF:
                raise GdbError(E_RANGE, f"{name} is 16-bit on the 8088")
            target = {"eflags": "flags"}.get(name, name)
            if num < 8:
                target = S.REG16_NAMES[GPR_INDEX[num]]
            setattr(r, target, value)
            if name in ("cs", "ip"):
                self._new_cs_ip(ctl)
        elif name == "eip":
            if value >= MEM_TOP:
                raise GdbError(E_RANGE, "eip (the linear pc) is a 20-bit address")
            if value != _linear_pc(regs):
                cs = int(regs[S.CS])
                off = value - (cs << 4)
                if not 0 <= off <= 0xFFFF:
                    r.cs, off = value >> 4, value & 0xF
                r.ip = off
                self._new_cs_ip(ctl)
        elif value and strict:
            raise GdbError(E_RANGE, f"the 8088 has no {name}")
        ctl.bump()

    @staticmethod
    def _new_cs_ip(ctl):
        # a new CS:IP starts a fresh instruction (as state.set_registers does)
        ctl.cpu.ctl[S.C_REP_RESUME] = 0
        ctl.cpu.ctl[S.C_HALTED] = 0

    def write_registers(self, ctl, data):
        self._paused(ctl)
        need = sum(size for _, size in REGISTERS)
        if len(data) > need:
            raise GdbError(E_BAD, f"G carries at most {need} bytes of registers, "
                                  f"not {len(data)}")
        values, pos = [], 0
        for _, size in REGISTERS:
            chunk = data[pos:pos + size]
            values.append(int.from_bytes(chunk, "little") if len(chunk) == size else None)
            pos += size
        # check everything before changing anything
        for num, value in enumerate(values):
            name = REGISTERS[num][0]
            if value is None:
                continue
            if (num < 8 or name in ("eflags", "cs", "ss", "ds", "es", "ip")) and value > 0xFFFF:
                raise GdbError(E_RANGE, f"{name} is 16-bit on the 8088")
            if name == "eip" and value >= MEM_TOP:
                raise GdbError(E_RANGE, "eip is a 20-bit address")
        old_pc = _linear_pc(ctl.cpu.regs)
        eip = values[REG_NUM["eip"]]
        ip = values[REG_NUM["ip"]]
        for num, value in enumerate(values):
            name = REGISTERS[num][0]
            if value is None or name in ("eip", "ip"):
                continue
            self.write_register(ctl, num, value, strict=False)
        if ip is not None and ip != int(ctl.cpu.regs[S.IP]):
            self.write_register(ctl, REG_NUM["ip"], ip)
        elif eip is not None and eip != old_pc:
            self.write_register(ctl, REG_NUM["eip"], eip)

    # -- memory ---------------------------------------------------------------
    @staticmethod
    def read_memory(ctl, addr, length):
        if length > MAX_MEMORY_READ:
            raise GdbError(E_RANGE, f"at most {MAX_MEMORY_READ:#x} bytes per m packet")
        if addr >= 1 << 32:
            raise GdbError(E_RANGE, "address beyond 32 bits")
        return ctl.machine.memory.read(addr & (MEM_TOP - 1), length)

    def write_memory(self, ctl, addr, data):
        self._paused(ctl)
        if addr >= 1 << 32 or len(data) > MEM_TOP:
            raise GdbError(E_RANGE, "address beyond 32 bits")
        if data:
            ctl.machine.memory.write(addr & (MEM_TOP - 1), data)
            ctl.bump()

    # -- breakpoints ----------------------------------------------------------
    KINDS = {0: "execution", 1: "execution", 2: "memory_write", 3: "memory_read",
             4: "memory_access"}

    def insert(self, ctl, ztype, addr, length):
        kind = self.KINDS.get(ztype)
        if kind is None:
            raise GdbError(E_BAD, f"Z{ztype} is not a breakpoint type")
        if addr >= MEM_TOP:
            raise GdbError(E_RANGE, f"{addr:#x} is beyond 1 MiB")
        key = (ztype, addr, length if ztype >= 2 else 1)
        if key in self.gdb_bps and self._live(ctl, self.gdb_bps[key]):
            return                      # gdb may insert the same one twice
        spec = {"kind": kind, "address": {"space": "linear", "offset": addr}}
        if ztype >= 2:
            if not 1 <= length <= MEM_TOP - addr:
                raise GdbError(E_RANGE, f"watch range {addr:#x}+{length:#x} is outside 1 MiB")
            spec["length"] = length
        try:
            desc = ctl.call("breakpoints.create", spec)
        except Exception as exc:
            raise GdbError(E_REFUSED, str(exc)) from None
        self.gdb_bps[key] = desc["breakpoint_id"]

    @staticmethod
    def _live(ctl, rpc_id):
        return any(m.rpc_id == rpc_id for m in ctl.bp_meta.values())

    def remove(self, ctl, ztype, addr, length):
        if ztype not in self.KINDS:
            raise GdbError(E_BAD, f"z{ztype} is not a breakpoint type")
        rpc_id = self.gdb_bps.pop((ztype, addr, length if ztype >= 2 else 1), None)
        if rpc_id is not None and self._live(ctl, rpc_id):
            ctl.call("breakpoints.delete", {"breakpoint_id": rpc_id})
        # (one gdb set that is gone already -- deleted over JSON-RPC, or never
        # set: removing it is done)

    def forget_all(self, ctl):
        """Remove every breakpoint gdb set (detach, a vanished client)."""
        for rpc_id in list(self.gdb_bps.values()):
            if self._live(ctl, rpc_id):
                ctl.call("breakpoints.delete", {"breakpoint_id": rpc_id})
        self.gdb_bps.clear()

    # -- execution ---------------------------------------------------------------
    def pause(self, ctl):
        if ctl.running:
            ctl.stop_now(ctl.make_stop("pause"))

    def resume(self, ctl, step):
        """Start a continue or a step; returns a Park that answers with the
        stop reply once the machine stops (whoever stopped it)."""
        from ..rpc.controller import Park
        if step:
            self._paused(ctl)
            op = ctl.new_operation("step")
            ctl.pending_step = op
        elif ctl.running or ctl.busy():
            op = ctl.active         # a JSON-RPC client runs it: wait for its stop
        else:
            op = ctl.new_operation("continue")
            ctl.resume(op)
        self.op = op

        def check():
            if ctl.running or ctl.busy():
                return None
            return self.stop_reply(ctl)
        return Park(check, float("inf"), None)

    def stop_reply(self, ctl):
        """The stop reply packet for the controller's last stop."""
        stop = ctl.last_stop or {"kind": "pause"}
        kind = stop.get("kind")
        tail = "thread:1;"
        if kind == "program_exit":
            return "W%02x" % (int(stop.get("exit_code", 0)) & 0xFF)
        if kind in ("pause", None):
            return "T02" + tail
        if kind == "fault":
            return "T04" + tail
        if kind == "breakpoint":
            rpc_id = stop.get("breakpoint_id")
            gdb_keys = [k for k, v in self.gdb_bps.items() if v == rpc_id]
            if gdb_keys:
                ztype, where, _ = gdb_keys[0]
                if ztype >= 2:
                    word = {2: "watch", 3: "rwatch", 4: "awatch"}[ztype]
                    return f"T05{word}:{where:x};" + tail
                return "T05swbreak:;" + tail
            # (a JSON-RPC or monitor breakpoint or watchpoint: a plain T05)
        return "T05" + tail

    # -- monitor ------------------------------------------------------------------
    def monitor(self, ctl, text):
        from . import gdb_monitor
        return gdb_monitor.run(self, ctl, text)


# ---------------------------------------------------------------------------
# the socket side
# ---------------------------------------------------------------------------

class _Reply:
    """The ``conn`` of a controller request: the machine thread's answer
    for the session thread (and a byte on the wake pipe)."""

    def __init__(self, wake):
        self.event = threading.Event()
        self.result = self.error = None
        self.wake = wake

    def done(self):
        pass

    def send_result(self, rid, result):
        self.result = result
        self._set()

    def send_error(self, rid, error):
        self.error = error
        self._set()

    def _set(self):
        self.event.set()
        try:
            self.wake.send(b"!")
        except OSError:
            pass


class Killed(SystemExit):
    """Raised on the machine thread by gdb's ``k``: the run ends."""


class Vanished(Exception):
    """The client closed the connection (or it broke)."""


class Session:
    """One attached gdb."""

    def __init__(self, server, sock):
        self.server = server
        self.sock = sock
        self.reader = PacketReader()
        self.pending = []
        self.ack = True
        self.target = server.target
        self.wake_r, self.wake_w = socket.socketpair()
        self.detached = False
        self.kill_after_reply = False

    # -- machine-thread calls ----------------------------------------------------
    def call(self, fn, *args, method="gdb.request"):
        """Run ``fn(ctl, *args)`` on the machine thread; its result, or
        GdbError.  A Park answers when it is ready."""
        from ..rpc.controller import Park, Request
        reply = _Reply(self.wake_w)

        def run(ctl, _params):
            try:
                result = fn(ctl, *args)
            except GdbError as exc:
                return {"gdb_error": exc.code, "message": str(exc)}
            if isinstance(result, Park):
                check = result.check
                return Park(lambda: (lambda r: None if r is None else {"ok": r})(check()),
                            result.deadline, result.timeout_result)
            return {"ok": result}
        self.server.controller.submit(Request(reply, 0, False, method, None, run))
        return reply

    def wait(self, reply, watch_socket=False):
        """The result of a call; with ``watch_socket``, a 03h (gdb's
        interrupt) from the client meanwhile pauses the machine."""
        deadline = None if watch_socket else time.monotonic() + CALL_TIMEOUT_S
        while not reply.event.is_set():
            timeout = 0.5 if deadline is None else max(0.0, deadline - time.monotonic())
            if deadline is not None and timeout == 0:
                raise GdbError(E_RUNNING, "the machine thread did not answer")
            watched = [self.sock, self.wake_r] if watch_socket else [self.wake_r]
            ready, _, _ = select.select(watched, [], [], timeout)
            if self.wake_r in ready:
                self.wake_r.recv(64)
            if watch_socket and self.sock in ready:
                for kind, payload in self._read():
                    if kind == "interrupt":
                        self.call(self.target.pause)
                    elif kind == "packet":
                        self.pending.append(payload)   # (gdb waits: nothing should come)
        if reply.error is not None:
            raise GdbError(E_REFUSED, reply.error.get("message", ""))
        result = reply.result
        if isinstance(result, dict) and "gdb_error" in result:
            raise GdbError(result["gdb_error"], result.get("message", ""))
        return result["ok"] if isinstance(result, dict) and "ok" in result else result

    def run(self, fn, *args):
        return self.wait(self.call(fn, *args))

    # -- the wire ----------------------------------------------------------------
    def _read(self):
        try:
            data = self.sock.recv(65536)
        except OSError:
            data = b""
        if not data:
            raise Vanished()
        events = self.reader.feed(data)
        out = []
        for kind, payload in events:
            if kind == "bad":
                if self.ack:
                    self._send_raw(b"-")     # gdb sends it again
            elif kind == "packet":
                if self.ack:
                    self._send_raw(b"+")
                out.append((kind, payload))
            elif kind == "interrupt":
                out.append((kind, None))
        return out

    def _send_raw(self, data):
        try:
            self.sock.sendall(data)
        except OSError:
            raise Vanished() from None

    def send(self, text):
        payload = text if isinstance(text, bytes) else text.encode("latin-1")
        self._send_raw(frame(payload))
        # (acks from gdb are read and dropped with the next packets)

    def next_packet(self):
        while not self.pending:
            for kind, payload in self._read():
                if kind == "packet":
                    self.pending.append(payload)
                elif kind == "interrupt":
                    self.pending.append(None)
        return self.pending.pop(0)

    # -- the loop ----------------------------------------------------------------
    def serve(self):
        """Answer packets until the client detaches, kills or goes away."""
        try:
            # attaching stops the machine (queued: the requests after it see it
            # stopped; the protocol's own packets need not wait for it)
            self.call(self.target.pause)
            while True:
                payload = self.next_packet()
                if payload is None:               # 03h while stopped: answer the stop
                    self.send(self.run(self.target.stop_reply))
                    continue
                try:
                    reply = self.handle(payload)
                except GdbError as exc:
                    reply = "E%02x" % exc.code
                    if os.environ.get("PYPC_DEBUG"):
                        sys.stderr.write(f"pypc: gdb: {payload[:40]!r} -> {reply}: {exc}\n")
                if reply is not None:
                    self.send(reply)
                if self.kill_after_reply:
                    self.server.kill()
                if self.detached:
                    return
        except Vanished:
            pass
        finally:
            if not self.detached:
                # a client that went away leaves the machine paused (and its
                # breakpoints out of the table)
                try:
                    self.run(self._vanished)
                except GdbError:
                    pass
            self.close()

    def _vanished(self, ctl):
        self.target.pause(ctl)
        self.target.forget_all(ctl)

    def close(self):
        if self.detached:
            # after D / vKill: say we are done (FIN), then read what the client
            # still sends (its ack) until it closes, so the close is no reset
            try:
                self.sock.shutdown(socket.SHUT_WR)
                self.sock.settimeout(1.0)
                while self.sock.recv(4096):
                    pass
            except OSError:
                pass
        for s in (self.sock, self.wake_r, self.wake_w):
            try:
                s.close()
            except OSError:
                pass

    # -- the packets ---------------------------------------------------------------
    def handle(self, payload):
        t = self.target
        try:
            text = payload.decode("latin-1")
        except Exception:
            raise GdbError(E_BAD)
        if not text:
            return ""
        c, rest = text[0], text[1:]
        if c == "?":
            return self.run(t.stop_reply)
        if c == "g":
            return self.run(t.read_registers)
        if c == "G":
            data = _unhex(rest)
            self.run(t.write_registers, data)
            return "OK"
        if c == "p":
            return self.run(t.read_register, _hex(rest, "register number"))
        if c == "P":
            num, sep, value = rest.partition("=")
            if not sep:
                raise GdbError(E_BAD, "P needs N=VALUE")
            num = _hex(num, "register number")
            if not 0 <= num < len(REGISTERS):
                raise GdbError(E_RANGE)
            raw = _unhex(value)
            if len(raw) != REGISTERS[num][1]:
                raise GdbError(E_BAD, "value of the wrong size")
            self.run(t.write_register, num, int.from_bytes(raw, "little"))
            return "OK"
        if c == "m":
            addr, length = _addr_len(rest)
            return self.run(t.read_memory, addr, length).hex()
        if c == "M":
            where, sep, data = rest.partition(":")
            if not sep:
                raise GdbError(E_BAD, "M needs ADDR,LENGTH:DATA")
            addr, length = _addr_len(where)
            raw = _unhex(data)
            if len(raw) != length:
                raise GdbError(E_BAD, "M: the data is not LENGTH bytes")
            self.run(t.write_memory, addr, raw)
            return "OK"
        if c == "X":
            colon = payload.find(b":")
            if colon < 0:
                raise GdbError(E_BAD, "X needs ADDR,LENGTH:DATA")
            addr, length = _addr_len(payload[1:colon].decode("latin-1"))
            raw = unescape_binary(payload[colon + 1:])
            if len(raw) != length:
                raise GdbError(E_BAD, "X: the data is not LENGTH bytes")
            self.run(t.write_memory, addr, raw)
            return "OK"
        if c in "Zz":
            ztype, _, spec = rest.partition(",")
            addr, kind = _addr_len(spec.split(";")[0])
            ztype = _hex(ztype, "breakpoint type")
            if ztype not in t.KINDS:
                return ""                          # a type we do not have
            self.run(t.insert if c == "Z" else t.remove, ztype, addr, kind)
            return "OK"
        if c in "sc":
            if rest:
                _hex(rest, "address")              # resuming elsewhere: not supported
                raise GdbError(E_BAD, "s/c ADDR is not supported: set $pc")
            return self.resume(step=c == "s")
        if c in "SC":
            sig, _, addr = rest.partition(";")
            _hex(sig, "signal")
            if addr:
                raise GdbError(E_BAD, "S/C ;ADDR is not supported: set $pc")
            return self.resume(step=c == "S")
        if c == "D":
            self.run(self._detach)
            self.detached = True
            return "OK"
        if c == "k":
            self.server.kill()
            self.detached = True
            return None
        if c == "H":
            return "OK"
        if c == "T":
            return "OK"
        if c == "v":
            return self.handle_v(text)
        if c == "q" or c == "Q":
            return self.handle_q(text)
        return ""

    def _detach(self, ctl):
        self.target.forget_all(ctl)
        if not ctl.running and not ctl.busy():
            op = ctl.new_operation("continue")
            ctl.resume(op)

    def resume(self, step):
        return self.wait(self.call(self.target.resume, step), watch_socket=True)

    def handle_v(self, text):
        if text == "vCont?":
            return "vCont;c;C;s;S"
        if text.startswith("vCont;"):
            actions = [a.split(":")[0] for a in text[6:].split(";")]
            if not actions or any(not a or a[0] not in "cCsS" for a in actions):
                raise GdbError(E_BAD, "vCont: only c, C, s and S")
            return self.resume(step=any(a[0] in "sS" for a in actions))
        if text.startswith("vKill"):
            self.detached = True
            self.kill_after_reply = True        # gdb waits for the OK before the end
            return "OK"
        if text == "vMustReplyEmpty":
            return ""
        return ""

    def handle_q(self, text):
        if text.startswith("qSupported"):
            return (f"PacketSize={PACKET_SIZE:x};qXfer:features:read+;swbreak+;hwbreak+;"
                    "vContSupported+;QStartNoAckMode+")
        if text == "QStartNoAckMode":
            self.send("OK")
            self.ack = False
            return None
        if text.startswith("qXfer:features:read:"):
            annex, _, span = text[len("qXfer:features:read:"):].partition(":")
            if annex != "target.xml":
                raise GdbError(0, "no such annex")
            off, length = _addr_len(span)
            data = TARGET_XML.encode()
            chunk = data[off:off + length]
            return (b"l" if off + length >= len(data) else b"m") + escape_binary(chunk)
        if text == "qAttached":
            return "1"
        if text == "qC":
            return "QC1"
        if text == "qfThreadInfo":
            return "m1"
        if text == "qsThreadInfo":
            return "l"
        if text.startswith("qRcmd,"):
            command = _unhex(text[6:]).decode("latin-1")
            out, ok = self.run(self.target.monitor, command)
            if out:
                self.send("O" + out.encode("latin-1", "replace").hex())
            return "OK" if ok else "E%02x" % E_BAD
        if text == "qSymbol::":
            return "OK"
        return ""


def _unhex(text):
    try:
        return binascii.unhexlify(text)
    except (binascii.Error, ValueError):
        raise GdbError(E_BAD, "bad hex data") from None


class GdbServer:
    """Listens on ``host:port`` and serves one gdb at a time for
    ``controller``'s machine."""

    option = "--gdb"

    def __init__(self, controller, host="127.0.0.1", port=DEFAULT_PORT):
        self.controller = controller
        self.host = host
        self.requested_port = port
        self.listener = None
        self.session = None
        self.target = Target(self)
        self.killed = threading.Event()
        self._lock = threading.Lock()

    @property
    def port(self):
        return self.listener.getsockname()[1]

    def start(self):
        from ..errors import PypcError
        try:
            self.listener = listen_socket(self.host, self.requested_port, self.option)
        except PypcError as exc:
            why = str(exc).split(" (", 1)[-1].split(")", 1)[0]
            raise PypcError(f"--gdb {self.requested_port}: cannot listen on {self.host}:"
                            f"{self.requested_port} ({why}); pick another --gdb PORT") from None
        threading.Thread(target=self._accept_loop, daemon=True, name="gdb-accept").start()
        return self

    def _accept_loop(self):
        while True:
            try:
                sock, _peer = self.listener.accept()
            except OSError:
                return
            with self._lock:
                busy = self.session is not None
                if not busy:
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    self.session = Session(self, sock)
            if busy:
                sock.close()                     # one gdb at a time
                continue
            threading.Thread(target=self._serve, args=(self.session,), daemon=True,
                             name="gdb-session").start()

    def _serve(self, session):
        try:
            session.serve()
        finally:
            with self._lock:
                self.session = None

    def kill(self):
        """gdb's ``k``: end the run.  The machine thread raises
        :class:`Killed` (a SystemExit, exit status 0) out of the run loop,
        which closes the machine as any end of a run does."""
        self.killed.set()
        from ..rpc.controller import Request

        def end(ctl, _params):
            sys.stderr.write("pypc: gdb ended the run (kill)\n")
            sys.stderr.flush()
            raise Killed(0)
        self.controller.submit(Request(None, 0, True, "gdb.kill", None, end))

    def close(self):
        close_listener(self.listener)
        with self._lock:
            session = self.session
        if session is not None:
            try:
                session.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


# ---------------------------------------------------------------------------
# a stub on a run's machine (pypc run --gdb: pypc_core/cli/gdb.py)
# ---------------------------------------------------------------------------

class RoutedController:
    """A controller for a run without the JSON-RPC server (``--no-rpc``,
    ``--bare``): the machine's ``run_until_cycle`` goes through it, as
    :class:`pypc_core.rpc.routed.RoutedServer` routes it for the RPC."""

    def __init__(self, machine):
        from ..rpc.controller import Controller
        from ..rpc.routed import routed_runner
        from ..rpc.server import collect_methods
        self.machine = machine
        self.controller = Controller(machine)
        self.controller.methods = collect_methods(machine.plugin_manager)
        machine.route_runs(routed_runner(self.controller))

    def close(self):
        self.machine.route_runs(None)


class GdbRun:
    """The stub of one ``pypc run --gdb``; :meth:`close` stops it."""

    def __init__(self, server, routed=None):
        self.server = server
        self.routed = routed

    @property
    def port(self):
        return self.server.port

    def close(self):
        self.server.close()
        if self.routed is not None:
            self.routed.close()
