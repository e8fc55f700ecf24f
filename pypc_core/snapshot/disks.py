"""Disk contents for bundles: streaming a drive's guest-visible bytes,
hashing source images, and writing new images under a ``disk_root``."""

import base64
import hashlib
import os
import stat
import struct

from ..storage import SECTOR_SIZE
from .errors import SnapshotError

CHUNK = 1 << 20
_LBA = struct.Struct("<I")


def overlay_of(disk):
    """``{lba: sector bytes}`` of a disk's copy-on-write overlay."""
    return {int(k): base64.b64decode(v) for k, v in disk.get_state()["overlay"].items()}


def is_host_mount(disk):
    """A drive that is not an image file but a host directory presented as
    a disk (``--host-dir``)."""
    return not hasattr(disk, "_raw_read") or (
        disk.path is not None and os.path.isdir(disk.path))


def guest_chunks(disk, overlay=None):
    """The whole image as the guest sees it (overlay applied), in chunks of
    at most :data:`CHUNK` bytes."""
    if not hasattr(disk, "_raw_read"):                 # a disk held in memory only
        data = disk.to_bytes()
        for off in range(0, len(data), CHUNK):
            yield data[off:off + CHUNK]
        return
    overlay = overlay_of(disk) if overlay is None else overlay
    sectors = disk.size // SECTOR_SIZE
    step = CHUNK // SECTOR_SIZE
    for lba in range(0, sectors, step):
        n = min(step, sectors - lba)
        data = disk._raw_read(lba, n)
        if overlay:
            buf = None
            for i in range(n):
                sec = overlay.get(lba + i)
                if sec is not None:
                    if buf is None:
                        buf = bytearray(data)
                    buf[i * SECTOR_SIZE:(i + 1) * SECTOR_SIZE] = sec
            if buf is not None:
                data = bytes(buf)
        yield data


def base_chunks(disk):
    """The image file itself (no overlay)."""
    sectors = disk.size // SECTOR_SIZE
    step = CHUNK // SECTOR_SIZE
    for lba in range(0, sectors, step):
        yield disk._raw_read(lba, min(step, sectors - lba))


def encode_overlay(overlay):
    """Overlay member bytes: count, LBAs, then the sectors in LBA order."""
    lbas = sorted(overlay)
    out = [_LBA.pack(len(lbas))]
    out += [_LBA.pack(lba) for lba in lbas]
    out += [overlay[lba] for lba in lbas]
    return b"".join(out)


def decode_overlay(data, sectors, where):
    """``{lba: bytes}`` of an overlay member, checked against a disk of
    ``sectors`` sectors."""
    if len(data) < 4:
        raise SnapshotError(f"{where}: the overlay is truncated", "overlay")
    (count,) = _LBA.unpack_from(data, 0)
    need = 4 + count * 4 + count * SECTOR_SIZE
    if len(data) != need:
        raise SnapshotError(f"{where}: the overlay holds {len(data)} bytes, its table "
                            f"says {need}", "overlay")
    lbas = [_LBA.unpack_from(data, 4 + 4 * i)[0] for i in range(count)]
    if lbas != sorted(set(lbas)) or (lbas and lbas[-1] >= sectors):
        raise SnapshotError(f"{where}: overlay sectors out of order or outside the disk",
                            "overlay")
    base = 4 + 4 * count
    return {lba: data[base + i * SECTOR_SIZE: base + (i + 1) * SECTOR_SIZE]
            for i, lba in enumerate(lbas)}


def open_regular(path, what):
    """A read-only fd of a regular file (symlinks to regular files are
    followed: they are the caller's own host paths).  The file is opened
    without blocking and its type checked before anything is read, so a
    FIFO or a device is refused at once instead of stalling the caller."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)
                     | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise SnapshotError(f"{what} {path!r}: cannot open: {exc.strerror or exc}",
                            "host_io", "io") from None
    try:
        st = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        raise SnapshotError(f"{what} {path!r}: {exc.strerror or exc}", "host_io", "io") from None
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise SnapshotError(f"{what} {path!r} is not a regular file", "reference")
    os.set_blocking(fd, True)
    return fd, st.st_size


def hash_file(path, what, progress=None):
    """``(size, sha256)`` of a host file."""
    fd, size = open_regular(path, what)
    h = hashlib.sha256()
    try:
        while True:
            try:
                block = os.read(fd, CHUNK)
            except OSError as exc:
                raise SnapshotError(f"{what} {path!r}: read failed: {exc.strerror or exc}",
                                    "host_io", "io") from None
            if not block:
                break
            h.update(block)
            if progress is not None:
                progress.advance(len(block))
    finally:
        os.close(fd)
    return size, h.hexdigest()


def new_file(path):
    """Create ``path`` exclusively (never through a symlink); returns an fd."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) \
        | getattr(os, "O_CLOEXEC", 0)
    try:
        return os.open(path, flags, 0o644)
    except OSError as exc:
        raise SnapshotError(f"{path}: cannot create: {exc.strerror or exc}",
                            "disk_write", "io") from None


def write_all(fd, data, path):
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except OSError as exc:
            raise SnapshotError(f"{path}: write failed: {exc.strerror or exc}",
                                "disk_write", "io") from None
        view = view[n:]


def check_new_directory(disk_root):
    """``disk_root`` must not exist (not even as a dangling symlink) and
    its parent must be an existing directory."""
    if not isinstance(disk_root, str) or not disk_root:
        raise SnapshotError("disk_root must be a non-empty path", "disk_root")
    if "\0" in disk_root:
        raise SnapshotError("disk_root contains a NUL character", "disk_root")
    if os.path.lexists(disk_root):
        raise SnapshotError(f"disk_root {disk_root!r} already exists; give a new directory "
                            f"(restored disks never overwrite anything)", "disk_root", "guard")
    parent = os.path.dirname(os.path.abspath(disk_root))
    if not os.path.isdir(parent):
        raise SnapshotError(f"disk_root {disk_root!r}: the parent directory {parent!r} "
                            f"does not exist", "disk_root")
