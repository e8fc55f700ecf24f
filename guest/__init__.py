"""The folder name the API contract gives its minimal Python client
(``from guest.dos_control import RPC``, run from the repository root); not
installed with the package.  Nothing but that import path lives here: the
client is :mod:`pypc_core.client.minimal`."""
