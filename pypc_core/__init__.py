"""pypc: an IBM PC/XT (Intel 8088) emulator with a numba CPU core.

Plugins import the hook marker from here::

    from pypc_core import hookimpl

``pypc_core.Machine`` (the in-process API) is imported lazily so that
``pypc --version`` and ``pypc plugins`` never pay for the CPU core.
"""

from .hookspecs import hookimpl, hookspec
from .version import __version__

__all__ = ["Machine", "hookimpl", "hookspec", "__version__"]


def __getattr__(name):
    if name == "Machine":
        from .machine import Machine
        return Machine
    raise AttributeError(f"module 'pypc_core' has no attribute {name!r}")
