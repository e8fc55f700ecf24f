"""A third party's RPC method group, installed the way docs/rpc.md says: a
module named by an entry point in the ``pypc.rpc_methods`` group, its
schema on the callable.  The test makes a real (temporary) distribution on
sys.path and talks to the method over the socket."""

import textwrap

import pytest

from pypc_core.rpc import schemas as rpc_schemas
from pypc_core.rpc.server import RpcServer, collect_methods
from pypc_core.rpc import Controller
from rpc_client import RpcFixture

MODULE = '''
"""Example method group: demo.bda_word reads a word of the BIOS data area."""

from pypc_core import hookimpl
from pypc_core.rpc import params as P


def bda_word(ctl, params):
    offset = P.number(params["offset"], "offset", 0, 0xFE)
    address = 0x400 + offset
    value = ctl.machine.memory.read_word(address)
    return {"address": address, "value": value, "state_revision": ctl.revision}


bda_word.rpc_schema = {
    "summary": "Read a word of the BIOS data area (example third-party group).",
    "params": {"type": "object", "properties": {"offset": {"type": ["integer", "string"]}},
               "required": ["offset"], "additionalProperties": False},
    "result": {"type": "object", "additionalProperties": False,
               "required": ["address", "value", "state_revision"],
               "properties": {"address": {"type": "integer"},
                              "value": {"type": "integer", "minimum": 0, "maximum": 65535},
                              "state_revision": {"type": "integer", "minimum": 0}}},
}


@hookimpl
def pypc_rpc_methods():
    return {"demo.bda_word": bda_word}
'''

NO_SCHEMA = '''
from pypc_core import hookimpl


@hookimpl
def pypc_rpc_methods():
    return {"demo.unchecked": lambda ctl, params: {}}
'''


def install(tmp_path, monkeypatch, name, source):
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
    dist = tmp_path / f"{name}-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[pypc.rpc_methods]\n{name} = {name}\n")
    monkeypatch.syspath_prepend(str(tmp_path))


def test_a_third_party_group_is_served(tmp_path, monkeypatch):
    install(tmp_path, monkeypatch, "pypc_demo_rpc", MODULE)
    fx = RpcFixture()
    try:
        c = fx.client()
        assert "demo.bda_word" in fx.server.methods
        methods = c.call("agent.capabilities")["methods"]
        tail = methods[methods.index("checkpoints.create"):]   # the extensions, in name order
        assert "demo.bda_word" in tail and "rpc.discover" in tail and tail == sorted(tail)
        c.call("execution.pause")
        out = c.call("demo.bda_word", {"offset": "0x10"})          # equipment word
        assert out["address"] == 0x410
        word = bytes.fromhex(c.call("memory.read", {"address": 0x410, "length": 2})["data_hex"])
        assert out["value"] == word[0] | word[1] << 8
        err = c.error("demo.bda_word", {"offset": 1, "extra": 2})     # its schema applies
        assert err["code"] == -32602
        doc = c.call("rpc.discover")
        assert "demo.bda_word" in [m["name"] for m in doc["methods"]]
    finally:
        fx.close()


def test_a_method_without_a_schema_stops_the_server_starting(tmp_path, monkeypatch):
    install(tmp_path, monkeypatch, "pypc_demo_noschema", NO_SCHEMA)
    from pypc_core.machine import Machine, MachineConfig
    m = Machine(MachineConfig(plugins=["cga"]))
    try:
        with pytest.raises(rpc_schemas.SchemaError, match="demo.unchecked"):
            RpcServer(Controller(m), collect_methods(m.plugin_manager), 0)
    finally:
        m.close()


def test_the_docs_method_group_reaches_its_card(tmp_path, monkeypatch):
    """docs/plugins.md's POST card and its method group postcard.read, from
    the page, installed with both entry points: the group finds the card
    through Machine.device, and says DEVICE_ABSENT without it."""
    import sys
    from test_plugins import doc_files
    for path, text in doc_files().items():
        if path.endswith(".py"):
            (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / path).write_text(text)
    info = tmp_path / "pypc_postcard-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pypc_postcard\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[pypc.devices]\npostcard = pypc_postcard\n"
        "[pypc.rpc_methods]\npostcard = pypc_postcard.rpc\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        fx = RpcFixture(plugins="cga,postcard")
        try:
            c = fx.client()
            assert c.call("postcard.read")["codes"] == []
            c.call("execution.pause")
            for code in (0x3C, 0x55, 0xAA):
                c.call("io.write", {"port": 0x80, "value": code})
            out = c.call("postcard.read", {"limit": 2})
            assert (out["last"], out["codes"]) == (0xAA, [0x55, 0xAA])
            assert out["state_revision"] == c.call("state.get_registers")["state_revision"]
            assert c.error("postcard.read", {"limit": 0})["code"] == -32602
            doc = c.call("rpc.discover")
            entry, = [m for m in doc["methods"] if m["name"] == "postcard.read"]
            assert entry["summary"].startswith("The POST codes the card latched")
        finally:
            fx.close()
        fx = RpcFixture(plugins=["cga"])
        try:
            err = fx.client().error("postcard.read")
            assert err["data"]["reason"] == "DEVICE_ABSENT" and "+postcard" in err["message"]
        finally:
            fx.close()
    finally:
        for name in [m for m in sys.modules if m.startswith("pypc_postcard")]:
            del sys.modules[name]
