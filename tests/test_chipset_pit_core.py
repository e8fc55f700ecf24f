"""The PIT's counting element has one rule, ``cpu.core.timer_rule``: the
Python counter (``PitChannel._seg_ce``) and the core's answer to a read of a
counter port (``core.timer_read`` on the block the PIT publishes) must give
the same count for any binary segment, whether it was set up by programming
the ports or taken from a snapshot."""

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings, strategies as st  # noqa: E402

from pypc_core.bus import PortMap  # noqa: E402
from pypc_core.chipset import Pit8253  # noqa: E402
from pypc_core.cpu import core  # noqa: E402
from chip_boards import board_for  # noqa: E402


class Clocked:
    def __init__(self):
        self.ports = PortMap()
        self.now = 0
        self.clock = lambda: self.now


def make():
    m = Clocked()
    pit = Pit8253()
    pit.attach(board_for(m, pit))
    return m, pit


def core_read(m, port, cycle):
    """Counter ``port`` read LSB then MSB by the core at ``cycle``."""
    assert m.ports.port_kind[port] == core.PORT_COUNTER
    assert not core.timer_stale(m.ports.port_kind, m.ports.port_io, port, cycle)
    io = m.ports.port_io
    lo = int(core.timer_read(io, io[port], cycle))
    hi = int(core.timer_read(io, io[port], cycle))
    return hi << 8 | lo


@settings(max_examples=300, deadline=None)
@given(mode=st.sampled_from([0, 2, 3]), reload=st.integers(1, 0x10000),
       start=st.integers(0, 1 << 40), ticks=st.integers(0, 1 << 34), phase=st.integers(0, 3),
       out=st.booleans(), running=st.booleans(), ce=st.integers(0, 0xFFFF))
def test_python_count_is_the_cores_read_for_any_segment(mode, reload, start, ticks, phase, out,
                                                        running, ce):
    m, pit = make()
    m.now = 4 * start
    state = pit.get_state()
    state["tick"] = start
    periodic = mode in (2, 3)
    state["channels"][0].update(
        mode=mode, bcd=False, access=3, gate=True, cr=reload & 0xFFFF, cr_valid=True,
        started=periodic, read_msb=False, latch=None, seg_start=start, seg_running=running,
        seg_ce=reload & 0xFFFF if periodic else ce, seg_out=out,
        seg_tc=None if periodic else reload, seg_reload=reload if periodic else 0,
        pend_edge=None, pend_out=True)
    pit.set_state(state)
    cycle = 4 * (start + ticks) + phase
    m.now = cycle
    python = pit.count(0)
    assert core_read(m, 0x40, cycle) == python
    assert 0 <= python <= 0xFFFF


@settings(max_examples=200, deadline=None)
@given(mode=st.sampled_from([0, 2, 3]), reload=st.integers(1, 0x10000),
       start=st.integers(0, 1 << 40), ticks=st.integers(0, 1 << 20), phase=st.integers(0, 3),
       second=st.none() | st.tuples(st.integers(1, 0x10000), st.integers(0, 1 << 20)))
def test_python_count_is_the_cores_read_after_programming(mode, reload, start, ticks, phase,
                                                          second):
    # channel 0 in ``mode``, LSB then MSB, ``reload`` written at edge
    # ``start``; perhaps a second count written ``second[1]`` edges later
    # (modes 2 and 3: taken at the next reload / half-cycle end, so mode 3
    # segments start low as well as high)
    m, pit = make()
    m.now = 4 * start
    m.ports.write(0x43, 0x30 | mode << 1)
    m.ports.write(0x40, reload & 0xFF)
    m.ports.write(0x40, reload >> 8 & 0xFF)
    if second is not None:
        value, later = second
        m.now += 4 * later
        pit.advance(m.now)
        m.ports.write(0x40, value & 0xFF)
        m.ports.write(0x40, value >> 8 & 0xFF)
    cycle = m.now + 4 * (1 + ticks) + phase
    pit.advance(cycle)                 # (a pending load is applied and published)
    m.now = cycle
    python = pit.count(0)
    assert core_read(m, 0x40, cycle) == python


def reference_out(mode, running, out, tc, reload, n_edges):
    """OUT at edges 0 .. n_edges-1 of a segment, stepped edge by edge as the
    8253's data sheet tells it (an independent model, not the PIT's rule):
    modes 0/1 go high at the terminal count and stay; modes 4/5 strobe low
    for the one edge of it; mode 2 counts reload down to 1 and is low while
    the count is 1; mode 3 holds each level for its half of reload, the high
    half the longer when reload is odd.  A stopped counter holds OUT where
    its progress stopped (in modes 0/1/4/5, at the segment's start: already
    at the terminal count when ``tc`` is 0)."""
    levels = []
    if mode in (2, 3):
        count, level, left = reload, out, None
        for _ in range(n_edges):
            if not running:
                levels.append(out)
                continue
            if mode == 2:
                levels.append(count != 1)
                count = count - 1 if count > 1 else reload
                continue
            if left is None:
                left = (reload + 1) // 2 if level else reload // 2
            while left == 0:                       # an empty half (reload 1)
                level = not level
                left = (reload + 1) // 2 if level else reload // 2
            levels.append(level)
            left -= 1
            if left == 0:
                level = not level
                left = (reload + 1) // 2 if level else reload // 2
        return levels
    for n in range(n_edges):
        n = n if running else 0            # a stopped counter keeps its progress
        done = tc is not None and n >= tc
        strobe = tc is not None and n == tc
        if mode in (0, 1):
            levels.append(True if done else out)
        else:
            levels.append(False if strobe else out)
    return levels


@settings(max_examples=300, deadline=None)
@given(mode=st.sampled_from([0, 1, 2, 3, 4, 5]), reload=st.integers(1, 200),
       start=st.integers(0, 1 << 40), out=st.booleans(), running=st.booleans(),
       tc=st.one_of(st.none(), st.integers(0, 400)),
       offsets=st.lists(st.integers(0, 900), min_size=0, max_size=40))
def test_the_speakers_levels_are_the_channels_output_at_each_edge(mode, reload, start, out,
                                                                  running, tc, offsets):
    """``PitChannel.levels`` (the speaker renders whole arrays of edges with
    it) gives what ``output`` gives edge by edge, and both what the data
    sheet's counter stepped edge by edge gives, in every mode, with and
    without a terminal count, before and past the segment's first periods."""
    import numpy as np
    m, pit = make()
    ch = pit.channels[0]
    periodic = mode in (2, 3)
    ch.mode = mode
    seg_tc = None if periodic else tc
    ch._set_seg((start, running, reload & 0xFFFF, out, seg_tc, reload if periodic else 0))
    edges = np.array(sorted(start + o for o in offsets), dtype=np.int64)
    assert list(ch.levels(edges)) == [ch.output(int(k)) for k in edges]
    want = reference_out(mode, running, out, seg_tc, reload, 901)
    assert list(ch.levels(edges)) == [want[int(k) - start] for k in edges]
