"""An option ROM given with --option-rom FILE@SEGMENT is mapped read-only and
initialised by the built-in BIOS's ROM scan before it boots."""

from pypc_core.machine import Machine, MachineConfig


def option_rom(message):
    """A 2 KiB option ROM whose init entry prints ``message`` and returns.

        db 55h, 0AAh, 4          ; signature, size in 512-byte blocks
        jmp short init           ; entry at offset 3
    init:
        push ax / push bx / push si / push ds
        push cs / pop ds
        mov si, msg
        mov ah, 0Eh / xor bx, bx
    next:
        lodsb / or al, al / jz done / int 10h / jmp short next
    done:
        xor ax, ax / mov ds, ax / mov word [0600h], 4B4Fh   ; "OK" for the test
        pop ds / pop si / pop bx / pop ax
        retf
    msg: db message, 0
    """
    code = bytearray([0x55, 0xAA, 0x04, 0xEB, 0x00])          # JMP +0: init follows
    code += bytes([0x50, 0x53, 0x56, 0x1E, 0x0E, 0x1F])
    msg_at_fixup = len(code) + 1
    code += bytes([0xBE, 0x00, 0x00])                          # mov si, msg
    code += bytes([0xB4, 0x0E, 0x31, 0xDB])
    loop = len(code)
    code += bytes([0xAC, 0x08, 0xC0, 0x74, 0x04, 0xCD, 0x10])
    code += bytes([0xEB, (loop - (len(code) + 2)) & 0xFF])
    code += bytes([0x31, 0xC0, 0x8E, 0xD8, 0xC7, 0x06, 0x00, 0x06, 0x4F, 0x4B])
    code += bytes([0x1F, 0x5E, 0x5B, 0x58, 0xCB])
    msg = len(code)
    code[msg_at_fixup:msg_at_fixup + 2] = bytes([msg & 0xFF, msg >> 8])
    code += message.encode("ascii") + b"\0"
    image = bytearray(2048)
    image[:len(code)] = code
    image[-1] = (-sum(image)) & 0xFF                           # checksum byte
    assert sum(image) & 0xFF == 0
    return bytes(image)


def test_option_rom_is_initialised_by_the_rom_scan(tmp_path):
    path = tmp_path / "opt.rom"
    path.write_bytes(option_rom("OPTION ROM SAYS HI"))
    with Machine(MachineConfig(option_roms=[(str(path), 0xC800)])) as m:
        m.run_for(1)
        assert m.memory.read(0x600, 2) != b"OK"              # not before POST
        assert m.run_until_text("No bootable disk", 5)       # POST, ROM scan, boot attempt
        assert m.memory.read(0x600, 2) == b"OK"              # the ROM's init ran and returned
        assert m.memory.read(0xC8000, 2) == b"\x55\xAA"
        m.memory.write(0xC8000, b"\x00")                     # ROM: writes are ignored
        assert m.memory.read(0xC8000, 1) == b"\x55"
