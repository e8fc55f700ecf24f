"""The board a card plugs into: what a device sees of the machine.

A card (a device plugin) never gets the ``Machine``.  In ``attach(board)`` it
gets a :class:`Board` bound to its own :class:`~pypc_core.device.DeviceDeclaration`,
and everything it claims goes through it:

* I/O ports (``claim_ports``) with Python handlers, and the core's fast
  paths on them (``raster``, ``oneshot``, ``counter``, ``compiled_port``);
* memory windows (``map_ram``, ``map_rom``, ``map_alias``, ``map_handler``,
  ``map_compiled``), and write journals over them while a recorder asks
  (``ram_journal``, ``overlay_compiled``);
* its interrupt and DMA lines (``irq(n)``, ``dma(ch)``);
* the clock (``clock()``, emulated CPU cycles) and its scheduling
  (``reschedule()``; the device's ``next_event``/``advance``);
* the machine's diagnostics ring (``log(level, message)``, under the card's
  name) for what the card refuses or ignores.

The declaration is binding: a port, IRQ, DMA channel or memory range outside
it is refused with :class:`ClaimError`.  Before anything is built, every
declaration -- the motherboard's chips and memory included -- goes into one
:class:`Resources` ledger, and two owners of one port, IRQ, DMA channel or
memory byte are a start-up error naming both.
"""

import functools

import attrs

from .bus.memory import Handler, MemoryMapError
from .device import (CAP_GAME_PORT, CAP_PARALLEL, CAP_SERIAL, CAP_VIDEO, VIDEO_KINDS,
                     DeviceDeclaration, MemoryWindow)
from .errors import PypcError


class ClaimError(PypcError):
    """A claim outside the device's declaration, or two owners of one
    resource."""


# ---------------------------------------------------------------------------
# the ledger of claimed resources
# ---------------------------------------------------------------------------

class Resources:
    """Every port, IRQ, DMA channel and memory range, and who owns it."""

    def __init__(self):
        self.ports = {}        # port -> owner
        self.irqs = {}         # irq -> owner
        self.dma = {}          # channel -> owner
        self.memory = []       # (base, end, owner)
        self.declarations = []  # (owner, DeviceDeclaration)

    def add(self, owner, decl):
        """Record ``decl`` for ``owner``; raise :class:`ClaimError` naming
        both owners at the first resource someone else already has (nothing
        is recorded then)."""
        _check_declaration(owner, decl)
        for port in decl.ports:
            other = self.ports.get(port)
            if other is not None:
                raise ClaimError(f"I/O port {port:04X}h claimed by both {other} and {owner}")
        for irq in decl.irqs:
            other = self.irqs.get(irq)
            if other is not None:
                raise ClaimError(f"IRQ {irq} claimed by both {other} and {owner}")
        for ch in decl.dma_channels:
            other = self.dma.get(ch)
            if other is not None:
                raise ClaimError(f"DMA channel {ch} claimed by both {other} and {owner}")
        for w in decl.memory:
            for base, end, other in self.memory:
                if w.base < end and base < w.base + w.size:
                    lo = max(base, w.base)
                    raise ClaimError(f"memory at {lo:05X}h claimed by both {other} and {owner}")
        for port in decl.ports:
            self.ports[port] = owner
        for irq in decl.irqs:
            self.irqs[irq] = owner
        for ch in decl.dma_channels:
            self.dma[ch] = owner
        for w in decl.memory:
            self.memory.append((w.base, w.base + w.size, owner))
        self.declarations.append((owner, decl))


def _check_declaration(owner, decl):
    for port in decl.ports:
        if not isinstance(port, int) or not 0 <= port <= 0xFFFF:
            raise ClaimError(f"{owner}: declared port {port!r} is not 0000h-FFFFh")
    for irq in decl.irqs:
        if not isinstance(irq, int) or not 0 <= irq <= 7:
            raise ClaimError(f"{owner}: declared IRQ {irq!r} is not 0-7 (the XT has one 8259)")
    for ch in decl.dma_channels:
        if not isinstance(ch, int) or not 0 <= ch <= 3:
            raise ClaimError(f"{owner}: declared DMA channel {ch!r} is not 0-3")
    for w in decl.memory:
        if not isinstance(w, MemoryWindow) or w.size <= 0 or w.base < 0 \
                or w.base + w.size > 1 << 20:
            raise ClaimError(f"{owner}: declared memory window {w!r} is not inside 1 MiB")


# What the motherboard itself owns (the chips declare their ports and IRQs;
# these are the rest).  DMA channel 0 is the DRAM refresh's; IRQ 6 and DMA
# channel 2 belong to the diskette adapter card (the ``fdc`` plugin) when
# it is present.
def motherboard_declarations(memory_kib=640, bios_size=0x10000, stamp_port=None):
    from .chipset import Dma8237, NmiMask, Pic8259, Pit8253, Ppi8255, XtKeyboard
    decls = [
        ("pic", Pic8259.declaration),
        ("pit", Pit8253.declaration),
        ("keyboard", XtKeyboard.declaration),
        ("ppi", Ppi8255.declaration),
        ("dma", DeviceDeclaration(name="dma", ports=list(Dma8237.declaration.ports),
                                  dma_channels=[0])),
        ("nmi", NmiMask.declaration),
        ("ram", DeviceDeclaration(name="ram", memory=[
            MemoryWindow(0, memory_kib * 1024, "ram")])),
        ("bios", DeviceDeclaration(name="bios", memory=[
            MemoryWindow((1 << 20) - bios_size, bios_size, "rom")],
            ports=[] if stamp_port is None else [stamp_port])),
    ]
    return decls


# ---------------------------------------------------------------------------
# what the BIOS and the switches report
# ---------------------------------------------------------------------------

SERIAL_ORDER = (0x3F8, 0x2F8, 0x3E8, 0x2E8)     # COM1..COM4
PARALLEL_ORDER = (0x3BC, 0x378, 0x278)          # LPT1..LPT3 as POST finds them
CAP_FLOPPY = "floppy-controller"                # drives count only with a controller
# equipment word bits 4-5 / SW1 switches 5-6: initial video mode
VIDEO_BITS = {None: 0, "ega": 0, "vga": 0, "cga": 2, "mda": 3}


@attrs.define
class Equipment:
    """The machine's configuration as the BIOS (equipment word, BIOS data
    area) and the PPI's switches report it: taken from the cards' declared
    capabilities, never from their names."""
    floppy_drives: int = 1
    memory_kib: int = 640
    serial_ports: list = attrs.Factory(list)     # I/O bases, COM1 first
    parallel_ports: list = attrs.Factory(list)   # I/O bases, LPT1 first
    game_port: bool = False
    video: str = None                            # None, "mda", "cga", "ega", "vga"
    fpu: bool = False

    @classmethod
    def from_declarations(cls, declarations, floppy_drives=1, memory_kib=640):
        serial, parallel = [], []
        game = False
        video = None
        floppy = False
        for decl in declarations:
            caps = set(decl.capabilities)
            if CAP_FLOPPY in caps:
                floppy = True
            if CAP_SERIAL in caps:
                serial.extend(p for p in SERIAL_ORDER if p in decl.ports)
            if CAP_PARALLEL in caps:
                parallel.extend(p for p in PARALLEL_ORDER if p in decl.ports)
            if CAP_GAME_PORT in caps:
                game = True
            if CAP_VIDEO in caps:
                video = next((k for k in VIDEO_KINDS if k in caps), "cga")
        serial.sort(key=SERIAL_ORDER.index)
        parallel.sort(key=PARALLEL_ORDER.index)
        return cls(floppy_drives=floppy_drives if floppy else 0, memory_kib=memory_kib,
                   serial_ports=serial, parallel_ports=parallel, game_port=game,
                   video=video)

    def word(self):
        """The BIOS equipment word (INT 11h, 0040:0010)."""
        eq = 0x0C                                   # planar RAM: 64 KiB and more
        if self.floppy_drives:
            eq |= 0x01 | ((self.floppy_drives - 1) & 3) << 6
        if self.fpu:
            eq |= 0x02
        eq |= VIDEO_BITS[self.video] << 4
        eq |= (len(self.serial_ports) & 7) << 9
        if self.game_port:
            eq |= 0x1000
        eq |= (len(self.parallel_ports) & 3) << 14
        return eq

    def video_switch(self):
        """The PPI switch setting for the video card (``chipset.ppi``)."""
        return {None: "none", "ega": "ega", "vga": "vga", "cga": "cga80",
                "mda": "mda"}[self.video]


# ---------------------------------------------------------------------------
# interrupt and DMA lines
# ---------------------------------------------------------------------------

class IrqLine:
    """A card's interrupt request line into the 8259."""

    def __init__(self, pic, n):
        self.pic = pic
        self.n = n
        self.level = False

    def set(self, level):
        """Drive the line high (True) or low."""
        level = bool(level)
        if level == self.level:
            return
        self.level = level
        if self.pic is not None:
            if level:
                self.pic.raise_irq(self.n)
            else:
                self.pic.lower_irq(self.n)

    def high(self):
        self.set(True)

    def low(self):
        self.set(False)

    def pulse(self):
        """A rising edge and fall (the request stays latched in the PIC)."""
        self.level = False
        if self.pic is not None:
            self.pic.pulse_irq(self.n)


class DmaChannel:
    """A card's channel of the 8237: its request line and the transfers."""

    def __init__(self, dma, ch):
        self.dma = dma
        self.ch = ch

    def request(self, level=True):
        self.dma.set_dreq(self.ch, level)

    def transfer(self, data_or_length):
        """Move data the way the channel is programmed (see Dma8237.transfer)."""
        return self.dma.transfer(self.ch, data_or_length)

    @property
    def terminal_count(self):
        return bool(self.dma.last_tc[self.ch])


# ---------------------------------------------------------------------------
# the backplane: makes boards; the machine owns one
# ---------------------------------------------------------------------------

class Backplane:
    """The shared bus, clock and chips behind every :class:`Board`.

    The machine builds one from its memory map, port map, PIC, DMA
    controller, clock and scheduler; a test may build one on its own
    (``Backplane()`` gives a fresh memory and port map, clock 0).
    """

    def __init__(self, memory=None, ports=None, clock=None, pic=None, dma=None,
                 reschedule=None, options=None, resources=None, diagnostics=None,
                 storage=None, clock_returns_int=False):
        from .bus import MemoryMap, PortMap
        from .diagnostics import Diagnostics
        self.memory = memory if memory is not None else MemoryMap()
        self.ports = ports if ports is not None else PortMap()
        self.clock = clock if clock is not None else (lambda: 0)
        # a clock known to return a Python int (the Machine's) is handed to
        # the boards as it is; any other is wrapped in int()
        self.clock_is_int = clock is None or clock_returns_int
        self.ports.clock = self.clock
        self.memory.clock = self.clock
        self.pic = pic
        self.dma = dma
        self._reschedule = reschedule
        self.options = options
        self.resources = resources if resources is not None else Resources()
        # the machine's diagnostics ring (a fresh one on a bare backplane)
        self.diagnostics = diagnostics if diagnostics is not None else Diagnostics(self.clock)
        self.boards = {}            # owner -> Board
        # the machine's drives and how it opens images (None on a scratch
        # backplane: ``pypc plugins`` attaching a card alone)
        self.storage = storage

    def board(self, declaration, owner=None, check=True):
        """The board for a device with ``declaration`` (recorded in the
        ledger first unless ``check`` is False: the machine has done it)."""
        owner = owner or declaration.name
        if owner in self.boards:
            raise ClaimError(f"two devices are named {owner!r}")
        if check:
            self.resources.add(owner, declaration)
        b = Board(self, owner, declaration)
        self.boards[owner] = b
        return b

    def reschedule(self):
        if self._reschedule is not None:
            self._reschedule()


class Board:
    """What one card sees (see the module docstring).  Every claim is
    checked against the card's declaration."""

    def __init__(self, backplane, name, declaration):
        self._bp = backplane
        self.name = name
        self.declaration = declaration
        self._irqs = {}
        self._dma = {}
        self.claimed_ports = []
        self.claimed_memory = []     # (base, size, kind)
        self.fast_paths = []         # (port, kind name)
        # ports_changed(): values the core answers for this card's ``peek``
        # ports changed outside a port access (an event, host input): re-read
        # them.  Bound straight to the port map, as the clock below is when
        # it returns ints already: a chip marks its ports at every IRQ and
        # asks the clock at every port access.
        self.ports_changed = functools.partial(backplane.ports.mark_dirty, name)
        if backplane.clock_is_int:
            self.clock = backplane.clock

    # -- facts --------------------------------------------------------------
    @property
    def options(self):
        """The parsed command line (plugin options included), or None."""
        return self._bp.options

    def clock(self):
        """The current emulated CPU cycle (4.77 MHz)."""
        return int(self._bp.clock())

    def reschedule(self):
        """Tell the scheduler that ``next_event()`` changed outside a port
        access of this card (host input arrived, a timer was re-armed)."""
        self._bp.reschedule()

    # -- drives -------------------------------------------------------------------
    @property
    def drives(self):
        """The machine's drive table, ``{BIOS unit: disk}`` (00h A:, 01h B:,
        80h C:), live and shared: read it, never change it.  None on a
        scratch backplane (no machine)."""
        storage = self._bp.storage
        return None if storage is None else storage.drives

    @property
    def floppy_drive_count(self):
        """Floppy drives on the machine's cable (1 or 2), None without a
        machine."""
        storage = self._bp.storage
        return None if storage is None else storage.floppy_drive_count()

    @property
    def builtin_bios(self):
        """True when the built-in BIOS serves the drives (INT 13h), False
        with a third-party ``--bios`` or none; None without a machine."""
        storage = self._bp.storage
        return None if storage is None else storage.builtin_bios

    def open_disk(self, path, kind="hdd", option=None):
        """Open the image at ``path`` for this card as the machine opens
        its own drives (``--readonly``, ``--cow``, ``--cow-dir``, the hard
        disk geometry), refusing an image that is already a writable drive;
        the machine closes it at shutdown.  ``option`` names the command-line
        option that gave the path, for the error text.  A bad image is a
        one-line :class:`~pypc_core.errors.PypcError`."""
        storage = self._bp.storage
        if storage is None:
            raise ClaimError(f"{self.name}: no machine to open {path!r} on")
        return storage.open_disk(path, kind, owner=self.name, option=option)

    def log(self, level, message):
        """Put a record in the machine's diagnostics ring under this card's
        name (``debug.output.read`` serves it): ``level`` is ``debug``,
        ``info``, ``warning`` or ``error``; ``message`` one line.  For what a
        user would want to know and the guest cannot say: a command the card
        refuses or ignores, a write to a write-protected medium, a host I/O
        error.  Not per access in a hot loop: the ring keeps the last
        4,096 records."""
        return self._bp.diagnostics.add(level, message, self.name)

    # -- ports ------------------------------------------------------------------
    def _check_ports(self, ports):
        allowed = set(self.declaration.ports)
        for port in ports:
            if port not in allowed:
                raise ClaimError(f"{self.name}: port {port:04X}h is not in its declaration "
                                 f"({self.declaration.describe() or 'no ports'})")

    def claim_ports(self, ports, read=None, write=None, peek=None):
        """Claim ``ports`` with ``read(port) -> int``, ``write(port, value)``
        and an optional side-effect-free ``peek(port) -> int | None`` that
        lets the core answer reads itself (see ``PortMap.claim``)."""
        ports = list(ports)
        self._check_ports(ports)
        self._bp.ports.claim(self.name, ports, read=read, write=write, peek=peek)
        self.claimed_ports.extend(ports)

    def add_publisher(self, publish):
        """Call ``publish()`` whenever the core's fast paths are switched
        back on (after a port observer or ``set_fast_reads(False)``): a card
        whose fast-path model lives in its Python state writes it out again
        (the PIT's counters)."""
        self._bp.ports.add_publisher(publish)

    def _fast(self, port, kind):
        if port not in self.claimed_ports:
            raise ClaimError(f"{self.name}: port {port:04X}h must be claimed "
                             f"(claim_ports) before a fast path is put on it")
        self.fast_paths.append((port, kind))

    def raster(self, port):
        """Raster status bits computed in the core (``fastpath.Raster``;
        call ``set(...)`` with the timing, again when it changes)."""
        self._fast(port, "raster")
        return self._bp.ports.raster(self.name, port)

    def oneshot(self, port, masks, constant_bits=0):
        """One-shots on ``port`` (``fastpath.OneShot``): a write fires all,
        a read gives each one's mask while it runs; both in the core."""
        self._fast(port, "one-shot")
        return self._bp.ports.oneshot(self.name, port, masks, constant_bits)

    def counter(self, port, cycles_per_edge):
        """An 8253-style counter the core reads (``fastpath.Counter``)."""
        self._fast(port, "counter")
        return self._bp.ports.counter(self.name, port, cycles_per_edge)

    def compiled_port(self, port, cfunc, context=None):
        """Reads and writes of ``port`` call a numba ``cfunc`` (``int64(voidptr
        ctx, int64 port, int64 value, int64 op)``) inside the core: ``op & 1``
        is 0 for a read (return the byte), 1 for a write of ``value``;
        ``op >> 1`` is the emulated cycle of the access.  ``disable()`` /
        ``enable()`` on the result switch the port to the card's Python
        handlers (claimed with ``claim_ports``) and back."""
        self._fast(port, "compiled")
        return self._bp.ports.compiled(self.name, port, Handler.compiled(cfunc, context))

    # -- memory -----------------------------------------------------------------
    def _check_memory(self, base, size):
        for w in self.declaration.memory:
            if w.base <= base and base + size <= w.base + w.size:
                return
        declared = ", ".join(f"{w.base:05X}h-{w.base + w.size - 1:05X}h"
                             for w in self.declaration.memory) or "no memory"
        raise ClaimError(f"{self.name}: memory {base:05X}h-{base + size - 1:05X}h is not in "
                         f"its declaration ({declared})")

    def _map(self, base, size, kind, fn):
        self._check_memory(base, size)
        try:
            fn()
        except MemoryMapError as exc:
            raise ClaimError(str(exc)) from None
        self.claimed_memory.append((base, size, kind))

    def map_ram(self, base, size):
        """RAM the CPU reads and writes directly and the card reads (video
        RAM).  Returns the numpy view of it (``uint8[size]``)."""
        mem = self._bp.memory
        self._map(base, size, "ram", lambda: mem.map_device(base, size, self.name))
        return mem.mem[base:base + size]

    def map_rom(self, base, image):
        """An option ROM or character ROM image, read-only to the CPU."""
        size = (len(image) + 0xFFF) // 0x1000 * 0x1000
        mem = self._bp.memory
        self._map(base, size, "rom", lambda: mem.map_rom(base, image, self.name))

    def map_alias(self, base, size, target):
        """Show the card's window at ``target`` again at ``base`` (both must
        be in the declaration): one memory, every write lands in all copies,
        reads stay plain loads in the core."""
        self._check_memory(target, size)
        mem = self._bp.memory
        self._map(base, size, "alias", lambda: mem.map_alias(base, size, target, self.name))

    def map_handler(self, base, size, read=None, write=None):
        """Every data read/write in the window calls ``read(address) -> int``
        / ``write(address, value)`` in Python, synchronously from the core
        (through a C callback: about 0.2 us an access).  An exception
        in a handler stops the run and is raised by the machine."""
        mem = self._bp.memory
        h = Handler.python(read, write, on_error=mem.handler_failed)
        self._map(base, size, "handler", lambda: mem.map_handler(base, size, self.name, h))
        return h

    def map_compiled(self, base, size, cfunc, context=None):
        """Every data read/write in the window calls a numba ``cfunc``
        ``int64(voidptr ctx, int64 address, int64 value, int64 op)`` (op 0
        read: return the byte; op 1 write ``value``) inside the core, a few
        nanoseconds a call.  ``context`` (a numpy array) is its ``ctx``."""
        h = Handler.compiled(cfunc, context)
        mem = self._bp.memory
        self._map(base, size, "compiled", lambda: mem.map_handler(base, size, self.name, h))
        return h

    def ram_journal(self, base, size, copies, log):
        """A write journal (``bus.journal.RamJournal``) on the card's RAM
        window of ``size`` bytes at ``base`` seen ``copies`` times in a row:
        ``start()`` makes every changed byte an entry of ``log``,
        ``stop()`` gives the pages back as they were."""
        from .bus.journal import RamJournal
        self._check_memory(base, size * copies)
        return RamJournal(self._bp.memory, base, size, copies, log, owner=self.name)

    def overlay_compiled(self, base, size, cfunc, context=None, clocked=False):
        """Put a numba ``cfunc`` over the card's window for a while (a write
        journal on a handler window): every data access calls it until
        ``remove_overlay``.  Returns its ``Handler`` (give it a
        ``write_block`` for the bus's Python-side writes).  ``clocked``: the
        core passes each write's cycle in ``op >> 1`` (``op & 1`` is the
        write bit)."""
        self._check_memory(base, size)
        h = Handler.compiled(cfunc, context, clocked=clocked)
        try:
            self._bp.memory.overlay_handler(base, size, h)
        except MemoryMapError as exc:
            raise ClaimError(str(exc)) from None
        return h

    def remove_overlay(self, base, size):
        self._check_memory(base, size)
        self._bp.memory.remove_overlay(base, size)

    def read_memory(self, address, length):
        """Bytes as the CPU would read them (any window, not only the card's)."""
        return self._bp.memory.read(address, length)

    def write_memory(self, address, data):
        """Bytes written as the CPU would (ROM unchanged, aliases updated)."""
        self._bp.memory.write(address, data)

    # -- lines ------------------------------------------------------------------
    def irq(self, n):
        """The card's interrupt line ``n`` (declared in ``irqs``)."""
        if n not in self.declaration.irqs:
            raise ClaimError(f"{self.name}: IRQ {n} is not in its declaration "
                             f"(IRQ {', '.join(map(str, self.declaration.irqs)) or 'none'})")
        line = self._irqs.get(n)
        if line is None:
            line = self._irqs[n] = IrqLine(self._bp.pic, n)
        return line

    def dma(self, ch):
        """The card's DMA channel ``ch`` (declared in ``dma_channels``)."""
        if ch not in self.declaration.dma_channels:
            raise ClaimError(f"{self.name}: DMA channel {ch} is not in its declaration")
        if self._bp.dma is None:
            raise ClaimError(f"{self.name}: this board has no DMA controller")
        chan = self._dma.get(ch)
        if chan is None:
            chan = self._dma[ch] = DmaChannel(self._bp.dma, ch)
        return chan

    # -- what it claimed (``pypc plugins``, the machine) -------------------------
    def describe_claims(self):
        parts = []
        from .device import _ranges
        if self.claimed_ports:
            parts.append("ports " + _ranges(self.claimed_ports))
        if self._irqs:
            parts.append("IRQ " + ",".join(str(i) for i in sorted(self._irqs)))
        if self._dma:
            parts.append("DMA " + ",".join(str(i) for i in sorted(self._dma)))
        for base, size, kind in self.claimed_memory:
            parts.append(f"{kind} {base:05X}h-{base + size - 1:05X}h")
        kinds = {}
        for port, kind in self.fast_paths:
            kinds.setdefault(kind, []).append(port)
        for kind, ports in kinds.items():
            parts.append(f"{kind} {_ranges(ports)}")
        return "; ".join(parts)


__all__ = ["Backplane", "Board", "ClaimError", "Equipment", "DmaChannel", "IrqLine", "Resources",
           "motherboard_declarations"]
