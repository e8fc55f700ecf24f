"""The RPC transport and dispatch over real sockets: framing, the JSON-RPC
envelope, notifications, several clients, disconnects, a request storm while
the guest runs, schema coverage and the port rules."""

import json
import socket
import threading
import time

import pytest

from pypc_core import rpc
from pypc_core.rpc import schemas as rpc_schemas
from pypc_core.rpc.server import MAX_LINE, RpcServerError, collect_methods
from rpc_client import RpcFixture
from rpc_fixtures import c, server_fixture  # noqa: F401  (c: a fixture)


fx = server_fixture(scope="module")


def raw(c, data):
    c.send_raw(data)
    return c.read_reply()


def test_binds_only_127_0_0_1(fx):
    host, port = fx.server.listener.getsockname()
    assert host == "127.0.0.1" and port == fx.port != 0


def test_bad_json_is_32700_with_null_id(c):
    for line in (b"{", b"{'a': 1}", b'{"jsonrpc":"2.0","id":1,"method":"x",}', b"\xff\xfe",
                 b'{"jsonrpc":"2.0","id":1,"method":"state.get","params":{"a":NaN}}'):
        reply = raw(c, line + b"\n")
        assert reply == {"jsonrpc": "2.0", "id": None, "error": reply["error"]}
        assert reply["error"]["code"] == -32700
        assert reply["error"]["data"]["reason"] == "PARSE_ERROR"
    assert c.call("state.get")["state_revision"] >= 0       # still usable


@pytest.mark.parametrize("obj, rid", [
    ([], None), ([{"jsonrpc": "2.0", "id": 1, "method": "state.get"}], None), ("x", None),
    (5, None), ({"id": 3, "method": "state.get"}, 3),
    ({"jsonrpc": "1.0", "id": 4, "method": "state.get"}, 4),
    ({"jsonrpc": "2.0", "id": 5, "method": 7}, 5), ({"jsonrpc": "2.0", "id": 6}, 6),
    ({"jsonrpc": "2.0", "id": 1.5, "method": "state.get"}, None),
    ({"jsonrpc": "2.0", "id": True, "method": "state.get"}, None),
    ({"jsonrpc": "2.0", "id": [1], "method": "state.get"}, None),
])
def test_invalid_requests_are_32600(c, obj, rid):
    reply = raw(c, json.dumps(obj).encode() + b"\n")
    assert reply["id"] == rid and reply["error"]["code"] == -32600
    assert reply["error"]["data"]["reason"] == "INVALID_REQUEST"


def test_params_must_be_an_object(c):
    for params in ([1, 2], "x", 3, None):
        reply = c.request("state.get", params if params is not None else None)
        if params is None:
            assert "result" in reply                 # omitted params is {}
            continue
        assert reply["error"]["code"] == -32602
    reply = raw(c, b'{"jsonrpc":"2.0","id":9,"method":"state.get","params":null}\n')
    assert reply["error"]["code"] == -32602


def test_unknown_method_is_32601(c):
    err = c.error("debug.output.clear", {"cursor": None})       # no such method
    assert err["code"] == -32601 and err["data"]["reason"] == "METHOD_NOT_FOUND"
    err = c.error("debugger.execute_command")
    assert err["code"] == -32601


def test_ids_are_echoed(c):
    for rid in ("req-0001", 0, -5, 2 ** 53, None):
        reply = c.request("state.get", rid=rid)
        assert reply["id"] == rid and "result" in reply


def test_notifications_get_no_reply_but_run(c):
    c.call("execution.pause")
    rev = c.call("state.get")["state_revision"]
    c.notify("keyboard.scancode", {"scan_code": 2})          # valid: runs, no reply
    c.notify("no.such.method")                               # unknown: no reply
    c.notify("keyboard.scancode", {"scan_code": 999})        # invalid: no reply, no effect
    c.notify("state.get", [1])                               # bad params: no reply
    reply = c.request("state.get", rid="after")
    assert reply["id"] == "after"
    assert reply["result"]["state_revision"] == rev + 1
    c.call("execution.continue")


def test_long_line_is_32600_and_the_connection_stays_usable(c):
    big = b'{"jsonrpc":"2.0","id":1,"method":"state.get","params":{"x":"' + \
        b"a" * (MAX_LINE + 10) + b'"}}\n'
    reply = raw(c, big)
    assert reply["id"] is None and reply["error"]["code"] == -32600
    assert reply["error"]["data"]["reason"] == "INVALID_REQUEST"
    assert c.call("state.get")["state_revision"] > 0
    # a line of exactly the limit is read (and then judged on its content)
    line = b'{"jsonrpc":"2.0","id":2,"method":"state.get","params":{"x":"'
    line += b"a" * (MAX_LINE - len(line) - 3) + b'"}}'
    assert len(line) == MAX_LINE
    reply = raw(c, line + b"\n")
    assert reply["id"] == 2 and reply["error"]["code"] == -32602


def test_pipelined_requests_in_one_packet_and_split_lines(c):
    msgs = b"".join(json.dumps({"jsonrpc": "2.0", "id": i, "method": "state.get"}).encode()
                    + b"\n" for i in range(50))
    c.send_raw(msgs)
    assert [c.read_reply()["id"] for _ in range(50)] == list(range(50))
    line = json.dumps({"jsonrpc": "2.0", "id": "split", "method": "state.get"}).encode()
    for i in range(0, len(line), 7):
        c.send_raw(line[i:i + 7])
        time.sleep(0.001)
    c.send_raw(b"\r\n")
    assert c.read_reply()["id"] == "split"
    c.send_raw(b"\n   \n")                          # blank lines are ignored
    assert c.request("state.get", rid="blank")["id"] == "blank"


def test_two_clients_at_once(fx):
    clients = [fx.client() for _ in range(4)]
    results = {}

    def work(i, cl):
        out = []
        for _ in range(100):
            out.append(cl.call("memory.read", {"address": 0xF0000 + i, "length": 16}))
        results[i] = out

    threads = [threading.Thread(target=work, args=(i, cl)) for i, cl in enumerate(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(results) == [0, 1, 2, 3]
    for i, out in results.items():
        assert len({r["data_hex"] for r in out}) == 1        # ROM: the same bytes
        assert out[0]["address"] == 0xF0000 + i
    for cl in clients:
        cl.close()


def test_disconnects_mid_request_and_mid_line(fx, c):
    for _ in range(5):
        s = socket.create_connection(("127.0.0.1", fx.port))
        s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"memory.read","params":'
                  b'{"address":0,"length":65536}}\n')
        s.close()                                  # before the reply
        s = socket.create_connection(("127.0.0.1", fx.port))
        s.sendall(b'{"jsonrpc":"2.0","id":1,"meth')   # half a line, then gone
        s.close()
    assert c.call("state.get")["state_revision"] > 0
    time.sleep(0.2)
    assert len(fx.server.connections) <= 2


def test_a_client_that_does_not_read_does_not_stall_the_others(fx, c):
    lazy = socket.create_connection(("127.0.0.1", fx.port))
    req = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "memory.read",
                      "params": {"address": 0, "length": 65536}}).encode() + b"\n"
    lazy.sendall(req * 40)                         # ~8 MiB of replies nobody reads
    time.sleep(0.3)
    assert c.call("state.get")["state_revision"] > 0     # answered: not stuck behind it
    lazy.close()


def test_request_storm_while_the_guest_runs(fx):
    cl = fx.client()
    cl.call("execution.continue") if cl.call("session.status")["state"] == "stopped" else None
    n = 2000
    msgs = b"".join(json.dumps({"jsonrpc": "2.0", "id": i, "method": m}).encode() + b"\n"
                    for i, m in zip(range(n), ["state.get", "session.status", "video.text",
                                               "input.state"] * n))
    other = fx.client()
    box = {}
    t = threading.Thread(target=lambda: box.update(
        r=[other.call("state.get")["state_revision"] for _ in range(200)]))
    t.start()
    cl.send_raw(msgs)
    replies = [cl.read_reply() for _ in range(n)]
    t.join(60)
    assert [r["id"] for r in replies] == list(range(n))
    assert all("result" in r for r in replies)
    revs = [r["result"]["state_revision"] for r in replies if "general" in r["result"]]
    assert revs == sorted(revs) and revs[-1] > revs[0]      # the guest ran meanwhile
    assert box["r"] == sorted(box["r"])
    assert cl.call("session.status")["state"] == "running"
    cl.close()
    other.close()


# -- schemas -------------------------------------------------------------------

def test_every_method_has_a_schema_and_every_schema_a_method(fx):
    from pypc_core.rpc.server import TRANSPORT_METHODS
    methods = collect_methods(fx.machine.plugin_manager)
    files = rpc_schemas.load_method_schemas()
    assert sorted(files) == sorted([*methods, *TRANSPORT_METHODS])   # (auth: the transport's)
    methods = dict(methods, **fx.server.methods)
    for name, doc in files.items():
        assert doc["result"] != {}, name
    rpc_schemas.build_schema_set(methods, strict=True)


def test_schema_check_names_missing_and_orphan_methods(fx):
    methods = fx.server.methods                     # the groups' and the transport's
    extra = dict(methods, **{"made.up": lambda ctl, params: {}})
    with pytest.raises(rpc_schemas.SchemaError, match="without a schema: 'made.up'"):
        rpc_schemas.build_schema_set(extra)
    fewer = {k: v for k, v in methods.items() if k != "io.read"}
    with pytest.raises(rpc_schemas.SchemaError, match="without an RPC method: io.read"):
        rpc_schemas.build_schema_set(fewer, strict=True)
    rpc_schemas.build_schema_set(fewer)             # the server serves what it has


def _walk(node, path=""):
    if isinstance(node, dict):
        yield path, node
        for k, v in node.items():
            yield from _walk(v, f"{path}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _walk(v, f"{path}/{i}")


PARAM_ONLY_DEFS = {"number", "address", "address_object", "video_selection",
                   "keyboard_event", "breakpoint_spec", "predicate_spec", "empty"}
# where the contract itself says null
NULLABLE = {("session.status", "/properties/last_stop/anyOf/1"),
            ("hardware.trace.read", "/properties/next_cursor/anyOf/1"),
            ("dos.trace.read", "/properties/next_cursor/anyOf/1"),
            ("video.history.read", "/properties/next_cursor/anyOf/1"),
            ("symbols.list", "/properties/next_offset/anyOf/1"),   # the last page
            # an address near no symbol: no symbol, name or offset
            ("symbols.lookup", "/properties/results/items/properties/symbol/anyOf/1"),
            ("symbols.lookup", "/properties/results/items/properties/name/anyOf/1"),
            ("symbols.lookup", "/properties/results/items/properties/offset/anyOf/1"),
            # COMPAT Traces: before_base64 is null for a device-backed byte
            ("defs:trace_effect", "/anyOf/1/properties/before_base64")}


def test_result_schemas_are_closed():
    """Every object schema of a result (and of the shared definitions that
    results use) has additionalProperties: false, and no declared type
    admits null unless the contract says null."""
    docs = rpc_schemas.load_method_schemas()
    defs = rpc_schemas.load_defs()["$defs"]
    trees = [(m, d["result"]) for m, d in docs.items()]
    trees += [(f"defs:{k}", v) for k, v in defs.items() if k not in PARAM_ONLY_DEFS]
    for name, tree in trees:
        for path, node in _walk(tree):
            if node.get("type") == "object" and "properties" in node:
                if name == "rpc.discover" and path:
                    continue
                assert node.get("additionalProperties") is False, (name, path)
            t = node.get("type")
            if t == "null" or (isinstance(t, list) and "null" in t):
                assert (name, path) in NULLABLE, (name, path)


# -- ports ---------------------------------------------------------------------

def test_port_in_use_is_a_clear_error(fx):
    machine = fx.machine
    controller = rpc.Controller(machine)
    server = rpc.RpcServer(controller, collect_methods(machine.plugin_manager), fx.port)
    with pytest.raises(RpcServerError, match=f"--rpc-port {fx.port}"):
        server.start()


def test_a_second_server_on_its_own_port(fx):
    other = RpcFixture()
    try:
        assert other.port != fx.port
        a, b = fx.client(), other.client()
        assert a.call("agent.capabilities")["endpoint"] != \
            b.call("agent.capabilities")["endpoint"]
    finally:
        other.close()
