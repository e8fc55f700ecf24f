"""A failing plugin is named, and can be left out by name.

The broken plugins are the package ``tests/thirdparty/pypc_broken`` (each
module fails in one place); a test installs the entry points it needs as a
``*.dist-info`` in a temporary folder, that folder and ``tests/thirdparty``
on the path, as an installer would leave them.  Every failure must be one
line ``pypc: error: ...`` naming the plugin (and the hook, the method or the
guest's CS:IP), exit status 2, and with ``PYPC_DEBUG=1`` the traceback."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
THIRDPARTY = HERE / "thirdparty"
sys.path.insert(0, str(THIRDPARTY))
from pypc_broken import ENTRY_POINTS  # noqa: E402

OUT_E0 = bytes.fromhex("B055E6E0F4")        # mov al,55h / out 0E0h,al / hlt
IN_E1 = bytes.fromhex("BAE100ECF4")         # mov dx,0E1h / in al,dx / hlt
TIMEOUT_S = 300


def install(root, *names):
    """The entry points ``names`` of pypc_broken, as a distribution in ``root``."""
    groups = {}
    for name in names:
        group, module = ENTRY_POINTS[name]
        groups.setdefault(group, []).append(f"{name} = {module}")
    info = root / "pypc_broken-1.0.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pypc_broken\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("".join(
        f"[{g}]\n" + "\n".join(lines) + "\n" for g, lines in groups.items()))
    return root


def env_for(root, debug=False):
    env = dict(os.environ)
    env.pop("PYPC_DEBUG", None)
    env.pop("PYPC_VALIDATE_RESULTS", None)
    env["PYTHONPATH"] = os.pathsep.join([str(root), str(THIRDPARTY), str(ROOT)] + [
        p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    if debug:
        env["PYPC_DEBUG"] = "1"
    return env


def pypc(root, *args, debug=False, cwd=None):
    return subprocess.run([sys.executable, "-m", "pypc_core.cli", *args], cwd=cwd or root,
                          env=env_for(root, debug), capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=TIMEOUT_S)


def error_lines(proc):
    """stderr without the lines a run may print before failing (its RPC
    port, the one-time compile notice)."""
    return [line for line in proc.stderr.splitlines()
            if not line.startswith(("pypc: JSON-RPC on", "pypc: note:"))
            and "compiling the 8088 core" not in line]


RUN = ["run", "--headless", "--turbo", "--no-viewers", "--timeout", "0.01"]


def boot_floppy(path, code):
    """A 360 KiB floppy whose boot sector runs ``code``."""
    sector = bytearray(512)
    sector[:len(code)] = code
    sector[510:512] = b"\x55\xAA"
    path.write_bytes(bytes(sector) + bytes(360 * 1024 - 512))
    return path


CASES = {
    # name: (entry points, extra args, what the line must say)
    "declare": (["broken_declare"], ["--no-rpc", "--plugins", "+broken_declare"],
                "plugin 'broken_declare' failed in hook pypc_device_declare: "
                "KeyError: 'declare-boom'"),
    "create": (["broken_create"], ["--no-rpc", "--plugins", "+broken_create"],
               "plugin 'broken_create' failed in hook pypc_device_create: "
               "ValueError: create-boom"),
    "options": (["broken_options"], ["--no-rpc", "--plugins", "+broken_options"],
                "plugin 'broken_options' failed in hook pypc_cli_add_options: "
                "TypeError: options-boom"),
    "ready": (["broken_ready"], ["--no-rpc", "--plugins", "+broken_ready"],
              "plugin 'broken_ready' failed in hook pypc_machine_ready: "
              "RuntimeError: ready-boom"),
    "attach": (["broken_attach"], ["--no-rpc", "--plugins", "+broken_attach"],
               "plugin 'broken_attach' failed in Device.attach (AttachFails): "
               "FileNotFoundError: [Errno 2] No such file or directory: "
               "'/nonexistent-pypc-broken/device.cfg'"),
    "rpc_hook": (["broken_rpc_hook"], ["--rpc-port", "0"],
                 "plugin 'broken_rpc_hook' failed in hook pypc_rpc_methods: "
                 "AttributeError: rpc-hook-boom (turn the group off with "
                 "--rpc-methods -broken_rpc_hook)"),
    "rpc_import": (["broken_rpc_import"], ["--rpc-port", "0"],
                   "RPC method group plugin 'broken_rpc_import' (pypc_broken.rpc_import, from "
                   "pypc_broken 1.0) failed to load: ImportError: rpc-import-boom (turn the "
                   "group off with --rpc-methods -broken_rpc_import)"),
    "rpc_schema": (["broken_rpc_schema"], ["--rpc-port", "0"],
                   "RPC method 'broken.typo' of plugin 'broken_rpc_schema': rpc_schema: its "
                   "params schema is not a valid JSON Schema at properties/x/type: 'integr' "
                   "is not valid under any of the given schemas (turn the group off with "
                   "--rpc-methods -broken_rpc_schema)"),
    "rpc_ref": (["broken_rpc_ref"], ["--rpc-port", "0"],
                "RPC method 'broken.ref' of plugin 'broken_rpc_ref': unknown schema "
                "definition 'defs.json#/$defs/nosuch' (turn the group off with "
                "--rpc-methods -broken_rpc_ref)"),
    "port_out": (["broken_port"], ["--bare", "--no-rpc", "--plugins", "broken_port",
                                   "--load", "{prog}@0000:7C00", "--entry", "0000:7C00"],
                 "plugin 'broken_port' (card portcard) failed in its port handler on the "
                 "guest's OUT 00E0h (55h) at 0000:7C02: RuntimeError: out-boom 55"),
    "port_in": (["broken_port"], ["--bare", "--no-rpc", "--plugins", "broken_port",
                                  "--load", "{prog_in}@0000:7C00", "--entry", "0000:7C00"],
                "plugin 'broken_port' (card portcard) failed in its port handler on the "
                "guest's IN 00E1h at 0000:7C03: LookupError: in-boom"),
    # the whole launcher (BIOS, boot sector, JSON-RPC serving the run)
    "port_boot": (["broken_port"], ["--rpc-port", "0", "--plugins", "+broken_port",
                                    "--floppy", "{floppy}", "--timeout", "5"],
                  "plugin 'broken_port' (card portcard) failed in its port handler on the "
                  "guest's OUT 00E0h (55h) at 0000:7C02: RuntimeError: out-boom 55"),
}


def case_args(tmp_path, args):
    (tmp_path / "out.bin").write_bytes(OUT_E0)
    (tmp_path / "in.bin").write_bytes(IN_E1)
    floppy = tmp_path / "boot.img"
    if not floppy.exists():
        boot_floppy(floppy, OUT_E0)
    return [a.format(prog=tmp_path / "out.bin", prog_in=tmp_path / "in.bin",
                     floppy=floppy) for a in args]


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_failing_plugin_is_one_line_naming_it(tmp_path, case):
    names, args, words = CASES[case]
    install(tmp_path, *names)
    argv = RUN + case_args(tmp_path, args)
    proc = pypc(tmp_path, *argv)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert error_lines(proc) == [f"pypc: error: {words}"], proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("case", ["create", "attach", "rpc_hook", "rpc_ref", "port_out"])
def test_pypc_debug_prints_the_plugin_traceback(tmp_path, case):
    names, args, words = CASES[case]
    install(tmp_path, *names)
    proc = pypc(tmp_path, *RUN, *case_args(tmp_path, args), debug=True)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[-1] == f"pypc: error: {words}"
    assert "Traceback (most recent call last):" in proc.stderr
    module = {"create": "create.py", "attach": "attach.py", "rpc_hook": "rpc_hook.py",
              "rpc_ref": "schemas.py", "port_out": "port.py"}[case]
    frames = proc.stderr.count(f"{module}\", line")   # the plugin's own frame
    assert frames == 1 or (case == "rpc_ref" and frames >= 1), proc.stderr


def test_broken_groups_turned_off_by_name_let_the_rest_run(tmp_path):
    install(tmp_path, "broken_rpc_hook", "broken_rpc_schema", "broken_rpc_ref",
            "broken_rpc_import")
    proc = pypc(tmp_path, *RUN, "--rpc-port", "0", "--rpc-methods",
                "-broken_rpc_hook,-broken_rpc_schema,-broken_rpc_ref,-broken_rpc_import")
    assert proc.returncode == 0, proc.stderr
    assert error_lines(proc) == [], proc.stderr
    # a run that serves no JSON-RPC is not stopped by them at all
    proc = pypc(tmp_path, *RUN, "--no-rpc")
    assert proc.returncode == 0, proc.stderr
    (tmp_path / "out.bin").write_bytes(bytes.fromhex("FAF4"))
    proc = pypc(tmp_path, "run", "--headless", "--no-rpc", "--no-viewers", "--bare",
                "--load", f"{tmp_path / 'out.bin'}@0:7C00", "--entry", "0:7C00",
                "--until-halt")
    assert proc.returncode == 0, proc.stderr


def test_nonsense_selections_are_one_line(tmp_path):
    install(tmp_path, "broken_rpc_hook")
    cases = [
        (["--plugins", "cga,+fdc"], "give either the plugins (e.g. cga,fdc) or changes"),
        (["--plugins", "+cga"], "'cga' is already a default (cga,fdc,uart)"),
        (["--plugins", "-uart2"], "cannot remove 'uart2': it is not a default"),
        (["--plugins", "-uartt"], "unknown device plugin 'uartt' (did you mean 'uart'?)"),
        (["--plugins", "+"], "'+' names no plugin"),
        (["--plugins", "+gameport,-gameport"], "'gameport' is named twice"),
        (["--rpc-methods", "-videohistory"], "(did you mean 'video_history'?)"),
        (["--rpc-methods", "+video"], "'video' is already a default"),
    ]
    for args, words in cases:
        proc = pypc(tmp_path, *RUN, "--no-rpc", *args)
        assert proc.returncode == 2, (args, proc.stderr)
        lines = error_lines(proc)
        assert len(lines) == 1 and lines[0].startswith("pypc: error: ") \
            and words in lines[0], (args, proc.stderr)


def test_bare_refuses_the_json_rpc_options(tmp_path):
    (tmp_path / "p.bin").write_bytes(bytes.fromhex("FAF4"))
    load = ["--load", f"{tmp_path / 'p.bin'}@0:7C00", "--entry", "0:7C00"]
    for args, words in ((["--rpc-port", "2301"], "--rpc-port cannot be used with it"),
                        (["--rpc-port=0"], "--rpc-port cannot be used with it"),
                        (["--serve"], "--serve cannot be used with it"),
                        (["--rpc-socket", str(tmp_path / "s")],
                         "--rpc-socket cannot be used with it"),
                        (["--rpc-token-file", str(tmp_path / "p.bin")],
                         "--rpc-token-file cannot be used with it")):
        proc = pypc(tmp_path, "run", "--headless", "--no-viewers", "--bare", *load, *args)
        assert proc.returncode == 2, proc.stderr
        assert error_lines(proc) == [
            f"pypc: error: --bare serves no JSON-RPC: {words}"], proc.stderr


# -- pypc plugins ----------------------------------------------------------------------

def test_plugins_table_shows_errors_and_fits_80_columns(tmp_path):
    install(tmp_path, "broken_attach", "broken_create", "broken_declare", "broken_rpc_hook")

    def listing(columns):
        return subprocess.run([sys.executable, "-m", "pypc_core.cli", "plugins"],
                              cwd=tmp_path, env=dict(env_for(tmp_path), COLUMNS=str(columns)),
                              capture_output=True, text=True, timeout=TIMEOUT_S)
    narrow = listing(80)
    assert narrow.returncode == 1                    # a plugin failed to load
    assert max(len(line.rstrip()) for line in narrow.stdout.splitlines()) <= 80, narrow.stdout
    assert "attach failed:" in narrow.stdout
    proc = listing(250)                              # every cell on one line
    flat = " ".join(proc.stdout.split())
    assert "attach failed: FileNotFoundError" in flat
    assert "attach failed: pypc_device_create: ValueError: create-boom" in flat
    assert "error: plugin 'broken_declare' failed in hook pypc_device_declare" in flat
    assert "error: plugin 'broken_rpc_hook' failed in hook pypc_rpc_methods" in flat
    assert "cga: ports 3D0h-3DFh" in flat and "memory.read, memory.write" in flat
    assert "pypc.devices:broken_declare: plugin 'broken_declare' failed" in proc.stderr


def test_plugins_name_shows_a_cards_state(tmp_path):
    env = dict(env_for(tmp_path), COLUMNS="80")
    run = [sys.executable, "-m", "pypc_core.cli", "plugins"]
    proc = subprocess.run(run + ["uart"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=TIMEOUT_S)
    assert proc.returncode == 0, proc.stderr
    assert "state of uart after reset():" in proc.stdout and '"words"' in proc.stdout
    proc = subprocess.run(run + ["uart", "--json"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    info, = json.loads(proc.stdout)
    from pypc_plugins.uart import com1
    from pypc_core.board import Backplane
    card = com1.pypc_device_create(options=None)
    card.attach(Backplane().board(card.declaration))
    card.reset()
    assert info["states"] == {"uart": json.loads(json.dumps(card.get_state()))}
    proc = subprocess.run(run + ["uartt"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=TIMEOUT_S)
    assert proc.returncode == 2 and "no plugin 'uartt' (did you mean 'uart'?)" in proc.stderr


# -- in-process: the machine, the RPC server -------------------------------------------

@pytest.fixture
def broken(tmp_path, monkeypatch):
    """install(*names) on sys.path for this test."""
    def do(*names):
        install(tmp_path, *names)
        monkeypatch.syspath_prepend(str(tmp_path))
    yield do
    for name in [m for m in sys.modules if m.startswith("pypc_broken.")]:
        del sys.modules[name]


def test_a_port_fault_is_a_stop_with_a_diagnostics_record(broken):
    from pypc_core.machine import Machine, MachineConfig
    broken("broken_port")
    with Machine(MachineConfig(plugins=["broken_port"], bare=True, loads=[(OUT_E0, 0x7C00)],
                               entry=(0, 0x7C00))) as m:
        stop = m.run_for(10_000)
        assert stop.kind == "fault"
        assert stop.detail == {
            "message": "plugin 'broken_port' (card portcard) failed in its port handler on "
                       "the guest's OUT 00E0h (55h) at 0000:7C02: RuntimeError: out-boom 55",
            "device": "portcard", "plugin": "broken_port", "port": 0xE0,
            "direction": "out", "width": 1, "cs": 0, "ip": 0x7C02}
        assert (stop.cs, stop.ip) == (0, 0x7C04)       # the OUT has executed
        record = m.diagnostics.records()[-1]
        assert record["level"] == "error" and record["message"] == \
            "fault stop: " + stop.detail["message"]
        assert isinstance(m.device_fault.__cause__, RuntimeError)
        assert m.run_for(10_000).kind == "halt"          # the machine goes on
        assert m.device("portcard") is not None and m.device("nosuch") is None


def test_an_rpc_handler_failure_names_its_group_and_keeps_the_traceback(
        broken, monkeypatch, capfd):
    from rpc_client import RpcFixture
    broken("broken_rpc_handler")
    monkeypatch.setenv("PYPC_DEBUG", "1")
    fx = RpcFixture()
    try:
        c = fx.client()
        err = c.error("broken.divide", {"by": 0})
        assert err["code"] == -32603 and err["data"] == {"reason": "INTERNAL_ERROR"}
        assert err["message"].startswith(
            "broken.divide failed (RPC method group 'broken_rpc_handler'): "
            "ZeroDivisionError: integer division or modulo by zero (diagnostics record ")
        assert c.call("broken.divide", {"by": 1}) == {"value": 1}      # still served
        records = c.call("debug.output.read", {"sources": ["rpc"]})["records"]
        assert [r["level"] for r in records] == ["error", "debug"]
        assert records[0]["message"] == ("broken.divide failed (RPC method group "
                                         "'broken_rpc_handler'): ZeroDivisionError: "
                                         "integer division or modulo by zero")
        assert f"diagnostics record {records[0]['sequence']}," in err["message"]
        assert records[1]["message"].startswith(
            "broken.divide traceback: ZeroDivisionError: integer division or modulo by "
            "zero at rpc_handler.py:5 in divide")
    finally:
        fx.close()
    err_text = capfd.readouterr().err
    assert "Traceback (most recent call last):" in err_text and "rpc_handler.py" in err_text


@pytest.mark.parametrize("switch", [None, "PYPC_VALIDATE_RESULTS", "PYPC_DEBUG"])
def test_results_are_validated_under_the_switch(broken, monkeypatch, switch):
    from rpc_client import RpcFixture
    broken("broken_rpc_result")
    monkeypatch.delenv("PYPC_VALIDATE_RESULTS", raising=False)
    monkeypatch.delenv("PYPC_DEBUG", raising=False)
    if switch:
        monkeypatch.setenv(switch, "1")
    fx = RpcFixture()
    try:
        c = fx.client()
        c.schemas = None                 # this client takes what it gets
        reply = c.request("broken.result", {})
        if switch is None:
            assert reply["result"] == {"value": "not-an-int"}
            return
        err = reply["error"]
        assert err["code"] == -32603
        assert err["message"].startswith(
            "broken.result failed (RPC method group 'broken_rpc_result'): its result does "
            "not match its schema: value: 'not-an-int' is not of type 'integer'")
        assert c.call("memory.read", {"address": 0x400, "length": 4})["data_hex"]
    finally:
        fx.close()


def test_a_disabled_group_is_not_served(broken):
    from pypc_core.plugins import PluginManager
    from rpc_client import RpcFixture
    broken("broken_rpc_hook", "broken_rpc_handler")
    pm = PluginManager()
    pm.select("cga")
    assert "broken_rpc_hook" not in pm.disable_rpc_methods("-broken_rpc_hook,-video_history")
    fx = RpcFixture(plugin_manager=pm)
    try:
        methods = fx.client().call("agent.capabilities")["methods"]
        assert "broken.divide" in methods and "memory.read" in methods
        assert not any(m.startswith("video.history") for m in methods)
    finally:
        fx.close()


def test_an_rpc_client_sees_the_port_fault_as_a_stop(broken):
    """Under the RPC controller (as with --serve) the fault is a stop the
    client reads; the machine and the server go on."""
    from rpc_client import RpcFixture
    broken("broken_port")
    spin = bytes.fromhex("EBFE")            # jmp $ (until the client moves IP)
    fx = RpcFixture(plugins=["broken_port"], bare=True,
                    loads=[(spin, 0x7C00), (OUT_E0, 0x7C10)], entry=(0, 0x7C00))
    try:
        c = fx.client()
        paused = c.call("execution.pause")
        assert paused["ip"] == 0x7C00, paused
        c.call("state.set_registers", {"expected_state_revision": paused["state_revision"],
                                       "expected": {"ip": paused["ip"]},
                                       "set": {"ip": 0x7C10}})
        op = c.call("execution.continue")["operation_id"]
        done = c.call("execution.wait", {"operation_id": op, "timeout_ms": 10000})
        assert done["state"] == "stopped", done
        stop = done["stop_reason"]
        assert stop["kind"] == "fault"
        assert stop["message"].startswith("plugin 'broken_port' (card portcard) failed in "
                                          "its port handler on the guest's OUT 00E0h (55h) "
                                          "at 0000:7C12")
        records = c.call("debug.output.read", {"min_level": "error"})["records"]
        assert records[-1]["message"] == "fault stop: " + stop["message"]
        assert c.call("state.get_registers")["ip"] == 0x7C14
    finally:
        fx.close()


# -- selections, in-process --------------------------------------------------------------

def test_resolve_names_at_its_edges():
    from pypc_core.plugins import PluginError, UnknownPluginError, resolve_names
    d = ("cga", "fdc", "uart")
    assert resolve_names(None, d) == [] and resolve_names("", d) == []
    assert resolve_names("vga,fdc", d) == ["vga", "fdc"]
    assert resolve_names("+postcard", d) == ["cga", "fdc", "uart", "postcard"]
    assert resolve_names(" -uart , +gameport ", d) == ["cga", "fdc", "gameport"]
    assert resolve_names(["-cga", "-fdc", "-uart"], d) == []
    assert resolve_names("+a", ()) == ["a"]
    for spec, words in (("cga,-uart", "not both"), ("-", "names no plugin"),
                        ("+cga", "already a default"), ("-vga", "cannot remove 'vga'"),
                        ("+x,+x", "named twice"), ("-uart,+uart", "named twice")):
        with pytest.raises(PluginError, match=words):
            resolve_names(spec, d)
    with pytest.raises(UnknownPluginError, match="did you mean 'uart'"):
        resolve_names("-uat", d, available=["cga", "fdc", "uart"])


def test_machine_config_takes_the_signed_form_and_names_the_plugin():
    from pypc_core.machine import Machine, MachineConfig
    from pypc_core.plugins import PluginError
    with Machine(MachineConfig(plugins="-fdc,+gameport")) as m:
        assert [n for n in ("cga", "fdc", "uart", "gameport") if m.device(n)] == \
            ["cga", "uart", "gameport"]
        assert [n for n, _ in m.devices_with("serial")] == ["uart"]
    with pytest.raises(PluginError, match="cannot remove 'uart'"):
        Machine(MachineConfig(plugins="-uart", bare=True))


def test_a_method_table_that_is_no_dict_names_the_plugin():
    import types
    from pypc_core.plugins import PluginError, PluginManager
    pm = PluginManager()
    group = types.ModuleType("group_x")
    group.pypc_rpc_methods = lambda: ["x.ping"]
    pm.pm.register(group, "pypc.rpc_methods:listy")
    with pytest.raises(PluginError, match="plugin 'listy': pypc_rpc_methods returned list"):
        pm.rpc_methods()
