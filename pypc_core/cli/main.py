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
prints the traceback before that line; the status stays 2,
:mod:`pypc_core.cli.errors`); ``pypc run`` parses its options with
:func:`pypc_core.cli.options.parse_run` (``args.plugin_manager``: the
plugins selected and registered) and hands them to
:func:`pypc_core.cli.run.run` (``--bare``: :func:`pypc_core.cli.bare.run`).
"""

import argparse
import os
import re
import sys

from ..errors import PypcError
from .errors import is_user_error, one_line
from .options import add_run_arguments, parse_run

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
        from ..version import __version__
        return __version__



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
    from ..batch.cli import add_parser as add_batch_parser
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
        from ..client.transport import read_token_file
        try:
            token = read_token_file(args.token_file)
        except (OSError, ValueError) as exc:
            raise PypcError(f"--token-file {args.token_file}: "
                            f"{getattr(exc, 'strerror', None) or exc}") from None
    return args.socket, token


def _rpc_port(text):
    from ..argtypes import tcp_port
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
        from ..spawn import viewer_args
        servers = viewer_args(rest)
        if not any(a.split("=", 1)[0] == "--rpc-port" for a in rest):
            servers.append("--no-rpc")
        return ["run", "--headless", "--turbo", "--screenshot", argv[1]] + servers + rest
    if first in SUBCOMMANDS or first in ("-h", "--help", "--version"):
        return argv
    return ["run"] + argv



# -- subcommands -----------------------------------------------------------------

def cmd_gen(args):
    from .. import codegen
    if args.what == "all" and args.out:
        raise PypcError("pypc gen all writes the source tree's files; --out goes with "
                        "'client' or 'docs'")
    if args.what in ("client", "all"):
        paths = codegen.write_client(args.out)
        print(f"pypc gen: client package in {paths[0].parent}")
    if args.what in ("docs", "all"):
        print(f"pypc gen: reference page {codegen.write_docs(args.out)}")
    return 0


def cmd_run(argv, run_parser):
    """``pypc run``: :func:`~pypc_core.cli.options.parse_run`, then the run
    (:mod:`.run`, or :mod:`.bare` for ``--bare``)."""
    args = parse_run(argv, run_parser)
    if args.bare:
        from . import bare
        return bare.run(args)
    from . import run
    result = run.run(args)
    return result if isinstance(result, int) else 0


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
            from ..batch.cli import main as batch_main
            return batch_main(args)
        if args.command == "mcp":
            from .. import mcp_adapter
            socket_path, token = _attach(args)
            return mcp_adapter.main(args.connect, _run_options(args),
                                    socket_path=socket_path, token=token)
        if args.command == "console":
            from ..console import app
            socket_path, token = _attach(args)
            return app.run(args.connect, _run_options(args), socket_path=socket_path,
                           token=token)
        from .plugin_list import cmd_plugins
        return cmd_plugins(args)
    except KeyboardInterrupt:
        sys.stderr.write("pypc: interrupted\n")
        return 130
    except Exception as exc:
        if not is_user_error(exc):
            raise
        if os.environ.get("PYPC_DEBUG"):
            import traceback
            traceback.print_exc()           # the traceback, and still exit 2
        sys.stderr.write(f"pypc: error: {one_line(exc)}\n")
        return EXIT_USAGE

