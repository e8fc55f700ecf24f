"""A small JSON-RPC client and a live pypc RPC server for the tests.

``RpcFixture`` builds a real machine (CGA, built-in BIOS, no disk) and the
real server on a free port of 127.0.0.1, and runs the machine loop in a
thread.  ``Client`` talks to it over a socket; every result it receives is
checked against the method's schema (``schemas/``)."""

import contextlib
import itertools
import json
import socket
import threading

from pypc_core import rpc
from pypc_core.machine import Machine, MachineConfig


_AUTO = object()


def compact_cells(obj):
    """``obj`` with each row of a ``cells`` grid cut to its distinct cells.
    The schemas put no limit on a row's length or uniqueness, so this copy
    is valid exactly when ``obj`` is; it makes checking a video.text result
    (2,000 cell objects, about 0.2 s in jsonschema) cheap."""
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if k == "cells" and isinstance(v, list) and all(isinstance(r, list) for r in v):
                rows = []
                for row in v:
                    seen, uniq = set(), []
                    for cell in row:
                        key = json.dumps(cell, sort_keys=True)
                        if key not in seen:
                            seen.add(key)
                            uniq.append(cell)
                    rows.append(uniq)
                out[k] = rows
            else:
                out[k] = compact_cells(v)
        return out
    if isinstance(obj, list):
        return [compact_cells(v) for v in obj]
    return obj


class RpcFailure(Exception):
    def __init__(self, error):
        super().__init__(error.get("message"))
        self.error = error
        self.code = error.get("code")
        self.reason = (error.get("data") or {}).get("reason")


class Client:
    def __init__(self, port, schemas=None, timeout=300):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.file = self.sock.makefile("rb")
        self.schemas = schemas
        self.ids = itertools.count(1)

    def send_raw(self, data):
        self.sock.sendall(data)

    def read_reply(self):
        line = self.file.readline()
        if not line:
            raise ConnectionError("server closed the connection")
        return json.loads(line)

    def request(self, method, params=None, rid=_AUTO):
        """The whole reply object (result or error)."""
        rid = next(self.ids) if rid is _AUTO else rid
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send_raw(json.dumps(msg).encode() + b"\n")
        reply = self.read_reply()
        assert reply.get("jsonrpc") == "2.0", reply
        assert reply.get("id") == rid, (reply, rid)
        assert ("result" in reply) != ("error" in reply), reply
        if "result" in reply and self.schemas is not None:
            errors = self.schemas.result_errors(method, compact_cells(reply["result"]))
            assert not errors, (method, errors)
        if "error" in reply:
            err = reply["error"]
            assert isinstance(err.get("code"), int), reply
            assert isinstance(err.get("message"), str), reply
            assert isinstance(err.get("data", {}).get("reason"), str), reply
        return reply

    def call(self, method, params=None):
        reply = self.request(method, params)
        if "error" in reply:
            raise RpcFailure(reply["error"])
        return reply["result"]

    def error(self, method, params=None):
        """The error of a call that must fail."""
        reply = self.request(method, params)
        assert "error" in reply, (method, params, reply)
        return reply["error"]

    def notify(self, method, params=None):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.send_raw(json.dumps(msg).encode() + b"\n")

    def close(self):
        try:
            self.file.close()
            self.sock.close()
        except OSError:
            pass


def warm_up_core():
    """Compile (or load from numba's cache) the CPU core here, on a scratch
    CPU, so a client's first request does not wait for a compilation
    (about 25 s, far more on a loaded host) inside the machine thread."""
    from pypc_core.cpu import Cpu
    cpu = Cpu()
    cpu.step()
    cpu.interrupt(0)


@contextlib.contextmanager
def served(controller, methods):
    """The real server for ``controller`` with ``methods`` (a test may add
    its own) on a free port, and the machine loop in a thread, for the
    ``with`` block; yields the server."""
    from pypc_core.rpc.server import RpcServer
    srv = RpcServer(controller, methods, port=0).start()
    stop = threading.Event()
    loop = threading.Thread(target=controller.serve_forever, args=(stop,), daemon=True)
    loop.start()
    try:
        yield srv
    finally:
        stop.set()
        loop.join(timeout=30)
        srv.close()


class RpcFixture:
    """A machine, its controller and server, and the machine thread."""

    def __init__(self, **config):
        config.setdefault("plugins", ["cga"])
        warm_up_core()
        self.machine = Machine(MachineConfig(**config))
        self.controller, self.server = rpc.start(self.machine, port=0)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.controller.serve_forever,
                                       args=(self.stop,), daemon=True)
        self.thread.start()
        self.clients = []

    @property
    def port(self):
        return self.server.port

    def client(self):
        c = Client(self.port, self.server.schemas)
        self.clients.append(c)
        return c

    def close(self):
        for c in self.clients:
            c.close()
        self.stop.set()
        self.thread.join(timeout=30)
        self.server.close()
        self.machine.close()

    def close_with_session(self):
        """close(), then the built-in DOS (its drives) of the session the
        controller had, if any."""
        session = self.controller.session
        self.close()
        if session is not None:
            session.dos_session.close()
