"""Intel 8253 programmable interval timer, wired as on the XT.

Ports 40h-42h (counters 0-2) and 43h (control word).  Counter 0 drives IRQ0,
counter 1 requests DRAM refresh (it only counts here), counter 2 is gated by
PPI port 61h bit 0 and its output goes to the speaker and PPI port 62h bit 5.

Time
----
The PIT is clocked at exactly CPU cycles / 4 (14.31818 MHz / 12 =
1.193182 MHz).  PIT clock edge ``k`` happens at CPU cycle ``4*k``; the chip's
state at cycle ``c`` reflects every edge ``k <= c // 4``.  A count written at
cycle ``c`` is loaded into the counting element on edge ``c // 4 + 1``.

Nothing here loops over clock ticks: each counter is a *segment* (the edge it
started at, its starting value and output, and the mode's rule), so the count
and output at any later edge are closed-form, and ``advance`` over millions of
cycles is O(1).  A segment changes only when the program writes the chip, a
gate input changes, or a count written during counting takes effect at the
next reload / half-cycle boundary (a *pending* load).

Counter 0's output is reported to ``pic.raise_irq(0)``/``lower_irq(0)`` (or an
``on_out0(level)`` callback) at each change; a rising edge that happened
between two catch-ups is always delivered (as a low-high pulse), so IRQ0 is
latched at exactly the programmed rate.  ``next_event()`` is the CPU cycle of
counter 0's next rising edge.

Reads inside the CPU
--------------------
Guests poll the counters (latch, read, read) in delay loops.  After every
change the PIT *publishes* each counter's segment into a counter block of the
port map (``PortMap.counter``; the words are ``cpu.state.T_*``), so
the jitted core answers those reads itself, flip-flop and latch included.
The count itself has one rule, ``cpu.core.timer_rule``: the core wraps it to
16 bits, this module (``PitChannel._seg_ce``) calls the same compiled
function and wraps it to the counter's binary or BCD modulus.
Before the PIT does anything else it *pulls* back what those reads changed
(the read flip-flop and the latch).  BCD counters, and a counter whose
pending load falls due, are answered here as before.
"""

import numpy as np
from numba import njit

from ..cpu import core as _core
from ..cpu import state as _S
from ..device import Device, DeviceDeclaration

PIT_PORTS = (0x40, 0x41, 0x42, 0x43)
CYCLES_PER_TICK = 4                      # CPU cycles per PIT clock
PIT_HZ = 14_318_180 / 12                 # 1.193182 MHz


@njit(cache=True, nogil=True)
def out_level(mode, start, running, out, tc, reload, k):
    """The rule of a counter's OUT at edge ``k`` of a segment that started at
    edge ``start`` with OUT at ``out`` (``tc``: edges from the start to the
    terminal count in modes 0/1/4/5, -1 for none; ``reload``: the period of
    modes 2 and 3).  One rule for :meth:`PitChannel.output` and, through
    :func:`out_levels`, the speaker's arrays of edges."""
    if mode == 2 or mode == 3:
        if not running:
            return out
        n = k - start
        if mode == 2:
            return reload >= 2 and n % reload != reload - 1
        if reload < 2:
            return True
        first = (reload + 1) // 2 if out else reload // 2
        return out if n % reload < first else not out
    if tc < 0:
        return out
    n = k - start if running else 0
    if mode == 0 or mode == 1:
        return True if n >= tc else out
    return False if n == tc else out          # modes 4/5: one-clock strobe


@njit(cache=True, nogil=True)
def out_levels(mode, start, running, out, tc, reload, edges):
    """:func:`out_level` at each edge of the int64 array ``edges``."""
    levels = np.empty(edges.shape[0], dtype=np.bool_)
    for i in range(edges.shape[0]):
        levels[i] = out_level(mode, start, running, out, tc, reload, edges[i])
    return levels


def _bcd_decode(raw):
    return ((raw >> 12 & 0xF) * 1000 + (raw >> 8 & 0xF) * 100
            + (raw >> 4 & 0xF) * 10 + (raw & 0xF)) % 10000


def _bcd_encode(value):
    value %= 10000
    return ((value // 1000) << 12 | (value // 100 % 10) << 8
            | (value // 10 % 10) << 4 | (value % 10))


def _kind(mode, running):
    """The core's segment kind (``cpu.state.T_KIND``) of a counter in
    ``mode``: 1 stopped, 2 and 3 modes 2 and 3, 0 counting down by one."""
    if not running:
        return 1
    if mode == 2 or mode == 3:
        return mode
    return 0


class PitChannel:
    """One counter.  Times are PIT edge indices (CPU cycle // 4)."""

    _FIELDS = ("index", "mode", "bcd", "access", "gate", "cr", "cr_lo",
               "cr_valid", "write_msb", "read_msb", "latch", "started",
               "seg_start", "seg_running", "seg_ce", "seg_out", "seg_tc",
               "seg_reload", "pend_edge", "pend_out")

    def __init__(self, index, gate=True):
        self.index = index
        self.mode = 0
        self.bcd = False
        self.access = 3
        self.gate = gate
        self.cr = 0              # count register (raw 16-bit, BCD if bcd)
        self.cr_lo = 0           # LSB held while waiting for the MSB
        self.cr_valid = False    # a full count was written since the mode
        self.write_msb = False   # write flip-flop: next byte is the MSB
        self.read_msb = False    # read flip-flop: next byte read is the MSB
        self.latch = None        # latched raw count, or None
        self.started = False     # modes 2/3: the periodic cycle is running
        # current segment
        self.seg_start = 0       # edge at which it starts
        self.seg_running = False  # counting element decrements after seg_start
        self.seg_ce = 0          # CE value at seg_start (count domain)
        self.seg_out = False     # OUT at seg_start (modes 2/3: phase level)
        self.seg_tc = None       # modes 0/1/4/5: edges from start to count 0
        self.seg_reload = 0      # modes 2/3: effective reload value
        # pending load (count written; takes effect at pend_edge)
        self.pend_edge = None
        self.pend_out = True     # mode 3: OUT level the new half-cycle starts at

    # -- domain helpers ----------------------------------------------------
    @property
    def modulus(self):
        return 10000 if self.bcd else 0x10000

    def _decode(self, raw):
        return _bcd_decode(raw) if self.bcd else raw & 0xFFFF

    def _encode(self, value):
        return _bcd_encode(value) if self.bcd else value & 0xFFFF

    def reload_value(self):
        """Effective value of the count register (0 means 65536 / 10000)."""
        v = self._decode(self.cr)
        return v if v else self.modulus

    # -- the segment rules (pure) -------------------------------------------
    def _seg_ce(self, seg, k):
        # the core's rule (the one the CPU answers reads with), wrapped to
        # this counter's modulus: binary, or BCD in the count domain
        start, running, ce, out, tc, reload = seg
        return int(_core.timer_rule(_kind(self.mode, running), k - start, ce,
                                    1 if out else 0, reload)) % self.modulus

    def _seg_out(self, seg, k):
        start, running, ce, out, tc, reload = seg
        return bool(out_level(self.mode, int(start), bool(running), bool(out),
                              -1 if tc is None else int(tc), int(reload), int(k)))

    def levels(self, edges):
        """OUT at each of the ascending edges ``edges`` (an int64 array) of
        the present segment, as :meth:`output` would give it with no pending
        load (the speaker renders a segment at a time with this)."""
        start, running, ce, out, tc, reload = self._seg()
        return out_levels(self.mode, int(start), bool(running), bool(out),
                          -1 if tc is None else int(tc), int(reload),
                          np.asarray(edges, dtype=np.int64))

    def _seg_next_rise(self, seg, k):
        """First edge > k (k >= seg start) where OUT rises within ``seg``."""
        start, running, ce, out, tc, reload = seg
        if not running:
            return None
        mode = self.mode
        n0 = k - start
        if mode == 2:
            if reload < 2:
                return None
            return start + reload * (n0 // reload + 1)
        if mode == 3:
            if reload < 2:
                return None
            if out:
                return start + reload * (n0 // reload + 1)
            low = reload // 2
            if n0 < low:
                return start + low
            return start + low + reload * ((n0 - low) // reload + 1)
        if tc is None:
            return None
        if mode == 0 or mode == 1:
            return start + tc if (not out and tc > n0) else None
        return start + tc + 1 if (out and tc + 1 > n0) else None

    def _seg(self):
        return (self.seg_start, self.seg_running, self.seg_ce, self.seg_out,
                self.seg_tc, self.seg_reload)

    def _set_seg(self, seg):
        (self.seg_start, self.seg_running, self.seg_ce, self.seg_out,
         self.seg_tc, self.seg_reload) = seg

    def _loaded_seg(self, edge, out=True):
        """The segment that a load of the count register at ``edge`` starts."""
        v = self._decode(self.cr)
        eff = v if v else self.modulus
        mode = self.mode
        if mode == 0:
            return (edge, self.gate, v, False, eff, 0)
        if mode == 1:
            return (edge, True, v, False, eff, 0)
        if mode == 4:
            return (edge, self.gate, v, True, eff, 0)
        if mode == 5:
            return (edge, True, v, True, eff, 0)
        if mode == 2:
            return (edge, True, eff % self.modulus, True, None, eff)
        return (edge, True, eff % self.modulus, out, None, eff)   # mode 3

    # -- state at an edge ---------------------------------------------------
    def sync(self, k):
        """Apply a pending load whose edge has come (k only grows)."""
        if self.pend_edge is not None and self.pend_edge <= k:
            self._set_seg(self._loaded_seg(self.pend_edge, self.pend_out))
            self.pend_edge = None

    def value(self, k):
        """Counting element at edge k, in the count domain."""
        self.sync(k)
        return self._seg_ce(self._seg(), k)

    def raw_value(self, k):
        return self._encode(self.value(k))

    def output(self, k):
        self.sync(k)
        return self._seg_out(self._seg(), k)

    def next_rise(self, k):
        """First edge > k at which OUT rises (the channel is synced to k)."""
        seg = self._seg()
        edge = self._seg_next_rise(seg, k)
        pend = self.pend_edge
        if pend is None:
            return edge
        if edge is not None and edge < pend:
            return edge
        new = self._loaded_seg(pend, self.pend_out)
        if self._seg_out(new, pend) and not self._seg_out(seg, pend - 1):
            return pend
        return self._seg_next_rise(new, pend)

    def _freeze(self, k, out=None, running=False):
        """Restart the segment at edge k keeping the count (and the progress
        towards the terminal count in modes 0/1/4/5)."""
        seg = self._seg()
        ce = self._seg_ce(seg, k)
        cur_out = self._seg_out(seg, k)
        if self.mode in (2, 3):
            self._set_seg((k, running, ce, cur_out if out is None else out,
                           None, self.seg_reload))
            return
        tc = self.seg_tc
        seg_out = self.seg_out
        if tc is not None:
            n = k - self.seg_start if self.seg_running else 0
            if n > tc:
                tc = None
                seg_out = True
            else:
                tc -= n
        if out is not None:
            seg_out = out
        self._set_seg((k, running, ce, seg_out, tc, 0))

    def _next_boundary(self, k):
        """Modes 2/3: the next reload (mode 2) or half-cycle end (mode 3)
        after edge k, and the OUT level the new segment starts with."""
        start, running, ce, out, tc, reload = self._seg()
        n0 = k - start
        if self.mode == 2 or reload < 2:
            return start + reload * (n0 // reload + 1), True
        first = (reload + 1) // 2 if out else reload // 2
        j, p = divmod(n0, reload)
        if p < first:
            return start + j * reload + first, not out
        return start + (j + 1) * reload, out

    # -- programming ----------------------------------------------------------
    def control(self, k, value):
        """A control word (not a latch command) for this counter at edge k."""
        self.sync(k)
        raw = self.raw_value(k)
        mode = (value >> 1) & 7
        if mode >= 6:
            mode -= 4
        self.mode = mode
        self.bcd = bool(value & 1)
        self.access = (value >> 4) & 3
        self.write_msb = False
        self.read_msb = False
        self.latch = None
        self.cr_valid = False
        self.started = False
        self.pend_edge = None
        self.pend_out = True
        self._set_seg((k, False, self._decode(raw), mode != 0, None, 0))

    def latch_count(self, k):
        if self.latch is None:
            self.latch = self.raw_value(k)

    def read(self, k):
        value = self.latch if self.latch is not None else self.raw_value(k)
        access = self.access
        if access == 1:
            done = True
            byte = value & 0xFF
        elif access == 2:
            done = True
            byte = value >> 8
        else:
            done = self.read_msb
            byte = value >> 8 if done else value & 0xFF
            self.read_msb = not done
        if done:
            self.latch = None
        return byte & 0xFF

    def write(self, k, value):
        self.sync(k)
        access = self.access
        if access == 1:
            self.cr = value
        elif access == 2:
            self.cr = value << 8
        elif not self.write_msb:
            self.cr_lo = value
            self.write_msb = True
            if self.mode == 0:
                # First byte of a two-byte count stops counting, OUT low.
                self._freeze(k, out=False)
                self.seg_tc = None
                self.pend_edge = None
            return
        else:
            self.cr = self.cr_lo | value << 8
            self.write_msb = False
        self.cr_valid = True
        self._count_written(k)

    def _count_written(self, k):
        mode = self.mode
        if mode == 0:
            self._freeze(k, out=False)
            self.seg_tc = None
            self.pend_edge = k + 1
        elif mode == 4:
            self.pend_edge = k + 1
        elif mode == 2 or mode == 3:
            if not self.gate:
                return                      # loaded when the gate rises
            if not self.started or not self.seg_running:
                self.started = True
                self.pend_edge = k + 1
                self.pend_out = True
            elif self.pend_edge is None:
                self.pend_edge, self.pend_out = self._next_boundary(k)
        # modes 1/5: the count waits for a gate trigger

    def set_gate(self, k, level):
        level = bool(level)
        if level == self.gate:
            return
        self.sync(k)
        mode = self.mode
        if not level:
            if mode == 0 or mode == 4:
                self._freeze(k, running=False)
            elif mode == 2 or mode == 3:
                self._freeze(k, out=True, running=False)
                self.pend_edge = None
            self.gate = False
            return
        self.gate = True
        if mode == 0 or mode == 4:
            self._freeze(k, running=True)       # counting resumes
        elif self.cr_valid:               # modes 1, 2, 3, 5: (re)trigger
            self.pend_edge = k + 1
            self.pend_out = True
            self.started = True

    def fast_model(self):
        """(kind, start, ce, out, reload, limit) for reads inside the CPU
        (``cpu.core.timer_count``: the rule ``_seg_ce`` calls, wrapped to 16
        bits), or None when the counter must be read here (BCD)."""
        if self.bcd:
            return None
        start, running, ce, out, tc, reload = self._seg()
        limit = self.pend_edge if self.pend_edge is not None else 1 << 62
        kind = _kind(self.mode, running)
        return (kind, start, ce, out, reload if kind >= 2 else 0, limit)

    def info(self):
        eff = self.reload_value() if self.cr_valid else None
        return {
            "mode": self.mode, "bcd": self.bcd, "access": self.access,
            "gate": self.gate, "reload": eff,
            "frequency_hz": (PIT_HZ / eff) if eff else None,
        }

    def get_state(self):
        return {f: getattr(self, f) for f in self._FIELDS}

    def set_state(self, state):
        for f in self._FIELDS:
            setattr(self, f, state[f])


class Pit8253(Device):
    declaration = DeviceDeclaration(name="pit", ports=list(PIT_PORTS), irqs=[0])

    def __init__(self, pic=None, clock=None, on_out0=None, irq=0, name="pit"):
        self.pic = pic
        self.clock = clock
        self.on_out0 = on_out0
        self.irq = irq
        self.name = name
        # called (no arguments) after a write that reprograms counter 2 or
        # changes its gate: the speaker renderer (pypc_core.frontends.audio)
        self.on_channel2_change = None
        self.reset()

    def attach(self, board):
        board.claim_ports(PIT_PORTS, read=self.port_read, write=self.port_write)
        self.clock = board.clock
        self._counters = [board.counter(port, CYCLES_PER_TICK) for port in PIT_PORTS[:3]]
        self._portmap = self._counters[0].portmap   # (the counters' own parameter blocks)
        self._published = [None, None, None]
        board.add_publisher(self._publish)
        self._publish()

    # -- the CPU's copy of the counters (see the module docstring) ---------
    _portmap = None
    _counters = ()
    _published = (None, None, None)     # per counter: what its words hold (None: unknown)

    def _pull(self):
        """Take back what reads inside the CPU did to the flip-flops/latches."""
        pm = self._portmap
        if pm is None:
            return
        io = pm.port_io
        for ch, counter in zip(self.channels, self._counters):
            t = counter.base
            if io[t + _S.T_READS]:
                ch.read_msb = bool(io[t + _S.T_READ_MSB])
                ch.latch = int(io[t + _S.T_LATCH]) if io[t + _S.T_LATCHED] else None
                io[t + _S.T_READS] = 0

    def _publish(self):
        pm = self._portmap
        if pm is None or not pm.fast_reads:
            return
        io = pm.port_io
        published = self._published
        for i, (ch, counter) in enumerate(zip(self.channels, self._counters)):
            t = counter.base
            model = ch.fast_model()
            if model is None:
                counter.disable()
                published[i] = None
                continue
            # The words change only here and by the CPU's reads (which
            # count themselves in T_READS): a timer tick, which leaves a
            # counter's segment as it was, writes nothing.
            record = model + (ch.access, ch.read_msb, ch.latch)
            if record == published[i] and counter.enabled and io[t + _S.T_READS] == 0:
                continue
            published[i] = record
            kind, start, ce, out, reload, limit = model
            io[t + _S.T_KIND] = kind
            io[t + _S.T_START] = start
            io[t + _S.T_CE] = ce
            io[t + _S.T_OUT] = 1 if out else 0
            io[t + _S.T_RELOAD] = reload
            io[t + _S.T_LIMIT] = limit
            io[t + _S.T_ACCESS] = ch.access
            io[t + _S.T_READ_MSB] = 1 if ch.read_msb else 0
            io[t + _S.T_LATCHED] = 0 if ch.latch is None else 1
            io[t + _S.T_LATCH] = 0 if ch.latch is None else ch.latch
            io[t + _S.T_READS] = 0
            counter.enable()

    def reset(self):
        self.channels = [PitChannel(0), PitChannel(1), PitChannel(2, gate=False)]
        self.tick = 0
        self.out0_level = False
        if self.clock is not None:
            self.tick = self.clock() // CYCLES_PER_TICK
            for ch in self.channels:
                ch.seg_start = self.tick
        self._publish()

    # -- time --------------------------------------------------------------
    def _now(self):
        if self.clock is None:
            return self.tick
        return max(self.tick, self.clock() // CYCLES_PER_TICK)

    def _set_out0(self, level):
        self.out0_level = level
        if self.on_out0 is not None:
            self.on_out0(level)
        elif self.pic is not None:
            if level:
                self.pic.raise_irq(self.irq)
            else:
                self.pic.lower_irq(self.irq)

    def _catch_up(self, k):
        if k <= self.tick:
            return self.tick
        ch0 = self.channels[0]
        edge = ch0.next_rise(self.tick)
        for ch in self.channels:
            ch.sync(k)
        self.tick = k
        if edge is not None and edge <= k:
            if self.out0_level:
                self._set_out0(False)
            self._set_out0(True)
        self._report()
        return k

    def _report(self):
        level = self.channels[0].output(self.tick)
        if level != self.out0_level:
            self._set_out0(level)

    def advance(self, cycle):
        self._pull()
        self._catch_up(cycle // CYCLES_PER_TICK)
        self._publish()

    def next_event(self):
        edge = self.channels[0].next_rise(self.tick)
        return None if edge is None else edge * CYCLES_PER_TICK

    # -- ports -------------------------------------------------------------
    def port_read(self, port):
        self._pull()
        k = self._catch_up(self._now())
        index = port & 3
        if index == 3:
            return 0xFF                     # control register is write-only
        value = self.channels[index].read(k)
        self._publish()
        return value

    def port_write(self, port, value):
        self._pull()
        self._port_write(port, value)
        self._publish()

    def _port_write(self, port, value):
        k = self._catch_up(self._now())
        value &= 0xFF
        index = port & 3
        if index == 3:
            sc = value >> 6
            if sc == 3:
                return                      # read-back exists on the 8254 only
            ch = self.channels[sc]
            if value & 0x30 == 0:
                ch.latch_count(k)
            else:
                ch.control(k, value)
        else:
            self.channels[index].write(k, value)
        self._report()
        hook = self.on_channel2_change
        if hook is not None and (index == 2 or (index == 3 and value >> 6 == 2)):
            hook()

    # -- lines to the rest of the board -----------------------------------
    def set_gate(self, index, level):
        self._pull()
        k = self._catch_up(self._now())
        self.channels[index].set_gate(k, level)
        self._report()
        self._publish()
        if index == 2 and self.on_channel2_change is not None:
            self.on_channel2_change()

    def set_gate2(self, level):
        """PPI port 61h bit 0."""
        self.set_gate(2, level)

    def output(self, index):
        k = self._catch_up(self._now())
        return self.channels[index].output(k)

    def output2(self):
        """Counter 2 output (PPI port 62h bit 5, speaker)."""
        return self.output(2)

    def count(self, index):
        """Current counting-element value (raw, BCD-encoded in BCD mode),
        without disturbing latches or flip-flops."""
        k = self._catch_up(self._now())
        return self.channels[index].raw_value(k)

    def channel_info(self, index):
        return self.channels[index].info()

    # -- snapshots ---------------------------------------------------------
    def get_state(self):
        self._pull()
        return {"tick": self.tick, "out0_level": self.out0_level,
                "channels": [ch.get_state() for ch in self.channels]}

    def set_state(self, state):
        self.tick = state["tick"]
        self.out0_level = state["out0_level"]
        for ch, st in zip(self.channels, state["channels"]):
            ch.set_state(st)
        self._publish()
