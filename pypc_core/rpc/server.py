"""The RPC transport: TCP on 127.0.0.1 (or a Unix domain socket, mode 0600),
one JSON-RPC 2.0 object per line.

Each connection has a reader thread that splits lines (at most
:data:`MAX_LINE` bytes each), parses the envelope, checks the params against
the method's schema and queues the request for the machine thread
(:class:`~pypc_core.rpc.controller.Controller`), whose queue takes the
connections in turns (:mod:`.fairqueue`).  Framing and envelope errors, and
``auth``, are answered by the reader itself; nothing else is.

Replies on a connection go out in request order: every request that will be
answered takes the next place in its connection's order when the reader
reads it, and a reply waits until the replies before it are out (an error
the reader finds waits for the requests queued before it).  Only a request
the machine thread parks (``execution.wait`` with ``timeout_ms``) gives its
place up and is answered when it completes.  Replies are written by
whichever thread has them, without blocking the machine thread on a slow
client (what a socket does not take at once goes to a per-connection writer
thread).

Access: the TCP port is open to every local user, as the contract says.
``--rpc-socket PATH`` serves on a Unix domain socket created 0600 instead
(only its owner, and root, can connect; the peer's uid is checked too), and
``--rpc-token-file FILE`` makes every connection send ``auth`` with the
file's token first: until then every other method is refused with
``UNAUTHENTICATED`` and nothing runs.
"""

import collections
import hmac
import json
import os
import socket
import stat
import threading

from ..errors import PypcError
from .controller import Controller, Request
from .errors import INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR
from .schemas import build_schema_set

HOST = "127.0.0.1"
DEFAULT_PORT = 2301
MAX_LINE = 1 << 20              # bytes per request line (without the LF)
MAX_IN_FLIGHT = 1024            # queued requests (or unsent replies) per connection
                                # before reading pauses
MAX_BACKLOG = 64 << 20          # unsent reply bytes before a connection is dropped
MAX_TOKEN = 4096                # bytes of an --rpc-token-file token
TRANSPORT_METHODS = ("auth",)   # answered by the transport, not a method group


class RpcServerError(PypcError):
    """The RPC server cannot start (port in use, bad method plugins)."""


def _reject_constant(name):
    raise ValueError(f"{name} is not JSON")


def _error(rid, code, message, reason, **data):
    return {"jsonrpc": "2.0", "id": rid,
            "error": {"code": code, "message": message, "data": {"reason": reason, **data}}}


def _line(obj):
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def auth_method(ctl, params):
    """``auth``: the transport answers it (it never reaches the machine
    thread); here so the method has its schema, ``rpc.discover`` and
    ``agent.capabilities`` like every other."""
    raise AssertionError("auth is answered by the RPC transport")


def read_token_file(path, option="--rpc-token-file"):
    """The token in ``path`` (its first line, without the line end), or a
    one-line RpcServerError: missing, empty, too long, not UTF-8, or
    readable by other users (mode must deny group and others, as ssh asks
    of a key)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise RpcServerError(f"{option} {path}: cannot open it ({exc.strerror or exc})") \
            from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise RpcServerError(f"{option} {path}: not a regular file")
        if st.st_mode & 0o077:
            raise RpcServerError(f"{option} {path}: other users can read or write it "
                                 f"(mode {stat.S_IMODE(st.st_mode):04o}); chmod 600 it")
        data = os.read(fd, MAX_TOKEN + 2)
    finally:
        os.close(fd)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise RpcServerError(f"{option} {path}: the file is not UTF-8 text") from None
    token = text.split("\n", 1)[0].rstrip("\r")
    if not token.strip():
        raise RpcServerError(f"{option} {path}: the file's first line is empty")
    if len(token.encode()) > MAX_TOKEN:
        raise RpcServerError(f"{option} {path}: the first line is longer than {MAX_TOKEN} "
                             f"bytes")
    return token


class _Slot:
    """A queued request's place in its connection's reply order: what the
    controller calls ``req.conn``."""

    __slots__ = ("source", "seq")

    def __init__(self, conn, seq):
        self.source = conn
        self.seq = seq              # None: a notification, or a parked request

    def done(self):
        self.source.done()

    def send_result(self, rid, result):
        self.source.deliver(self.seq, _line({"jsonrpc": "2.0", "id": rid, "result": result}))

    def send_error(self, rid, error):
        self.source.deliver(self.seq, _line({"jsonrpc": "2.0", "id": rid, "error": error}))

    def parked(self):
        """The machine thread parked the request: later replies need not wait."""
        seq, self.seq = self.seq, None
        self.source.release(seq)


class Connection:
    def __init__(self, server, sock, peer):
        self.server = server
        self.sock = sock
        self.peer = peer
        self.closed = False
        self.authed = server.token is None
        self.submitted = 0          # written by the reader thread only
        self.completed = 0          # written by the machine thread only
        self._lock = threading.Lock()
        self._backlog = collections.deque()
        self._backlog_bytes = 0
        self._writing = False
        self._wake = threading.Condition(self._lock)
        self._writer = None
        # reply order (see the module docstring)
        self._order = threading.Lock()
        self._room = threading.Condition(self._order)
        self._next_seq = 0          # the next place a reader-read request takes
        self._out_seq = 0           # the place whose reply goes out next
        self._held = {}             # place -> reply bytes waiting for earlier ones
        self._released = set()      # places given up (parked requests)

    # -- reply order (any thread) ------------------------------------------
    def reserve(self, place=True):
        """Reader: the next place in the reply order (None without
        ``place``: a notification), once fewer than :data:`MAX_IN_FLIGHT`
        requests are queued and replies owed (reading pauses until then)."""
        with self._order:
            while (self._next_seq - self._out_seq > MAX_IN_FLIGHT
                   or self.submitted - self.completed > MAX_IN_FLIGHT) and not self.closed:
                self._room.wait(0.25)
            if not place:
                return None
            seq = self._next_seq
            self._next_seq += 1
            return seq

    def deliver(self, seq, data):
        """Send the reply of place ``seq`` once every earlier place is
        answered (None: at once)."""
        with self._order:
            if seq is None:
                self.write(data)
                return
            if seq != self._out_seq:
                self._held[seq] = data
                return
            self.write(data)
            self._advance()

    def release(self, seq):
        if seq is None:
            return
        with self._order:
            if seq != self._out_seq:
                self._released.add(seq)
                return
            self._advance()

    def _advance(self):
        """(order lock held) Place ``_out_seq`` is answered: move on and send
        what waited for it."""
        self._out_seq += 1
        while True:
            data = self._held.pop(self._out_seq, None)
            if data is not None:
                self.write(data)
            elif self._out_seq in self._released:
                self._released.discard(self._out_seq)
            else:
                break
            self._out_seq += 1
        self._room.notify_all()

    def done(self):
        """The machine thread has executed one of this connection's requests."""
        with self._order:
            self.completed += 1
            self._room.notify_all()

    # -- writing (any thread) ----------------------------------------------

    def write(self, data):
        with self._lock:
            if self.closed:
                return
            if not self._writing and not self._backlog:
                try:
                    sent = self.sock.send(data, socket.MSG_DONTWAIT)
                except (BlockingIOError, InterruptedError):
                    sent = 0
                except OSError:
                    self._close_locked()
                    return
                if sent == len(data):
                    return
                data = data[sent:]
            self._backlog.append(data)
            self._backlog_bytes += len(data)
            if self._backlog_bytes > MAX_BACKLOG:
                self._close_locked()       # a client that never reads
                return
            if self._writer is None:
                self._writer = threading.Thread(target=self._write_loop, daemon=True,
                                                name=f"rpc-writer-{self.peer}")
                self._writer.start()
            self._wake.notify()

    def _write_loop(self):
        while True:
            with self._lock:
                while not self._backlog and not self.closed:
                    self._writing = False
                    self._wake.wait()
                if self.closed:
                    return
                self._writing = True
                data = self._backlog.popleft()
                self._backlog_bytes -= len(data)
            try:
                self.sock.sendall(data)
            except OSError:
                with self._lock:
                    self._close_locked()
                return

    def _close_locked(self):
        if self.closed:
            return
        self.closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._wake.notify_all()

    def close(self):
        with self._lock:
            self._close_locked()

    # -- reading (the connection's thread) -------------------------------------
    def read_loop(self):
        buf = bytearray()
        skipping = False            # inside a line that is already too long
        try:
            while not self.closed:
                try:
                    data = self.sock.recv(1 << 16)
                except OSError:
                    break
                if not data:
                    break
                start = 0
                while True:
                    nl = data.find(b"\n", start)
                    if nl < 0:
                        if not skipping:
                            buf += data[start:]
                            if len(buf) > MAX_LINE:
                                skipping = True
                                buf = bytearray()
                        break
                    chunk = data[start:nl]
                    start = nl + 1
                    if skipping:
                        skipping = False
                        self._too_long()
                        continue
                    if buf:
                        buf += chunk
                        line = bytes(buf)
                        buf = bytearray()
                    else:
                        line = chunk
                    if len(line) > MAX_LINE:
                        self._too_long()
                        continue
                    self.handle_line(line)
        finally:
            # a half-written last line is dropped with the connection
            self.close()
            try:
                self.sock.close()
            except OSError:
                pass
            self.server._forget(self)

    def _too_long(self):
        self._send(_error(None, INVALID_REQUEST, f"request line longer than {MAX_LINE} bytes",
                          "INVALID_REQUEST", limit=MAX_LINE))

    def _send(self, obj):
        """A reply the reader makes, in its place in the reply order."""
        self.deliver(self.reserve(), _line(obj))

    def handle_line(self, line):
        if not line.strip():
            return
        try:
            obj = json.loads(line.decode("utf-8"), parse_constant=_reject_constant)
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            self._send(_error(None, PARSE_ERROR, f"invalid JSON: {exc}", "PARSE_ERROR"))
            return
        if not isinstance(obj, dict):
            self._send(_error(None, INVALID_REQUEST, "a request must be a JSON object "
                              "(batches are not supported)", "INVALID_REQUEST"))
            return
        notify = "id" not in obj
        rid = obj.get("id")
        if rid is not None and (isinstance(rid, bool) or not isinstance(rid, (str, int))):
            self._send(_error(None, INVALID_REQUEST, "id must be a string, an integer "
                              "or null", "INVALID_REQUEST"))
            return
        if obj.get("jsonrpc") != "2.0":
            self._send(_error(rid, INVALID_REQUEST, 'jsonrpc must be "2.0"',
                              "INVALID_REQUEST"))
            return
        method = obj.get("method")
        if not isinstance(method, str):
            self._send(_error(rid, INVALID_REQUEST, "method must be a string",
                              "INVALID_REQUEST"))
            return
        if method == "auth":
            self._auth(rid, notify, obj.get("params", {}))
            return
        if not self.authed:
            if not notify:
                self._send(_error(rid, INVALID_REQUEST,
                                  f"{method}: not authenticated: this server needs the "
                                  f"token of its --rpc-token-file first (auth with "
                                  f"params.token); nothing ran", "UNAUTHENTICATED",
                                  method=method))
            return
        server = self.server
        fn = server.methods.get(method)
        if fn is None:
            if not notify:
                self._send(_error(rid, METHOD_NOT_FOUND, f"unknown method {method!r}",
                                  "METHOD_NOT_FOUND", method=method))
            return
        params = obj.get("params", {})
        if not isinstance(params, dict):
            if not notify:
                self._send(_error(rid, INVALID_PARAMS, "params must be an object",
                                  "INVALID_PARAMS"))
            return
        request_id = None
        if "request_id" in params:
            # a retry key on any method (the contract's 5.3), not a method param
            request_id = params["request_id"]
            if not isinstance(request_id, str) or not 1 <= len(request_id) <= 128:
                if not notify:
                    self._send(_error(rid, INVALID_PARAMS, "request_id must be a string of "
                                      "1 to 128 characters", "INVALID_PARAMS",
                                      field="request_id"))
                return
            params = {k: v for k, v in params.items() if k != "request_id"}
        errors = server.schemas.param_errors(method, params)
        if errors:
            if not notify:
                self._send(_error(rid, INVALID_PARAMS,
                                  f"invalid params for {method}: {errors[0]}",
                                  "INVALID_PARAMS", errors=errors[:8]))
            return
        slot = _Slot(self, self.reserve(place=not notify))
        self.submitted += 1
        server.controller.submit(Request(slot, rid, notify, method, params, fn, request_id))

    def _auth(self, rid, notify, params):
        """``auth``: ``{"token": "..."}`` against --rpc-token-file.  A right
        token authenticates this connection; a wrong or missing one is
        refused (and the connection stays unauthenticated)."""
        token = self.server.token
        if token is None:
            result = {"authenticated": True, "required": False}
        elif not isinstance(params, dict) or not isinstance(params.get("token"), str):
            if not notify:
                self._send(_error(rid, INVALID_PARAMS, "auth: params.token (a string) is "
                                  "missing", "UNAUTHENTICATED"))
            return
        elif hmac.compare_digest(params["token"].encode("utf-8", "surrogatepass"),
                                 token.encode("utf-8")):
            self.authed = True
            result = {"authenticated": True, "required": True}
        else:
            if not notify:
                self._send(_error(rid, INVALID_PARAMS, "auth: wrong token",
                                  "UNAUTHENTICATED"))
            return
        if not notify:
            self._send({"jsonrpc": "2.0", "id": rid, "result": result})


class RpcServer:
    """Listens on 127.0.0.1:``port`` (0: any free port), or on the Unix
    domain socket ``socket_path`` (created 0600), and feeds ``controller``.
    ``methods`` is ``{name: fn(controller, params)}``; with ``token`` every
    connection must send ``auth`` with it first."""

    def __init__(self, controller, methods, port=DEFAULT_PORT, schema_folder=None,
                 socket_path=None, token=None):
        self.controller = controller
        self.methods = dict(methods)
        self.methods["auth"] = auth_method
        self.schemas = build_schema_set(self.methods, schema_folder)
        controller.schemas = self.schemas
        controller.methods = self.methods
        controller.method_names = list(self.methods)
        self.requested_port = port
        self.socket_path = None if socket_path is None else os.path.abspath(socket_path)
        self.token = token
        self.listener = None
        self._socket_id = None      # (st_dev, st_ino) of the socket file we made
        self.connections = set()
        self._lock = threading.Lock()
        self._thread = None

    @property
    def port(self):
        return None if self.socket_path else self.listener.getsockname()[1]

    @property
    def endpoint(self):
        if self.socket_path:
            return f"unix:{self.socket_path}"
        return f"{HOST}:{self.port}"

    def start(self):
        if self.socket_path:
            self.listener = self._listen_unix(self.socket_path)
        else:
            from ..listening import listen_socket
            self.listener = listen_socket(HOST, self.requested_port, "--rpc-port",
                                          backlog=16, error=RpcServerError)
        self.controller.endpoint = self.endpoint
        self._thread = threading.Thread(target=self._accept_loop, daemon=True,
                                        name="rpc-accept")
        self._thread.start()
        return self

    def _listen_unix(self, path):
        """A listening Unix socket at ``path``, mode 0600 from its creation
        (umask 177 around bind).  A stale socket file nobody listens on is
        replaced; anything else at ``path`` is a one-line error."""
        option = f"--rpc-socket {path}"
        if os.path.lexists(path):
            if not stat.S_ISSOCK(os.lstat(path).st_mode):
                raise RpcServerError(f"{option}: the path exists and is not a socket; "
                                     f"remove it or pick another path")
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(path)
            except ConnectionRefusedError:
                os.unlink(path)                 # stale: its server is gone
            except OSError as exc:
                raise RpcServerError(f"{option}: cannot use it ({exc.strerror or exc})") \
                    from None
            else:
                raise RpcServerError(f"{option}: another server (another pypc?) "
                                     f"listens there; pick another path")
            finally:
                probe.close()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            sock.bind(path)
        except OSError as exc:
            sock.close()
            raise RpcServerError(f"{option}: cannot listen there "
                                 f"({exc.strerror or exc})") from None
        finally:
            os.umask(old)
        os.chmod(path, 0o600)
        st = os.stat(path)
        self._socket_id = (st.st_dev, st.st_ino)
        sock.listen(16)
        return sock

    def _accept_loop(self):
        while True:
            try:
                sock, peer = self.listener.accept()
            except OSError:
                return
            if self.socket_path:
                if not self._owner_peer(sock):
                    sock.close()
                    continue
                name = "unix"
            else:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                name = f"{peer[0]}:{peer[1]}"
            conn = Connection(self, sock, name)
            with self._lock:
                self.connections.add(conn)
            threading.Thread(target=conn.read_loop, daemon=True,
                             name=f"rpc-conn-{conn.peer}").start()

    @staticmethod
    def _owner_peer(sock):
        """A Unix-socket peer runs as this process's user (or root); anyone
        else is told so and refused (the 0600 mode already keeps them out)."""
        import struct
        try:
            creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                    struct.calcsize("3i"))
            _pid, uid, _gid = struct.unpack("3i", creds)
        except (OSError, AttributeError):
            return True                         # no SO_PEERCRED here: the mode decides
        if uid in (os.geteuid(), 0):
            return True
        try:
            sock.sendall(_line(_error(None, INVALID_REQUEST, f"uid {uid} is not the owner "
                                      f"of this pypc", "UNAUTHENTICATED")))
        except OSError:
            pass
        return False

    def _forget(self, conn):
        with self._lock:
            self.connections.discard(conn)

    def close(self):
        if self.listener is not None:
            try:
                self.listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self.listener.close()
            if self._socket_id is not None:
                try:
                    st = os.stat(self.socket_path)
                    if (st.st_dev, st.st_ino) == self._socket_id:
                        os.unlink(self.socket_path)     # ours, not a successor's
                except OSError:
                    pass
                self._socket_id = None
        with self._lock:
            conns = list(self.connections)
        for conn in conns:
            conn.close()


def collect_methods(plugin_manager):
    """``{method: callable}`` from every registered RPC method group (the
    ``pypc.rpc_methods`` entry points, registered here if they are not yet)."""
    plugin_manager.register_rpc_methods()
    return plugin_manager.rpc_methods()


def start(machine, port=DEFAULT_PORT, socket_path=None, token=None):
    """Build the controller and the server for ``machine`` and start
    listening.  Returns ``(controller, server)``; the caller runs the machine
    through ``controller.run_until_cycle`` (or ``serve_forever``)."""
    controller = Controller(machine)
    server = RpcServer(controller, collect_methods(machine.plugin_manager), port,
                       socket_path=socket_path, token=token)
    server.start()
    return controller, server
