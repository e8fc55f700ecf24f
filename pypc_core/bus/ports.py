"""The I/O port map: which device answers each of the 65,536 ports.

Devices claim ports with read/write handlers.  ``port_kind`` (an
``np.uint8[65536]`` handed to the jitted core) tells the core how to answer:

* unclaimed: inside the JIT (reads FFh, writes vanish);
* Python: an exit to the device's handler (about half a microsecond);
* value: the device gave a ``peek`` (a side-effect-free read), so reads are
  answered inside the JIT from ``port_io`` and only writes exit.  Ports that
  guests poll (PIC, PPI/keyboard) go this way; the machine calls
  ``refresh()`` after anything on the Python side may have changed them;
* raster: a video status port computed from the cycle counter inside the JIT
  (``set_raster``), so retrace polling never leaves the core.

Two devices claiming one port is a start-up error naming both.
"""

import numpy as np

from ..cpu.core import (PORT_NONE, PORT_PY, PORT_VALUE, PORT_RASTER, PORT_STAMP,
                        RASTER_BASE, STAMP_BASE, PIO_SIZE)

PORT_UNCLAIMED = PORT_NONE
PORT_PYTHON = PORT_PY


class PortConflictError(ValueError):
    """Two devices claimed the same I/O port."""


class PortMap:
    def __init__(self):
        self.port_kind = np.zeros(65536, dtype=np.uint8)
        self.port_io = np.zeros(PIO_SIZE, dtype=np.int64)
        self._peek = {}
        self._peek_owners = set()
        self._timing_owners = set()
        self.dirty = False
        self.timing_dirty = False       # a device with timed events may have changed
        self.fast_reads = True          # False: every claimed port exits to Python
        self._publishers = []
        self._owner = {}
        self._read = {}
        self._write = {}

    def claim(self, owner, ports, read=None, write=None, peek=None):
        """Claim ``ports`` (an iterable of ints or a range) for ``owner``.

        ``read(port) -> int`` and ``write(port, value)`` handle single bytes;
        the bus splits word accesses into two byte accesses (as the 8088's
        8-bit bus does).  ``peek(port) -> int | None`` is an optional
        side-effect-free read that lets the CPU answer reads itself; it
        returns None while a read would have side effects (then the read
        goes to ``read``).
        """
        ports = list(ports)
        for port in ports:
            if not 0 <= port <= 0xFFFF:
                raise PortConflictError(f"{owner}: port {port!r} is outside 0000h-FFFFh")
            other = self._owner.get(port)
            if other is not None:
                raise PortConflictError(
                    f"I/O port {port:04X}h claimed by both {other} and {owner}")
        for port in ports:
            self._owner[port] = owner
            self._read[port] = read
            self._write[port] = write
            self.port_kind[port] = PORT_PYTHON
            if peek is not None:
                self._peek[port] = peek
        if peek is not None:
            self._peek_owners.add(owner)
            self.refresh()

    def mark_timing(self, owner):
        """Accesses to ``owner``'s ports can move a device event (the PIT,
        or the PPI that gates it and clocks the keyboard): the scheduler
        recomputes its deadline after them."""
        self._timing_owners.add(owner)

    def add_publisher(self, publish):
        """``publish()`` re-publishes a device's in-CPU read model (PIT,
        video status); called when fast reads are switched back on."""
        self._publishers.append(publish)

    def set_fast_reads(self, enabled):
        """Switch reads answered inside the CPU on or off.  Off, every
        claimed port goes through its Python handler (I/O tracing wants to
        see each access; tests compare both paths)."""
        self.fast_reads = bool(enabled)
        if not self.fast_reads:
            kind = self.port_kind
            kind[(kind > PORT_PY) & (kind != PORT_STAMP)] = PORT_PY
            return
        self.refresh()
        for publish in self._publishers:
            publish()

    def refresh(self):
        """Re-read every peekable port into ``port_io``."""
        kind = self.port_kind
        io = self.port_io
        fast = self.fast_reads
        for port, peek in self._peek.items():
            v = peek(port) if fast else None
            if v is None:
                kind[port] = PORT_PY
            else:
                kind[port] = PORT_VALUE
                io[port] = v & 0xFF
        self.dirty = False

    def set_raster(self, port, epoch_dots, line_dots, hdisp_dots, frame_dots,
                   vdisp_lines, vsync_start, vsync_end, constant_bits, blank_bit, vsync_bit):
        """Let the CPU compute reads of ``port`` (a video status register)
        from the cycle counter: dot = cycle * 3 - epoch_dots, wrapped to a
        frame; ``blank_bit`` is set outside the displayed area, ``vsync_bit``
        on lines [vsync_start, vsync_end).  Writes still go to the handler."""
        if self._owner.get(port) is None:
            raise PortConflictError(f"port {port:04X}h must be claimed before set_raster")
        if line_dots <= 0 or frame_dots <= 0:
            raise ValueError("raster timing needs positive line and frame lengths")
        if not self.fast_reads:
            return
        self.port_io[RASTER_BASE:RASTER_BASE + 10] = (
            epoch_dots, line_dots, hdisp_dots, frame_dots, vdisp_lines, vsync_start,
            vsync_end, constant_bits, blank_bit, vsync_bit)
        self.port_kind[port] = PORT_RASTER

    def claim_stamp(self, owner, port, burst_gap):
        """A write-only port whose writes the CPU counts and time-stamps
        without leaving the JIT (one per machine: the built-in BIOS marks
        its empty keyboard polls with it).  Writes less than ``burst_gap``
        cycles apart form a burst.  Reads give FFh."""
        self.claim(owner, [port])
        self.port_kind[port] = PORT_STAMP
        self.port_io[STAMP_BASE:STAMP_BASE + 6] = (0, -(1 << 40), 0, 0, 0, burst_gap)

    def stamp(self):
        """(count, last write cycle, burst start cycle, writes in the burst,
        last value) of the stamp port."""
        io = self.port_io
        return tuple(int(x) for x in io[STAMP_BASE:STAMP_BASE + 5])

    def owner(self, port):
        return self._owner.get(port & 0xFFFF)

    def claims(self):
        """{owner: sorted list of ports}."""
        out = {}
        for port, owner in self._owner.items():
            out.setdefault(owner, []).append(port)
        return {k: sorted(v) for k, v in out.items()}

    def read_byte(self, port):
        port &= 0xFFFF
        handler = self._read.get(port)
        if handler is None:
            return 0xFF
        owner = self._owner[port]
        if owner in self._peek_owners:
            self.dirty = True
        if owner in self._timing_owners:
            self.timing_dirty = True
        return int(handler(port)) & 0xFF

    def write_byte(self, port, value):
        port &= 0xFFFF
        handler = self._write.get(port)
        if handler is not None:
            # a write to a device whose reads the CPU answers may change
            # them; a device that changes another's (an IRQ into the PIC)
            # marks the map dirty itself
            owner = self._owner[port]
            if owner in self._peek_owners:
                self.dirty = True
            if owner in self._timing_owners:
                self.timing_dirty = True
            handler(port, value & 0xFF)
            return True
        return port in self._owner

    def read(self, port, width=1):
        if width == 1:
            return self.read_byte(port)
        return self.read_byte(port) | (self.read_byte(port + 1) << 8)

    def write(self, port, value, width=1):
        handled = self.write_byte(port, value)
        if width == 2:
            handled = self.write_byte(port + 1, value >> 8) or handled
        return handled
