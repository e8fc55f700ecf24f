"""``pypc run --headless --bare``: an XT with no firmware, for CPU test ROMs
and boot-sector development.

RAM is zeroed, the registers are zero (CS:IP is the reset vector FFFF:0000
unless ``--entry`` says otherwise), the motherboard chips are present but
nobody programmed them, and there are no cards but those named with
``--plugins``.  ``--load FILE@SEG:OFF`` (repeatable) places raw binaries:
inside RAM they are RAM contents, above it they become ROM (a 64 KiB file at
F000:0000 is how a test ROM is mapped).  Unclaimed ports read FFh and
swallow writes, as on any pypc machine.

At the end ``--dump-registers`` prints one JSON object on stdout and
``--dump-memory SEG:OFF+LEN=FILE`` (repeatable) writes memory to files;
``--until-halt`` makes the exit status 0 for a halt stop (HLT with
interrupts disabled) and 1 for anything else.

``--gdb [PORT]`` serves gdb's remote protocol (docs/gdb.md); only beside it
does a bare run serve JSON-RPC too, when ``--rpc-port PORT`` is given.
Under gdb the run has no time limit unless ``--timeout`` gives one.
"""

import argparse
import json
import os
import sys

from ..cpu import state as S
from ..errors import PypcError
from ..scheduler import CPU_HZ
from ..argtypes import speed_from_args

MEM_TOP = 1 << 20
PAGE = 1 << S.PAGE_SHIFT
DEFAULT_TIMEOUT_S = 60.0


class BareError(PypcError):
    """A bad --load / --entry / --dump-memory."""


def parse_seg_off(text):
    """``SEG:OFF`` in hex (``F000:0000``, ``0:7c00h``) -> (seg, off)."""
    seg, sep, off = str(text).partition(":")
    if not sep:
        raise BareError(f"{text!r} is not SEG:OFF (hexadecimal, e.g. F000:0000)")
    try:
        s = int(seg.strip().rstrip("hH"), 16)
        o = int(off.strip().rstrip("hH"), 16)
    except ValueError:
        raise BareError(f"{text!r} is not SEG:OFF (hexadecimal, e.g. F000:0000)") from None
    if not (0 <= s <= 0xFFFF and 0 <= o <= 0xFFFF):
        raise BareError(f"{text!r}: segment and offset are 16-bit")
    return s, o


def _arg(parse):
    def wrapped(text):
        try:
            return parse(text)
        except BareError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return wrapped


def parse_load(text):
    """``FILE@SEG:OFF`` -> (path, seg, off)."""
    path, sep, where = str(text).rpartition("@")
    if not sep or not path:
        raise BareError(f"{text!r} is not FILE@SEG:OFF (e.g. test.bin@F000:0000)")
    seg, off = parse_seg_off(where)
    return path, seg, off


def parse_dump(text):
    """``SEG:OFF+LEN=FILE`` -> (seg, off, length, path); LEN in hex."""
    spec, sep, path = str(text).partition("=")
    where, plus, length = spec.partition("+")
    if not sep or not plus or not path:
        raise BareError(f"{text!r} is not SEG:OFF+LEN=FILE (hexadecimal, e.g. 0:0+400=ivt.bin)")
    seg, off = parse_seg_off(where)
    try:
        n = int(length.strip().rstrip("hH"), 16)
    except ValueError:
        raise BareError(f"{text!r}: length {length!r} is not hexadecimal") from None
    linear = (seg << 4) + off
    if n < 1 or linear + n > MEM_TOP:
        raise BareError(f"{text!r}: {n:#x} bytes at {linear:05X}h do not fit in 1 MiB")
    return seg, off, n, path


def add_arguments(parser):
    g = parser.add_argument_group(
        "bare machine (no firmware: CPU test ROMs, boot-sector development; needs --headless)")
    g.add_argument("--bare", action="store_true",
                   help="no BIOS: RAM zeroed, registers zero (CS:IP FFFF:0000 unless --entry), "
                        "the chips present but unprogrammed, no cards but those named "
                        "with --plugins")
    g.add_argument("--load", type=_arg(parse_load), action="append", default=[],
                   metavar="FILE@SEG:OFF",
                   help="place a raw binary at SEG:OFF (hex); above RAM it becomes ROM; "
                        "repeatable")
    g.add_argument("--entry", type=_arg(parse_seg_off), metavar="SEG:OFF",
                   help="start at SEG:OFF (hex) instead of FFFF:0000")
    g.add_argument("--until-halt", action="store_true",
                   help="exit 0 when the CPU halts with interrupts disabled, 1 otherwise "
                        "(at --timeout, default 60 emulated seconds)")
    g.add_argument("--dump-registers", action="store_true",
                   help="print the registers, cycles, instructions and the stop as one "
                        "JSON object on stdout at the end")
    g.add_argument("--dump-memory", type=_arg(parse_dump), action="append", default=[],
                   metavar="SEG:OFF+LEN=FILE",
                   help="write LEN (hex) bytes of memory at SEG:OFF to FILE at the end; "
                        "repeatable")


def check(args):
    """Bad combinations, before any file is opened or written."""
    bare_only = [name for name, given in (
        ("--load", args.load), ("--entry", args.entry), ("--until-halt", args.until_halt),
        ("--dump-registers", args.dump_registers), ("--dump-memory", args.dump_memory))
        if given]
    if not args.bare:
        if bare_only:
            raise BareError(f"{bare_only[0]} needs --bare")
        return
    if not args.headless:
        raise BareError("--bare needs --headless (there is no firmware to draw a screen)")
    for name in ("floppy", "floppy_b", "hdd", "bios"):
        if getattr(args, name, None):
            raise BareError(f"--bare runs no firmware: --{name.replace('_', '-')} "
                            "cannot be used with it")
    if getattr(args, "program", None):
        raise BareError("--bare runs no DOS: a PROGRAM cannot be used with it")
    gdb = getattr(args, "gdb", None) is not None
    for name in ("telnet_port", "vnc_port", "vnc_password_file", "web", "listen", "audio",
                 "video_out"):
        if name == "listen" and gdb:
            continue                    # (--gdb's address)
        if getattr(args, name, None) is not None:
            raise BareError(f"--bare serves no viewer and no sound: "
                            f"--{name.replace('_', '-')} cannot be used with it")
    rpc_given = [name for name, given in (
        ("serve", getattr(args, "serve", False)),
        ("rpc-port", getattr(args, "rpc_port_given", False) and not gdb),   # (beside --gdb)
        ("rpc-socket", getattr(args, "rpc_socket", None) is not None),
        ("rpc-token-file", getattr(args, "rpc_token_file", None) is not None)) if given]
    if rpc_given:
        raise BareError(f"--bare serves no JSON-RPC: --{rpc_given[0]} cannot be used with it")
    for _seg, _off, _n, path in args.dump_memory:
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise BareError(f"--dump-memory: folder {folder} does not exist")
        if os.path.isdir(path):
            raise BareError(f"--dump-memory: {path} is a folder")


def read_loads(specs):
    """[(path, seg, off)] -> [(bytes, linear)], refusing what does not fit
    or overlaps another load."""
    loads = []
    for path, seg, off in specs:
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            raise BareError(f"--load {path}: {exc.strerror or exc}") from None
        linear = (seg << 4) + off
        if not data:
            raise BareError(f"--load {path}: the file is empty")
        if linear + len(data) > MEM_TOP:
            raise BareError(f"--load {path}@{seg:04X}:{off:04X}: {len(data)} bytes at "
                            f"{linear:05X}h go past the end of memory (FFFFFh)")
        for other, at, name in ((d, a, n) for d, a, n in loads):
            if linear < at + len(other) and at < linear + len(data):
                raise BareError(f"--load {path}@{seg:04X}:{off:04X} overlaps --load {name}")
        loads.append((data, linear, path))
    return [(d, a) for d, a, _ in loads]


def register_dump(machine, stop):
    r = machine.cpu.regs
    out = {name: int(r[S.REG_INDEX[name]]) for name in
           S.REG16_NAMES + S.SEG_NAMES + ("ip", "flags")}
    out.update({"cycles": machine.clock(), "instructions": machine.cpu.instructions,
                "stop": stop.kind})
    return out


def run(args):
    """Build the bare machine, run it, report; returns the exit status."""
    from ..machine import Machine, MachineConfig
    from ..plugins import PluginManager
    check(args)
    from . import gdb as gdbstub
    gdbstub.check_args(args)
    loads = read_loads(args.load)
    plugins = [p for p in args.plugins.split(",") if p]    # resolved: none by default
    pm = PluginManager()
    pm.select(plugins)
    # --gdb --rpc-port: the JSON-RPC server beside the gdb stub, on its controller
    serve_rpc = bool(getattr(args, "rpc_port_given", False)) and not getattr(args, "no_rpc", False)
    if serve_rpc:
        if getattr(args, "rpc_methods", None) is not None:
            pm.disable_rpc_methods(args.rpc_methods)
        pm.register_rpc_methods()
    speed = speed_from_args(args)
    cfg = MachineConfig(plugins=plugins, bare=True, loads=loads, entry=args.entry,
                        speed=speed, plugin_manager=pm, options=args,
                        cpu=getattr(args, "cpu", "interpret"),
                        debug_port=getattr(args, "debug_port", None),
                        symbols=list(getattr(args, "symbols", None) or []))
    # under gdb (--gdb) the run goes on until gdb's kill or Ctrl-C, unless --timeout
    timeout = args.timeout if args.timeout else (
        None if getattr(args, "gdb", None) is not None else DEFAULT_TIMEOUT_S)
    with Machine(cfg) as m:
        m.raise_device_faults = True    # a card's handler failing: one line, exit 2
        if cfg.debug_port is not None:
            from .run import echo_guest_lines
            echo_guest_lines(m, sys.stderr)
        end = None if timeout is None else m.clock() + int(timeout * CPU_HZ)
        stop = None
        rpc = None
        if serve_rpc:
            from ..rpc.routed import RoutedServer
            from ..rpc.server import HOST
            rpc = RoutedServer(m, args.rpc_port)
            if args.rpc_port == 0:
                sys.stderr.write(f"pypc: JSON-RPC on {HOST}:{rpc.port}\n")
                sys.stderr.flush()
        # --gdb: the loop below runs through its controller (the RPC's, if any)
        gdb = gdbstub.start(m, args, rpc.controller if rpc is not None else None)
        try:
            while end is None or m.clock() < end:
                frame = m.clock() + CPU_HZ // 60
                stop = m.run_until_cycle(frame if end is None else min(end, frame))
                if stop.kind in ("halt", "fault"):
                    break
        except KeyboardInterrupt:
            sys.stderr.write("pypc: interrupted\n")
            return 130
        finally:
            if gdb is not None:
                gdb.close()
            if rpc is not None:
                rpc.close()
        if stop is None:
            stop = m.record_stop("budget")
        if stop.kind == "fault":
            sys.stderr.write(f"pypc: {stop.detail['message']}\n")
        for seg, off, n, path in args.dump_memory:
            with open(path, "wb") as fh:
                fh.write(bytes(m.memory.read((seg << 4) + off, n)))
        if args.dump_registers:
            sys.stdout.write(json.dumps(register_dump(m, stop)) + "\n")
            sys.stdout.flush()
    if args.until_halt:
        return 0 if stop.kind == "halt" else 1
    return 1 if stop.kind == "fault" else 0
