"""The I/O port map: which device answers each of the 65,536 ports.

Devices claim ports with read/write handlers.  ``port_kind`` (an
``np.uint8[65536]`` handed to the jitted core) tells the core how to answer
(``cpu.state.PORT_*``):

* unclaimed: inside the JIT (reads FFh, writes vanish);
* Python: an exit to the device's handler (about half a microsecond);
* value: the device gave a ``peek`` (a side-effect-free read), so reads are
  answered inside the JIT from ``port_io`` and only writes exit.  Ports that
  guests poll (PIC, PPI/keyboard, UART status) go this way; the machine calls
  ``refresh()`` after anything on the Python side may have changed them;
* the generic primitives of ``fastpath.py`` (raster status bits, counters,
  one-shots, stamps, compiled handlers), each with its own parameter block,
  as many as devices ask for.

Two devices claiming one port is a start-up error naming both.
"""

import numpy as np

from ..cpu.state import (PIO_POOL, PIO_SIZE, PORT_NONE, PORT_PY, PORT_STAMP, PORT_VALUE,
                         STAMP_WORDS)
from . import fastpath

PORT_UNCLAIMED = PORT_NONE
PORT_PYTHON = PORT_PY


class PortConflictError(ValueError):
    """Two devices claimed the same I/O port."""


class PortMap:
    def __init__(self):
        self.port_kind = np.zeros(65536, dtype=np.uint8)
        self.port_io = np.zeros(PIO_SIZE, dtype=np.int64)
        self._pool_next = PIO_POOL
        self._fast = {}                 # port -> FastPort
        self._peek = {}
        self._peek_groups = {}          # owner -> [(port, peek)]
        self._peek_owners = set()
        self._dirty_owners = set()      # owners whose peeked ports may be stale
        self._timing_owners = set()
        self._all_dirty = False
        # True while some ports the CPU answers may be stale (``refresh``): a
        # plain attribute, read by the scheduler at every exit
        self.dirty = False
        self.timing_dirty = False       # a device with timed events may have changed
        self.fast_reads = True          # False: every claimed port exits to Python
        self._fast_wanted = True        # what set_fast_reads asked (observers force off)
        self._observers = []            # add_observer: [(observer, unclaimed)]
        self._unclaimed_exiting = None  # ports an observer made exit (np array)
        self._publishers = []
        self._owner = {}
        self._read = {}
        self._write = {}
        self.clock = lambda: 0          # the CPU cycle (the machine sets it)

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
                self._peek_groups.setdefault(owner, []).append((port, peek))
        if peek is not None:
            self._peek_owners.add(owner)
            self.refresh()

    def mark_all_dirty(self):
        """Every peeked port may be stale (a device changed in a way the map
        cannot attribute to one owner)."""
        self._all_dirty = True
        self.dirty = True

    def mark_dirty(self, owner):
        """The peeked ports of ``owner`` only may be stale."""
        if owner in self._peek_owners:
            self._dirty_owners.add(owner)
            self.dirty = True

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
        claimed port goes through its Python handler (tests compare both
        paths).  While an observer is on (:meth:`add_observer`) they stay
        off; this setting applies again once the last one leaves."""
        self._fast_wanted = bool(enabled)
        self._apply_fast_reads(self._fast_wanted and not self._observers)

    def _apply_fast_reads(self, enabled):
        self.fast_reads = bool(enabled)
        if not self.fast_reads:
            kind = self.port_kind
            kind[(kind > PORT_PY) & (kind != PORT_STAMP)] = PORT_PY
            return
        self.refresh()
        for prim in self._fast.values():
            prim.restore()
        for publish in self._publishers:
            publish()

    # -- observers -----------------------------------------------------------
    def add_observer(self, observer, unclaimed=False):
        """Let ``observer`` see every port access through this map, the
        guest's and the host's: ``observer.before_write(port, value, width)``
        and ``observer.after_write(port, value, width)`` around each write,
        ``observer.after_read(port, width, value)`` after each read (each
        optional).  While any observer is on, every claimed port exits to
        Python (so none is answered unseen inside the CPU); ``unclaimed``:
        ports no device claims exit too (reads FFh, writes vanish, as
        before), so a guest's probes are seen.  An observer added twice is
        there once."""
        if any(o is observer for o, _ in self._observers):
            return
        self._observers.append((observer, bool(unclaimed)))
        self._apply_observers()

    def remove_observer(self, observer):
        """Take ``observer`` away (no error if it is not there); the last
        one leaving puts the fast paths back as :meth:`set_fast_reads` set
        them."""
        before = len(self._observers)
        self._observers = [(o, u) for o, u in self._observers if o is not observer]
        if len(self._observers) != before:
            self._apply_observers()

    def _apply_observers(self):
        observers = self._observers
        kind = self.port_kind
        want_unclaimed = any(u for _, u in observers)
        if want_unclaimed and self._unclaimed_exiting is None:
            ports = np.flatnonzero(kind == PORT_NONE)
            kind[ports] = PORT_PY
            self._unclaimed_exiting = ports
        elif not want_unclaimed and self._unclaimed_exiting is not None:
            ports = self._unclaimed_exiting
            self._unclaimed_exiting = None
            ports = [p for p in ports[kind[ports] == PORT_PY].tolist()
                     if p not in self._owner]
            kind[ports] = PORT_NONE
        self._before_write = tuple(o.before_write for o, _ in observers
                                   if hasattr(o, "before_write"))
        self._after_write = tuple(o.after_write for o, _ in observers
                                  if hasattr(o, "after_write"))
        self._after_read = tuple(o.after_read for o, _ in observers
                                 if hasattr(o, "after_read"))
        if observers:
            # this map's own switch to its observed access (the plain
            # methods stay free of any observer check)
            self.read = self._observed_read
            self.write = self._observed_write
            if self.fast_reads:
                self._apply_fast_reads(False)
        else:
            self.__dict__.pop("read", None)
            self.__dict__.pop("write", None)
            if self._fast_wanted and not self.fast_reads:
                self._apply_fast_reads(True)

    @property
    def observed(self):
        """True while an observer is on."""
        return bool(self._observers)

    def _observed_read(self, port, width=1):
        value = PortMap.read(self, port, width)
        for fn in self._after_read:
            fn(port & 0xFFFF, width, value)
        return value

    def _observed_write(self, port, value, width=1):
        for fn in self._before_write:
            fn(port & 0xFFFF, value, width)
        handled = PortMap.write(self, port, value, width)
        for fn in self._after_write:
            fn(port & 0xFFFF, value, width)
        return handled

    def refresh(self):
        """Re-read the stale peekable ports (all of them after ``dirty =
        True``, else those of the owners marked) into ``port_io``."""
        kind = self.port_kind
        io = self.port_io
        fast = self.fast_reads
        if self._all_dirty or not self._dirty_owners:
            groups = self._peek_groups.values()
        else:
            groups = [self._peek_groups[o] for o in self._dirty_owners]
        prims = self._fast
        for group in groups:
            for port, peek in group:
                prim = prims.get(port)
                if fast and prim is not None and prim.enabled:
                    continue                    # the core answers it another way
                v = peek(port) if fast else None
                if v is None:
                    kind[port] = PORT_PY
                else:
                    kind[port] = PORT_VALUE
                    io[port] = v & 0xFF
        self._all_dirty = False
        self._dirty_owners.clear()
        self.dirty = False

    # -- fast paths ----------------------------------------------------------
    def _block(self, owner, port, words):
        if self._owner.get(port) != owner:
            raise PortConflictError(
                f"{owner}: port {port:04X}h must be claimed by {owner} before a fast path "
                f"is put on it (it is {'claimed by ' + self._owner[port] if port in self._owner else 'unclaimed'})")
        if port in self._fast:
            raise PortConflictError(f"{owner}: port {port:04X}h already has a fast path")
        base = self._pool_next
        if base + words > PIO_SIZE:
            raise PortConflictError(f"{owner}: no room left for fast-path parameters "
                                    f"({PIO_SIZE - PIO_POOL} words in all)")
        self._pool_next += words
        return base

    def _add_fast(self, prim):
        self._fast[prim.port] = prim
        self.port_io[prim.port] = prim.base
        return prim

    def raster(self, owner, port):
        """A :class:`fastpath.Raster` on ``port``: reads computed from the
        cycle once ``set(...)`` has given the timing; writes exit."""
        return self._add_fast(fastpath.Raster(
            self, port, self._block(owner, port, fastpath.Raster.words)))

    def counter(self, owner, port, cycles_per_edge):
        """A :class:`fastpath.Counter` on ``port``, clocked every
        ``cycles_per_edge`` CPU cycles (the owner publishes its segments)."""
        return self._add_fast(fastpath.Counter(
            self, port, self._block(owner, port, fastpath.Counter.words), cycles_per_edge))

    def oneshot(self, owner, port, masks, constant_bits=0):
        """A :class:`fastpath.OneShot` on ``port``: one one-shot per bit mask
        in ``masks``; a write fires them all, inside the core."""
        masks = [int(m) & 0xFF for m in masks]
        if not 1 <= len(masks) <= 8:
            raise ValueError("a one-shot port has 1 to 8 one-shots")
        words = fastpath.O_FIRST + fastpath.ONESHOT_WORDS_EACH * len(masks)
        return self._add_fast(fastpath.OneShot(
            self, port, self._block(owner, port, words), masks, constant_bits & 0xFF))

    def compiled(self, owner, port, handler):
        """Reads and writes of ``port`` call ``handler`` (a compiled
        :class:`~pypc_core.bus.memory.Handler`) inside the core."""
        return self._add_fast(fastpath.Compiled(
            self, port, self._block(owner, port, fastpath.Compiled.words), handler))

    def claim_stamp(self, owner, port, burst_gap):
        """A write-only port whose writes the CPU counts and time-stamps
        without leaving the JIT (the built-in BIOS marks its empty keyboard
        polls with it).  Writes less than ``burst_gap`` cycles apart form a
        burst.  Reads give FFh.  Returns the :class:`fastpath.Stamp`."""
        self.claim(owner, [port])
        prim = fastpath.Stamp(self, port, self._block(owner, port, STAMP_WORDS), burst_gap)
        return self._add_fast(prim)

    def fast(self, port):
        """The fast-path primitive on ``port`` (None if it has none)."""
        return self._fast.get(port & 0xFFFF)

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
            prim = self._fast.get(port)
            if prim is not None and hasattr(prim, "read") and prim.kind != PORT_STAMP:
                # a primitive without a device handler: the bus answers as
                # the core does
                return prim.read(self.clock())
            return 0xFF
        owner = self._owner[port]
        if owner in self._peek_owners:
            self._dirty_owners.add(owner)
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
                self._dirty_owners.add(owner)
                self.dirty = True
            if owner in self._timing_owners:
                self.timing_dirty = True
            handler(port, value & 0xFF)
            return True
        prim = self._fast.get(port)
        if prim is not None:
            if prim.kind == PORT_STAMP:
                prim.write(self.clock(), value & 0xFF)
            elif isinstance(prim, fastpath.OneShot):
                prim.fire(self.clock())
            elif isinstance(prim, fastpath.Compiled):
                prim.write(value & 0xFF, self.clock())
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
