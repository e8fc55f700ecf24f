"""The ``pypc`` command.

* ``pypc --version``
* ``pypc plugins [--json]``   -- discovered plugins, what they claim, their hooks
* ``pypc run [options] [PROGRAM]`` -- build and run a machine (the default
  subcommand: ``pypc --plugins vga`` means ``pypc run --plugins vga``)
* ``pypc screenshot PNG [run options]`` -- boot headless, write the screen to PNG
* ``pypc gen client|docs|all [--out PATH]`` -- the typed RPC client and its
  reference page from ``schemas/`` (``pypc_core/codegen.py``)
* ``pypc mcp [--connect PORT] [-- RUN OPTIONS]`` -- the RPC methods as MCP tools
  over stdio (``pypc_core/mcp_adapter.py``)
* ``pypc console [--port PORT] [-- RUN OPTIONS]`` -- the TUI debugger over RPC
  (``pypc_core/console/``)
* ``pypc batch JOBS.jsonl --out RESULTS.jsonl`` -- many headless runs on a
  pool of worker processes or on Ray (``pypc_core/batch/``)

User errors print one line on stderr and exit with status 2 (``PYPC_DEBUG=1``
prints the traceback before that line; the status stays 2); ``pypc run``
hands its parsed options, with ``args.plugin_manager`` (plugins selected and
registered), to ``pypc_core.launcher.run(args)``.
"""

import argparse
import importlib
import json
import os
import re
import sys

from .argtypes import positive_float
from .errors import PypcError

SUBCOMMANDS = ("run", "plugins", "gen", "mcp", "console", "batch")
EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (plus a hint) and exit 2.
    Options are never abbreviated: after ``pypc run PROGRAM`` every word,
    ``--b`` too, is the program's."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message):
        # "pypc: error:" for every user error, whichever subparser found it
        sys.stderr.write(f"pypc: error: {message} (see '{self.prog} --help')\n")
        sys.exit(EXIT_USAGE)


def version():
    try:
        import importlib.metadata
        return importlib.metadata.version("pypc")
    except Exception:       # running from a source tree that is not installed
        from . import __version__
        return __version__


# -- argument parsers ----------------------------------------------------------

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


_PORT_WORD = re.compile(r"^([0-9].*|[0-9A-Fa-f]+[hH])$")


_SIGNED_WORD = re.compile(r"^[+-][A-Za-z0-9_]")


def _signed_values(argv):
    """``--plugins -uart2`` means ``--plugins=-uart2``: argparse would take
    a value starting with '-' for an option.  (``--plugins --headless``
    stays a missing value.)"""
    out = list(argv)
    for i, arg in enumerate(out[:-1]):
        if arg == "--":
            break
        if arg in ("--plugins", "--rpc-methods") and _SIGNED_WORD.match(out[i + 1]):
            out[i:i + 2] = [f"{arg}={out[i + 1]}", None]
    return [a for a in out if a is not None]


def _debug_port_default(argv):
    """``--debug-port`` takes an optional PORT: followed by a word that is
    no number (a PROGRAM, an option) it is ``--debug-port=0xE9``, so
    ``pypc run --debug-port TOOL.COM`` runs TOOL.COM (a word starting with a
    digit, or hex digits ending in h, is the port)."""
    out = list(argv)
    for i, arg in enumerate(out):
        if arg == "--":
            break
        if arg == "--debug-port" and (i + 1 == len(out) or not _PORT_WORD.match(out[i + 1])):
            out[i] = "--debug-port=0xE9"
    return out


def _geometry(text):
    """``C,H,S`` (cylinders, heads, sectors per track), each within the
    INT 13h limits (checked here, so a bad value fails even without --hdd)."""
    from .storage.image import parse_geometry
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
    from .symbols import SymbolError, parse_spec
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
    from .dos.launch import add_arguments as add_dos_arguments
    add_dos_arguments(parser)
    from .bare import add_arguments as add_bare_arguments
    add_bare_arguments(parser)
    from .rpc.launch import add_arguments as add_rpc_arguments
    add_rpc_arguments(parser)
    from .frontends import add_arguments as add_viewer_arguments
    add_viewer_arguments(parser)
    from .frontends.gdbstub import add_arguments as add_gdb_arguments
    add_gdb_arguments(parser)
    from .snapshot.cli import add_arguments as add_snapshot_arguments
    add_snapshot_arguments(parser)
    return parser


LIVE_KEYS_HELP = (
    "Live view (without --headless): the guest's screen on the terminal's alternate "
    "screen, with a status line; every key goes to the guest, Ctrl-C, Ctrl-Z and "
    "Ctrl-\\ included.  Commands start with Ctrl-]: Ctrl-] q quits, Ctrl-] b sends "
    "Ctrl-Break, Ctrl-] d sends Ctrl-Alt-Del, Ctrl-] ] sends Ctrl-] itself.  A signal "
    "(kill -INT) ends any run with exit status 128 + its number (130).")


SCREENSHOT_HELP = ("Boot headless and unpaced (3 emulated seconds unless --timeout or "
                   "--until-text), print the text screen and write the screen to PNG. "
                   "Every option of 'pypc run' applies; it serves no JSON-RPC and no "
                   "viewer unless their ports are given.")


def build_parser():
    parser = _Parser(
        prog="pypc",
        description="An IBM PC/XT (8088) emulator. Without a subcommand, 'run' is assumed.",
        epilog="pypc screenshot PNG [run options]: " + SCREENSHOT_HELP)
    parser.add_argument("--version", action="version", version=f"pypc {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    run = sub.add_parser("run", help="build and run a machine (default)",
                         description="Build an XT with the selected device plugins and run it. "
                                     "The live view and the agent server (--headless "
                                     "--serve) listen on the contract's ports (JSON-RPC "
                                     "2301, telnet 2300, VNC 5902) unless told otherwise; "
                                     "every other run is a job (--headless, a PROGRAM, "
                                     "--bare, screenshot) that listens only on the ports "
                                     "its options name.",
                         epilog=LIVE_KEYS_HELP)
    add_run_arguments(run)
    shot = sub.add_parser("screenshot", help="boot headless and unpaced, write the screen to a PNG",
                          usage="pypc screenshot PNG [run options]",
                          description=SCREENSHOT_HELP)
    shot.add_argument("png", metavar="PNG", help="the PNG file to write (a name ending in .png)")
    plugins = sub.add_parser("plugins", help="list discovered plugins",
                             description="List the plugins found through entry points "
                                         "(groups pypc.devices and pypc.rpc_methods): "
                                         "what each card really claims on a scratch board "
                                         "(or why it could not be attached), its hooks, "
                                         "a method group's methods.  With NAME: that "
                                         "plugin alone, with its cards' state after "
                                         "reset().")
    plugins.add_argument("name", nargs="?", metavar="NAME",
                         help="show only this plugin, and its cards' power-on state")
    plugins.add_argument("--json", action="store_true", help="print JSON instead of a table")
    gen = sub.add_parser("gen", help="generate the typed RPC client or its reference page",
                         description="Generate from schemas/ (the OpenRPC document): 'client' "
                                     "the Python package pypc_core/client, 'docs' "
                                     "docs/rpc-reference.md, 'all' both in the source tree "
                                     "(run it after changing schemas/).")
    gen.add_argument("what", choices=("client", "docs", "all"))
    gen.add_argument("--out", metavar="PATH",
                     help="client: the package folder to write; docs: the file "
                          "(default: the source tree's own)")
    mcp = sub.add_parser("mcp", help="serve the RPC methods as MCP tools over stdio",
                         usage="pypc mcp [--connect PORT | --socket PATH] [--token-file FILE] "
                               "[-- RUN OPTIONS]",
                         description="Serve the Model Context Protocol on stdin/stdout: one "
                                     "tool per JSON-RPC method (schemas from schemas/), each "
                                     "forwarded to a running pypc (--connect PORT) or to a "
                                     "headless 'pypc run' started with RUN OPTIONS.")
    mcp.add_argument("--connect", type=_rpc_port, metavar="PORT",
                     help="the JSON-RPC port of a running pypc on 127.0.0.1")
    _add_attach_options(mcp)
    mcp.add_argument("run_options", nargs=argparse.REMAINDER,
                     help="after --: options for the pypc run it starts (without --connect)")
    console = sub.add_parser("console", help="TUI debugger attached to a pypc over JSON-RPC",
                             usage="pypc console [--port PORT | --socket PATH] "
                                   "[--token-file FILE] [-- RUN OPTIONS]",
                             description="A full-screen debugger (docs/console.md) on a "
                                         "running pypc's JSON-RPC port, or on a headless "
                                         "'pypc run' it starts with RUN OPTIONS.")
    console.add_argument("--port", dest="connect", type=_rpc_port, metavar="PORT",
                         help="the JSON-RPC port of a running pypc on 127.0.0.1")
    _add_attach_options(console)
    console.add_argument("run_options", nargs=argparse.REMAINDER,
                         help="after --: options for the pypc run it starts (without --port)")
    from .batch.cli import add_parser as add_batch_parser
    add_batch_parser(sub)
    return parser, run


def _add_attach_options(parser):
    parser.add_argument("--socket", metavar="PATH",
                        help="the --rpc-socket (Unix domain socket) of a running pypc")
    parser.add_argument("--token-file", metavar="FILE",
                        help="the running pypc's --rpc-token-file: its token is sent in a "
                             "first auth request")


def _attach(args):
    """(socket path, token) of ``pypc mcp/console`` attaching to a running
    pypc; one-line errors for options that contradict each other."""
    option = "--connect" if args.command == "mcp" else "--port"
    if args.socket is not None and args.connect is not None:
        raise PypcError(f"pypc {args.command}: {option} and --socket: attach to one "
                        f"server, a TCP port or a Unix socket")
    token = None
    if args.token_file is not None:
        if args.socket is None and args.connect is None:
            raise PypcError(f"pypc {args.command}: --token-file goes with attaching to a "
                            f"running pypc ({option} or --socket)")
        from .client.transport import read_token_file
        try:
            token = read_token_file(args.token_file)
        except (OSError, ValueError) as exc:
            raise PypcError(f"--token-file {args.token_file}: "
                            f"{getattr(exc, 'strerror', None) or exc}") from None
    return args.socket, token


def _rpc_port(text):
    from .argtypes import tcp_port
    return tcp_port(text)


def _run_options(args):
    rest = list(args.run_options or [])
    if rest and rest[0] == "--":
        rest = rest[1:]
    if rest and (args.connect is not None or getattr(args, "socket", None) is not None):
        option = "--connect" if args.command == "mcp" else "--port"
        if args.connect is None:
            option = "--socket"
        raise PypcError(f"pypc {args.command}: run options ({' '.join(rest)}) go with "
                        f"starting a pypc, not with {option}")
    return rest


def _normalise_argv(argv):
    """Insert the default subcommand ``run`` unless one is given.
    ``pypc screenshot PNG [run options]`` is ``pypc run --headless
    --screenshot PNG`` (3 emulated seconds unless --timeout/--until-text),
    a one-shot job that serves nothing: ``--no-rpc`` unless --rpc-port is
    given, no viewer whose port is not given."""
    if not argv:
        return ["run"]
    argv = _signed_values(_debug_port_default(argv))
    first = argv[0]
    if first == "screenshot":
        if len(argv) >= 2 and argv[1] in ("-h", "--help"):
            return argv                     # the screenshot subparser prints its help
        if len(argv) < 2 or argv[1].startswith("-"):
            raise PypcError("usage: pypc screenshot PNG [run options]")
        rest = argv[2:]
        if not any(a.startswith(("--timeout", "--until-text")) for a in rest):
            rest = rest + ["--timeout", "3"]
        from .spawn import viewer_args
        servers = viewer_args(rest)
        if not any(a.split("=", 1)[0] == "--rpc-port" for a in rest):
            servers.append("--no-rpc")
        return ["run", "--headless", "--turbo", "--screenshot", argv[1]] + servers + rest
    if first in SUBCOMMANDS or first in ("-h", "--help", "--version"):
        return argv
    return ["run"] + argv


# -- subcommands -----------------------------------------------------------------

def cmd_plugins(args):
    from .plugins import DEVICE_GROUP, RPC_GROUP, PluginManager, UnknownPluginError
    pm = PluginManager()
    name = getattr(args, "name", None)
    if name is not None:
        if name not in pm.available(DEVICE_GROUP) and name not in pm.available(RPC_GROUP):
            every = sorted(set(pm.available(DEVICE_GROUP)) | set(pm.available(RPC_GROUP)))
            import difflib
            close = difflib.get_close_matches(name, every, n=1)
            raise UnknownPluginError(
                f"no plugin {name!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
                + f"; installed: {', '.join(every)}")
        infos = pm.describe(names=[name], states=True)
    else:
        infos = pm.describe()
    if args.json:
        out = [dict(i.as_dict(), **(i.state_dict() if name else {})) for i in infos]
        print(json.dumps(out, indent=2))
    elif name is not None:
        _print_plugin_detail(infos)
    else:
        _print_plugin_table(infos)
    failed = [i for i in infos if i.error]
    for info in failed:
        sys.stderr.write(f"pypc plugins: {info.group}:{info.name}: {info.error}\n")
    return 1 if failed else 0


def cmd_gen(args):
    from . import codegen
    if args.what == "all" and args.out:
        raise PypcError("pypc gen all writes the source tree's files; --out goes with "
                        "'client' or 'docs'")
    if args.what in ("client", "all"):
        paths = codegen.write_client(args.out)
        print(f"pypc gen: client package in {paths[0].parent}")
    if args.what in ("docs", "all"):
        print(f"pypc gen: reference page {codegen.write_docs(args.out)}")
    return 0


def _claim_lines(info):
    """What a card claimed on its scratch board (else what it declares),
    one claim a line, with spaces after commas so a narrow column wraps
    between port ranges."""
    parts = info.attached or [d.describe() or "-" for d in info.declarations]
    return [p.replace(",", ", ") for a in parts for p in a.split("; ")]


def _print_plugin_table(infos):
    """Two tables (device plugins, RPC method groups) that fit 80 columns:
    a device's claims, or in red why it failed to load or attach."""
    from rich import box
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table
    from .plugins import DEVICE_GROUP

    console = Console()
    if not infos:
        console.print("no plugins found (entry-point groups pypc.devices, pypc.rpc_methods)")
        return
    for group, title, third in ((DEVICE_GROUP, "device plugins (pypc.devices)", "claims"),
                                (None, "RPC method groups (pypc.rpc_methods)", "methods")):
        rows = [i for i in infos if (i.group == DEVICE_GROUP) == (group is not None)]
        if not rows:
            continue
        table = Table(title=title, box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0),
                      pad_edge=False, title_justify="left")
        table.add_column("name", no_wrap=True)
        table.add_column("from", max_width=18)
        table.add_column(third, ratio=3, overflow="fold")
        table.add_column("hooks", ratio=2, overflow="fold")
        for info in rows:
            origin = f"{info.distribution} {info.version}"
            if group is not None:
                body = "\n".join(escape(line) for line in _claim_lines(info))
            else:
                body = ", ".join(info.methods)
            if info.attach_error and not info.error:
                body = (body + "\n" if body else "") + \
                    f"[red]attach failed: {escape(info.attach_error)}[/red]"
            if info.error:
                body = f"[red]error: {escape(info.error)}[/red]"
            hooks = ", ".join(h.removeprefix("pypc_") for h in info.hooks)
            table.add_row(escape(info.name), escape(origin), body or "-", hooks or "-")
        console.print(table)


def _short(value, limit=72):
    """A card's state for the terminal: long strings (a RAM image in
    base64) and long lists shortened, saying how long they are."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:24]}... ({len(value)} characters)"
    if isinstance(value, list) and len(value) > 16:
        return [_short(v) for v in value[:8]] + [f"... ({len(value)} items)"]
    if isinstance(value, list):
        return [_short(v) for v in value]
    if isinstance(value, dict):
        return {k: _short(v) for k, v in value.items()}
    return value


def _print_plugin_detail(infos):
    """``pypc plugins NAME``: one plugin, its claims, hooks, methods,
    errors and each card's state after ``reset()``."""
    from rich.console import Console
    from rich.markup import escape
    console = Console()
    for info in infos:
        console.print(f"[bold]{escape(info.name)}[/bold]  ({info.group}, {escape(info.module)}, "
                      f"from {escape(info.distribution)} {escape(info.version)})")
        if info.error:
            console.print(f"  [red]error: {escape(info.error)}[/red]")
        if info.declarations:
            console.print("  declares: " + escape("; ".join(
                d.describe() or "-" for d in info.declarations)))
        for line in info.attached:
            console.print(f"  claimed on a scratch board: {escape(line)}")
        if info.attach_error:
            console.print(f"  [red]attach failed: {escape(info.attach_error)}[/red]")
        if info.hooks:
            console.print("  hooks: " + ", ".join(info.hooks))
        if info.methods:
            console.print("  methods: " + ", ".join(info.methods))
        for device, state in info.states.items():
            console.print(f"  state of {escape(device)} after reset():")
            text = json.dumps(_short(state), indent=2, sort_keys=True)
            console.print("\n".join("    " + escape(line) for line in text.splitlines()),
                          soft_wrap=True)
        if info.state_error:
            console.print(f"  [red]state: {escape(info.state_error)}[/red]")


def parse_run(argv, run_parser):
    """The options of ``pypc run`` (``argv`` starts with ``"run"``) as
    ``pypc run`` sees them: the plugins named by ``--plugins`` selected first,
    their options added, then the whole command line parsed
    (``args.plugin_manager`` is the ready PluginManager) and the bare-run
    checks done.  ``pypc batch`` builds every job with this too."""
    from .plugins import PluginManager
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
    # endpoint (pypc_core.rpc.launch.serves_rpc); a bare run serves JSON-RPC
    # only beside --gdb, with --rpc-port
    from .rpc.launch import serves_rpc
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


def cmd_run(argv, run_parser):
    """``pypc run``: :func:`parse_run`, then hand over to the launcher."""
    args = parse_run(argv, run_parser)
    if args.bare:
        from . import bare
        return bare.run(args)
    try:
        launcher = importlib.import_module(f"{__package__}.launcher")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__package__}.launcher":
            raise
        raise PypcError("'pypc run' is not available yet: pypc_core.launcher "
                        "is missing from this installation") from None
    result = launcher.run(args)
    return result if isinstance(result, int) else 0


def check_rpc_methods(pm):
    """Before a machine is built: every RPC method group's
    ``pypc_rpc_methods`` runs and every method has a valid schema, so a
    broken group is one line naming it (and how to turn it off)."""
    from .rpc.schemas import SchemaError, check_methods
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
    from .device import CAP_VIDEO
    from .plugins import DEFAULT_DEVICES, resolve_names
    defaults = () if bare else DEFAULT_DEVICES
    names = list(defaults) if plugins is None else resolve_names(
        plugins, defaults, available=pm.available())
    if video:
        names = [n for n in names if not pm.declares(n, CAP_VIDEO)]
        names.insert(0, video)
    if game_port and "gameport" not in names:
        names.append("gameport")
    return ",".join(names)


def main(argv=None):
    parser, run_parser = build_parser()
    try:
        argv = _normalise_argv(list(sys.argv[1:] if argv is None else argv))
        if argv[0] == "run":
            return cmd_run(argv, run_parser)
        args = parser.parse_args(argv)      # --help / --version exit here
        if args.command == "gen":
            return cmd_gen(args)
        if args.command == "batch":
            from .batch.cli import main as batch_main
            return batch_main(args)
        if args.command == "mcp":
            from . import mcp_adapter
            socket_path, token = _attach(args)
            return mcp_adapter.main(args.connect, _run_options(args),
                                    socket_path=socket_path, token=token)
        if args.command == "console":
            from .console import app
            socket_path, token = _attach(args)
            return app.run(args.connect, _run_options(args), socket_path=socket_path,
                           token=token)
        return cmd_plugins(args)
    except KeyboardInterrupt:
        sys.stderr.write("pypc: interrupted\n")
        return 130
    except Exception as exc:
        if not _is_user_error(exc):
            raise
        if os.environ.get("PYPC_DEBUG"):
            import traceback
            traceback.print_exc()           # the traceback, and still exit 2
        sys.stderr.write(f"pypc: error: {_one_line(exc)}\n")
        return EXIT_USAGE


def _is_user_error(exc):
    from .bus.memory import MemoryMapError
    from .bus.ports import PortConflictError
    return isinstance(exc, (PypcError, PortConflictError, MemoryMapError, OSError))


def _one_line(exc):
    text = str(exc) or type(exc).__name__
    if isinstance(exc, OSError) and exc.filename and exc.strerror:
        text = f"{exc.filename}: {exc.strerror}"
    return " ".join(text.split())


if __name__ == "__main__":
    sys.exit(main())
