"""The RPC server inside ``pypc run``: --rpc-port 0 (a free port, printed),
a client holding the launcher's machine paused, Ctrl-C, a port in use,
--no-rpc."""

import os
import signal
import socket
import subprocess
import sys
import time

from rpc_client import Client

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pypc(*args, **kw):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if args[:1] == ("run",):                # (no viewers: they would want 2300 and 5902)
        args = ("run", "--no-viewers") + args[1:]
    return subprocess.Popen([sys.executable, "-m", "pypc_core.cli", *args], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, **kw)


def read_port(proc, timeout=240):
    end = time.monotonic() + timeout
    line = ""
    while time.monotonic() < end:
        line = proc.stderr.readline()
        if line.startswith("pypc: JSON-RPC on 127.0.0.1:"):
            return int(line.rsplit(":", 1)[1])
        if not line and proc.poll() is not None:
            break
    raise AssertionError(f"no RPC port line (last: {line!r})")


def test_headless_run_serves_rpc_and_a_client_holds_it():
    proc = pypc("run", "--headless", "--turbo", "--plugins", "cga", "--timeout", "5",
                "--rpc-port", "0")
    try:
        port = read_port(proc)
        c = Client(port)
        caps = c.call("agent.capabilities")
        assert caps["endpoint"] == f"127.0.0.1:{port}"
        paused = c.call("execution.pause")
        clock = paused["clock"]
        time.sleep(1.0)                     # held: emulated time does not pass
        assert c.call("state.get")["clock"] == clock
        assert c.call("session.status")["state"] == "stopped"
        text = c.call("video.text")["text"]
        assert any("No bootable disk" in row for row in text)
        assert proc.poll() is None          # --timeout 5 is emulated time: still here
        c.call("execution.continue")        # let it finish its 5 emulated seconds
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err
        assert "No bootable disk." in out
        c.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_ctrl_c_while_a_client_holds_the_machine():
    proc = pypc("run", "--headless", "--turbo", "--plugins", "cga", "--timeout", "600",
                "--rpc-port", "0")
    try:
        port = read_port(proc)
        c = Client(port)
        c.call("execution.pause")
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
        assert proc.returncode == 130
        c.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_port_in_use_is_one_line_and_exit_2():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        proc = pypc("run", "--headless", "--turbo", "--plugins", "cga", "--timeout", "1",
                    "--rpc-port", str(port))
        out, err = proc.communicate(timeout=240)
    assert proc.returncode == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pypc: error: --rpc-port")
    assert out == ""


def test_bad_rpc_port_values():
    for value in ("-1", "65536", "http"):
        proc = pypc("run", "--headless", "--rpc-port", value)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 2 and "--rpc-port" in err, err


def test_no_rpc_serves_nothing():
    proc = pypc("run", "--headless", "--turbo", "--plugins", "cga", "--timeout", "1",
                "--no-rpc", "--rpc-port", "0")
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0
    assert "JSON-RPC" not in err
