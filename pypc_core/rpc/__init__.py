"""The JSON-RPC 2.0 agent API (the contract is ``../shared/spec/003_*.txt``).

* :mod:`.server`     -- the transport: TCP on 127.0.0.1 or a Unix socket (0600),
  framing, envelope checks, ``auth`` (--rpc-token-file), reply order
* :mod:`.fairqueue`  -- the machine thread's queue, in turns between connections
* :mod:`.controller` -- the machine thread: runs the guest, serves requests
* :mod:`.schemas`    -- ``schemas/<method>.json``, validation, OpenRPC
* :mod:`.errors`     -- error codes and ``error.data.reason``
* :mod:`.params`     -- numbers and address objects
* :mod:`.parts`      -- what a method group keeps on the controller, and its
  lifecycle events

The methods themselves are plugins (``rpc_methods/``, entry-point group
``pypc.rpc_methods``).  Typical use::

    controller, server = pypc_core.rpc.start(machine, port=2301)
    controller.serve_forever()
"""

from .controller import Controller, needs_live_target
from .errors import RpcError
from .server import DEFAULT_PORT, RpcServer, RpcServerError, start

__all__ = ["Controller", "needs_live_target", "RpcError", "RpcServer", "RpcServerError", "DEFAULT_PORT", "start"]
