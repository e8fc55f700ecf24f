"""IBM game control adapter (joysticks, port 201h) -- not built yet.

This package reserves the place of the ``gameport`` device plugin.  It has no
hook implementations and no entry point in ``pyproject.toml`` yet, so
``pypc plugins`` does not list it and ``pypc --plugins gameport`` fails with
"unknown device plugin" and the list of available ones.  When the device is
written, add ``gameport = "pypc_plugins.gameport"`` under
``[project.entry-points."pypc.devices"]``.
"""
