"""pypc device plugin: the diskette adapter (NEC uPD765 floppy controller).

Entry point ``fdc`` in the group ``pypc.devices``; on by default.  The card
claims ports 3F2h (DOR), 3F4h (MSR), 3F5h (data) and 3F7h (DIR), IRQ 6 and
DMA channel 2; its declaration carries the capability
``floppy-controller``, so the BIOS's equipment word lists floppy drives
only when the card is present.  The drives read the machine's floppy
images (``--floppy``, ``--floppy-b``) with all their modes (``--readonly``,
``--cow``, ``--cow-dir``).  See :mod:`pypc_plugins.fdc.fdc`.
"""

from pypc_core import hookimpl

from .fdc import Fdc765

__all__ = ["Fdc765"]


@hookimpl
def pypc_device_declare():
    return Fdc765.declaration


@hookimpl
def pypc_device_create():
    """A controller whose drives its board gives it when attached (the
    machine's floppy images)."""
    return Fdc765()
