"""Write journals: every byte of a memory window that a write changes, in
program order, for a recorder (the RPC's ``video.history``).

* :class:`WriteLog` -- ``int64`` words in the core's journal layout
  (``cpu.state`` JL_*/JE_*): a header (entry count, capacity, entries lost to
  a full log) and entries of two words, ``kind | offset | old | new`` packed
  and the emulated cycle of the write.  The compiled side appends; the
  Python side drains.  ``flush`` (set by the recorder) is called by
  Python-side writers (firmware services, the RPC's ``memory.write``)
  before and after they write, so their entries come after the CPU's in
  order and the log never fills from Python.
* :class:`RamJournal` -- a RAM window of ``size`` bytes seen ``copies``
  times in a row (a CGA's 16 KiB at B8000h and again at BC000h), journaled
  by the core itself: its pages are PG_JOURNAL, and a CPU write that
  changes a byte appends the entry inline (two stores, no call), with the
  cycle its instruction began at -- a REP string's, its iteration's.  The
  copies stay equal through the pages' alias ring, as without a journal;
  entries are kind ``TEXT`` with the offset in the first copy.  Logging can
  be paused (``set_logging(False)``: a card in a graphics mode); the pages
  are then plain RAM again.  Switched off, nothing on the CPU's path
  changes.
* A card whose window is a compiled handler (a VGA's planes) journals in its
  handler: :func:`log_append` appends one entry from compiled code.
* :func:`voidptr` -- an ``int64`` address as a numba ``voidptr``: a compiled
  handler reaches arrays (the log, ``mem``) whose addresses its context
  holds.
"""

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from ..cpu.state import (
    JE_KIND, JE_OFFSET, JE_WORDS, JL_CAPACITY, JL_COUNT, JL_HEADER, JL_LOST, PAGE_SHIFT,
)
from ..cpu import state as _state
from ..cpu.cache_key import invalidate_if_stale

invalidate_if_stale(__file__, depends=(_state.__file__,))    # the layout is frozen in


def recompile_with_the_log_layout(module):
    """For a module (a card's, given as its ``__file__``) whose cached
    compiled code inlines the log's layout: throws numba's cache of it away
    when this module or the core's layout changed (numba checks only the
    module's own source).  Call it before the module's first compile."""
    invalidate_if_stale(module, depends=(__file__, _state.__file__))

# entry kinds (what the recorder makes of them is its business)
TEXT = 1
FONT = 2

# the log's header words (the core's names, kept here for the log's users)
L_COUNT, L_CAPACITY, L_LOST, L_HEADER = JL_COUNT, JL_CAPACITY, JL_LOST, JL_HEADER
ENTRY_WORDS = JE_WORDS
ENTRY_KIND_SHIFT, ENTRY_OFFSET_SHIFT = JE_KIND, JE_OFFSET    # word 0: kind, offset, old, new
_OFFSET_MASK = (1 << (JE_KIND - JE_OFFSET)) - 1

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


def entry_word(kind, offset, old, new):
    """Word 0 of an entry (``cpu.state``'s JE_* layout)."""
    return (kind << JE_KIND) | (offset << JE_OFFSET) | (old << 8) | new


@njit(**JIT)
def log_append(log, kind, offset, old, new, cycle):
    """One entry into ``log`` (the words of a WriteLog), or one more lost."""
    n = log[L_COUNT]
    if n >= log[L_CAPACITY]:
        log[L_LOST] += 1
        return
    e = L_HEADER + n * ENTRY_WORDS
    log[e] = (kind << JE_KIND) | (offset << JE_OFFSET) | (old << 8) | new
    log[e + 1] = cycle
    log[L_COUNT] = n + 1


@njit(**JIT)
def _unpack(words, n, out):
    for i in range(n):
        w = words[L_HEADER + i * ENTRY_WORDS]
        out[i, 0] = (w >> JE_KIND) & 0xFF
        out[i, 1] = (w >> JE_OFFSET) & _OFFSET_MASK
        out[i, 2] = (w >> 8) & 0xFF
        out[i, 3] = w & 0xFF
        out[i, 4] = words[L_HEADER + i * ENTRY_WORDS + 1]


# An event row of a recorder's ring (``int64[capacity, 2]``, see
# ``drain_into``): word 0 is a log entry's word 0 as the card logged it, word
# 1 the emulated cycle, so draining is a copy.  Events with wider fields than
# a logged byte (a port write's word value, a mode's display address) keep
# ``new``'s high bits in the offset field's bits 16..39 (a logged offset
# stays below 10000h): address = offset bits 0..15, new = bits 0..7 of the
# word and bits 8..31 from the offset field -- one decoding for every kind.
EV_ADDRESS_LIMIT = 1 << 16
EV_OLD_LIMIT = 1 << 8
EV_NEW_LIMIT = 1 << 32
_EV_ADDRESS_MASK = EV_ADDRESS_LIMIT - 1


def event_word(kind, address, old, new):
    """Word 0 of a ring row; ValueError for a field that does not fit."""
    if not (0 < kind < 128 and 0 <= address < EV_ADDRESS_LIMIT and 0 <= old < EV_OLD_LIMIT
            and 0 <= new < EV_NEW_LIMIT):
        raise ValueError(f"event fields out of range: kind {kind} address {address:#x} "
                         f"old {old:#x} new {new:#x}")
    return entry_word(kind, address | ((new >> 8) << 16), old, new & 0xFF)


def event_fields(word):
    """(kind, address, old, new) of a ring row's word 0."""
    return ((word >> JE_KIND) & 0xFF, (word >> JE_OFFSET) & _EV_ADDRESS_MASK,
            (word >> 8) & 0xFF, (word & 0xFF) | (((word >> (JE_OFFSET + 16)) & 0xFFFFFF) << 8))


@njit(**JIT)
def drain_into(words, ring, first_row, text, font):
    """Move the log's entries into a recorder's ring of event rows (``ring``
    an ``int64[capacity, 2]``, word 0 of each row the entry's word 0 as it
    is; the first entry goes to row ``first_row``, the next ones after it,
    wrapping), and store each entry's new byte into ``text`` (kind TEXT) or
    ``font`` (kind FONT) at its offset: the recorder's copy of the memory
    kept current.  One pass, no temporaries.  Returns ``(entries, lost)``;
    the log is empty afterwards."""
    n = words[L_COUNT]
    cap = ring.shape[0]
    row = first_row % cap
    for i in range(n):
        w = words[L_HEADER + i * ENTRY_WORDS]
        ring[row, 0] = w
        ring[row, 1] = words[L_HEADER + i * ENTRY_WORDS + 1]
        k = w >> JE_KIND                  # (kinds are below 128: no sign to mask)
        if k == TEXT:
            text[(w >> JE_OFFSET) & _EV_ADDRESS_MASK] = w & 0xFF
        elif k == FONT:
            font[(w >> JE_OFFSET) & _EV_ADDRESS_MASK] = w & 0xFF
        row += 1
        if row == cap:
            row = 0
    lost = words[L_LOST]
    words[L_COUNT] = 0
    words[L_LOST] = 0
    return n, lost


@njit(**JIT)
def apply_entries(entries, kind, array):
    """Store the ``new`` byte of every entry of ``kind`` in ``array`` at its
    offset, in order (a later write of a byte wins): a copy kept up to date
    from drained entries (``WriteLog.drain``'s rows)."""
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
        """``(entries, lost)``: the entries (an ``int64[n, 5]`` of kind,
        offset, old, new, cycle) since the last drain and how many were lost
        to a full log; the log is empty afterwards."""
        w = self.words
        n = int(w[L_COUNT])
        entries = np.zeros((n, 5), dtype=np.int64)
        _unpack(w, n, entries)
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
            sl = slice(pos, pos + k)
            rows[:, 0] = ((np.int64(kind) << JE_KIND)
                          | (np.asarray(offsets[sl], dtype=np.int64) << JE_OFFSET)
                          | (np.asarray(old[sl], dtype=np.int64) << 8)
                          | np.asarray(new[sl], dtype=np.int64))
            rows[:, 1] = cycle
            w[L_COUNT] = c + k
            pos += k

    def flush_now(self):
        if self.flush is not None:
            self.flush()


# -- a RAM window and its copies ---------------------------------------------------------
class RamJournal:
    """A journal on ``copies`` consecutive copies of a ``size``-byte RAM
    window at ``base`` of ``memory`` (a MemoryMap), logging into ``log``.
    The copies must be one alias ring (``MemoryMap.map_alias``): the core
    keeps them equal.  ``start()`` makes the pages log, ``stop()`` gives
    them back as they were."""

    def __init__(self, memory, base, size, copies, log, owner="journal"):
        if size <= 0 or size & (size - 1) or size % (1 << PAGE_SHIFT):
            raise ValueError(f"{owner}: a journaled RAM window is a power of two "
                             f"bytes of whole pages, not {size}")
        first = base >> PAGE_SHIFT
        per = size >> PAGE_SHIFT
        self.pages = range(first, first + per * copies)
        for i in range(per):
            ring = set(memory.alias_ring(first + i))
            want = {first + i + k * per for k in range(copies)}
            if not want <= ring:
                raise ValueError(f"{owner}: the {copies} copies of the window at "
                                 f"{base:#07x} are not one alias ring")
        self.memory = memory
        self.base, self.size, self.copies = base, size, copies
        self.log = log
        self.owner = owner
        self.logging = True
        self.on = False

    def _entry_base(self, page):
        return entry_word(TEXT, ((page << PAGE_SHIFT) - self.base) & (self.size - 1), 0, 0)

    def set_logging(self, on):
        self.logging = bool(on)
        if self.on:
            self.memory.set_journal_logging(self.pages, self.logging)

    def start(self):
        if not self.on:
            self.memory.journal_pages(self.pages, self.log.address, self._entry_base, self)
            self.on = True
            self.memory.set_journal_logging(self.pages, self.logging)

    def stop(self):
        if self.on:
            self.memory.unjournal_pages(self.pages)
            self.on = False

    # -- the Python side (the bus's own writes go through here while logging) -----------
    def write_block(self, address, data):
        """Bytes from Python at ``address`` (inside one 4 KiB page of the
        window), now: each copy gets them, and the changed ones are logged
        after whatever the CPU logged before, at the machine's cycle."""
        mem = self.memory.mem
        off = (address - self.base) & (self.size - 1)
        n = len(data)
        first = self.base + off
        old = mem[first:first + n].copy()
        new = np.asarray(data, dtype=np.uint8)
        for k in range(self.copies):
            mem[first + k * self.size:first + k * self.size + n] = new
        if self.logging:
            changed = np.nonzero(old != new)[0]
            if len(changed):
                self.log.flush_now()
                self.log.append_many(TEXT, changed + off, old[changed].astype(np.int64),
                                     new[changed].astype(np.int64), self.memory.clock())
                self.log.flush_now()
