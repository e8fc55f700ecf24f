"""The live view on a real terminal: alternate screen, raw keys for the
guest, the escape commands, clipping, resizing, and a signal ending it.

The live view runs under a pseudo-terminal (``pty.fork``: pypc is the
session leader with the pty as its controlling terminal, as in a terminal
window) or inside tmux, which draws what pypc writes exactly as a terminal
would (tests skip without tmux).

Wall times here are generous ceilings that only keep a broken run from
hanging the suite; nothing asserts how fast anything is.
"""

import fcntl
import os
import pty
import select
import shutil
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from guest import make_floppy, program_bytes
from test_launcher import pypc_command, pypc_env
from test_stop_signals import CEILING_S, spin  # noqa: F401  (a fixture)

ENTER_SCREEN = b"\x1b[?1049h"
LEAVE_SCREEN = b"\x1b[?1049l"


@pytest.fixture
def ownkbd(tmp_path):
    return make_floppy(str(tmp_path / "ownkbd.img"), program_bytes("ownkbd"))


# -- a pseudo-terminal --------------------------------------------------------------

class PtyRun:
    """pypc (``args``) on a new pseudo-terminal of ``cols`` x ``rows``."""

    def __init__(self, args, cwd, cols=80, rows=26):
        env = pypc_env()
        env["TERM"] = "xterm-256color"
        argv = pypc_command() + [str(a) for a in args]
        self.pid, self.fd = pty.fork()
        if self.pid == 0:                                   # the child: pypc
            try:
                os.chdir(cwd)
                os.execve(sys.executable, argv, env)
            finally:
                os._exit(127)
        self.set_size(cols, rows)
        self.out = b""
        self.status = None

    def set_size(self, cols, rows):
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def read_until(self, needle, timeout=CEILING_S):
        """Read output until ``needle`` (bytes) has appeared; False at EOF."""
        end = time.monotonic() + timeout
        while needle not in self.out:
            if time.monotonic() > end:
                pytest.fail(f"{needle!r} never appeared; output: {self.out[-2000:]!r}")
            if not self._read(0.2):
                return needle in self.out
        return True

    def _read(self, wait):
        if select.select([self.fd], [], [], wait)[0]:
            try:
                data = os.read(self.fd, 65536)
            except OSError:                                 # EIO: the child is gone
                return False
            if not data:
                return False
            self.out += data
        return True

    def send(self, data):
        os.write(self.fd, data)

    def wait(self, timeout=CEILING_S):
        """Exit status of pypc (reading its output to the end)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                while self._read(0.05):
                    pass
                self.status = os.waitstatus_to_exitcode(status)
                return self.status
            self._read(0.05)
        self.kill()
        pytest.fail(f"pypc did not end; output: {self.out[-2000:]!r}")

    def kill(self):
        if self.status is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
            self.status = -9

    def close(self):
        self.kill()
        os.close(self.fd)


@pytest.fixture
def pty_run(tmp_path):
    runs = []

    def start(*args, **kw):
        run = PtyRun(args, tmp_path, **kw)
        runs.append(run)
        return run
    yield start
    for run in runs:
        run.close()


def visible_rows(out):
    """Text of each screen row from pypc's output: the characters written
    after each ``ESC [ row ; 1 H`` (styles dropped), last write wins."""
    import re
    rows = {}
    text = out.decode("utf-8", "replace")
    for m in re.finditer(r"\x1b\[(\d+);1H((?:[^\x1b]|\x1b\[[0-9;]*m)*)", text):
        rows[int(m.group(1))] = re.sub(r"\x1b\[[0-9;]*m", "", m.group(2))
    return rows


# -- stopping a live run by a signal ---------------------------------------------------

def test_sigint_ends_a_live_run_and_restores_the_terminal(pty_run, spin):
    run = pty_run("run", "--no-rpc", "--no-viewers", "--turbo", "--floppy", spin)
    assert run.read_until(ENTER_SCREEN)
    assert run.read_until(b"pypc XT BIOS")          # the loop draws the guest
    attrs = termios.tcgetattr(run.fd)
    assert not attrs[3] & (termios.ISIG | termios.ICANON | termios.ECHO)   # raw
    os.kill(run.pid, signal.SIGINT)
    assert run.wait() == 130
    assert run.out.rindex(LEAVE_SCREEN) > run.out.rindex(ENTER_SCREEN)
    attrs = termios.tcgetattr(run.fd)
    assert attrs[3] & termios.ICANON and attrs[3] & termios.ECHO    # cooked again
    assert b"pypc: interrupted" in run.out


# -- keys -------------------------------------------------------------------------------

def test_control_keys_reach_the_guest_and_ctrl_bracket_q_quits(pty_run, ownkbd):
    """Ctrl-C, Ctrl-Z and Ctrl-\\ are keys for the guest (its own IRQ 1
    handler shows the scan codes it reads), Ctrl-] b is Ctrl-Break
    (Ctrl + Scroll Lock), and Ctrl-] q quits with status 0."""
    run = pty_run("run", "--no-rpc", "--no-viewers", "--turbo", "--floppy", ownkbd)
    assert run.read_until(b"OWN KEYBOARD DRIVER")
    assert run.read_until(b"Ctrl-] q quits")           # the status line says how
    run.send(b"\x03\x1a\x1c\x1db")
    want = "1D 2E AE 9D 1D 2C AC 9D 1D 2B AB 9D 1D 46 C6 9D"
    end = time.monotonic() + CEILING_S
    while not any(want in row for row in visible_rows(run.out).values()):
        assert time.monotonic() < end, visible_rows(run.out)
        assert run._read(0.2), run.out[-2000:]
    run.send(b"\x1dq")
    assert run.wait() == 0
    assert run.out.rindex(LEAVE_SCREEN) > run.out.rindex(b"OWN KEYBOARD DRIVER")


def test_ctrl_bracket_twice_sends_ctrl_bracket_and_other_keys_cancel(pty_run, ownkbd):
    run = pty_run("run", "--no-rpc", "--no-viewers", "--turbo", "--floppy", ownkbd,
                  "--until-text", "1D 1B 9B 9D 1E 9E")
    assert run.read_until(b"OWN KEYBOARD DRIVER")
    run.send(b"\x1d\x1d")              # Ctrl-] Ctrl-]: Ctrl-] for the guest
    run.send(b"\x1dz")                 # an unknown command is dropped
    run.send(b"a")
    assert run.wait() == 0             # --until-text saw exactly those codes


# -- drawing (tmux: a real terminal emulator) ---------------------------------------------

tmux_only = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Tmux:
    def __init__(self, tmp_path):
        self.socket = str(tmp_path / "tmux.sock")

    def __call__(self, *args):
        return subprocess.run(["tmux", "-S", self.socket, *args], capture_output=True,
                              text=True, timeout=60)

    def screen(self):
        return self("capture-pane", "-p", "-t", "pypc").stdout.split("\n")

    def wait_for(self, predicate, what):
        end = time.monotonic() + CEILING_S
        while True:
            rows = self.screen()
            if predicate(rows):
                return rows
            if time.monotonic() > end:
                pytest.fail(f"tmux never showed {what}:\n" + "\n".join(rows))
            time.sleep(0.2)


@pytest.fixture
def tmux(tmp_path):
    t = Tmux(tmp_path)
    yield t
    t("kill-server")


@tmux_only
def test_small_terminal_clips_without_wrapping_and_resize_redraws(tmp_path, tmux, ownkbd):
    env = pypc_env()
    command = " ".join([*pypc_command(), "run", "--no-rpc", "--no-viewers", "--turbo", "--floppy", str(ownkbd)])
    assert tmux("-f", "/dev/null", "new-session", "-d", "-s", "pypc", "-x", "40", "-y", "12",
                "-e", f"PYTHONPATH={env['PYTHONPATH']}", "-e", "PYPC_DEBUG=",
                "-c", str(tmp_path), command).returncode == 0
    tmux("set-option", "-t", "pypc", "remain-on-exit", "on")
    tmux.wait_for(lambda rows: rows[0].startswith("OWN KEYBOARD DRIVER"), "the guest")
    # 16 scan codes: 48 columns of "1E 9E 30 B0 ..." on guest row 1
    tmux("send-keys", "-t", "pypc", "-l", "abcdefgh")
    codes = "1E 9E 30 B0 2E AE 20 A0 12 92 21 A1 22 A2 23 A3"
    # (what tmux shows is caught up once the status line is drawn below the row)
    rows = tmux.wait_for(lambda rows: rows[1].startswith(codes[:40])
                         and len(rows) >= 12 and rows[11].startswith(" pypc"),
                         "the scan codes and the status line")
    assert rows[1] == codes[:40]                  # clipped at the 40th column ...
    assert rows[2].strip() == ""                  # ... and not wrapped onto the next row
    assert len([r for r in rows if r != ""]) <= 12
    assert rows[11].startswith(" pypc")           # the status line on the last row
    # a bigger terminal: everything is drawn again at once
    tmux("resize-window", "-t", "pypc", "-x", "100", "-y", "30")
    rows = tmux.wait_for(lambda rows: len(rows) >= 30 and rows[1].rstrip() == codes
                         and rows[29].startswith(" pypc"),
                         "the whole row and the status line after the resize")
    assert rows[0].startswith("OWN KEYBOARD DRIVER")
    assert rows[29].startswith(" pypc") and "Ctrl-] q quits" in rows[29]
    assert all(r.strip() == "" for r in rows[2:25])
    tmux("send-keys", "-t", "pypc", "C-]", "q")
    tmux.wait_for(lambda rows: not any("OWN KEYBOARD" in r for r in rows),
                  "the terminal given back")


def test_help_documents_the_escape_commands(tmp_path):
    proc = subprocess.run(pypc_command() + ["run", "--help"], cwd=tmp_path, env=pypc_env(),
                          capture_output=True, text=True, timeout=CEILING_S)
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    assert "Ctrl-] q quits" in text and "Ctrl-] b sends Ctrl-Break" in text
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert "Ctrl-] q quits" in " ".join(readme.split())


@tmux_only
def test_session_start_on_a_live_run_shows_the_program_in_the_terminal(tmp_path, tmux):
    # the live view with its JSON-RPC server: a contract client starts a
    # program, steps it, reads its memory and stops the session; the terminal
    # follows the program's machine; Ctrl-] q still ends the run with 0
    import json
    import shutil as _shutil
    import socket
    from guest import dos as progs
    folder = tmp_path / "prog"
    folder.mkdir()
    _shutil.copy(progs.path("agent_fixture"), folder / "AGENTFIX.COM")
    env = pypc_env()
    err = tmp_path / "stderr.txt"
    command = " ".join([*pypc_command(), "run", "--rpc-port", "0", "--no-viewers", "--turbo",
                        "--plugins", "cga", f"2>{err}; echo EXIT=$? >{tmp_path / 'exit.txt'}"])
    assert tmux("-f", "/dev/null", "new-session", "-d", "-s", "pypc", "-x", "80", "-y", "26",
                "-e", f"PYTHONPATH={env['PYTHONPATH']}", "-e", "PYPC_DEBUG=",
                "-c", str(tmp_path), command).returncode == 0
    tmux("set-option", "-t", "pypc", "remain-on-exit", "on")
    end = time.monotonic() + CEILING_S
    port = None
    while port is None:
        text = err.read_text() if err.exists() else ""
        if "JSON-RPC on 127.0.0.1:" in text:
            port = int(text.split("JSON-RPC on 127.0.0.1:")[1].split()[0])
        elif time.monotonic() > end:
            pytest.fail(f"no JSON-RPC port on stderr: {text!r}")
        else:
            time.sleep(0.2)
    ident = [0]

    def call(f, sock, method, params=None):
        ident[0] += 1
        sock.sendall((json.dumps({"jsonrpc": "2.0", "id": ident[0], "method": method,
                                  "params": params or {}}) + "\n").encode())
        reply = json.loads(f.readline())
        assert "result" in reply, reply
        return reply["result"]
    tmux.wait_for(lambda rows: any("No bootable disk." in r for r in rows), "the BIOS's screen")
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        f = sock.makefile("r")
        started = call(f, sock, "session.start", {
            "target": {"command": "AGENTFIX.COM", "arguments": []},
            "mounts": [{"drive": "C", "host_path": str(folder)}], "break_at": "entry"})
        assert started["stop_reason"]["kind"] == "startup"
        op = call(f, sock, "execution.step", {"mode": "into"})["operation_id"]
        call(f, sock, "execution.wait", {"operation_id": op, "timeout_ms": 30000})
        regs = call(f, sock, "state.get_registers")
        assert regs["general"]["ax"] == 0x1234 and regs["ip"] == 0x0103
        mem = call(f, sock, "memory.read", {"address": {"space": "segmented",
                                                        "segment": regs["segments"]["cs"],
                                                        "offset": 0x100}, "length": 3})
        assert mem["data_hex"] == "b83412"
        # the terminal shows the program's machine (booted into the built-in
        # DOS), no longer the first machine's "No bootable disk."
        tmux.wait_for(lambda rows: not any("No bootable disk." in r for r in rows)
                      and any("pypc XT BIOS   640 KB RAM" in r for r in rows),
                      "the program's screen")
        call(f, sock, "session.stop", {})
        f.close()
    tmux("send-keys", "-t", "pypc", "C-]", "q")
    end = time.monotonic() + CEILING_S
    while not (tmp_path / "exit.txt").exists():
        if time.monotonic() > end:
            pytest.fail("pypc did not end:\n" + "\n".join(tmux.screen()))
        time.sleep(0.2)
    assert (tmp_path / "exit.txt").read_text().strip() == "EXIT=0", err.read_text()
