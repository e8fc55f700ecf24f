"""Instruction fetch wraps inside CS, for every byte of an instruction.

Property: an instruction placed so that it straddles CS:FFFF -> CS:0000 (any
split point, every form: prefixes, opcode, ModR/M, 8/16-bit displacements,
immediates, direct addresses, far pointers) does exactly what the same
instruction does at an ordinary offset.  Only IP differs, by the distance
between the two placements (or not at all for absolute targets), and so do
return addresses pushed by calls and INT.
"""

import numpy as np
import pytest

from pypc_core.cpu import Cpu
from pypc_core.cpu import state as S

CS_SEG = 0x1000
CS_BASE = CS_SEG << 4
BASE_IP = 0x0100

# (bytes, target): "next" (falls through / relative), "abs" (absolute IP),
# "push" marks instructions that push a return IP.
FORMS = [
    ("8A 06 34 12", "next"),              # mov al,[1234h]   (the reported case)
    ("8B 87 34 12", "next"),              # mov ax,[bx+1234h]
    ("8A 46 12", "next"),                 # mov al,[bp+12h]
    ("88 46 F0", "next"),                 # mov [bp-10h],al
    ("26 8A 06 34 12", "next"),           # es: mov al,[1234h]
    ("26 3E 8A 06 34 12", "next"),        # two prefixes
    ("F3 A4", "next"),                    # rep movsb
    ("F3 26 A5", "next"),                 # rep es: movsw
    ("80 06 34 12 56", "next"),           # add byte [1234h],56h
    ("81 06 34 12 78 56", "next"),        # add word [1234h],5678h
    ("81 87 34 12 78 56", "next"),        # add word [bx+1234h],5678h
    ("83 46 10 F0", "next"),              # add word [bp+10h],-10h
    ("C6 06 34 12 AB", "next"),           # mov byte [1234h],0ABh
    ("C7 86 34 12 CD AB", "next"),        # mov word [bp+1234h],0ABCDh
    ("F6 06 34 12 0F", "next"),           # test byte [1234h],0Fh
    ("F7 06 34 12 0F F0", "next"),        # test word [1234h],0F00Fh
    ("F7 26 34 12", "next"),              # mul word [1234h]
    ("B8 34 12", "next"),                 # mov ax,1234h
    ("B4 56", "next"),                    # mov ah,56h
    ("05 34 12", "next"),                 # add ax,1234h
    ("3C 7F", "next"),                    # cmp al,7Fh
    ("A0 34 12", "next"),                 # mov al,[1234h]
    ("A3 34 12", "next"),                 # mov [1234h],ax
    ("D0 06 34 12", "next"),              # rol byte [1234h],1
    ("D3 A7 34 12", "next"),              # shl word [bx+1234h],cl
    ("FF 06 34 12", "next"),              # inc word [1234h]
    ("8F 06 34 12", "next"),              # pop word [1234h]
    ("C4 1E 34 12", "next"),              # les bx,[1234h]
    ("8D 87 34 12", "next"),              # lea ax,[bx+1234h]
    ("8C 1E 34 12", "next"),              # mov [1234h],ds
    ("86 06 34 12", "next"),              # xchg [1234h],al
    ("D4 0A", "next"),                    # aam
    ("E4 40", "next"),                    # in al,40h
    ("E9 34 12", "next"),                 # jmp near (relative)
    ("EB 10", "next"),                    # jmp short
    ("74 10", "next"),                    # jz
    ("E2 10", "next"),                    # loop
    ("E8 34 12", "push"),                 # call near
    ("CD 21", "abs push"),                # int 21h
    ("EA 34 12 00 20", "abs"),            # jmp 2000:1234
    ("9A 34 12 00 20", "abs push"),       # call 2000:1234
    ("FF 26 34 12", "abs"),               # jmp [1234h]
    ("FF 1E 34 12", "abs push"),          # call far [1234h]
    ("C2 04 00", "abs"),                  # ret 4
    ("CA 04 00", "abs"),                  # retf 4
]


def place(cpu, ip, code):
    for i, b in enumerate(code):
        cpu.mem[CS_BASE + ((ip + i) & 0xFFFF)] = b


def machine(ip, code):
    cpu = Cpu()
    rng = np.random.default_rng(1)
    cpu.mem[0x30000:0x40000] = rng.integers(0, 256, 0x10000, dtype=np.uint8)  # DS and ES
    cpu.mem[0x20000:0x30000] = rng.integers(0, 256, 0x10000, dtype=np.uint8)  # SS
    cpu.mem[0x84:0x88] = [0x78, 0x56, 0x00, 0x40]                            # INT 21h
    place(cpu, ip, code)
    r = cpu.regs
    r[S.CS], r[S.IP] = CS_SEG, ip
    r[S.DS] = r[S.ES] = 0x3000
    r[S.SS], r[S.SP] = 0x2000, 0x1000
    r[S.BX], r[S.BP], r[S.SI], r[S.DI] = 0x0010, 0x0020, 0x0100, 0x0200
    r[S.AX], r[S.CX], r[S.DX] = 0x8421, 3, 0x0007
    r[S.FLAGS] = S.FLAGS_FIXED_ONES | S.F_ZF
    return cpu


def outside_cs(mem):
    return np.concatenate([mem[:CS_BASE], mem[CS_BASE + 0x10000:]])


CASES = []
for text, kind in FORMS:
    code = bytes.fromhex(text)
    for split in range(1, len(code)):                    # every straddle point
        CASES.append((text, kind, (0x10000 - split) & 0xFFFF))
    for ip in (0xFFFC, 0xFFFD, 0xFFFE, 0xFFFF):          # and the four offsets
        CASES.append((text, kind, ip))


@pytest.mark.parametrize("text,kind,ip", sorted(set(CASES)))
def test_instruction_straddling_cs_ffff_behaves_as_anywhere_else(text, kind, ip):
    code = bytes.fromhex(text)
    ref = machine(BASE_IP, code)
    assert ref.step() == S.EXIT_STEP
    cpu = machine(ip, code)
    assert cpu.step() == S.EXIT_STEP
    delta = (ip - BASE_IP) & 0xFFFF
    for i in range(S.REGS_SIZE):
        if i == S.IP:
            continue
        assert cpu.regs[i] == ref.regs[i], (S.REG16_NAMES + S.SEG_NAMES + ("ip", "flags", "", ""))[i]
    if "abs" in kind:
        assert cpu.regs[S.IP] == ref.regs[S.IP]
    else:
        assert cpu.regs[S.IP] == (int(ref.regs[S.IP]) + delta) & 0xFFFF
    assert cpu.cycles == ref.cycles
    got, want = cpu.mem.copy(), ref.mem.copy()
    if "push" in kind:
        # the pushed return IP is the one place outside CS that may differ
        sp = (0x2000 << 4) + int(cpu.regs[S.SP])
        ret_ref = int(want[sp]) | int(want[sp + 1]) << 8
        ret_got = int(got[sp]) | int(got[sp + 1]) << 8
        assert ret_got == (ret_ref + delta) & 0xFFFF
        got[sp:sp + 2] = want[sp:sp + 2]
    assert np.array_equal(outside_cs(got), outside_cs(want))
