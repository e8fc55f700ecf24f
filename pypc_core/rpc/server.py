"""The RPC transport: TCP on 127.0.0.1, one JSON-RPC 2.0 object per line.

Each connection has a reader thread that splits lines (at most
:data:`MAX_LINE` bytes each), parses the envelope, checks the params against
the method's schema and queues the request for the machine thread
(:class:`~pypc_core.rpc.controller.Controller`).  Framing and envelope errors
are answered by the reader itself; nothing else is.  Replies are written by
whichever thread has them, without blocking the machine thread on a slow
client (what a socket does not take at once goes to a per-connection writer
thread).
"""

import collections
import json
import socket
import threading
import time

from ..errors import PypcError
from .controller import Controller, Request
from .errors import INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR
from .schemas import build_schema_set

HOST = "127.0.0.1"
DEFAULT_PORT = 2301
MAX_LINE = 1 << 20              # bytes per request line (without the LF)
MAX_IN_FLIGHT = 1024            # queued requests per connection before reading pauses
MAX_BACKLOG = 64 << 20          # unsent reply bytes before a connection is dropped


class RpcServerError(PypcError):
    """The RPC server cannot start (port in use, bad method plugins)."""


def _reject_constant(name):
    raise ValueError(f"{name} is not JSON")


def _error(rid, code, message, reason, **data):
    return {"jsonrpc": "2.0", "id": rid,
            "error": {"code": code, "message": message, "data": {"reason": reason, **data}}}


class Connection:
    def __init__(self, server, sock, peer):
        self.server = server
        self.sock = sock
        self.peer = peer
        self.closed = False
        self.submitted = 0          # written by the reader thread only
        self.completed = 0          # written by the machine thread only
        self._lock = threading.Lock()
        self._backlog = collections.deque()
        self._backlog_bytes = 0
        self._writing = False
        self._wake = threading.Condition(self._lock)
        self._writer = None

    # -- replies (any thread) ----------------------------------------------
    def send_result(self, rid, result):
        self.write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result},
                              separators=(",", ":")).encode() + b"\n")

    def send_error(self, rid, error):
        self.write(json.dumps({"jsonrpc": "2.0", "id": rid, "error": error},
                              separators=(",", ":")).encode() + b"\n")

    def done(self):
        """The machine thread has executed one of this connection's requests."""
        self.completed += 1

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
                    while self.submitted - self.completed > MAX_IN_FLIGHT and not self.closed:
                        time.sleep(0.0005)
        finally:
            # a half-written last line is dropped with the connection
            self.close()
            try:
                self.sock.close()
            except OSError:
                pass
            self.server._forget(self)

    def _too_long(self):
        self.write(json.dumps(_error(
            None, INVALID_REQUEST, f"request line longer than {MAX_LINE} bytes",
            "INVALID_REQUEST", limit=MAX_LINE)).encode() + b"\n")

    def _send(self, obj):
        self.write(json.dumps(obj, separators=(",", ":")).encode() + b"\n")

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
        self.submitted += 1
        server.controller.submit(Request(self, rid, notify, method, params, fn, request_id))


class RpcServer:
    """Listens on 127.0.0.1:``port`` (0: any free port) and feeds
    ``controller``.  ``methods`` is ``{name: fn(controller, params)}``."""

    def __init__(self, controller, methods, port=DEFAULT_PORT, schema_folder=None):
        self.controller = controller
        self.methods = dict(methods)
        self.schemas = build_schema_set(self.methods, schema_folder)
        controller.schemas = self.schemas
        controller.method_names = list(self.methods)
        self.requested_port = port
        self.listener = None
        self.connections = set()
        self._lock = threading.Lock()
        self._thread = None

    @property
    def port(self):
        return self.listener.getsockname()[1]

    @property
    def endpoint(self):
        return f"{HOST}:{self.port}"

    def start(self):
        from ..frontends.listener import listen_socket
        self.listener = listen_socket(HOST, self.requested_port, "--rpc-port", backlog=16,
                                      error=RpcServerError)
        self.controller.endpoint = self.endpoint
        self._thread = threading.Thread(target=self._accept_loop, daemon=True,
                                        name="rpc-accept")
        self._thread.start()
        return self

    def _accept_loop(self):
        while True:
            try:
                sock, peer = self.listener.accept()
            except OSError:
                return
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = Connection(self, sock, f"{peer[0]}:{peer[1]}")
            with self._lock:
                self.connections.add(conn)
            threading.Thread(target=conn.read_loop, daemon=True,
                             name=f"rpc-conn-{conn.peer}").start()

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
        with self._lock:
            conns = list(self.connections)
        for conn in conns:
            conn.close()


def collect_methods(plugin_manager):
    """``{method: callable}`` from every registered RPC method group (the
    ``pypc.rpc_methods`` entry points, registered here if they are not yet)."""
    plugin_manager.register_rpc_methods()
    return plugin_manager.rpc_methods()


def start(machine, port=DEFAULT_PORT):
    """Build the controller and the server for ``machine`` and start
    listening.  Returns ``(controller, server)``; the caller runs the machine
    through ``controller.run_until_cycle`` (or ``serve_forever``)."""
    controller = Controller(machine)
    server = RpcServer(controller, collect_methods(machine.plugin_manager), port)
    server.start()
    return controller, server
