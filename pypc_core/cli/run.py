"""``pypc run``: build a machine from the parsed options and run it -- live
in the terminal (:mod:`.live`), headless (:mod:`.headless`), a built-in
DOS program (:mod:`.dos`), the agent server (:mod:`.rpc`) or a replay
(:mod:`.snapshot`).  :func:`check_args` and :func:`check_machine` are the
checks every run (and every ``pypc batch`` job) makes; :func:`config_from_args`
turns the options into a :class:`~pypc_core.machine.MachineConfig`."""

import os
import sys

from ..errors import PypcError
from ..machine import Machine, MachineConfig
from .. import scancodes
from . import dos as dos_launch
from . import rpc as rpc_launch
from . import snapshot as snapshot_cli
from . import viewers as viewer_options
from .compile_notice import compile_core
from .headless import run_headless, run_headless_served
from .live import run_live
from .typist import unescape
from ..argtypes import speed_from_args


def config_from_args(args):
    speed = speed_from_args(args)
    return MachineConfig(
        plugins=[p for p in args.plugins.split(",") if p],
        floppy_a=args.floppy, floppy_b=args.floppy_b, hdd=args.hdd,
        hdd_geometry=args.hdd_geometry, readonly=args.readonly,
        host_dir=getattr(args, "host_dir", None),
        cow=args.cow or bool(args.cow_dir), cow_dir=args.cow_dir,
        bios=args.bios, option_roms=list(args.option_rom or []), speed=speed,
        cpu=getattr(args, "cpu", "interpret"),
        plugin_manager=getattr(args, "plugin_manager", None), options=args,
        dos=getattr(args, "dos_config", None), debug_port=getattr(args, "debug_port", None),
        symbols=list(getattr(args, "symbols", None) or []))



def check_args(args):
    """Bad input that needs no machine: a clear PypcError before anything
    (disk, lock, ROM) is opened."""
    if args.type is not None:
        try:
            scancodes.text_to_scancodes(unescape(args.type))
        except ValueError as exc:
            raise PypcError(f"--type: {exc}") from None
    if args.hdd_geometry is not None and not args.hdd:
        raise PypcError("--hdd-geometry needs a hard-disk image (--hdd IMAGE)")
    if args.screenshot:
        folder = os.path.dirname(os.path.abspath(args.screenshot))
        if os.path.isdir(args.screenshot):
            raise PypcError(f"--screenshot {args.screenshot!r} is a directory, not a PNG file")
        if not args.screenshot.lower().endswith(".png"):
            raise PypcError(f"--screenshot {args.screenshot!r}: a screenshot is a PNG file; "
                            f"give a name ending in .png")
        if not os.path.isdir(folder):
            raise PypcError(f"--screenshot {args.screenshot!r}: no such directory {folder!r}")
    if not args.headless and not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise PypcError("the live display needs a terminal (stdin and stdout); "
                        "use --headless for scripts")


def check_machine(machine, args):
    """Bad input that shows only once the machine is built (before it runs)."""
    if machine.video is None:
        for option, value in (("--screenshot", args.screenshot),
                              ("--until-text", args.until_text)):
            if value:
                raise PypcError(f"{option} needs a video plugin (e.g. --plugins cga)")
        if getattr(machine, "dos", None) is None:
            if not args.headless:
                raise PypcError(f"--plugins {args.plugins!r} selects no video plugin, so "
                                f"there is no display to show: use --headless, or add "
                                f"one (e.g. --plugins cga)")
            sys.stderr.write(f"pypc: note: --plugins {args.plugins!r} selects no video "
                             f"plugin: no display, no screen to print\n")


def echo_guest_lines(machine, stream):
    """Print each line of the guest debug console (``--debug-port``) on
    ``stream`` as it arrives: ``pypc: guest: TEXT``."""
    def echo(record):
        if record["source"] == "guest":
            stream.write(f"pypc: guest: {record['message']}\n")
            stream.flush()
    machine.diagnostics.subscribe(echo)


def run(args):
    check_args(args)
    rpc_launch.check_serve(args)        # --serve
    viewer_options.check_args(args)     # --telnet-port, --vnc-port, --listen, --audio
    from . import gdb as gdbstub
    gdbstub.check_args(args)            # --gdb
    snapshot_cli.check(args)            # --load/--save-snapshot, --record, --replay
    try:
        dos_launch.prepare(args)        # PROGRAM / --drive: the built-in DOS
        compile_core(sys.stderr)
        machine = Machine(config_from_args(args))
    except BaseException:
        snapshot_cli.discard_written(args)  # a --load-snapshot's disks, never installed
        raise
    # a card's port handler that raises ends a run with one line naming the
    # card and the guest's CS:IP (exit 2); an agent server (--serve) goes on
    # serving, its client sees the fault stop
    machine.raise_device_faults = not getattr(args, "serve", False)
    viewers = rpc = gdb = None
    try:
        check_machine(machine, args)
        for record in machine.diagnostics.records():     # what the machine noted when built
            if record["source"] == "machine" and record["level"] in ("warning", "error"):
                sys.stderr.write(f"pypc: note: {record['message']}\n")
        if args.headless and getattr(args, "debug_port", None) is not None:
            echo_guest_lines(machine, sys.stderr)
        viewers = viewer_options.start(machine, args)    # served after every run (run_hooks)
        if getattr(args, "serve", False):
            return rpc_launch.serve(machine, args, viewers=viewers)  # it owns the loop
        rpc = rpc_launch.start(machine, args)       # JSON-RPC (unless --no-rpc)
        gdb = gdbstub.start(machine, args, rpc.controller if rpc is not None else None)
        snapshot_cli.before_run(machine, args)
        if getattr(args, "replay", None):
            return snapshot_cli.run_replay(machine, args)
        if args.headless:
            if machine.dos is not None:
                return dos_launch.run_headless(machine, args)
            if rpc is not None:
                return run_headless_served(machine, args, rpc, viewers)
            return run_headless(machine, args)
        result = run_live(machine, args, rpc)
        if machine.dos is not None:
            dos_launch.print_console(machine)
            if machine.dos.exited and result == 0:
                return machine.dos.exit_code
        return result
    finally:
        try:
            if sys.exc_info()[0] is None:
                snapshot_cli.after_run(machine, args)     # --record, --save-snapshot
        finally:
            if viewers is not None:
                viewers.close()
            if gdb is not None:
                gdb.close()
            if rpc is not None:
                rpc.close()
            machine.close()
            snapshot_cli.discard_written(args)  # (only when the bundle was not installed)
            failed = getattr(viewers, "recording_error", None)
            if failed and sys.exc_info()[0] is None:
                raise PypcError(failed)         # --video-out failed while running
