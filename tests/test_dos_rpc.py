"""The spec's fixture (tests/guest/dos/agent_fixture.asm) over TCP: a
machine whose built-in DOS stopped the program on its first instruction,
driven through the real RPC server (state, step, memory, continue), and the
``dos`` method group (status, memory map)."""

import base64
import hashlib
import shutil
import threading
import time

import pytest

from guest import dos as progs
from pypc_core import rpc
from pypc_core.dos import DosConfig
from pypc_core.machine import CPU_HZ, Machine, MachineConfig
from rpc_client import Client, RpcFixture


class DosRpcFixture:
    """A DOS machine paused at its program's entry, its RPC server on a free
    port and the machine thread."""

    def __init__(self, folder, program):
        cfg = DosConfig(drives={"C": str(folder)}, program=program, break_at_entry=True)
        self.machine = Machine(MachineConfig(plugins=["cga"], dos=cfg))
        stop = self.machine.run_for(5 * CPU_HZ)
        assert stop.kind == "breakpoint" and stop.detail["address"] == \
            self.machine.dos.entry_breakpoint
        self.machine.dos.clear_entry_breakpoint()
        self.controller, self.server = rpc.start(self.machine, port=0)
        self.controller.running = False            # stopped at the entry
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.controller.serve_forever,
                                       args=(self.stop,), daemon=True)
        self.thread.start()
        self.clients = []

    def client(self):
        c = Client(self.server.port, self.server.schemas)
        self.clients.append(c)
        return c

    def close(self):
        for c in self.clients:
            c.close()
        self.stop.set()
        self.thread.join(timeout=30)
        self.server.close()
        self.machine.close()


@pytest.fixture
def fx(tmp_path):
    shutil.copy(progs.path("agent_fixture"), tmp_path / "AGENTFIX.COM")
    f = DosRpcFixture(tmp_path, "C:\\AGENTFIX.COM")
    yield f
    f.close()


def step(c):
    op = c.call("execution.step", {"mode": "into"})["operation_id"]
    return c.call("execution.wait", {"operation_id": op, "timeout_ms": 5000})


def seg(segment, offset):
    return {"space": "segmented", "segment": segment, "offset": offset}


def test_fixture_entry_step_and_data_over_tcp(fx):
    c = fx.client()
    regs = c.call("state.get_registers")
    assert regs["ip"] == 0x0100
    cs = regs["segments"]["cs"]
    assert regs["segments"]["ds"] == cs
    assert c.call("memory.read", {"address": seg(cs, 0), "length": 2})["data_base64"] == \
        base64.b64encode(b"\xcd\x20").decode()
    assert step(c)["state"] == "stopped"
    regs = c.call("state.get_registers")
    assert regs["general"]["ax"] == 0x1234 and regs["ip"] == 0x0103
    for _ in range(4):
        step(c)
    data = c.call("memory.read", {"address": seg(cs, 0x0200), "length": 4})
    assert base64.b64decode(data["data_base64"])[:3] == b"\x41\x43\x42"


def test_breakpoint_at_cs_0106_over_tcp(fx):
    c = fx.client()
    cs = c.call("state.get_registers")["segments"]["cs"]
    bp = c.call("breakpoints.create", {"kind": "execution", "address": seg(cs, 0x0106)})
    op = c.call("execution.continue")["operation_id"]
    done = c.call("execution.wait", {"operation_id": op, "timeout_ms": 20000})
    assert done["state"] == "stopped"
    stop = done["stop_reason"]
    assert stop["kind"] == "breakpoint" and stop["breakpoint_id"] == bp["breakpoint_id"]
    regs = c.call("state.get_registers")
    assert (regs["segments"]["cs"], regs["ip"]) == (cs, 0x0106)
    assert regs["general"]["bx"] == 0x5678
    assert [b["breakpoint_id"] for b in c.call("breakpoints.list")["breakpoints"]] == \
        [bp["breakpoint_id"]]


def test_memory_write_then_read_agree_over_tcp(fx):
    c = fx.client()
    ds = c.call("state.get_registers")["segments"]["ds"]
    data = bytes([1, 2, 3, 4])
    wrote = c.call("memory.write", {"address": seg(ds, 0x0200),
                                    "data_base64": base64.b64encode(data).decode()})
    back = c.call("memory.read", {"address": seg(ds, 0x0200), "length": 4})
    assert base64.b64decode(back["data_base64"]) == data
    assert back["sha256"] == wrote["after_sha256"] == hashlib.sha256(data).hexdigest()


def test_dos_status_and_memory_map_over_tcp(fx):
    c = fx.client()
    status = c.call("dos.status")
    assert status["booted"] and not status["exited"] and "exit_code" not in status
    assert status["program"] == "C:\\AGENTFIX.COM"
    psp = c.call("state.get_registers")["segments"]["cs"]
    assert status["current_psp"] == psp
    blocks = c.call("dos.memory_map")["blocks"]
    program = [b for b in blocks if b["segment"] == psp]
    assert program and program[0]["owner"] == psp and program[0]["name"] == "AGENTFIX"
    assert blocks[-1]["last"] and not any(b["last"] for b in blocks[:-1])
    c.call("execution.continue")
    deadline = time.monotonic() + 30
    while not c.call("dos.status")["exited"]:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    status = c.call("dos.status")
    assert status["exit_code"] == 0
    # the program's blocks went back to the arena
    assert [b["owner"] for b in c.call("dos.memory_map")["blocks"]] == [0]


def test_dos_methods_without_the_dos_are_unsupported():
    f = RpcFixture()
    try:
        c = f.client()
        for method in ("dos.status", "dos.memory_map"):
            err = c.error(method)
            assert err["code"] == -32602 and err["data"]["reason"] == "UNSUPPORTED"
    finally:
        f.close()
