"""The bus: 1 MiB memory map with 20-bit wrap and page kinds, and the port map."""

import pytest

from pypc_core.bus import (PORT_PYTHON, PORT_UNCLAIMED, MemoryMap, MemoryMapError,
                           PortConflictError, PortMap)
from pypc_core.bus.memory import KIND_DEVICE, KIND_RAM, KIND_ROM, KIND_UNMAPPED


@pytest.fixture
def memory():
    m = MemoryMap()
    m.map_ram(0x00000, 0x10000, owner="ram")          # first 64 KiB
    m.map_rom(0xFE000, bytes(range(256)) * 32, owner="bios")   # 8 KiB at FE000
    return m


# -- memory ----------------------------------------------------------------------

def test_read_wraps_at_1mib(memory):
    memory.write(0x00000, b"\x11\x22\x33")
    # 2 bytes from the ROM's end, then 3 from address 0
    assert memory.read(0xFFFFE, 5) == bytes([0xFE, 0xFF, 0x11, 0x22, 0x33])
    # an address above 20 bits is taken modulo 1 MiB (as the 8088's A20 wrap)
    assert memory.read(0x100000 + 1, 2) == b"\x22\x33"
    assert memory.read_byte(0x100002) == 0x33
    assert memory.read_word(0xFFFFF) == 0x11FF


def test_write_wraps_at_1mib():
    m = MemoryMap()
    m.map_ram(0x00000, 0x1000)
    m.map_ram(0xFF000, 0x1000)
    m.write(0xFFFFE, b"\xAA\xBB\xCC\xDD")
    assert m.read(0xFFFFE, 2) == b"\xAA\xBB"
    assert m.read(0x00000, 2) == b"\xCC\xDD"
    m.write_word(0xFFFFF, 0x1234)            # low byte at FFFFF, high byte at 0
    assert m.read_byte(0xFFFFF) == 0x34
    assert m.read_byte(0x00000) == 0x12
    m.write(0x100010, b"\x77")               # beyond 20 bits wraps too
    assert m.read_byte(0x10) == 0x77


def test_rom_writes_are_ignored(memory):
    before = memory.read(0xFE000, 16)
    memory.write(0xFE000, b"\x00" * 16)
    memory.write_byte(0xFE005, 0x99)
    memory.write_word(0xFFFFE, 0x0000)
    assert memory.read(0xFE000, 16) == before
    assert memory.read(0xFFFFE, 2) == b"\xFE\xFF"
    # loaders and firmware patching may force a write
    memory.write(0xFE000, b"\x5A", force=True)
    assert memory.read_byte(0xFE000) == 0x5A


def test_write_spanning_ram_and_rom_changes_only_ram():
    m = MemoryMap()
    m.map_ram(0x00000, 0x1000)
    m.map_rom(0x01000, b"\xC3" * 0x1000)
    m.write(0x00FFE, b"\x01\x02\x03\x04")
    assert m.read(0x00FFE, 4) == b"\x01\x02\xC3\xC3"


def test_unmapped_reads_ff_and_ignores_writes(memory):
    assert memory.read(0x80000, 4) == b"\xFF" * 4
    assert memory.read_byte(0xA0000) == 0xFF
    memory.write(0x80000, b"\x00\x01")
    assert memory.read(0x80000, 2) == b"\xFF\xFF"


def test_page_kinds_and_regions(memory):
    memory.map_device(0xB8000, 0x4000, owner="cga")
    memory.write(0xB8000, b"A\x07")
    assert memory.read(0xB8000, 2) == b"A\x07"
    kinds = {(base, kind, owner) for base, size, kind, owner in memory.regions()}
    assert (0x00000, KIND_RAM, "ram") in kinds
    assert (0xB8000, KIND_DEVICE, "cga") in kinds
    assert (0xFE000, KIND_ROM, "bios") in kinds
    assert (0x10000, KIND_UNMAPPED, None) in kinds
    total = sum(size for _, size, _, _ in memory.regions())
    assert total == 1 << 20


def test_memory_conflict_names_both_owners(memory):
    with pytest.raises(MemoryMapError) as err:
        memory.map_device(0x0F000, 0x2000, owner="ems")
    assert "ram" in str(err.value) and "ems" in str(err.value)


def test_misaligned_window_is_an_error():
    with pytest.raises(MemoryMapError, match="aligned"):
        MemoryMap().map_ram(0x00100, 0x1000)


# -- ports -----------------------------------------------------------------------

def test_port_conflict_names_both_owners():
    ports = PortMap()
    ports.claim("cga", range(0x3D0, 0x3E0), read=lambda p: 0)
    with pytest.raises(PortConflictError) as err:
        ports.claim("mydev", [0x3DA], read=lambda p: 0)
    message = str(err.value)
    assert "cga" in message and "mydev" in message and "3DA" in message
    # the failed claim took nothing
    assert ports.owner(0x3DA) == "cga"
    assert "mydev" not in ports.claims()


def test_failed_claim_is_all_or_nothing():
    ports = PortMap()
    ports.claim("a", [0x301])
    with pytest.raises(PortConflictError):
        ports.claim("b", [0x300, 0x301, 0x302])
    assert ports.owner(0x300) is None and ports.owner(0x302) is None
    assert ports.port_kind[0x300] == PORT_UNCLAIMED


def test_unclaimed_ports_read_ff():
    ports = PortMap()
    assert ports.read_byte(0x123) == 0xFF
    assert ports.read(0x123, width=2) == 0xFFFF
    assert ports.write_byte(0x123, 0x55) is False      # nobody took it
    assert ports.port_kind[0x123] == PORT_UNCLAIMED


def test_claimed_port_dispatches_and_marks_kind():
    ports = PortMap()
    written = []
    ports.claim("dev", [0x300], read=lambda p: 0x1A5, write=lambda p, v: written.append((p, v)))
    assert ports.port_kind[0x300] == PORT_PYTHON
    assert ports.read_byte(0x300) == 0xA5                # handlers' results are bytes
    assert ports.write_byte(0x300, 0x1FF) is True
    assert written == [(0x300, 0xFF)]
    assert ports.claims() == {"dev": [0x300]}


def test_word_port_access_is_split_into_bytes():
    ports = PortMap()
    log = []
    regs = {0x300: 0x34, 0x301: 0x12}
    ports.claim("dev", [0x300, 0x301], read=lambda p: regs[p],
                write=lambda p, v: log.append((p, v)))
    assert ports.read(0x300, width=2) == 0x1234
    assert ports.write(0x300, 0xBEEF, width=2) is True
    assert log == [(0x300, 0xEF), (0x301, 0xBE)]        # low byte first, at port+1 high


def test_word_access_half_unclaimed():
    ports = PortMap()
    ports.claim("dev", [0x300], read=lambda p: 0x42)
    assert ports.read(0x300, width=2) == 0xFF42          # 301h is unclaimed
    assert ports.read(0x2FF, width=2) == 0x42FF


def test_port_numbers_wrap_at_16_bits():
    ports = PortMap()
    ports.claim("hi", [0xFFFF], read=lambda p: 0x11)
    ports.claim("lo", [0x0000], read=lambda p: 0x22)
    assert ports.read(0xFFFF, width=2) == 0x2211
    with pytest.raises(PortConflictError, match="outside"):
        ports.claim("bad", [0x10000])
