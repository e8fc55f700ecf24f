"""pypc device plugin: an XT-IDE style hard-disk card with its option ROM.

Entry point ``xtide`` (group ``pypc.devices``; not on by default).  The
card's ROM (``xtide.asm``, written for pypc) makes the drive BIOS drive 80h
for a third-party XT BIOS, so ``--bios`` BIOSes boot C:.  The drive is
``--xtide-image IMAGE``, or, with ``--bios``, the ``--hdd`` image; either
way opened by the storage layer with the machine's ``--readonly`` /
``--cow`` / ``--cow-dir`` mode and ``--hdd-geometry``.  With the built-in
BIOS and ``--hdd`` the ROM leaves drive 80h to the BIOS's own service.
"""

from pypc_core import hookimpl

from .xtide import XtIde, rom_image

__all__ = ["XtIde", "rom_image"]


@hookimpl
def pypc_device_declare():
    return XtIde.declaration


@hookimpl
def pypc_cli_add_options(parser):
    parser.add_argument("--xtide-image", metavar="IMAGE",
                        help="hard-disk image on the XT-IDE card (default with --bios: "
                             "the --hdd image)")


@hookimpl
def pypc_device_create(options):
    """The card; its drive comes from its board when attached
    (``--xtide-image``, or with a third-party ``--bios`` the ``--hdd``)."""
    return XtIde(image_path=getattr(options, "xtide_image", None))
