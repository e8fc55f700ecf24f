"""Guest test programs (boot sectors written in assembly here) and the
helpers the machine tests use to run them.

Each ``NAME.asm`` is committed with its assembled ``NAME.bin`` (nasm -f bin,
``cpu 8086``); the suite runs the committed bytes and needs no assembler.
``test_machine_guest.py`` re-assembles every source and compares when nasm
is installed.  The result block the programs fill is described in
``common.inc``.
"""

import os
import shutil
import struct
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = ("video", "disk", "keyboard", "timer")

IMAGE_360K = 368640
SECTOR = 512

RES_DONE = 0x0600
RES_PHASE = 0x0602
RES_DRIVE = 0x0603
RES_LOADER = 0x0604
RES_BASE = 0x0610
DONE_MAGIC = 0x4B4F


def source_path(name):
    return os.path.join(HERE, name + ".asm")


def bin_path(name):
    return os.path.join(HERE, name + ".bin")


def program_bytes(name):
    with open(bin_path(name), "rb") as fh:
        return fh.read()


def find_nasm():
    return shutil.which("nasm")


def assemble(name, out_path, nasm=None):
    """Assemble ``NAME.asm`` to ``out_path`` with nasm; returns the bytes."""
    nasm = nasm or find_nasm()
    subprocess.run([nasm, "-f", "bin", "-I", HERE + os.sep, "-o", out_path,
                    source_path(name)], check=True, capture_output=True)
    with open(out_path, "rb") as fh:
        return fh.read()


def make_floppy(path, program, extra=None, size=IMAGE_360K):
    """Write a floppy image: ``program`` (bytes) from sector 0, then each
    ``extra`` {lba: bytes} placed at its sector; the rest zeros."""
    image = bytearray(size)
    image[:len(program)] = program
    for lba, data in (extra or {}).items():
        image[lba * SECTOR:lba * SECTOR + len(data)] = data
    assert len(image) == size
    with open(path, "wb") as fh:
        fh.write(image)
    return path


def program_image(tmp_path, name, extra=None, filename=None):
    """A 360 KiB floppy in ``tmp_path`` that boots program ``name``."""
    path = os.path.join(str(tmp_path), filename or (name + ".img"))
    return make_floppy(path, program_bytes(name), extra)


# -- reading results ----------------------------------------------------------------
def slot(m, n):
    """Result word ``n`` (0000:0610h + 2n)."""
    return struct.unpack("<H", bytes(m.memory.read(RES_BASE + 2 * n, 2)))[0]


def slots(m, count):
    return list(struct.unpack(f"<{count}H", bytes(m.memory.read(RES_BASE, 2 * count))))


def phase(m):
    return bytes(m.memory.read(RES_PHASE, 1))[0]


def done(m):
    return struct.unpack("<H", bytes(m.memory.read(RES_DONE, 2)))[0] == DONE_MAGIC


def loader_status(m):
    return struct.unpack("<H", bytes(m.memory.read(RES_LOADER, 2)))[0]


def word(m, addr):
    return struct.unpack("<H", bytes(m.memory.read(addr, 2)))[0]


def dword(m, addr):
    return struct.unpack("<I", bytes(m.memory.read(addr, 4)))[0]


def bda_ticks(m):
    return dword(m, 0x46C)


# -- running --------------------------------------------------------------------------
def run_until(m, predicate, timeout_s, slice_s=0.005):
    """Run ``m`` in slices of ``slice_s`` emulated seconds until
    ``predicate(m)`` holds; True, or False after ``timeout_s`` emulated
    seconds.  The slices are fixed, so runs are deterministic."""
    from pypc_core.machine import CPU_HZ
    end = m.clock() + int(timeout_s * CPU_HZ)
    step = max(1, int(slice_s * CPU_HZ))
    while True:
        if predicate(m):
            return True
        if m.clock() >= end:
            return False
        m.run_until_cycle(min(end, m.clock() + step))


def run_to_phase(m, n, timeout_s=5.0):
    return run_until(m, lambda mm: phase(mm) >= n, timeout_s)


def run_to_done(m, timeout_s=5.0):
    return run_until(m, done, timeout_s)
