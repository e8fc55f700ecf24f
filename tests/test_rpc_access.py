"""Owner-only access to the JSON-RPC server: a Unix domain socket created
0600 (--rpc-socket) that another user cannot open, and a token
(--rpc-token-file) without which every method is refused with nothing
changed -- registers, memory and the state revision compared before and
after.  The real server over real sockets, the generated client."""

import base64
import json
import os
import pwd
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading

import pytest

from rpc_client import warm_up_core
from test_launcher import pypc_command, pypc_env

from pypc_core import rpc
from pypc_core.client import AuthError, Client, Unauthenticated
from pypc_core.machine import Machine, MachineConfig
from pypc_core.rpc.server import RpcServerError, read_token_file

TOKEN = "s3cret-token-of-the-owner"


class Served:
    """A machine and its RPC server (``rpc.start`` kwargs) on a machine thread."""

    def __init__(self, **kw):
        warm_up_core()
        self.machine = Machine(MachineConfig(plugins=["cga"]))
        self.controller, self.server = rpc.start(self.machine, port=0, **kw)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.controller.serve_forever,
                                       args=(self.stop,), daemon=True)
        self.thread.start()

    def close(self):
        self.stop.set()
        self.thread.join(timeout=30)
        self.server.close()
        self.machine.close()


@pytest.fixture
def token_server():
    s = Served(token=TOKEN)
    yield s
    s.close()


def raw_calls(port, *requests, path=None):
    """Send each request (an object, or raw bytes) on one connection; the
    replies, one per request that gets one, in the order they came."""
    if path:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(60)
        sock.connect(path)
    else:
        sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    with sock:
        f = sock.makefile("rwb")
        for r in requests:
            f.write(r if isinstance(r, bytes) else json.dumps(r).encode() + b"\n")
        f.flush()
        return [json.loads(f.readline()) for _ in requests]


def observe(c):
    regs = c.call("state.get_registers")
    mem = c.call("memory.read", {"address": 0x500, "length": 64})
    return regs, mem["data_base64"]


ATTEMPTS = [
    {"jsonrpc": "2.0", "id": 1, "method": "memory.write",
     "params": {"address": 0x500, "data_base64": base64.b64encode(b"\xAA" * 16).decode()}},
    {"jsonrpc": "2.0", "id": 2, "method": "state.set_registers",
     "params": {"set": {"ax": 0x1234}}},
    {"jsonrpc": "2.0", "id": 3, "method": "execution.step"},
    {"jsonrpc": "2.0", "id": 4, "method": "input.keyboard",
     "params": {"events": [{"scan_code": "0x1E", "pressed": True}]}},
    {"jsonrpc": "2.0", "id": 5, "method": "state.get_registers"},
]


def test_missing_and_wrong_tokens_change_nothing(token_server):
    port = token_server.server.port
    with Client(port=port, token=TOKEN) as owner:
        owner.call("execution.pause")
        before = observe(owner)
        # no auth at all
        replies = raw_calls(port, *ATTEMPTS)
        # a wrong token, then the same attempts on that connection
        wrong = raw_calls(port, {"jsonrpc": "2.0", "id": 0, "method": "auth",
                                 "params": {"token": TOKEN + "x"}}, *ATTEMPTS)
        # a token of the wrong type, and an empty one
        odd = raw_calls(port, {"jsonrpc": "2.0", "id": 0, "method": "auth",
                               "params": {"token": 12}},
                        {"jsonrpc": "2.0", "id": 9, "method": "auth", "params": {}},
                        *ATTEMPTS[:1])
        after = observe(owner)
    assert before == after                      # registers (and revision), memory
    for reply, req in zip(replies, ATTEMPTS):
        assert reply["id"] == req["id"]
        assert reply["error"]["data"]["reason"] == "UNAUTHENTICATED"
        assert req["method"] in reply["error"]["message"]
    assert wrong[0]["error"]["data"]["reason"] == "UNAUTHENTICATED"
    assert "wrong token" in wrong[0]["error"]["message"]
    assert all(r["error"]["data"]["reason"] == "UNAUTHENTICATED" for r in wrong[1:])
    assert all(r["error"]["data"]["reason"] == "UNAUTHENTICATED" for r in odd)


def test_the_right_token_opens_the_connection(token_server):
    port = token_server.server.port
    replies = raw_calls(port, {"jsonrpc": "2.0", "id": "a", "method": "auth",
                               "params": {"token": TOKEN}},
                        {"jsonrpc": "2.0", "id": "b", "method": "state.get_registers"})
    assert replies[0] == {"jsonrpc": "2.0", "id": "a",
                          "result": {"authenticated": True, "required": True}}
    assert "general" in replies[1]["result"]
    with pytest.raises(AuthError):
        Client(port=port, token="not it")
    with Client(port=port) as anonymous:
        with pytest.raises(Unauthenticated):
            anonymous.state.get_registers()
    with Client(port=port, token=TOKEN) as c:
        assert "auth" in c.agent.capabilities().methods
        assert c.auth.auth(token=TOKEN).required is True


def test_auth_without_a_token_file_needs_nothing():
    s = Served()
    try:
        with Client(port=s.server.port) as c:
            assert c.auth.auth().required is False
            assert c.state.get_registers().general.ax >= 0
    finally:
        s.close()


def test_token_file_rules(tmp_path):
    good = tmp_path / "tok"
    good.write_text(TOKEN + "\nsecond line ignored\n")
    good.chmod(0o600)
    assert read_token_file(str(good)) == TOKEN
    loose = tmp_path / "loose"
    loose.write_text(TOKEN)
    loose.chmod(0o644)
    empty = tmp_path / "empty"
    empty.write_text("\n")
    empty.chmod(0o600)
    for path, words in ((loose, "chmod 600"), (empty, "first line is empty"),
                        (tmp_path / "missing", "cannot open"), (tmp_path, "not a regular")):
        with pytest.raises(RpcServerError, match=words):
            read_token_file(str(path))


def one_line_error(proc, *words):
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    line, = proc.stderr.strip().splitlines()
    assert line.startswith("pypc: error:"), line
    for w in words:
        assert w in line, line


@pytest.mark.parametrize("extra, words", [
    (["--rpc-token-file", "{tok}"], ["--rpc-token-file", "serves no JSON-RPC"]),
    (["--rpc-port", "0", "--rpc-token-file", "{loose}"], ["chmod 600"]),
    (["--rpc-socket", "{dir}/s", "--rpc-port", "0"], ["--rpc-socket and --rpc-port"]),
    (["--rpc-socket", "{dir}/nodir/s"], ["no such directory"]),
    (["--rpc-socket", "{dir}/s", "--no-rpc"], ["--no-rpc"]),
    (["--rpc-socket", "{file}"], ["not a socket"]),
])
def test_bad_access_options(tmp_path, extra, words):
    tok = tmp_path / "tok"
    tok.write_text(TOKEN)
    tok.chmod(0o600)
    loose = tmp_path / "loose"
    loose.write_text(TOKEN)
    loose.chmod(0o644)
    file = tmp_path / "file"
    file.write_text("x")
    extra = [a.format(tok=tok, loose=loose, dir=tmp_path, file=file) for a in extra]
    proc = subprocess.run(pypc_command() + ["run", "--headless", "--turbo", "--timeout", "1",
                                            *extra],
                          env=pypc_env(), capture_output=True, text=True, timeout=240,
                          stdin=subprocess.DEVNULL, cwd=tmp_path)
    one_line_error(proc, *words)
    assert file.read_text() == "x"


# -- the Unix socket ------------------------------------------------------------------

@pytest.fixture
def open_folder():
    """A folder every user can enter (so only the socket's own mode keeps a
    second user out), removed afterwards."""
    folder = tempfile.mkdtemp(prefix="pypc-sock-", dir="/tmp")
    os.chmod(folder, 0o711)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def second_user():
    """A user that is not us: created with useradd when we are root (and
    removed again at the end of the module if this module created it)."""
    if os.geteuid() != 0:
        pytest.skip("creating a second user needs root")
    if shutil.which("useradd") is None:
        pytest.skip("no useradd on this host")
    name = "pypctest"
    created = False
    try:
        pwd.getpwnam(name)
    except KeyError:
        proc = subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin",
                               name], capture_output=True, text=True)
        if proc.returncode != 0:
            pytest.skip(f"useradd failed: {proc.stderr.strip()}")
        created = True
    yield pwd.getpwnam(name)
    if created and shutil.which("userdel"):
        subprocess.run(["userdel", name], capture_output=True)


def other_users_python():
    """A Python the second user may run (ours may sit in root's home)."""
    for candidate in (sys.executable, "/usr/bin/python3", "/usr/local/bin/python3"):
        if os.path.exists(candidate) and _world_executable(candidate):
            return candidate
    pytest.skip("no Python a second user can run")


def _world_executable(path):
    path = os.path.realpath(path)
    if not os.stat(path).st_mode & stat.S_IXOTH:
        return False
    folder = os.path.dirname(path)
    while folder != "/":
        if not os.stat(folder).st_mode & stat.S_IXOTH:
            return False
        folder = os.path.dirname(folder)
    return True


def test_unix_socket_is_the_owners_only(open_folder):
    path = os.path.join(open_folder, "pypc.sock")
    s = Served(socket_path=path)
    try:
        st = os.lstat(path)
        assert stat.S_ISSOCK(st.st_mode)
        assert stat.S_IMODE(st.st_mode) == 0o600
        assert st.st_uid == os.geteuid()
        assert s.server.endpoint == f"unix:{path}"
        with Client(socket_path=path) as c:
            assert c.agent.capabilities().endpoint == f"unix:{path}"
            assert c.state.get_registers().segments.cs >= 0
        # a second pypc on the same path is refused while the first listens
        with pytest.raises(RpcServerError, match="another server"):
            rpc.RpcServer(s.controller, {}, socket_path=path).start()
    finally:
        s.close()
    assert not os.path.lexists(path)            # the server removes its socket


def test_a_second_user_cannot_open_the_socket(open_folder, second_user):
    """In a folder every user may enter, the socket's 0600 alone keeps
    another user out."""
    path = os.path.join(open_folder, "pypc.sock")
    s = Served(socket_path=path)
    try:
        user = second_user
        code = ("import socket, sys\n"
                "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
                "try:\n"
                "    s.connect(sys.argv[1])\n"
                "except PermissionError:\n"
                "    print('refused')\n"
                "else:\n"
                "    s.sendall(b'{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"state.get_registers\"}\\n')\n"
                "    print('connected', s.recv(200))\n")
        python = other_users_python()
        proc = subprocess.run([python, "-c", code, path], user=user.pw_uid,
                              group=user.pw_gid, extra_groups=[], capture_output=True,
                              text=True, timeout=60, cwd="/")
        assert proc.stdout.strip() == "refused", (proc.stdout, proc.stderr)
    finally:
        s.close()


def test_a_stale_socket_file_is_replaced(open_folder):
    path = os.path.join(open_folder, "stale.sock")
    old = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old.bind(path)
    old.close()                                 # the file stays, nobody listens
    s = Served(socket_path=path)
    try:
        assert stat.S_IMODE(os.lstat(path).st_mode) == 0o600
        with Client(socket_path=path) as c:
            c.state.get_registers()
    finally:
        s.close()


def test_pypc_run_serves_the_socket_and_the_token(open_folder, tmp_path):
    """The command line: a job with --rpc-socket and --rpc-token-file
    serves there, and only an authenticated client gets in."""
    path = os.path.join(open_folder, "run.sock")
    tok = tmp_path / "tok"
    tok.write_text(TOKEN + "\n")
    tok.chmod(0o600)
    proc = subprocess.Popen(pypc_command() + ["run", "--headless", "--turbo", "--timeout",
                                              "31536000", "--rpc-socket", path,
                                              "--rpc-token-file", str(tok)],
                            env=pypc_env(), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        import time
        deadline = time.monotonic() + 300
        while not os.path.exists(path):
            assert proc.poll() is None, proc.communicate()[1]
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert stat.S_IMODE(os.lstat(path).st_mode) == 0o600
        reply, = raw_calls(None, ATTEMPTS[4], path=path)
        assert reply["error"]["data"]["reason"] == "UNAUTHENTICATED"
        with Client(socket_path=path, token=read_token_file(str(tok))) as c:
            assert c.state.get_registers().segments.cs >= 0
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    assert not os.path.lexists(path)


# -- the front ends: MCP adapter and console ---------------------------------------------

def test_mcp_over_the_socket_with_the_token(open_folder, tmp_path):
    import asyncio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    path = os.path.join(open_folder, "mcp.sock")
    tok = tmp_path / "tok"
    tok.write_text(TOKEN + "\n")
    tok.chmod(0o600)
    s = Served(socket_path=path, token=TOKEN)
    try:
        params = StdioServerParameters(command=sys.executable,
                                       args=["-m", "pypc_core.cli", "mcp", "--socket", path,
                                             "--token-file", str(tok)],
                                       env=pypc_env())

        async def main():
            async with stdio_client(params) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    res = await session.call_tool("state_get_registers", {})
                    assert not res.is_error, res.content
                    return res.structured_content
        regs = asyncio.run(main())
        assert "general" in regs
    finally:
        s.close()


def test_console_attaches_over_the_socket_with_the_token(open_folder, monkeypatch):
    """pypc console --socket PATH --token-file FILE: the session it opens
    (its TUI replaced by a probe) reads the registers over the socket."""
    from pypc_core.console import app
    path = os.path.join(open_folder, "console.sock")
    s = Served(socket_path=path, token=TOKEN)
    seen = {}

    class Probe:
        def __init__(self, session):
            seen["regs"] = session.client.state.get_registers()

        def run(self):
            pass
    monkeypatch.setattr(app, "ConsoleApp", Probe)
    try:
        assert app.run(socket_path=path, token=TOKEN) == 0
        assert seen["regs"].segments.cs >= 0
        from pypc_core.errors import PypcError
        with pytest.raises(PypcError, match="refused the token"):
            app.run(socket_path=path, token="wrong")
    finally:
        s.close()


@pytest.mark.parametrize("command, flag", [("mcp", "--connect"), ("console", "--port")])
@pytest.mark.parametrize("extra, words", [
    (["{flag}", "1", "--socket", "/tmp/x.sock"], ["and --socket"]),
    (["--token-file", "{tok}"], ["--token-file goes with attaching"]),
    (["--socket", "/tmp/x.sock", "--token-file", "{missing}"], ["--token-file", "No such file"]),
    (["--socket", "/tmp/x.sock", "--", "--turbo"], ["not with --socket"]),
])
def test_bad_attach_options(tmp_path, command, flag, extra, words):
    tok = tmp_path / "tok"
    tok.write_text(TOKEN)
    extra = [a.format(flag=flag, tok=tok, missing=tmp_path / "missing") for a in extra]
    proc = subprocess.run(pypc_command() + [command, *extra], env=pypc_env(),
                          capture_output=True, text=True, timeout=240,
                          stdin=subprocess.DEVNULL)
    one_line_error(proc, *words)


def test_a_spawned_pypc_serves_a_private_socket():
    """What pypc console / pypc mcp start for themselves: a socket in a
    0700 folder, mode 0600, no TCP listener; the folder goes with it."""
    from test_viewer_defaults import listening_inodes
    from pypc_core.spawn import SpawnedPypc
    spawned = SpawnedPypc(["--turbo"])
    try:
        assert spawned.port is None
        folder = os.path.dirname(spawned.socket_path)
        assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
        assert stat.S_IMODE(os.lstat(spawned.socket_path).st_mode) == 0o600
        assert listening_inodes(spawned.process.pid) == set()      # (TCP tables)
        with Client(socket_path=spawned.socket_path) as c:
            assert c.agent.capabilities().endpoint == f"unix:{spawned.socket_path}"
    finally:
        spawned.close()
    assert not os.path.exists(folder)
    tcp = SpawnedPypc(["--turbo", "--rpc-port", "0"])       # asked for TCP: TCP
    try:
        assert tcp.socket_path is None and tcp.port > 0
    finally:
        tcp.close()


def test_a_second_user_without_the_token_is_refused(token_server, second_user):
    """Over TCP, which every local user reaches: another user's request
    without the token is refused and changes nothing."""
    user = second_user
    python = other_users_python()
    port = token_server.server.port
    with Client(port=port, token=TOKEN) as owner:
        owner.call("execution.pause")
        before = observe(owner)
        code = ("import json, socket, sys\n"
                "s = socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=60)\n"
                "f = s.makefile('rwb')\n"
                "f.write(sys.argv[2].encode() + b'\\n'); f.flush()\n"
                "print(json.loads(f.readline())['error']['data']['reason'])\n")
        proc = subprocess.run([python, "-c", code, str(port), json.dumps(ATTEMPTS[0])],
                              user=user.pw_uid, group=user.pw_gid, extra_groups=[],
                              capture_output=True, text=True, timeout=60, cwd="/")
        after = observe(owner)
    assert proc.stdout.strip() == "UNAUTHENTICATED", proc.stderr
    assert before == after
