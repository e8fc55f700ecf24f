"""JSON-RPC method groups, installed as ``pypc_rpc_methods.<group>``.

Each module is one method group (thin adapters over the ``Machine`` API) and
is registered through an entry point in the ``pypc.rpc_methods`` group of
``pyproject.toml``, by implementing the ``pypc_rpc_methods`` hook.
"""
