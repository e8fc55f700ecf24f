"""The client's transport (hand-written; the generated code calls it).

One persistent connection to a pypc JSON-RPC server -- TCP (127.0.0.1:2301
by default) or the Unix domain socket of ``pypc run --rpc-socket PATH``
(``socket_path=PATH``) -- one JSON object per line each way.  With ``token``
(the first line of the server's ``--rpc-token-file``; :func:`read_token_file`)
the connection sends ``auth`` first and fails with :class:`AuthError` if the
server refuses it.  Requests get increasing
integer ids; a reader thread hands each reply to the caller waiting for that
id, so replies that come out of order (``execution.wait`` with a
``timeout_ms`` is answered when its operation ends) reach the right caller,
and several threads may share one :class:`Transport`.  Nothing is retried:
a request that timed out may still run on the server; its late reply is
dropped.
"""

import itertools
import json
import socket
import threading

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 2301
DEFAULT_TIMEOUT = 30.0


class ClientError(Exception):
    """Base class of every error the client raises."""


class TransportError(ClientError):
    """The connection failed, closed, or the server sent something that is
    not a JSON-RPC reply."""


class RequestTimeout(TransportError):
    """No reply within the timeout.  The request may still run: the client
    does not retry it."""


class AuthError(TransportError):
    """The server refused the connection's ``auth`` token."""


def read_token_file(path):
    """The token in ``path``: its first line, without the line end."""
    with open(path, "r", encoding="utf-8") as fh:
        token = fh.readline().rstrip("\r\n")
    if not token.strip():
        raise ValueError(f"{path}: the file has no token (its first line is empty)")
    return token


class _Waiter:
    __slots__ = ("event", "reply")

    def __init__(self):
        self.event = threading.Event()
        self.reply = None


class Transport:
    """A JSON-lines connection.  :meth:`request` sends one request and
    returns the whole reply object (``result`` or ``error``)."""

    def __init__(self, host=DEFAULT_HOST, port=DEFAULT_PORT, timeout=DEFAULT_TIMEOUT,
                 connect_timeout=10.0, socket_path=None, token=None):
        if timeout is not None and timeout <= 0:
            raise ValueError(f"timeout must be positive, not {timeout!r}")
        self.host = host
        self.port = port
        self.socket_path = socket_path
        self.timeout = timeout
        where = f"unix:{socket_path}" if socket_path else f"{host}:{port}"
        self.where = where
        try:
            if socket_path:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.settimeout(connect_timeout)
                try:
                    self.sock.connect(socket_path)
                except OSError:
                    self.sock.close()
                    raise
            else:
                self.sock = socket.create_connection((host, port), timeout=connect_timeout)
        except OSError as exc:
            raise TransportError(f"cannot connect to pypc at {where}: "
                                 f"{exc.strerror or exc}") from None
        self.sock.settimeout(None)
        if not socket_path:
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._ids = itertools.count(1)
        self._lock = threading.Lock()           # pending table and sending
        self._pending = {}
        self._closed = None                     # why the connection ended
        self._reader = threading.Thread(target=self._read_loop, daemon=True,
                                        name=f"pypc-client-{where}")
        self._reader.start()
        if token is not None:
            reply = self.request("auth", {"token": token})
            if "error" in reply:
                self.close()
                raise AuthError(f"pypc at {where} refused the token: "
                                f"{reply['error'].get('message', reply['error'])}")

    @property
    def closed(self):
        return self._closed is not None

    def request(self, method, params=None, timeout=None):
        """Send ``method`` with ``params`` (a dict) and wait for its reply
        (``timeout`` seconds, default the transport's; None waits forever)."""
        timeout = self.timeout if timeout is None else timeout
        waiter = _Waiter()
        with self._lock:
            if self._closed is not None:
                raise TransportError(f"connection to {self.where} is closed "
                                     f"({self._closed})")
            rid = next(self._ids)
            msg = {"jsonrpc": "2.0", "id": rid, "method": method}
            if params:
                msg["params"] = params
            line = json.dumps(msg, separators=(",", ":")).encode("utf-8") + b"\n"
            self._pending[rid] = waiter
            try:
                self.sock.sendall(line)
            except OSError as exc:
                self._pending.pop(rid, None)
                self._fail(f"send failed: {exc.strerror or exc}")
                raise TransportError(f"{method}: cannot send to {self.where}: "
                                     f"{exc.strerror or exc}") from None
        if not waiter.event.wait(timeout):
            with self._lock:
                self._pending.pop(rid, None)
            raise RequestTimeout(f"{method}: no reply within {timeout} s")
        reply = waiter.reply
        if reply is None:
            raise TransportError(f"{method}: connection to {self.where} "
                                 f"closed ({self._closed})")
        return reply

    def _read_loop(self):
        buf = self.sock.makefile("rb")
        why = "closed by the server"
        try:
            for line in buf:
                try:
                    reply = json.loads(line)
                except ValueError:
                    why = "the server sent a line that is not JSON"
                    break
                rid = reply.get("id") if isinstance(reply, dict) else None
                with self._lock:
                    waiter = self._pending.pop(rid, None)
                if waiter is not None:
                    waiter.reply = reply
                    waiter.event.set()
                # a reply nobody waits for (timed out, or id null) is dropped
        except OSError as exc:
            why = f"read failed: {exc.strerror or exc}"
        with self._lock:
            self._fail(why)

    def _fail(self, why):
        """Called with the lock held: wake every waiter with no reply."""
        if self._closed is None:
            self._closed = why
        for waiter in self._pending.values():
            waiter.event.set()
        self._pending.clear()

    def close(self):
        with self._lock:
            self._fail("closed by the client")
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
