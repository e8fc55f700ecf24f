"""The built-in DOS's ROM page: the interrupt entry stubs and their traps.

One 4 KiB page at ``DOS_SEGMENT``:0000 (EF000h, just below the BIOS) holds
real 8088 code around firmware traps, exactly like the BIOS ROM (see
``pypc_core/firmware/rom.py``): the INT 21h vector points at ``STI``, a trap
NOP and ``RETF 2``, so the CPU leaves the JIT at the NOP and Python runs the
service, which then skips the NOP.  Being ROM, a program cannot overwrite a
trap byte.
"""

from ..firmware.rom import CLI, HLT, IRET, NOP, POP_AX, PUSH_AX, RETF_2, STI, RomBuilder, int_

DOS_SEGMENT = 0xEF00
DOS_BASE = DOS_SEGMENT << 4
DOS_ROM_SIZE = 0x1000

ID_STRING = b"pypc built-in DOS - written for pypc\0"


def build_dos_rom():
    """The finished :class:`RomBuilder` (labels are offsets in DOS_SEGMENT)."""
    b = RomBuilder()
    b.at(0).emit(ID_STRING)
    b.at(0x40)
    b.label("int21").emit(STI).trap("int21").emit(RETF_2)
    b.label("int20").emit(STI).trap("int20").emit(IRET)
    b.label("int27").emit(STI).trap("int27").emit(IRET)
    b.label("int29").emit(STI).trap("int29").emit(IRET)
    # INT 23h (Ctrl-C) default: terminate the running program
    b.label("int23").trap("int23").emit(IRET)
    # INT 24h (critical error) default: fail the call
    b.label("int24").emit(0xB0, 0x03, IRET)                  # mov al,3 / iret
    # INT 25h/26h (absolute disk read/write): no disk behind a host folder
    b.label("int25").emit(0xB8, 0x02, 0x80, 0xF9, 0xCB)      # mov ax,8002h / stc / retf
    b.label("dummy_iret").emit(IRET)                         # INT 28h, 2Ah, 2Fh
    b.label("case_map").emit(0xCB)                           # country case map: RETF
    # CALL 5 (CP/M-style entry at PSP:0005, a near call from the program
    # followed by our far call): turn the two return addresses into one far
    # return to the caller, then INT 21h with AH=CL
    b.label("call5").emit(0x83, 0xC4, 0x02)                  # add sp,2 (drop 000Ah)
    b.emit(0x55, 0x89, 0xE5, PUSH_AX)                        # push bp / mov bp,sp / push ax
    b.emit(0x8B, 0x46, 0x02, 0x87, 0x46, 0x04)               # mov ax,[bp+2] / xchg ax,[bp+4]
    b.emit(0x89, 0x46, 0x02, POP_AX, 0x5D)                   # mov [bp+2],ax / pop ax / pop bp
    b.emit(0x88, 0xCC, int_(0x21), 0xCB)                     # mov ah,cl / int 21h / retf
    # the built-in COMMAND shell: every step is a Python service
    b.label("shell").trap("shell").jmp_short("shell")
    # the first program ended: the CPU idles here with interrupts off
    b.label("exited").emit(CLI)
    b.label("exited_halt").emit(HLT).jmp_short("exited_halt")
    b.emit(NOP)
    b.finish()
    if max(i for i in range(len(b.used)) if b.used[i]) >= DOS_ROM_SIZE:
        raise ValueError("the DOS ROM overflows its page")
    return b


def rom_image(builder):
    return bytes(builder.image[:DOS_ROM_SIZE])
