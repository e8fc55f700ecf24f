"""Floppy and hard-disk images: geometry, access modes, locking, copy-on-write.

A :class:`DiskImage` is a flat file of 512-byte sectors (raw ``dd`` image)
seen through a CHS geometry.

Geometry
    * Floppies: from the image size (:data:`FLOPPY_FORMATS`), e.g. 368,640
      bytes is 40 cylinders x 2 heads x 9 sectors.  Any other size is an
      error, unless an explicit ``geometry`` is given.
    * Hard disks, in this order:

      1. an explicit ``geometry=(C, H, S)`` (``--hdd-geometry C,H,S``);
         it must fit in the image;
      2. an MBR partition table (55AAh at offset 510, boot flags 00h/80h,
         at least one used entry, entries inside the image): heads = highest
         ending head + 1, sectors = highest ending sector;
      3. the BPB of a FAT boot sector at LBA 0 (an unpartitioned image):
         its sectors-per-track and heads fields;
      4. the default: 17 sectors x 4 heads (the classic XT drive shape); if
         that gives more than 1024 cylinders, 16 heads; then 63 sectors x 16
         heads; then 63 x 255.

      Cylinders = whole cylinders in the image (at most 1024); a partial
      last cylinder is not reachable through CHS.

Modes
    ``rw``        reads and writes the image in place (exclusive lock).  A
                  file whose owner marked it read-only (no owner write bit,
                  e.g. mode 0444) is never written, not even by root: it is
                  opened as ``readonly`` instead, and ``readonly_reason``
                  says why (``pypc run`` prints it on stderr).
    ``readonly``  writes fail with :class:`DiskWriteProtected` (BIOS 03h).
    ``cow``       writes go to an in-memory overlay (``{lba: bytes}``); the
                  image is never written.  With ``cow_file`` the overlay is
                  also kept in a side file (``PATH.cow`` by convention) that
                  a later run with the same side file continues from.

Locking
    ``rw`` takes ``flock(LOCK_EX | LOCK_NB)`` on the image, ``readonly`` and
    ``cow`` take ``LOCK_SH | LOCK_NB``: any number of read-only/cow users, or
    one writer.  A side file is locked exclusively.  A conflict is a
    :class:`DiskImageError` raised by the constructor, before the machine
    starts.  Opening never writes to the image.
"""

import base64
import fcntl
import os
import stat
import struct

from ..errors import PypcError

SECTOR_SIZE = 512

KIND_FLOPPY = "floppy"
KIND_HDD = "hdd"

MODE_RW = "rw"
MODE_READONLY = "readonly"
MODE_COW = "cow"
MODES = (MODE_RW, MODE_READONLY, MODE_COW)

# BIOS drive types (INT 13h AH=08h BL) of floppy drives
DRIVE_360K = 1
DRIVE_1200K = 2
DRIVE_720K = 3
DRIVE_1440K = 4

# size in bytes -> (cylinders, heads, sectors, BIOS drive type, name)
FLOPPY_FORMATS = {
    40 * 1 * 8 * SECTOR_SIZE: (40, 1, 8, DRIVE_360K, "160K"),
    40 * 1 * 9 * SECTOR_SIZE: (40, 1, 9, DRIVE_360K, "180K"),
    40 * 2 * 8 * SECTOR_SIZE: (40, 2, 8, DRIVE_360K, "320K"),
    40 * 2 * 9 * SECTOR_SIZE: (40, 2, 9, DRIVE_360K, "360K"),
    80 * 2 * 9 * SECTOR_SIZE: (80, 2, 9, DRIVE_720K, "720K"),
    80 * 2 * 15 * SECTOR_SIZE: (80, 2, 15, DRIVE_1200K, "1.2M"),
    80 * 2 * 18 * SECTOR_SIZE: (80, 2, 18, DRIVE_1440K, "1.44M"),
}

MAX_CYLINDERS = 1024
MAX_HEADS = 255
MAX_SECTORS = 63

COW_MAGIC = b"PYPCCOW1"
_COW_HEADER = struct.Struct("<8sQ")      # magic, image size in bytes
_COW_RECORD = struct.Struct("<Q")        # LBA, followed by 512 data bytes


class DiskImageError(PypcError):
    """A disk image cannot be used (bad path, unknown size, locked, ...)."""


class DiskWriteProtected(DiskImageError):
    """A write to a read-only image (BIOS status 03h)."""


class DiskRangeError(DiskImageError):
    """A sector address outside the image/geometry (BIOS status 04h)."""


def count_bytes(n):
    """``"1 byte"``, ``"2 bytes"``: a size for a message."""
    return f"{n} byte" if n == 1 else f"{n} bytes"


def parse_geometry(text):
    """``"615,4,17"`` -> ``(615, 4, 17)``; a clear error otherwise."""
    try:
        parts = tuple(int(p.strip()) for p in str(text).split(","))
    except ValueError:
        parts = ()
    if len(parts) != 3:
        raise DiskImageError(
            f"bad hard-disk geometry {text!r}: expected C,H,S (e.g. 615,4,17)")
    _check_chs_limits(parts, str(text))
    return parts


def _check_chs_limits(geometry, what):
    c, h, s = geometry
    if not (1 <= c <= MAX_CYLINDERS and 1 <= h <= MAX_HEADS and 1 <= s <= MAX_SECTORS):
        raise DiskImageError(
            f"bad hard-disk geometry {what}: need 1-{MAX_CYLINDERS} cylinders, "
            f"1-{MAX_HEADS} heads, 1-{MAX_SECTORS} sectors")


def floppy_drive_type(cylinders, heads, sectors):
    """The BIOS drive type (1-4) that can hold media of this shape."""
    if sectors > 15:
        return DRIVE_1440K
    if sectors == 15:
        return DRIVE_1200K
    if cylinders > 40:
        return DRIVE_720K
    return DRIVE_360K


def mbr_geometry(sector0, total_sectors):
    """(heads, sectors) from a plausible MBR partition table, else None."""
    if len(sector0) < SECTOR_SIZE or sector0[510:512] != b"\x55\xaa":
        return None
    heads = sectors = 0
    used = 0
    for i in range(4):
        e = sector0[0x1BE + 16 * i:0x1BE + 16 * (i + 1)]
        if e[0] not in (0x00, 0x80):
            return None
        ptype = e[4]
        if ptype == 0:
            continue
        start, size = struct.unpack_from("<II", e, 8)
        end_head = e[5]
        end_sector = e[6] & 0x3F
        if end_sector == 0 or size == 0 or start + size > total_sectors:
            return None
        used += 1
        heads = max(heads, end_head + 1)
        sectors = max(sectors, end_sector)
    if not used:
        return None
    return heads, sectors


def bpb_geometry(sector0):
    """(heads, sectors) from a FAT boot sector's BPB, else None."""
    if len(sector0) < 0x20 or sector0[0] not in (0xEB, 0xE9):
        return None
    bytes_per_sector, = struct.unpack_from("<H", sector0, 0x0B)
    spt, heads = struct.unpack_from("<HH", sector0, 0x18)
    if bytes_per_sector != SECTOR_SIZE:
        return None
    if not (1 <= spt <= MAX_SECTORS and 1 <= heads <= MAX_HEADS):
        return None
    return heads, spt


def default_hdd_geometry(total_sectors):
    """The fallback shape described in the module docstring."""
    for heads, sectors in ((4, 17), (16, 17), (16, 63), (255, 63)):
        if total_sectors // (heads * sectors) <= MAX_CYLINDERS:
            break
    return heads, sectors


class DiskImage:
    """A floppy (``kind="floppy"``) or hard disk (``kind="hdd"``) image.

    ``DiskImage(path, kind, mode="rw", geometry=None, cow_file=None)``
    opens, checks and locks a file; :meth:`from_bytes` makes an in-memory
    image (tests, built-in media).  Use :meth:`close` (or ``with``) to
    release the lock.
    """

    def __init__(self, path, kind=KIND_FLOPPY, mode=MODE_RW, geometry=None,
                 cow_file=None, *, _data=None):
        if kind not in (KIND_FLOPPY, KIND_HDD):
            raise ValueError(f"unknown disk kind {kind!r}")
        if mode not in MODES:
            raise DiskImageError(f"unknown disk mode {mode!r} (use one of {', '.join(MODES)})")
        self.path = None if path is None else os.fspath(path)
        self.kind = kind
        self.mode = mode
        self.media_changed = False
        self.readonly_reason = None    # why an rw image was opened read-only
        self._fd = None
        self._data = None
        self._overlay = {}
        self._cow_fd = None
        self._cow_path = None
        self._cow_created = False
        what = "floppy image" if kind == KIND_FLOPPY else "hard-disk image"
        self._what = what
        try:
            if _data is not None:
                self._data = bytearray(_data)
                size = len(self._data)
                label = "<memory>"
            else:
                size = self._open_file(what)
                label = self.path
            self._setup_geometry(size, geometry, what, label)
            if mode == MODE_COW and cow_file is not None and self._data is None:
                self._open_cow(os.fspath(cow_file), size)
        except BaseException:
            self.close()
            raise

    # -- construction ----------------------------------------------------------
    @classmethod
    def from_bytes(cls, data, kind=KIND_FLOPPY, mode=MODE_RW, geometry=None):
        """An image held in memory (no file, no lock); ``rw`` writes change
        the buffer (see :meth:`to_bytes`)."""
        return cls(None, kind, mode, geometry, _data=bytes(data))

    def _open_file(self, what):
        path = self.path
        try:
            st = os.stat(path)
        except FileNotFoundError:
            raise DiskImageError(f"{what} {path!r}: no such file") from None
        except OSError as e:
            raise DiskImageError(f"{what} {path!r}: {e.strerror}") from None
        if stat.S_ISDIR(st.st_mode):
            raise DiskImageError(f"{what} {path!r} is a directory, not an image file")
        if not stat.S_ISREG(st.st_mode):
            raise DiskImageError(f"{what} {path!r} is not a regular file")
        if self.mode == MODE_RW and not st.st_mode & stat.S_IWUSR:
            # root could write it anyway; its owner said no
            self.mode = MODE_READONLY
            self.readonly_reason = (
                f"{what} {path!r} is marked read-only (mode "
                f"{stat.S_IMODE(st.st_mode):04o}): used as --readonly, never written")
        flags = os.O_RDWR if self.mode == MODE_RW else os.O_RDONLY
        try:
            self._fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
        except PermissionError:
            hint = "; use --readonly or --cow" if self.mode == MODE_RW else ""
            raise DiskImageError(f"{what} {path!r}: permission denied{hint}") from None
        except OSError as e:
            raise DiskImageError(f"{what} {path!r}: {e.strerror}") from None
        lock = fcntl.LOCK_EX if self.mode == MODE_RW else fcntl.LOCK_SH
        try:
            fcntl.flock(self._fd, lock | fcntl.LOCK_NB)
        except BlockingIOError:
            raise DiskImageError(
                f"{what} {path!r} is in use by another pypc instance "
                f"(locked{'; --readonly or --cow can share it with other readers' if self.mode == MODE_RW else ''})"
            ) from None
        return os.fstat(self._fd).st_size

    def _setup_geometry(self, size, geometry, what, label):
        if size == 0:
            raise DiskImageError(f"{what} {label!r} is empty")
        if size % SECTOR_SIZE:
            raise DiskImageError(
                f"{what} {label!r}: unknown size {count_bytes(size)} "
                f"(not a whole number of 512-byte sectors)")
        self.size = size
        total = size // SECTOR_SIZE
        if geometry is not None:
            geometry = tuple(int(v) for v in geometry)
            if len(geometry) != 3:
                raise DiskImageError(f"bad geometry {geometry!r}: expected (C, H, S)")
            _check_chs_limits(geometry, ",".join(map(str, geometry)))
            c, h, s = geometry
            if c * h * s > total:
                raise DiskImageError(
                    f"{what} {label!r} has {total} sectors but geometry {c},{h},{s} "
                    f"needs {c * h * s}")
            self.geometry_source = "explicit"
        elif self.kind == KIND_FLOPPY:
            fmt = FLOPPY_FORMATS.get(size)
            if fmt is None:
                known = ", ".join(f"{name} ({n} bytes)" for n, (*_x, name) in FLOPPY_FORMATS.items())
                raise DiskImageError(
                    f"{what} {label!r}: unknown size {count_bytes(size)} "
                    f"(known floppy sizes: {known})")
            c, h, s = fmt[:3]
            self.geometry_source = "size"
        else:
            sector0 = self._raw_read(0, 1)
            hs = mbr_geometry(sector0, total)
            self.geometry_source = "mbr"
            if hs is None:
                hs = bpb_geometry(sector0)
                self.geometry_source = "bpb"
            if hs is None or total < hs[0] * hs[1]:
                hs = default_hdd_geometry(total)
                self.geometry_source = "default"
            h, s = hs
            c = min(total // (h * s), MAX_CYLINDERS)
            if c < 1:
                raise DiskImageError(
                    f"{what} {label!r}: too small ({count_bytes(size)}) for a hard disk; "
                    f"give --hdd-geometry")
        self.cylinders, self.heads, self.sectors = c, h, s
        self.total_sectors = c * h * s

    def _open_cow(self, cow_path, size):
        self._cow_path = cow_path
        existed = os.path.exists(cow_path)
        try:
            fd = os.open(cow_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError as e:
            raise DiskImageError(f"copy-on-write file {cow_path!r}: {e.strerror}") from None
        self._cow_fd = fd
        self._cow_created = not existed
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise DiskImageError(
                f"copy-on-write file {cow_path!r} is in use by another pypc instance (locked)"
            ) from None
        data = b""
        if existed:
            with open(fd, "rb", closefd=False) as f:
                data = f.read()
        if not data:
            os.ftruncate(fd, 0)
            os.pwrite(fd, _COW_HEADER.pack(COW_MAGIC, size), 0)
            return
        if len(data) < _COW_HEADER.size:
            raise DiskImageError(f"copy-on-write file {cow_path!r} is not a pypc overlay")
        magic, image_size = _COW_HEADER.unpack_from(data, 0)
        if magic != COW_MAGIC:
            raise DiskImageError(f"copy-on-write file {cow_path!r} is not a pypc overlay")
        if image_size != size:
            raise DiskImageError(
                f"copy-on-write file {cow_path!r} belongs to an image of {image_size} "
                f"bytes, not {size}")
        pos = _COW_HEADER.size
        rec = _COW_RECORD.size + SECTOR_SIZE
        while pos + rec <= len(data):
            lba, = _COW_RECORD.unpack_from(data, pos)
            if lba < self.total_sectors:
                self._overlay[lba] = bytes(data[pos + _COW_RECORD.size:pos + rec])
            pos += rec

    # -- properties ------------------------------------------------------------
    @property
    def geometry(self):
        return (self.cylinders, self.heads, self.sectors)

    @property
    def is_floppy(self):
        return self.kind == KIND_FLOPPY

    @property
    def readonly(self):
        return self.mode == MODE_READONLY

    @property
    def drive_type(self):
        """BIOS drive type: 1-4 for floppies (INT 13h AH=08h BL), 0 for hard disks."""
        if not self.is_floppy:
            return 0
        return floppy_drive_type(self.cylinders, self.heads, self.sectors)

    @property
    def cow_file(self):
        return self._cow_path

    def describe(self):
        c, h, s = self.geometry
        src = self.path if self.path is not None else "<memory>"
        return f"{src}: {self.kind} {c}x{h}x{s} ({self.total_sectors} sectors), {self.mode}"

    def __repr__(self):
        return f"<DiskImage {self.describe()}>"

    # -- addressing ------------------------------------------------------------
    def chs_to_lba(self, cylinder, head, sector):
        """LBA of a 1-based ``sector``; :class:`DiskRangeError` if outside."""
        if not (0 <= cylinder < self.cylinders and 0 <= head < self.heads
                and 1 <= sector <= self.sectors):
            raise DiskRangeError(
                f"CHS {cylinder}/{head}/{sector} outside geometry "
                f"{self.cylinders}x{self.heads}x{self.sectors}")
        return (cylinder * self.heads + head) * self.sectors + sector - 1

    def lba_to_chs(self, lba):
        if not 0 <= lba < self.total_sectors:
            raise DiskRangeError(f"LBA {lba} outside the disk")
        cyl, rem = divmod(lba, self.heads * self.sectors)
        head, sec = divmod(rem, self.sectors)
        return cyl, head, sec + 1

    # -- data ------------------------------------------------------------------
    def _raw_read(self, lba, count):
        off, n = lba * SECTOR_SIZE, count * SECTOR_SIZE
        if self._data is not None:
            data = bytes(self._data[off:off + n])
        else:
            data = os.pread(self._fd, n, off)
        if len(data) < n:
            data += bytes(n - len(data))
        return data

    def _check_range(self, lba, count):
        if count < 0 or lba < 0 or lba + count > self.total_sectors:
            raise DiskRangeError(
                f"sectors {lba}..{lba + count - 1} outside the disk ({self.total_sectors} sectors)")

    def read_sectors(self, lba, count=1):
        """``count`` sectors from ``lba`` as bytes."""
        self._check_range(lba, count)
        self._check_open()
        data = self._raw_read(lba, count)
        if self._overlay:
            parts = bytearray(data)
            for i in range(count):
                sec = self._overlay.get(lba + i)
                if sec is not None:
                    parts[i * SECTOR_SIZE:(i + 1) * SECTOR_SIZE] = sec
            data = bytes(parts)
        return data

    def write_sectors(self, lba, data):
        """Write whole sectors at ``lba``."""
        data = bytes(data)
        if len(data) % SECTOR_SIZE:
            raise ValueError("write_sectors needs whole 512-byte sectors")
        count = len(data) // SECTOR_SIZE
        self._check_range(lba, count)
        self._check_open()
        if self.mode == MODE_READONLY:
            raise DiskWriteProtected(f"{self._what} {self.path!r} is read-only")
        if self.mode == MODE_COW:
            records = []
            for i in range(count):
                sec = data[i * SECTOR_SIZE:(i + 1) * SECTOR_SIZE]
                self._overlay[lba + i] = sec
                records.append(_COW_RECORD.pack(lba + i) + sec)
            if self._cow_fd is not None:
                end = os.lseek(self._cow_fd, 0, os.SEEK_END)
                os.pwrite(self._cow_fd, b"".join(records), end)
            return
        if self._data is not None:
            off = lba * SECTOR_SIZE
            self._data[off:off + len(data)] = data
        else:
            os.pwrite(self._fd, data, lba * SECTOR_SIZE)

    def _check_open(self):
        if self._fd is None and self._data is None:
            raise DiskImageError(f"{self._what} {self.path!r} is closed")

    def to_bytes(self):
        """The whole disk as the guest sees it (overlay applied)."""
        return self.read_sectors(0, self.total_sectors) if self.total_sectors else b""

    @property
    def overlay_sectors(self):
        """Sorted LBAs held in the copy-on-write overlay."""
        return sorted(self._overlay)

    # -- media change line -------------------------------------------------------
    def mark_changed(self):
        """Raise the media change line (a disk was inserted)."""
        self.media_changed = True

    def take_changed(self):
        """Read and clear the change line (INT 13h AH=16h)."""
        changed = self.media_changed
        self.media_changed = False
        return changed

    # -- snapshots ---------------------------------------------------------------
    def get_state(self):
        """JSON-compatible: change line and the copy-on-write overlay.

        The contents of an ``rw`` image are the file itself and are not part
        of the state."""
        return {
            "media_changed": bool(self.media_changed),
            "overlay": {str(lba): base64.b64encode(sec).decode("ascii")
                        for lba, sec in sorted(self._overlay.items())},
        }

    def set_state(self, state):
        self.media_changed = bool(state.get("media_changed", False))
        overlay = state.get("overlay", {})
        if overlay and self.mode != MODE_COW:
            raise DiskImageError("a copy-on-write overlay can only be restored into a --cow image")
        self._overlay = {int(k): base64.b64decode(v) for k, v in overlay.items()}
        if self._cow_fd is not None:
            self._rewrite_cow_file()

    def _rewrite_cow_file(self):
        fd = self._cow_fd
        blob = [_COW_HEADER.pack(COW_MAGIC, self.size)]
        for lba, sec in sorted(self._overlay.items()):
            blob.append(_COW_RECORD.pack(lba) + sec)
        data = b"".join(blob)
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)

    # -- closing -----------------------------------------------------------------
    def close(self):
        if self._cow_fd is not None:
            try:
                if self._overlay:
                    self._rewrite_cow_file()      # compact: one record per sector
                elif self._cow_created:
                    os.unlink(self._cow_path)
            except OSError:
                pass
            try:
                os.close(self._cow_fd)
            except OSError:
                pass
            self._cow_fd = None
        if self._fd is not None:
            try:
                os.close(self._fd)               # releases the flock
            except OSError:
                pass
            self._fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
