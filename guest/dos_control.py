"""``from guest.dos_control import RPC``, run from the repository root: the
import the API contract's "Minimal Python client" section spells, kept for
the clients written against it.  The client is
:class:`pypc_core.client.minimal.RPC` (installed with pypc, importable
anywhere); this module only names it here."""

from pypc_core.client.minimal import RPC, RpcError, TransportError

__all__ = ["RPC", "RpcError", "TransportError"]
