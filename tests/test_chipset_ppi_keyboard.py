"""8255 PPI (ports 60h-63h) and the XT keyboard, driven as the BIOS does."""

import json

import pytest

from pypc_core.bus import PortMap
from pypc_core.chipset import Pic8259, Pit8253, Ppi8255, XtKeyboard
from pypc_core.chipset.keyboard import (BYTE_DELAY_CYCLES, RESET_DELAY_CYCLES,
                                        FIFO_SIZE)
from chip_boards import board_for

MS = 4773                     # CPU cycles per millisecond (about)


class FakeMachine:
    def __init__(self):
        self.ports = PortMap()
        self.now = 0
        self.clock = lambda: self.now


def build(**switches):
    m = FakeMachine()
    m.pic = Pic8259()
    m.pic.attach(board_for(m, m.pic))
    m.ports.write(0x20, 0x13)
    m.ports.write(0x21, 0x08)
    m.ports.write(0x21, 0x09)
    m.ports.write(0x21, 0xBC)                 # IRQ0, 1, 6 unmasked
    m.pit = Pit8253(pic=m.pic)
    m.pit.attach(board_for(m, m.pit))
    m.keyboard = XtKeyboard(pic=m.pic)
    m.keyboard.attach(board_for(m, m.keyboard))
    m.ppi = Ppi8255(keyboard=m.keyboard, pit=m.pit, **switches)
    m.ppi.attach(board_for(m, m.ppi))
    m.devices = [m.pit, m.keyboard]
    return m


def run_to(m, cycle):
    """A tiny scheduler: devices catch up event by event."""
    while True:
        events = [(d.next_event(), i) for i, d in enumerate(m.devices)
                  if d.next_event() is not None and d.next_event() <= cycle]
        if not events:
            break
        when, i = min(events)
        m.now = max(m.now, when)
        m.devices[i].advance(m.now)
    m.now = max(m.now, cycle)
    for d in m.devices:
        d.advance(m.now)


def int9(m):
    """What the BIOS keyboard handler does: INTA, read 60h, pulse 61h bit 7,
    EOI.  Returns the scan code, or None if no IRQ1 was pending."""
    if not m.pic.intr_pending():
        return None
    assert m.pic.acknowledge() == 0x09
    code = m.ports.read(0x60)
    pb = m.ports.read(0x61)
    m.ports.write(0x61, pb | 0x80)
    m.ports.write(0x61, pb)
    m.ports.write(0x20, 0x20)
    return code


def test_ports_claimed():
    m = build()
    claims = m.ports.claims()
    assert claims["ppi"] == [0x60, 0x61, 0x62, 0x63]


def test_xt_switches_read_through_port_c_and_port_a():
    m = build(floppy_drives=2, video="cga80", memory_kib=640, fpu=False)
    assert m.ppi.sw1 == 0x6D
    m.ports.write(0x63, 0x99)
    m.ports.write(0x61, 0x00)                 # PB3 = 0: switches 1-4
    assert m.ports.read(0x62) & 0x0F == 0x0D  # IPL, 4 banks (640K), no FPU
    m.ports.write(0x61, 0x08)                 # PB3 = 1: switches 5-8
    assert m.ports.read(0x62) & 0x0F == 0x06  # CGA 80 (10b), 2 drives (01b)
    m.ports.write(0x61, 0x88)                 # PB7: port A shows SW1
    assert m.ports.read(0x60) == 0x6D
    assert m.ports.read(0x61) == 0x88         # port B reads back


def test_other_configurations():
    m = build(floppy_drives=1, video="mda", memory_kib=256, fpu=True)
    assert m.ppi.sw1 == 0x3F
    m = build(floppy_drives=0, video="none", memory_kib=128)
    assert m.ppi.sw1 == 0x04
    m = build(floppy_drives=4, video="cga40", memory_kib=64)
    assert m.ppi.sw1 == 0xD1
    with pytest.raises(ValueError):
        Ppi8255(video="teletype")


def test_5150_model_reads_sw2_with_pb2():
    m = build(model="pc", memory_kib=640)
    m.ports.write(0x61, 0x04)                 # SW2 1-4
    assert m.ports.read(0x62) & 0x0F == 0x2   # (640-64)/32 = 18 = 10010b
    m.ports.write(0x61, 0x00)                 # SW2 5
    assert m.ports.read(0x62) & 0x0F == 0x1


def test_timer2_output_on_port_62h_bit5_and_speaker_state():
    m = build()
    m.ports.write(0x43, 0xB6)                 # ch2 mode 3, as the BIOS beep
    m.ports.write(0x42, 10)
    m.ports.write(0x42, 0)
    assert m.ppi.speaker_state()["gate"] is False
    m.ports.write(0x61, 0x03)                 # gate on, speaker data on (tick 0)
    bits = []
    for k in range(1, 12):
        m.now = 4 * k
        bits.append(m.ports.read(0x62) >> 5 & 1)
    assert bits == [1] * 5 + [0] * 5 + [1]
    state = m.ppi.speaker_state()
    assert state["gate"] and state["data"]
    assert state["mode"] == 3 and state["reload"] == 10
    assert state["frequency_hz"] == pytest.approx(119318.17, rel=1e-6)
    m.ports.write(0x61, 0x00)                 # gate off: output forced high
    assert m.ports.read(0x62) & 0x20


def test_keyboard_reset_answers_aa_via_port_61h():
    m = build()
    m.now = 1000
    m.ports.write(0x61, 0x08)                 # clock low (IBM XT BIOS)
    run_to(m, m.now + 20 * MS)                # hold 20 ms
    m.ports.write(0x61, 0xC8)                 # clock high, clear
    m.ports.write(0x61, 0x48)                 # enable
    released = m.now
    assert m.keyboard.next_event() == released + RESET_DELAY_CYCLES
    run_to(m, released + RESET_DELAY_CYCLES - 1)
    assert not m.pic.intr_pending()
    run_to(m, released + RESET_DELAY_CYCLES)
    assert m.pic.intr_pending()
    assert m.pic.acknowledge() == 0x09
    assert m.ports.read(0x60) == 0xAA
    m.ports.write(0x61, 0xC8)                 # acknowledge
    m.ports.write(0x61, 0x48)
    m.ports.write(0x20, 0x20)
    run_to(m, m.now + 10 * MS)
    assert m.ports.read(0x60) == 0x00         # cleared, nothing else came
    assert not m.pic.intr_pending()
    assert m.keyboard.resets == 1


def test_short_clock_glitch_does_not_reset():
    m = build()
    m.keyboard.send_scancodes([0x1E])
    m.ports.write(0x63, 0x99)                 # mode set: port B -> 0 (clock low)
    m.now += 40
    m.ports.write(0x61, 0x48)
    run_to(m, m.now + 5 * MS)
    assert m.keyboard.resets == 0
    assert int9(m) == 0x1E                    # the queued key survived


def test_typing_raises_irq1_one_byte_at_a_time():
    m = build()
    m.ports.write(0x61, 0x48)
    m.now = 5000
    m.keyboard.press(0x1E)                    # 'A' make
    m.keyboard.release(0x1E)                  # break 9Eh
    assert m.keyboard.next_event() == 5000 + BYTE_DELAY_CYCLES
    run_to(m, 5000 + BYTE_DELAY_CYCLES)
    assert m.pic.intr_pending()
    assert m.pic.acknowledge() == 0x09
    assert m.ports.read(0x60) == 0x1E
    run_to(m, m.now + 50 * MS)                # not acknowledged: break waits
    assert m.ports.read(0x60) == 0x1E
    assert m.keyboard.next_event() is None
    pb = m.ports.read(0x61)
    m.ports.write(0x61, pb | 0x80)            # acknowledge
    assert m.ports.read(0x60) == m.ppi.sw1    # PB7 set: switches
    m.ports.write(0x61, pb)
    assert m.ports.read(0x60) == 0x00
    m.ports.write(0x20, 0x20)
    acked = m.now
    assert m.keyboard.next_event() == acked + BYTE_DELAY_CYCLES
    run_to(m, acked + BYTE_DELAY_CYCLES)
    assert int9(m) == 0x9E


def test_held_clock_inhibits_sending():
    m = build()
    m.ports.write(0x61, 0x48)
    m.ports.write(0x61, 0x08)                 # clock low (but not long)
    m.keyboard.send_scancodes([0x10])
    run_to(m, m.now + 100)
    assert m.keyboard.next_event() is None
    m.ports.write(0x61, 0x48)                 # released after < 1 ms: no reset
    run_to(m, m.now + BYTE_DELAY_CYCLES)
    assert int9(m) == 0x10
    assert m.keyboard.resets == 0


def test_fifo_overflow_drops_and_sends_overrun_code():
    m = build()
    m.ports.write(0x61, 0x48)
    codes = list(range(0x02, 0x02 + 21))      # 21 bytes: 1 in the register
    m.keyboard.send_scancodes(codes[:1])
    run_to(m, m.now + BYTE_DELAY_CYCLES)
    m.keyboard.send_scancodes(codes[1:])
    assert m.keyboard.pending() == FIFO_SIZE + 1
    assert m.keyboard.overflow_count == 4
    got = []
    for _ in range(40):
        code = int9(m)
        if code is not None:
            got.append(code)
        run_to(m, m.now + 2 * BYTE_DELAY_CYCLES)
    assert got == codes[:1 + FIFO_SIZE] + [0xFF]


def test_interrupt_driven_stream_is_deterministic():
    def session():
        m = build()
        m.ports.write(0x61, 0x48)
        m.keyboard.send_scancodes([0x2A, 0x23, 0xA3, 0xAA, 0x1C, 0x9C])
        got, times = [], []
        for _ in range(200):
            run_to(m, m.now + 700)
            code = int9(m)
            if code is not None:
                got.append(code)
                times.append(m.now)
        return got, times
    a = session()
    assert a[0] == [0x2A, 0x23, 0xA3, 0xAA, 0x1C, 0x9C]
    assert a == session()


def test_state_round_trip():
    m = build()
    m.ports.write(0x61, 0x49)
    m.keyboard.send_scancodes([0x1E, 0x9E, 0x30])
    run_to(m, m.now + BYTE_DELAY_CYCLES)
    kb = json.loads(json.dumps(m.keyboard.get_state()))
    ppi = json.loads(json.dumps(m.ppi.get_state()))
    k2 = XtKeyboard()
    k2.set_state(kb)
    p2 = Ppi8255()
    p2.set_state(ppi)
    assert k2.get_state() == m.keyboard.get_state()
    assert p2.get_state() == m.ppi.get_state()
    assert k2.read_data() == 0x1E and k2.pending() == 2


def test_typist_hands_long_text_to_the_keyboard_without_overflow():
    from pypc_core.chipset.keyboard import XtKeyboard, TYPE_INTERVAL_CYCLES
    now = [0]
    kb = XtKeyboard(clock=lambda: now[0])
    codes = [0x10 + (i % 20) for i in range(40)]          # far more than the 16-byte FIFO
    kb.type_scancodes(codes)
    got = []
    for _ in range(2000):
        ev = kb.next_event()
        if ev is None:
            break
        now[0] = ev
        kb.advance(ev)
        if kb.full:                                       # the BIOS reads and acknowledges
            got.append(kb.read_data())
            kb.set_lines(clock_high=True, clear=True)
            kb.set_lines(clock_high=True, clear=False)
    assert got == codes
    assert kb.overflow_count == 0
    assert now[0] >= (len(codes) - 1) * TYPE_INTERVAL_CYCLES   # paced like fingers
