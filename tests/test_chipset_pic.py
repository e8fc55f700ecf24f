"""8259A PIC driven through ports 20h/21h the way the BIOS and DOS do."""

import json

import pytest

from pypc_core.bus import PortMap
from pypc_core.chipset import Pic8259
from chip_boards import board_for


class FakeMachine:
    def __init__(self):
        self.ports = PortMap()
        self.now = 0
        self.clock = lambda: self.now
        self.pic = None


@pytest.fixture
def board():
    m = FakeMachine()
    levels = []
    pic = Pic8259(on_intr_change=levels.append)
    pic.attach(board_for(m, pic))
    m.pic = pic
    m.levels = levels
    # IBM XT BIOS: ICW1=13h (edge, single, ICW4), ICW2=08h, ICW4=09h.
    m.ports.write(0x20, 0x13)
    m.ports.write(0x21, 0x08)
    m.ports.write(0x21, 0x09)
    return m


def eoi(m):
    m.ports.write(0x20, 0x20)


def read_isr(m):
    m.ports.write(0x20, 0x0B)
    return m.ports.read(0x20)


def read_irr(m):
    m.ports.write(0x20, 0x0A)
    return m.ports.read(0x20)


def test_ports_claimed(board):
    assert board.ports.claims() == {"pic": [0x20, 0x21]}


def test_bios_init_then_timer_interrupt(board):
    m, pic = board, board.pic
    assert m.ports.read(0x21) == 0x00            # ICW1 clears IMR
    m.ports.write(0x21, 0xBC)                     # unmask 0, 1, 6
    assert m.ports.read(0x21) == 0xBC
    assert not pic.intr_pending()
    pic.raise_irq(0)
    assert pic.intr_pending() and m.levels[-1] is True
    assert read_irr(m) == 0x01
    assert pic.acknowledge() == 0x08
    assert not pic.intr_pending() and m.levels[-1] is False
    assert read_irr(m) == 0x00
    assert read_isr(m) == 0x01
    eoi(m)
    assert read_isr(m) == 0x00


def test_masked_request_waits_for_unmask(board):
    m, pic = board, board.pic
    m.ports.write(0x21, 0xFD)                     # only IRQ1 unmasked
    pic.raise_irq(0)
    assert not pic.intr_pending()
    assert read_irr(m) == 0x01                    # still requested
    m.ports.write(0x21, 0x00)
    assert pic.intr_pending()
    assert pic.acknowledge() == 0x08


def test_priority_and_nesting(board):
    pic, m = board.pic, board
    pic.raise_irq(3)
    pic.raise_irq(1)
    assert pic.acknowledge() == 0x09              # IRQ1 beats IRQ3
    assert not pic.intr_pending()                 # IRQ3 blocked by IRQ1 in service
    pic.raise_irq(0)
    assert pic.intr_pending()                     # higher priority nests
    assert pic.acknowledge() == 0x08
    assert read_isr(m) == 0x03
    eoi(m)                                        # non-specific: clears IRQ0
    assert read_isr(m) == 0x02
    assert not pic.intr_pending()
    eoi(m)
    assert pic.intr_pending()
    assert pic.acknowledge() == 0x0B


def test_specific_eoi(board):
    pic, m = board.pic, board
    pic.raise_irq(5)
    pic.raise_irq(2)
    assert pic.acknowledge() == 0x0A
    m.ports.write(0x20, 0x65)                     # specific EOI for IRQ5: not in service
    assert read_isr(m) == 0x04
    m.ports.write(0x20, 0x62)                     # specific EOI for IRQ2
    assert read_isr(m) == 0x00
    assert pic.acknowledge() == 0x0D


def test_edge_triggering(board):
    pic, m = board.pic, board
    pic.raise_irq(1)
    pic.raise_irq(1)                              # no new edge: still one request
    assert pic.acknowledge() == 0x09
    eoi(m)
    assert not pic.intr_pending()                 # line still high: no edge
    pic.lower_irq(1)
    assert not pic.intr_pending()
    pic.raise_irq(1)
    assert pic.acknowledge() == 0x09
    eoi(m)
    # A latched request survives the line going low again.
    pic.pulse_irq(4)
    assert pic.intr_pending()
    assert pic.acknowledge() == 0x0C
    eoi(m)
    # An input that falls before the acknowledge withdraws its request.
    pic.raise_irq(3)
    assert pic.intr_pending()
    pic.lower_irq(3)
    assert not pic.intr_pending()
    assert pic.acknowledge() == 0x0F              # default IR7


def test_spurious_irq7(board):
    pic, m = board.pic, board
    assert pic.acknowledge() == 0x0F
    assert read_isr(m) == 0x00


def test_rotate_on_nonspecific_eoi_and_set_priority(board):
    pic, m = board.pic, board
    pic.raise_irq(2)
    assert pic.acknowledge() == 0x0A
    m.ports.write(0x20, 0xA0)                     # rotate on non-specific EOI
    assert read_isr(m) == 0
    # IRQ2 is now the lowest: IRQ5 wins over IRQ2.
    pic.lower_irq(2)
    pic.raise_irq(2)
    pic.raise_irq(5)
    assert pic.acknowledge() == 0x0D
    m.ports.write(0x20, 0xE5)                     # rotate on specific EOI (IRQ5)
    assert read_isr(m) == 0
    # lowest is 5 now: order 6,7,0,1,2,...: IRQ2 next
    assert pic.acknowledge() == 0x0A
    eoi(m)
    m.ports.write(0x20, 0xC4)                     # set priority: IRQ4 lowest
    pic.raise_irq(4)
    pic.raise_irq(6)
    pic.raise_irq(0)
    assert pic.acknowledge() == 0x0E              # 5,6,7,0,... IRQ6 highest pending
    eoi(m)
    assert pic.acknowledge() == 0x08
    eoi(m)
    assert pic.acknowledge() == 0x0C


def test_auto_eoi_and_rotate_in_auto_eoi():
    m = FakeMachine()
    pic = Pic8259()
    pic.attach(board_for(m, pic))
    m.ports.write(0x20, 0x13)
    m.ports.write(0x21, 0x08)
    m.ports.write(0x21, 0x0B)                     # ICW4: 8086, auto-EOI
    pic.raise_irq(3)
    pic.raise_irq(6)
    assert pic.acknowledge() == 0x0B
    m.ports.write(0x20, 0x0B)
    assert m.ports.read(0x20) == 0                # auto-EOI: nothing in service
    assert pic.acknowledge() == 0x0E
    m.ports.write(0x20, 0x80)                     # rotate in auto-EOI: set
    for n in (1, 2):
        pic.lower_irq(n)
    pic.raise_irq(1)
    assert pic.acknowledge() == 0x09              # IRQ1 becomes the lowest
    pic.raise_irq(2)
    pic.lower_irq(1)
    pic.raise_irq(1)
    assert pic.acknowledge() == 0x0A              # IRQ2 now beats IRQ1


def test_poll_mode(board):
    pic, m = board.pic, board
    m.ports.write(0x20, 0x0C)                     # OCW3 poll
    assert m.ports.read(0x20) == 0x00             # nothing pending
    pic.raise_irq(6)
    m.ports.write(0x20, 0x0C)
    assert m.ports.read(0x20) == 0x86
    assert read_isr(m) == 0x40                    # the poll acknowledged it
    assert m.ports.read(0x20) == 0x40             # back to register reads
    eoi(m)


def test_special_mask_mode(board):
    pic, m = board.pic, board
    pic.raise_irq(0)
    assert pic.acknowledge() == 0x08              # IRQ0 in service
    pic.raise_irq(3)
    assert not pic.intr_pending()
    m.ports.write(0x21, 0x01)                     # mask IRQ0
    assert not pic.intr_pending()
    m.ports.write(0x20, 0x68)                     # OCW3: set special mask mode
    assert pic.intr_pending()                     # lower level now allowed
    assert pic.acknowledge() == 0x0B
    m.ports.write(0x20, 0x48)                     # reset special mask mode
    assert read_isr(m) == 0x09


def test_level_triggered_mode():
    m = FakeMachine()
    pic = Pic8259()
    pic.attach(board_for(m, pic))
    m.ports.write(0x20, 0x1B)                     # level triggered
    m.ports.write(0x21, 0x08)
    m.ports.write(0x21, 0x09)
    pic.raise_irq(2)
    assert pic.intr_pending()
    pic.lower_irq(2)
    assert not pic.intr_pending()                 # request withdrawn
    pic.raise_irq(2)
    assert pic.acknowledge() == 0x0A
    m.ports.write(0x20, 0x20)
    assert pic.intr_pending()                     # still high: requests again


def test_reinit_clears_state(board):
    pic, m = board.pic, board
    pic.raise_irq(1)
    pic.acknowledge()
    m.ports.write(0x21, 0xFF)
    m.ports.write(0x20, 0x13)
    m.ports.write(0x21, 0x70)                     # other vector base
    m.ports.write(0x21, 0x09)
    assert m.ports.read(0x21) == 0 and read_isr(m) == 0
    pic.raise_irq(7)
    assert pic.acknowledge() == 0x77


def test_state_round_trip(board):
    pic, m = board.pic, board
    m.ports.write(0x21, 0x10)
    m.ports.write(0x20, 0xC2)
    pic.raise_irq(5)
    pic.raise_irq(3)
    assert pic.acknowledge() == 0x0B
    state = json.loads(json.dumps(pic.get_state()))
    other = Pic8259()
    other.set_state(state)
    assert other.get_state() == pic.get_state()
    for p in (pic, other):
        p.raise_irq(4)                            # masked, and IRQ3 in service
        assert not p.intr_pending()
        p.port_write(0x21, 0x00)                  # unmask: still below IRQ3
        assert not p.intr_pending()
        p.port_write(0x20, 0x20)                  # EOI IRQ3
        assert p.acknowledge() == 0x0C            # order 3,4,5,...: IRQ4 first
        assert p.acknowledge() == 0x0F            # IRQ5 blocked: spurious
    assert other.get_state() == pic.get_state()
