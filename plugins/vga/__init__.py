"""IBM VGA (planar video memory, ports 3C0h-3DFh) -- not built yet.

This package reserves the place of the ``vga`` device plugin.  It has no
hook implementations and no entry point in ``pyproject.toml`` yet, so
``pypc plugins`` does not list it and ``pypc --plugins vga`` fails with
"unknown device plugin" and the list of available ones.  When the device is
written, add ``vga = "pypc_plugins.vga"`` under
``[project.entry-points."pypc.devices"]``.
"""
