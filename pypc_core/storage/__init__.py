"""Disk images: floppies and hard disks for the built-in BIOS (INT 13h)."""

from .image import (
    COW_MAGIC, DRIVE_1200K, DRIVE_1440K, DRIVE_360K, DRIVE_720K, FLOPPY_FORMATS,
    KIND_FLOPPY, KIND_HDD, MODE_COW, MODE_READONLY, MODE_RW, MODES, SECTOR_SIZE,
    DiskImage, DiskImageError, DiskRangeError, DiskWriteProtected,
    default_hdd_geometry, floppy_drive_type, parse_geometry,
)

__all__ = [
    "DiskImage", "DiskImageError", "DiskRangeError", "DiskWriteProtected",
    "parse_geometry", "default_hdd_geometry", "floppy_drive_type",
    "FLOPPY_FORMATS", "SECTOR_SIZE", "KIND_FLOPPY", "KIND_HDD",
    "MODE_RW", "MODE_READONLY", "MODE_COW", "MODES", "COW_MAGIC",
    "DRIVE_360K", "DRIVE_1200K", "DRIVE_720K", "DRIVE_1440K",
]
