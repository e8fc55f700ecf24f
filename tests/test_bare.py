"""``pypc run --headless --bare``: raw binaries on an XT with no firmware."""

import json
import os
import subprocess
import sys

import pytest

# mov ax,1234h / mov bx,5678h / mov [0500h],ax / cli / hlt
PROGRAM = bytes.fromhex("B83412BB7856A30005FAF4")


def pypc(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "pypc_core.cli", "run", "--no-rpc", "--no-viewers", "--headless", "--turbo",
                           *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def prog(tmp_path):
    path = tmp_path / "prog.bin"
    path.write_bytes(PROGRAM)
    return str(path)


def test_load_entry_until_halt_and_dumps(prog, tmp_path):
    dump = tmp_path / "mem.bin"
    p = pypc("--bare", "--load", f"{prog}@0:7C00", "--entry", "0000:7C00", "--until-halt",
             "--dump-registers", "--dump-memory", f"0:500+2={dump}")
    assert p.returncode == 0, p.stderr
    regs = json.loads(p.stdout.strip().splitlines()[-1])
    assert regs["ax"] == 0x1234 and regs["bx"] == 0x5678
    assert (regs["cs"], regs["ip"]) == (0, 0x7C0B)
    assert regs["stop"] == "halt" and regs["instructions"] == 5
    assert regs["cycles"] > 0 and regs["flags"] & 0x200 == 0
    assert set(regs) == {"ax", "cx", "dx", "bx", "sp", "bp", "si", "di", "es", "cs", "ss", "ds",
                         "ip", "flags", "cycles", "instructions", "stop"}
    assert dump.read_bytes() == b"\x34\x12"


def test_a_test_rom_at_f000_runs_from_the_reset_vector(tmp_path):
    rom = bytearray(b"\x90" * 0x10000)
    rom[0:4] = bytes.fromhex("B80100F4")               # F000:0000 mov ax,1 / hlt
    rom[0xFFF0:0xFFF5] = bytes.fromhex("EA0000" "00F0")  # FFFF:0000 jmp F000:0000
    path = tmp_path / "rom.bin"
    path.write_bytes(bytes(rom))
    p = pypc("--bare", "--load", f"{path}@F000:0000", "--until-halt", "--dump-registers")
    assert p.returncode == 0, p.stderr
    regs = json.loads(p.stdout)
    assert regs["ax"] == 1 and regs["cs"] == 0xF000


def test_registers_start_at_zero_and_ram_is_zero(tmp_path):
    dump = tmp_path / "ram.bin"
    # at FFFF:0000 the bare machine finds FFh (no ROM there): use --entry into
    # zeroed RAM where 00 00 is ADD [BX+SI],AL; a HLT at 0:0100 stops it
    prog = tmp_path / "h.bin"
    prog.write_bytes(b"\xFA\xF4")
    p = pypc("--bare", "--load", f"{prog}@0:100", "--entry", "0:100", "--until-halt",
             "--dump-registers", "--dump-memory", f"1000:0+1000={dump}")
    assert p.returncode == 0, p.stderr
    regs = json.loads(p.stdout)
    assert all(regs[r] == 0 for r in ("ax", "bx", "cx", "dx", "si", "di", "bp", "sp",
                                      "ds", "es", "ss"))
    assert dump.read_bytes() == bytes(0x1000)


def test_without_halt_until_halt_exits_1(prog, tmp_path):
    spin = tmp_path / "spin.bin"
    spin.write_bytes(b"\xEB\xFE")
    p = pypc("--bare", "--load", f"{spin}@0:7C00", "--entry", "0:7C00", "--until-halt",
             "--timeout", "0.2", "--dump-registers")
    assert p.returncode == 1
    assert json.loads(p.stdout)["stop"] == "budget"


def test_cards_only_when_named(prog):
    # without --plugins there is no CGA: B800:0000 is free for a load
    p = pypc("--bare", "--load", f"{prog}@B800:0", "--entry", "B800:0", "--until-halt")
    assert p.returncode == 0, p.stderr
    p = pypc("--bare", "--plugins", "cga", "--load", f"{prog}@B800:0", "--entry", "B800:0")
    assert p.returncode == 2 and "conflict" in p.stderr


@pytest.mark.parametrize("args,words", [
    (["--load", "{prog}@FFFF:FFF8"], "past the end of memory"),
    (["--load", "{prog}@0:7C00", "--load", "{prog}@0:7C04"], "overlaps"),
    (["--load", "{prog}@9FFF:000C"], "straddles the end of RAM"),
    (["--load", "{prog}@12345:0"], "16-bit"),
    (["--load", "{prog}@zz"], "SEG:OFF"),
    (["--load", "{prog}"], "FILE@SEG:OFF"),
    (["--load", "/nonexistent/x.bin@0:0"], "No such file"),
    (["--entry", "0:10000"], "16-bit"),
    (["--dump-memory", "F000:FFF0+20={tmp}/x.bin"], "do not fit"),
    (["--dump-memory", "0:0+10=/nonexistent/dir/x.bin"], "does not exist"),
    (["--dump-memory", "0:0=x.bin"], "SEG:OFF+LEN=FILE"),
])
def test_bad_input_is_one_line_and_exit_2(prog, tmp_path, args, words):
    args = [a.format(prog=prog, tmp=tmp_path) for a in args]
    before = sorted(os.listdir(tmp_path))
    p = pypc("--bare", *args)
    assert p.returncode == 2, (p.returncode, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pypc: error:") and words in lines[0], lines
    assert sorted(os.listdir(tmp_path)) == before         # nothing written


@pytest.mark.parametrize("args,words", [
    (["--load", "{prog}@0:0"], "needs --bare"),
    (["--until-halt"], "needs --bare"),
    (["--bare", "--floppy", "{prog}"], "cannot be used"),
    (["--bare", "--vnc-port", "5910"], "--vnc-port cannot be used"),
    (["--bare", "--telnet-port", "0"], "--telnet-port cannot be used"),
    (["--bare", "--audio", "beep.wav"], "--audio cannot be used"),
])
def test_bare_options_go_together(prog, args, words):
    args = [a.format(prog=prog) for a in args]
    p = pypc(*args)
    assert p.returncode == 2 and words in p.stderr, p.stderr


def test_bare_needs_headless(prog):
    p = subprocess.run([sys.executable, "-m", "pypc_core.cli", "run", "--no-rpc", "--no-viewers", "--bare"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "--headless" in p.stderr
