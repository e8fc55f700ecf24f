"""The contract's minimal Python client (its "Minimal Python client"
section)::

    from pypc_core.client.minimal import RPC

    rpc = RPC(2301)
    try:
        print(rpc.call("video.text"))
    finally:
        rpc.close()

The contract's own spelling, ``from guest.dos_control import RPC`` run from
the repository root, imports this same class (``guest/dos_control.py``).

``RPC(port)`` keeps one JSON-lines connection to pypc's JSON-RPC server on
127.0.0.1.  ``call(method, params)`` returns the reply's ``result``; an
error reply raises :class:`RpcError` (``code``, ``message``, ``reason``,
``data``: one subclass per ``error.data.reason``, as in the typed client).
It is a thin layer over the typed client's transport
(:class:`pypc_core.client.transport.Transport`), which buffers complete
lines and matches reply ids.  For typed methods and results use
``pypc_core.client.Client``.  (Written by hand: ``pypc gen client`` copies
it as it is.)"""

from .errors import RpcError, error_from_reply
from .transport import DEFAULT_TIMEOUT, Transport, TransportError

__all__ = ["RPC", "RpcError", "TransportError"]


class RPC:
    def __init__(self, port=2301, host="127.0.0.1", timeout=DEFAULT_TIMEOUT):
        self.transport = Transport(host, int(port), timeout)

    def call(self, method, params=None, timeout=None):
        """``method``'s result; ``params`` a dict (omitted: none)."""
        reply = self.transport.request(method, params, timeout)
        if "error" in reply:
            raise error_from_reply(reply["error"])
        if "result" not in reply:
            raise TransportError(f"{method}: the reply has neither result nor error")
        return reply["result"]

    def close(self):
        self.transport.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
