"""pypc device plugin: the IBM Color/Graphics Adapter (CGA).

Found through the ``pypc.devices`` entry point ``cga``.  The machine calls
``pypc_device_declare()`` to learn what the card claims (ports 3D0h-3DFh,
memory B8000h-BFFFFh) and ``pypc_device_create()`` for the device; it then
calls ``device.attach(board)``, which maps the VRAM and its alias, claims
the ports and puts the raster fast path on 3DAh.  The device itself is
``pypc_plugins.cga.cga.CGA``.
"""

import pluggy

from .cga import CGA, PALETTE, encode_png

__all__ = ["CGA", "PALETTE", "encode_png", "pypc_device_declare",
           "pypc_device_create"]

hookimpl = pluggy.HookimplMarker("pypc")


@hookimpl
def pypc_device_declare():
    """The CGA's claims: ports 3D0h-3DFh, VRAM window B8000h (32 KiB with
    the BC000h mirror), capabilities video/cga."""
    return CGA.declaration


@hookimpl
def pypc_device_create():
    """A new CGA card in its power-on state (not yet attached)."""
    return CGA()
