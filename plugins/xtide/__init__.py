"""pypc device plugin: an XT-IDE style hard-disk card with its option ROM.

Entry point ``xtide`` (group ``pypc.devices``; not on by default).  The
card's ROM (``xtide.asm``, written for pypc) makes the drive BIOS drive 80h
for a third-party XT BIOS, so ``--bios`` BIOSes boot C:.  The drive is
``--xtide-image IMAGE``, or, with ``--bios``, the ``--hdd`` image; either
way opened by the storage layer with the machine's ``--readonly`` /
``--cow`` / ``--cow-dir`` mode and ``--hdd-geometry``.  With the built-in
BIOS and ``--hdd`` the ROM leaves drive 80h to the BIOS's own service.
"""

import os

from pypc_core import hookimpl
from pypc_core.errors import PypcError

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
def pypc_device_create(options, machine):
    from pypc_core.storage import DiskImage, DiskImageError
    if machine is None:
        return XtIde(DiskImage.from_bytes(bytes(17 * 4 * 512), kind="hdd"))
    cfg = machine.config
    path = getattr(options, "xtide_image", None)
    if path:
        mode = "cow" if cfg.cow else ("readonly" if cfg.readonly else "rw")
        if cfg.hdd and mode == "rw" and os.path.exists(path) and os.path.exists(cfg.hdd) \
                and os.path.samefile(path, cfg.hdd):
            raise PypcError(f"{path!r} is both the --hdd and the --xtide-image; give the "
                            "card its own image (or use --readonly or --cow)")
        cow_file = None
        if cfg.cow and cfg.cow_dir:
            cow_file = os.path.join(cfg.cow_dir, os.path.basename(path) + ".cow")
        try:
            disk = DiskImage(path, kind="hdd", mode=mode, geometry=cfg.hdd_geometry,
                             cow_file=cow_file)
        except DiskImageError as exc:
            raise PypcError(str(exc)) from exc
        device = XtIde(disk)
        device.owns_disk = True
        return device
    disk = machine.disks.get(0x80) if cfg.bios else None
    if disk is None:
        raise PypcError("the xtide card needs a disk: --xtide-image IMAGE "
                        "(or --hdd IMAGE with a third-party --bios)")
    return XtIde(disk)


@hookimpl
def pypc_machine_shutdown(machine):
    device = machine.devices.get("xtide")
    if isinstance(device, XtIde) and getattr(device, "owns_disk", False):
        device.disk.close()
