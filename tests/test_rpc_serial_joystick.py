"""serial.* on the uart plugin's COM1 and input.joystick* on the game port,
over the RPC; both answer DEVICE_ABSENT without their card."""

import base64

import pytest

from pypc_core.plugins import DEVICE_GROUP, PluginManager
from rpc_client import RpcFixture

AVAILABLE = set(PluginManager().available(DEVICE_GROUP))


def machine(plugins):
    missing = [p for p in plugins if p not in AVAILABLE]
    if missing:
        pytest.skip(f"device plugins not installed: {missing}")
    return RpcFixture(plugins=plugins)


@pytest.fixture
def com1():
    f = machine(["cga", "uart"])
    yield f
    f.close()


def program_uart(c):
    """9600 baud, 8N1 (the BIOS leaves COM1 alone until INT 14h)."""
    for port, value in ((0x3FB, 0x80), (0x3F8, 12), (0x3F9, 0), (0x3FB, 0x03)):
        c.call("io.write", {"port": port, "value": value})


def run_a_little(c, ns=20_000_000):
    op = c.call("execution.run_until", {"max_emulated_ns": ns})["operation_id"]
    c.call("execution.wait", {"operation_id": op, "timeout_ms": 20000})


def test_serial_status_write_read(com1):
    c = com1.client()
    c.call("execution.pause")
    program_uart(c)
    st = c.call("serial.status")
    assert st["port"] == "COM1" and st["base"] == 0x3F8 and st["irq"] == 4
    assert st["divisor"] == 12 and st["lcr"] == 3
    rev = c.call("state.get")["state_revision"]
    out = c.call("serial.write", {"data_base64": "Ug0="})
    assert out == {"accepted": 2, "rx_pending": 2, "state_revision": rev + 1}
    run_a_little(c)
    assert c.call("io.read", {"port": "0x3F8"})["value"] == ord("R")   # the guest side
    # the guest transmits: it appears in the output ring, readable again and again
    c.call("io.write", {"port": 0x3F8, "value": ord("A")})
    run_a_little(c)
    first = c.call("serial.read", {"offset": 0, "max_bytes": 16})
    assert base64.b64decode(first["data_base64"]) == b"A"
    assert first == {"offset": 0, "next_offset": 1, "data_base64": "QQ=="}
    assert c.call("serial.read", {"offset": 0}) == first
    assert c.call("serial.read", {"offset": 1})["data_base64"] == ""


@pytest.mark.parametrize("method, params, reason", [
    ("serial.write", {"data_base64": ""}, "INVALID_PARAMS"),
    ("serial.write", {"data_base64": base64.b64encode(bytes(4097)).decode()},
     "LIMIT_EXCEEDED"),
    ("serial.write", {"data_base64": "%%%"}, "INVALID_PARAMS"),
    ("serial.read", {"offset": 5}, "INVALID_PARAMS"),
    ("serial.read", {"max_bytes": 0}, "INVALID_PARAMS"),
    ("serial.read", {"max_bytes": 65537}, "LIMIT_EXCEEDED"),
])
def test_serial_rejections_change_nothing(com1, method, params, reason):
    c = com1.client()
    c.call("execution.pause")
    before = (c.call("serial.status"), c.call("state.get"))
    err = c.error(method, params)
    assert err["data"]["reason"] == reason
    assert (c.call("serial.status"), c.call("state.get")) == before


def test_serial_refuses_input_in_loopback(com1):
    c = com1.client()
    c.call("execution.pause")
    c.call("io.write", {"port": 0x3FC, "value": 0x10})            # MCR loopback
    before = c.call("serial.status")
    assert c.error("serial.write", {"data_base64": "QQ=="})["data"]["reason"] == \
        "PRECONDITION_FAILED"
    assert c.call("serial.status") == before


def test_serial_without_a_uart():
    f = RpcFixture(plugins=["cga"])
    try:
        c = f.client()
        for method, params in (("serial.status", {}), ("serial.read", {}),
                               ("serial.write", {"data_base64": "QQ=="})):
            assert c.error(method, params)["data"]["reason"] == "DEVICE_ABSENT"
    finally:
        f.close()


def test_joystick_on_the_game_port():
    f = machine(["cga", "gameport"])
    try:
        c = f.client()
        sticks = c.call("input.joystick.state")["joysticks"]
        assert [s["joystick"] for s in sticks] == [0, 1]
        params = {"joystick": 1, "x": -1, "y": 0.5, "buttons": [True, False]}
        assert c.error("input.joystick", params)["data"]["reason"] == "TARGET_NOT_PAUSED"
        rev = c.call("execution.pause")["state_revision"]
        out = c.call("input.joystick", params)
        assert out["state_revision"] == rev + 1
        assert out["joysticks"][1] == {"joystick": 1, "x": -1.0, "y": 0.5,
                                       "buttons": [True, False]}
        assert c.call("input.state")["joysticks"] == out["joysticks"]
        for bad in ({**params, "x": 1.5}, {**params, "joystick": 2},
                    {**params, "buttons": [True]}, {**params, "y": "0.5"},
                    {**params, "buttons": [1, 0]}):
            assert c.error("input.joystick", bad)["code"] == -32602
        assert c.call("input.joystick.state")["joysticks"] == out["joysticks"]
    finally:
        f.close()
