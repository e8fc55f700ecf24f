"""8250 UART serial ports (COM1 3F8h/IRQ4, COM2 2F8h/IRQ3) -- not built yet.

This package reserves the place of the ``uart`` device plugin.  It has no
hook implementations and no entry point in ``pyproject.toml`` yet, so
``pypc plugins`` does not list it and ``pypc --plugins uart`` fails with
"unknown device plugin" and the list of available ones.  When the device is
written, add ``uart = "pypc_plugins.uart"`` under
``[project.entry-points."pypc.devices"]``.
"""
