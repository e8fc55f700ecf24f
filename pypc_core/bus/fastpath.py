"""Ports the CPU core answers itself: the generic primitives a device fills
from Python.

Each primitive owns a parameter block in the pool of ``PortMap.port_io``
(``port_io[port]`` holds the block's index, ``cpu.state`` the layouts) and
marks its port with a ``PORT_*`` kind.  The core evaluates the block on every
access without leaving the JIT; ``read``/``write`` here call the very same
compiled functions of ``cpu.core`` (one implementation of each primitive), so
a device's own handlers, and the bus when fast paths are switched off for
tracing, give exactly the same answers.

* :class:`Raster` -- status bits from a raster position (blank outside the
  displayed area, vertical sync on some lines, constant bits); the dot clock
  is ``cycle * num // den``;
* :class:`Counter` -- an 8253-style down counter read a byte at a time
  (flip-flop and latch handled in the core; the PIT publishes its segment);
* :class:`OneShot` -- N one-shots: a write fires all of them, a read gives
  the mask of each one still running over constant bits;
* :class:`Stamp` -- writes are counted and time-stamped (no exit);
* :class:`Compiled` -- reads and writes call a compiled handler
  (``Handler``, the same C protocol as memory windows).

Every primitive is written by exactly one device, on the port it claimed.
"""

from ..cpu import core
from ..cpu.state import (
    COUNTER_WORDS, CALL_WORDS, HANDLER_READ, K_CTX, K_FN, O_CONST, O_COUNT, O_FIRES,
    O_FIRST, O_LAST, ONESHOT_WORDS_EACH, PORT_CALL, PORT_COUNTER, PORT_ONESHOT, PORT_PY,
    PORT_RASTER, PORT_STAMP, R_BLANK, R_CONST, R_DEN, R_EPOCH, R_FRAME, R_HDISP, R_LINE,
    R_NUM, R_VDISP, R_VS0, R_VS1, R_VSYNC, RASTER_WORDS, STAMP_WORDS, T_DIV,
)


class FastPort:
    """Base: one port, one block in ``port_io``."""
    kind = PORT_PY
    words = 0

    def __init__(self, portmap, port, base):
        self.portmap = portmap
        self.port = port
        self.base = base
        self.enabled = False          # the device wants the core to answer

    @property
    def io(self):
        return self.portmap.port_io

    def enable(self):
        """Let the core answer this port (if fast reads are on)."""
        self.enabled = True
        self.restore()

    def disable(self):
        """Send accesses to the device's Python handlers again."""
        self.enabled = False
        self.portmap.port_kind[self.port] = PORT_PY

    def restore(self):
        pm = self.portmap
        if self.enabled and (pm.fast_reads or self.kind in _ALWAYS_FAST):
            pm.port_kind[self.port] = self.kind
        pm.port_io[self.port] = self.base


class Raster(FastPort):
    kind = PORT_RASTER
    words = RASTER_WORDS

    def set(self, epoch, line, hdisp, frame, vdisp, vsync_start, vsync_end,
            constant_bits, blank_bit, vsync_bit, num=1, den=1):
        """dot = cycle * num // den - epoch, position = dot mod ``frame``;
        ``blank_bit`` outside [0, vdisp) lines x [0, hdisp) dots, ``vsync_bit``
        on lines [vsync_start, vsync_end), ``constant_bits`` always."""
        if line <= 0 or frame <= 0 or num <= 0 or den <= 0:
            raise ValueError("raster timing needs positive line, frame, num and den")
        b = self.base
        io = self.io
        io[b + R_EPOCH] = epoch
        io[b + R_LINE] = line
        io[b + R_HDISP] = hdisp
        io[b + R_FRAME] = frame
        io[b + R_VDISP] = vdisp
        io[b + R_VS0] = vsync_start
        io[b + R_VS1] = vsync_end
        io[b + R_CONST] = constant_bits
        io[b + R_BLANK] = blank_bit
        io[b + R_VSYNC] = vsync_bit
        io[b + R_NUM] = num
        io[b + R_DEN] = den
        self.enable()

    def read(self, cycle):
        return int(core.raster_read(self.io, self.base, cycle))


class Counter(FastPort):
    """The words ``cpu.state.T_*`` at ``base``; the owner (the PIT) writes
    and reads them back itself."""
    kind = PORT_COUNTER
    words = COUNTER_WORDS

    def __init__(self, portmap, port, base, cycles_per_edge):
        super().__init__(portmap, port, base)
        portmap.port_io[base + T_DIV] = cycles_per_edge

    def word(self, index):
        return int(self.io[self.base + index])

    def set_word(self, index, value):
        self.io[self.base + index] = value


class OneShot(FastPort):
    kind = PORT_ONESHOT

    def __init__(self, portmap, port, base, masks, constant_bits):
        super().__init__(portmap, port, base)
        io = portmap.port_io
        io[base + O_CONST] = constant_bits
        io[base + O_COUNT] = len(masks)
        io[base + O_FIRES] = 0
        io[base + O_LAST] = -(1 << 40)
        for i, mask in enumerate(masks):
            e = base + O_FIRST + i * ONESHOT_WORDS_EACH
            io[e] = mask
            io[e + 1] = 0
            io[e + 2] = -(1 << 40)           # expired long ago
        self.count = len(masks)
        self.enable()

    def _e(self, i):
        if not 0 <= i < self.count:
            raise IndexError(f"one-shot {i} of {self.count}")
        return self.base + O_FIRST + i * ONESHOT_WORDS_EACH

    @property
    def constant_bits(self):
        return int(self.io[self.base + O_CONST])

    @constant_bits.setter
    def constant_bits(self, value):
        self.io[self.base + O_CONST] = value & 0xFF

    def duration(self, i):
        return int(self.io[self._e(i) + 1])

    def set_duration(self, i, cycles):
        """The length of one-shot ``i`` from its next fire on."""
        self.io[self._e(i) + 1] = int(cycles)

    def expiry(self, i):
        return int(self.io[self._e(i) + 2])

    def set_expiry(self, i, cycle):
        self.io[self._e(i) + 2] = int(cycle)

    @property
    def fires(self):
        return int(self.io[self.base + O_FIRES])

    @property
    def last_fire(self):
        return int(self.io[self.base + O_LAST])

    def set_fires(self, fires, last_fire):
        """Restore the fire count and the cycle of the last fire (snapshots)."""
        self.io[self.base + O_FIRES] = int(fires)
        self.io[self.base + O_LAST] = int(last_fire)

    def read(self, cycle):
        return int(core.oneshot_read(self.io, self.base, cycle))

    def fire(self, cycle):
        core.oneshot_fire(self.io, self.base, cycle)


class Stamp(FastPort):
    kind = PORT_STAMP
    words = STAMP_WORDS

    def __init__(self, portmap, port, base, burst_gap):
        super().__init__(portmap, port, base)
        portmap.port_io[base:base + STAMP_WORDS] = (0, -(1 << 40), 0, 0, 0, burst_gap)
        self.enable()

    def write(self, cycle, value):
        core.stamp_write(self.io, self.base, value, cycle)

    def values(self):
        """(count, last write cycle, burst start cycle, writes in the burst,
        last value)."""
        return tuple(int(x) for x in self.io[self.base:self.base + 5])


class Compiled(FastPort):
    kind = PORT_CALL
    words = CALL_WORDS

    def __init__(self, portmap, port, base, handler):
        super().__init__(portmap, port, base)
        self.handler = handler
        portmap.port_io[base + K_FN] = handler.address
        portmap.port_io[base + K_CTX] = handler.context
        self.enable()

    def read(self, cycle):
        return self.handler.port_read(self.port, cycle)

    def write(self, value, cycle):
        self.handler.port_write(self.port, value, cycle)


# kinds whose writes the core completes: they stay fast when reads are
# switched to Python (their state lives only in the block)
_ALWAYS_FAST = (PORT_STAMP,)

__all__ = ["FastPort", "Raster", "Counter", "OneShot", "Stamp", "Compiled", "HANDLER_READ"]
