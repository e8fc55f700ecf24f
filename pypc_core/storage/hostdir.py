"""A host directory presented as a FAT disk (``--host-dir DIR``).

:class:`HostDirDisk` builds a FAT image in memory from ``DIR`` when it is
opened and behaves like a :class:`~pypc_core.storage.image.DiskImage` (the
floppy controller, the BIOS and the XT-IDE card use it unchanged).  What
the guest writes stays in that image until :meth:`HostDirDisk.sync` (called
when the machine closes, and by anyone who wants it earlier) reads the FAT
file system back and applies the difference to ``DIR``.

Shape, by the size of the files
    up to 1,200 KiB of file data (clusters counted): a 1.44 MB floppy,
    FAT12; more: a hard disk with one FAT16 partition (type 04h / 06h) of
    up to 32 MiB behind an MBR, 4 heads x 17 sectors (16 x 63 when that
    needs more than 1024 cylinders).  Bigger trees are refused; each
    file's size is checked against what still fits *before* the file is
    read (and no more than that is read), so a huge or sparse file costs no
    memory.

What is shown
    Regular files and directories (recursively), never symlinks, devices or
    FIFOs; names that are not DOS 8.3 names get a unique ``NAME~N.EXT``
    alias (the host name is kept for write-back).  Skipped entries are
    listed in ``skipped``.

What is written back (``sync``)
    new files and directories (MD), changed file contents, deleted files,
    removed directories (when they are empty on the host too), renamed or
    moved files and directories (recognised by their first cluster).  The
    host side is touched only through directory descriptors opened from
    ``DIR`` with ``O_NOFOLLOW``, one validated component at a time: a
    component is a DOS name (at most 8 + 3 of the characters DOS allows,
    none of them ``/``, ``\\``, ``.`` or NUL) or a host name this module read
    itself from that directory, so no path can leave ``DIR`` and no symlink
    is followed; an entry with any other name is refused and reported.
    Before a host file is replaced, deleted or renamed its size and
    modification time must still be what they were when the disk was built
    (or last synced): otherwise the change is *not* applied and a conflict
    is reported in ``conflicts`` (a newly created guest file whose host name
    appeared meanwhile is a conflict too).  ``sync`` returns a report.
"""

import os
import stat
import struct

from .image import (KIND_FLOPPY, KIND_HDD, MODE_COW, MODE_READONLY, MODE_RW, SECTOR_SIZE,
                    DiskImageError, DiskRangeError, DiskWriteProtected, floppy_drive_type)

FLOPPY_LIMIT = 1200 * 1024
HDD_MAX_SECTORS = 65535                  # a FAT16 partition without the 32-bit count
DOS_CHARS = set(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'()-@^_`{}~")
ATTR_DIR, ATTR_VOLUME, ATTR_LFN = 0x10, 0x08, 0x0F
O_DIR = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | \
    getattr(os, "O_CLOEXEC", 0)


class HostDirError(DiskImageError):
    """The host directory cannot be presented (missing, too big, ...)."""


def dos_name_ok(name):
    """A DOS 8.3 name in the allowed characters (``NAME`` or ``NAME.EXT``)."""
    if not name or name in (".", "..") or len(name) > 12:
        return False
    base, dot, ext = name.partition(".")
    if not 1 <= len(base) <= 8 or len(ext) > 3 or (dot and not ext) or "." in ext:
        return False
    return all(ord(c) in DOS_CHARS for c in base + ext)


def _fields(name):
    base, _dot, ext = name.partition(".")
    return base.ljust(8).encode("ascii") + ext.ljust(3).encode("ascii")


def _entry_name(raw):
    """11 raw bytes -> "NAME.EXT", or None if not a valid DOS name."""
    try:
        base = raw[:8].decode("ascii").rstrip(" ")
        ext = raw[8:11].decode("ascii").rstrip(" ")
    except UnicodeDecodeError:
        return None
    name = base + ("." + ext if ext else "")
    return name if dos_name_ok(name) else None


# ---------------------------------------------------------------------------
# layout
# ---------------------------------------------------------------------------

class Layout:
    """Where things are in the image (sector numbers from the image start)."""

    def __init__(self, fat_bits, part_start, total, spc, reserved, fats, fat_sectors,
                 root_entries, heads, spt, media):
        self.fat_bits = fat_bits
        self.part_start = part_start
        self.total = total                    # sectors of the partition / floppy
        self.spc = spc
        self.reserved = reserved
        self.fats = fats
        self.fat_sectors = fat_sectors
        self.root_entries = root_entries
        self.heads, self.spt, self.media = heads, spt, media
        self.fat_start = part_start + reserved
        self.root_start = self.fat_start + fats * fat_sectors
        self.root_sectors = root_entries * 32 // SECTOR_SIZE
        self.data_start = self.root_start + self.root_sectors
        self.clusters = (total - (self.data_start - part_start)) // spc

    @property
    def cluster_bytes(self):
        return self.spc * SECTOR_SIZE

    def cluster_offset(self, n):
        return (self.data_start + (n - 2) * self.spc) * SECTOR_SIZE


def _fat_sectors(fat_bits, clusters):
    entries = clusters + 2
    size = (entries * 3 + 1) // 2 if fat_bits == 12 else entries * 2
    return (size + SECTOR_SIZE - 1) // SECTOR_SIZE


def floppy_layout():
    total, spc, root = 2880, 1, 224
    fs = 9
    return Layout(12, 0, total, spc, 1, 2, fs, root, 2, 18, 0xF0)


def hdd_layout(need_clusters_bytes):
    """A FAT16 partition big enough for the data plus room to grow."""
    want = max(need_clusters_bytes * 2 + 4 * 1024 * 1024, 8 * 1024 * 1024)
    sectors = min(want // SECTOR_SIZE, HDD_MAX_SECTORS)
    heads, spt = 4, 17
    if (sectors + spt) // (heads * spt) + 1 > 1024:
        heads, spt = 16, 63
    cyls = (sectors + spt + heads * spt - 1) // (heads * spt)
    total_disk = cyls * heads * spt
    part_start = spt                                    # track 1 of cylinder 0
    part_total = min(total_disk - part_start, HDD_MAX_SECTORS)
    spc = 4 if part_total <= 32680 * 4 else 8
    clusters = part_total // spc
    fs = _fat_sectors(16, clusters)
    lay = Layout(16, part_start, part_total, spc, 1, 2, fs, 512, heads, spt, 0xF8)
    if lay.clusters < 4085:
        spc = 2
        fs = _fat_sectors(16, part_total // spc)
        lay = Layout(16, part_start, part_total, spc, 1, 2, fs, 512, heads, spt, 0xF8)
    lay.disk_cylinders = cyls
    return lay


# ---------------------------------------------------------------------------
# reading the host tree
# ---------------------------------------------------------------------------

class Node:
    """A host file or directory as presented: DOS name, host name, contents."""

    def __init__(self, dos, host, is_dir, data=b"", st=None):
        self.dos, self.host, self.is_dir = dos, host, is_dir
        self.data = data
        self.st = st                      # (size, mtime_ns) of the host file
        self.children = []
        self.cluster = 0


def _alias(name, taken):
    base, _dot, ext = name.upper().rpartition(".") if "." in name[1:] else (name.upper(), "", "")
    clean = "".join(c for c in base if ord(c) in DOS_CHARS)[:6] or "FILE"
    ext = "".join(c for c in ext if ord(c) in DOS_CHARS)[:3]
    for n in range(1, 100000):
        tail = f"~{n}"
        cand = clean[:8 - len(tail)] + tail + ("." + ext if ext else "")
        if cand not in taken:
            return cand
    raise HostDirError(f"too many names like {name!r}")


MAX_FILE_BYTES = HDD_MAX_SECTORS * SECTOR_SIZE     # no disk of ours holds more


def read_tree(root_fd, skipped, prefix="", budget=None):
    """Children of the directory ``root_fd`` as Nodes (sorted by host name).
    ``budget`` (a one-item list: bytes of file data still allowed) is
    checked against each file's size *before* the file is read, so a huge
    (or sparse) file is refused without reading it."""
    if budget is None:
        budget = [MAX_FILE_BYTES]
    nodes = []
    taken = set()
    names = sorted(os.listdir(root_fd))
    plain = [n for n in names if dos_name_ok(n)]
    taken.update(plain)
    for name in names:
        try:
            st = os.stat(name, dir_fd=root_fd, follow_symlinks=False)
        except OSError as exc:
            skipped.append(f"{prefix}{name}: {exc.strerror}")
            continue
        if stat.S_ISLNK(st.st_mode):
            skipped.append(f"{prefix}{name}: a symbolic link (not followed)")
            continue
        dos = name if name in plain else _alias(name, taken)
        taken.add(dos)
        if stat.S_ISDIR(st.st_mode):
            fd = os.open(name, O_DIR, dir_fd=root_fd)
            try:
                node = Node(dos, name, True)
                node.children = read_tree(fd, skipped, prefix + name + "/", budget)
            finally:
                os.close(fd)
            nodes.append(node)
        elif stat.S_ISREG(st.st_mode):
            _check_budget(budget, st.st_size, prefix + name)
            try:
                fd = os.open(name, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
                             | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0),
                             dir_fd=root_fd)
            except OSError as exc:
                skipped.append(f"{prefix}{name}: {exc.strerror}")
                continue
            try:
                with os.fdopen(fd, "rb") as fh:
                    fst = os.fstat(fh.fileno())
                    if not stat.S_ISREG(fst.st_mode):
                        skipped.append(f"{prefix}{name}: not a regular file or directory")
                        continue
                    _check_budget(budget, fst.st_size, prefix + name)
                    os.set_blocking(fh.fileno(), True)
                    data = fh.read(budget[0] + 1)         # never more than still fits
            except OSError as exc:
                skipped.append(f"{prefix}{name}: {exc.strerror}")
                continue
            _check_budget(budget, len(data), prefix + name)
            budget[0] -= len(data)
            nodes.append(Node(dos, name, False, data, (st.st_size, st.st_mtime_ns)))
        else:
            skipped.append(f"{prefix}{name}: not a regular file or directory")
    return nodes


def _check_budget(budget, size, name):
    if size > budget[0]:
        raise HostDirError(f"the host directory does not fit in a disk: {name} is {size} "
                           f"bytes, and at most {MAX_FILE_BYTES} bytes of files fit "
                           f"({budget[0]} are left)")


def _tree_bytes(nodes, cluster_bytes):
    total = 0
    for n in nodes:
        if n.is_dir:
            entries = len(n.children) + 2
            total += max(1, -(-entries * 32 // cluster_bytes)) * cluster_bytes
            total += _tree_bytes(n.children, cluster_bytes)
        else:
            total += -(-len(n.data) // cluster_bytes) * cluster_bytes
    return total


# ---------------------------------------------------------------------------
# building the image
# ---------------------------------------------------------------------------

class FatWriter:
    def __init__(self, image, lay):
        self.img = image
        self.lay = lay
        self.fat = [0] * (lay.clusters + 2)
        self.fat[0] = (0xF00 if lay.fat_bits == 12 else 0xFF00) | lay.media
        self.fat[1] = 0xFFF if lay.fat_bits == 12 else 0xFFFF
        self.next = 2

    def eoc(self):
        return 0xFFF if self.lay.fat_bits == 12 else 0xFFFF

    def alloc(self, nbytes):
        n = max(1, -(-nbytes // self.lay.cluster_bytes))
        if self.next + n > self.lay.clusters + 2:
            raise HostDirError("the host directory does not fit in the disk")
        first = self.next
        for i in range(n):
            c = first + i
            self.fat[c] = c + 1 if i < n - 1 else self.eoc()
        self.next += n
        return first

    def put(self, cluster, data):
        off = self.lay.cluster_offset(cluster)
        self.img[off:off + len(data)] = data

    def flush_fat(self):
        lay = self.lay
        if lay.fat_bits == 12:
            raw = bytearray((len(self.fat) * 3 + 1) // 2 + 1)
            for i, v in enumerate(self.fat):
                off = i * 3 // 2
                if i & 1:
                    raw[off] = (raw[off] & 0x0F) | (v << 4 & 0xF0)
                    raw[off + 1] = v >> 4 & 0xFF
                else:
                    raw[off] = v & 0xFF
                    raw[off + 1] = (raw[off + 1] & 0xF0) | (v >> 8 & 0x0F)
        else:
            raw = b"".join(struct.pack("<H", v) for v in self.fat)
        for k in range(lay.fats):
            off = (lay.fat_start + k * lay.fat_sectors) * SECTOR_SIZE
            self.img[off:off + len(raw)] = raw[:lay.fat_sectors * SECTOR_SIZE]


def _dirent(name, attr, cluster, size):
    return _fields(name) + bytes([attr]) + bytes(10) + struct.pack(
        "<HHHI", 0x0000, 0x0021, cluster, size)          # time 00:00, date 1980-01-01


def _dir_entries_for(node):
    out = [b".          " + _dirent("A", ATTR_DIR, node.cluster, 0)[11:],
           b"..         " + _dirent("A", ATTR_DIR, node.parent_cluster, 0)[11:]]
    for n in node.children:
        attr = ATTR_DIR if n.is_dir else 0x20
        out.append(_dirent(n.dos, attr, n.cluster, 0 if n.is_dir else len(n.data)))
    return out


# ---------------------------------------------------------------------------
# the disk
# ---------------------------------------------------------------------------

class HostDirDisk:
    """A FAT disk built from a host directory (see the module docstring).
    ``mode``: ``rw`` (written back by ``sync``), ``readonly`` (writes fail
    with write protect) or ``cow`` (guest writes stay in memory, never
    written back)."""

    def __init__(self, path, mode=MODE_RW, kind=None):
        self.path = os.path.abspath(os.fspath(path))
        if mode not in (MODE_RW, MODE_READONLY, MODE_COW):
            raise HostDirError(f"unknown disk mode {mode!r}")
        self.mode = mode
        self.media_changed = False
        self.skipped = []
        self.conflicts = []
        self._root_fd = None
        try:
            self._root_fd = os.open(self.path, O_DIR)
        except FileNotFoundError:
            raise HostDirError(f"host directory {path!r}: no such directory") from None
        except NotADirectoryError:
            raise HostDirError(f"host directory {path!r} is not a directory") from None
        except OSError as exc:
            raise HostDirError(f"host directory {path!r}: {exc.strerror}") from None
        try:
            self._build(kind)
        except BaseException:
            self.close()
            raise

    # -- building ----------------------------------------------------------------
    def _build(self, kind):
        nodes = read_tree(self._root_fd, self.skipped)
        flop = floppy_layout()
        need = _tree_bytes(nodes, flop.cluster_bytes)
        if kind != KIND_HDD and (kind == KIND_FLOPPY or need <= FLOPPY_LIMIT) and \
                need <= flop.clusters * flop.cluster_bytes and len(nodes) <= flop.root_entries:
            lay = flop
            self.kind = KIND_FLOPPY
            cyls = 80
            total_disk = 2880
        else:
            if kind == KIND_FLOPPY:
                raise HostDirError(f"host directory {self.path!r} does not fit on a floppy")
            lay = hdd_layout(_tree_bytes(nodes, 2048))
            self.kind = KIND_HDD
            cyls = lay.disk_cylinders
            total_disk = cyls * lay.heads * lay.spt
            if len(nodes) > lay.root_entries:
                raise HostDirError(f"host directory {self.path!r}: more than "
                                   f"{lay.root_entries} entries at the top")
        self.layout = lay
        self.cylinders, self.heads, self.sectors = cyls, lay.heads, lay.spt
        self.total_sectors = total_disk
        self.size = total_disk * SECTOR_SIZE
        img = bytearray(self.size)
        self._boot_records(img, lay)
        fw = FatWriter(img, lay)
        self._assign(nodes, fw, 0)
        fw.flush_fat()
        self._data = img
        self._baseline = self._scan()
        self._hosts = self._host_map(nodes, ())

    def _assign(self, nodes, fw, parent_cluster):
        """Allocate and write every node; the root directory entries too."""
        for n in nodes:
            if n.is_dir:
                n.cluster = fw.alloc((len(n.children) + 2) * 32)
                n.parent_cluster = parent_cluster
            else:
                n.cluster = fw.alloc(len(n.data)) if n.data else 0
                if n.data:
                    fw.put(n.cluster, n.data)
        for n in nodes:
            if n.is_dir:
                self._assign(n.children, fw, n.cluster)
                raw = b"".join(_dir_entries_for(n))
                fw.put(n.cluster, raw)
        if parent_cluster == 0:
            raw = b"PYPCHOSTDIR" + bytes([ATTR_VOLUME]) + bytes(20)
            raw += b"".join(_dirent(n.dos, ATTR_DIR if n.is_dir else 0x20, n.cluster,
                                    0 if n.is_dir else len(n.data)) for n in nodes)
            off = fw.lay.root_start * SECTOR_SIZE
            fw.img[off:off + len(raw)] = raw

    def _boot_records(self, img, lay):
        # boot sector: a jump over the BPB to "INT 18h" (not a system disk)
        bs = bytearray(SECTOR_SIZE)
        bs[0:3] = b"\xEB\x3C\x90"
        bs[3:11] = b"PYPCHOST"
        total16 = lay.total if lay.total < 65536 else 0
        struct.pack_into("<HBHBHHBHHHI", bs, 11, SECTOR_SIZE, lay.spc, lay.reserved, lay.fats,
                         lay.root_entries, total16, lay.media, lay.fat_sectors, lay.spt,
                         lay.heads, lay.part_start)
        bs[36] = 0x80 if lay.fat_bits == 16 else 0x00
        bs[38] = 0x29
        bs[39:43] = b"PYPC"
        bs[43:54] = b"PYPCHOSTDIR"
        bs[54:62] = b"FAT12   " if lay.fat_bits == 12 else b"FAT16   "
        bs[62:64] = b"\xCD\x18"                         # INT 18h
        bs[510:512] = b"\x55\xAA"
        off = lay.part_start * SECTOR_SIZE
        img[off:off + SECTOR_SIZE] = bs
        if lay.part_start:
            mbr = bytearray(SECTOR_SIZE)
            mbr[0:2] = b"\xCD\x18"
            start, size = lay.part_start, lay.total
            end = start + size - 1

            def chs(lba):
                c, rem = divmod(lba, lay.heads * lay.spt)
                h, s = divmod(rem, lay.spt)
                return bytes([h, ((c >> 2) & 0xC0) | (s + 1), c & 0xFF])
            ptype = 0x04 if size < 65536 and size * SECTOR_SIZE < 32 * 1024 * 1024 else 0x06
            mbr[0x1BE:0x1CE] = bytes([0x80]) + chs(start) + bytes([ptype]) + chs(end) + \
                struct.pack("<II", start, size)
            mbr[510:512] = b"\x55\xAA"
            img[0:SECTOR_SIZE] = mbr

    # -- the DiskImage interface ----------------------------------------------------
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
        return floppy_drive_type(self.cylinders, self.heads, self.sectors) if self.is_floppy else 0

    @property
    def cow_file(self):
        return None

    def describe(self):
        c, h, s = self.geometry
        return f"{self.path}/: host directory as {self.kind} {c}x{h}x{s}, {self.mode}"

    def chs_to_lba(self, cylinder, head, sector):
        if not (0 <= cylinder < self.cylinders and 0 <= head < self.heads
                and 1 <= sector <= self.sectors):
            raise DiskRangeError(f"CHS {cylinder}/{head}/{sector} outside the disk")
        return (cylinder * self.heads + head) * self.sectors + sector - 1

    def lba_to_chs(self, lba):
        if not 0 <= lba < self.total_sectors:
            raise DiskRangeError(f"LBA {lba} outside the disk")
        cyl, rem = divmod(lba, self.heads * self.sectors)
        head, sec = divmod(rem, self.sectors)
        return cyl, head, sec + 1

    def _check(self, lba, count):
        if self._data is None:
            raise DiskImageError(f"host directory {self.path!r} is closed")
        if count < 0 or lba < 0 or lba + count > self.total_sectors:
            raise DiskRangeError(f"sectors {lba}..{lba + count - 1} outside the disk")

    def read_sectors(self, lba, count=1):
        self._check(lba, count)
        return bytes(self._data[lba * SECTOR_SIZE:(lba + count) * SECTOR_SIZE])

    def write_sectors(self, lba, data):
        data = bytes(data)
        if len(data) % SECTOR_SIZE:
            raise ValueError("write_sectors needs whole 512-byte sectors")
        self._check(lba, len(data) // SECTOR_SIZE)
        if self.readonly:
            raise DiskWriteProtected(f"host directory {self.path!r} is read-only")
        self._data[lba * SECTOR_SIZE:lba * SECTOR_SIZE + len(data)] = data

    def to_bytes(self):
        return bytes(self._data)

    @property
    def overlay_sectors(self):
        return []

    def mark_changed(self):
        self.media_changed = True

    def take_changed(self):
        changed, self.media_changed = self.media_changed, False
        return changed

    def get_state(self):
        return {"media_changed": bool(self.media_changed), "overlay": {}}

    def set_state(self, state):
        self.media_changed = bool(state.get("media_changed", False))

    # -- reading the guest's file system back ------------------------------------------
    def _fat_get(self, n):
        lay = self.layout
        base = lay.fat_start * SECTOR_SIZE
        if lay.fat_bits == 12:
            off = base + n * 3 // 2
            v = self._data[off] | self._data[off + 1] << 8
            return v >> 4 if n & 1 else v & 0xFFF
        return struct.unpack_from("<H", self._data, base + 2 * n)[0]

    def _chain(self, first):
        lay = self.layout
        eoc = 0xFF8 if lay.fat_bits == 12 else 0xFFF8
        out, seen = [], set()
        c = first
        while 2 <= c < lay.clusters + 2 and c not in seen:
            seen.add(c)
            out.append(c)
            c = self._fat_get(c)
            if c >= eoc:
                break
        return out

    def _read_chain(self, first, size=None):
        lay = self.layout
        parts = []
        for c in self._chain(first):
            off = lay.cluster_offset(c)
            parts.append(bytes(self._data[off:off + lay.cluster_bytes]))
        data = b"".join(parts)
        return data if size is None else data[:size]

    def _entries(self, raw):
        for i in range(0, len(raw) - 31, 32):
            e = raw[i:i + 32]
            if e[0] == 0x00:
                return
            if e[0] == 0xE5 or e[11] == ATTR_LFN or e[11] & ATTR_VOLUME:
                continue
            yield e

    def _scan(self):
        """{DOS path tuple: (is_dir, first cluster, data or None)} of the
        guest's file system, and the refused names in ``self._refused``."""
        lay = self.layout
        self._refused = []
        tree = {}
        root = bytes(self._data[lay.root_start * SECTOR_SIZE:lay.data_start * SECTOR_SIZE])
        todo = [((), root)]
        seen_dirs = set()
        while todo:
            path, raw = todo.pop()
            for e in self._entries(raw):
                if e[0:11] in (b".          ", b"..         "):
                    continue
                name = _entry_name(e[0:11].replace(b"\x05", b"\xE5", 1))
                if name is None:
                    self._refused.append("/".join(path + (repr(bytes(e[0:11])),)))
                    continue
                first = struct.unpack_from("<H", e, 26)[0]
                size = struct.unpack_from("<I", e, 28)[0]
                p = path + (name,)
                if e[11] & ATTR_DIR:
                    tree[p] = (True, first, None)
                    if first and first not in seen_dirs:
                        seen_dirs.add(first)
                        todo.append((p, self._read_chain(first)))
                else:
                    tree[p] = (False, first, self._read_chain(first, size) if first else b"")
        return tree

    def _host_map(self, nodes, path):
        out = {}
        for n in nodes:
            p = path + (n.dos,)
            out[p] = {"host": n.host, "st": n.st}
            if n.is_dir:
                out.update(self._host_map(n.children, p))
        return out

    # -- host side, one component at a time ---------------------------------------------
    def _host_parts(self, dos_path):
        """Host names for a DOS path: known ones from the map, else the
        DOS name itself (validated)."""
        parts = []
        for i in range(len(dos_path)):
            known = self._hosts.get(dos_path[:i + 1])
            name = known["host"] if known else dos_path[i]
            if not known and not dos_name_ok(name):
                raise HostDirError(f"refused name {name!r}")
            if name in ("", ".", "..") or "/" in name or "\0" in name:
                raise HostDirError(f"refused name {name!r}")
            parts.append(name)
        return parts

    def _open_parent(self, dos_path):
        """(fd of the host directory holding the entry, its host name)."""
        parts = self._host_parts(dos_path)
        fd = os.dup(self._root_fd)
        try:
            for comp in parts[:-1]:
                nfd = os.open(comp, O_DIR, dir_fd=fd)
                os.close(fd)
                fd = nfd
        except BaseException:
            os.close(fd)
            raise
        return fd, parts[-1]

    def _host_stat(self, dos_path):
        fd, name = self._open_parent(dos_path)
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        finally:
            os.close(fd)
        return st

    def _unchanged(self, dos_path):
        """The host file is as this disk last saw it."""
        info = self._hosts.get(dos_path)
        st = self._host_stat(dos_path)
        if info is None or st is None or not stat.S_ISREG(st.st_mode):
            return False
        return (st.st_size, st.st_mtime_ns) == tuple(info["st"])

    def _write_file(self, dos_path, data, create):
        fd, name = self._open_parent(dos_path)
        try:
            flags = os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
            if create:
                flags |= os.O_CREAT | os.O_EXCL
            else:
                flags |= os.O_TRUNC
            ffd = os.open(name, flags, 0o644, dir_fd=fd)
            with os.fdopen(ffd, "wb") as fh:
                fh.write(data)
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        finally:
            os.close(fd)
        self._hosts[dos_path] = {"host": name, "st": (st.st_size, st.st_mtime_ns)}

    # -- sync ---------------------------------------------------------------------------
    def sync(self):
        """Apply the guest's changes to the host directory; returns a report
        {"created", "changed", "deleted", "renamed", "mkdir", "rmdir",
        "conflicts", "refused"} (lists of DOS paths / messages)."""
        report = {k: [] for k in ("created", "changed", "deleted", "renamed", "mkdir",
                                  "rmdir", "conflicts", "refused")}
        if self._data is None or self.mode != MODE_RW:
            return report
        new = self._scan()
        report["refused"] = list(self._refused)
        old = self._baseline
        show = "\\".join

        def conflict(path, why):
            msg = f"{show(path)}: {why}; the guest's change was not applied"
            report["conflicts"].append(msg)
            self.conflicts.append(msg)

        gone = {p: v for p, v in old.items() if p not in new}
        added = {p: v for p, v in new.items() if p not in old}
        by_cluster = {v[1]: p for p, v in gone.items() if v[1]}
        # renames / moves: the same first cluster under a new path (shallow first)
        for p in sorted(added, key=len):
            if p not in added:
                continue
            v = added[p]
            src = by_cluster.get(v[1])
            if src is None or src not in gone or gone[src][0] != v[0] or p[:-1] in added:
                continue
            if not v[0] and gone[src][2] != v[2]:
                continue                  # a new file in a reused cluster, not a move
            try:
                if not v[0] and not self._unchanged(src):
                    gone.pop(src)
                    added.pop(p)
                    conflict(src, "changed on the host")
                    continue
                if self._host_stat(p) is not None:
                    gone.pop(src)
                    added.pop(p)
                    conflict(p, "exists on the host")
                    continue
                sfd, sname = self._open_parent(src)
                dfd, dname = self._open_parent(p)
                try:
                    os.rename(sname, dname, src_dir_fd=sfd, dst_dir_fd=dfd)
                finally:
                    os.close(sfd)
                    os.close(dfd)
            except (OSError, HostDirError) as exc:
                conflict(p, str(exc))
                continue
            # the subtree's host names move along
            for q in list(self._hosts):
                if q[:len(src)] == src:
                    info = self._hosts.pop(q)
                    nq = p + q[len(src):]
                    if q == src:
                        info = dict(info, host=dname)
                    self._hosts[nq] = info
            for q in [q for q in gone if q[:len(src)] == src]:
                nq = p + q[len(src):]
                old[nq] = old.pop(q)
                gone.pop(q)
                added.pop(nq, None)
            report["renamed"].append(f"{show(src)} -> {show(p)}")
        # new directories, then new and changed files
        for p in sorted(added, key=len):
            v = added[p]
            try:
                if v[0]:
                    fd, name = self._open_parent(p)
                    try:
                        os.mkdir(name, 0o755, dir_fd=fd)
                    finally:
                        os.close(fd)
                    self._hosts[p] = {"host": name, "st": None}
                    report["mkdir"].append(show(p))
                else:
                    if self._host_stat(p) is not None:
                        conflict(p, "exists on the host")
                        continue
                    self._write_file(p, v[2], create=True)
                    report["created"].append(show(p))
            except FileExistsError:
                conflict(p, "exists on the host")
            except (OSError, HostDirError) as exc:
                conflict(p, str(exc))
        for p, v in new.items():
            if p in added or v[0] or p not in old or old[p][2] == v[2]:
                continue
            try:
                if not self._unchanged(p):
                    conflict(p, "changed on the host")
                    continue
                self._write_file(p, v[2], create=False)
                report["changed"].append(show(p))
            except (OSError, HostDirError) as exc:
                conflict(p, str(exc))
        # deletions: files first, then directories deepest first
        for p in sorted(gone, key=len, reverse=True):
            v = gone[p]
            try:
                if not v[0] and not self._unchanged(p):
                    conflict(p, "changed on the host")
                    continue
                fd, name = self._open_parent(p)
                try:
                    if v[0]:
                        os.rmdir(name, dir_fd=fd)
                    else:
                        os.unlink(name, dir_fd=fd)
                finally:
                    os.close(fd)
                self._hosts.pop(p, None)
                report["rmdir" if v[0] else "deleted"].append(show(p))
            except OSError as exc:
                conflict(p, exc.strerror or str(exc))
            except HostDirError as exc:
                conflict(p, str(exc))
        self._baseline = new
        return report

    def close(self):
        if getattr(self, "_data", None) is not None and self._root_fd is not None:
            try:
                self.sync()
            finally:
                self._data = None
        if self._root_fd is not None:
            os.close(self._root_fd)
            self._root_fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            if self._root_fd is not None:
                os.close(self._root_fd)
                self._root_fd = None
        except Exception:
            pass
