"""Shared set-up for the core tests that run hand-assembled programs.

Layout: code at 1000:0100 (linear 10100h), stack 2000:1000, DS = ES = 3000h,
interrupt handlers at 0500:xxxx (linear 5000h + xxxx).
"""

import os

import numpy as np

from pypc_core.cpu import Cpu
from pypc_core.cpu import state as S

BIG = 20_000_000        # cycles: far more than any program here needs


def make_cpu(code, ip=0x100, flags=0, **regs):
    cpu = Cpu()
    load(cpu, (0x1000 << 4) + ip, code)
    cpu.regs[S.CS] = 0x1000
    cpu.regs[S.IP] = ip
    cpu.regs[S.SS] = 0x2000
    cpu.regs[S.SP] = 0x1000
    cpu.regs[S.DS] = 0x3000
    cpu.regs[S.ES] = 0x3000
    cpu.regs[S.FLAGS] = S.FLAGS_FIXED_ONES | flags
    for name, value in regs.items():
        setattr(cpu.r, name, value)
    if os.environ.get("PYPC_TEST_CPU") == "translate":
        # every program through the block translator, translated where it
        # starts and wherever a slice ends (tests/test_translator.py runs
        # these files so)
        cpu.translate(threshold=1, slice_cycles=500, compile_budget=False)
    return cpu


def load(cpu, linear, data):
    data = bytes(data)
    cpu.mem[linear:linear + len(data)] = np.frombuffer(data, dtype=np.uint8)


def word(cpu, linear):
    return int(cpu.mem[linear]) | int(cpu.mem[(linear + 1) & 0xFFFFF]) << 8


def set_vector(cpu, n, seg, off):
    cpu.mem[n * 4:n * 4 + 4] = [off & 0xFF, off >> 8, seg & 0xFF, seg >> 8]
