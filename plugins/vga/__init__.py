"""pypc device plugin: an IBM VGA (registers, 256 KiB planar memory, the
card's INT 10h firmware and a renderer for every mode).

Found through the ``pypc.devices`` entry point ``vga``.  The device is
``pypc_plugins.vga.vga.VGA``; its memory model is ``planar``, its firmware
``bios`` and its register tables ``regs``.
"""

from .vga import VGA

__all__ = ["VGA"]
