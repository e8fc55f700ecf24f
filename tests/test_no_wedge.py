"""No guest can wedge pypc: every run returns by its cycle budget.

The property is tested where it once broke (a read of an 8253 counter
before its first wrap left the core's "IN answered" flag set, after which the
loop never looked at its budget again) and around it: every PIT mode, access
mode, latch state, BCD, reads during a pending load, before and after the
first wrap, through the CPU-answered path and the Python one.  A wedge would
hang, not fail, so the matrix runs in a child process with a deadline.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from pypc_core.cpu import state as S
from pypc_core.machine import Machine, MachineConfig

from guest import program_image

HERE = os.path.dirname(os.path.abspath(__file__))


def test_pit_read_before_first_wrap_prints_ok(tmp_path):
    """The issue's guest: IN AL,40h straight after power-on, then 'OK'."""
    img = program_image(tmp_path, "pitwedge")
    with Machine(MachineConfig(plugins=["cga", "fdc"], floppy_a=img, cow=True)) as m:
        start = m.clock()
        stop = m.run_seconds(2)
        assert stop.kind == "budget"
        assert m.clock() >= start + int(2 * 4_772_727)
        assert m.screen_text()[0].startswith("OK")


def test_pit_wedge_guest_ends_by_timeout_on_the_command_line(tmp_path):
    img = program_image(tmp_path, "pitwedge")
    base = [sys.executable, "-m", "pypc_core.cli", "run", "--no-rpc", "--no-viewers", "--headless", "--turbo",
            "--floppy", img, "--readonly"]
    ok = subprocess.run(base + ["--until-text", "OK", "--timeout", "5"],
                        capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    never = subprocess.run(base + ["--until-text", "NEVER SHOWN", "--timeout", "1"],
                           capture_output=True, text=True, timeout=120)
    assert never.returncode == 1, never.stderr


# One child process runs the whole matrix; it prints one JSON line per case.
MATRIX = textwrap.dedent(r"""
    import itertools, json, sys
    sys.path.insert(0, sys.argv[1])
    from pypc_core.machine import Machine, MachineConfig
    from pypc_core.cpu import state as S

    CODE = 0x7C00

    def program(channel, mode, access, bcd, count, latch, gate_first):
        c = bytearray()
        c += b"\xFA"                                   # cli
        if channel == 2 and gate_first:
            c += b"\xE4\x61\x0C\x01\xE6\x61"           # in al,61h / or al,1 / out 61h,al
        ctrl = (channel << 6) | (access << 4) | (mode << 1) | bcd
        c += bytes([0xB0, ctrl, 0xE6, 0x43])           # mov al,ctrl / out 43h,al
        port = 0x40 + channel
        if access in (1, 3):
            c += bytes([0xB0, count & 0xFF, 0xE6, port])
        if access in (2, 3):
            c += bytes([0xB0, (count >> 8) & 0xFF, 0xE6, port])
        if channel == 2 and not gate_first:
            c += b"\xE4\x61\x0C\x01\xE6\x61"
        c += b"\xB9\x40\x00"                           # mov cx,40h
        loop = len(c)
        if latch:
            c += bytes([0xB0, channel << 6, 0xE6, 0x43])   # counter latch command
        c += bytes([0xE4, port, 0xE4, port])           # in al,port twice
        c += b"\xE2" + bytes([(loop - (len(c) + 2)) & 0xFF])  # loop
        c += b"\xE4" + bytes([port])                   # a last read after the loop
        c += b"\xEB\xFE"                               # jmp $ (keeps reading nothing)
        return bytes(c)

    m = Machine(MachineConfig(plugins=["cga"]))
    pristine = m.get_state()
    cases = list(itertools.product((0, 2), range(6), (1, 2, 3), (0, 1), (2, 3, 0x100, 0),
                                   (False, True), (False, True)))
    for fast in (True, False):
        m.ports.set_fast_reads(fast)
        for case in cases:
            m.set_state(pristine)
            m.memory.write(CODE, program(*case))
            m.cpu.regs[S.CS] = 0
            m.cpu.regs[S.IP] = CODE
            start = m.clock()
            for budget in (1, 7, 500, 20_000, 300_000):      # short slices and long ones
                target = m.clock() + budget
                m.run_until_cycle(target)
                assert m.clock() >= target, (case, budget)
            for _ in range(8):                                 # and single steps
                m.step()
            print(json.dumps({"fast": fast, "case": case, "cycles": m.clock() - start}),
                  flush=True)
    print("DONE", flush=True)
""")


def test_every_pit_read_path_returns_by_its_budget(tmp_path):
    script = tmp_path / "matrix.py"
    script.write_text(MATRIX)
    proc = subprocess.run([sys.executable, str(script), os.path.dirname(HERE)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert lines[-1] == "DONE"
    results = [json.loads(line) for line in lines[:-1]]
    assert len(results) == 2 * 2 * 6 * 3 * 2 * 4 * 2 * 2
    assert all(r["cycles"] >= 1 + 7 + 500 + 20_000 + 300_000 for r in results)


def test_a_segment_of_nothing_but_prefixes_passes_the_budget():
    """64 KiB of segment-override prefixes: the 8088 would spin on them
    for ever (no interrupt between prefix and instruction); pypc lets the
    budget pass with IP where it was."""
    from pypc_core.cpu import Cpu
    cpu = Cpu()
    cpu.mem[0x10000:0x20000] = 0x26          # ES: ES: ES: ...
    cpu.regs[S.CS] = 0x1000
    cpu.regs[S.IP] = 0x1234
    reason = cpu.run(1_000_000)
    assert reason == S.EXIT_BUDGET
    assert cpu.cycles >= 1_000_000
    assert cpu.regs[S.IP] == 0x1234


def test_pitwedge_binary_matches_its_source(tmp_path):
    import shutil
    nasm = shutil.which("nasm")
    if nasm is None:
        pytest.skip("nasm is not installed (the committed .bin is used as it is)")
    out = tmp_path / "pitwedge.bin"
    subprocess.run([nasm, "-f", "bin", "-o", str(out), os.path.join(HERE, "guest", "pitwedge.asm")],
                   check=True)
    with open(os.path.join(HERE, "guest", "pitwedge.bin"), "rb") as fh:
        assert out.read_bytes() == fh.read()
