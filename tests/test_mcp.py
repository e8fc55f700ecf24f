"""`pypc mcp` driven by the MCP SDK's own stdio client: the tools come from
the schemas, and registers, memory, step and screen text work against a
booted machine (the built-in BIOS, no disk), both through --connect and
with a pypc the adapter starts itself."""

import asyncio
import base64
import json
import sys
import time

import pytest

mcp = pytest.importorskip("mcp", reason="the MCP Python SDK (pip install mcp) is not installed")

from mcp import ClientSession, StdioServerParameters                 # noqa: E402
from mcp.client.stdio import stdio_client                            # noqa: E402

from pypc_core import codegen, mcp_adapter                           # noqa: E402
from rpc_client import RpcFixture                                    # noqa: E402

SEG = 0x1000
PROGRAM = bytes([0xB8, 0x34, 0x12, 0x40, 0xA3, 0x00, 0x02, 0xEB, 0xFE])


@pytest.fixture(scope="module")
def fx():
    f = RpcFixture()
    yield f
    f.close()


def run_session(args, body):
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "pypc_core.cli", "mcp"] + args)

    async def main():
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await body(session)
    return asyncio.run(main())


async def call(session, name, args=None):
    res = await session.call_tool(name, args or {})
    assert not res.is_error, res.content
    assert json.loads(res.content[0].text) == res.structured_content
    return res.structured_content


async def wait_for_text(session, text, limit_s=60):
    deadline = time.monotonic() + limit_s
    while True:
        screen = "\n".join((await call(session, "video_text"))["text"])
        if text in screen or time.monotonic() > deadline:
            return screen
        await asyncio.sleep(0.05)


def test_tool_specs_follow_the_schemas():
    doc = codegen.openrpc_document()
    specs = mcp_adapter.tool_specs(doc)
    assert [s[1] for s in specs] == sorted(e["name"] for e in doc["methods"])
    for name, method, desc, params, result in specs:
        assert name == method.replace(".", "_") and params["type"] == "object"
        assert "$ref" not in json.dumps(params) + json.dumps(result)   # defs inlined
    memory_read = next(s for s in specs if s[1] == "memory.read")
    assert memory_read[3]["required"] == ["address"]
    assert set(memory_read[4]["required"]) >= {"data_base64", "sha256"}


def test_tools_against_a_running_pypc(fx):
    async def body(session):
        tools = (await session.list_tools()).tools
        names = {t.name for t in tools}
        assert names == {m.replace(".", "_") for m in fx.server.methods}
        regs_tool = next(t for t in tools if t.name == "state_get_registers")
        assert "general" in regs_tool.output_schema["properties"]
        screen = await wait_for_text(session, "bootable")
        assert "bootable" in screen
        await call(session, "execution_pause")
        await call(session, "memory_write", {
            "address": {"space": "segmented", "segment": SEG, "offset": 0},
            "data_base64": base64.b64encode(PROGRAM).decode()})
        regs = await call(session, "state_get_registers")
        out = await call(session, "state_set_registers", {
            "expected_state_revision": regs["state_revision"],
            "expected": {"cs": regs["segments"]["cs"], "ip": regs["ip"],
                         "ds": regs["segments"]["ds"]},
            "set": {"cs": SEG, "ip": 0, "ds": SEG}})
        assert out["after"]["segments"]["cs"] == SEG
        block = await call(session, "memory_read", {"address": SEG * 16,
                                                    "length": len(PROGRAM)})
        assert base64.b64decode(block["data_base64"]) == PROGRAM
        for expected_ip in (3, 4):
            op = await call(session, "execution_step", {"mode": "into"})
            done = await call(session, "execution_wait", {"operation_id": op["operation_id"],
                                                          "timeout_ms": 5000})
            assert done["state"] == "stopped"
            assert (await call(session, "state_get_registers"))["ip"] == expected_ip
        assert (await call(session, "state_get_registers"))["general"]["ax"] == 0x1235
        # an RPC error is a tool error that starts with its reason
        res = await session.call_tool("state_set_registers", {
            "expected_state_revision": 0, "expected": {}, "set": {"ax": 1}})
        assert res.is_error and res.content[0].text.startswith("REVISION_MISMATCH")
        await call(session, "execution_continue")
    run_session(["--connect", str(fx.port)], body)


def test_mcp_starts_its_own_pypc():
    async def body(session):
        assert len((await session.list_tools()).tools) >= 40
        screen = await wait_for_text(session, "bootable", limit_s=120)
        assert "bootable" in screen
        await call(session, "execution_pause")
        regs = await call(session, "state_get_registers")
        assert regs["segments"]["cs"] == 0xF000          # the BIOS waiting for a key
        low = await call(session, "memory_read", {"address": 0x400, "length": 2})
        assert base64.b64decode(low["data_base64"]) == bytes.fromhex("f803")  # COM1 at 3F8h
    run_session(["--", "--plugins", "cga,uart"], body)


@pytest.mark.parametrize("command", ["mcp", "console"])
def test_bad_run_options_are_one_line_errors(command):
    import subprocess
    out = subprocess.run([sys.executable, "-m", "pypc_core.cli", command, "--", "--bogus"],
                         capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.startswith("pypc: error: the pypc it started ended before serving "
                                 "JSON-RPC: pypc: error: unrecognized arguments: --bogus")
    flag = "--connect" if command == "mcp" else "--port"
    out = subprocess.run([sys.executable, "-m", "pypc_core.cli", command, flag, "1", "--",
                          "--turbo"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 2 and f"not with {flag}" in out.stderr
