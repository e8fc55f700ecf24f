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


def run_session(args, body, message_handler=None):
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "pypc_core.cli", "mcp"] + args)

    async def main():
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, message_handler=message_handler) as session:
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


def test_screenshot_is_image_content_and_the_screen_is_a_resource(fx):
    """The SDK's client gets the screenshot as image content, reads both
    screen resources, and is told when a resource it subscribed changes."""
    import mcp_types as types

    from pypc_core.video_frames import decode_png
    updates = []

    async def on_message(message):
        if isinstance(message, types.ResourceUpdatedNotification):
            updates.append(str(message.params.uri))

    async def body(session):
        await wait_for_text(session, "bootable")
        await call(session, "execution_pause")
        res = await session.call_tool("video_screenshot", {})
        assert not res.is_error
        image, text = res.content
        assert image.type == "image" and image.mime_type == "image/png"
        assert image.data == res.structured_content["png_base64"]
        assert "png_base64" not in json.loads(text.text)
        assert (decode_png(base64.b64decode(image.data)) == fx.machine.video.frame()).all()
        listed = {str(r.uri): r.mime_type for r in (await session.list_resources()).resources}
        assert listed == {"pypc://screen.png": "image/png", "pypc://screen.txt": "text/plain"}
        png = (await session.read_resource("pypc://screen.png")).contents[0]
        assert (decode_png(base64.b64decode(png.blob)) == fx.machine.video.frame()).all()
        txt = (await session.read_resource("pypc://screen.txt")).contents[0]
        assert txt.text.split("\n") == fx.machine.video.text_rows()
        assert txt.mime_type == "text/plain" and "bootable" in txt.text
        with pytest.raises(Exception, match="no resource"):
            await session.read_resource("pypc://nothing")
        await session.subscribe_resource("pypc://screen.txt")
        await asyncio.sleep(1.0)                  # paused: nothing changes, nothing sent
        assert updates == []
        await call(session, "memory_write", {     # an 'X' in the top left corner
            "address": {"space": "linear", "offset": 0xB8000},
            "data_base64": base64.b64encode(b"X\x07").decode()})
        deadline = time.monotonic() + 30
        while not updates and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert updates[:1] == ["pypc://screen.txt"]
        txt = (await session.read_resource("pypc://screen.txt")).contents[0]
        assert txt.text.startswith("X")
        await session.unsubscribe_resource("pypc://screen.txt")
        await call(session, "execution_continue")
    run_session(["--connect", str(fx.port)], body, message_handler=on_message)


def test_screen_updates_on_a_listen_stream(fx):
    """The 2026-07-28 way: a subscriptions/listen stream for pypc://screen.txt
    gets a ResourceUpdated event when the text screen changes."""
    from mcp.client.client import Client as McpClient
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "pypc_core.cli", "mcp", "--connect",
                                         str(fx.port)])

    async def main():
        async with McpClient(params, mode="auto") as client:
            assert client.session.protocol_version == "2026-07-28"
            await client.call_tool("execution_pause", {})
            async with client.listen(resource_subscriptions=["pypc://screen.txt"]) as sub:
                assert list(sub.honored.resource_subscriptions) == ["pypc://screen.txt"]
                # (the adapter looked at the screen before it acknowledged)
                await client.call_tool("memory_write", {
                    "address": {"space": "linear", "offset": 0xB8000 + 2},
                    "data_base64": base64.b64encode(b"Y\x07").decode()})

                async def first():
                    async for event in sub:
                        return event
                event = await asyncio.wait_for(first(), 30)
            assert event.uri == "pypc://screen.txt"
            await client.call_tool("execution_continue", {})
    asyncio.run(main())


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
