"""Physical memory map of the 8088: 1 MiB with 20-bit wrap, 4 KiB page kinds.

The arrays here are handed to the jitted CPU core as they are:

* ``mem``        -- ``np.uint8[1 MiB]``, the bytes every page reads as;
* ``page_flags`` -- ``np.uint8[256]``, ``PG_*`` bits per 4 KiB page;
* ``xflags``     -- ``np.uint8[1 MiB]``, per-byte execution/watch flags.

Page kinds: RAM (read/write), ROM (reads its image, writes ignored) and
unmapped (reads 0xFF, writes ignored).  Device-mapped windows that a device
renders from (CGA video RAM) are RAM pages owned by that device: the CPU
reads and writes them directly and the device reads the bytes when it draws.
"""

import numpy as np

from ..cpu.state import MEM_SIZE, PAGE_COUNT, PAGE_SHIFT, PG_READONLY, PG_MIRROR_16K

PAGE_SIZE = 1 << PAGE_SHIFT
_WRITABLE_MASK = 0xFF & ~PG_READONLY   # as a uint8-sized int (numpy 2 rejects -2)

KIND_UNMAPPED = "unmapped"
KIND_RAM = "ram"
KIND_ROM = "rom"
KIND_DEVICE = "device"


class MemoryMapError(ValueError):
    """A memory window is misaligned, out of range or already taken."""


class MemoryMap:
    def __init__(self):
        self.mem = np.full(MEM_SIZE, 0xFF, dtype=np.uint8)
        self.page_flags = np.full(PAGE_COUNT, PG_READONLY, dtype=np.uint8)
        self.xflags = np.zeros(MEM_SIZE, dtype=np.uint8)
        self.page_kind = [KIND_UNMAPPED] * PAGE_COUNT
        self.page_owner = [None] * PAGE_COUNT

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
                    f"memory conflict at {p << PAGE_SHIFT:#07x}: claimed by both "
                    f"{self.page_owner[p]} and {owner}")
        return pages

    def map_ram(self, base, size, owner="ram"):
        for p in self._pages(base, size, owner):
            self.page_kind[p] = KIND_RAM
            self.page_owner[p] = owner
            self.page_flags[p] &= _WRITABLE_MASK
        self.mem[base:base + size] = 0

    def map_device(self, base, size, owner):
        """A RAM-like window whose bytes a device interprets (video RAM)."""
        for p in self._pages(base, size, owner):
            self.page_kind[p] = KIND_DEVICE
            self.page_owner[p] = owner
            self.page_flags[p] &= _WRITABLE_MASK
        self.mem[base:base + size] = 0

    def map_rom(self, base, image, owner="rom"):
        data = np.frombuffer(bytes(image), dtype=np.uint8)
        size = (len(data) + PAGE_SIZE - 1) // PAGE_SIZE * PAGE_SIZE
        for p in self._pages(base, size, owner):
            self.page_kind[p] = KIND_ROM
            self.page_owner[p] = owner
            self.page_flags[p] |= PG_READONLY
        self.mem[base:base + size] = 0xFF
        self.mem[base:base + len(data)] = data

    def mirror_16k(self, base, size=0x8000):
        """Make the two 16 KiB halves of [base, base+size) one memory seen
        twice (CGA video RAM at B8000h and BC000h): a write to either half
        lands in both."""
        if base % 0x8000 or size != 0x8000:
            raise MemoryMapError(f"a 16 KiB mirror needs a 32 KiB-aligned 32 KiB window, "
                                 f"not {base:#07x}+{size:#x}")
        for p in range(base >> PAGE_SHIFT, (base + size) >> PAGE_SHIFT):
            self.page_flags[p] |= PG_MIRROR_16K
        self.mem[base + 0x4000:base + 0x8000] = self.mem[base:base + 0x4000]

    def unmap(self, base, size):
        for p in range(base >> PAGE_SHIFT, (base + size) >> PAGE_SHIFT):
            self.page_kind[p] = KIND_UNMAPPED
            self.page_owner[p] = None
            self.page_flags[p] |= PG_READONLY
        self.mem[base:base + size] = 0xFF

    # -- Python-side access (debugger, BIOS services, loaders) --------------
    def read(self, address, length):
        """Bytes at a physical address, wrapping at 1 MiB."""
        address &= MEM_SIZE - 1
        end = address + length
        if end <= MEM_SIZE:
            return self.mem[address:end].tobytes()
        return self.mem[address:].tobytes() + self.mem[:end - MEM_SIZE].tobytes()

    def write(self, address, data, force=False):
        """Write bytes as the CPU would (ROM and unmapped bytes unchanged)
        unless ``force`` (loading ROM images, firmware patching)."""
        address &= MEM_SIZE - 1
        for i, b in enumerate(bytes(data)):
            a = (address + i) & (MEM_SIZE - 1)
            flags = self.page_flags[a >> PAGE_SHIFT]
            if force or not flags & PG_READONLY:
                self.mem[a] = b
                if flags & PG_MIRROR_16K:
                    self.mem[a ^ 0x4000] = b

    def read_byte(self, address):
        return int(self.mem[address & (MEM_SIZE - 1)])

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
