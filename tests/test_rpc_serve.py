"""``pypc run --headless --serve``: the agent server of the command line.
Its machine loop is the RPC controller, so session.start works over TCP
against the real process, and a signal ends it."""

import json
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest

from guest import dos as progs


def call(sock_file, sock, method, params=None, ident=[0]):
    ident[0] += 1
    req = {"jsonrpc": "2.0", "id": ident[0], "method": method, "params": params or {}}
    sock.sendall((json.dumps(req) + "\n").encode())
    reply = json.loads(sock_file.readline())
    assert reply["id"] == ident[0]
    return reply


def start_agent_fixture(f, sock, folder):
    """session.start of AGENTFIX.COM from ``folder`` as drive C:, stopped at
    its entry."""
    r = call(f, sock, "session.start", {
        "target": {"command": "AGENTFIX.COM", "arguments": []},
        "mounts": [{"drive": "C", "host_path": str(folder)}], "break_at": "entry"})
    assert "result" in r, r
    assert r["result"]["stop_reason"]["kind"] == "startup"


@pytest.fixture
def server(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "pypc_core.cli", "run", "--headless",
                             "--serve", "--rpc-port", "0", "--no-viewers", "--plugins", "cga"],
                            stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = proc.stderr.readline()
    assert "JSON-RPC agent server on 127.0.0.1:" in line, line
    port = int(line.split("127.0.0.1:")[1].split()[0])
    yield proc, port
    if proc.poll() is None:
        proc.kill()
    proc.wait(30)


def test_session_start_over_tcp_and_sigint_ends_the_server(server, tmp_path):
    proc, port = server
    folder = tmp_path / "prog"
    folder.mkdir()
    shutil.copy(progs.path("agent_fixture"), folder / "AGENTFIX.COM")
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        f = sock.makefile("r")
        start_agent_fixture(f, sock, folder)
        regs = call(f, sock, "state.get_registers")["result"]
        assert regs["ip"] == 0x0100
        op = call(f, sock, "execution.step", {"mode": "into"})["result"]["operation_id"]
        call(f, sock, "execution.wait", {"operation_id": op, "timeout_ms": 30000})
        regs = call(f, sock, "state.get_registers")["result"]
        assert regs["general"]["ax"] == 0x1234 and regs["ip"] == 0x0103
    proc.send_signal(signal.SIGINT)
    assert proc.wait(30) == 130


@pytest.mark.parametrize("extra,words", [
    (["--serve"], "--headless"),
    (["--headless", "--serve", "--no-rpc"], "--no-rpc"),
    (["--headless", "--serve", "--timeout", "5"], "--timeout"),
])
def test_serve_options_that_do_not_go_together(extra, words):
    p = subprocess.run([sys.executable, "-m", "pypc_core.cli", "run", *extra],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and words in p.stderr and p.stderr.startswith("pypc: error:")


def test_a_headless_run_with_an_rpc_port_serves_every_method_until_its_client_leaves(tmp_path):
    # no --serve: `pypc run --headless --rpc-port 0` is an agent's machine too;
    # session.start, a step, a memory read and session.stop work, and once
    # the client has gone (leaving the machine paused) the run ends by itself
    folder = tmp_path / "prog"
    folder.mkdir()
    shutil.copy(progs.path("agent_fixture"), folder / "AGENTFIX.COM")
    proc = subprocess.Popen([sys.executable, "-m", "pypc_core.cli", "run", "--headless",
                             "--rpc-port", "0", "--no-viewers", "--plugins", "cga"],
                            stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        while "JSON-RPC on 127.0.0.1:" not in line and line:
            line = proc.stderr.readline()
        assert "JSON-RPC on 127.0.0.1:" in line, line
        port = int(line.split("127.0.0.1:")[1].split()[0])
        with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
            f = sock.makefile("r")
            start_agent_fixture(f, sock, folder)
            op = call(f, sock, "execution.step", {"mode": "into"})["result"]["operation_id"]
            call(f, sock, "execution.wait", {"operation_id": op, "timeout_ms": 30000})
            regs = call(f, sock, "state.get_registers")["result"]
            assert regs["general"]["ax"] == 0x1234 and regs["ip"] == 0x0103
            cs = regs["segments"]["cs"]
            mem = call(f, sock, "memory.read", {
                "address": {"space": "segmented", "segment": cs, "offset": 0x100},
                "length": 3})["result"]
            assert mem["data_hex"] == "b83412", mem           # mov ax, 1234h
            stopped = call(f, sock, "session.stop", {})
            assert "result" in stopped, stopped
            time.sleep(0.5)
            assert proc.poll() is None          # still serving while the client is here
            f.close()
        assert proc.wait(60) == 0               # paused, client gone: the run ends
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
