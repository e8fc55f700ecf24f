"""The JSON Schema of every JSON-RPC method (``<method>.json``) and their
shared definitions (``defs.json``): data, installed as the package
``pypc_schemas`` so that a wheel carries them; ``pypc_core.rpc.schemas``
reads them with importlib.resources.  This folder is their one source."""
