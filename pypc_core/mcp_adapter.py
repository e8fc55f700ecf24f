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
``video_screenshot`` answers with MCP image content (``image/png``) and
the other fields as JSON text; its structured content is the whole result.

Resources: ``pypc://screen.png`` (the card's frame, ``video.screenshot``)
and ``pypc://screen.txt`` (the 25 text rows, ``video.text``).  A client
that subscribes (``resources/subscribe``, or a ``subscriptions/listen``
stream on the 2026-07-28 protocol) gets ``notifications/resources/updated``
when the resource changes: the adapter looks every
:data:`POLL_INTERVAL_S` of host time, only while something is subscribed,
and compares the PNG's sha256 (the text itself for screen.txt).

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
import threading

from .errors import PypcError
from .spawn import SpawnedPypc

REF_PREFIX = "#/components/schemas/"
SCREEN_PNG = "pypc://screen.png"
SCREEN_TXT = "pypc://screen.txt"
POLL_INTERVAL_S = 0.25          # host seconds between two looks for subscribers


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
        self._lock = threading.Lock()       # tools and the resource watcher share it
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
        with self._lock:
            return self.transport.request(method, arguments or {})

    def result(self, method, arguments=None):
        """The result of ``method``, or McpAdapterError with the RPC error."""
        reply = self.call(method, arguments or {})
        if "error" in reply:
            err = reply["error"]
            reason = (err.get("data") or {}).get("reason", "ERROR")
            raise McpAdapterError(f"{reason}: {err.get('message', '')}")
        return reply["result"]

    def screen(self, uri):
        """``(contents, fingerprint)`` of a screen resource: base64 PNG or
        the text rows joined by newlines."""
        if uri == SCREEN_PNG:
            shot = self.result("video.screenshot", {})
            return shot["png_base64"], shot["sha256"]
        if uri == SCREEN_TXT:
            text = "\n".join(self.result("video.text", {})["text"])
            return text, text
        raise McpAdapterError(f"no resource {uri!r} (pypc has {SCREEN_PNG} and {SCREEN_TXT})")

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


def _tool_content(method, result):
    """The content blocks of a tool's result: JSON text; for
    ``video.screenshot`` the picture as image content and the other fields
    as text."""
    import mcp_types as types
    if method == "video.screenshot" and isinstance(result, dict) and "png_base64" in result:
        rest = {k: v for k, v in result.items() if k != "png_base64"}
        return [types.ImageContent(type="image", data=result["png_base64"],
                                   mime_type="image/png"),
                types.TextContent(type="text", text=json.dumps(rest))]
    return [types.TextContent(type="text", text=json.dumps(result))]


class ScreenWatch:
    """Who subscribed to which screen resource, and what they last saw."""

    def __init__(self, backend):
        self.backend = backend
        self.sessions = {}          # uri -> set of legacy (resources/subscribe) sessions
        self.bus = None             # the subscriptions/listen bus (2026-07-28)
        self.listening = 0
        self.seen = {}              # uri -> fingerprint last looked at

    def wanted(self):
        uris = {u for u, sessions in self.sessions.items() if sessions}
        if self.bus is not None and self.listening > 0:
            uris |= {SCREEN_PNG, SCREEN_TXT}
        return uris

    def changed(self, uri):
        """True when ``uri``'s content differs from the last look (the first
        look only remembers it)."""
        _, fingerprint = self.backend.screen(uri)
        old = self.seen.get(uri)
        self.seen[uri] = fingerprint
        return old is not None and old != fingerprint

    async def run(self):
        import anyio
        try:
            from mcp.shared.subscriptions import ResourceUpdated
        except ImportError:                 # an SDK before 2026-07-28 streams
            ResourceUpdated = None
        while True:
            await anyio.sleep(POLL_INTERVAL_S)
            for uri in sorted(self.wanted()):
                try:
                    changed = await anyio.to_thread.run_sync(self.changed, uri)
                except Exception:           # pypc busy or gone: look again later
                    continue
                if not changed:
                    continue
                for session in list(self.sessions.get(uri, ())):
                    try:
                        await session.send_resource_updated(uri)
                    except Exception:
                        self.sessions[uri].discard(session)
                if self.bus is not None and ResourceUpdated is not None:
                    await self.bus.publish(ResourceUpdated(uri=uri))


def build_server(backend, doc=None, watch=None):
    """The MCP low-level server whose tools forward to ``backend`` (and
    whose screen resources ``watch``, a :class:`ScreenWatch`, follows)."""
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel import Server

    specs = tool_specs(doc if doc is not None else backend.openrpc())
    by_name = {s[0]: s for s in specs}
    tools = [types.Tool(name=name, description=desc, input_schema=params,
                        output_schema=result)
             for name, method, desc, params, result in specs]
    watch = watch if watch is not None else ScreenWatch(backend)
    resources = [
        types.Resource(uri=SCREEN_PNG, name="screen.png", mime_type="image/png",
                       description="The display card's frame at the mode's native "
                                   "resolution, as PNG (video.screenshot)."),
        types.Resource(uri=SCREEN_TXT, name="screen.txt", mime_type="text/plain",
                       description="The text screen: its 25 rows, CP437 decoded, "
                                   "right-trimmed (video.text)."),
    ]

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
        return types.CallToolResult(content=_tool_content(method, result),
                                    structured_content=result)

    async def list_resources(ctx, params):
        return types.ListResourcesResult(resources=resources)

    def known(uri):
        uri = str(uri)
        if uri not in (SCREEN_PNG, SCREEN_TXT):
            from mcp.shared.exceptions import MCPError
            raise MCPError(code=-32002, message=f"no resource {uri!r} (pypc has "
                                                f"{SCREEN_PNG} and {SCREEN_TXT})")
        return uri

    async def read_resource(ctx, params):
        uri = known(params.uri)
        try:
            content, _ = await anyio.to_thread.run_sync(backend.screen, uri)
        except Exception as exc:
            from mcp.shared.exceptions import MCPError
            raise MCPError(code=-32603, message=str(exc)) from None
        if uri == SCREEN_PNG:
            block = types.BlobResourceContents(uri=uri, mime_type="image/png", blob=content)
        else:
            block = types.TextResourceContents(uri=uri, mime_type="text/plain", text=content)
        return types.ReadResourceResult(contents=[block])

    async def subscribe(ctx, params):
        uri = known(params.uri)
        watch.sessions.setdefault(uri, set()).add(ctx.session)
        try:
            await anyio.to_thread.run_sync(watch.changed, uri)    # what it sees now
        except Exception:
            pass
        return types.EmptyResult()

    async def unsubscribe(ctx, params):
        uri = known(params.uri)
        watch.sessions.get(uri, set()).discard(ctx.session)
        return types.EmptyResult()

    extra = {}
    try:
        from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
        watch.bus = InMemorySubscriptionBus()
        listen = ListenHandler(watch.bus)

        async def on_listen(ctx, params):
            wanted = getattr(params.notifications, "resource_subscriptions", None) or ()
            for uri in wanted:
                if str(uri) in (SCREEN_PNG, SCREEN_TXT):
                    try:                    # what it sees now, before the ack
                        await anyio.to_thread.run_sync(watch.changed, str(uri))
                    except Exception:
                        pass
            watch.listening += 1
            try:
                return await listen(ctx, params)
            finally:
                watch.listening -= 1
        extra["on_subscriptions_listen"] = on_listen
    except ImportError:                     # an SDK before 2026-07-28 streams
        watch.bus = None

    server = Server("pypc", version=_version(),
                    instructions="Tools drive a pypc IBM PC/XT emulator through its JSON-RPC "
                                 "agent API: pause with execution_pause before reading or "
                                 "writing state; execution_step/continue return an operation "
                                 "id that execution_wait completes.  video_screenshot returns "
                                 "the screen as an image; the resources pypc://screen.png "
                                 "and pypc://screen.txt follow the screen (subscribe for "
                                 "updates).",
                    on_list_tools=list_tools, on_call_tool=call_tool,
                    on_list_resources=list_resources, on_read_resource=read_resource,
                    on_subscribe_resource=subscribe, on_unsubscribe_resource=unsubscribe,
                    **extra)
    server.pypc_watch = watch
    return server


def _version():
    try:
        import importlib.metadata
        return importlib.metadata.version("pypc")
    except Exception:
        return "0"


def serve_stdio(backend):
    import anyio
    from mcp.server.stdio import stdio_server

    watch = ScreenWatch(backend)
    server = build_server(backend, watch=watch)

    async def main():
        async with stdio_server() as (read_stream, write_stream):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(watch.run)
                await server.run(read_stream, write_stream,
                                 server.create_initialization_options())
                tasks.cancel_scope.cancel()
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
