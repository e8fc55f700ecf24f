"""Disk images: geometry, modes, locking, copy-on-write, errors."""

import hashlib
import os
import struct

import pytest

from pypc_core.errors import PypcError
from pypc_core.storage import (
    DiskImage, DiskImageError, DiskRangeError, DiskWriteProtected,
    default_hdd_geometry, parse_geometry,
)


def make_image(path, size, pattern=True):
    data = bytearray(size)
    if pattern:
        for lba in range(size // 512):
            data[lba * 512:lba * 512 + 4] = struct.pack("<I", lba)
    path.write_bytes(bytes(data))
    return path


def fingerprint(path):
    st = os.stat(path)
    return hashlib.sha256(path.read_bytes()).hexdigest(), st.st_mtime_ns, st.st_size


@pytest.mark.parametrize("kib,geometry,dtype", [
    (160, (40, 1, 8), 1), (180, (40, 1, 9), 1), (320, (40, 2, 8), 1),
    (360, (40, 2, 9), 1), (720, (80, 2, 9), 3), (1200, (80, 2, 15), 2),
    (1440, (80, 2, 18), 4),
])
def test_floppy_geometry_from_size(tmp_path, kib, geometry, dtype):
    path = make_image(tmp_path / "f.img", kib * 1024, pattern=False)
    with DiskImage(path, "floppy") as d:
        assert d.geometry == geometry
        assert d.is_floppy and d.drive_type == dtype
        assert d.total_sectors == kib * 2


@pytest.mark.parametrize("size", [1000, 368640 + 512, 512 * 7])
def test_unknown_floppy_size_is_a_clear_error(tmp_path, size):
    path = make_image(tmp_path / "odd.img", size, pattern=False)
    before = fingerprint(path)
    with pytest.raises(DiskImageError) as e:
        DiskImage(path, "floppy")
    msg = str(e.value)
    assert "unknown size" in msg and str(size) in msg and "\n" not in msg
    assert isinstance(e.value, PypcError)
    assert fingerprint(path) == before


def test_bad_paths(tmp_path):
    with pytest.raises(DiskImageError, match="no such file"):
        DiskImage(tmp_path / "missing.img", "floppy")
    with pytest.raises(DiskImageError, match="directory"):
        DiskImage(tmp_path, "floppy")
    empty = tmp_path / "empty.img"
    empty.write_bytes(b"")
    with pytest.raises(DiskImageError, match="empty"):
        DiskImage(empty, "hdd")


def test_read_write_in_place(tmp_path):
    path = make_image(tmp_path / "a.img", 368640)
    with DiskImage(path, "floppy") as d:
        assert d.read_sectors(5, 1)[:4] == struct.pack("<I", 5)
        d.write_sectors(7, b"\xAB" * 1024)
        assert d.read_sectors(7, 2) == b"\xAB" * 1024
    data = path.read_bytes()
    assert data[7 * 512:9 * 512] == b"\xAB" * 1024
    assert data[9 * 512:9 * 512 + 4] == struct.pack("<I", 9)


def test_readonly_writes_fail_and_leave_image(tmp_path):
    path = make_image(tmp_path / "ro.img", 368640)
    before = fingerprint(path)
    with DiskImage(path, "floppy", mode="readonly") as d:
        assert d.readonly
        with pytest.raises(DiskWriteProtected):
            d.write_sectors(0, bytes(512))
        assert d.read_sectors(0, 1)[:4] == struct.pack("<I", 0)
    assert fingerprint(path) == before


def test_cow_never_touches_image(tmp_path):
    path = make_image(tmp_path / "cow.img", 737280)
    before = fingerprint(path)
    with DiskImage(path, "floppy", mode="cow") as d:
        d.write_sectors(10, b"\x55" * 512)
        d.write_sectors(11, b"\x66" * 512)
        assert d.read_sectors(9, 3) == (struct.pack("<I", 9) + bytes(508)
                                        + b"\x55" * 512 + b"\x66" * 512)
        assert d.overlay_sectors == [10, 11]
    assert fingerprint(path) == before


def test_cow_side_file_persists(tmp_path):
    path = make_image(tmp_path / "p.img", 368640)
    side = tmp_path / "p.img.cow"
    before = fingerprint(path)
    with DiskImage(path, "floppy", mode="cow", cow_file=side) as d:
        d.write_sectors(3, b"\x11" * 512)
        d.write_sectors(3, b"\x22" * 512)
        d.write_sectors(700, b"\x33" * 512)
    assert side.exists()
    with DiskImage(path, "floppy", mode="cow", cow_file=side) as d:
        assert d.read_sectors(3, 1) == b"\x22" * 512
        assert d.read_sectors(700, 1) == b"\x33" * 512
        assert d.read_sectors(4, 1)[:4] == struct.pack("<I", 4)
    assert fingerprint(path) == before
    # an unused side file is not left behind
    with DiskImage(path, "floppy", mode="cow", cow_file=tmp_path / "unused.cow"):
        pass
    assert not (tmp_path / "unused.cow").exists()
    # a side file of another image is refused
    other = make_image(tmp_path / "q.img", 737280)
    with pytest.raises(DiskImageError, match="belongs to an image"):
        DiskImage(other, "floppy", mode="cow", cow_file=side)


def test_locking(tmp_path):
    path = make_image(tmp_path / "l.img", 368640)
    before = fingerprint(path)
    a = DiskImage(path, "floppy")
    with pytest.raises(DiskImageError, match="in use by another pypc instance"):
        DiskImage(path, "floppy")
    with pytest.raises(DiskImageError, match="in use"):
        DiskImage(path, "floppy", mode="readonly")
    with pytest.raises(DiskImageError, match="in use"):
        DiskImage(path, "floppy", mode="cow")
    a.close()
    r1 = DiskImage(path, "floppy", mode="readonly")
    r2 = DiskImage(path, "floppy", mode="cow")          # readers share
    with pytest.raises(DiskImageError, match="in use"):
        DiskImage(path, "floppy")
    r1.close()
    r2.close()
    DiskImage(path, "floppy").close()
    assert fingerprint(path) == before


def test_cow_side_file_is_locked(tmp_path):
    path = make_image(tmp_path / "s.img", 368640)
    side = tmp_path / "s.cow"
    a = DiskImage(path, "floppy", mode="cow", cow_file=side)
    with pytest.raises(DiskImageError, match="copy-on-write file .* in use"):
        DiskImage(path, "floppy", mode="cow", cow_file=side)
    a.close()


def test_permission_hint(tmp_path):
    # owner may write but not read: opening it fails, with a hint (a file
    # without the owner write bit opens read-only instead: test_readonly_image.py)
    path = make_image(tmp_path / "perm.img", 368640)
    os.chmod(path, 0o200)
    try:
        if os.access(path, os.R_OK):          # running as root: permissions do not apply
            pytest.skip("root can read any file")
        with pytest.raises(DiskImageError, match="--readonly or --cow"):
            DiskImage(path, "floppy")
    finally:
        os.chmod(path, 0o644)


def test_chs_addressing(tmp_path):
    path = make_image(tmp_path / "c.img", 368640)
    with DiskImage(path, "floppy", mode="readonly") as d:
        assert d.chs_to_lba(0, 0, 1) == 0
        assert d.chs_to_lba(0, 1, 1) == 9
        assert d.chs_to_lba(1, 0, 1) == 18
        assert d.chs_to_lba(39, 1, 9) == 719
        for lba in (0, 8, 9, 17, 18, 719):
            assert d.chs_to_lba(*d.lba_to_chs(lba)) == lba
        for bad in ((0, 0, 0), (0, 0, 10), (0, 2, 1), (40, 0, 1)):
            with pytest.raises(DiskRangeError):
                d.chs_to_lba(*bad)
        with pytest.raises(DiskRangeError):
            d.read_sectors(719, 2)


def _mbr(end_head, end_sector, end_cyl, start, size):
    sector = bytearray(512)
    entry = bytes([0x80, 1, 1, 0, 0x06, end_head, ((end_cyl >> 2) & 0xC0) | end_sector,
                   end_cyl & 0xFF]) + struct.pack("<II", start, size)
    sector[0x1BE:0x1CE] = entry
    sector[510:512] = b"\x55\xaa"
    return bytes(sector)


def test_hdd_geometry_sources(tmp_path):
    # explicit
    path = make_image(tmp_path / "h.img", 100 * 4 * 17 * 512, pattern=False)
    with DiskImage(path, "hdd", geometry=(50, 4, 17), mode="readonly") as d:
        assert d.geometry == (50, 4, 17) and not d.is_floppy and d.drive_type == 0
    with pytest.raises(DiskImageError, match="needs"):
        DiskImage(path, "hdd", geometry=(200, 4, 17))
    # default: 17 sectors, 4 heads
    with DiskImage(path, "hdd", mode="readonly") as d:
        assert d.geometry == (100, 4, 17) and d.geometry_source == "default"
    # MBR with 8 heads, 26 sectors
    total = 60 * 8 * 26
    data = bytearray(total * 512)
    data[:512] = _mbr(7, 26, 59, 26, total - 26)
    mbr = tmp_path / "mbr.img"
    mbr.write_bytes(bytes(data))
    with DiskImage(mbr, "hdd", mode="readonly") as d:
        assert d.geometry == (60, 8, 26) and d.geometry_source == "mbr"
    # a big disk gets more heads by default
    assert default_hdd_geometry(2000 * 4 * 17) == (16, 17)
    # too small for a hard disk
    small = make_image(tmp_path / "small.img", 512 * 10, pattern=False)
    with pytest.raises(DiskImageError, match="too small"):
        DiskImage(small, "hdd")
    odd = make_image(tmp_path / "odd.img", 1000, pattern=False)
    with pytest.raises(DiskImageError, match="unknown size"):
        DiskImage(odd, "hdd")


def test_parse_geometry():
    assert parse_geometry("615,4,17") == (615, 4, 17)
    assert parse_geometry(" 20, 2 ,17") == (20, 2, 17)
    for bad in ("615,4", "a,b,c", "0,4,17", "2000,4,17", "10,4,64"):
        with pytest.raises(DiskImageError):
            parse_geometry(bad)


def test_state_round_trip(tmp_path):
    path = make_image(tmp_path / "st.img", 368640)
    with DiskImage(path, "floppy", mode="cow") as d:
        d.write_sectors(2, b"\x77" * 512)
        d.mark_changed()
        state = d.get_state()
    import json
    state = json.loads(json.dumps(state))
    with DiskImage(path, "floppy", mode="cow") as d2:
        d2.set_state(state)
        assert d2.read_sectors(2, 1) == b"\x77" * 512
        assert d2.take_changed() is True
        assert d2.take_changed() is False


def test_from_bytes():
    d = DiskImage.from_bytes(bytes(368640))
    d.write_sectors(1, b"\x01" * 512)
    assert d.to_bytes()[512:1024] == b"\x01" * 512
    ro = DiskImage.from_bytes(bytes(368640), mode="readonly")
    with pytest.raises(DiskWriteProtected):
        ro.write_sectors(0, bytes(512))
