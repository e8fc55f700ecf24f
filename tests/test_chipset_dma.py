"""8237A DMA (ports 00h-0Fh, page registers) and the NMI mask (A0h)."""

import json

import pytest

from pypc_core.bus import MemoryMap, PortMap
from pypc_core.chipset import Dma8237, NmiMask
from chip_boards import board_for


class FakeMachine:
    def __init__(self):
        self.ports = PortMap()
        self.now = 0
        self.clock = lambda: self.now
        self.memory = MemoryMap()
        self.memory.map_ram(0, 0xA0000)


@pytest.fixture
def m():
    m = FakeMachine()
    m.dma = Dma8237(memory=m.memory)
    m.dma.attach(board_for(m, m.dma))
    return m


def program(m, ch, mode, phys, count, page_port=None):
    """The IBM BIOS DMA_SETUP sequence for channel ``ch``."""
    page_port = page_port or {0: 0x87, 1: 0x83, 2: 0x81, 3: 0x82}[ch]
    m.ports.write(0x0C, 0)                    # clear flip-flop
    m.ports.write(0x0B, mode | ch)            # mode
    m.ports.write(ch * 2, phys & 0xFF)
    m.ports.write(ch * 2, (phys >> 8) & 0xFF)
    m.ports.write(page_port, (phys >> 16) & 0x0F)
    m.ports.write(ch * 2 + 1, (count - 1) & 0xFF)
    m.ports.write(ch * 2 + 1, ((count - 1) >> 8) & 0xFF)
    m.ports.write(0x0A, ch)                   # unmask


def read_word(m, port):
    lo = m.ports.read(port)
    return m.ports.read(port) << 8 | lo


def test_ports_claimed(m):
    claims = m.ports.claims()["dma"]
    assert claims == list(range(0x10)) + [0x81, 0x82, 0x83, 0x87]


def test_master_clear_and_register_port_test(m):
    m.ports.write(0x0D, 0)                    # master clear
    assert m.dma.mask == 0x0F
    for pattern in (0xFF, 0x00, 0x55, 0xAA):
        for port in range(8):
            m.ports.write(port, pattern)
            m.ports.write(port, pattern)
        for port in range(8):
            assert m.ports.read(port) == pattern
            assert m.ports.read(port) == pattern
    m.ports.write(0x0C, 0)
    m.ports.write(0x02, 0x34)                 # flip-flop: low then high
    m.ports.write(0x02, 0x12)
    assert read_word(m, 0x02) == 0x1234
    m.ports.write(0x0E, 0)                    # clear all masks
    assert m.dma.mask == 0
    m.ports.write(0x0F, 0x05)                 # write all masks
    assert m.dma.mask == 0x05
    m.ports.write(0x0A, 0x05)                 # single mask: set ch1
    assert m.dma.mask == 0x07
    m.ports.write(0x0A, 0x00)                 # clear ch0
    assert m.dma.mask == 0x06


def test_floppy_read_into_memory_like_the_bios(m):
    phys = 0x1234 * 16 + 0x0010               # ES:BX = 1234:0010
    program(m, 2, 0x46, phys, 512)            # single, write to memory
    assert m.ports.read(0x81) == 0x01
    data = bytes((i * 7 + 3) & 0xFF for i in range(600))
    moved = m.dma.transfer(2, data, m.memory)  # FDC offers more than asked
    assert moved == 512
    assert m.dma.last_tc[2]
    assert m.memory.read(phys, 512) == data[:512]
    assert m.memory.read(phys + 512, 1) == b"\x00"
    status = m.ports.read(0x08)
    assert status & 0x04                      # TC on channel 2
    assert m.ports.read(0x08) & 0x0F == 0     # cleared by the read
    assert m.dma.mask & 0x04                  # masked itself at TC
    m.ports.write(0x0C, 0)
    assert read_word(m, 0x05) == 0xFFFF       # count wrapped
    assert read_word(m, 0x04) == (phys + 512) & 0xFFFF
    assert m.dma.transfer(2, data, m.memory) == 0   # masked: nothing moves


def test_floppy_write_reads_memory(m):
    phys = 0x20000
    m.memory.write(phys, bytes(range(256)) * 2)
    program(m, 2, 0x4A, phys, 512)            # single, read from memory
    got = m.dma.transfer(2, 512, m.memory)
    assert got == bytes(range(256)) * 2
    assert m.ports.read(0x08) & 0x04


def test_partial_transfers_continue_and_verify_mode(m):
    program(m, 2, 0x46, 0x3000, 300)
    assert m.dma.transfer(2, b"\x11" * 100) == 100   # memory from attach
    assert not m.dma.last_tc[2]
    assert m.dma.remaining(2) == 200
    assert m.dma.transfer(2, b"\x22" * 200) == 200
    assert m.dma.last_tc[2]
    assert m.memory.read(0x3000, 300) == b"\x11" * 100 + b"\x22" * 200
    program(m, 3, 0x43, 0x5000, 1024)         # verify (as INT 13h verify)
    assert m.dma.transfer(3, 1024) == 1024
    assert m.memory.read(0x5000, 4) == b"\x00" * 4
    assert m.ports.read(0x08) & 0x08
    with pytest.raises(TypeError):
        program(m, 1, 0x45, 0x6000, 10)
        m.dma.transfer(1, 10)                 # write mode needs the bytes


def test_address_wraps_inside_the_64k_page(m):
    phys = 0x1FF00
    program(m, 2, 0x46, phys, 0x200)
    data = bytes(range(256)) * 2
    assert m.dma.transfer(2, data, m.memory) == 0x200
    assert m.memory.read(0x1FF00, 0x100) == data[:0x100]
    assert m.memory.read(0x10000, 0x100) == data[0x100:]   # not 0x20000
    assert m.memory.read(0x20000, 4) == b"\x00" * 4
    m.ports.write(0x0C, 0)
    assert read_word(m, 0x04) == 0x0100


def test_auto_init_reloads_and_stays_unmasked(m):
    program(m, 1, 0x54, 0x8000, 16)           # single, write, auto-init
    assert m.dma.transfer(1, bytes(range(40)), m.memory) == 40
    assert m.memory.read(0x8000, 16) == bytes(range(32, 40)) + bytes(range(24, 32))
    assert not m.dma.mask & 0x02
    assert m.ports.read(0x08) & 0x02
    m.ports.write(0x0C, 0)
    assert read_word(m, 0x02) == 0x8008
    assert read_word(m, 0x03) == 16 - 8 - 1


def test_decrement_mode(m):
    program(m, 3, 0x66, 0x400F, 16)           # address decrement
    assert m.dma.transfer(3, bytes(range(16)), m.memory) == 16
    assert m.memory.read(0x4000, 16) == bytes(range(15, -1, -1))
    m.ports.write(0x0C, 0)
    assert read_word(m, 0x06) == 0x3FFF


def test_controller_disable_and_requests(m):
    program(m, 2, 0x46, 0x1000, 4)
    m.ports.write(0x08, 0x04)                 # command: controller disable
    assert m.dma.transfer(2, b"abcd", m.memory) == 0
    m.ports.write(0x08, 0x00)
    m.ports.write(0x09, 0x06)                 # software request channel 2
    m.dma.set_dreq(1, True)
    assert m.ports.read(0x08) == 0x60
    m.ports.write(0x09, 0x02)
    m.dma.set_dreq(1, False)
    assert m.ports.read(0x08) == 0x00


def test_state_round_trip(m):
    program(m, 2, 0x46, 0x12345, 100)
    m.dma.transfer(2, b"x" * 40, m.memory)
    m.ports.write(0x0C, 0)
    m.ports.read(0x04)                        # leave the flip-flop set
    state = json.loads(json.dumps(m.dma.get_state()))
    other = Dma8237(memory=m.memory)
    other.set_state(state)
    assert other.get_state() == m.dma.get_state()
    assert other.port_read(0x04) == m.ports.read(0x04)
    assert other.transfer(2, b"y" * 80) == m.dma.transfer(2, b"y" * 80, m.memory) == 60


def test_nmi_mask_register():
    m = FakeMachine()
    changes = []
    nmi = NmiMask(on_change=changes.append)
    nmi.attach(board_for(m, nmi))
    assert m.ports.claims() == {"nmi": [0xA0]}
    assert not nmi.nmi_enabled()
    m.ports.write(0xA0, 0x80)
    assert nmi.nmi_enabled() and changes == [True]
    assert m.ports.read(0xA0) == 0xFF         # write-only
    m.ports.write(0xA0, 0x00)
    assert not nmi.nmi_enabled() and changes == [True, False]
    state = json.loads(json.dumps(nmi.get_state()))
    other = NmiMask()
    other.set_state(state)
    assert other.get_state() == nmi.get_state()
