"""What the telnet and VNC servers share: an accept loop on a listening
socket (:mod:`pypc_core.listening`, which the JSON-RPC server and the gdb
stub bind theirs with too) that gives each client its own session thread and
counts the viewers the display publishes frames for."""

import socket
import threading

from ..listening import check_listen_address, close_listener, listen_socket

__all__ = ["ViewerServer", "check_listen_address", "close_listener", "listen_socket"]


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
