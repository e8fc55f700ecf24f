"""Broken plugins for pypc's tests: each module fails in one place a plugin
author can get wrong, written only against the documented plugin interface.
A test installs the ones it needs as entry points (a ``*.dist-info`` in a
temporary folder, this folder on the path), so nothing here is ever
installed by default.

Device plugins (group ``pypc.devices``):

* ``declare``: ``pypc_device_declare`` raises;
* ``create``: ``pypc_device_create`` raises;
* ``options``: ``pypc_cli_add_options`` raises;
* ``ready``: ``pypc_machine_ready`` raises;
* ``attach``: ``Device.attach`` raises ``OSError``;
* ``port``: a card on ports E0h/E1h whose write handler (E0h) and read
  handler (E1h) raise during the guest's OUT / IN.

RPC method groups (group ``pypc.rpc_methods``):

* ``rpc_import``: the module raises when it is imported;
* ``rpc_hook``: ``pypc_rpc_methods`` raises;
* ``rpc_handler``: ``broken.divide`` raises ``ZeroDivisionError``;
* ``rpc_schema``: ``broken.typo``'s schema has ``"type": "integr"``;
* ``rpc_ref``: ``broken.ref``'s schema refers to ``defs.json#/$defs/nosuch``;
* ``rpc_result``: ``broken.result`` returns ``{"value": "not-an-int"}``
  against ``"type": "integer"``.
"""

#: entry-point name -> (group, module)
ENTRY_POINTS = {
    "broken_declare": ("pypc.devices", "pypc_broken.declare"),
    "broken_create": ("pypc.devices", "pypc_broken.create"),
    "broken_options": ("pypc.devices", "pypc_broken.options"),
    "broken_ready": ("pypc.devices", "pypc_broken.ready"),
    "broken_attach": ("pypc.devices", "pypc_broken.attach"),
    "broken_port": ("pypc.devices", "pypc_broken.port"),
    "broken_rpc_import": ("pypc.rpc_methods", "pypc_broken.rpc_import"),
    "broken_rpc_hook": ("pypc.rpc_methods", "pypc_broken.rpc_hook"),
    "broken_rpc_handler": ("pypc.rpc_methods", "pypc_broken.rpc_handler"),
    "broken_rpc_schema": ("pypc.rpc_methods", "pypc_broken.rpc_schema"),
    "broken_rpc_ref": ("pypc.rpc_methods", "pypc_broken.rpc_ref"),
    "broken_rpc_result": ("pypc.rpc_methods", "pypc_broken.rpc_result"),
}
