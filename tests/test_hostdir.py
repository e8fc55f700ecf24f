"""--host-dir: a host directory as a FAT disk, and the guest's changes
written back.  The "guest" here is a small FAT writer in this file that
changes the disk only through ``read_sectors``/``write_sectors``, the way
DOS does through INT 13h (COPY allocates clusters, writes the data, the FAT
and a directory entry; DEL marks the entry E5h and frees the chain; REN
rewrites the name; MD allocates a directory cluster with "." and "..")."""

import os
import struct

import pytest

from pypc_core.machine import Machine, MachineConfig, MachineError
from pypc_core.storage.hostdir import HostDirDisk, HostDirError, dos_name_ok
from pypc_core.storage.image import DiskWriteProtected, bpb_geometry, mbr_geometry


class GuestFat:
    """FAT12/16 as DOS keeps it, on a disk seen through sectors only."""

    def __init__(self, disk):
        self.d = disk
        s0 = disk.read_sectors(0, 1)
        self.part = 0
        if s0[0] != 0xEB:                                   # an MBR: first partition
            self.part = struct.unpack_from("<I", s0, 0x1BE + 8)[0]
            s0 = disk.read_sectors(self.part, 1)
        (bps, self.spc, res, self.nfats, self.root_n, tot16, _media, self.fatsz,
         ) = struct.unpack_from("<HBHBHHBH", s0, 11)
        assert bps == 512
        self.fat_start = self.part + res
        self.root_start = self.fat_start + self.nfats * self.fatsz
        self.data_start = self.root_start + self.root_n * 32 // 512
        total = tot16 or struct.unpack_from("<I", s0, 32)[0]
        self.clusters = (total - (self.data_start - self.part)) // self.spc
        self.bits = 12 if self.clusters < 4085 else 16
        self.fat = bytearray(disk.read_sectors(self.fat_start, self.fatsz))

    # FAT
    def get(self, n):
        if self.bits == 12:
            v = self.fat[n * 3 // 2] | self.fat[n * 3 // 2 + 1] << 8
            return v >> 4 if n & 1 else v & 0xFFF
        return struct.unpack_from("<H", self.fat, 2 * n)[0]

    def set(self, n, v):
        if self.bits == 12:
            off = n * 3 // 2
            if n & 1:
                self.fat[off] = (self.fat[off] & 0x0F) | (v << 4 & 0xF0)
                self.fat[off + 1] = v >> 4 & 0xFF
            else:
                self.fat[off] = v & 0xFF
                self.fat[off + 1] = (self.fat[off + 1] & 0xF0) | (v >> 8 & 0x0F)
        else:
            struct.pack_into("<H", self.fat, 2 * n, v)

    def flush(self):
        for k in range(self.nfats):
            self.d.write_sectors(self.fat_start + k * self.fatsz, bytes(self.fat))

    def eoc(self):
        return 0xFFF if self.bits == 12 else 0xFFFF

    def chain(self, c):
        out = []
        while 2 <= c < (0xFF8 if self.bits == 12 else 0xFFF8):
            out.append(c)
            c = self.get(c)
        return out

    def alloc(self, n):
        free = [c for c in range(2, self.clusters + 2) if self.get(c) == 0][:n]
        assert len(free) == n
        for a, b in zip(free, free[1:] + [None]):
            self.set(a, b if b is not None else self.eoc())
        return free

    def csec(self, c):
        return self.data_start + (c - 2) * self.spc

    def read_chain(self, c):
        return b"".join(self.d.read_sectors(self.csec(x), self.spc) for x in self.chain(c))

    # directories: (first sector list) of a directory
    def dir_sectors(self, cluster):
        if cluster == 0:
            return list(range(self.root_start, self.data_start))
        return [self.csec(c) + i for c in self.chain(cluster) for i in range(self.spc)]

    def entries(self, cluster):
        for sec in self.dir_sectors(cluster):
            raw = self.d.read_sectors(sec, 1)
            for i in range(16):
                yield sec, i, raw[32 * i:32 * i + 32]

    def lookup(self, path):
        """(dir cluster, sector, index, entry) of a path like "SUB\\A.TXT"."""
        cluster = 0
        parts = path.split("\\")
        for k, name in enumerate(parts):
            for sec, i, e in self.entries(cluster):
                if e[0] not in (0, 0xE5) and e[:11] == fields(name):
                    if k == len(parts) - 1:
                        return cluster, sec, i, e
                    cluster = struct.unpack_from("<H", e, 26)[0]
                    break
            else:
                return None
        return None

    def put_entry(self, cluster, entry):
        for sec, i, e in self.entries(cluster):
            if e[0] in (0, 0xE5):
                self.set_entry(sec, i, entry)
                return
        raise AssertionError("directory full")

    def set_entry(self, sec, i, entry):
        raw = bytearray(self.d.read_sectors(sec, 1))
        raw[32 * i:32 * i + 32] = entry
        self.d.write_sectors(sec, bytes(raw))

    def parent(self, path):
        if "\\" not in path:
            return 0, path
        head, name = path.rsplit("\\", 1)
        return struct.unpack_from("<H", self.lookup(head)[3], 26)[0], name

    # commands
    def read(self, path):
        e = self.lookup(path)[3]
        first, size = struct.unpack_from("<HI", e, 26)
        return self.read_chain(first)[:size] if first else b""

    def copy(self, path, data):
        cluster, name = self.parent(path)
        csize = self.spc * 512
        first = 0
        if data:
            chain = self.alloc(-(-len(data) // csize))
            first = chain[0]
            for k, c in enumerate(chain):
                part = data[k * csize:(k + 1) * csize]
                self.d.write_sectors(self.csec(c), part + bytes(csize - len(part)))
        self.flush()
        self.put_entry(cluster, entry(name, 0x20, first, len(data)))

    def overwrite(self, path, data):
        self.delete(path)
        self.copy(path, data)

    def delete(self, path):
        _c, sec, i, e = self.lookup(path)
        for c in self.chain(struct.unpack_from("<H", e, 26)[0]):
            self.set(c, 0)
        self.flush()
        self.set_entry(sec, i, b"\xE5" + e[1:])

    def rename(self, path, new):
        _c, sec, i, e = self.lookup(path)
        self.set_entry(sec, i, fields(new) + e[11:])

    def move(self, path, new_path):
        _c, sec, i, e = self.lookup(path)
        cluster, name = self.parent(new_path)
        self.set_entry(sec, i, b"\xE5" + e[1:])
        self.put_entry(cluster, fields(name) + e[11:])

    def mkdir(self, path):
        cluster, name = self.parent(path)
        (c,) = self.alloc(1)
        self.flush()
        blank = bytes(self.spc * 512)
        self.d.write_sectors(self.csec(c), b"".join(
            [entry(".", 0x10, c, 0, raw=b".          "),
             entry("..", 0x10, cluster, 0, raw=b"..         ")]) + blank[64:])
        self.put_entry(cluster, entry(name, 0x10, c, 0))

    def raw_entry(self, cluster, raw11, attr, first, size):
        self.put_entry(cluster, raw11 + bytes([attr]) + bytes(14) + struct.pack("<HI", first, size))


def fields(name):
    base, _d, ext = name.partition(".")
    return base.ljust(8).encode() + ext.ljust(3).encode()


def entry(name, attr, first, size, raw=None):
    return (raw or fields(name)) + bytes([attr]) + bytes(14) + struct.pack("<HI", first, size)


def host_tree(root):
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        for d in dirnames:
            out[os.path.normpath(os.path.join(rel, d))] = None
        for f in filenames:
            p = os.path.join(dirpath, f)
            if os.path.islink(p):
                out[os.path.normpath(os.path.join(rel, f))] = "link"
            else:
                with open(p, "rb") as fh:
                    out[os.path.normpath(os.path.join(rel, f))] = fh.read()
    return out


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "share"
    (root / "SUB").mkdir(parents=True)
    (root / "README.TXT").write_bytes(b"hello\r\n")
    (root / "a long name.text").write_bytes(b"long")
    (root / "SUB" / "BIG.DAT").write_bytes(bytes(range(256)) * 20)
    (root / "OLD").mkdir()
    (root / "OLD" / "GONE.TXT").write_bytes(b"bye")
    return root


def test_a_small_directory_is_a_fat12_floppy(tree):
    with HostDirDisk(tree, mode="cow") as disk:
        assert disk.is_floppy and disk.geometry == (80, 2, 18) and disk.drive_type == 4
        assert bpb_geometry(disk.read_sectors(0, 1)) == (2, 18)
        g = GuestFat(disk)
        assert g.bits == 12
        assert g.read("README.TXT") == b"hello\r\n"
        assert g.read("SUB\\BIG.DAT") == bytes(range(256)) * 20
        assert g.read("ALONGN~1.TEX") == b"long"          # an 8.3 alias of the host name


def test_guest_copy_del_ren_md_and_edit_reach_the_host_exactly(tree):
    disk = HostDirDisk(tree)
    g = GuestFat(disk)
    g.copy("NEW.TXT", b"new file\r\n" * 100)              # COPY CON NEW.TXT
    g.delete("OLD\\GONE.TXT")                             # DEL OLD\GONE.TXT
    g.rename("README.TXT", "READ.ME")                     # REN README.TXT READ.ME
    g.mkdir("MADE")                                       # MD MADE
    g.copy("MADE\\IN.TXT", b"inside")
    g.overwrite("SUB\\BIG.DAT", b"smaller")               # an edited file
    g.rename("ALONGN~1.TEX", "SHORT.TXT")                 # renaming an aliased file
    g.move("SUB\\BIG.DAT", "MADE\\BIG.DAT")                # (a file moved between dirs)
    report = disk.sync()
    assert report["conflicts"] == [] and report["refused"] == []
    assert host_tree(tree) == {
        "NEW.TXT": b"new file\r\n" * 100, "READ.ME": b"hello\r\n", "SHORT.TXT": b"long",
        "OLD": None, "SUB": None, "MADE": None, "MADE/IN.TXT": b"inside",
        "MADE/BIG.DAT": b"smaller"}
    # a second round on the synced state: RD of an emptied directory
    _c, sec, i, e = g.lookup("OLD")
    g.set_entry(sec, i, b"\xE5" + e[1:])
    disk.close()                                          # closing syncs
    assert not (tree / "OLD").exists()
    assert sorted(os.listdir(tree)) == ["MADE", "NEW.TXT", "READ.ME", "SHORT.TXT", "SUB"]


def test_a_conflicting_host_change_is_reported_not_overwritten(tree):
    disk = HostDirDisk(tree)
    g = GuestFat(disk)
    (tree / "README.TXT").write_bytes(b"changed on the host, longer")
    g.overwrite("README.TXT", b"guest version")
    (tree / "SUB" / "BIG.DAT").write_bytes(b"host edit")
    g.delete("SUB\\BIG.DAT")
    (tree / "LATE.TXT").write_bytes(b"host made it")
    g.copy("LATE.TXT", b"guest made it")
    report = disk.sync()
    assert len(report["conflicts"]) == 3 and len(disk.conflicts) == 3
    assert any("README.TXT" in c and "changed on the host" in c for c in report["conflicts"])
    assert (tree / "README.TXT").read_bytes() == b"changed on the host, longer"
    assert (tree / "SUB" / "BIG.DAT").read_bytes() == b"host edit"
    assert (tree / "LATE.TXT").read_bytes() == b"host made it"
    disk.close()


def test_no_path_can_leave_the_directory(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "SECRET.TXT").write_bytes(b"keep")
    root = tmp_path / "share"
    root.mkdir()
    (root / "LINK").symlink_to(outside)                   # a symlink to outside DIR
    (root / "FILE.LNK").symlink_to(outside / "SECRET.TXT")
    before = host_tree(outside)
    disk = HostDirDisk(root)
    assert len(disk.skipped) == 2                        # links are not shown
    g = GuestFat(disk)
    # the guest makes entries with names a path could escape with
    (c,) = g.alloc(1)
    g.flush()
    g.d.write_sectors(g.csec(c), b"x" * 512)
    g.raw_entry(0, b"..         ", 0x20, c, 4)           # ".." as a file in the root
    g.raw_entry(0, b"../SECRET  ", 0x20, c, 4)           # a slash in a name
    g.raw_entry(0, b"\\ETC    TXT", 0x20, c, 4)           # a backslash
    g.raw_entry(0, b"SEC\x00RET TXT", 0x20, c, 4)         # a NUL
    # and through the symlinks' names
    g.copy("LINK", b"over the link")
    g.mkdir("LINKDIR")
    g.rename("LINKDIR", "LINK")                           # a directory where LINK is
    g.copy("FILE.LNK", b"through a file link")
    report = disk.sync()
    assert len(report["refused"]) == 3
    assert report["conflicts"]                            # LINK and FILE.LNK exist on the host
    disk.close()
    assert host_tree(outside) == before                   # nothing outside was touched
    assert (root / "LINK").is_symlink() and (root / "FILE.LNK").is_symlink()
    # every name that reaches the host is a DOS name: none can be a path
    for bad in ("..", ".", "../X", "A/B", "A\\B", "A\0", "TOOLONGNAME.TXT", "X.ABCD", ""):
        assert not dos_name_ok(bad)


def test_readonly_and_cow_modes_never_write_back(tree):
    before = host_tree(tree)
    with HostDirDisk(tree, mode="readonly") as disk:
        with pytest.raises(DiskWriteProtected):
            disk.write_sectors(0, bytes(512))
    with HostDirDisk(tree, mode="cow") as disk:
        GuestFat(disk).copy("NEW.TXT", b"stays in memory")
        assert disk.sync()["created"] == []
    assert host_tree(tree) == before


def test_a_bigger_directory_is_a_fat16_hard_disk(tmp_path):
    root = tmp_path / "big"
    root.mkdir()
    for k in range(3):
        (root / f"PART{k}.BIN").write_bytes(bytes([k]) * 600_000)
    with HostDirDisk(root) as disk:
        assert disk.kind == "hdd"
        s0 = disk.read_sectors(0, 1)
        assert mbr_geometry(s0, disk.total_sectors) == (disk.heads, disk.sectors)
        g = GuestFat(disk)
        assert g.bits == 16 and g.part == disk.sectors
        assert g.read("PART2.BIN") == bytes([2]) * 600_000
        g.copy("NOTE.TXT", b"on C:")
    assert (root / "NOTE.TXT").read_bytes() == b"on C:"


def test_bad_host_dirs_are_clear_errors(tmp_path):
    with pytest.raises(HostDirError, match="no such directory"):
        HostDirDisk(tmp_path / "missing")
    (tmp_path / "f").write_bytes(b"x")
    with pytest.raises(HostDirError, match="not a directory"):
        HostDirDisk(tmp_path / "f")


def test_machine_reads_the_host_dir_through_the_floppy_controller(tree):
    with Machine(MachineConfig(host_dir=str(tree), plugins=["cga", "fdc"])) as m:
        assert m.disks[0].is_floppy
        assert m.run_until_text("No ROM BASIC", 10)       # its boot sector ran: INT 18h
        g = GuestFat(m.disks[0])
        g.copy("FROMVM.TXT", b"written in the machine")
    assert (tree / "FROMVM.TXT").read_bytes() == b"written in the machine"
    img = tree.parent / "f.img"
    img.write_bytes(bytes(368640))
    with pytest.raises(MachineError, match="no free drive"):
        Machine(MachineConfig(host_dir=str(tree), floppy_a=str(img), floppy_b=str(img),
                              readonly=True))
