"""What the telnet and VNC servers share: a listening socket on the chosen
address (the JSON-RPC server binds its port with the same function) and an
accept loop that gives each client its own session thread and counts the
viewers the display publishes frames for."""

import ipaddress
import socket
import threading

from ..errors import PypcError


def check_listen_address(listen):
    """``--listen``'s value must be an IP address (a one-line error if not)."""
    if listen is None:
        return
    try:
        ipaddress.ip_address(listen)
    except ValueError:
        raise PypcError(f"--listen {listen!r} is not an IP address "
                        f"(e.g. 127.0.0.1, 0.0.0.0 or ::1)") from None


def listen_socket(host, port, option, backlog=8, error=PypcError, advice=None):
    """A listening TCP socket for one of pypc's servers (the viewers, the
    JSON-RPC port), or a one-line ``error`` naming ``option`` and the switch
    that turns the server off (``--telnet-port`` -> ``--no-telnet``), or
    ``advice`` instead of that for a server that is off unless asked for
    (``--web``)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(backlog)
    except OSError as exc:
        sock.close()
        if advice is None:
            off = "--no-" + option[2:].replace("-port", "")   # --no-telnet, --no-vnc, --no-rpc
            advice = f"pick another {option} or use {off}"
        raise error(f"{option} {port}: cannot listen on {host}:{port} "
                    f"({exc.strerror or exc}); another pypc may be using it: "
                    f"{advice}") from None
    return sock


def close_listener(sock):
    if sock is None:
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()


class ViewerServer:
    """Listens on ``host:port``; one ``session_class(server, sock, peer)``
    per client.  Subclasses name the session class, the command-line option
    (for errors) and what a client hears when the server closes."""

    session_class = None
    option = None

    def __init__(self, display, host, port):
        self.display = display
        self.host = host
        self.requested_port = port
        self.listener = None
        self.sessions = set()
        self._lock = threading.Lock()

    @property
    def port(self):
        return self.listener.getsockname()[1]

    def start(self):
        self.listener = listen_socket(self.host, self.requested_port, self.option)
        name = self.option.strip("-").replace("-port", "") + "-accept"
        threading.Thread(target=self._accept_loop, daemon=True, name=name).start()
        return self

    def _accept_loop(self):
        while True:
            try:
                sock, peer = self.listener.accept()
            except OSError:
                return
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            session = self.session_class(self, sock, f"{peer[0]}:{peer[1]}")
            with self._lock:
                self.sessions.add(session)
                self.display.viewers += 1
            session.start()

    def _forget(self, session):
        with self._lock:
            if session in self.sessions:
                self.sessions.discard(session)
                self.display.viewers -= 1

    def farewell(self, session):
        """Said to each client as the server closes (nothing by default)."""

    def close(self):
        close_listener(self.listener)
        with self._lock:
            sessions = list(self.sessions)
        for s in sessions:
            self.farewell(s)
            s.close()
