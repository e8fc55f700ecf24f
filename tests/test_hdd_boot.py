"""Booting from a hard-disk image (C:) with the built-in BIOS: geometry from
the MBR's partition table or from --hdd-geometry, INT 13h AH=08h for 80h."""

import hashlib
import struct

from pypc_core.machine import Machine, MachineConfig

CYLS, HEADS, SECTORS = 306, 4, 17            # a 10 MB XT disk


def mbr():
    """xor ax,ax / mov ds,ax / mov [0600h],dl / mov ah,08h / mov dl,80h /
    int 13h / mov [0602h],cx / mov [0604h],dx / mov si,msg / mov ah,0Eh /
    xor bx,bx / next: lodsb / or al,al / jz done / int 10h / jmp next /
    done: sti / hlt / jmp done"""
    code = bytearray([0x31, 0xC0, 0x8E, 0xD8, 0x88, 0x16, 0x00, 0x06,
                      0xB4, 0x08, 0xB2, 0x80, 0xCD, 0x13,
                      0x89, 0x0E, 0x02, 0x06, 0x89, 0x16, 0x04, 0x06])
    fix = len(code) + 1
    code += bytes([0xBE, 0x00, 0x00, 0xB4, 0x0E, 0x31, 0xDB])
    loop = len(code)
    code += bytes([0xAC, 0x08, 0xC0, 0x74, 0x04, 0xCD, 0x10])
    code += bytes([0xEB, (loop - (len(code) + 2)) & 0xFF])
    done = len(code)
    code += bytes([0xFB, 0xF4, 0xEB, (done - (len(code) + 4)) & 0xFF])
    msg = 0x7C00 + len(code)
    code[fix:fix + 2] = struct.pack("<H", msg)
    code += b"HDD BOOT OK\0"
    sector = bytearray(512)
    sector[:len(code)] = code
    # one active partition from C0/H1/S1 to the last cylinder, head 3, sector 17
    end_cyl = CYLS - 1
    entry = bytes([0x80, 1, 1, 0, 0x01, HEADS - 1,
                   SECTORS | ((end_cyl >> 8) << 6), end_cyl & 0xFF])
    entry += struct.pack("<II", SECTORS, CYLS * HEADS * SECTORS - SECTORS)
    sector[0x1BE:0x1CE] = entry
    sector[510:512] = b"\x55\xAA"
    return bytes(sector)


def disk(tmp_path, geometry_in_mbr=True):
    path = tmp_path / "c.img"
    image = bytearray(CYLS * HEADS * SECTORS * 512)
    sector0 = bytearray(mbr())
    if not geometry_in_mbr:
        sector0[0x1BE:0x1FE] = bytes(64)
    image[:512] = sector0
    path.write_bytes(bytes(image))
    return path


def boot(path, **config):
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    with Machine(MachineConfig(hdd=str(path), **config)) as m:
        assert m.run_until_text("HDD BOOT OK", 10), "\n".join(m.screen_text())
        result = (m.memory.read_byte(0x600), m.memory.read_word(0x602),
                  m.memory.read_word(0x604), m.disks[0x80].geometry)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    return result


def check_geometry(cx, dx):
    max_cyl = ((cx & 0xC0) << 2) | (cx >> 8)
    assert cx & 0x3F == SECTORS
    assert dx >> 8 == HEADS - 1
    assert dx & 0xFF == 1                          # one hard disk
    assert CYLS - 3 <= max_cyl <= CYLS - 1         # (BIOSes may keep a diagnostic cylinder)


def test_boots_c_with_the_geometry_of_its_partition_table(tmp_path):
    drive, cx, dx, geometry = boot(disk(tmp_path))
    assert drive == 0x80
    assert geometry == (CYLS, HEADS, SECTORS)
    check_geometry(cx, dx)


def test_hdd_geometry_option_when_the_disk_has_no_partition_table(tmp_path):
    drive, cx, dx, geometry = boot(disk(tmp_path, geometry_in_mbr=False),
                                   hdd_geometry=(CYLS, HEADS, SECTORS))
    assert drive == 0x80 and geometry == (CYLS, HEADS, SECTORS)
    check_geometry(cx, dx)
