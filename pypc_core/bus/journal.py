"""Write journals: every byte of a memory window that a write changes, in
program order, for a recorder (the RPC's ``video.history``).

A journal is switched on by *overlaying* the window's pages with a handler
(``MemoryMap.overlay_handler``): while it is on, every data access of the
CPU to those pages calls a compiled handler that does what the page did
before and appends ``(kind, offset, old, new, cycle)`` to a :class:`WriteLog`
when a byte changes.  The handler is *clocked* (its pages are PG_CLOCKED):
the core gives each write the cycle its instruction began at -- a REP
string's, its iteration's -- in ``op >> 1``, so every entry carries its
exact emulated time however long the log waits to be drained.  Switched off, the pages are exactly what they were: with
no journal on, nothing on the CPU's path changes.

* :class:`WriteLog` -- ``int64`` words: a header (entry count, capacity,
  entries lost to a full log) and the entries.  The compiled side appends;
  the Python side drains.  ``flush`` (set by the recorder) is called by
  Python-side writers (firmware services, the RPC's ``memory.write``)
  before and after they write, so their entries come after the CPU's in
  order and the log never fills from Python.
* :class:`RamJournal` -- a RAM window of ``size`` bytes seen ``copies``
  times in a row (a CGA's 16 KiB at B8000h and again at BC000h): the
  handler keeps every copy equal, as the alias pages did, and logs kind
  ``TEXT`` with the offset in the first copy.  Logging can be paused
  (``set_logging(False)``: a card in a graphics mode) while the handler
  keeps writing.
* :func:`voidptr` -- an ``int64`` address as a numba ``voidptr``: a compiled
  handler reaches arrays (the log, ``mem``) whose addresses its context
  holds.
"""

import numpy as np
from llvmlite import ir
from numba import carray, cfunc, njit, types
from numba.extending import intrinsic

from ..cpu.state import HANDLER_READ, MEM_SIZE
from .memory import Handler

# entry kinds (what the recorder makes of them is its business)
TEXT = 1
FONT = 2

L_COUNT = 0          # entries in the log now
L_CAPACITY = 1       # entries it holds
L_LOST = 2           # entries the compiled side could not append (log full)
L_HEADER = 8
ENTRY_WORDS = 5      # kind, offset, old, new, cycle

JIT = dict(cache=True, nogil=True, error_model="numpy")


@intrinsic
def voidptr(typingctx, address):
    """An int64 address as a ``voidptr`` (for ``numba.carray``)."""
    if address != types.int64:
        return None
    sig = types.voidptr(types.int64)

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], ir.IntType(8).as_pointer())

    return sig, codegen


@njit(**JIT)
def log_append(log, kind, offset, old, new, cycle):
    n = log[L_COUNT]
    if n >= log[L_CAPACITY]:
        log[L_LOST] += 1
        return
    e = L_HEADER + n * ENTRY_WORDS
    log[e] = kind
    log[e + 1] = offset
    log[e + 2] = old
    log[e + 3] = new
    log[e + 4] = cycle
    log[L_COUNT] = n + 1


@njit(**JIT)
def apply_entries(entries, kind, array):
    """Store the ``new`` byte of every entry of ``kind`` in ``array`` at its
    offset, in order (a later write of a byte wins): a copy kept up to date
    from drained entries."""
    for i in range(entries.shape[0]):
        if entries[i, 0] == kind:
            array[entries[i, 1]] = entries[i, 3]


class WriteLog:
    """The entries of a journal, appended in program order."""

    def __init__(self, capacity=1 << 16):
        self.words = np.zeros(L_HEADER + capacity * ENTRY_WORDS, dtype=np.int64)
        self.words[L_CAPACITY] = capacity
        self.flush = None            # fn(): the recorder drains the log now

    @property
    def address(self):
        return int(self.words.ctypes.data)

    @property
    def capacity(self):
        return int(self.words[L_CAPACITY])

    def room(self):
        return self.capacity - int(self.words[L_COUNT])

    def drain(self):
        """``(entries, lost)``: the entries (an ``int64[n, 5]`` copy of kind,
        offset, old, new, cycle) since the last drain and how many were lost
        to a full log; the log is empty afterwards."""
        w = self.words
        n = int(w[L_COUNT])
        entries = w[L_HEADER:L_HEADER + n * ENTRY_WORDS].reshape(n, ENTRY_WORDS).copy()
        lost = int(w[L_LOST])
        w[L_COUNT] = 0
        w[L_LOST] = 0
        return entries, lost

    def append_many(self, kind, offsets, old, new, cycle):
        """Entries from Python (numpy arrays of equal length, all at emulated
        ``cycle``), in order; drains through ``flush`` when they do not fit."""
        n = len(offsets)
        pos = 0
        while pos < n:
            if self.room() == 0:
                self.flush_now()
                if self.room() == 0:           # nobody drains: count them lost
                    self.words[L_LOST] += n - pos
                    return
            k = min(n - pos, self.room())
            w = self.words
            c = int(w[L_COUNT])
            rows = w[L_HEADER + c * ENTRY_WORDS:L_HEADER + (c + k) * ENTRY_WORDS].reshape(
                k, ENTRY_WORDS)
            rows[:, 0] = kind
            rows[:, 1] = offsets[pos:pos + k]
            rows[:, 2] = old[pos:pos + k]
            rows[:, 3] = new[pos:pos + k]
            rows[:, 4] = cycle
            w[L_COUNT] = c + k
            pos += k

    def flush_now(self):
        if self.flush is not None:
            self.flush()


# -- a RAM window and its copies ---------------------------------------------------------
# context words of the compiled handler
R_MEM = 0            # address of the memory map's ``mem``
R_LOG = 1            # address of the WriteLog's words
R_BASE = 2           # linear address of the first copy
R_SIZE = 3           # bytes of one copy
R_COPIES = 4         # copies in a row
R_LOGGING = 5        # 1: log changes (0: write only)
R_WORDS = 8

_RAM_HANDLER = None


def ram_handler():
    """The compiled handler of a :class:`RamJournal` (built once, cached
    on disk by numba)."""
    global _RAM_HANDLER
    if _RAM_HANDLER is None:
        sig = types.int64(types.voidptr, types.int64, types.int64, types.int64)

        @cfunc(sig, nopython=True, cache=True, error_model="numpy")
        def handler(ctx, a, v, op):
            c = carray(ctx, (R_WORDS,), np.int64)
            mem = carray(voidptr(c[R_MEM]), (MEM_SIZE,), np.uint8)
            if (op & 1) == 0:
                return np.int64(mem[a])
            base = c[R_BASE]
            size = c[R_SIZE]
            off = (a - base) & (size - 1)          # size is a power of two
            old = np.int64(mem[base + off])
            v &= 0xFF
            for k in range(c[R_COPIES]):
                mem[base + k * size + off] = v
            if old != v and c[R_LOGGING] != 0:
                log = carray(voidptr(c[R_LOG]), (L_HEADER,), np.int64)
                cap = log[L_CAPACITY]
                log = carray(voidptr(c[R_LOG]), (L_HEADER + cap * ENTRY_WORDS,), np.int64)
                log_append(log, TEXT, off, old, v, op >> 1)     # op >> 1: the cycle
            return 0

        _RAM_HANDLER = handler
    return _RAM_HANDLER


class RamJournal:
    """A journal on ``copies`` consecutive copies of a ``size``-byte RAM
    window at ``base`` of ``memory`` (a MemoryMap), logging into ``log``.
    ``start()`` overlays the pages, ``stop()`` gives them back."""

    def __init__(self, memory, base, size, copies, log, owner="journal"):
        if size <= 0 or size & (size - 1):
            raise ValueError(f"{owner}: a journaled RAM window is a power of two bytes, "
                             f"not {size}")
        self.memory = memory
        self.base, self.size, self.copies = base, size, copies
        self.log = log
        self.ctx = np.zeros(R_WORDS, dtype=np.int64)
        self.ctx[R_MEM] = memory.mem.ctypes.data
        self.ctx[R_LOG] = log.address
        self.ctx[R_BASE], self.ctx[R_SIZE], self.ctx[R_COPIES] = base, size, copies
        self.ctx[R_LOGGING] = 1
        self.owner = owner
        cf = ram_handler()
        self.handler = Handler(cf.address, self.ctx.ctypes.data, self._call,
                               keep=(cf, self.ctx, log.words), clocked=True)
        self.handler.write_block = self.write_block
        self.on = False

    def set_logging(self, on):
        self.ctx[R_LOGGING] = 1 if on else 0

    def start(self):
        if not self.on:
            self.memory.overlay_handler(self.base, self.size * self.copies, self.handler)
            self.on = True

    def stop(self):
        if self.on:
            self.memory.remove_overlay(self.base, self.size * self.copies)
            self.on = False

    # -- the Python side (the bus's own reads and writes go through here) ---------------
    def _call(self, ctx, address, value, op):
        if op & 1 == HANDLER_READ:
            return int(self.memory.mem[address])
        self._write(address, np.array([value & 0xFF], dtype=np.uint8), op >> 1)
        return 0

    def write_block(self, address, data):
        """Bytes from Python at ``address`` (inside one 4 KiB page of the
        window), now: each copy gets them, and the changed ones are logged
        after whatever the CPU logged before, at the machine's cycle."""
        self._write(address, data, self.memory.clock())

    def _write(self, address, data, cycle):
        mem = self.memory.mem
        off = (address - self.base) & (self.size - 1)
        n = len(data)
        first = self.base + off
        old = mem[first:first + n].copy()
        new = np.asarray(data, dtype=np.uint8)
        for k in range(self.copies):
            mem[first + k * self.size:first + k * self.size + n] = new
        if self.ctx[R_LOGGING]:
            changed = np.nonzero(old != new)[0]
            if len(changed):
                self.log.flush_now()
                self.log.append_many(TEXT, changed + off, old[changed].astype(np.int64),
                                     new[changed].astype(np.int64), cycle)
                self.log.flush_now()
