"""Viewers beside the RPC port, and the PC speaker.

* :mod:`.telnet` -- the text screen for a telnet client (``--telnet-port``)
* :mod:`.vnc`    -- the picture for a VNC viewer, RFB 3.8 (``--vnc-port``)
* :mod:`.audio`  -- the speaker to a WAV file (``--audio``) and the host
* :mod:`.display` -- the snapshots the machine thread publishes for them

Both viewers listen on 127.0.0.1 unless ``--listen ADDR`` says otherwise.
Without a port number, ``--telnet-port`` listens on 2300 and ``--vnc-port``
on 5902 (the API contract's ports).  With the RPC server on (the default)
they are view-only; under ``--no-rpc`` their keys reach the guest.  The
telnet, VNC and RPC ports must all differ.

The launcher calls :func:`check_args` before it builds the machine and
:func:`start` once it is built; the returned :class:`Frontends` is served
on the machine thread after every run (``machine.run_hooks``) and closed
when the run ends.
"""

import argparse
import ipaddress
import os

from ..errors import PypcError

DEFAULT_TELNET_PORT = 2300
DEFAULT_VNC_PORT = 5902
DEFAULT_RPC_PORT = 2301
DEFAULT_LISTEN = "127.0.0.1"


def _port(text):
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port {value} is outside 1-65535")
    return value


def add_arguments(parser):
    """``pypc run``'s viewer and sound options (``--no-rpc`` and
    ``--rpc-port`` are the RPC server's: pypc_core/rpc/launch.py)."""
    g = parser.add_argument_group("viewers and sound")
    g.add_argument("--telnet-port", type=_port, nargs="?", const=DEFAULT_TELNET_PORT,
                   metavar="PORT",
                   help="serve the text screen to telnet clients on PORT "
                        f"(default {DEFAULT_TELNET_PORT}); view-only unless --no-rpc")
    g.add_argument("--vnc-port", type=_port, nargs="?", const=DEFAULT_VNC_PORT,
                   metavar="PORT",
                   help="serve the screen to VNC viewers (RFB 3.8) on PORT "
                        f"(default {DEFAULT_VNC_PORT}); view-only unless --no-rpc")
    g.add_argument("--listen", metavar="ADDR",
                   help=f"address the viewers listen on (default {DEFAULT_LISTEN}: "
                        "this host only)")
    g.add_argument("--audio", metavar="WAV",
                   help="write the PC speaker to WAV (44,100 Hz mono 16-bit, "
                        "timed by emulated cycles)")
    g.add_argument("--no-sound", action="store_true",
                   help="no live playback of the PC speaker on this host")
    return parser


def rpc_enabled(args):
    return not getattr(args, "no_rpc", False)


def check_args(args):
    """Bad viewer/sound options: a one-line PypcError before anything runs."""
    telnet = getattr(args, "telnet_port", None)
    vnc = getattr(args, "vnc_port", None)
    ports = []
    if telnet is not None:
        ports.append(("--telnet-port", telnet))
    if vnc is not None:
        ports.append(("--vnc-port", vnc))
    rpc_port = getattr(args, "rpc_port", None)
    rpc_port = DEFAULT_RPC_PORT if rpc_port is None else rpc_port
    if ports and rpc_enabled(args) and rpc_port:         # (0: the RPC picks a free port)
        ports.append(("--rpc-port", rpc_port))
    for i, (name_a, a) in enumerate(ports):
        for name_b, b in ports[i + 1:]:
            if a == b:
                raise PypcError(f"{name_a} and {name_b} are both {a}; the telnet, VNC and "
                                f"RPC ports must differ")
    listen = getattr(args, "listen", None)
    if listen is not None:
        try:
            ipaddress.ip_address(listen)
        except ValueError:
            raise PypcError(f"--listen {listen!r} is not an IP address "
                            f"(e.g. 127.0.0.1, 0.0.0.0 or ::1)") from None
        if telnet is None and vnc is None:
            raise PypcError("--listen needs a viewer (--telnet-port or --vnc-port)")
    audio = getattr(args, "audio", None)
    if audio:
        if os.path.isdir(audio):
            raise PypcError(f"--audio {audio!r} is a directory, not a WAV file")
        folder = os.path.dirname(os.path.abspath(audio))
        if not os.path.isdir(folder):
            raise PypcError(f"--audio {audio!r}: no such directory {folder!r}")


class Frontends:
    """The running viewers and speaker sinks of one machine."""

    def __init__(self, machine, telnet_port=None, vnc_port=None, listen=DEFAULT_LISTEN,
                 keyboard=False, audio_path=None, live_sound=False):
        from .display import Display
        self.machine = machine
        self.display = Display(machine, keyboard=keyboard)
        self.telnet = None
        self.vnc = None
        self.speaker = None
        self._hooked = False
        try:
            if vnc_port is not None:
                from .vnc import VncServer
                self.vnc = VncServer(self.display, listen, vnc_port).start()
            if telnet_port is not None:
                from .telnet import TelnetServer
                self.telnet = TelnetServer(self.display, listen, telnet_port,
                                           vnc_port=self.vnc.port if self.vnc else None).start()
            sinks = []
            if audio_path:
                from .audio import WavSink
                sinks.append(WavSink(audio_path))
            if live_sound:
                from .audio import LivePlayer
                player = LivePlayer()
                if player.available:
                    sinks.append(player)
            if sinks:
                from .audio import Speaker
                self.speaker = Speaker(machine, sinks)
            if self.telnet or self.vnc:
                machine.run_hooks.append(self.display.service)
                self._hooked = True
        except BaseException:
            self.close()
            raise

    def service(self):
        """Machine thread: publish for waiting viewers, deliver their keys,
        render the speaker.  (Also done after every run by the hooks.)"""
        if self._hooked:
            self.display.service()
        if self.speaker is not None:
            self.speaker.render()

    def close(self):
        if self._hooked:
            try:
                self.machine.run_hooks.remove(self.display.service)
            except ValueError:
                pass
            self._hooked = False
        self.display.close()
        for server in (self.telnet, self.vnc):
            if server is not None:
                server.close()
        if self.speaker is not None:
            self.speaker.close()
            self.speaker = None


def start(machine, args):
    """Start what ``args`` asks for (None when nothing is asked)."""
    telnet = getattr(args, "telnet_port", None)
    vnc = getattr(args, "vnc_port", None)
    audio = getattr(args, "audio", None)
    live = not getattr(args, "headless", True) and not getattr(args, "no_sound", False)
    if telnet is None and vnc is None and not audio and not live:
        return None
    return Frontends(machine, telnet_port=telnet, vnc_port=vnc,
                     listen=getattr(args, "listen", None) or DEFAULT_LISTEN,
                     keyboard=not rpc_enabled(args), audio_path=audio, live_sound=live)
