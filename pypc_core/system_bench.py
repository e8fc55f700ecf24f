"""``python -m pypc_core.bench system [--floppy DOS.IMG]``: the whole XT.

Guests (built here, no files needed):
* idle     -- a boot sector waiting for a key in the BIOS (INT 16h), as DOS
              sits at its prompt: timer ticks, the CPU halted between them;
* cpu      -- a boot sector running the standard ALU/memory loop forever
              with the timer interrupt on (18.2 Hz) and the BIOS servicing it;
* dos idle -- with ``--floppy``, the given DOS image booted to its prompt.

Each runs unpaced (turbo); the figures are emulated MHz, the multiple of a
real 4.77 MHz XT, and MIPS.  The last line is one JSON object.
"""

import argparse
import json
import os
import tempfile
import time

from .bench_loop import standard_loop_code
from .machine import CPU_HZ, Machine, MachineConfig

REAL_MHZ = CPU_HZ / 1e6

# cli; xor ax,ax; mov ss,ax; mov sp,7C00h; mov ax,2000h; mov ds,ax; mov es,ax; sti
_PROLOGUE = bytes([0xFA, 0x31, 0xC0, 0x8E, 0xD0, 0xBC, 0x00, 0x7C,
                   0xB8, 0x00, 0x20, 0x8E, 0xD8, 0x8E, 0xC0, 0xFB])
# mov ah,0; int 16h; jmp $-4   (wait for keys forever)
_WAIT_KEYS = bytes([0xB4, 0x00, 0xCD, 0x16, 0xEB, 0xFA])


def boot_sector(code):
    if len(code) > 510:
        raise ValueError("boot sector code too long")
    return code + bytes(510 - len(code)) + b"\x55\xAA"


def idle_guest():
    return boot_sector(_PROLOGUE + _WAIT_KEYS)


def cpu_guest():
    loop = standard_loop_code(40, 50000)[:-1]          # without the HLT
    start = len(_PROLOGUE)
    end = start + len(loop) + 2
    back = (start - end) & 0xFF
    return boot_sector(_PROLOGUE + loop + bytes([0xEB, back]))


def floppy_image(path, sector0):
    with open(path, "wb") as fh:
        fh.write(sector0)
        fh.write(bytes(368640 - len(sector0)))


def measure(machine, seconds):
    c0, i0 = machine.clock(), machine.cpu.instructions
    t0 = time.perf_counter()
    machine.run_seconds(seconds)
    wall = time.perf_counter() - t0
    cycles = machine.clock() - c0
    insns = machine.cpu.instructions - i0
    mhz = cycles / wall / 1e6
    return {"wall_s": wall, "emulated_s": cycles / CPU_HZ, "emulated_mhz": mhz,
            "x_real": mhz / REAL_MHZ, "mips": insns / wall / 1e6}


def report(name, fig):
    print(f"{name:<28} {fig['emulated_s']:6.1f} emulated s in {fig['wall_s']:6.2f} s: "
          f"{fig['emulated_mhz']:8.1f} emulated MHz = {fig['x_real']:6.0f}x a real XT, "
          f"{fig['mips']:6.1f} MIPS")


def machine_exit_us(outs=65535, cpu="interpret"):
    """µs per OUT to a Python-handled device port (the CGA's CRTC index) in
    the whole machine: the exit, the scheduler and the device handler."""
    from .cpu import state as S
    with Machine(MachineConfig(cpu=cpu)) as m:
        m.run_seconds(0.3)                       # the BIOS, then its key wait
        # mov dx,3D4h; mov cx,N; l: out dx,al; loop l; cli; hlt
        code = bytes([0xBA, 0xD4, 0x03, 0xB9, outs & 0xFF, outs >> 8,
                      0xEE, 0xE2, 0xFD, 0xFA, 0xF4])
        m.memory.write(0x10000, code)
        m.cpu.r.cs, m.cpu.r.ip = 0x1000, 0
        m.cpu.r.if_ = False
        m.cpu.ctl[S.C_HALTED] = 0
        t0 = time.perf_counter()
        while not (m.cpu.ctl[S.C_HALTED] and m.cpu.r.ip == len(code)):
            m.run_for(1_000_000)
        return (time.perf_counter() - t0) / outs * 1e6


def bench_system(argv=None):
    ap = argparse.ArgumentParser(prog="python -m pypc_core.bench system")
    ap.add_argument("--floppy", help="a DOS floppy image to boot and measure idle at its prompt")
    ap.add_argument("--prompt", default="A:\\>", help="prompt text to wait for (default A:\\>)")
    ap.add_argument("--seconds", type=float, default=60.0, help="emulated seconds per figure")
    ap.add_argument("--cpu", choices=("interpret", "translate"), default="interpret",
                    help="the CPU engine of every machine measured (pypc run --cpu)")
    args = ap.parse_args(argv)
    figures = {}
    with tempfile.TemporaryDirectory(prefix="pypc-bench-") as tmp:
        for name, guest, seconds in (("idle", idle_guest(), args.seconds),
                                     ("cpu", cpu_guest(), args.seconds)):
            path = os.path.join(tmp, f"{name}.img")
            floppy_image(path, guest)
            with Machine(MachineConfig(floppy_a=path, cow=True, cpu=args.cpu)) as m:
                m.run_seconds(1.0)            # boot (and compile) outside the measurement
                fig = measure(m, seconds)
            report(f"{name} guest (turbo)", fig)
            figures[f"{name}_emulated_mhz"] = round(fig["emulated_mhz"], 2)
            figures[f"{name}_x_real"] = round(fig["x_real"], 1)
            figures[f"{name}_mips"] = round(fig["mips"], 2)
    exit_us = machine_exit_us(cpu=args.cpu)
    print(f"{'OUT to a Python device port':<28} {exit_us:.2f} µs each (exit + scheduler + handler)")
    figures["machine_exit_us"] = round(exit_us, 3)
    if args.floppy:
        with Machine(MachineConfig(floppy_a=args.floppy, cow=True, cpu=args.cpu)) as m:
            if not m.run_until_text(args.prompt, 120):
                raise SystemExit(f"{args.floppy}: no {args.prompt!r} within 120 emulated s")
            fig = measure(m, args.seconds)
        report("DOS idle at the prompt", fig)
        figures["dos_idle_emulated_mhz"] = round(fig["emulated_mhz"], 2)
        figures["dos_idle_x_real"] = round(fig["x_real"], 1)
    print(json.dumps(figures))
    return figures
