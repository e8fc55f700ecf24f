"""The XT-IDE style card (plugins/xtide) and its option ROM: the ROM
installs itself as drive 80h when the system BIOS has no hard disk of its
own, and a boot loader that does what a BIOS's INT 19h does boots C:
through it.  (No third-party BIOS image is committed; with one, the same
ROM serves its INT 19h.)"""

import argparse
import os
import struct
import subprocess

import pytest

from pypc_core.machine import Machine, MachineConfig
from pypc_core.storage import DiskImage
from pypc_plugins.xtide import XtIde, rom_image
from pypc_plugins.xtide import xtide as X
from guest import HERE, IMAGE_360K, find_nasm, make_floppy

GEOMETRY = (20, 4, 17)


def guest(name):
    with open(os.path.join(HERE, name + ".bin"), "rb") as fh:
        return fh.read()


def hd_image(path):
    c, h, s = GEOMETRY
    data = bytearray(c * h * s * 512)
    data[:512] = guest("fdc_xthd")
    for lba in range(1, c * h * s):
        data[lba * 512:lba * 512 + 2] = struct.pack("<H", lba)
    with open(path, "wb") as fh:
        fh.write(data)
    return path


def word(m, addr):
    return m.memory.read_word(addr)


def test_option_rom_boots_c_and_serves_int13(tmp_path):
    floppy = make_floppy(str(tmp_path / "chain.img"), guest("fdc_xtchain"))
    hd = hd_image(str(tmp_path / "hd.img"))
    opts = argparse.Namespace(xtide_image=hd)
    with Machine(MachineConfig(floppy_a=floppy, plugins=["cga", "fdc", "xtide"],
                               options=opts)) as m:
        for _ in range(200):
            m.run_seconds(0.1)
            if word(m, 0x516) == 0x4B4F:
                break
        assert word(m, 0x516) == 0x4B4F, (hex(word(m, 0x500)), m.screen_text()[:4])
        assert any("pypc XT-IDE: drive 80h" in row for row in m.screen_text())
        assert word(m, 0x500) & 0xFF == 0x80                  # booted from C:
        assert word(m, 0x502) == ((19 & 0xFF) << 8) | 17      # CX: last cylinder 19, 17 sectors
        assert word(m, 0x504) == (3 << 8) | 1                 # DX: last head 3, one drive
        assert word(m, 0x506) >> 8 == 3                       # AH=15h: fixed disk
        assert (word(m, 0x508) << 16 | word(m, 0x50A)) == 20 * 4 * 17
        assert word(m, 0x50C) == 0x0002 and word(m, 0x50E) == 0x0002
        assert m.memory.read(0x9000, 1024) == b"HK" * 512
        assert word(m, 0x510) >> 8 == 0x04 and word(m, 0x512) == 1   # sector 63: not found
        assert word(m, 0x514) >> 8 == 0x04                    # AH=01h: the last status
        assert m.memory.read_word(0x413) == 639               # 1 KiB for the table
    with open(hd, "rb") as fh:
        data = fh.read()
    lba = (0 * 4 + 1) * 17 + 1
    assert data[lba * 512:(lba + 2) * 512] == b"HK" * 512      # written through the card


def test_rom_stands_down_when_the_bios_has_drive_80h(tmp_path):
    floppy = make_floppy(str(tmp_path / "f.img"), bytes([0xF4, 0xEB, 0xFD]) + bytes(507)
                         + b"\x55\xaa")
    hd = hd_image(str(tmp_path / "hd.img"))
    hd2 = hd_image(str(tmp_path / "hd2.img"))
    opts = argparse.Namespace(xtide_image=hd2)
    with Machine(MachineConfig(floppy_a=floppy, hdd=hd, plugins=["cga", "fdc", "xtide"],
                               options=opts)) as m:
        m.run_seconds(1.5)
        assert m.memory.read_byte(0x475) == 1                 # the built-in BIOS's own drive
        assert m.memory.read_word(0x413) == 640
        assert not any("XT-IDE" in row for row in m.screen_text())


def rig(mode="rw"):
    c, h, s = GEOMETRY
    disk = DiskImage.from_bytes(bytes(c * h * s * 512), kind="hdd", mode=mode,
                                geometry=GEOMETRY)
    return XtIde(disk), disk


def test_card_registers_identify_read_write_and_errors():
    card, disk = rig()
    card.port_write(0x306, 0xA0)
    card.port_write(0x307, 0xEC)
    assert card.port_read(0x307) & 0x08                      # DRQ
    ident = bytes(card.port_read(0x300) for _ in range(512))
    assert struct.unpack_from("<3H", ident, 2 * 1)[0] == 20
    assert struct.unpack_from("<H", ident, 2 * 3)[0] == 4
    assert struct.unpack_from("<H", ident, 2 * 6)[0] == 17
    assert b"pypc XT-IDE disk" in bytes(x for pair in zip(ident[55::2], ident[54::2])
                                        for x in pair)
    assert card.port_read(0x307) == 0x50                     # DRDY DSC
    # write 2 sectors at C1 H2 S16 (runs into S17), read them back
    for port, v in ((0x302, 2), (0x303, 16), (0x304, 1), (0x305, 0), (0x306, 0xA2)):
        card.port_write(port, v)
    card.port_write(0x307, 0x30)
    for i in range(1024):
        card.port_write(0x300, i & 0xFF)
    assert card.port_read(0x307) == 0x50
    lba = (1 * 4 + 2) * 17 + 15
    assert disk.read_sectors(lba, 2) == bytes(range(256)) * 4
    assert card.port_read(0x303) == 17                       # the task file: last sector
    card.port_write(0x303, 16)
    card.port_write(0x302, 2)
    card.port_write(0x307, 0x20)
    assert bytes(card.port_read(0x300) for _ in range(1024)) == bytes(range(256)) * 4
    # LBA addressing
    card.port_write(0x306, 0xE0)
    card.port_write(0x303, lba & 0xFF)
    card.port_write(0x304, lba >> 8)
    card.port_write(0x305, 0)
    card.port_write(0x302, 1)
    card.port_write(0x307, 0x20)
    assert bytes(card.port_read(0x300) for _ in range(4)) == bytes(range(4))
    # errors: sector 18 (IDNF), an unknown command (ABRT), the absent slave
    card.port_write(0x306, 0xA0)
    card.port_write(0x303, 18)
    card.port_write(0x307, 0x20)
    assert card.port_read(0x307) & 0x01 and card.port_read(0x301) == X.E_IDNF
    card.port_write(0x307, 0xC8)
    assert card.port_read(0x301) == X.E_ABRT
    card.port_write(0x306, 0xB0)
    assert card.port_read(0x307) == 0x00
    # a read-only image refuses writes
    card, disk = rig(mode="readonly")
    card.port_write(0x303, 1)
    card.port_write(0x307, 0x30)
    assert card.port_read(0x307) & 0x21 == 0x21 and card.port_read(0x301) == X.E_ABRT


def test_rom_image_checksum_and_header():
    rom = rom_image()
    assert len(rom) == 2048 and rom[:3] == b"\x55\xaa\x04" and sum(rom) & 0xFF == 0


def test_committed_rom_matches_source(tmp_path):
    nasm = find_nasm()
    if not nasm:
        pytest.skip("nasm not installed")
    src = os.path.join(os.path.dirname(X.__file__), "xtide.asm")
    out = tmp_path / "rom.bin"
    subprocess.run([nasm, "-f", "bin", "-o", str(out), src], check=True)
    import importlib.resources
    assert out.read_bytes() == \
        importlib.resources.files("pypc_plugins.xtide").joinpath(X.ROM_NAME).read_bytes()
    for name in ("fdc_xtchain", "fdc_xthd"):
        out = tmp_path / (name + ".bin")
        subprocess.run([nasm, "-f", "bin", "-o", str(out), os.path.join(HERE, name + ".asm")],
                       check=True)
        assert out.read_bytes() == guest(name)


def test_the_card_gets_its_drive_from_its_board_as_the_machine_opens_its_own(tmp_path):
    # one attach protocol: the card asks its board (board.open_disk), never
    # the Machine: the machine's --cow applies, the machine closes the image,
    # and the same image as a writable drive is refused with one line
    from pypc_core.errors import PypcError
    floppy = make_floppy(str(tmp_path / "f.img"), bytes([0xF4]) + bytes(509) + b"\x55\xaa")
    hd = hd_image(str(tmp_path / "hd.img"))
    before = open(hd, "rb").read()
    opts = argparse.Namespace(xtide_image=hd)
    with Machine(MachineConfig(floppy_a=floppy, plugins=["cga", "fdc", "xtide"],
                               options=opts, cow=True)) as m:
        card = m.device("xtide")
        assert card.disk.path == hd and card.disk in m._card_disks
        card.disk.write_sectors(0, bytes(512))
        assert card.disk.read_sectors(0) == bytes(512)
    assert open(hd, "rb").read() == before             # --cow: the image never changed
    from pypc_core.storage import DiskImageError
    with pytest.raises(DiskImageError, match="is closed"):
        card.disk.read_sectors(0)                       # the machine closed it
    with pytest.raises(PypcError, match=r"is both drive C: \(--hdd\) and the --xtide-image"):
        Machine(MachineConfig(floppy_a=floppy, hdd=hd, plugins=["cga", "fdc", "xtide"],
                              options=opts))
    assert open(hd, "rb").read() == before
