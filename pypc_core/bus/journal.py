"""Write journals: every byte of a memory window that a write changes, in
program order, for a recorder (the RPC's ``video.history``).

* :class:`WriteLog` -- ``int64`` words in the core's journal layout
  (``cpu.state`` JL_*/JE_*): a header (entries appended, the ring's mask,
  the views' addresses) and a ring of rows of two words, ``kind | offset |
  old | new`` packed and the emulated cycle of the write.  The compiled
  side (the core, a card's handler) and Python append to the same ring, so
  the entries are in program order as they are written and a recorder
  reads its events straight from the ring: nothing drains or copies them.
  The ring keeps the newest entries (a power of two of them, at least the
  capacity asked for); older ones are overwritten.  Each appender also
  stores every TEXT entry's new byte into the log's text view (FONT
  entries' into its font view): the window as the journal shows it.
* :class:`RamJournal` -- a RAM window of ``size`` bytes seen ``copies``
  times in a row (a CGA's 16 KiB at B8000h and again at BC000h), journaled
  by the core itself: its pages are PG_JOURNAL, and a CPU write that
  changes a byte appends the entry in ``_wb_slow`` (inlined there: four
  stores), with the cycle its instruction began at -- a REP string's, its
  iteration's.  The copies stay equal through the pages' alias ring, as
  without a journal; entries are kind ``TEXT`` with the offset in the first
  copy.  Logging can be paused (``set_logging(False)``: a card in a
  graphics mode); the pages are then plain RAM again.  Switched off,
  nothing on the CPU's path changes.
* A card whose window is a compiled handler (a VGA's planes) journals in its
  handler: :func:`log_append` (inlined) appends one entry from compiled code.
* :func:`voidptr` -- an ``int64`` address as a numba ``voidptr``: a compiled
  handler reaches arrays (the log, ``mem``) whose addresses its context
  holds.
"""

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from ..cpu.state import (
    JE_KIND, JE_OFFSET, JE_WORDS, JL_COUNT, JL_FONT_VIEW, JL_HEADER, JL_MASK, JL_VIEW,
    JL_VIEW_BYTES, PAGE_SHIFT,
)
from ..cpu import callptr as _callptr
from ..cpu import state as _state
from ..cpu.cache_key import invalidate_if_stale
from ..cpu.callptr import store_u8

# the layout and store_u8 are frozen into the compiled code
invalidate_if_stale(__file__, depends=(_state.__file__, _callptr.__file__))


def recompile_with_the_log_layout(module):
    """For a module (a card's, given as its ``__file__``) whose cached
    compiled code inlines the log's layout: throws numba's cache of it away
    when this module or the core's layout changed (numba checks only the
    module's own source).  Call it before the module's first compile."""
    invalidate_if_stale(module, depends=(__file__, _state.__file__, _callptr.__file__))

# entry kinds (what the recorder makes of them is its business)
TEXT = 1
FONT = 2

# the log's header words (the core's names, kept here for the log's users)
L_COUNT, L_MASK, L_VIEW, L_FONT_VIEW, L_HEADER = (JL_COUNT, JL_MASK, JL_VIEW, JL_FONT_VIEW,
                                                   JL_HEADER)
VIEW_BYTES = JL_VIEW_BYTES
ENTRY_WORDS = JE_WORDS
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


@njit(**dict(JIT, inline="always"))
def log_append(log, kind, offset, old, new, cycle):
    """One entry into ``log`` (the words of a WriteLog, a ring: it
    overwrites the oldest when full), and the new byte into the log's view
    of ``kind``.  Inlined where it is called (a card's window handler: a
    call passing the array would cost more than the append)."""
    n = log[L_COUNT]
    # (the row masked to 40 bits too: an index LLVM knows is non-negative
    # needs no wraparound code)
    e = L_HEADER + (n & log[L_MASK] & 0xFFFFFFFFFF) * ENTRY_WORDS
    log[e] = (kind << JE_KIND) | (offset << JE_OFFSET) | (old << 8) | new
    log[e + 1] = cycle
    log[L_COUNT] = n + 1
    if kind == TEXT:
        store_u8(log[L_VIEW] + (offset & 0xFFFF), new)
    elif kind == FONT:
        store_u8(log[L_FONT_VIEW] + (offset & 0xFFFF), new)


# An event row of a recorder's ring (a WriteLog's row, ``int64[2]``): word 0
# is an entry's word 0 as the card logged it, word 1 the emulated cycle, so
# the log's entries are the recorder's events.  Events with wider fields than
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


class WriteLog:
    """A journal's entries, appended in program order into a ring of
    ``rows`` (the capacity asked for, rounded up to a power of two): the
    newest ``rows`` entries are kept.  Entry ``n`` (numbered from 0 in the
    log's life) is ``ring[n & mask]``; :attr:`count` entries were appended.
    ``views[TEXT]`` and ``views[FONT]`` are the window as the journal shows
    it (every entry's new byte stored at its offset by whoever appends)."""

    def __init__(self, capacity=1 << 16):
        if capacity < 1:
            raise ValueError(f"a write log holds at least one entry, not {capacity}")
        rows = 1 << (int(capacity) - 1).bit_length()
        self.words = np.zeros(L_HEADER + rows * ENTRY_WORDS, dtype=np.int64)
        self.ring = self.words[L_HEADER:].reshape(rows, ENTRY_WORDS)
        self.views = {TEXT: np.zeros(VIEW_BYTES, dtype=np.uint8),
                      FONT: np.zeros(VIEW_BYTES, dtype=np.uint8)}
        self.words[L_MASK] = rows - 1
        self.words[L_VIEW] = self.views[TEXT].ctypes.data
        self.words[L_FONT_VIEW] = self.views[FONT].ctypes.data
        self._drained = 0

    @property
    def address(self):
        return int(self.words.ctypes.data)

    @property
    def rows(self):
        return len(self.ring)

    @property
    def count(self):
        """Entries appended since the log was made (the ring keeps the
        newest ``rows`` of them)."""
        return int(self.words[L_COUNT])

    def row(self, n):
        """Entry ``n``'s row, ``(word, cycle)``; it must still be in the ring."""
        word, cycle = self.ring[n & (self.rows - 1)].tolist()
        return word, cycle

    def append(self, word, cycle):
        """One entry from Python (word 0 as ``entry_word`` or
        ``event_word`` packs it); a TEXT or FONT entry's new byte goes to
        its view."""
        n = self.count
        self.ring[n & (self.rows - 1)] = (word, cycle)
        self.words[L_COUNT] = n + 1
        view = self.views.get(word >> JE_KIND)
        if view is not None:
            view[(word >> JE_OFFSET) & 0xFFFF] = word & 0xFF

    def append_many(self, kind, offsets, old, new, cycle):
        """Entries from Python (numpy arrays of equal length, distinct
        offsets, all at emulated ``cycle``), in order; their new bytes go to
        the view of ``kind``."""
        offsets = np.asarray(offsets, dtype=np.int64)
        words = ((np.int64(kind) << JE_KIND) | (offsets << JE_OFFSET)
                 | (np.asarray(old, dtype=np.int64) << 8) | np.asarray(new, dtype=np.int64))
        n = self.count
        k = len(words)
        if k > self.rows:                 # only the newest fit
            words = words[k - self.rows:]
        rows = (n + k - len(words) + np.arange(len(words))) & (self.rows - 1)
        self.ring[rows, 0] = words
        self.ring[rows, 1] = cycle
        self.words[L_COUNT] = n + k
        view = self.views.get(kind)
        if view is not None and k:
            view[offsets & 0xFFFF] = np.asarray(new, dtype=np.uint8)

    def drain(self):
        """``(entries, lost)``: the entries appended since the last drain
        that the ring still holds (an ``int64[n, 5]`` of kind, offset, old,
        new, cycle, oldest first) and how many of them it overwrote."""
        first, last = self._drained, self.count
        lost = max(0, (last - first) - self.rows)
        first += lost
        self._drained = last
        rows = self.ring[np.arange(first, last) & (self.rows - 1)]
        w = rows[:, 0]
        entries = np.stack([(w >> JE_KIND) & 0xFF, (w >> JE_OFFSET) & _OFFSET_MASK,
                            (w >> 8) & 0xFF, w & 0xFF, rows[:, 1]], axis=1) \
            if len(rows) else np.zeros((0, 5), dtype=np.int64)
        return entries, lost


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
                self.log.append_many(TEXT, changed + off, old[changed].astype(np.int64),
                                     new[changed].astype(np.int64), self.memory.clock())
