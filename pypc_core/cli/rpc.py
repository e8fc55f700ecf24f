"""The JSON-RPC server's options in ``pypc run``: ``--rpc-port PORT`` (0 picks
a free port and prints it), ``--no-rpc``, ``--rpc-socket``, ``--rpc-token-file``,
``--serve``.  A server role -- the live view, the
agent server ``--serve`` (:func:`pypc_core.argtypes.server_role`) -- serves
on 2301 unless told otherwise; a job (``--headless`` without ``--serve``, a
PROGRAM, ``--bare``, ``pypc screenshot``) serves only when --rpc-port is
given.

:func:`start` builds the controller and the server for the run's machine
(:class:`pypc_core.rpc.routed.RoutedServer`), which routes the machine's
``run_until_cycle`` (and so ``run_for``) through the controller, so a
loop of the run that holds the machine (a DOS program's) serves requests
between slices and holds the guest while a client has it paused (returning to its loop every 50 ms of host time, so the
display redraws and Ctrl-C is seen).  A headless run and the live view
without a DOS program give the controller the loop itself
(:func:`pypc_core.cli.headless.run_headless_served`,
:func:`pypc_core.cli.live.run_live`), so
``session.start`` can replace the machine; :func:`serve` is ``--serve``."""

import os
import sys

from ..argtypes import server_role, tcp_port as tcp_port_type
from ..rpc.controller import PAUSED_POLL_S
from ..rpc.routed import RoutedServer
from ..rpc.server import DEFAULT_PORT, HOST


def add_arguments(parser):
    g = parser.add_argument_group("agent API (JSON-RPC 2.0 on 127.0.0.1)")
    g.add_argument("--rpc-port", type=tcp_port_type, metavar="PORT",
                   help=f"serve the JSON-RPC agent API on 127.0.0.1:PORT (default "
                        f"{DEFAULT_PORT} in the live view and with --serve; a job "
                        f"(--headless without --serve, PROGRAM, screenshot) serves it only "
                        f"when this is given; 0: any free port, printed on stderr)")
    g.add_argument("--rpc-socket", metavar="PATH",
                   help="serve the JSON-RPC agent API on a Unix domain socket at PATH "
                        "instead of TCP, created mode 0600: only its owner (and root) can "
                        "connect (a stale socket file is replaced); stderr says "
                        "'pypc: JSON-RPC on unix:PATH' once it listens")
    g.add_argument("--rpc-token-file", metavar="FILE",
                   help="owner-only access (TCP or --rpc-socket): every connection must "
                        "first send auth with the token on FILE's first line (FILE readable by its owner only); "
                        "until then every method answers UNAUTHENTICATED and nothing runs")
    g.add_argument("--no-rpc", action="store_true",
                   help="no JSON-RPC server (then the telnet/VNC viewers' keys reach "
                        "the guest)")
    g.add_argument("--serve", action="store_true",
                   help="with --headless: an agent server on the default ports (JSON-RPC "
                        "2301, telnet 2300, VNC 5902, unless told otherwise) -- the JSON-RPC "
                        "controller owns the machine loop until Ctrl-C or SIGTERM, so "
                        "session.start can run programs on the built-in DOS; no --timeout, "
                        "nothing printed")
    return parser


def tcp_port(args):
    """The TCP port the JSON-RPC server of ``args`` listens on (0: any free
    port), None for none: --rpc-port, else 2301 for a server role
    (:func:`~pypc_core.argtypes.server_role`), else none; none with
    --no-rpc, --bare or --rpc-socket (a Unix socket instead)."""
    if getattr(args, "no_rpc", False) or getattr(args, "bare", False) \
            or getattr(args, "rpc_socket", None) is not None:
        return None
    port = getattr(args, "rpc_port", None)
    if port is None and server_role(args):
        port = DEFAULT_PORT
    return port


def serves_rpc(args):
    """Whether the run of ``args`` serves JSON-RPC at all (a TCP port or
    --rpc-socket)."""
    if getattr(args, "no_rpc", False) or getattr(args, "bare", False):
        return False
    return getattr(args, "rpc_socket", None) is not None or tcp_port(args) is not None


def check_access(args):
    """--rpc-socket and --rpc-token-file, before anything is built; the
    token is read here (``args.rpc_token``)."""
    from ..errors import PypcError
    from ..rpc.server import read_token_file
    args.rpc_token = None
    socket_path = getattr(args, "rpc_socket", None)
    token_file = getattr(args, "rpc_token_file", None)
    given = [o for o, v in (("--rpc-socket", socket_path), ("--rpc-token-file", token_file))
             if v is not None]
    if not given:
        return
    if getattr(args, "no_rpc", False):
        raise PypcError(f"{given[0]} is the JSON-RPC server's: it cannot go with --no-rpc")
    if socket_path is not None:
        if getattr(args, "rpc_port", None) is not None:
            raise PypcError("--rpc-socket and --rpc-port: the JSON-RPC server has one "
                            "endpoint, a Unix socket or a TCP port")
        folder = os.path.dirname(os.path.abspath(socket_path))
        if not os.path.isdir(folder):
            raise PypcError(f"--rpc-socket {socket_path}: no such directory {folder!r}")
    if token_file is not None:
        if not serves_rpc(args):
            raise PypcError("--rpc-token-file: this run serves no JSON-RPC (a job, such as "
                            "--headless without --serve, serves it only with --rpc-port "
                            "or --rpc-socket)")
        args.rpc_token = read_token_file(token_file)


def check_serve(args):
    """--serve's companions, before anything is built."""
    check_access(args)
    if not getattr(args, "serve", False):
        return
    from ..errors import PypcError
    if not args.headless:
        raise PypcError("--serve needs --headless (the agent server draws no screen)")
    if getattr(args, "no_rpc", False):
        raise PypcError("--serve is the JSON-RPC server: it cannot go with --no-rpc")
    for name in ("until_text", "timeout", "type", "screenshot"):
        if getattr(args, name, None):
            raise PypcError(f"--serve runs until stopped: --{name.replace('_', '-')} "
                            "does not apply")


def serve(machine, args, stream=None, viewers=None):
    """``pypc run --headless --serve``: run ``machine`` under the RPC
    controller until SIGINT/SIGTERM (exit 130/143).  Unlike the other
    runs, no command-line loop holds the machine, so ``session.start`` may
    replace it with a program's machine; ``viewers`` (the run's
    :class:`~pypc_core.frontends.Frontends`, if any) follow it there and
    are closed here, before the last session's machine."""
    import signal
    import threading
    from ..rpc.server import start as start_server
    port = getattr(args, "rpc_port", None)
    port = DEFAULT_PORT if port is None else port
    controller, server = start_server(machine, port,
                                      socket_path=getattr(args, "rpc_socket", None),
                                      token=getattr(args, "rpc_token", None))
    if viewers is not None:
        controller.adopt_hooks.append(viewers.follow)
    stream = stream or sys.stderr
    stream.write(f"pypc: JSON-RPC agent server on {server.endpoint} (Ctrl-C ends it)\n")
    stream.flush()
    stop = threading.Event()
    got = []

    def handler(signum, _frame):
        got.append(signum)
        stop.set()
    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    from ..scheduler import CPU_HZ
    try:
        while not stop.is_set():
            # (the controller's machine may change: session.start); a paused
            # machine hands back control every PAUSED_POLL_S to see signals
            now = controller.machine.clock()
            controller.run_until_cycle(now + CPU_HZ // 50, wall_timeout=PAUSED_POLL_S)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        server.close()
        if viewers is not None:
            viewers.close()
        if controller.machine is not machine:
            controller.machine.close()      # the last session's machine
    return 128 + got[0] if got else 0


def start(machine, args, stream=None):
    """The run's RPC server for ``machine`` (a :class:`RoutedServer`), or None with ``--no-rpc``
    and for a job that names no --rpc-port (:func:`~pypc_core.argtypes.server_role`).
    A port in use is a one-line error naming --rpc-port (RpcServerError)."""
    if getattr(args, "no_rpc", False):
        return None
    socket_path = getattr(args, "rpc_socket", None)
    token = getattr(args, "rpc_token", None)
    if socket_path is not None:
        rpc = RoutedServer(machine, None, socket_path=socket_path, token=token)
        stream = stream or sys.stderr
        stream.write(f"pypc: JSON-RPC on {rpc.server.endpoint}\n")
        stream.flush()
        return rpc
    port = tcp_port(args)
    if port is None:
        return None
    rpc = RoutedServer(machine, port, token=token)
    if port == 0:
        stream = stream or sys.stderr
        stream.write(f"pypc: JSON-RPC on {HOST}:{rpc.port}\n")
        stream.flush()
    return rpc
