"""Physical-memory access for BIOS services, and the BIOS data area layout.

Services write guest memory the way the CPU (or DMA) would: ROM and unmapped
pages are left alone, and a page with a handler (a device window, or a
write journal while one records) is written through its handler.  Bulk transfers go through numpy slices one 4 KiB page
at a time, so a disk read of 18 sectors costs microseconds, not a Python loop
per byte.
"""

import numpy as np

from ..cpu.state import PAGE_SHIFT, PG_HANDLER, PG_READONLY

MEM_MASK = 0xFFFFF
PAGE = 1 << PAGE_SHIFT

# -- BIOS data area (segment 0040h), as linear addresses -----------------------------
BDA = 0x400
BDA_COM = 0x400            # 4 words: COM1-4 base ports
BDA_LPT = 0x408            # 3 words: LPT1-3 base ports
BDA_EQUIPMENT = 0x410      # word
BDA_MEMORY_KB = 0x413      # word
BDA_KB_FLAGS = 0x417       # shift flags
BDA_KB_FLAGS1 = 0x418      # key-down flags
BDA_KB_ALT_INPUT = 0x419   # Alt + keypad accumulator
BDA_KB_HEAD = 0x41A        # offset (in segment 40h) of the next key to read
BDA_KB_TAIL = 0x41C        # offset of the next free slot
BDA_KB_BUFFER = 0x41E      # 16 words (15 keys)
BDA_KB_BUFFER_END = 0x43E
BDA_FD_RECAL = 0x43E       # bit 7: diskette interrupt happened
BDA_FD_MOTOR = 0x43F       # bits 0-3: motor on per drive
BDA_FD_MOTOR_COUNT = 0x440  # ticks until motor off
BDA_FD_STATUS = 0x441      # status of the last diskette operation
BDA_FDC_RESULT = 0x442     # 7 bytes of controller result
BDA_VIDEO_MODE = 0x449
BDA_VIDEO_COLS = 0x44A     # word
BDA_VIDEO_PAGE_SIZE = 0x44C  # word: regen buffer length
BDA_VIDEO_PAGE_START = 0x44E  # word: offset of the active page
BDA_CURSOR_POS = 0x450     # 8 words: (col, row) per page
BDA_CURSOR_TYPE = 0x460    # word: end line (low), start line (high)
BDA_ACTIVE_PAGE = 0x462
BDA_CRTC_BASE = 0x463      # word: 3D4h
BDA_CRT_MODE_SET = 0x465   # last value written to 3D8h
BDA_CRT_PALETTE = 0x466    # last value written to 3D9h
BDA_LAST_IRQ = 0x46B       # set by the unexpected-interrupt handler
BDA_TICKS = 0x46C          # dword
BDA_TICKS_ROLLOVER = 0x470
BDA_BREAK_FLAG = 0x471     # bit 7: Ctrl-Break seen
BDA_RESET_FLAG = 0x472     # 1234h: warm boot (Ctrl-Alt-Del)
BDA_HD_STATUS = 0x474
BDA_HD_COUNT = 0x475
BDA_HD_CONTROL = 0x476
BDA_HD_PORT_OFFSET = 0x477
BDA_LPT_TIMEOUT = 0x478    # 3 bytes
BDA_COM_TIMEOUT = 0x47C    # 4 bytes
BDA_KB_BUF_START = 0x480   # word: offset of the buffer start (XT 1986 / AT)
BDA_KB_BUF_END = 0x482     # word: offset just past the buffer
BDA_KB_FLAGS3 = 0x496      # bit 1: last code was E0h (enhanced keyboards)
PRTSC_STATUS = 0x500       # 0050:0000 print-screen status

TICKS_PER_DAY = 0x1800B0


def linear(seg, off):
    return ((seg << 4) + off) & MEM_MASK


class Mem:
    """Byte/word/dword and bulk access to ``machine.memory`` (a MemoryMap)."""

    def __init__(self, machine):
        self.machine = machine

    @property
    def memory(self):
        return self.machine.memory

    def rb(self, addr):
        return int(self.memory.mem[addr & MEM_MASK])

    def rw(self, addr):
        return self.rb(addr) | (self.rb(addr + 1) << 8)

    def rd(self, addr):
        return self.rw(addr) | (self.rw(addr + 2) << 16)

    def wb(self, addr, value):
        m = self.memory
        addr &= MEM_MASK
        flags = m.page_flags[addr >> PAGE_SHIFT]
        if flags & PG_HANDLER:
            m.write(addr, bytes([value & 0xFF]))      # the window's handler (a journal)
        elif not flags & PG_READONLY:
            m.mem[addr] = value & 0xFF

    def ww(self, addr, value):
        self.wb(addr, value)
        self.wb(addr + 1, value >> 8)

    def wd(self, addr, value):
        self.ww(addr, value)
        self.ww(addr + 2, value >> 16)

    def read(self, addr, length):
        return self.memory.read(addr & MEM_MASK, length)

    def array(self, addr, length):
        """A numpy copy of ``length`` bytes (wrapping at 1 MiB)."""
        return np.frombuffer(self.read(addr, length), dtype=np.uint8).copy()

    def write(self, addr, data):
        """Write like the CPU/DMA would: read-only pages are skipped."""
        m = self.memory
        arr = np.frombuffer(bytes(data), dtype=np.uint8) if not isinstance(
            data, np.ndarray) else data.astype(np.uint8, copy=False)
        n = len(arr)
        pos = 0
        while pos < n:
            a = (addr + pos) & MEM_MASK
            chunk = min(n - pos, PAGE - (a & (PAGE - 1)))
            flags = m.page_flags[a >> PAGE_SHIFT]
            if flags & PG_HANDLER:
                m.write(a, arr[pos:pos + chunk].tobytes())    # the window's handler
            elif not flags & PG_READONLY:
                m.mem[a:a + chunk] = arr[pos:pos + chunk]
            pos += chunk

    def fill(self, addr, length, value):
        self.write(addr, np.full(length, value & 0xFF, dtype=np.uint8))

    def vector(self, n):
        """(segment, offset) of interrupt vector ``n``."""
        return self.rw(n * 4 + 2), self.rw(n * 4)

    def set_vector(self, n, seg, off):
        self.ww(n * 4, off)
        self.ww(n * 4 + 2, seg)


class Service:
    """Base of the BIOS service groups (video, disk, keyboard, comms): the
    BIOS they serve, its memory accessor and the machine's ports."""

    def __init__(self, bios):
        self.bios = bios
        self.mem = bios.mem

    @property
    def ports(self):
        return self.bios.machine.ports
