"""The real gdb (Debian's /usr/bin/gdb, batch mode) against the stub:
``pypc run --headless --bare --load ... --gdb 0`` in a subprocess, and an
in-process machine whose JSON-RPC server a gdb ``shell`` command asks what
gdb did.  Skipped only when gdb is absent.  The guest is test_gdbstub's
(07C0:0000 = linear 7C00h)."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from rpc_client import RpcFixture

from pypc_core.frontends.gdbstub import GdbServer

GDB = shutil.which("gdb")
pytestmark = pytest.mark.skipif(GDB is None, reason="gdb is not installed")

PROG = bytes.fromhex("B83412" "BB7856" "40" "A30005" "43" "EBF9")

RPC_QUERY = r"""
import json, socket, sys
port, method = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", port), timeout=20)
s.sendall(json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": {}}).encode() + b"\n")
f = s.makefile("rb")
print("RPC " + method + " " + json.dumps(json.loads(f.readline())["result"]))
"""


def gdb(port, *commands, timeout=60):
    args = [GDB, "-batch", "-nx", "-ex", "set architecture i8086", "-ex",
            "set remotetimeout 30", "-ex", f"target remote 127.0.0.1:{port}"]
    for c in commands:
        args += ["-ex", c]
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout)


def test_gdb_against_pypc_run_bare(tmp_path):
    prog = tmp_path / "prog.bin"
    prog.write_bytes(PROG)
    pypc = subprocess.Popen([sys.executable, "-m", "pypc_core.cli", "run", "--headless", "--bare",
                             "--turbo", "--load", f"{prog}@0:7C00", "--entry", "07C0:0000",
                             "--gdb", "0"], stderr=subprocess.PIPE, text=True)
    try:
        line = pypc.stderr.readline()
        m = re.search(r"gdb remote stub on 127\.0\.0\.1:(\d+)", line)
        assert m, line
        p = gdb(m.group(1), "info registers", "x/3i $pc", "x/16xb 0x7c00",
                "break *0x7c0a", "continue", "info registers eip ip cs", "stepi",
                "info registers eip ip", "delete", "watch *(short*)0x500", "continue",
                "print/x $pc", "print/x $ax", "kill")
        out = p.stdout
        assert p.returncode == 0, p.stderr
        # info registers: the 8088's, eip the linear pc, ip beside it
        for name in ("eax", "ebx", "esp", "eflags", "cs", "ss", "ds", "es", "ip"):
            assert re.search(rf"^{name}\s+0x", out, re.M), name
        assert re.search(r"^cs\s+0x7c0\s", out, re.M)
        # x/3i $pc: the instructions at CS:IP (gdb's own 16-bit disassembler)
        assert re.search(r"=> 0x7c0\w:\s", out)
        assert "0x7c00:\t0xb8\t0x34\t0x12\t0xbb\t0x78\t0x56\t0x40\t0xa3" in out
        assert "0x7c08:\t0x00\t0x05\t0x43\t0xeb\t0xf9" in out
        assert "Breakpoint 1, 0x00007c0a in ?? ()" in out
        assert re.search(r"^eip\s+0x7c0a\s", out, re.M) and re.search(r"^ip\s+0xa\s", out, re.M)
        assert re.search(r"^eip\s+0x7c0b\s", out, re.M) and re.search(r"^ip\s+0xb\s", out, re.M)
        # the write watchpoint stops after the writing instruction, old and new values
        assert "Hardware watchpoint 2: *(short*)0x500" in out
        assert re.search(r"Old value = -?\d+\nNew value = -?\d+", out)
        assert "$1 = 0x7c0a" in out
        assert "[Inferior 1 (Remote target) killed]" in out
        assert pypc.wait(timeout=30) == 0                     # gdb's kill ends the run
        assert "gdb ended the run" in pypc.stderr.read()
    finally:
        if pypc.poll() is None:
            pypc.kill()
            pypc.wait()


@pytest.fixture
def fx():
    f = RpcFixture(plugins=[], bare=True, loads=[(PROG, 0x7C00)], entry=(0x07C0, 0))
    f.gdb = GdbServer(f.controller, port=0).start()
    yield f
    f.gdb.close()
    f.close()


def test_gdb_and_json_rpc_share_the_machine(fx, tmp_path):
    script = tmp_path / "rpcq.py"
    script.write_text(RPC_QUERY)
    q = f"shell {sys.executable} {script} {fx.port}"
    p = gdb(fx.gdb.port, "set breakpoint always-inserted on", "break *0x7c0a",
            f"{q} breakpoints.list", "continue", "set $ax = 5", f"{q} state.get_registers",
            "monitor regs", "detach")
    out = p.stdout
    assert p.returncode == 0, p.stderr
    rpc = {m.group(1): json.loads(m.group(2)) for m in re.finditer(r"^RPC (\S+) (.*)$", out, re.M)}
    listed = rpc["breakpoints.list"]["breakpoints"]
    assert [(b["kind"], b["address"]) for b in listed] == [
        ("execution", {"space": "linear", "offset": 0x7C0A})]
    state = rpc["state.get_registers"]
    assert state["general"]["ax"] == 5 and state["ip"] == 0x0A
    assert "AX=0005" in p.stdout + p.stderr                  # monitor output
    assert "Detaching from program" in out or "detached" in out
    c = fx.client()
    assert c.call("breakpoints.list")["breakpoints"] == []   # gdb's went with the detach
    clock = c.call("state.get_registers")["clock"]
    time.sleep(0.2)
    assert c.call("state.get_registers")["clock"] > clock    # detached: it runs
    # re-attach: a JSON-RPC breakpoint stops gdb's continue
    c.call("breakpoints.create", {"kind": "execution", "address": {
        "space": "segmented", "segment": 0x07C0, "offset": 0x0B}})
    p = gdb(fx.gdb.port, "continue", "info registers ip", "monitor breakpoints")
    assert p.returncode == 0, p.stderr
    assert "SIGTRAP" in p.stdout and re.search(r"^ip\s+0xb\s", p.stdout, re.M)
    assert "07C0:000B" in p.stdout + p.stderr


def test_gdb_ctrl_c_interrupts_a_running_machine(fx):
    args = [GDB, "-batch", "-nx", "-ex", "set remotetimeout 30",
            "-ex", f"target remote 127.0.0.1:{fx.gdb.port}",
            "-ex", "continue", "-ex", "info registers eip"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        c = fx.client()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:          # wait for gdb's continue to run
            if c.call("breakpoints.list") is not None and fx.controller.running \
                    and fx.gdb.session is not None and fx.gdb.target.op is not None:
                break
            time.sleep(0.05)
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "Program received signal SIGINT" in out, out
    assert re.search(r"^eip\s+0x7c0[6-9a-d]\s", out, re.M), out


def test_the_session_in_docs_gdb_md(tmp_path):
    doc = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                       "docs", "gdb.md")
    with open(doc) as fh:
        block = re.search(r"```gdb\n(.*?)```", fh.read(), re.S).group(1)
    commands = [ln[len("(gdb) "):] for ln in block.splitlines() if ln.startswith("(gdb) ")]
    expected = [ln for ln in block.splitlines()
                if ln.strip() and ln != "..." and not ln.startswith("(gdb) ")]
    assert commands[0].startswith("target remote ") and len(expected) > 10
    prog = tmp_path / "prog.bin"
    prog.write_bytes(PROG)
    pypc = subprocess.Popen([sys.executable, "-m", "pypc_core.cli", "run", "--headless", "--bare",
                             "--turbo", "--load", f"{prog}@0:7C00", "--entry", "07C0:0000",
                             "--gdb", "0"], stderr=subprocess.PIPE, text=True)
    try:
        port = re.search(r"127\.0\.0\.1:(\d+)", pypc.stderr.readline()).group(1)
        args = [GDB, "-batch", "-nx", "-ex", "set remotetimeout 30", "-ex",
                f"target remote 127.0.0.1:{port}"]
        for c in commands[1:]:
            args += ["-ex", c]
        p = subprocess.run(args, capture_output=True, text=True, timeout=60)
        out = (p.stdout + p.stderr).splitlines()
        for line in expected:
            assert line in out, (line, p.stdout, p.stderr)
        assert pypc.wait(timeout=30) == 0
    finally:
        if pypc.poll() is None:
            pypc.kill()
            pypc.wait()


def test_bare_run_with_gdb_and_json_rpc(tmp_path):
    """``--bare --gdb --rpc-port 0``: gdb's ``set $ax = 5`` and breakpoint,
    read back over JSON-RPC from a gdb ``shell`` command."""
    prog = tmp_path / "prog.bin"
    prog.write_bytes(PROG)
    script = tmp_path / "rpcq.py"
    script.write_text(RPC_QUERY)
    pypc = subprocess.Popen([sys.executable, "-m", "pypc_core.cli", "run", "--headless", "--bare",
                             "--turbo", "--load", f"{prog}@0:7C00", "--entry", "07C0:0000",
                             "--gdb", "0", "--rpc-port", "0"], stderr=subprocess.PIPE, text=True)
    try:
        rpc_port = re.search(r"JSON-RPC on 127\.0\.0\.1:(\d+)", pypc.stderr.readline()).group(1)
        gdb_port = re.search(r"stub on 127\.0\.0\.1:(\d+)", pypc.stderr.readline()).group(1)
        q = f"shell {sys.executable} {script} {rpc_port}"
        p = gdb(gdb_port, "set breakpoint always-inserted on", "break *0x7c07", "continue",
                "set $ax = 5", f"{q} state.get_registers", f"{q} breakpoints.list", "kill")
        assert p.returncode == 0, p.stderr
        rpc = {m.group(1): json.loads(m.group(2))
               for m in re.finditer(r"^RPC (\S+) (.*)$", p.stdout, re.M)}
        assert rpc["state.get_registers"]["general"]["ax"] == 5
        assert rpc["state.get_registers"]["ip"] == 7
        assert [b["address"]["offset"] for b in rpc["breakpoints.list"]["breakpoints"]] == [0x7C07]
        assert pypc.wait(timeout=30) == 0
    finally:
        if pypc.poll() is None:
            pypc.kill()
            pypc.wait()
