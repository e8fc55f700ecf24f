"""What one guest instruction costs the interpreter, instruction by
instruction: each body below is repeated REPS times in a bare loop that
runs ITERATIONS times (``Cpu.run``, no machine around it), and the figure
is host nanoseconds per instruction of the body (the loop's own LOOP
shared out), the fastest of ``--rounds`` runs.  The instructions of the
standard loop (README, ``bench cpu``) come first, then ones ``run`` hands
to its out-of-line families.  NOP is the price of an instruction boundary
and a dispatch with no work.

    python benchmarks/benchmark_instructions.py [--rounds N] [--only TEXT]

Prints a line per instruction; the last line is JSON (ns by name).
"""

import argparse
import json
import time

import numpy as np

from pypc_core.cpu import Cpu
from pypc_core.cpu import state as S

CODE = 0x10100           # 1000:0100
DATA_SEG, STACK_SEG = 0x2000, 0x3000
HANDLER = 0x40000        # 4000:0000, an IRET for INT 80h
FAR = 0x50000            # 5000:0000, a RETF for CALL FAR [BX]
REPS, ITERATIONS = 200, 2000

# (name, body bytes, instructions in the body)
BODIES = [
    ("nop", b"\x90", 1),
    ("inc si", b"\x46", 1),
    ("add ax,dx", b"\x01\xD0", 1),
    ("xor ax,5A5Ah", b"\x35\x5A\x5A", 1),
    ("mov ax,[si]", b"\x8B\x04", 1),
    ("mov [si+2],ax", b"\x89\x40\x02", 1),
    ("sub dl,[si+1]", b"\x2A\x54\x01", 1),
    ("mov [si+100h],dl", b"\x88\x94\x00\x01", 1),
    ("cmp si,300h", b"\x81\xFE\x00\x03", 1),
    ("jnz +0 (taken)", b"\x75\x00", 1),
    ("jz +0 (not taken)", b"\x74\x00", 1),
    ("push ax / pop ax", b"\x50\x58", 2),
    ("push ds / pop ds", b"\x1E\x1F", 2),
    ("mov ds,ax", b"\x8E\xD8", 1),
    ("cbw", b"\x98", 1),
    ("clc", b"\xF8", 1),
    ("test al,1 (F6)", b"\xF6\xC0\x01", 1),
    ("inc word [bx] (FF)", b"\xFF\x07", 1),
    ("int 80h + iret", b"\xCD\x80", 2),
    ("out 0F0h,al (nobody's port)", b"\xE6\xF0", 1),
    ("call far [bx] + retf", b"\xFF\x1F", 2),
]


def loop_code(body):
    # mov cx, ITERATIONS / l: body * REPS / dec cx / jz done / jmp l / done: hlt
    code = bytes([0xB9]) + ITERATIONS.to_bytes(2, "little")
    start = len(code)
    code += body * REPS
    code += b"\x49\x74\x03\xE9" + ((start - (len(code) + 6)) & 0xFFFF).to_bytes(2, "little")
    return code + b"\xF4"


def machine_for(body):
    cpu = Cpu()
    code = loop_code(body)
    cpu.mem[CODE:CODE + len(code)] = np.frombuffer(code, np.uint8)
    cpu.mem[HANDLER] = 0xCF                                   # IRET
    cpu.mem[0x80 * 4:0x80 * 4 + 4] = np.frombuffer(
        (HANDLER >> 4 << 16).to_bytes(4, "little"), np.uint8)  # INT 80h -> 4000:0000
    cpu.mem[FAR] = 0xCB                                       # RETF
    data = DATA_SEG << 4
    cpu.mem[data + 0x10:data + 0x14] = np.frombuffer(
        (FAR >> 4 << 16).to_bytes(4, "little"), np.uint8)     # [DS:BX] -> 5000:0000
    r = cpu.regs
    r[S.CS], r[S.IP] = 0x1000, 0x0100
    r[S.DS] = r[S.ES] = r[S.AX] = DATA_SEG
    r[S.SS], r[S.SP] = STACK_SEG, 0xFFFE
    r[S.SI], r[S.DI], r[S.BX], r[S.DX] = 0x200, 0x300, 0x10, 0x1234
    r[S.FLAGS] = 0x0002
    return cpu


def ns_per_instruction(body, count):
    cpu = machine_for(body)
    t = time.perf_counter()
    reason = cpu.run(1 << 62)
    dt = time.perf_counter() - t
    if reason != S.EXIT_HALT:
        raise RuntimeError(f"the loop stopped with exit {S.EXIT_NAMES.get(reason)}")
    return dt / (REPS * ITERATIONS * count) * 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5, help="runs of each body (the fastest counts)")
    ap.add_argument("--only", help="only the instructions whose name contains this")
    args = ap.parse_args()
    bodies = [b for b in BODIES if args.only is None or args.only in b[0]]
    ns_per_instruction(b"\x90", 1)              # compiled and warm
    best = {name: None for name, _, _ in bodies}
    for _ in range(args.rounds):                # rounds of every body: drift hits all alike
        for name, body, count in bodies:
            ns = ns_per_instruction(body, count)
            if best[name] is None or ns < best[name]:
                best[name] = ns
    for name, _, count in bodies:
        print(f"{name:<30} {best[name]:7.2f} ns per instruction")
    print(json.dumps({name: round(v, 2) for name, v in best.items()}))


if __name__ == "__main__":
    main()
