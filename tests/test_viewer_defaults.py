"""The viewers are on by default where the run serves someone, as the API
contract says: the live view and the agent server (``--serve``) serve telnet
on 2300 and VNC on 5902 beside JSON-RPC on 2301 (a job serves only the ports
it names: tests/test_job_listeners.py);
``--no-telnet`` / ``--no-vnc`` / ``--no-viewers`` leave them out, port 0
takes a free port and says which; an agent server's viewers follow
``session.start`` to the program's machine; a spawned pypc (console, MCP)
leaves the default ports alone.

Every wall time here is a ceiling that only keeps a broken run from hanging
the suite; nothing asserts how fast anything is.
"""

import argparse
import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time

import pyte
import pytest

from guest import dos as progs
from test_launcher import pypc_command, pypc_env
from test_telnet import TelnetClient
from viewers_common import CEILING_S, ECHO_BOOT, ECHO_PROMPT, floppy, plugins_with, wait_for

from pypc_core.cli import viewers as frontends
from pypc_core.frontends.audio import RATE, Speaker, WavSink
from pypc_core.machine import CPU_HZ, Machine, MachineConfig
from pypc_core.spawn import viewer_args as spawn_viewer_args

CONTRACT_PORTS = (2300, 2301, 5902)         # telnet, JSON-RPC, VNC


def namespace(**kw):
    fields = dict(telnet_port=None, vnc_port=None, no_telnet=False, no_vnc=False,
                  no_viewers=False)
    fields.update(kw)
    return argparse.Namespace(**fields)


@pytest.mark.parametrize("given, ports", [
    ({}, (2300, 5902)),
    ({"telnet_port": 2400}, (2400, 5902)),
    ({"vnc_port": 5910, "telnet_port": 0}, (0, 5910)),
    ({"no_telnet": True}, (None, 5902)),
    ({"no_vnc": True, "telnet_port": 23}, (23, None)),
    ({"no_viewers": True}, (None, None)),
    ({"no_telnet": True, "no_vnc": True}, (None, None)),
])
def test_which_viewers_a_run_serves(given, ports):
    assert frontends.viewer_ports(namespace(**given)) == ports


def port_is_free(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def connects(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def rfb_banner(port):
    with socket.create_connection(("127.0.0.1", port), timeout=CEILING_S) as s:
        return s.recv(12)


def rpc_call(port, method, **params):
    with socket.create_connection(("127.0.0.1", port), timeout=CEILING_S) as s:
        f = s.makefile("rw")
        f.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": method,
                            "params": params}) + "\n")
        f.flush()
        return json.loads(f.readline())


def stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(CEILING_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_an_agent_server_serves_the_contract_ports(tmp_path):
    """A server role with no port option (``--headless --serve``; the live
    view follows the same rule, pypc_core.argtypes.server_role): telnet
    answers on 2300, an RFB 3.8 server on 5902, JSON-RPC on 2301 -- all on
    127.0.0.1 -- and Ctrl-C ends the run."""
    busy = [p for p in CONTRACT_PORTS if not port_is_free(p)]
    if busy:
        pytest.skip(f"port(s) {busy} of this host are taken by another program")
    proc = subprocess.Popen(
        pypc_command() + ["run", "--headless", "--serve", "--speed", "1",
                          "--floppy", str(floppy(tmp_path / "e.img", ECHO_BOOT))],
        env=pypc_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        assert wait_for(lambda: all(connects(p) for p in CONTRACT_PORTS)
                        or proc.poll() is not None, timeout=300)
        assert proc.poll() is None, proc.communicate()[1]
        assert rfb_banner(5902) == b"RFB 003.008\n"
        caps = rpc_call(2301, "agent.capabilities")["result"]
        assert caps["endpoint"] == "127.0.0.1:2301"
        tn = TelnetClient(2300)
        try:
            screen = pyte.Screen(80, 25)
            stream = pyte.ByteStream(screen)
            assert tn.read_until(stream,
                                 lambda: any(ECHO_PROMPT in row for row in screen.display))
        finally:
            tn.close()
    finally:
        stop(proc)
    assert proc.returncode == 130, proc.stderr.read()


def read_lines_until(proc, prefix, ceiling=300):
    """stderr lines of ``proc`` up to the one starting with ``prefix``."""
    lines = []
    timer = threading.Timer(ceiling, proc.kill)     # a hung start ends the read
    timer.start()
    try:
        while True:
            line = proc.stderr.readline()
            if not line:
                raise AssertionError(f"pypc ended before {prefix!r}: {''.join(lines)}")
            lines.append(line)
            if line.startswith(prefix):
                return lines
    finally:
        timer.cancel()


def port_of(lines, prefix):
    for line in lines:
        if line.startswith(prefix):
            return int(line.rsplit(":", 1)[1].split()[0])
    raise AssertionError(f"no line {prefix!r} in {lines}")


def test_port_zero_takes_a_free_port_and_says_which(tmp_path):
    proc = subprocess.Popen(
        pypc_command() + ["run", "--headless", "--speed", "1", "--timeout", "600",
                          "--rpc-port", "0", "--telnet-port", "0", "--vnc-port", "0",
                          "--floppy", str(floppy(tmp_path / "e.img", ECHO_BOOT))],
        env=pypc_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        lines = read_lines_until(proc, "pypc: JSON-RPC on ")
        telnet = port_of(lines, "pypc: telnet viewer on 127.0.0.1:")
        vnc = port_of(lines, "pypc: VNC viewer on 127.0.0.1:")
        rpc = port_of(lines, "pypc: JSON-RPC on 127.0.0.1:")
        assert len({telnet, vnc, rpc}) == 3
        assert rfb_banner(vnc) == b"RFB 003.008\n"
        tn = TelnetClient(telnet)
        try:
            screen = pyte.Screen(80, 25)
            assert tn.read_until(pyte.ByteStream(screen),
                                 lambda: any(ECHO_PROMPT in row for row in screen.display))
        finally:
            tn.close()
    finally:
        stop(proc)


def test_no_viewers_listens_on_no_viewer_port(tmp_path):
    """--no-viewers: the run says nothing of viewers and, with --no-rpc,
    opens no listening socket at all (its /proc socket table has none)."""
    proc = subprocess.Popen(
        pypc_command() + ["run", "--headless", "--speed", "1", "--timeout", "600",
                          "--no-rpc", "--no-viewers",
                          "--floppy", str(floppy(tmp_path / "e.img", ECHO_BOOT))],
        env=pypc_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        assert listening_inodes(proc.pid) is not None
        time.sleep(3)                       # well into the run (not a speed figure)
        assert proc.poll() is None
        assert listening_inodes(proc.pid) == set()
    finally:
        stop(proc)
    assert "viewer" not in proc.stderr.read()


def listening_inodes(pid):
    """Inodes of the TCP sockets ``pid`` listens on (None: cannot tell)."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return None
    own = set()
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            own.add(target[8:-1])
    listening = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for row in f:
                    cols = row.split()
                    if cols[3] == "0A" and cols[9] in own:      # 0A: LISTEN
                        listening.add(cols[9])
        except OSError:
            pass
    return listening


def test_a_viewer_port_in_use_names_its_switches(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        proc = subprocess.run(
            pypc_command() + ["run", "--headless", "--turbo", "--no-rpc", "--no-vnc",
                              "--telnet-port", str(port), "--timeout", "1",
                              "--floppy", str(floppy(tmp_path / "e.img", ECHO_BOOT))],
            env=pypc_env(), stdin=subprocess.DEVNULL, capture_output=True, text=True,
            timeout=240)
    assert proc.returncode == 2
    line, = proc.stderr.strip().splitlines()
    assert line.startswith(f"pypc: error: --telnet-port {port}: cannot listen")
    assert "--no-telnet" in line


# -- an agent server: the viewers follow session.start ------------------------------

def test_agent_server_viewers_show_the_session_machine(tmp_path):
    """``pypc run --headless --serve``: a telnet viewer connected before
    session.start shows the program's machine after it (a full redraw: the
    display epoch moved), not the idle machine it started with."""
    folder = tmp_path / "prog"
    folder.mkdir()
    shutil.copy(progs.path("agent_fixture"), folder / "AGENTFIX.COM")
    proc = subprocess.Popen(
        pypc_command() + ["run", "--headless", "--serve", "--plugins", "cga",
                          "--rpc-port", "0", "--telnet-port", "0", "--vnc-port", "0"],
        env=pypc_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    tn = None
    try:
        lines = read_lines_until(proc, "pypc: JSON-RPC agent server on ")
        telnet = port_of(lines, "pypc: telnet viewer on 127.0.0.1:")
        rpc = port_of(lines, "pypc: JSON-RPC agent server on 127.0.0.1:")
        tn = TelnetClient(telnet)
        screen = pyte.Screen(80, 25)
        stream = pyte.ByteStream(screen)
        assert tn.read_until(stream, lambda: any("bootable" in row for row in screen.display))
        with socket.create_connection(("127.0.0.1", rpc), timeout=CEILING_S) as s:
            f = s.makefile("rw")

            def call(method, **params):
                f.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": method,
                                    "params": params}) + "\n")
                f.flush()
                reply = json.loads(f.readline())
                assert "result" in reply, reply
                return reply["result"]
            call("session.start", target={"command": "AGENTFIX.COM", "arguments": []},
                 mounts=[{"drive": "C", "host_path": str(folder)}], break_at="entry")
            mark = "SESSION MACHINE"
            cells = b"".join(bytes((ord(ch), 0x1E)) for ch in mark)
            call("memory.write", address=0xB8000,
                 data_base64=base64.b64encode(cells).decode())
            assert tn.read_until(stream, lambda: screen.display[0].startswith(mark))
            assert not any("bootable" in row for row in screen.display)
            # the old machine's screen is gone whole: what pyte shows is the
            # program machine's text page
            page = call("video.text")["text"]
            assert [row.rstrip() for row in screen.display] == \
                [row.rstrip() for row in page]
    finally:
        if tn is not None:
            tn.close()
        stop(proc)
    assert proc.returncode == 130


def test_the_speaker_follows_a_new_machine_without_gap_or_overlap(tmp_path):
    """Speaker.follow: the WAV has the first machine's tone, then the second
    one's, and exactly as many samples as the emulated time of both runs."""
    from test_audio import measured_frequency, read_wav
    from viewers_common import beep_boot
    wav = tmp_path / "both.wav"
    a = Machine(MachineConfig(plugins=plugins_with("cga"),
                              floppy_a=floppy(tmp_path / "a.img", beep_boot(1193))))
    b = Machine(MachineConfig(plugins=plugins_with("cga"),
                              floppy_a=floppy(tmp_path / "b.img", beep_boot(2386))))
    try:
        b.run_for(CPU_HZ // 2)              # b runs before the speaker hears it
        speaker = Speaker(a, [WavSink(str(wav))])
        a.run_for(CPU_HZ)
        speaker.follow(b)
        a.run_for(CPU_HZ // 2)              # a, no longer heard
        b.run_for(CPU_HZ)
        speaker.close()
        assert speaker.render not in a.run_hooks and speaker.render not in b.run_hooks
        assert a.ppi.on_speaker_change != speaker._ppi_changed
    finally:
        a.close()
        b.close()
    samples = read_wav(wav)
    assert abs(len(samples) - 2 * RATE) <= 2
    first, second = samples[:RATE], samples[RATE:]
    assert abs(measured_frequency(first[RATE // 4:]) - 1_193_182 / 1193) <= 0.01 * 1000
    assert abs(measured_frequency(second) - 1_193_182 / 2386) <= 0.01 * 500


# -- a spawned pypc (console, MCP) leaves the default ports alone ---------------------

@pytest.mark.parametrize("run_args, added", [
    ([], ["--no-telnet", "--no-vnc"]),
    (["--vnc-port", "5910"], ["--no-telnet"]),
    (["--telnet-port=2400"], ["--no-vnc"]),
    (["--no-viewers"], []),
    (["--no-vnc", "--floppy", "x.img"], ["--no-telnet"]),
])
def test_a_spawned_pypc_serves_only_the_viewers_asked_for(run_args, added):
    assert spawn_viewer_args(run_args) == added


# -- pypc screenshot is a one-shot job: it serves nothing unless asked -------------------

@pytest.mark.parametrize("rest, servers", [
    ([], ["--no-telnet", "--no-vnc", "--no-rpc"]),
    (["--rpc-port", "2401"], ["--no-telnet", "--no-vnc"]),
    (["--vnc-port=5910"], ["--no-telnet", "--no-rpc"]),
])
def test_screenshot_serves_only_what_is_asked_for(rest, servers):
    from pypc_core.cli import _normalise_argv
    argv = _normalise_argv(["screenshot", "s.png", *rest])
    assert argv == ["run", "--headless", "--turbo", "--screenshot", "s.png", *servers,
                    *rest, "--timeout", "3"]


def test_screenshot_runs_while_the_default_ports_are_taken(tmp_path):
    """Another program (or pypc) on 2300, 2301 and 5902 does not stop a
    screenshot."""
    held = []
    try:
        for port in CONTRACT_PORTS:
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", port))
                s.listen(1)
            except OSError:         # taken already: as good for this test
                s.close()
                continue
            held.append(s)
        proc = subprocess.run(
            pypc_command() + ["screenshot", "shot.png",
                              "--floppy", str(floppy(tmp_path / "e.img", ECHO_BOOT))],
            cwd=tmp_path, env=pypc_env(), stdin=subprocess.DEVNULL, capture_output=True,
            text=True, timeout=240)
    finally:
        for s in held:
            s.close()
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "shot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert ECHO_PROMPT.strip() in proc.stdout
