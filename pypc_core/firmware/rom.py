"""The 64 KiB image of the built-in BIOS ROM (mapped at F0000h).

The ROM holds real 8088 code where a program can see it: small entry stubs
at the IBM-compatible addresses.  Most carry a firmware *trap* (a NOP,
90h, whose linear address carries ``XF_TRAP`` in ``memory.xflags``); what
runs all the time is 8088 code throughout, with no trap: the timer tick
(INT 08h) and INT 16h's "is a key waiting?" (AH=01h).  When
CS:IP reaches a trap the CPU core stops before executing it and the machine
calls ``Bios.on_trap(linear)``; the Python service then normally skips the
NOP, so the stub's next instruction (``IRET``, ``RETF 2`` ...) returns to the
caller.  Around the traps the stubs do what needs guest code: calling INT 1Ch
/ 1Bh / 05h, the EOI to the PIC, the jump to a rebooted POST.

Besides the stubs the ROM carries the data a real BIOS leaves at fixed
places: the diskette parameter tables (INT 1Eh), the video parameter table
(INT 1Dh, IBM's layout), the 8x8 font (F000:FA6E, upper half for INT 1Fh),
the serial baud divisor table, the reset vector, the date and the model byte.

All code bytes are hand-assembled here; :class:`RomBuilder` refuses to write
a byte twice, so overlapping stubs are a build error.
"""

BIOS_SEGMENT = 0xF000
BIOS_BASE = 0xF0000
ROM_SIZE = 0x10000

# -- fixed IBM-compatible offsets in segment F000h ------------------------------
OFF_ID = 0xE000            # identification string
OFF_POST = 0xE05B          # POST entry (target of the reset vector)
OFF_NMI = 0xE2C3           # INT 02h
OFF_MISC = 0xE2D0          # free area for stubs without a fixed address
OFF_INT19 = 0xE6F2
OFF_BAUD_TABLE = 0xE729
OFF_INT14 = 0xE739
OFF_INT16 = 0xE82E
IDLE_STAMP_PORT = 0xE7     # the BIOS's empty-keyboard-poll mark (see build_rom)
OFF_INT09 = 0xE987
OFF_INT13 = 0xEC59
OFF_INT0E = 0xEF57         # diskette controller IRQ 6
OFF_DPT = 0xEFC7           # INT 1Eh diskette parameter table
OFF_INT17 = 0xEFD2
OFF_INT10 = 0xF065
OFF_VIDEO_PARMS = 0xF0A4   # INT 1Dh
OFF_FONT_HIGH = 0xF100     # INT 1Fh: glyphs 80h-FFh
OFF_DPT_TYPES = 0xF500     # one 16-byte slot per drive type 1-4 (AH=08h ES:DI)
OFF_FDPT = 0xF540          # fixed disk parameter tables (INT 41h, INT 46h)
OFF_INT12 = 0xF841
OFF_INT11 = 0xF84D
OFF_INT15 = 0xF859
OFF_FONT_LOW = 0xFA6E      # glyphs 00h-7Fh
OFF_INT1A = 0xFE6E
OFF_INT08 = 0xFEA5
OFF_DUMMY_IRET = 0xFF53
OFF_INT05 = 0xFF54
OFF_RESET = 0xFFF0
OFF_DATE = 0xFFF5
OFF_MODEL = 0xFFFE
OFF_CHECKSUM = 0xFFFF

BIOS_DATE = b"11/30/26"
MODEL_BYTE = 0xFE          # IBM PC/XT
ID_STRING = b"pypc built-in XT BIOS - written for pypc, not derived from any other ROM\0"

# ICA scratch used during POST by the option-ROM scan (0000:04F0..04F5)
SCAN_FARPTR = 0x4F0
SCAN_NEXT_SEG = 0x4F4

# -- 8088 opcodes used by the stubs -----------------------------------------------
NOP = 0x90
STI = 0xFB
CLI = 0xFA
HLT = 0xF4
IRET = 0xCF
PUSH_AX = 0x50
POP_AX = 0x58


def int_(n):
    return bytes([0xCD, n])


def mov_al(v):
    return bytes([0xB0, v & 0xFF])


def mov_ah(v):
    return bytes([0xB4, v & 0xFF])


def out_al(port):
    return bytes([0xE6, port])


def jmp_far(seg, off):
    return bytes([0xEA, off & 0xFF, off >> 8, seg & 0xFF, seg >> 8])


def call_far_mem(addr):
    """CALL FAR [addr] (DS-relative)."""
    return bytes([0xFF, 0x1E, addr & 0xFF, addr >> 8])


RETF_2 = bytes([0xCA, 0x02, 0x00])
EOI = mov_al(0x20) + out_al(0x20)


class RomBuilder:
    """A location counter over a 64 KiB image with labels, short-jump fixups
    and trap marks."""

    def __init__(self, fill=0xFF):
        self.image = bytearray([fill]) * ROM_SIZE
        self.used = bytearray(ROM_SIZE)
        self.pc = 0
        self.labels = {}
        self.traps = {}            # offset -> service name
        self._fixups = []

    def at(self, offset):
        self.pc = offset
        return self

    def emit(self, *parts):
        for part in parts:
            data = bytes([part]) if isinstance(part, int) else bytes(part)
            end = self.pc + len(data)
            if end > ROM_SIZE:
                raise ValueError(f"ROM overflow at {self.pc:04X}h")
            for i in range(self.pc, end):
                if self.used[i]:
                    raise ValueError(f"ROM byte F000:{i:04X} written twice")
                self.used[i] = 1
            self.image[self.pc:end] = data
            self.pc = end
        return self

    def label(self, name):
        if name in self.labels:
            raise ValueError(f"duplicate label {name}")
        self.labels[name] = self.pc
        return self

    def trap(self, service):
        if service in self.traps.values():
            raise ValueError(f"duplicate trap {service}")
        self.traps[self.pc] = service
        return self.emit(NOP)

    def jmp_short(self, label):
        return self.jcc_short(0xEB, label)

    def jcc_short(self, opcode, label):
        """A two-byte relative jump (EBh, or a 7xh conditional) to ``label``."""
        self._fixups.append((self.pc, label))
        return self.emit(opcode, 0x00)

    def finish(self):
        for at, label in self._fixups:
            rel = self.labels[label] - (at + 2)
            if not -128 <= rel <= 127:
                raise ValueError(f"short jump from {at:04X}h to {label} out of range")
            self.image[at + 1] = rel & 0xFF
        return self


# -- tables -------------------------------------------------------------------------
def crtc_values(htotal, hdisp, hsync, hsync_width, vtotal, vadjust, vdisp, vsync,
                char_height, cursor=(6, 7)):
    """The 16 MC6845 register values for one display format.

    Arguments are in characters / character rows as a person would state
    them (e.g. 57 character times per line); the 6845 wants several of them
    minus one.  R8 = 2 (interlace-sync mode as IBM's adapters program it);
    R12-R15 (start address, cursor address) start at 0."""
    return bytes([
        htotal - 1, hdisp, hsync, hsync_width,
        vtotal - 1, vadjust, vdisp, vsync,
        2, char_height - 1, cursor[0], cursor[1],
        0, 0, 0, 0,
    ])


# Every colour format has 262 scan lines per frame (vtotal * char_height +
# vadjust: 32 * 8 + 6 in text, 128 * 2 + 6 in graphics); the monochrome
# format has 370 (26 * 14 + 6).
CRTC_40X25 = crtc_values(57, 40, 45, 10, 32, 6, 25, 28, 8)
CRTC_80X25 = crtc_values(114, 80, 90, 10, 32, 6, 25, 28, 8)
CRTC_GRAPHICS = crtc_values(57, 40, 45, 10, 128, 6, 100, 112, 2)
CRTC_MONO = crtc_values(98, 80, 82, 15, 26, 6, 25, 25, 14, cursor=(11, 12))

# CGA mode control register (3D8h) bits
MC_80COL = 0x01
MC_GRAPHICS = 0x02
MC_BW = 0x04
MC_ENABLE = 0x08
MC_640 = 0x10
MC_BLINK = 0x20

MODE_CONTROL = [
    MC_BLINK | MC_ENABLE | MC_BW,                          # 0: 40x25 b/w
    MC_BLINK | MC_ENABLE,                                  # 1: 40x25 colour
    MC_BLINK | MC_ENABLE | MC_BW | MC_80COL,               # 2: 80x25 b/w
    MC_BLINK | MC_ENABLE | MC_80COL,                       # 3: 80x25 colour
    MC_BLINK | MC_ENABLE | MC_GRAPHICS,                    # 4: 320x200 colour
    MC_BLINK | MC_ENABLE | MC_GRAPHICS | MC_BW,            # 5: 320x200 b/w
    MC_ENABLE | MC_640 | MC_BW | MC_GRAPHICS,              # 6: 640x200
    MC_BLINK | MC_ENABLE | MC_80COL,                       # 7: (mono adapter)
]
MODE_COLUMNS = [40, 40, 80, 80, 40, 40, 80, 80]
MODE_PAGE_SIZE = [2048, 2048, 4096, 4096, 16384, 16384, 16384, 4096]
MODE_CRTC_INDEX = [0, 0, 1, 1, 2, 2, 2, 3]


def video_parms_table():
    """IBM's INT 1Dh layout: 4 x 16 CRTC bytes, 4 regen lengths (words),
    8 column counts, 8 mode-control values."""
    out = bytearray(CRTC_40X25 + CRTC_80X25 + CRTC_GRAPHICS + CRTC_MONO)
    for length in (2048, 4096, 16384, 16384):
        out += length.to_bytes(2, "little")
    out += bytes(MODE_COLUMNS)
    out += bytes(MODE_CONTROL)
    return bytes(out)


def diskette_parms(sectors, gap, format_gap):
    """The 11-byte diskette parameter table (INT 1Eh layout)."""
    step_rate_unload = 0xDF      # SRT 3 ms (at 500 kbit/s 'D'), head unload 240 ms
    head_load_dma = 0x02         # head load 4 ms, DMA mode
    return bytes([
        step_rate_unload, head_load_dma,
        37,                      # motor-off delay in timer ticks (about 2 s)
        2,                       # 512 bytes per sector
        sectors,                 # last sector on a track
        gap,                     # read/write gap length
        0xFF,                    # data length (unused with 512-byte sectors)
        format_gap,              # gap length for format
        0xF6,                    # format fill byte
        15,                      # head settle time (ms)
        8,                       # motor start time (1/8 s)
    ])


DPT_BY_TYPE = {
    1: diskette_parms(9, 0x2A, 0x50),      # 360K
    2: diskette_parms(15, 0x1B, 0x54),     # 1.2M
    3: diskette_parms(9, 0x2A, 0x50),      # 720K
    4: diskette_parms(18, 0x1B, 0x6C),     # 1.44M
}
# (cylinders, sectors, heads) that each drive type can hold at most
DRIVE_TYPE_LIMITS = {1: (40, 9, 2), 2: (80, 15, 2), 3: (80, 9, 2), 4: (80, 18, 2)}


def baud_divisors():
    """8250 divisors (1.8432 MHz / 16 / baud) for INT 14h AH=00h codes 0-7."""
    return [round(115200 / b) for b in (110, 150, 300, 600, 1200, 2400, 4800, 9600)]


def fixed_disk_parms(disk):
    """16-byte fixed disk parameter table (INT 41h/46h) for a DiskImage."""
    out = bytearray(16)
    if disk is None:
        return bytes(out)
    c, h, s = disk.geometry
    out[0:2] = c.to_bytes(2, "little")
    out[2] = h & 0xFF
    out[3:5] = c.to_bytes(2, "little")            # reduced write current (none)
    out[5:7] = (0xFFFF).to_bytes(2, "little")     # write precompensation (none)
    out[7] = 0                                    # max ECC burst
    out[8] = 0x08 if h > 8 else 0x00              # control byte
    out[9] = out[10] = out[11] = 0                # timeouts (XT)
    out[12:14] = c.to_bytes(2, "little")          # landing zone
    out[14] = s
    return bytes(out)


def load_font():
    """The 2048-byte 8x8 font from :mod:`pypc_core.font` (zeros if absent)."""
    try:
        from ..font import FONT_8X8
        font = bytes(FONT_8X8)
        if len(font) == 2048:
            return font
    except Exception:   # noqa: BLE001 - the font module is optional here
        pass
    return bytes(2048)


# -- the image ------------------------------------------------------------------------
def build_rom(font=None, hard_disks=(None, None)):
    """Assemble the ROM; returns the finished :class:`RomBuilder`
    (``.image``, ``.traps``, ``.labels``)."""
    font = load_font() if font is None else bytes(font)
    if len(font) != 2048:
        raise ValueError("the 8x8 font must be 2048 bytes")
    b = RomBuilder()

    b.at(OFF_ID).emit(ID_STRING)

    # POST: Python initialises, then option ROMs are called, then INT 19h.
    b.at(OFF_POST).label("post").emit(CLI).trap("post")
    b.label("romscan").trap("romscan")
    b.emit(call_far_mem(SCAN_FARPTR)).jmp_short("romscan")
    b.label("post_done").trap("post_done")
    b.emit(STI, int_(0x19))
    b.label("post_halt").emit(HLT).jmp_short("post_halt")

    b.at(OFF_NMI).label("nmi").emit(IRET)

    # stubs without a fixed IBM address
    b.at(OFF_MISC)
    b.label("int18").emit(STI).trap("int18")
    b.label("int18_halt").emit(HLT).jmp_short("int18_halt")
    b.label("irq_other").trap("irq_other").emit(IRET)

    # INT 19h: boot; if nothing boots, wait for a key and try again
    b.at(OFF_INT19).label("int19").emit(STI).trap("int19")
    b.label("boot_retry").emit(mov_ah(0), int_(0x16)).jmp_short("int19")

    b.at(OFF_BAUD_TABLE)
    for d in baud_divisors():
        b.emit(d.to_bytes(2, "little"))

    b.at(OFF_INT14).label("int14").emit(STI).trap("int14").emit(IRET)
    # INT 16h.  AH=01h (is a key waiting?) is answered in 8088 code: DOS
    # shells poll it in a tight loop at their prompt, and a firmware trap per
    # poll would cost ~10 us of host time each.  An empty poll is marked with
    # an OUT to the BIOS's stamp port, which the CPU counts without leaving
    # the JIT, so the machine still knows when the guest waits for a key.
    b.at(OFF_INT16).label("int16").emit(STI)
    b.emit(0x80, 0xFC, 0x01).jcc_short(0x75, "int16_service")    # cmp ah,1 / jne
    b.emit(0x53, 0x1E)                                          # push bx / push ds
    b.emit(0xBB, 0x40, 0x00, 0x8E, 0xDB)                        # mov bx,40h / mov ds,bx
    b.emit(0x8B, 0x1E, 0x1A, 0x00)                              # mov bx,[001Ah]  head
    b.emit(0x3B, 0x1E, 0x1C, 0x00)                              # cmp bx,[001Ch]  tail
    b.jcc_short(0x74, "int16_empty")                            # je empty (ZF=1)
    b.emit(0x8B, 0x07, 0x1F, 0x5B, RETF_2)                      # mov ax,[bx] / pop ds / pop bx
    b.label("int16_empty").emit(0xE6, IDLE_STAMP_PORT)          # out stamp,al (flags kept)
    b.emit(0x1F, 0x5B, RETF_2)                                  # pop ds / pop bx / retf 2
    b.label("int16_service").trap("int16").emit(RETF_2)

    # INT 09h: the service picks one of the exits below by setting IP
    b.at(OFF_INT09).label("int09").emit(STI, PUSH_AX).trap("int09")
    b.label("kb_done").emit(EOI, POP_AX, IRET)
    b.label("kb_break").emit(int_(0x1B)).trap("kb_break_done").jmp_short("kb_done")
    b.label("kb_prtsc").emit(EOI, int_(0x05), POP_AX, IRET)
    b.label("kb_pause").emit(EOI)
    b.label("kb_pause_wait").trap("kb_pause").emit(POP_AX, IRET)
    b.label("kb_reboot").emit(EOI, jmp_far(BIOS_SEGMENT, OFF_POST))

    b.at(OFF_INT13).label("int13").emit(STI).trap("int13").emit(RETF_2)
    b.at(OFF_INT0E).label("int0e").emit(STI, PUSH_AX).trap("int0e").emit(EOI, POP_AX, IRET)
    b.at(OFF_DPT).emit(DPT_BY_TYPE[1])
    b.at(OFF_INT17).label("int17").emit(STI).trap("int17").emit(IRET)
    b.at(OFF_INT10).label("int10").emit(STI).trap("int10").emit(IRET)
    b.at(OFF_VIDEO_PARMS).emit(video_parms_table())
    b.at(OFF_FONT_HIGH).emit(font[1024:])
    for t in (1, 2, 3, 4):
        b.at(OFF_DPT_TYPES + 16 * (t - 1)).emit(DPT_BY_TYPE[t])
    for i in range(2):
        b.at(OFF_FDPT + 16 * i).emit(fixed_disk_parms(hard_disks[i] if i < len(hard_disks) else None))
    b.at(OFF_INT12).label("int12").emit(STI).trap("int12").emit(IRET)
    b.at(OFF_INT11).label("int11").emit(STI).trap("int11").emit(IRET)
    b.at(OFF_INT15).label("int15").emit(STI).trap("int15").emit(RETF_2)
    b.at(OFF_FONT_LOW).emit(font[:1024])
    b.at(OFF_INT1A).label("int1a").emit(STI).trap("int1a").emit(RETF_2)
    # INT 08h, the timer tick, in 8088 code: it runs 18.2 times an emulated
    # second whatever the guest does, and a firmware trap per tick cost a
    # CPU-bound guest about 3 % of its speed.  The tick count (0040:006C,
    # a dword) goes up by one; reaching a day (1800B0h) or beyond, it is 0
    # and the rollover flag (0040:0070) is set; the diskette motor count
    # (0040:0040) runs down, and at 0 the motors are marked off and the
    # controller's DOR gets 0Ch.  Then INT 1Ch (with the caller's DS), the
    # EOI and IRET.
    b.at(OFF_INT08).label("int08").emit(STI, PUSH_AX)
    b.emit(0x1E, 0x31, 0xC0, 0x8E, 0xD8)                  # push ds / xor ax,ax / mov ds,ax
    b.emit(0xFF, 0x06, 0x6C, 0x04)                        # inc word [046Ch]
    b.jcc_short(0x75, "int08_day")                        # jnz
    b.emit(0xFF, 0x06, 0x6E, 0x04)                        # inc word [046Eh]
    b.label("int08_day").emit(0x83, 0x3E, 0x6E, 0x04, 0x18)   # cmp word [046Eh],18h
    b.jcc_short(0x72, "int08_motor")                      # jb
    b.jcc_short(0x77, "int08_midnight")                   # ja
    b.emit(0x81, 0x3E, 0x6C, 0x04, 0xB0, 0x00)            # cmp word [046Ch],00B0h
    b.jcc_short(0x72, "int08_motor")                      # jb
    b.label("int08_midnight").emit(0xA3, 0x6C, 0x04)      # mov [046Ch],ax (AX = 0)
    b.emit(0xA3, 0x6E, 0x04)                              # mov [046Eh],ax
    b.emit(0xC6, 0x06, 0x70, 0x04, 0x01)                  # mov byte [0470h],1
    b.label("int08_motor").emit(0x80, 0x3E, 0x40, 0x04, 0x00)  # cmp byte [0440h],0
    b.jcc_short(0x74, "int08_done")                       # je
    b.emit(0xFE, 0x0E, 0x40, 0x04)                        # dec byte [0440h]
    b.jcc_short(0x75, "int08_done")                       # jnz
    b.emit(0x80, 0x26, 0x3F, 0x04, 0xF0)                  # and byte [043Fh],0F0h
    b.emit(0x52, 0xBA, 0xF2, 0x03)                        # push dx / mov dx,3F2h
    b.emit(0xB0, 0x0C, 0xEE, 0x5A)                        # mov al,0Ch / out dx,al / pop dx
    b.label("int08_done").emit(0x1F)                      # pop ds
    b.emit(int_(0x1C), EOI, POP_AX, IRET)
    b.at(OFF_DUMMY_IRET).label("dummy_iret").emit(IRET)
    b.at(OFF_INT05).label("int05").emit(STI).trap("int05").emit(IRET)
    b.at(OFF_RESET).emit(jmp_far(BIOS_SEGMENT, OFF_POST))
    b.at(OFF_DATE).emit(BIOS_DATE)
    b.at(OFF_MODEL).emit(MODEL_BYTE)
    b.finish()
    b.image[OFF_CHECKSUM] = (-sum(b.image[:OFF_CHECKSUM])) & 0xFF
    b.used[OFF_CHECKSUM] = 1
    return b
