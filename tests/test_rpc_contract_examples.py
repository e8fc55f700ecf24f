"""The contract's own example requests, sent as written (raw JSON lines), with
the results the contract shows where they do not depend on the machine."""

import json

import pytest

from rpc_client import RpcFixture


@pytest.fixture(scope="module")
def fx():
    f = RpcFixture(plugins=["cga", "uart"])
    c = f.client()
    c.call("execution.pause")
    yield f
    f.close()


@pytest.fixture
def c(fx):
    return fx.clients[0]


def send(c, line):
    c.send_raw(line.encode() + b"\n")
    reply = c.read_reply()
    assert "result" in reply, reply
    return reply["result"]


def test_envelope_examples(c):
    caps = send(c, '{"jsonrpc":"2.0","id":1,"method":"agent.capabilities","params":{}}')
    assert caps["protocol"] == "JSON-RPC 2.0 over localhost JSON-lines"
    regs = send(c, '{"jsonrpc":"2.0","id":1,"method":"state.get_registers","params":{}}')
    assert set(regs) == {"general", "segments", "ip", "flags", "flags_text", "clock",
                         "in_hlt", "state_revision"}


def test_memory_examples(c):
    out = send(c, '{"jsonrpc":"2.0","id":2,"method":"memory.write","params":'
                  '{"address":{"space":"physical","offset":"0xB8000"},"data_base64":"SGk="}}')
    assert out["address"] == 753664 and out["byte_count"] == 2
    out = send(c, '{"jsonrpc":"2.0","id":3,"method":"memory.read","params":'
                  '{"address":{"space":"segmented","segment":"0xB800","offset":"0x0000"},'
                  '"length":2}}')
    assert out["address"] == 753664 and out["data_base64"] == "SGk="
    assert out["data_hex"] == "4869"


def test_io_examples(c):
    out = send(c, '{"jsonrpc":"2.0","id":4,"method":"io.write","params":'
                  '{"port":"0x3D8","value":"0x09"}}')
    assert {k: out[k] for k in ("port", "value", "handled")} == \
        {"port": 984, "value": 9, "handled": True}
    out = send(c, '{"jsonrpc":"2.0","id":5,"method":"io.read","params":{"port":"0x3D8"}}')
    assert out["port"] == 984


def test_input_examples(c):
    out = send(c, '{"jsonrpc":"2.0","id":6,"method":"input.keyboard","params":{"events":['
                  '{"scan_code":"0x4D","pressed":true},{"scan_code":"0x4D","pressed":false}]}}')
    assert out["accepted"] == 2
    out = send(c, '{"jsonrpc":"2.0","id":2,"method":"keyboard.scancode",'
                  '"params":{"scan_code":"0x4F","pressed":true}}')
    assert out["accepted"] == 1
    st = send(c, '{"jsonrpc":"2.0","id":7,"method":"input.state"}')
    assert st["keyboard"]["pressed_scancodes"] == [0x4F] and st["joysticks"] == []


def test_video_examples(c):
    assert send(c, '{"jsonrpc":"2.0","id":8,"method":"video.text","params":{"page":1}}')[
        "page"] == 1
    assert send(c, '{"jsonrpc":"2.0","id":9,"method":"video.text","params":'
                   '{"display_address":"0x0FA0"}}')["display_address"] == 0xFA0
    snap = send(c, '{"jsonrpc":"2.0","id":10,"method":"video.snapshot"}')
    out = send(c, '{"jsonrpc":"2.0","id":11,"method":"video.snapshot.read","params":'
                  '{"snapshot_id":"%s","component":"vram","offset":0,"length":64}}'
               % snap["snapshot_id"])
    assert out["byte_count"] == 64 and out["component_byte_count"] == 16384


def test_observe_example(c):
    rev = send(c, '{"jsonrpc":"2.0","id":12,"method":"session.status"}')["state_revision"]
    out = send(c, '{"jsonrpc":"2.0","id":13,"method":"state.observe","params":'
                  '{"expected_state_revision":%d,"memory":[{"address":{"space":"segmented",'
                  '"segment":"0x2600","offset":0},"length":32768},{"address":"0xB8000",'
                  '"length":4000}],"video_text":{},"video_memory":true}}' % rev)
    assert [m["byte_count"] for m in out["memory"]] == [32768, 4000]


def test_register_example(c):
    regs = send(c, '{"jsonrpc":"2.0","id":14,"method":"state.get"}')
    line = ('{"jsonrpc":"2.0","id":15,"method":"state.set_registers","params":'
            '{"expected_state_revision":%d,"expected":{"ax":%d},"set":{"ax":31}}}'
            % (regs["state_revision"], regs["general"]["ax"]))
    out = send(c, line)
    assert out["after"]["general"]["ax"] == 31
    assert out["after"]["state_revision"] == regs["state_revision"] + 1


def test_debugging_examples(c):
    bp = send(c, '{"jsonrpc":"2.0","id":16,"method":"breakpoints.create","params":'
                 '{"kind":"execution","address":{"space":"segmented","segment":"0x1000",'
                 '"offset":"0x0020"},"once":true,"condition":{"register":"ax","operator":"eq",'
                 '"value":"0x004c"},"hit_filter":{"skip":0,"every":1}}}')
    assert bp["breakpoint_id"].startswith("bp-") and bp["once"] is True
    assert send(c, '{"jsonrpc":"2.0","id":17,"method":"breakpoints.delete","params":'
                   '{"breakpoint_id":"%s"}}' % bp["breakpoint_id"])["deleted"] is True
    assert send(c, '{"jsonrpc":"2.0","id":18,"method":"breakpoints.list"}') == \
        {"breakpoints": []}
    out = send(c, '{"jsonrpc":"2.0","id":19,"method":"execution.run_until","params":'
                  '{"predicate":{"kind":"execution","address":{"space":"segmented",'
                  '"segment":"0x1000","offset":"0x0020"},"condition":{"register":"ax",'
                  '"operator":"eq","value":"0x004c"}}}}')
    assert out["state"] == "running"
    send(c, '{"jsonrpc":"2.0","id":20,"method":"execution.pause"}')
    done = send(c, '{"jsonrpc":"2.0","id":21,"method":"execution.wait","params":'
                   '{"operation_id":"%s"}}' % out["operation_id"])
    assert done["state"] == "stopped"
    t = send(c, '{"jsonrpc":"2.0","id":22,"method":"trace.start","params":'
                '{"detail":"normal","instruction_count":128}}')
    assert t["active"] is True
    assert send(c, '{"jsonrpc":"2.0","id":23,"method":"trace.read","params":'
                   '{"cursor":null,"limit":128}}')["events"] == []
    send(c, '{"jsonrpc":"2.0","id":24,"method":"trace.stop"}')
    hw = send(c, '{"jsonrpc":"2.0","id":25,"method":"hardware.trace.start","params":'
                 '{"capacity":1024,"include_io":true,"include_irq":true,'
                 '"ports":[{"first":"0x3d0","last":"0x3df"}],"irqs":[1]}}')
    assert hw["capacity"] == 1024
    send(c, '{"jsonrpc":"2.0","id":26,"method":"hardware.trace.read","params":'
            '{"cursor":null,"limit":128}}')
    send(c, '{"jsonrpc":"2.0","id":27,"method":"hardware.trace.stop"}')
    step = send(c, '{"jsonrpc":"2.0","id":28,"method":"execution.step","params":'
                   '{"mode":"into"}}')
    assert step["stepping"] is True


def test_serial_examples(c):
    for port, value in ((0x3FB, 0x80), (0x3F8, 12), (0x3F9, 0), (0x3FB, 0x03)):
        send(c, json.dumps({"jsonrpc": "2.0", "id": 29, "method": "io.write",
                            "params": {"port": port, "value": value}}))
    out = send(c, '{"jsonrpc":"2.0","id":30,"method":"serial.write","params":'
                  '{"data_base64":"Ug0="}}')
    assert out["accepted"] == 2 and out["rx_pending"] == 2
    out = send(c, '{"jsonrpc":"2.0","id":31,"method":"serial.read","params":'
                  '{"offset":0,"max_bytes":4096}}')
    assert out["offset"] == 0
    st = send(c, '{"jsonrpc":"2.0","id":32,"method":"serial.status"}')
    assert st["port"] == "COM1" and st["base"] == 1016 and st["irq"] == 4
