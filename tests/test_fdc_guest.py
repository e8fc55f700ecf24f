"""A guest program written here (tests/guest/fdcfmt.asm) formats a blank
floppy in B: through the BIOS, the floppy controller card and DMA, and a
second run of the machine reads it back."""

import os

import pytest

from pypc_core.machine import Machine, MachineConfig
from guest import (IMAGE_360K, SECTOR, assemble, find_nasm, program_bytes,
                         program_image, run_to_done, slots)


def run(tmp_path, blank):
    boot = program_image(tmp_path, "fdcfmt")
    with Machine(MachineConfig(floppy_a=boot, floppy_b=blank, cow=False,
                               plugins=["cga", "fdc"])) as m:
        assert run_to_done(m, 240.0), "\n".join(m.screen_text())
        return slots(m, 7), m.screen_text(), m.clock()


def test_format_a_blank_image_then_read_it_back(tmp_path):
    blank = os.path.join(str(tmp_path), "blank.img")
    with open(blank, "wb") as fh:
        fh.write(bytes(IMAGE_360K))
    s, text, _cycles = run(tmp_path, blank)
    assert s[0] == 1                                   # first run: formatted
    assert s[1:3] == [80, 80] and s[5] == 0 and s[6] == 9
    assert any("FORMATTED 0050 0050" in row for row in text)
    with open(blank, "rb") as fh:
        image = fh.read()
    for track in range(80):
        cyl, head = divmod(track, 2)
        first = image[track * 9 * SECTOR:(track * 9 + 1) * SECTOR]
        assert first[:6] == b"PYFM" + bytes([head, cyl])
        rest = image[(track * 9 + 1) * SECTOR:(track + 1) * 9 * SECTOR]
        assert rest == b"\xF6" * 8 * SECTOR             # the INT 1Eh fill byte
    s, text, _cycles = run(tmp_path, blank)            # a new machine, the same image
    assert s[0] == 2
    assert s[3:6] == [80, 80, 0]
    assert any("READ BACK 0000 0000 0050 0050 0000" in row for row in text)


def test_committed_binary_matches_source(tmp_path):
    if not find_nasm():
        pytest.skip("nasm not installed")
    assert assemble("fdcfmt", str(tmp_path / "fdcfmt.bin")) == program_bytes("fdcfmt")


def test_a_reset_in_the_middle_of_a_floppy_read_starts_afresh(tmp_path):
    from guest import run_until
    boot = program_image(tmp_path, "fdcfmt")
    blank = os.path.join(str(tmp_path), "blank.img")
    with open(blank, "wb") as fh:
        fh.write(bytes(IMAGE_360K))
    with Machine(MachineConfig(floppy_a=boot, floppy_b=blank, cow=True,
                               plugins=["cga", "fdc"])) as m:
        assert run_until(m, lambda mm: "boot" in mm.bios.disk.pending, 2.0)
        m.run_seconds(0.3)                              # the motor is spinning up
        assert m.bios.disk.pending
        m.reset()                                       # Ctrl-Alt-Del's cold cousin
        assert run_to_done(m, 240.0), "\n".join(m.screen_text())
        assert slots(m, 1)[0] == 1                      # it booted and formatted B:


def test_a_program_driving_the_controller_itself(tmp_path):
    """fdcport.asm: DOR, recalibrate, seek, format with 1 KiB sectors, write,
    read ID, read back by DMA, and the no-data error, all through the ports."""
    boot = program_image(tmp_path, "fdcport")
    blank = os.path.join(str(tmp_path), "blank.img")
    with open(blank, "wb") as fh:
        fh.write(bytes(IMAGE_360K))
    with Machine(MachineConfig(floppy_a=boot, floppy_b=blank, cow=True,
                               plugins=["cga", "fdc"])) as m:
        assert run_to_done(m, 60.0), "\n".join(m.screen_text())
        s = slots(m, 4)
        res = [bytes(m.memory.read(0x700 + 8 * k, 7)) for k in range(5)]
    assert s[0] == 0x0021 and s[1] == 0x0521           # ST0 21h: seek end, drive 1
    assert res[0][:3] == b"\x01\x00\x00"                # format: normal termination
    assert res[1] == bytes([0x01, 0, 0, 5, 0, 0x43, 3])  # write 42h: TC, next is 43h
    assert res[2][:3] == b"\x01\x00\x00" and res[2][3] == 5 and res[2][6] == 3   # an ID
    assert 0x41 <= res[2][5] <= 0x44
    assert res[3] == bytes([0x01, 0, 0, 5, 0, 0x43, 3])  # read 41h-42h
    assert res[4][:3] == bytes([0x41, 0x04, 0x00])      # sector 1: no data
    assert s[2] == 0 and s[3] == 0x80                   # the data, and the MSR at rest
    with open(blank, "rb") as fh:
        assert fh.read() == bytes(IMAGE_360K)           # --cow: the image is untouched


def test_committed_port_program_matches_source(tmp_path):
    if not find_nasm():
        pytest.skip("nasm not installed")
    assert assemble("fdcport", str(tmp_path / "fdcport.bin")) == program_bytes("fdcport")
