"""Listeners only where they serve someone: a job (``--headless`` without
``--serve``, ``pypc run PROGRAM``, ``--bare``, ``pypc screenshot``) opens no
listening socket unless a port option names one, so jobs run side by side and
beside a pypc that holds the contract's ports; a server role (the live view,
``--serve``) keeps the contract's defaults.

Wall times here are ceilings that keep a broken run from hanging the suite.
"""

import argparse
import socket
import subprocess
import time

import pytest

from test_launcher import pypc_command, pypc_env
from test_viewer_defaults import CONTRACT_PORTS, listening_inodes

from pypc_core.cli import viewers as frontends
from pypc_core.argtypes import server_role

# mov ah,9 / mov dx,msg / int 21h / mov ax,4C00h / int 21h / msg db 'job ran$'
HELLO_COM = bytes.fromhex("b409ba0c01cd21b8004ccd21") + b"job ran$"


def args(**kw):
    fields = dict(headless=False, serve=False, program=None, bare=False, no_rpc=False,
                  rpc_port=None, telnet_port=None, vnc_port=None, no_telnet=False,
                  no_vnc=False, no_viewers=False)
    fields.update(kw)
    return argparse.Namespace(**fields)


@pytest.mark.parametrize("given, role, viewers, rpc", [
    ({}, True, (2300, 5902), 2301),                                 # the live view
    ({"headless": True, "serve": True}, True, (2300, 5902), 2301),  # the agent server
    ({"headless": True}, False, (None, None), None),                # a headless job
    ({"program": "TOOL.COM"}, False, (None, None), None),           # pypc run PROGRAM
    ({"headless": True, "bare": True}, False, (None, None), None),
    ({"headless": True, "rpc_port": 0}, False, (None, None), 0),    # a port named: that one
    ({"headless": True, "vnc_port": 5910}, False, (None, 5910), None),
    ({"no_rpc": True, "no_telnet": True}, True, (None, 5902), None),
    ({"headless": True, "serve": True, "rpc_port": 2401, "no_viewers": True}, True,
     (None, None), 2401),
])
def test_which_runs_listen(given, role, viewers, rpc):
    a = args(**given)
    assert server_role(a) is role
    assert frontends.viewer_ports(a) == viewers
    assert frontends.rpc_port(a) == rpc


def hold_contract_ports():
    """Listen on 2300, 2301 and 5902 (one already taken by another program
    is as good)."""
    held = []
    for port in CONTRACT_PORTS:
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
            s.listen(1)
        except OSError:
            s.close()
            continue
        held.append(s)
    return held


def test_jobs_run_side_by_side_beside_the_contract_ports(tmp_path):
    """With 2300, 2301 and 5902 taken, the README's first command and two
    ``pypc run PROGRAM`` at once all exit 0, and none of them ever has a
    listening socket in /proc/net/tcp."""
    jobs = []
    folders = []
    for name in ("a", "b"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "HELLO.COM").write_bytes(HELLO_COM)
        folders.append(folder)
    held = hold_contract_ports()
    seen = {}
    try:
        commands = [["run", "--headless", "--turbo", "--timeout", "5"]] + \
            [["run", "--headless", "--turbo", str(f / "HELLO.COM")] for f in folders]
        for cmd in commands:
            jobs.append(subprocess.Popen(pypc_command() + cmd, cwd=tmp_path, env=pypc_env(),
                                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True))
        deadline = time.monotonic() + 300
        while any(j.poll() is None for j in jobs) and time.monotonic() < deadline:
            for j in jobs:
                found = listening_inodes(j.pid)
                if found:
                    seen.setdefault(j.pid, set()).update(found)
            time.sleep(0.02)
        outputs = [j.communicate(timeout=60) for j in jobs]
    finally:
        for j in jobs:
            if j.poll() is None:
                j.kill()
                j.wait()
        for s in held:
            s.close()
    for j, (out, err) in zip(jobs, outputs):
        assert j.returncode == 0, (j.args, err)
    assert "job ran" in outputs[1][0] and "job ran" in outputs[2][0]
    assert seen == {}


def test_a_job_serves_the_port_it_names(tmp_path):
    """A headless job with --rpc-port 0 serves JSON-RPC there (and nothing
    else: no viewer without its port)."""
    proc = subprocess.Popen(
        pypc_command() + ["run", "--headless", "--turbo", "--timeout", "600",
                          "--rpc-port", "0"],
        cwd=tmp_path, env=pypc_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        line = ""
        while not line.startswith("pypc: JSON-RPC on "):
            line = proc.stderr.readline()
            assert line, proc.communicate()
        port = int(line.rsplit(":", 1)[1])
        inodes = listening_inodes(proc.pid)
        assert inodes is not None and len(inodes) == 1
        with socket.create_connection(("127.0.0.1", port), timeout=60):
            pass
    finally:
        proc.kill()
        proc.wait()
