"""8253 PIT driven through ports 40h-43h the way the BIOS and programs do.

PIT edge k happens at CPU cycle 4*k; a count written at cycle c is loaded on
edge c//4 + 1.
"""

import json

import pytest

from pypc_core.bus import PortMap
from pypc_core.chipset import Pic8259, Pit8253, PIT_HZ
from chip_boards import board_for


class FakeMachine:
    def __init__(self):
        self.ports = PortMap()
        self.now = 0
        self.clock = lambda: self.now
        self.pic = None


class RecordingPic:
    def __init__(self, machine):
        self.m = machine
        self.events = []

    def raise_irq(self, n):
        self.events.append(("raise", n, self.m.now))

    def lower_irq(self, n):
        self.events.append(("lower", n, self.m.now))

    def rises(self):
        return [t for kind, n, t in self.events if kind == "raise"]


def make(pic=None):
    m = FakeMachine()
    m.pic = pic if pic is not None else RecordingPic(m)
    pit = Pit8253(pic=m.pic)
    pit.attach(board_for(m, pit))
    m.pit = pit
    return m, pit


def at_tick(m, k):
    m.now = 4 * k


def out(m, port, *values):
    for v in values:
        m.ports.write(port, v)


def latch_read(m, ch):
    m.ports.write(0x43, ch << 6)
    lo = m.ports.read(0x40 + ch)
    hi = m.ports.read(0x40 + ch)
    return hi << 8 | lo


def sample(m, pit, ch, ticks):
    """(outputs, counts) of counter ``ch`` at increasing ticks."""
    outs, cnts = [], []
    for k in ticks:
        at_tick(m, k)
        outs.append(int(pit.output(ch)))
        cnts.append(pit.count(ch))
    return outs, cnts


def outputs(m, pit, ch, ticks):
    return sample(m, pit, ch, ticks)[0]


def test_ports_claimed():
    m, pit = make()
    assert m.ports.claims() == {"pit": [0x40, 0x41, 0x42, 0x43]}
    assert m.ports.read(0x43) == 0xFF


def test_bios_mode3_reload0_gives_irq0_every_262144_cycles():
    m = FakeMachine()
    pic = Pic8259()
    pic.attach(board_for(m, pic))
    m.pic = pic
    out(m, 0x20, 0x13)
    out(m, 0x21, 0x08, 0x09)
    pit = Pit8253(pic=pic)
    pit.attach(board_for(m, pit))
    m.now = 1000                          # tick 250: load on edge 251
    out(m, 0x43, 0x36)                    # ch0, LSB then MSB, mode 3, binary
    out(m, 0x40, 0x00, 0x00)              # reload 0 = 65536
    # The control word sets OUT high: one edge at programming time.
    assert pic.acknowledge() == 0x08
    out(m, 0x20, 0x20)
    first = 4 * 251 + 262144
    assert pit.next_event() == first
    prev = None
    for j in range(6):
        e = pit.next_event()
        assert e == first + j * 262144
        m.now = e - 1
        pit.advance(m.now)
        assert not pic.intr_pending()     # not one cycle early
        m.now = e
        pit.advance(e)
        assert pic.intr_pending()
        assert pic.acknowledge() == 0x08
        out(m, 0x20, 0x20)
        if prev is not None:
            assert e - prev == 262144
        prev = e
    assert 14_318_180 / 3 / 262144 == pytest.approx(18.2065, abs=1e-4)


def test_irq0_latched_when_scheduler_visits_only_event_cycles():
    """The scheduler jumps from deadline to deadline: the low half of the
    square wave is never observed, yet every rising edge must reach the PIC."""
    m = FakeMachine()
    pic = Pic8259()
    pic.attach(board_for(m, pic))
    m.pic = pic
    out(m, 0x20, 0x13)
    out(m, 0x21, 0x08, 0x09)
    pit = Pit8253(pic=pic)
    pit.attach(board_for(m, pit))
    out(m, 0x43, 0x36)
    out(m, 0x40, 0x00, 0x00)
    assert pic.acknowledge() == 0x08
    out(m, 0x20, 0x20)
    for _ in range(5):
        m.now = pit.next_event()
        pit.advance(m.now)
        assert pic.acknowledge() == 0x08
        out(m, 0x20, 0x20)


def test_far_jumps_count_exactly():
    """Jumps of up to 10^12 cycles land on the exact count (how fast they
    are is benchmarks/benchmark_units.py's business)."""
    m, pit = make()
    out(m, 0x43, 0x36)
    out(m, 0x40, 0x00, 0x00)              # loaded on edge 1
    expected_rises = [0]
    prev = 0
    for c in (10**9, 10**10, 10**12, 10**12 + 4 * 40000):
        if (c // 4 - 1) // 65536 > (prev // 4 - 1) // 65536:
            expected_rises.append(c)      # an edge passed since the last look
        prev = c
        m.now = c
        pit.advance(c)
        n = c // 4 - 1
        p = n % 65536
        expect = (65536 - 2 * (p if p < 32768 else p - 32768)) & 0xFFFF
        assert latch_read(m, 0) == expect
        assert pit.output(0) == (p < 32768)
        e = pit.next_event()
        assert e > c and (e // 4 - 1) % 65536 == 0
    assert m.pic.rises() == expected_rises


def test_latch_holds_value_and_count_decrements():
    m, pit = make()
    out(m, 0x43, 0x34)                    # ch0 LSB/MSB mode 2
    out(m, 0x40, 1000 & 0xFF, 1000 >> 8)  # at cycle 0: loaded on edge 1
    at_tick(m, 101)
    out(m, 0x43, 0x00)                    # latch counter 0
    at_tick(m, 600)                       # time passes: latch frozen
    assert m.ports.read(0x40) == 900 & 0xFF
    at_tick(m, 700)
    assert m.ports.read(0x40) == 900 >> 8
    # latch released: live reads
    at_tick(m, 1000)
    assert latch_read(m, 0) == 1
    values = []
    for k in range(1001, 1400, 37):
        at_tick(m, k)
        values.append(latch_read(m, 0))
    assert values == [1000 - (k - 1) % 1000 for k in range(1001, 1400, 37)]
    assert values == sorted(values, reverse=True)
    # a second latch command while latched is ignored
    at_tick(m, 1500)
    out(m, 0x43, 0x00)
    at_tick(m, 1510)
    out(m, 0x43, 0x00)
    lo = m.ports.read(0x40)
    hi = m.ports.read(0x40)
    assert hi << 8 | lo == 1000 - (1500 - 1) % 1000


def test_mode0_one_shot_interrupt_on_terminal_count():
    m, pit = make()
    out(m, 0x43, 0x30)                    # ch0 LSB/MSB mode 0
    assert pit.output(0) is False
    at_tick(m, 100)
    out(m, 0x40, 100)                     # first byte: counting stops, OUT low
    at_tick(m, 101)
    out(m, 0x40, 0)                       # count 100 loaded on edge 102
    assert pit.next_event() == 4 * 202
    at_tick(m, 150)
    assert latch_read(m, 0) == 52
    m.now = 4 * 202 - 1
    pit.advance(m.now)
    assert m.pic.rises() == [] and not pit.output(0)
    m.now = 4 * 202
    pit.advance(m.now)
    assert m.pic.rises() == [808]
    assert pit.next_event() is None       # one shot
    at_tick(m, 210)
    assert latch_read(m, 0) == 0xFFF8     # keeps counting down after 0
    assert pit.output(0)
    # a new count re-arms it: OUT low again, IRQ after count + 1 clocks
    out(m, 0x40, 10, 0)
    assert not pit.output(0)
    assert pit.next_event() == 4 * (210 + 1 + 10)


def test_bcd_counting():
    m, pit = make()
    out(m, 0x43, 0x35)                    # ch0 LSB/MSB mode 2 BCD
    out(m, 0x40, 0x00, 0x10)              # 1000 decimal, loaded on edge 1
    at_tick(m, 1 + 123)
    assert latch_read(m, 0) == 0x0877
    assert pit.next_event() == 4 * (1 + 1000)
    at_tick(m, 2000)
    out(m, 0x43, 0x35)
    out(m, 0x40, 0x00, 0x00)              # BCD 0 = 10000
    at_tick(m, 2001 + 1)
    assert latch_read(m, 0) == 0x9999
    assert pit.next_event() == 4 * (2001 + 10000)
    at_tick(m, 2001 + 10000 - 1)
    assert latch_read(m, 0) == 0x0001


def test_lsb_only_and_msb_only_access():
    m, pit = make()
    out(m, 0x43, 0x54)                    # ch1 LSB only, mode 2 (BIOS refresh)
    out(m, 0x41, 18)
    at_tick(m, 5)
    out(m, 0x43, 0x40)
    assert m.ports.read(0x41) == 14       # one byte per read in LSB mode
    at_tick(m, 1 + 18 + 3)
    assert m.ports.read(0x41) == 15
    assert pit.channel_info(1)["reload"] == 18
    out(m, 0x43, 0x64)                    # ch1 MSB only, mode 2
    out(m, 0x41, 0x10)                    # count 1000h, loaded next edge
    k = 22 + 1 + 0x100
    at_tick(m, k)
    assert m.ports.read(0x41) == 0x0F
    assert pit.count(1) == 0x0F00


def test_read_and_write_flip_flops_are_independent():
    m, pit = make()
    out(m, 0x43, 0x34)
    out(m, 0x40, 0x34, 0x12)              # 1234h, loaded on edge 1
    at_tick(m, 1 + 0x34)
    out(m, 0x43, 0x00)
    assert m.ports.read(0x40) == 0x00     # LSB of 1200h
    out(m, 0x40, 0x78)                    # new LSB (write flip-flop)
    assert m.ports.read(0x40) == 0x12     # MSB of the latch
    out(m, 0x40, 0x56)                    # new MSB: 5678h at next reload
    assert pit.channel_info(0)["reload"] == 0x5678


def test_mode3_square_wave_on_channel2_with_gate():
    m, pit = make()
    out(m, 0x43, 0xB6)                    # ch2 LSB/MSB mode 3
    out(m, 0x42, 10, 0)
    assert pit.output2()                  # gate low: high, not counting
    at_tick(m, 10)
    pit.set_gate2(True)                   # loads on edge 11
    outs, cnts = sample(m, pit, 2, range(11, 32))
    assert outs == [1] * 5 + [0] * 5 + [1] * 5 + [0] * 5 + [1]
    assert cnts[:6] == [10, 8, 6, 4, 2, 10]
    at_tick(m, 33)                        # high phase, count 6
    pit.set_gate2(False)
    assert pit.output2()
    at_tick(m, 40)
    assert pit.count(2) == 6 and pit.output2()
    pit.set_gate2(True)                   # restart: reload on edge 41
    assert sample(m, pit, 2, [41, 42])[1] == [10, 8]
    # odd count: high (N+1)/2, low (N-1)/2
    at_tick(m, 100)
    out(m, 0x43, 0xB6)
    out(m, 0x42, 5, 0)                    # loads on edge 101
    outs, cnts = sample(m, pit, 2, range(101, 111))
    assert outs == [1, 1, 1, 0, 0] * 2
    assert cnts == [4, 2, 0, 4, 2] * 2


def test_mode3_new_count_takes_effect_at_half_cycle_end():
    m, pit = make()
    pit.set_gate2(True)
    out(m, 0x43, 0xB6)
    out(m, 0x42, 10, 0)                   # tick 0: loads on edge 1
    at_tick(m, 3)
    out(m, 0x42, 4, 0)                    # no control word: after this half cycle
    assert pit.count(2) == 6
    outs, cnts = sample(m, pit, 2, range(4, 13))
    assert outs == [1, 1, 0, 0, 1, 1, 0, 0, 1]
    assert cnts == [4, 2, 4, 2, 4, 2, 4, 2, 4]


def test_mode2_rate_generator_pulse_and_reprogramming():
    m, pit = make()
    out(m, 0x43, 0x34)
    out(m, 0x40, 4, 0)                    # loads on edge 1
    assert outputs(m, pit, 0, range(1, 10)) == [1, 1, 1, 0, 1, 1, 1, 0, 1]
    # each period ends with a one-clock low pulse, then a rising edge
    m2, pit2 = make()
    out(m2, 0x43, 0x34)
    out(m2, 0x40, 100, 0)                 # period 100 from edge 1
    at_tick(m2, 50)
    out(m2, 0x40, 10, 0)                  # takes effect at the next reload
    edges = []
    for _ in range(4):
        e = pit2.next_event()
        edges.append(e // 4)
        m2.now = e
        pit2.advance(e)
    assert edges == [101, 111, 121, 131]
    assert [t // 4 for t in m2.pic.rises()][-4:] == [101, 111, 121, 131]


def test_mode1_and_mode5_triggered_by_gate():
    m, pit = make()
    out(m, 0x43, 0xB2)                    # ch2 LSB/MSB mode 1
    out(m, 0x42, 5, 0)
    at_tick(m, 3)
    assert pit.output2()                  # waits for a trigger
    at_tick(m, 10)
    pit.set_gate2(True)                   # trigger: load on edge 11
    outs, cnts = sample(m, pit, 2, range(10, 18))
    assert outs == [1, 0, 0, 0, 0, 0, 1, 1]
    assert cnts[1:] == [5, 4, 3, 2, 1, 0, 0xFFFF]
    out(m, 0x43, 0xBA)                    # mode 5
    out(m, 0x42, 3, 0)
    pit.set_gate2(False)
    at_tick(m, 30)
    pit.set_gate2(True)                   # load on 31, strobe at 34
    assert outputs(m, pit, 2, range(30, 37)) == [1, 1, 1, 1, 0, 1, 1]


def test_mode4_software_strobe_on_channel0():
    m, pit = make()
    at_tick(m, 10)
    out(m, 0x43, 0x38)                    # ch0 LSB/MSB mode 4 (OUT high)
    out(m, 0x40, 3, 0)                    # load on 11, strobe at 14
    assert pit.next_event() == 4 * 15
    assert outputs(m, pit, 0, range(12, 17)) == [1, 1, 0, 1, 1]
    assert pit.next_event() is None


def test_mode0_gate_pauses_counting():
    m, pit = make()
    out(m, 0x43, 0xB0)                    # ch2 LSB/MSB mode 0, gate low
    out(m, 0x42, 10, 0)                   # loaded on edge 1 but gated off
    at_tick(m, 20)
    assert pit.count(2) == 10 and not pit.output2()
    pit.set_gate2(True)
    at_tick(m, 25)
    assert pit.count(2) == 5
    pit.set_gate2(False)
    at_tick(m, 100)
    assert pit.count(2) == 5 and not pit.output2()
    pit.set_gate2(True)
    assert outputs(m, pit, 2, [104, 105, 106]) == [0, 1, 1]


def test_modes_6_and_7_are_aliases():
    m, pit = make()
    out(m, 0x43, 0x3C)
    assert pit.channel_info(0)["mode"] == 2
    out(m, 0x43, 0x3E)
    out(m, 0x40, 0, 0)
    assert pit.channel_info(0)["mode"] == 3
    assert pit.channel_info(0)["frequency_hz"] == pytest.approx(PIT_HZ / 65536)


def test_state_round_trip_mid_count():
    m, pit = make()
    pit.set_gate2(True)
    out(m, 0x43, 0x36)
    out(m, 0x40, 0x00, 0x00)
    out(m, 0x43, 0x54)
    out(m, 0x41, 18)
    out(m, 0x43, 0xB6)
    out(m, 0x42, 0x30, 0x05)
    at_tick(m, 1000)
    out(m, 0x42, 0x10, 0x02)              # pending at the half-cycle end
    out(m, 0x43, 0x80)                    # ch2 latched
    state = json.loads(json.dumps(pit.get_state()))
    m2 = FakeMachine()
    m2.now = m.now
    m2.pic = RecordingPic(m2)
    other = Pit8253(pic=m2.pic)
    other.attach(board_for(m2, other))
    other.set_state(state)
    assert other.get_state() == pit.get_state()
    assert other.next_event() == pit.next_event()
    assert m2.ports.read(0x42) == m.ports.read(0x42)
    for k in (1400, 5000, 70000, 300000):
        at_tick(m, k)
        at_tick(m2, k)
        for ch in range(3):
            assert other.count(ch) == pit.count(ch)
            assert other.output(ch) == pit.output(ch)
        assert other.next_event() == pit.next_event()


def test_post_timer1_bit_test_sees_every_bit_toggle():
    """BIOS POST: program counter 1 (LSB only, mode 2, count 0) and latch it
    in a loop until every bit has been seen set and clear."""
    m, pit = make()
    out(m, 0x43, 0x54)
    out(m, 0x41, 0x00)
    seen_or, seen_and = 0x00, 0xFF
    for i in range(2000):
        m.now += 29                       # a few instructions per iteration
        out(m, 0x43, 0x40)
        value = m.ports.read(0x41)
        seen_or |= value
        seen_and &= value
        if seen_or == 0xFF and seen_and == 0x00:
            break
    assert (seen_or, seen_and) == (0xFF, 0x00)
    assert i < 1000
