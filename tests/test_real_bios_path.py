"""--bios runs another BIOS on the emulated hardware.  The ROM here is a tiny
one written for this test (third-party ROMs are checked locally only): it
writes READY straight into CGA memory, then shows every scan code the
keyboard sends through port 60h, acknowledging each through port 61h as the
XT BIOS does.  It also shows that --type works without the built-in BIOS:
typing starts once the screen has been still for a second."""

import subprocess
import sys

from pypc_core.machine import Machine, MachineConfig

ROM_BASE = 0xFE000       # an 8 KiB ROM ends at FFFFFh


def tiny_bios():
    """F000:E000:
        cli
        push cs / pop ds / mov si, msg
        mov ax, 0B800h / mov es, ax / xor di, di / mov ah, 07h
    show: lodsb / or al, al / jz shown / stosw / jmp short show
    shown:
        mov di, 160                 ; row 1
    kb: in al, 60h / test al, al / jz kb
        stosw
        in al, 61h / or al, 0C0h / out 61h, al   ; clear, keyboard clock high
        and al, 7Fh / out 61h, al                 ; enable the next byte
        jmp short kb
    msg: db "READY", 0
    FFFF0: jmp far F000:E000
    """
    code = bytearray()
    code += bytes([0xFA, 0x0E, 0x1F])
    fix_msg = len(code) + 1
    code += bytes([0xBE, 0, 0])
    code += bytes([0xB8, 0x00, 0xB8, 0x8E, 0xC0, 0x31, 0xFF, 0xB4, 0x07])
    show = len(code)
    code += bytes([0xAC, 0x08, 0xC0, 0x74, 0x03, 0xAB])
    code += bytes([0xEB, (show - (len(code) + 2)) & 0xFF])
    code += bytes([0xBF, 0xA0, 0x00])
    kb = len(code)
    code += bytes([0xE4, 0x60, 0x84, 0xC0, 0x74, (kb - (len(code) + 6)) & 0xFF])
    code += bytes([0xAB, 0xE4, 0x61, 0x0C, 0xC0, 0xE6, 0x61, 0x24, 0x7F, 0xE6, 0x61])
    code += bytes([0xEB, (kb - (len(code) + 2)) & 0xFF])
    msg = 0xE000 + len(code)
    code[fix_msg:fix_msg + 2] = bytes([msg & 0xFF, msg >> 8])
    code += b"READY\0"
    image = bytearray(b"\xFF" * 8192)
    image[:len(code)] = code
    image[0x1FF0:0x1FF5] = bytes([0xEA, 0x00, 0xE0, 0x00, 0xF0])
    return bytes(image)


def test_a_third_party_bios_runs_and_reads_the_keyboard(tmp_path):
    rom = tmp_path / "tiny.rom"
    rom.write_bytes(tiny_bios())
    with Machine(MachineConfig(bios=str(rom))) as m:
        assert m.bios is None                          # no built-in services, no traps
        assert m.memory.read(0xFFFF0, 5) == bytes([0xEA, 0x00, 0xE0, 0x00, 0xF0])
        assert m.run_until_text("READY", 1)
        m.type_text("x")                               # make 2Dh, break ADh
        m.run_seconds(0.1)
        assert m.memory.read(0xB80A0, 4) == bytes([0x2D, 0x07, 0xAD, 0x07])


def test_type_with_a_third_party_bios(tmp_path):
    rom = tmp_path / "tiny.rom"
    rom.write_bytes(tiny_bios())
    proc = subprocess.run(
        [sys.executable, "-m", "pypc_core.cli", "run", "--no-rpc", "--no-viewers", "--headless", "--turbo",
         "--bios", str(rom), "--type", "x", "--until-text=-\u00a1", "--timeout", "10"],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].startswith("READY")
    assert proc.stdout.splitlines()[1].startswith("-\u00a1")
