"""Physical memory map of the 8088: 1 MiB with 20-bit wrap, 4 KiB page kinds.

The arrays here are handed to the jitted CPU core as they are:

* ``mem``        -- ``np.uint8[1 MiB]``, the bytes every page reads as;
* ``page_table`` -- ``np.int64[PAGE_TABLE_SIZE]``: ``PG_*`` flags per 4 KiB
  page (``page_flags`` is that first part), then the alias rings and the
  memory handlers (``cpu.state.PT_*``);
* ``xflags``     -- ``np.uint8[1 MiB]``, per-byte execution/watch flags.

Page kinds:

* RAM (read/write) and ROM (reads its image, writes ignored); unmapped pages
  read FFh and ignore writes;
* *device* RAM: a window a device renders from (CGA video RAM); the CPU
  reads and writes it directly and the device reads the bytes when it draws;
* *alias*: pages that are another window seen again (the CGA's 16 KiB at
  B8000h answers at BC000h too).  Every copy holds the same bytes: a write
  to any copy lands in all of them (the core walks the page's ring of
  copies), so reads stay plain loads;
* *handler*: every data read and write calls the device's handler, a C
  function ``int64 handler(void *ctx, int64 address, int64 value, int64 op)``
  whose address the core keeps as data (``cpu/callptr.py``).  The handler is
  either compiled (a numba ``cfunc``: a few nanoseconds a call) or a Python
  function behind a ctypes callback (the GIL is taken for each call, about
  0.2 microseconds).  Instruction fetches read the window's bytes in ``mem``.

RAM pages can also be *journaled* for a while (``journal_pages``, a
``bus.journal.RamJournal``): the core appends every byte a write changes to
a write journal's log itself (``PG_JOURNAL``), reads stay plain loads.
"""

import ctypes

import numpy as np

from ..cpu.state import (
    HANDLER_READ, HANDLER_WRITE, MEM_SIZE, PAGE_COUNT, PAGE_SHIFT, PAGE_TABLE_SIZE,
    PG_ALIAS, PG_CLOCKED, PG_HANDLER, PG_JOURNAL, PG_READONLY, PT_CTX, PT_FN, PT_JENTRY,
    PT_JLOG, PT_TWIN,
)

PAGE_SIZE = 1 << PAGE_SHIFT
_WRITABLE_MASK = ~PG_READONLY

KIND_UNMAPPED = "unmapped"
KIND_RAM = "ram"
KIND_ROM = "rom"
KIND_DEVICE = "device"
KIND_ALIAS = "alias"
KIND_HANDLER = "handler"

# the C type of a memory handler (and of a compiled port handler)
HANDLER_CTYPE = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64,
                                 ctypes.c_int64, ctypes.c_int64)


class MemoryMapError(ValueError):
    """A memory window is misaligned, out of range or already taken."""


class Handler:
    """A memory (or port) handler: the address the core calls, and the same
    function callable from Python for the bus's own reads and writes."""

    def __init__(self, address, context, call, keep=(), clocked=False):
        self.address = int(address)      # C function address
        self.context = int(context)      # its ctx argument
        self._call = call                # (ctx, address, value, op) -> int
        self._keep = keep                # objects that must outlive the mapping
        self.error = None                # an exception a Python handler raised
        # a clocked handler's writes carry their emulated cycle in op >> 1
        # (its pages are PG_CLOCKED: a write journal); others get op 0 or 1
        self.clocked = bool(clocked)

    def read(self, address):
        return int(self._call(self.context, address, 0, HANDLER_READ)) & 0xFF

    def write(self, address, value, cycle=0):
        op = HANDLER_WRITE | (int(cycle) << 1) if self.clocked else HANDLER_WRITE
        self._call(self.context, address, value & 0xFF, op)

    def port_read(self, port, cycle):
        """A port handler's read at emulated ``cycle`` (op carries it)."""
        return int(self._call(self.context, port, 0, HANDLER_READ | (cycle << 1))) & 0xFF

    def port_write(self, port, value, cycle):
        self._call(self.context, port, value & 0xFF, HANDLER_WRITE | (cycle << 1))

    @classmethod
    def python(cls, read=None, write=None, on_error=None):
        """A handler calling ``read(address) -> int`` / ``write(address,
        value)`` (either may be None: reads give FFh, writes vanish).  An
        exception inside is kept in ``error`` (a C caller cannot take it) and
        ``on_error(handler)`` is told; the access reads FFh."""
        holder = []

        def call(ctx, address, value, op):
            try:
                if op == HANDLER_READ:
                    return 0xFF if read is None else int(read(address)) & 0xFF
                if write is not None:
                    write(address, value & 0xFF)
                return 0
            except BaseException as exc:      # a C caller cannot unwind
                h = holder[0]
                if h.error is None:
                    h.error = exc
                if on_error is not None:
                    on_error(h)
                return 0xFF

        cb = HANDLER_CTYPE(call)
        address = ctypes.cast(cb, ctypes.c_void_p).value
        h = cls(address, 0, call, keep=(cb, read, write))
        holder.append(h)
        return h

    @classmethod
    def compiled(cls, cfunc, context=None, clocked=False):
        """A numba ``cfunc`` of signature ``int64(voidptr, int64, int64,
        int64)``; ``context`` (a numpy array or None) is passed as its
        first argument and kept alive with the mapping.  ``clocked``: its
        writes get their cycle in ``op >> 1`` (``op & 1`` is the write bit)."""
        address = getattr(cfunc, "address", None)
        ctypes_fn = getattr(cfunc, "ctypes", None)
        if not isinstance(address, int) or ctypes_fn is None:
            raise TypeError(f"{cfunc!r} is not a numba cfunc "
                            "(int64(voidptr, int64, int64, int64))")
        if context is None:
            ctx = 0
        elif isinstance(context, np.ndarray):
            if not context.flags.c_contiguous:
                raise ValueError("a handler context must be a contiguous numpy array")
            ctx = context.ctypes.data
        else:
            raise TypeError("a handler context must be a numpy array or None")

        def call(c, address, value, op):
            return ctypes_fn(ctypes.c_void_p(c), address, value, op)

        return cls(address, ctx, call, keep=(cfunc, context), clocked=clocked)


class MemoryMap:
    PAGE_SHIFT = PAGE_SHIFT         # page_kind[i] covers [i << PAGE_SHIFT, (i + 1) << PAGE_SHIFT)

    def __init__(self):
        self.mem = np.full(MEM_SIZE, 0xFF, dtype=np.uint8)
        self.page_table = np.zeros(PAGE_TABLE_SIZE, dtype=np.int64)
        self.page_flags = self.page_table[:PAGE_COUNT]
        self.page_flags[:] = PG_READONLY
        self.xflags = np.zeros(MEM_SIZE, dtype=np.uint8)
        self.page_kind = [KIND_UNMAPPED] * PAGE_COUNT
        self.page_owner = [None] * PAGE_COUNT
        self._handlers = {}              # page -> Handler
        self._overlaid = {}              # page -> (PG_HANDLER|PG_CLOCKED bits, fn, ctx, handler) under an overlay
        self._journals = {}              # page -> its write journal (PG_JOURNAL while it logs)
        self.handler_error = None        # first exception a Python handler raised
        # the emulated cycle now (the machine sets it): the clock of the bus's
        # own writes through a clocked handler (a write journal)
        self.clock = lambda: 0

    # -- building the map --------------------------------------------------
    def _pages(self, base, size, owner):
        if base % PAGE_SIZE or size % PAGE_SIZE or size <= 0:
            raise MemoryMapError(
                f"{owner}: memory window {base:#07x}+{size:#x} is not 4 KiB aligned")
        if base < 0 or base + size > MEM_SIZE:
            raise MemoryMapError(
                f"{owner}: memory window {base:#07x}+{size:#x} is outside 1 MiB")
        pages = range(base >> PAGE_SHIFT, (base + size) >> PAGE_SHIFT)
        for p in pages:
            if self.page_owner[p] is not None:
                raise MemoryMapError(
                    f"memory conflict at {p << PAGE_SHIFT:05X}h: claimed by both "
                    f"{self.page_owner[p]} and {owner}")
        return pages

    def _take(self, pages, kind, owner, set_flags=0, clear_flags=0):
        for p in pages:
            self.page_kind[p] = kind
            self.page_owner[p] = owner
            self.page_flags[p] = (self.page_flags[p] & ~clear_flags) | set_flags

    def map_ram(self, base, size, owner="ram"):
        self._take(self._pages(base, size, owner), KIND_RAM, owner, clear_flags=PG_READONLY)
        self.mem[base:base + size] = 0

    def map_device(self, base, size, owner):
        """A RAM-like window whose bytes a device interprets (video RAM)."""
        self._take(self._pages(base, size, owner), KIND_DEVICE, owner,
                   clear_flags=PG_READONLY)
        self.mem[base:base + size] = 0

    def map_rom(self, base, image, owner="rom"):
        data = np.frombuffer(bytes(image), dtype=np.uint8)
        size = (len(data) + PAGE_SIZE - 1) // PAGE_SIZE * PAGE_SIZE
        self._take(self._pages(base, size, owner), KIND_ROM, owner, set_flags=PG_READONLY)
        self.mem[base:base + size] = 0xFF
        self.mem[base:base + len(data)] = data

    def map_alias(self, base, size, target, owner):
        """Show the window at ``target`` (already mapped RAM, device RAM or
        alias pages) again at ``base``: each page joins its target page's
        ring of copies, so a write to any copy lands in all of them."""
        pages = self._pages(base, size, owner)
        t0 = target >> PAGE_SHIFT
        if target % PAGE_SIZE or target < 0 or target + size > MEM_SIZE:
            raise MemoryMapError(f"{owner}: alias target {target:#07x}+{size:#x} is not "
                                 "4 KiB aligned inside 1 MiB")
        for i, p in enumerate(pages):
            t = t0 + i
            if self.page_kind[t] not in (KIND_RAM, KIND_DEVICE, KIND_ALIAS):
                raise MemoryMapError(
                    f"{owner}: alias target {t << PAGE_SHIFT:05X}h is {self.page_kind[t]}, "
                    "not RAM")
            if t in pages:
                raise MemoryMapError(f"{owner}: an alias cannot overlap its target")
        table = self.page_table
        for i, p in enumerate(pages):
            t = t0 + i
            if not self.page_flags[t] & PG_ALIAS:
                table[PT_TWIN + t] = t
            table[PT_TWIN + p] = table[PT_TWIN + t]      # p joins t's ring
            table[PT_TWIN + t] = p
            self.page_flags[t] |= PG_ALIAS
            self.page_kind[p] = KIND_ALIAS
            self.page_owner[p] = owner
            self.page_flags[p] = (self.page_flags[p] & ~PG_READONLY) | PG_ALIAS
            self.mem[p << PAGE_SHIFT:(p + 1) << PAGE_SHIFT] = \
                self.mem[t << PAGE_SHIFT:(t + 1) << PAGE_SHIFT]

    def alias_ring(self, page):
        """The pages holding the same bytes as ``page`` (itself first)."""
        ring = [page]
        if self.page_flags[page] & PG_ALIAS:
            q = int(self.page_table[PT_TWIN + page])
            while q != page and len(ring) < PAGE_COUNT:
                ring.append(q)
                q = int(self.page_table[PT_TWIN + q])
        return ring

    def map_handler(self, base, size, owner, handler):
        """Every data access to the window calls ``handler`` (a
        :class:`Handler`).  ``mem`` keeps the bytes an instruction fetch
        sees there (zero at first; the device may fill them)."""
        if not isinstance(handler, Handler):
            raise TypeError("map_handler needs a pypc_core.bus.memory.Handler")
        pages = self._pages(base, size, owner)
        clocked = PG_CLOCKED if handler.clocked else 0
        self._take(pages, KIND_HANDLER, owner, set_flags=PG_HANDLER | clocked,
                   clear_flags=PG_READONLY | PG_CLOCKED)
        for p in pages:
            self.page_table[PT_FN + p] = handler.address
            self.page_table[PT_CTX + p] = handler.context
            self._handlers[p] = handler
        self.mem[base:base + size] = 0

    def overlay_handler(self, base, size, handler):
        """Put ``handler`` over the pages of ``base``/``size`` for a while
        (a write journal, ``bus/journal.py``): every data access calls it,
        whatever the pages are; their kind, owner, aliases and watch flags
        stay as they are, and ``remove_overlay`` gives them back exactly.
        The handler does what the pages did (writing the RAM and its alias
        copies, or calling the window's own handler)."""
        if not isinstance(handler, Handler):
            raise TypeError("overlay_handler needs a pypc_core.bus.memory.Handler")
        if base % PAGE_SIZE or size % PAGE_SIZE or size <= 0 or base + size > MEM_SIZE:
            raise MemoryMapError(f"overlay {base:#07x}+{size:#x} is not 4 KiB pages in 1 MiB")
        pages = range(base >> PAGE_SHIFT, (base + size) >> PAGE_SHIFT)
        if any(p in self._overlaid for p in pages):
            raise MemoryMapError(f"overlay {base:#07x}+{size:#x}: a page is overlaid already")
        for p in pages:
            self._overlaid[p] = (int(self.page_flags[p] & (PG_HANDLER | PG_CLOCKED)),
                                 int(self.page_table[PT_FN + p]),
                                 int(self.page_table[PT_CTX + p]), self._handlers.get(p))
            self.page_table[PT_FN + p] = handler.address
            self.page_table[PT_CTX + p] = handler.context
            self._handlers[p] = handler
            self.page_flags[p] = (self.page_flags[p] & ~PG_CLOCKED) | PG_HANDLER | (
                PG_CLOCKED if handler.clocked else 0)

    def remove_overlay(self, base, size):
        """Undo ``overlay_handler`` on these pages (pages not overlaid are
        left alone)."""
        for p in range(base >> PAGE_SHIFT, (base + size) >> PAGE_SHIFT):
            saved = self._overlaid.pop(p, None)
            if saved is None:
                continue
            bits, fn, ctx, h = saved
            self.page_table[PT_FN + p] = fn
            self.page_table[PT_CTX + p] = ctx
            if h is None:
                self._handlers.pop(p, None)
            else:
                self._handlers[p] = h
            self.page_flags[p] = (self.page_flags[p] & ~(PG_HANDLER | PG_CLOCKED)) | bits

    def journal_pages(self, pages, log_address, entry_base, journal):
        """Journal the RAM ``pages`` (page numbers) into the log at
        ``log_address`` (``cpu.state`` JL_*/JE_*): each CPU write that
        changes a byte appends ``entry_base(page)`` plus the byte's offset
        in the page, the old and the new byte, and the cycle to the log's
        ring, and stores the new byte in the log's view -- inside the core.
        ``journal.write_block(address, data)`` takes the bus's own writes to
        these pages while they log.  Logging starts off
        (``set_journal_logging``); ``unjournal_pages`` ends it."""
        pages = list(pages)
        for p in pages:
            if self.page_kind[p] not in (KIND_RAM, KIND_DEVICE, KIND_ALIAS) or \
                    self.page_flags[p] & PG_HANDLER:
                raise MemoryMapError(f"journal: page {p << PAGE_SHIFT:05X}h is "
                                     f"{self.page_kind[p]}, not RAM")
            if p in self._journals:
                raise MemoryMapError(f"journal: page {p << PAGE_SHIFT:05X}h is journaled already")
        for p in pages:
            self.page_table[PT_JLOG + p] = log_address
            self.page_table[PT_JENTRY + p] = entry_base(p)
            self._journals[p] = journal

    def set_journal_logging(self, pages, on):
        """Journaled ``pages`` log (PG_JOURNAL) or are plain RAM again."""
        for p in pages:
            if p in self._journals:
                if on:
                    self.page_flags[p] |= PG_JOURNAL
                else:
                    self.page_flags[p] &= ~PG_JOURNAL

    def unjournal_pages(self, pages):
        for p in pages:
            if self._journals.pop(p, None) is not None:
                self.page_flags[p] &= ~PG_JOURNAL
                self.page_table[PT_JLOG + p] = 0
                self.page_table[PT_JENTRY + p] = 0

    def unmap(self, base, size):
        for p in range(base >> PAGE_SHIFT, (base + size) >> PAGE_SHIFT):
            ring = self.alias_ring(p)
            if len(ring) > 1:                 # leave the ring: the others stay linked
                prev = ring[-1]
                self.page_table[PT_TWIN + prev] = self.page_table[PT_TWIN + p]
                if len(ring) == 2:
                    self.page_flags[prev] &= ~PG_ALIAS
            self._handlers.pop(p, None)
            self.unjournal_pages((p,))
            self.page_table[PT_FN + p] = 0
            self.page_table[PT_CTX + p] = 0
            self.page_table[PT_TWIN + p] = 0
            self.page_kind[p] = KIND_UNMAPPED
            self.page_owner[p] = None
            self.page_flags[p] = (self.page_flags[p] & ~(PG_ALIAS | PG_HANDLER | PG_CLOCKED)) \
                | PG_READONLY
        self.mem[base:base + size] = 0xFF

    def handler_failed(self, handler):
        """A Python handler raised: keep the first error for the machine."""
        if self.handler_error is None:
            self.handler_error = handler.error

    def take_handler_error(self):
        """The first exception a Python memory or port handler raised since
        the last call (None if none), cleared."""
        exc, self.handler_error = self.handler_error, None
        return exc

    # -- Python-side access (debugger, BIOS services, loaders) --------------
    def read(self, address, length):
        """Bytes at a physical address, wrapping at 1 MiB (handler windows
        are read through their handler)."""
        address &= MEM_SIZE - 1
        end = address + length
        if end <= MEM_SIZE:
            data = self.mem[address:end].tobytes()
        else:
            data = self.mem[address:].tobytes() + self.mem[:end - MEM_SIZE].tobytes()
        if not self._handlers:
            return data
        out = bytearray(data)
        for i in range(length):
            a = (address + i) & (MEM_SIZE - 1)
            h = self._handlers.get(a >> PAGE_SHIFT)
            if h is not None:
                out[i] = h.read(a)
        return bytes(out)

    def write(self, address, data, force=False):
        """Write bytes as the CPU would (ROM and unmapped bytes unchanged,
        every alias copy updated, handler windows through their handler)
        unless ``force`` (loading ROM images, firmware patching: the bytes
        go into ``mem`` as they are)."""
        address &= MEM_SIZE - 1
        data = bytes(data)
        i, n = 0, len(data)
        while i < n:
            a = (address + i) & (MEM_SIZE - 1)
            page = a >> PAGE_SHIFT
            h = self._handlers.get(page) if not force else None
            block = getattr(h, "write_block", None) if h is not None else None
            if not force and self.page_flags[page] & PG_JOURNAL:
                block = self._journals[page].write_block
            if block is not None and self.page_flags[page] & (PG_HANDLER | PG_JOURNAL):
                # a handler that takes a run of bytes (a write journal)
                k = min(n - i, PAGE_SIZE - (a & (PAGE_SIZE - 1)))
                block(a, np.frombuffer(data[i:i + k], dtype=np.uint8))
                i += k
                continue
            b = data[i]
            i += 1
            flags = self.page_flags[page]
            if force:
                self.mem[a] = b
            elif flags & PG_HANDLER:
                h = self._handlers[page]
                h.write(a, b, self.clock() if h.clocked else 0)
            elif not flags & PG_READONLY:
                self.mem[a] = b
                if flags & PG_ALIAS:
                    off = a & (PAGE_SIZE - 1)
                    for q in self.alias_ring(page)[1:]:
                        self.mem[(q << PAGE_SHIFT) | off] = b

    def read_byte(self, address):
        return self.read(address, 1)[0]

    def read_word(self, address):
        return self.read_byte(address) | (self.read_byte(address + 1) << 8)

    def write_byte(self, address, value):
        self.write(address, bytes([value & 0xFF]))

    def write_word(self, address, value):
        self.write(address, bytes([value & 0xFF, (value >> 8) & 0xFF]))

    def regions(self):
        """Contiguous runs of (kind, owner) as (base, size, kind, owner)."""
        out = []
        start = 0
        for p in range(1, PAGE_COUNT + 1):
            if p == PAGE_COUNT or (self.page_kind[p], self.page_owner[p]) != (
                    self.page_kind[start], self.page_owner[start]):
                out.append((start << PAGE_SHIFT, (p - start) << PAGE_SHIFT,
                            self.page_kind[start], self.page_owner[start]))
                start = p
        return out
