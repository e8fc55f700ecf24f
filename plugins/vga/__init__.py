"""pypc device plugin: an IBM VGA (registers, 256 KiB planar memory, the
card's INT 10h firmware and a renderer for every mode).

Found through the ``pypc.devices`` entry point ``vga``.  The machine calls
``pypc_device_declare()`` for the card's claims (ports 3B4h/3B5h/3BAh,
3C0h-3CFh, 3D4h/3D5h/3DAh; memory A0000h-BFFFFh and the data ROM at
C0000h-C3FFFh) and ``pypc_device_create()`` for the device, then
``device.attach(board)``: the window becomes a compiled memory handler (the
planar model runs inside the CPU core), the sequencer and graphics
controller ports compiled port handlers, the status ports raster fast paths.
The device is ``pypc_plugins.vga.vga.VGA``, built from ``ports`` (the
register file and its I/O ports), ``timing`` (the raster) and ``render``
(the picture); its memory model is ``planar``, its firmware (the card's
INT 10h) ``bios``, its register tables ``regs``.
"""

import pluggy

from .vga import VGA

__all__ = ["VGA", "pypc_device_declare", "pypc_device_create"]

hookimpl = pluggy.HookimplMarker("pypc")


@hookimpl
def pypc_device_declare():
    """The VGA's claims (see the module docstring); capabilities video/vga."""
    return VGA.declaration


@hookimpl
def pypc_device_create():
    """A new VGA card in its power-on state (80x25 text registers, blank
    memory; not yet attached)."""
    return VGA()
