"""The plugin system: entry-point discovery, selection, hooks, the CLI.

The third-party plugin used here is the example of ``docs/plugins.md``,
extracted from that page, so the documentation cannot drift from what works.
"""

import argparse
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

from pypc_core.board import Backplane, ClaimError
from pypc_core.bus import PortConflictError
from pypc_core.device import Device
from pypc_core.plugins import (DEVICE_GROUP, PluginError, PluginManager,
                               UnknownPluginError)

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "plugins.md"


def doc_files():
    """``{path: text}`` of the ``<!-- file: PATH -->`` blocks in docs/plugins.md."""
    text = DOC.read_text()
    blocks = re.findall(r"<!-- file: (\S+) -->\n```\w*\n(.*?)\n```", text, re.S)
    files = {path: body + "\n" for path, body in blocks}
    assert set(files) == {"pyproject.toml", "pypc_postcard/__init__.py",
                          "pypc_postcard/rpc.py"}, files.keys()
    return files


def doc_example(name):
    """The code of the ``<!-- example: NAME -->`` block of docs/plugins.md."""
    text = DOC.read_text()
    found = re.search(rf"<!-- example: {name} -->\n```\w*\n(.*?)\n```", text, re.S)
    assert found, name
    return found.group(1) + "\n"


def write_dist(root, dist, version, entry_points, files):
    """A distribution as an installer leaves it: ``*.dist-info`` + modules."""
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    info = root / f"{dist}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    lines = [f"[{DEVICE_GROUP}]"] + [f"{k} = {v}" for k, v in entry_points.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")


@pytest.fixture
def clean_modules():
    """Forget modules that a test imported from its temporary directory."""
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if name.startswith(("pypc_postcard", "clashing_card")):
            del sys.modules[name]


@pytest.fixture
def postcard_dist(tmp_path, monkeypatch, clean_modules):
    """The docs' POST card, installed only as a dist-info on sys.path."""
    files = {p: t for p, t in doc_files().items() if p.endswith(".py")}
    write_dist(tmp_path, "pypc_postcard", "1.0", {"postcard": "pypc_postcard"}, files)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def fake_machine(**options):
    """A bare backplane standing in for a machine (ports, memory, options)."""
    bp = Backplane(options=argparse.Namespace(**options))
    return types.SimpleNamespace(ports=bp.ports, memory=bp.memory, options=bp.options,
                                 backplane=bp)


def attach(machine, device):
    device.attach(machine.backplane.board(device.declaration))


# -- the third-party plugin, found only through its entry point ------------------

def test_third_party_plugin_is_discovered(postcard_dist):
    pm = PluginManager()
    assert "postcard" in pm.available()
    src = pm.source("postcard")
    assert (src.distribution, src.version, src.value) == ("pypc_postcard", "1.0",
                                                          "pypc_postcard")
    assert "pypc_postcard" not in sys.modules          # listing imports nothing


def test_third_party_plugin_is_selected_and_claims_its_port(postcard_dist):
    pm = PluginManager()
    assert pm.select("postcard") == ["postcard"]
    assert [(n, d.ports) for n, d in pm.declarations()] == [("postcard", [0x80])]

    machine = fake_machine(postcard_log=False)
    created = pm.create_devices(machine)
    assert [name for name, _ in created] == ["postcard"]
    device = created[0][1]
    assert isinstance(device, Device)
    attach(machine, device)

    assert machine.ports.owner(0x80) == "postcard"
    assert machine.ports.read(0x80) == 0xFF               # nothing posted yet
    machine.ports.write(0x80, 0x3C)
    machine.ports.write(0x80, 0x1AA)
    assert machine.ports.read(0x80) == 0xAA
    assert device.get_state() == {"codes": [0x3C, 0xAA]}


def test_attach_conflict_names_both_devices(postcard_dist):
    pm = PluginManager()
    pm.select("postcard")
    machine = fake_machine()
    machine.ports.claim("diagnostic-port", [0x80])
    (_, device), = pm.create_devices(machine)
    with pytest.raises(PortConflictError, match="diagnostic-port.*postcard"):
        attach(machine, device)


def test_plugin_cli_options(postcard_dist, capsys):
    pm = PluginManager()
    pm.select("postcard")
    parser = argparse.ArgumentParser()
    pm.add_cli_options(parser)
    args = parser.parse_args(["--postcard-log"])
    machine = fake_machine(**vars(args))
    (_, device), = pm.create_devices(machine)
    attach(machine, device)
    machine.ports.write(0x80, 0x42)
    assert "POST 42" in capsys.readouterr().err


def test_unknown_plugin_lists_available_ones(postcard_dist):
    pm = PluginManager()
    with pytest.raises(UnknownPluginError) as err:
        pm.select("postcard,nosuchcard")
    message = str(err.value)
    assert "'nosuchcard'" in message
    assert "available:" in message
    for name in pm.available():
        assert name in message
    assert "postcard" in message and "cga" in message
    assert pm.selected == []                    # nothing half-selected
    assert "pypc_postcard" not in sys.modules


def test_two_plugins_declaring_one_port_is_an_error(postcard_dist, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    write_dist(other, "clashing_card", "0.1", {"clash": "clashing_card"}, {
        "clashing_card.py":
            "from pypc_core import hookimpl\n"
            "from pypc_core.device import Device, DeviceDeclaration\n"
            "@hookimpl\n"
            "def pypc_device_declare():\n"
            "    return DeviceDeclaration(name='clash', ports=[0x7F, 0x80])\n"
            "@hookimpl\n"
            "def pypc_device_create(machine):\n"
            "    return Device()\n"})
    sys.path.insert(0, str(other))
    try:
        pm = PluginManager()
        with pytest.raises(ClaimError) as err:
            pm.select("postcard,clash")
        assert "postcard" in str(err.value) and "clash" in str(err.value)
    finally:
        sys.path.remove(str(other))


def test_misspelled_hook_is_an_error(tmp_path, monkeypatch, clean_modules):
    write_dist(tmp_path, "clashing_card", "0.1", {"typo": "clashing_card"}, {
        "clashing_card.py":
            "def pypc_device_creat(machine):\n"
            "    return None\n"})
    monkeypatch.syspath_prepend(str(tmp_path))
    pm = PluginManager()
    with pytest.raises(PluginError, match="pypc_device_creat"):
        pm.select("typo")
    info, = [i for i in pm.describe() if i.name == "typo"]
    assert "pypc_device_creat" in info.error


def test_describe_shows_claims_and_hooks(postcard_dist):
    infos = {i.name: i for i in PluginManager().describe()}
    card = infos["postcard"]
    assert card.error is None
    assert card.claims() == "ports 80h"
    assert card.hooks == ["pypc_cli_add_options", "pypc_device_create",
                          "pypc_device_declare"]
    assert card.as_dict()["claims"][0]["ports"] == [0x80]


def test_trace_env_logs_hook_calls(postcard_dist, monkeypatch, capsys):
    monkeypatch.setenv("PYPC_TRACE_PLUGINS", "1")
    pm = PluginManager()
    pm.select("postcard")
    pm.create_devices(fake_machine())
    err = capsys.readouterr().err
    assert "pypc.devices:postcard" in err           # registration
    assert "pypc_device_create" in err              # hook call
    assert "finish pypc_device_create" in err       # and its result


def test_rpc_methods_merge():
    pm = PluginManager()
    pm.register_rpc_methods()
    for name, fn in (("a", len), ("b", abs)):
        group = types.ModuleType(f"group_{name}")
        group.pypc_rpc_methods = lambda fn=fn: {"x.ping": fn}
        pm.pm.register(group, name)
        if name == "a":
            assert pm.rpc_methods()["x.ping"] is len
    with pytest.raises(PluginError, match="'x.ping' is provided by both a and b"):
        pm.rpc_methods()


# -- the built-ins, through the same entry points ------------------------------

def test_builtin_cga_is_an_entry_point():
    eps = importlib.metadata.entry_points(group="pypc.devices")
    cga = eps["cga"]
    assert cga.value == "pypc_plugins.cga"
    assert cga.dist.name == "pypc"


def test_builtin_cga_implements_the_device_hooks():
    info, = [i for i in PluginManager().describe() if i.name == "cga"]
    assert info.error is None
    assert {"pypc_device_declare", "pypc_device_create"} <= set(info.hooks)
    assert info.declarations and info.declarations[0].ports


# -- the command line ------------------------------------------------------------

def pypc_command():
    exe = shutil.which("pypc", path=os.path.dirname(sys.executable)) or shutil.which("pypc")
    if exe is None:
        pytest.fail("the 'pypc' console script is missing: run  pip install -e '.[test]'")
    return [exe]


def run_pypc(*args, cwd, env=None):
    return subprocess.run(pypc_command() + list(args), cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_cli_version(tmp_path):
    proc = run_pypc("--version", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"pypc {importlib.metadata.version('pypc')}"


def test_cli_plugins_table(tmp_path):
    proc = run_pypc("plugins", cwd=tmp_path,
                    env={**os.environ, "COLUMNS": "200"})
    assert proc.returncode == 0, proc.stderr
    for word in ("name", "from", "claims", "hooks", "methods", "cga", f"pypc {importlib.metadata.version('pypc')}",
                 "pypc.devices", "pypc.rpc_methods", "memory.read"):
        assert word in proc.stdout


def test_cli_unknown_plugin_is_one_line_exit_2(tmp_path):
    proc = run_pypc("run", "--plugins", "nosuchcard", "--headless", cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "nosuchcard" in lines[0] and "available: " in lines[0] and "cga" in lines[0]


def test_cli_bad_option_is_one_line_exit_2(tmp_path):
    proc = run_pypc("--option-rom", "xtide.bin", cwd=tmp_path)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "FILE@SEGMENT" in proc.stderr


def test_docs_example_installs_and_runs(tmp_path):
    """pip-install the docs' example package for real and drive it via pypc."""
    src = tmp_path / "pypc-postcard"
    for path, text in doc_files().items():
        (src / path).parent.mkdir(parents=True, exist_ok=True)
        (src / path).write_text(text)
    target = tmp_path / "site"
    pip = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
         "--target", str(target), str(src)],
        capture_output=True, text=True, timeout=300)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    env = {**os.environ, "PYTHONPATH": str(target), "COLUMNS": "200"}

    listing = run_pypc("plugins", "--json", cwd=tmp_path, env=env)
    assert listing.returncode == 0, listing.stderr
    card, = [p for p in json.loads(listing.stdout)
             if p["name"] == "postcard" and p["group"] == DEVICE_GROUP]
    assert card["distribution"] == "pypc-postcard" and card["version"] == "1.0"
    assert card["claims"][0]["ports"] == [0x80]

    group, = [p for p in json.loads(listing.stdout)
              if p["name"] == "postcard" and p["group"] == "pypc.rpc_methods"]
    assert group["methods"] == ["postcard.read"] and group["error"] is None

    helptext = run_pypc("run", "--plugins", "+postcard", "--help", cwd=tmp_path, env=env)
    assert helptext.returncode == 0, helptext.stderr
    assert "--postcard-log" in helptext.stdout

    # the machine example of the page, as a script
    proc = subprocess.run([sys.executable, "-c", doc_example("machine")], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["halt", "[60]"]

    script = (
        "from pypc_core.board import Backplane\n"
        "from pypc_core.plugins import PluginManager\n"
        "pm = PluginManager(); pm.select('postcard')\n"
        "bp = Backplane()\n"
        "for name, dev in pm.create_devices(None): dev.attach(bp.board(dev.declaration))\n"
        "bp.ports.write(0x80, 0x55); print(bp.ports.owner(0x80), bp.ports.read(0x80))\n")
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["postcard", str(0x55)]
