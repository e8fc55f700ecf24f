"""What dos.trace costs a program's DOS calls.

    python benchmarks/benchmark_dos_trace.py [--calls N] [--repeat R]

Runs a small .COM under the built-in DOS (in a temporary folder) that
creates a file and then makes N INT 21h AH=42h seeks, and prints the host
time per DOS call (the whole run divided by N) in three settings:

* no trace (the kernel's trap dispatch tests one attribute);
* a trace of class ``memory`` (the recorder is called, finds AH=42h is not
  wanted and serves the call);
* a trace of class ``file`` (every seek decoded and recorded; capacity N+8
  so none is dropped).

Then the same for a DOS in guest code (``GuestDosTrace``): a bare INT 21h
handler (CLC / RETF 2) installed by a flat binary on a machine with the
built-in BIOS and no DOS, and N calls of AH=3Eh to it: no trace, a trace
of class ``memory`` (one breakpoint exit per call, at the handler), and
class ``file`` (two exits per call, handler and return, and the record).

Best of R runs each, settings interleaved.  The last line is one JSON object
with the figures.
"""

import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pypc_core.dos import DosConfig  # noqa: E402
from pypc_core.dos.guest_trace import GuestDosTrace  # noqa: E402
from pypc_core.dos.trace import DosTrace  # noqa: E402
from pypc_core.cpu import state as S  # noqa: E402
from pypc_core.machine import CPU_HZ, Machine, MachineConfig  # noqa: E402


def program(calls):
    """create B.TMP; N x (AX=4200h, CX=DX=0, INT 21h); exit 0 (org 100h)."""
    code = bytes([
        0xB4, 0x3C, 0x31, 0xC9, 0xBA, 0x1F, 0x01, 0xCD, 0x21,    # create B.TMP
        0x89, 0xC3,                                              # mov bx,ax
        0xBE, calls & 0xFF, calls >> 8,                          # mov si,N
        0xB8, 0x00, 0x42, 0x31, 0xC9, 0x31, 0xD2, 0xCD, 0x21,    # seek to 0
        0x4E, 0x75, 0xF4,                                        # dec si / jnz
        0xB8, 0x00, 0x4C, 0xCD, 0x21,                            # exit 0
    ])
    assert len(code) == 0x1F
    return code + b"B.TMP\0"


def run(folder, calls, classes):
    m = Machine(MachineConfig(plugins=["cga"], dos=DosConfig(
        drives={"C": folder}, program="C:\\SEEKS.COM")))
    try:
        rec = None
        if classes is not None:
            rec = DosTrace(m.dos, capacity=calls + 8, classes=classes)
            rec.start()
        t0 = time.perf_counter()
        while not m.dos.exited:
            m.run_for(CPU_HZ // 10)
        elapsed = time.perf_counter() - t0
        if rec is not None and "file" in classes:
            assert rec.recorded == calls + 1, rec.recorded
        return elapsed
    finally:
        m.close()


GUEST_SEG = 0x1000


def guest_program(calls):
    """cli; IVT[21h] = handler; CX=N x (AH=3Eh, INT 21h); jmp $ -- at 1000:0000."""
    code = bytes([
        0xFA, 0x31, 0xC0, 0x8E, 0xD8,                            # cli / ds=0
        0xC7, 0x06, 0x84, 0x00, 0x1A, 0x00,                      # [0084h] = 001Ah
        0x8C, 0x0E, 0x86, 0x00,                                  # [0086h] = cs
        0xB9, calls & 0xFF, calls >> 8,                          # mov cx,N
        0xB4, 0x3E, 0xCD, 0x21, 0xE2, 0xFA,                      # mov ah,3Eh / int 21h / loop
        0xEB, 0xFE,                                              # done: jmp $
        0xF8, 0xCA, 0x02, 0x00,                                  # handler: clc / retf 2
    ])
    assert code[0x1A] == 0xF8
    return code


def run_guest(calls, classes):
    m = Machine(MachineConfig(plugins=["cga"]))
    try:
        m.run_for(CPU_HZ // 2)                     # the BIOS's POST
        m.memory.write(GUEST_SEG << 4, guest_program(calls))
        m.cpu.regs[S.CS], m.cpu.regs[S.IP] = GUEST_SEG, 0
        m.cpu.ctl[S.C_HALTED] = 0                  # (the BIOS waits in HLT for a disk)
        while int(m.cpu.regs[S.IP]) != 0x12:        # the handler is in place, no call yet
            m.step()
        rec = None
        if classes is not None:
            rec = GuestDosTrace(m, capacity=calls + 8, classes=classes)
            rec.start()
        t0 = time.perf_counter()
        while int(m.cpu.regs[S.IP]) != 0x18:
            m.run_for(CPU_HZ // 10)
        elapsed = time.perf_counter() - t0
        if rec is not None and "file" in classes:
            assert rec.recorded == calls and not any(
                e["result"].get("pending") for e in rec.events), rec.recorded
        return elapsed
    finally:
        m.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    settings = {"no_trace": None, "trace_other_class": ("memory",), "trace_recording": ("file",)}
    best = {k: float("inf") for k in settings}
    with tempfile.TemporaryDirectory() as folder:
        with open(os.path.join(folder, "SEEKS.COM"), "wb") as fh:
            fh.write(program(args.calls))
        run(folder, 10, None)                      # compile / load the core first
        for _ in range(args.repeat):
            for name, classes in settings.items():
                best[name] = min(best[name], run(folder, args.calls, classes))
    guest = {"guest_no_trace": None, "guest_other_class": ("memory",),
             "guest_recording": ("file",)}
    for name in guest:
        best[name] = float("inf")
    run_guest(10, None)
    for _ in range(args.repeat):
        for name, classes in guest.items():
            best[name] = min(best[name], run_guest(args.calls, classes))
    per_call = {k: v / args.calls * 1e6 for k, v in best.items()}
    for name, us in per_call.items():
        print(f"{name:18s} {us:8.2f} us per DOS call")
    print(json.dumps({"calls": args.calls, "us_per_call": {k: round(v, 2)
                                                           for k, v in per_call.items()}}))


if __name__ == "__main__":
    main()
