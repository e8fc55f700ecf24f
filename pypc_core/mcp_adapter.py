"""``pypc mcp``: the JSON-RPC agent API as Model Context Protocol tools,
served over stdio with the official MCP Python SDK (``mcp``).

One tool per RPC method of the server's OpenRPC document (``rpc.discover``,
assembled from ``schemas/`` and the schemas of any third-party method
group): the tool's name is the method's
with ``_`` for ``.`` (``memory.read`` -> ``memory_read``), its input schema
the method's params schema and its output schema the result schema, both
with the shared definitions inlined.  A call forwards the arguments
unchanged to a pypc JSON-RPC server through the generated client's
transport and returns the result as structured content (and as JSON text);
an RPC error is a tool error whose text starts with ``error.data.reason``.

The server is a running pypc (``--connect PORT``, or ``--socket PATH`` for one
with ``--rpc-socket``; ``--token-file FILE`` for one with ``--rpc-token-file``)
or one this command
starts: ``pypc run --headless --rpc-socket PRIVATE/rpc.sock --timeout
31536000 [RUN OPTIONS]`` (a socket only this user reaches:
:mod:`pypc_core.spawn`; no viewers unless RUN OPTIONS give their ports),
ended when the MCP session ends.
"""

import copy
import json

from .errors import PypcError
from .spawn import SpawnedPypc

REF_PREFIX = "#/components/schemas/"


class McpAdapterError(PypcError):
    pass


def tool_name(method):
    return method.replace(".", "_")


def _inline(schema, components, depth=0):
    if depth > 64:
        raise McpAdapterError("schema definitions refer to each other in a loop")
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith(REF_PREFIX):
            target = _inline(components[ref[len(REF_PREFIX):]], components, depth + 1)
            siblings = {k: v for k, v in schema.items() if k != "$ref"}
            if not siblings:
                return target
            if isinstance(target, dict) and not set(siblings) - {"description", "title"}:
                return {**target, **siblings}
            return {"allOf": [target], **_inline(siblings, components, depth)}
        return {k: (v if k in ("const", "enum") else _inline(v, components, depth))
                for k, v in schema.items()}
    if isinstance(schema, list):
        return [_inline(v, components, depth) for v in schema]
    return schema


def _object_schema(schema):
    """MCP wants ``type: object`` at the top; a top-level ``anyOf`` of
    objects keeps its alternatives under it."""
    schema = copy.deepcopy(schema)
    schema.pop("$schema", None)
    if schema.get("type") != "object":
        schema["type"] = "object"
    return schema


def tool_specs(doc=None):
    """``[(tool name, method, description, input schema, output schema)]``."""
    if doc is None:
        from .codegen import openrpc_document
        doc = openrpc_document()
    components = doc.get("components", {}).get("schemas", {})
    out = []
    for entry in sorted(doc["methods"], key=lambda e: e["name"]):
        params = _inline(entry.get("x-params-schema", {"type": "object"}), components)
        result = _inline(entry["result"]["schema"], components)
        description = entry.get("summary") or entry["name"]
        if entry.get("description"):
            description += "\n\n" + entry["description"]
        description += f"\n\n(JSON-RPC method {entry['name']} of pypc, an IBM PC/XT emulator.)"
        out.append((tool_name(entry["name"]), entry["name"], description,
                    _object_schema(params), _object_schema(result)))
    return out


class Backend:
    """The pypc JSON-RPC server the tools forward to."""

    def __init__(self, port=None, run_args=(), stderr=None, socket_path=None, token=None):
        from .client.transport import Transport, TransportError
        self.spawned = None
        if port is None and socket_path is None:
            self.spawned = SpawnedPypc(list(run_args), stderr)
            port, socket_path = self.spawned.port, self.spawned.socket_path
        self.port = port
        try:
            self.transport = Transport(port=port or 2301, timeout=120,
                                       socket_path=socket_path, token=token)
        except TransportError as exc:
            self.close()
            raise McpAdapterError(str(exc)) from None
        except BaseException:
            self.close()
            raise

    def call(self, method, arguments):
        return self.transport.request(method, arguments or {})

    def openrpc(self):
        """The server's own OpenRPC document (``rpc.discover``): the methods
        it really has, third-party groups included."""
        reply = self.call("rpc.discover", {})
        if "result" not in reply:
            raise McpAdapterError(f"rpc.discover failed: {reply.get('error')}")
        return reply["result"]

    def close(self):
        if getattr(self, "transport", None) is not None:
            self.transport.close()
        if self.spawned is not None:
            self.spawned.close()


def build_server(backend, doc=None):
    """The MCP low-level server whose tools forward to ``backend``."""
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel import Server

    specs = tool_specs(doc if doc is not None else backend.openrpc())
    by_name = {s[0]: s for s in specs}
    tools = [types.Tool(name=name, description=desc, input_schema=params,
                        output_schema=result)
             for name, method, desc, params, result in specs]

    async def list_tools(ctx, params):
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx, params):
        spec = by_name.get(params.name)
        if spec is None:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=f"unknown tool {params.name!r}")],
                is_error=True)
        method = spec[1]
        arguments = dict(params.arguments or {})
        try:
            reply = await anyio.to_thread.run_sync(backend.call, method, arguments)
        except Exception as exc:            # the connection to pypc failed
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=f"TRANSPORT: {exc}")],
                is_error=True)
        if "error" in reply:
            err = reply["error"]
            reason = (err.get("data") or {}).get("reason", "ERROR")
            text = f"{reason}: {err.get('message', '')}\n{json.dumps(err.get('data'))}"
            return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                        is_error=True)
        result = reply.get("result")
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(result))],
            structured_content=result)

    return Server("pypc", version=_version(),
                  instructions="Tools drive a pypc IBM PC/XT emulator through its JSON-RPC "
                               "agent API: pause with execution_pause before reading or "
                               "writing state; execution_step/continue return an operation "
                               "id that execution_wait completes.",
                  on_list_tools=list_tools, on_call_tool=call_tool)


def _version():
    try:
        import importlib.metadata
        return importlib.metadata.version("pypc")
    except Exception:
        return "0"


def serve_stdio(backend):
    import anyio
    from mcp.server.stdio import stdio_server

    server = build_server(backend)

    async def main():
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    anyio.run(main)


def main(connect=None, run_args=(), socket_path=None, token=None):
    """``pypc mcp``: serve until stdin closes (attached to the TCP port
    ``connect`` or the Unix socket ``socket_path``, with ``token`` for a
    server with --rpc-token-file; else to a pypc it starts)."""
    try:
        import mcp  # noqa: F401
    except ModuleNotFoundError:
        raise McpAdapterError("pypc mcp needs the MCP Python SDK: pip install mcp") from None
    backend = Backend(connect, run_args, socket_path=socket_path, token=token)
    try:
        serve_stdio(backend)
    finally:
        backend.close()
    return 0
