"""The options of ``pypc run`` for the viewers beside the RPC port and the
PC speaker (the viewers themselves are :mod:`pypc_core.frontends`).

As the API contract says, a server role -- the live view, the agent server
``--headless --serve`` (:func:`pypc_core.argtypes.server_role`) -- serves both
viewers by default: telnet on 2300 and VNC on 5902, beside JSON-RPC on 2301,
all on 127.0.0.1 unless ``--listen ADDR`` says otherwise (the RPC port stays
on 127.0.0.1).  A job (``--headless`` without ``--serve``, a PROGRAM,
``--bare``, ``pypc screenshot``) serves only a viewer whose port it names.
``--telnet-port PORT`` / ``--vnc-port PORT`` move them (0: any free port,
printed on stderr); ``--no-telnet``, ``--no-vnc`` and ``--no-viewers`` leave
them out.  With the RPC server on they are view-only; under ``--no-rpc``
their keys reach the guest.  The telnet, VNC and RPC ports must all differ.
``--web [PORT]`` adds the browser view (default port 8088) under the same
rules, its port different from the others too.

``pypc run`` calls :func:`check_args` before it builds the machine and
:func:`start` once it is built; the returned
:class:`~pypc_core.frontends.Frontends` is served on the machine thread
after every run and closed when the run ends.
"""

import os
import sys

from ..argtypes import tcp_port
from ..errors import PypcError
from ..frontends import DEFAULT_LISTEN, Frontends
from ..frontends.listener import check_listen_address

DEFAULT_TELNET_PORT = 2300
DEFAULT_VNC_PORT = 5902
DEFAULT_RPC_PORT = 2301
DEFAULT_WEB_PORT = 8088             # (pypc_core.frontends.web.DEFAULT_WEB_PORT)


def add_arguments(parser):
    """``pypc run``'s viewer and sound options (``--no-rpc`` and
    ``--rpc-port`` are the RPC server's: pypc_core/cli/rpc.py)."""
    g = parser.add_argument_group("viewers and sound")
    g.add_argument("--telnet-port", type=tcp_port, metavar="PORT",
                   help="serve the text screen to telnet clients on PORT "
                        f"(default {DEFAULT_TELNET_PORT} in the live view and with --serve; "
                        "a job (--headless, PROGRAM) serves it only when given; 0: any "
                        "free port, printed on stderr); view-only unless --no-rpc")
    g.add_argument("--vnc-port", type=tcp_port, metavar="PORT",
                   help="serve the screen to VNC viewers (RFB 3.8) on PORT "
                        f"(default {DEFAULT_VNC_PORT} in the live view and with --serve; "
                        "a job (--headless, PROGRAM) serves it only when given; 0: any "
                        "free port, printed on stderr); view-only unless --no-rpc")
    g.add_argument("--vnc-password-file", metavar="FILE",
                   help="VNC viewers must answer RFB VNC Authentication (security type 2) "
                        "with the password on FILE's first line (at most 8 characters; "
                        "FILE readable by its owner only); telnet has no password: use "
                        "--no-telnet beside it")
    g.add_argument("--web", type=tcp_port, nargs="?", const=DEFAULT_WEB_PORT, metavar="PORT",
                   help="serve the browser view (the screen, keys, read-only debugger "
                        f"panes) on http://127.0.0.1:PORT/ (default {DEFAULT_WEB_PORT}; off "
                        "unless given, in any run; 0: any free port, printed on stderr); "
                        "view-only unless --no-rpc")
    g.add_argument("--no-telnet", action="store_true", help="no telnet viewer")
    g.add_argument("--no-vnc", action="store_true", help="no VNC viewer")
    g.add_argument("--no-viewers", action="store_true",
                   help="neither viewer (--no-telnet --no-vnc)")
    g.add_argument("--listen", metavar="ADDR",
                   help=f"address the viewers, --web and --gdb listen on (default {DEFAULT_LISTEN}: "
                        "this host only)")
    g.add_argument("--audio", metavar="WAV",
                   help="write the PC speaker to WAV (44,100 Hz mono 16-bit, "
                        "timed by emulated cycles)")
    g.add_argument("--video-out", metavar="FILE",
                   help="record the display (and the PC speaker where the container carries "
                        "sound) to FILE: .mkv (lossless H.264 RGB + FLAC), .mp4 (H.264 + "
                        "AAC), .webm (VP9 + Opus), .gif or .apng; one frame per frame of the "
                        "card in emulated time, at the mode's native resolution; a change of "
                        "resolution goes on in NAME.1.EXT, NAME.2.EXT ... (docs/recording.md)")
    g.add_argument("--no-sound", action="store_true",
                   help="no live playback of the PC speaker on this host")
    return parser


def viewer_ports(args):
    """(telnet port, VNC port) ``args`` asks for, None for a viewer left
    out.  A server role (:func:`~pypc_core.argtypes.server_role`: the live
    view, --serve) serves both on their defaults unless --no-telnet /
    --no-vnc / --no-viewers; a job serves only a viewer whose port it
    names."""
    from ..argtypes import server_role
    none = getattr(args, "no_viewers", False)
    telnet = getattr(args, "telnet_port", None)
    vnc = getattr(args, "vnc_port", None)
    defaults = server_role(args)
    if none or getattr(args, "no_telnet", False):
        telnet = None
    elif telnet is None and defaults:
        telnet = DEFAULT_TELNET_PORT
    if none or getattr(args, "no_vnc", False):
        vnc = None
    elif vnc is None and defaults:
        vnc = DEFAULT_VNC_PORT
    return telnet, vnc


def rpc_enabled(args):
    return not getattr(args, "no_rpc", False)


def rpc_port(args):
    """The JSON-RPC TCP port ``args`` serves (None: none): --rpc-port, else
    2301 for a server role, else none -- the same rule as the viewers
    (:func:`pypc_core.cli.rpc.tcp_port`)."""
    from .rpc import tcp_port
    return tcp_port(args)


def check_args(args):
    """Bad viewer/sound options: a one-line PypcError before anything runs."""
    for option, off in (("telnet_port", ("no_telnet", "no_viewers")),
                        ("vnc_port", ("no_vnc", "no_viewers"))):
        if getattr(args, option, None) is None:
            continue
        for name in off:
            if getattr(args, name, False):
                raise PypcError(f"--{option.replace('_', '-')} and --{name.replace('_', '-')} "
                                "contradict each other")
    telnet, vnc = viewer_ports(args)
    web = getattr(args, "web", None)
    ports = []
    if telnet:                                          # (0: a free port, never a clash)
        ports.append(("--telnet-port", telnet))
    if vnc:
        ports.append(("--vnc-port", vnc))
    if web:
        ports.append(("--web", web))
    rpc = rpc_port(args)
    if ports and rpc:
        ports.append(("--rpc-port", rpc))
    gdb = getattr(args, "gdb", None)
    if web and gdb:
        ports.append(("--gdb", gdb))
    for i, (name_a, a) in enumerate(ports):
        for name_b, b in ports[i + 1:]:
            if a == b:
                what = ("the telnet, VNC, web, RPC and gdb ports" if web else
                        "the telnet, VNC and RPC ports")
                raise PypcError(f"{name_a} and {name_b} are both {a}; {what} must differ")
    listen = getattr(args, "listen", None)
    check_listen_address(listen)
    if listen is not None:
        if telnet is None and vnc is None and web is None and getattr(args, "gdb", None) is None:
            if getattr(args, "no_viewers", False) or (getattr(args, "no_telnet", False)
                                                      and getattr(args, "no_vnc", False)):
                raise PypcError("--listen is the viewers' address, and --no-viewers (or "
                                "--no-telnet --no-vnc) leaves none (--web would be one)")
            raise PypcError("--listen is the viewers' address, and this run serves none: "
                            "a job (--headless, a PROGRAM) serves a viewer only when "
                            "--telnet-port, --vnc-port or --web names its port")
    args.vnc_password = None
    password_file = getattr(args, "vnc_password_file", None)
    if password_file is not None:
        if vnc is None:
            raise PypcError("--vnc-password-file: this run serves no VNC viewer (a job, "
                            "such as --headless, serves one only with --vnc-port)")
        args.vnc_password = read_vnc_password(password_file)
    audio = getattr(args, "audio", None)
    if audio:
        if os.path.isdir(audio):
            raise PypcError(f"--audio {audio!r} is a directory, not a WAV file")
        folder = os.path.dirname(os.path.abspath(audio))
        if not os.path.isdir(folder):
            raise PypcError(f"--audio {audio!r}: no such directory {folder!r}")
    video_out = getattr(args, "video_out", None)
    if video_out is not None:
        from ..recording import check_path
        try:
            check_path(video_out)
        except PypcError as exc:
            raise PypcError(f"--video-out {exc}") from None


def read_vnc_password(path):
    """The password on ``path``'s first line, as bytes, or a one-line
    PypcError (the file's rules are --rpc-token-file's)."""
    from ..rpc.server import RpcServerError, read_token_file
    from ..frontends.rfbauth import MAX_PASSWORD
    try:
        password = read_token_file(path, "--vnc-password-file").encode("utf-8")
    except RpcServerError as exc:
        raise PypcError(str(exc)) from None
    if len(password) > MAX_PASSWORD:
        raise PypcError(f"--vnc-password-file {path}: the password is longer than "
                        f"{MAX_PASSWORD} bytes (VNC Authentication uses 8)")
    return password


def start(machine, args, stream=None):
    """Start what ``args`` asks for (None when nothing is asked).  A viewer
    on port 0 says on ``stream`` (stderr) which port it got."""
    telnet, vnc = viewer_ports(args)
    web = getattr(args, "web", None)
    audio = getattr(args, "audio", None)
    live = not getattr(args, "headless", True) and not getattr(args, "no_sound", False)
    video_out = getattr(args, "video_out", None)
    if (telnet is None and vnc is None and web is None and not audio and not live
            and video_out is None):
        return None
    listen = getattr(args, "listen", None) or DEFAULT_LISTEN
    viewers = Frontends(machine, telnet_port=telnet, vnc_port=vnc, listen=listen,
                        keyboard=not rpc_enabled(args), audio_path=audio, live_sound=live,
                        vnc_password=getattr(args, "vnc_password", None), web_port=web,
                        video_out=video_out, stream=stream)
    stream = stream or sys.stderr
    for name, asked, server in (("telnet", telnet, viewers.telnet),
                                ("VNC", vnc, viewers.vnc)):
        if asked == 0:
            stream.write(f"pypc: {name} viewer on {listen}:{server.port}\n")
            stream.flush()
    if web == 0:
        stream.write(f"pypc: web view on {viewers.web.url}\n")
        stream.flush()
    return viewers
