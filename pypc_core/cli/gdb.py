"""``pypc run --gdb [PORT]``: the gdb remote stub's option, its checks and
its start on the run's machine (the stub is :mod:`pypc_core.frontends.gdbstub`)."""

import sys

from ..frontends.gdbstub import DEFAULT_PORT, GdbRun, GdbServer, RoutedController
from ..listening import check_listen_address


def _gdb_port(text):
    from ..argtypes import tcp_port
    return tcp_port(text)


def add_arguments(parser):
    g = parser.add_argument_group("gdb remote stub (GDB Remote Serial Protocol; docs/gdb.md)")
    g.add_argument("--gdb", nargs="?", const=DEFAULT_PORT, type=_gdb_port, metavar="PORT",
                   help=f"serve gdb's remote protocol on PORT (default {DEFAULT_PORT}; 0: any "
                        "free port, printed on stderr), on 127.0.0.1 unless --listen: "
                        "'target remote :PORT' in gdb; attaching pauses the machine; "
                        "with --bare, --rpc-port PORT serves JSON-RPC beside it")
    return parser


def check_args(args):
    """--gdb's companions, before anything is built (a one-line PypcError)."""
    from ..errors import PypcError
    port = getattr(args, "gdb", None)
    if port is None:
        return
    if getattr(args, "serve", False):
        raise PypcError("--gdb does not go with --serve (an agent server's session.start "
                        "replaces the machine); attach gdb to a plain 'pypc run'")
    if getattr(args, "bare", False) and getattr(args, "until_halt", False):
        raise PypcError("--until-halt cannot go with --gdb: under gdb a halt does not end "
                        "the run (gdb's Ctrl-C stops it there)")
    check_listen_address(getattr(args, "listen", None))
    for option in ("rpc_port", "telnet_port", "vnc_port"):
        other = getattr(args, option, None)
        if port and other == port and not (option == "rpc_port" and getattr(args, "no_rpc", False)):
            raise PypcError(f"--gdb and --{option.replace('_', '-')} are both {port}; "
                            "the ports must differ")


def start(machine, args, controller=None, stream=None):
    """The stub ``args`` asks for (None without --gdb), on ``controller``
    (the JSON-RPC server's) or on a controller of its own.  A port in use
    is a one-line PypcError naming --gdb."""
    port = getattr(args, "gdb", None)
    if port is None:
        return None
    routed = None
    if controller is None:
        routed = RoutedController(machine)
        controller = routed.controller
    host = getattr(args, "listen", None) or "127.0.0.1"
    try:
        server = GdbServer(controller, host, port).start()
    except BaseException:
        if routed is not None:
            routed.close()
        raise
    stream = stream or sys.stderr
    stream.write(f"pypc: gdb remote stub on {host}:{server.port} "
                 f"(gdb: target remote {host}:{server.port})\n")
    stream.flush()
    return GdbRun(server, routed)
