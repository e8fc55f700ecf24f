"""The options of ``pypc run`` (:func:`add_run_arguments`; each part of the
command line adds its own group: :mod:`.dos`, :mod:`.bare`, :mod:`.rpc`,
:mod:`.viewers`, :mod:`.gdb`, :mod:`.snapshot`) and :func:`parse_run`, which
selects the plugins first so their options exist.  ``pypc batch`` builds
every job with these too."""

import argparse

from ..argtypes import positive_float
from ..errors import PypcError


def _option_rom(text):
    """``FILE@SEGMENT`` (segment in hex, e.g. ``xtide.bin@C800``)."""
    path, sep, seg = text.rpartition("@")
    if not sep or not path or not seg:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not FILE@SEGMENT (e.g. xtide.bin@C800)")
    try:
        segment = int(seg.removesuffix("h").removesuffix("H"), 16)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: segment {seg!r} is not a hexadecimal number") from None
    if not 0 <= segment <= 0xFFFF:
        raise argparse.ArgumentTypeError(f"{text!r}: segment {seg!r} is out of range")
    return path, segment


def _debug_port(text):
    """An I/O port: ``0xE9``, ``E9h`` or decimal ``233``."""
    t = text.strip()
    try:
        value = int(t[:-1], 16) if t[-1:] in "hH" and t[:-1] else int(t, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a port number (0xE9, E9h or decimal)") from None
    if not 0 <= value <= 0xFFFF:
        raise argparse.ArgumentTypeError(f"port {text!r} is outside 0000h-FFFFh")
    return value


def _geometry(text):
    """``C,H,S`` (cylinders, heads, sectors per track), each within the
    INT 13h limits (checked here, so a bad value fails even without --hdd)."""
    from ..storage.image import parse_geometry
    try:
        c, h, s = (int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not C,H,S (e.g. 615,4,17)") from None
    try:
        return parse_geometry(f"{c},{h},{s}")
    except PypcError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _symbols_spec(text):
    from ..symbols import SymbolError, parse_spec
    try:
        return parse_spec(text)
    except SymbolError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_run_arguments(parser):
    """The options of ``pypc run`` (plugin options are added later)."""
    parser.add_argument(
        "--plugins", metavar="A,B",
        help="device plugins to plug in, comma-separated: exactly these (cga,vga), or "
             "changes to the defaults, each signed: +NAME adds one, -NAME leaves one "
             "out (+postcard,-uart2).  Default: cga,fdc,uart (with --bare: none). "
             "'pypc plugins' lists them")
    parser.add_argument(
        "--rpc-methods", metavar="A,B",
        help="JSON-RPC method groups to serve: all installed ones unless changed here, "
             "-NAME turning one off (-video_history,-dos_trace) or a plain list keeping "
             "only those; 'pypc plugins' lists them")
    parser.add_argument(
        "--video", metavar="CARD",
        help="the display card (e.g. cga, vga): replaces the video card of --plugins")
    parser.add_argument(
        "--game-port", action="store_true",
        help="add the game port (two analog sticks at 201h): --plugins ...,gameport")
    parser.add_argument(
        "--debug-port", nargs="?", const=0xE9, type=_debug_port, metavar="PORT",
        help="a guest debug console on PORT (default E9h, the Bochs/QEMU convention): "
             "bytes written there become lines in the diagnostics ring (debug.output.read; "
             "a headless run also prints them on stderr); a read returns E9h.  PORT is "
             "0xE9, E9h or decimal")
    parser.add_argument(
        "--symbols", type=_symbols_spec, action="append", default=[], metavar="FILE[@SEG]",
        help="names for addresses from a link map (MS/IBM LINK /MAP, Borland TLINK, "
             "Watcom WLINK, bin86 ld86 -M) or a plain NAME SEG:OFF list; repeatable.  A "
             "link map is relocated to the load segment of the built-in DOS's PROGRAM "
             "(else taken as absolute), a plain list is absolute; @SEG (hex) relocates "
             "by SEG instead, @0 takes it as absolute (docs/debugging.md)")
    g = parser.add_argument_group("speed and display")
    g.add_argument("--headless", action="store_true",
                   help="no live view: run until --until-text appears or --timeout "
                        "passes (default: 60 emulated seconds), then print the text screen. "
                        "A headless run is a job: it listens on no port unless --rpc-port, "
                        "--telnet-port or --vnc-port names one (--serve: an agent server "
                        "on the default ports).  With a JSON-RPC server and no --timeout it "
                        "goes on while a client is connected, and session.start works")
    g.add_argument("--turbo", action="store_true",
                   help="run as fast as possible (no real-time pacing)")
    g.add_argument("--speed", type=positive_float, metavar="X",
                   help="run at X times the speed of a real 4.77 MHz XT")
    g.add_argument("--cpu", choices=("interpret", "translate"), default="interpret",
                   help="how the 8088 executes: the interpreter alone (default), or with "
                        "the block translator compiling hot code to native code (the "
                        "same machine, faster on loops: docs/translator.md)")
    g = parser.add_argument_group("disks and firmware")
    g.add_argument("--floppy", metavar="IMAGE", help="floppy image for drive A:")
    g.add_argument("--floppy-b", metavar="IMAGE", help="floppy image for drive B:")
    g.add_argument("--hdd", metavar="IMAGE", help="hard-disk image (drive C:)")
    g.add_argument("--host-dir", metavar="DIR",
                   help="a host directory as a FAT disk built on the fly (a 1.44M floppy in "
                        "the first free drive of A:/B:, or a FAT16 hard disk C: when bigger); "
                        "guest changes are written back when pypc ends (not with --cow/--readonly)")
    g.add_argument("--hdd-geometry", type=_geometry, metavar="C,H,S",
                   help="hard-disk geometry (default: from the image's MBR partition "
                        "table, else from the BPB of its FAT boot sector, else guessed "
                        "from its size)")
    mode = g.add_mutually_exclusive_group()
    mode.add_argument("--readonly", action="store_true",
                      help="never write to the disk images")
    mode.add_argument("--cow", action="store_true",
                      help="copy-on-write: writes go to memory, images stay unchanged")
    mode.add_argument("--cow-dir", metavar="DIR",
                      help="copy-on-write into side files DIR/IMAGE.cow that later runs "
                           "with the same --cow-dir see again; images stay unchanged")
    g.add_argument("--bios", metavar="FILE",
                   help="run this XT BIOS ROM instead of the built-in BIOS")
    g.add_argument("--option-rom", type=_option_rom, action="append", default=[],
                   metavar="FILE@SEGMENT",
                   help="map an option ROM at a segment (hex); repeatable")
    g = parser.add_argument_group("scripting")
    g.add_argument("--type", metavar="TEXT",
                   help="type TEXT on the keyboard, line by line, each line once the "
                        "guest waits for keys (in the BIOS keyboard wait; with its own "
                        "keyboard driver or another BIOS, once the screen has been still "
                        r"for an emulated second); \r or \n is Enter")
    g.add_argument("--type-after", metavar="TEXT",
                   help="start typing --type only once TEXT is on the screen "
                        "(e.g. the DOS prompt, so keys typed while DOS boots are not lost)")
    g.add_argument("--until-text", metavar="TEXT",
                   help="stop (exit 0) as soon as TEXT appears on the screen")
    g.add_argument("--timeout", type=positive_float, metavar="SECONDS",
                   help="stop after SECONDS of emulated time (headless default: 60; a "
                        "--replay stops there too, exit 1); the exit status is 0, or 1 "
                        "when --until-text was given and its text did not appear")
    g.add_argument("--screenshot", metavar="PNG",
                   help="save a screenshot to PNG when the run stops")
    from .dos import add_arguments as add_dos_arguments
    add_dos_arguments(parser)
    from .bare import add_arguments as add_bare_arguments
    add_bare_arguments(parser)
    from .rpc import add_arguments as add_rpc_arguments
    add_rpc_arguments(parser)
    from .viewers import add_arguments as add_viewer_arguments
    add_viewer_arguments(parser)
    from .gdb import add_arguments as add_gdb_arguments
    add_gdb_arguments(parser)
    from .snapshot import add_arguments as add_snapshot_arguments
    add_snapshot_arguments(parser)
    return parser



def parse_run(argv, run_parser):
    """The options of ``pypc run`` (``argv`` starts with ``"run"``) as
    ``pypc run`` sees them: the plugins named by ``--plugins`` selected first,
    their options added, then the whole command line parsed
    (``args.plugin_manager`` is the ready PluginManager) and the bare-run
    checks done.  ``pypc batch`` builds every job with this too."""
    from ..plugins import PluginManager
    # First pass: check the core options (plugin options are still unknown).
    first = add_run_arguments(type(run_parser)(prog=run_parser.prog, add_help=False))
    known, _ = first.parse_known_args(argv[1:])
    pm = PluginManager()
    plugins = launch_plugins(pm, known.plugins, known.video, known.game_port,
                             bare=known.bare)
    pm.select(plugins)
    if known.rpc_methods is not None:
        pm.disable_rpc_methods(known.rpc_methods)
    # method groups are imported only for a run that serves them: a broken
    # one cannot stop a --no-rpc or --bare run, nor a job without an RPC
    # endpoint (pypc_core.cli.rpc.serves_rpc); a bare run serves JSON-RPC
    # only beside --gdb, with --rpc-port
    from .rpc import serves_rpc
    serving = serves_rpc(known) or (known.bare and not known.no_rpc and known.gdb is not None
                                    and known.rpc_port is not None)
    if serving:
        pm.register_rpc_methods()
    pm.add_cli_options(run_parser.add_argument_group("plugin options"))
    args = run_parser.parse_args(argv[1:])
    args.command = "run"
    args.plugins = plugins
    args.plugin_manager = pm
    given = {a.split("=", 1)[0] for a in argv[1:] if a.startswith("--")}
    args.plugins_given = "--plugins" in given
    args.rpc_port_given = "--rpc-port" in given
    if serving:
        check_rpc_methods(pm)
    from . import bare
    bare.check(args)
    return args



def check_rpc_methods(pm):
    """Before a machine is built: every RPC method group's
    ``pypc_rpc_methods`` runs and every method has a valid schema, so a
    broken group is one line naming it (and how to turn it off)."""
    from ..rpc.schemas import SchemaError, check_methods
    methods = pm.rpc_methods()
    owners = {m: k.rpartition(":")[2] for m, k in pm.rpc_method_owners.items()}
    try:
        check_methods(methods, owners=owners)
    except SchemaError as exc:
        groups = sorted({owners[m] for m in exc.methods if m in owners})
        hint = f" (turn the group off with --rpc-methods -{groups[0]})" if groups else ""
        raise SchemaError(f"{exc}{hint}") from exc


def launch_plugins(pm, plugins, video=None, game_port=False, bare=False):
    """The device plugins a launch loads: ``--plugins`` (a list, or signed
    changes to the defaults, :func:`pypc_core.plugins.resolve_names`; the
    defaults are ``cga,fdc,uart``, none with ``bare``), its video card(s)
    replaced by ``--video``, ``gameport`` added by ``--game-port``.  Which
    plugins are video cards is read from their declarations."""
    from ..device import CAP_VIDEO
    from ..plugins import DEFAULT_DEVICES, resolve_names
    defaults = () if bare else DEFAULT_DEVICES
    names = list(defaults) if plugins is None else resolve_names(
        plugins, defaults, available=pm.available())
    if video:
        names = [n for n in names if not pm.declares(n, CAP_VIDEO)]
        names.insert(0, video)
    if game_port and "gameport" not in names:
        names.append("gameport")
    return ",".join(names)
