"""Shared set-up of the snapshot tests: a machine running the snapkeys guest
(tests/guest/snapkeys.asm), fingerprints of a machine (registers, memory
hash, frame hash, whole-state hash), and a child-process entry point that
loads a bundle into a fresh machine and runs it:

    python tests/snapshot_support.py BUNDLE SHA256 FRAMES PLUGIN[,PLUGIN...] [DISK_ROOT [CONFIG]]

(CONFIG: JSON of more MachineConfig fields, e.g. the drives.)
"""

import hashlib
import json
import os
import sys

import numpy as np

from pypc_core.cpu import state as S
from pypc_core.machine import Machine, MachineConfig
from pypc_core.scheduler import CPU_HZ

HERE = os.path.dirname(os.path.abspath(__file__))
GUEST = os.path.join(HERE, "guest", "snapkeys.bin")
LOAD = 0x10100
FRAME = CPU_HZ // 60


def make_machine(plugins=("cga",), **config):
    """A machine whose BIOS has started (no disk: it waits after the failed
    boot); the same every time."""
    m = Machine(MachineConfig(plugins=list(plugins), **config))
    m.run_for(CPU_HZ // 2)
    return m


def start_guest(m):
    """Put snapkeys at 1000:0100 and jump there (deterministic)."""
    with open(GUEST, "rb") as fh:
        code = fh.read()
    m.memory.mem[LOAD:LOAD + len(code)] = np.frombuffer(code, dtype=np.uint8)
    r = m.cpu.r
    r.cs, r.ip = 0x1000, 0x100
    m.cpu.ctl[S.C_HALTED] = 0
    m.cpu.ctl[S.C_REP_RESUME] = 0
    return m


def run_frames(m, frames):
    for _ in range(frames):
        m.run_for(FRAME)


def fingerprint(m):
    from pypc_core.snapshot.replay import state_sha256
    regs = {name: int(getattr(m.cpu.r, name)) for name in
            ("ax", "bx", "cx", "dx", "sp", "bp", "si", "di", "cs", "ds", "es", "ss",
             "ip", "flags")}
    frame = m.screen_rgb()
    return {"registers": regs, "clock": m.clock(),
            "memory_sha256": hashlib.sha256(m.memory.mem.tobytes()).hexdigest(),
            "frame_sha256": None if frame is None else hashlib.sha256(
                np.ascontiguousarray(frame).tobytes()).hexdigest(),
            "state_sha256": state_sha256(m)}


def main(argv):
    bundle, digest, frames, plugins = argv[:4]
    disk_root = argv[4] if len(argv) > 4 and argv[4] else None
    config = json.loads(argv[5]) if len(argv) > 5 else {}
    m = Machine(MachineConfig(plugins=plugins.split(","), **config))
    try:
        m.load(bundle, disk_root=disk_root, expected_sha256=digest, progress=None)
        run_frames(m, int(frames))
        print(json.dumps(fingerprint(m)))
    finally:
        m.close()


if __name__ == "__main__":
    main(sys.argv[1:])
