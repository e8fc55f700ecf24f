"""Device plugins shipped with pypc, installed as ``pypc_plugins.<name>``.

Each subpackage is one device (one folder per card).  It becomes a plugin by
an entry point in the ``pypc.devices`` group of ``pyproject.toml``; nothing
here is imported unless a plugin is selected or listed.
"""
