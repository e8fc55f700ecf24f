"""Conformance audit of the JSON-RPC server against the contract
(../shared/spec/003_ef4d7f3b1308ed08.txt, lines 1-400: transport, envelope,
errors, capabilities, session.status, state.*, memory.*, io.*, input.*,
keyboard.scancode, video.*) and COMPAT.md (Common, Capabilities, State/memory/
observation, Video, I/O/input).  Each test checks one statement (or a small
group) that the other RPC tests leave out; the comment names the contract
line ("L147") or the COMPAT section.  Everything goes over a real socket to
a real machine."""

import base64
import collections
import hashlib
import json
import threading
import time

import pytest

from pypc_core import rpc
from pypc_core.machine import Machine, MachineConfig
from pypc_core.plugins import DEVICE_GROUP, PluginManager
from pypc_core.rpc.controller import Controller
from pypc_core.rpc.server import collect_methods
from rpc_client import Client, RpcFixture, served, warm_up_core
from rpc_fixtures import c  # noqa: F401  (a fixture)

AVAILABLE = set(PluginManager().available(DEVICE_GROUP))

# L96-108: the capabilities example's method list, in its order (written out
# from the contract, not imported from rpc_methods/agent.py: the check below
# compares the server with the contract, not the server with itself)
CONTRACT_METHODS = [
    "agent.capabilities", "emulator.info", "state.get_registers",
    "serial.status", "serial.write", "serial.read",
    "state.get", "state.observe", "state.set_registers", "session.status", "memory.read",
    "memory.write", "video.text", "video.snapshot", "video.snapshot.read",
    "video.history.start", "video.history.read", "video.history.stop",
    "io.read", "io.write", "input.keyboard", "keyboard.scancode", "input.state",
    "input.joystick", "input.joystick.state",
    "execution.pause", "execution.continue", "execution.go",
    "execution.run_until", "execution.wait", "execution.step",
    "breakpoints.create", "breakpoints.list", "breakpoints.delete",
    "trace.start", "trace.read", "trace.stop",
    "hardware.trace.start", "hardware.trace.read", "hardware.trace.stop",
    "machine.snapshot.export", "machine.snapshot.import"]

REGISTERS = ("ax", "bx", "cx", "dx", "sp", "bp", "si", "di",
             "cs", "ds", "es", "ss", "ip", "flags")
CODE = 0x2000                       # segment of the guest snippets


def need(*plugins):
    missing = [p for p in plugins if p not in AVAILABLE]
    if missing:
        pytest.skip(f"device plugins not installed: {missing}")


@pytest.fixture(scope="module")
def fx():
    need("cga", "uart", "gameport")
    f = RpcFixture(plugins=["cga", "uart", "gameport"])
    yield f
    f.close()


@pytest.fixture(scope="module")
def vga():
    need("vga")
    f = RpcFixture(plugins=["vga"])
    yield f
    f.close()


@pytest.fixture
def v(vga):
    client = vga.client()
    client.call("execution.pause")
    yield client
    client.close()
    vga.clients.remove(client)


# -- helpers --------------------------------------------------------------------

def b64(data):
    return base64.b64encode(bytes(data)).decode("ascii")


def rev(c):
    return c.call("state.get")["state_revision"]


def set_csip(c, cs, ip):
    """CS:IP to a snippet, with a stack of its own at 3000:FFF0."""
    r = c.call("state.get")
    guard = {"cs": r["segments"]["cs"], "ip": r["ip"], "ss": r["segments"]["ss"],
             "sp": r["general"]["sp"]}
    c.call("state.set_registers", {"expected_state_revision": r["state_revision"],
                                   "expected": guard,
                                   "set": {"cs": cs, "ip": ip, "ss": 0x3000, "sp": 0xFFF0}})


def run_code(c, code, offset=0):
    """Run ``code`` (ending in ``jmp $``) at CODE:offset until it reaches
    that jump; leaves the machine paused there."""
    assert code[-2:] == b"\xEB\xFE"
    c.call("execution.pause")
    c.call("memory.write", {"address": (CODE << 4) + offset, "data_base64": b64(code)})
    set_csip(c, CODE, offset)
    bp = c.call("breakpoints.create", {"address": {
        "space": "segmented", "segment": CODE, "offset": offset + len(code) - 2}})
    op = c.call("execution.continue")["operation_id"]
    for _ in range(20):
        done = c.call("execution.wait", {"operation_id": op, "timeout_ms": 30000})
        if not done.get("running"):
            break
    c.call("breakpoints.delete", {"breakpoint_id": bp["breakpoint_id"]})
    assert done["stop_reason"]["kind"] == "breakpoint", done


def cga_text_mode(c, mode=0x29):
    """80x25 (or ``mode``) text with the CRTC start address at 0."""
    c.call("execution.pause")
    c.call("io.write", {"port": 0x3D8, "value": mode})
    for index in (12, 13):
        c.call("io.write", {"port": 0x3D4, "value": index})
        c.call("io.write", {"port": 0x3D5, "value": 0})


def program_uart(c):
    """COM1 at 9600 baud, 8N1 (flow-controlled, the rate changes nothing
    for the RPC's bytes)."""
    for port, value in ((0x3FB, 0x80), (0x3F8, 12), (0x3F9, 0), (0x3FB, 0x03)):
        c.call("io.write", {"port": port, "value": value})


def bios_mode(c, mode):
    """INT 10h AH=00h on the VGA's own BIOS."""
    run_code(c, bytes([0xB8, mode, 0x00, 0xCD, 0x10, 0xEB, 0xFE]), offset=0x100)


# -- transport, envelope, errors (L15-L28) ----------------------------------------

def test_requests_see_the_cpu_at_an_instruction_boundary(c):
    # L15/L147: a request is served at an instruction boundary, so a register
    # read while the guest runs is coherent: in "cli / 1: inc ax / inc bx /
    # jmp 1" AX - BX is 0 or 1 and IP is one of its four instructions (the
    # first read may come before the CLI has run)
    c.call("execution.pause")
    c.call("memory.write", {"address": (CODE << 4) + 0x600,
                            "data_base64": b64([0xFA, 0x40, 0x43, 0xEB, 0xFC])})
    set_csip(c, CODE, 0x600)
    r = c.call("state.get")
    c.call("state.set_registers", {"expected_state_revision": r["state_revision"],
                                   "expected": {"ax": r["general"]["ax"],
                                                "bx": r["general"]["bx"]},
                                   "set": {"ax": 0, "bx": 0}})
    c.call("execution.continue")
    for _ in range(300):
        r = c.call("state.get_registers")
        g = r["general"]
        assert (g["ax"] - g["bx"]) & 0xFFFF in (0, 1), r
        assert r["segments"]["cs"] == CODE and r["ip"] in (0x600, 0x601, 0x602, 0x603), r
    c.call("execution.pause")
    assert r["general"]["ax"] > 0
    idle(c)


def test_handler_failure_is_32603_and_the_server_keeps_serving():
    # L26: -32603 (handler error) -- a method whose handler raises
    def broken(ctl, params):
        raise RuntimeError("boom")
    broken.rpc_schema = {"params": {"type": "object"}, "result": {"type": "object"}}
    warm_up_core()
    m = Machine(MachineConfig(plugins=["cga"]))
    ctl = Controller(m)
    methods = collect_methods(m.plugin_manager)
    methods["audit.broken"] = broken
    with served(ctl, methods) as srv:
        cl = Client(srv.port, srv.schemas)
        try:
            err = cl.error("audit.broken", {})
            assert err["code"] == -32603 and err["data"]["reason"] == "INTERNAL_ERROR"
            assert "boom" in err["message"]
            assert cl.call("session.status")["session_id"] == "pypc"
        finally:
            cl.close()
            m.close()


def test_non_ascii_utf8_in_a_request_is_read_as_utf8(c):
    # L15: each request is one UTF-8 JSON object -- a non-ASCII string is a
    # value like any other (here a refused session_id), not a parse error
    c.send_raw('{"jsonrpc":"2.0","id":"é","method":"session.status","params":'
               '{"session_id":"pÿpc"}}\n'.encode("utf-8"))
    reply = c.read_reply()
    assert reply["id"] == "é" and reply["error"]["code"] == -32602


def test_number_fields_take_every_int_base_form(c):
    # L28: numbers are JSON integers or strings for int(value, 0)
    cga_text_mode(c)
    r = c.call("state.get")
    def forms(n):
        return [n, str(n), hex(n), oct(n), bin(n), f" {hex(n).upper().replace('X', 'x')} "]
    reads = [c.call("memory.read", {"address": a, "length": n})
             for a, n in zip(forms(0xF0010), forms(0x7B))]
    assert all(x == reads[0] for x in reads) and reads[0]["byte_count"] == 0x7B
    ports = {c.call("io.read", {"port": p})["port"] for p in forms(0x3DA)}
    assert ports == {0x3DA}
    pages = {c.call("video.text", {"page": p})["page"] for p in forms(3)}
    assert pages == {3}
    snap = c.call("video.snapshot")["snapshot_id"]
    chunks = [c.call("video.snapshot.read", {"snapshot_id": snap, "component": "vram",
                                             "offset": o, "length": n})
              for o, n in zip(forms(0x10), forms(9))]
    assert all(x == chunks[0] for x in chunks) and chunks[0]["offset"] == 0x10
    assert c.call("video.history.start", {"capacity": "0b1111011"})["capacity"] == 123
    assert c.call("video.history.read", {"cursor": "0x0", "limit": "0x10"})["events"] == []
    c.call("video.history.stop")
    out = c.call("state.observe", {"expected_state_revision": hex(rev(c)),
                                   "memory": [{"address": "0x400", "length": "0b10"}]})
    assert out["memory"][0]["byte_count"] == 2
    r = c.call("state.get")
    out = c.call("state.set_registers", {"expected_state_revision": str(r["state_revision"]),
                                         "expected": {"bx": hex(r["general"]["bx"])},
                                         "set": {"bx": "0o17"}})
    assert out["after"]["general"]["bx"] == 0o17
    assert c.call("keyboard.scancode", {"scan_code": "0b1111", "pressed": False})[
        "accepted"] == 1
    out = c.call("input.joystick", {"joystick": "0x1", "x": 0, "y": 0,
                                    "buttons": [False, False]})
    assert out["joysticks"][1]["joystick"] == 1


@pytest.mark.parametrize("method, params", [
    ("memory.read", {"address": 0x400, "length": 2.0}),
    ("memory.read", {"address": 0x400, "length": True}),
    ("memory.read", {"address": "0x400 bytes"}),
    ("io.read", {"port": True}),
    ("io.read", {"port": 96.0}),
    ("video.text", {"page": False}),
    ("keyboard.scancode", {"scan_code": 30.0}),
    ("video.history.start", {"capacity": 1.5}),
])
def test_number_fields_refuse_booleans_floats_and_words(c, method, params):
    # COMPAT Common: booleans and floats are rejected; nothing changes
    c.call("execution.pause")
    before = c.call("state.get")
    err = c.error(method, params)
    assert err["code"] == -32602
    assert c.call("state.get") == before


# -- agent.capabilities (L76-L113) ---------------------------------------------------

def test_capabilities_list_the_contract_methods_in_contract_order(fx, c):
    # L96-108 and COMPAT Capabilities: implemented contract methods first, in
    # the contract's order; extensions appended
    caps = c.call("agent.capabilities", {})
    assert caps["methods"][:len(CONTRACT_METHODS)] == CONTRACT_METHODS
    assert caps["protocol"] == "JSON-RPC 2.0 over localhost JSON-lines"
    assert caps["address_spaces"] == ["physical", "linear", "segmented"]
    assert caps["cpu"] == "8088" and caps["memory_bytes"] == 1048576
    assert set(caps) == {"protocol", "endpoint", "cpu", "memory_bytes", "video_adapters",
                         "address_spaces", "limits", "methods"}


def test_video_adapters_are_in_contract_order_whichever_card_runs(c, v):
    # L91: "video_adapters":["CGA","VGA"] -- the same list on a CGA and a VGA
    # machine (session.status.target.video names the one in use)
    assert c.call("agent.capabilities")["video_adapters"][:2] == ["CGA", "VGA"]
    assert v.call("agent.capabilities")["video_adapters"][:2] == ["CGA", "VGA"]
    assert v.call("session.status")["target"]["video"] == "VGA"


# -- session.status (L115-L128) -------------------------------------------------------

def test_status_clock_and_revision_are_the_registers(c):
    # L119-126: state_revision and clock of the one implicit session
    c.call("execution.pause")
    st = c.call("session.status", {"session_id": "pypc"})
    regs = c.call("state.get")
    assert st["clock"] == regs["clock"] and st["state_revision"] == regs["state_revision"]
    assert st["state"] == "stopped" and st["last_stop"]["kind"] == "pause"
    for other in ("PYPC", "", "pypc ", None, 1):
        assert c.error("session.status", {"session_id": other})["code"] == -32602


def test_a_halted_guest_is_still_running(c):
    # L128: stopped means paused by the execution API, not a guest that stopped
    c.call("execution.pause")
    c.call("memory.write", {"address": (CODE << 4) + 0x200,
                            "data_base64": b64([0xFA, 0xF4, 0xEB, 0xFE])})   # cli / hlt
    set_csip(c, CODE, 0x200)
    c.call("execution.continue")
    for _ in range(2000):
        regs = c.call("state.get")
        if regs["in_hlt"]:
            break
        time.sleep(0.005)
    assert regs["in_hlt"] is True and regs["ip"] == 0x202
    st = c.call("session.status")
    assert st["state"] == "running" and st["last_stop"] is None
    c.call("execution.pause")


# -- state.get_registers (L130-L151) ---------------------------------------------------

def test_the_first_request_sees_the_reset_state():
    # L136-145: the reset register object -- general registers and DS/ES/SS 0,
    # clock 0, not halted, revision 0, flags_text "--------", CS:IP at FFFF0h.
    # (pypc resets as the 8088 does, CS:IP = FFFF:0000 and FLAGS = F002h; the
    # example's F000:FFF0 and 0002h name the same reset address and flags.)
    warm_up_core()
    m = Machine(MachineConfig(plugins=["cga"]))
    ctl, srv = rpc.start(m, port=0)
    cl = Client(srv.port, srv.schemas)
    stop = threading.Event()
    t = threading.Thread(target=ctl.serve_forever, args=(stop,), daemon=True)
    try:
        for rid, method in ((1, "state.get_registers"), (2, "session.status")):
            cl.send_raw(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method,
                                    "params": {}}).encode() + b"\n")
        while ctl.queue.qsize() < 2:          # both queued before the machine runs
            time.sleep(0.005)
        t.start()
        regs = cl.read_reply()["result"]
        status = cl.read_reply()["result"]
        assert regs["general"] == dict.fromkeys(("ax", "bx", "cx", "dx", "sp", "bp",
                                                 "si", "di"), 0)
        assert {k: regs["segments"][k] for k in ("ds", "es", "ss")} == \
            {"ds": 0, "es": 0, "ss": 0}
        assert (regs["segments"]["cs"] << 4) + regs["ip"] == 0xFFFF0
        assert regs["flags"] & 0x0FFF == 2 and regs["flags_text"] == "--------"
        assert regs["clock"] == 0 and regs["in_hlt"] is False and regs["state_revision"] == 0
        # (the second may be served after a first slice: the running loop
        # gives requests 2 ms between slices)
        assert status["state"] == "running" and status["last_stop"] is None
    finally:
        cl.close()
        stop.set()
        t.join(timeout=30)
        srv.close()
        m.close()


def test_reads_and_debugger_setup_leave_the_revision(c, tmp_path):
    # COMPAT Common: nothing but Ticks and the listed mutations changes the
    # revision (breakpoints, traces, video reads, pause, export do not)
    cga_text_mode(c)
    r0 = c.call("state.get")
    calls = [
        ("agent.capabilities", {}), ("emulator.info", {}), ("session.status", {}),
        ("state.get_registers", {}), ("memory.read", {"address": 0, "length": 4096}),
        ("state.observe", {"expected_state_revision": r0["state_revision"],
                           "memory": [{"address": 0, "length": 16}],
                           "video_text": {}, "video_memory": True}),
        ("video.text", {}), ("video.text", {"page": 2}), ("video.snapshot", {}),
        ("video.history.start", {}), ("video.history.read", {}), ("video.history.stop", {}),
        ("input.state", {}), ("input.joystick.state", {}), ("serial.status", {}),
        ("serial.read", {"offset": 0}),
        ("breakpoints.create", {"address": {"space": "physical", "offset": 0x12345}}),
        ("breakpoints.list", {}), ("trace.start", {"instruction_count": 4}),
        ("trace.read", {}), ("trace.stop", {}), ("hardware.trace.start", {}),
        ("hardware.trace.read", {}), ("hardware.trace.stop", {}), ("execution.pause", {}),
        ("machine.snapshot.export", {"path": str(tmp_path / "m.zip"),
                                     "expected_state_revision": r0["state_revision"]}),
    ]
    for method, params in calls:
        c.call(method, params)
        assert c.call("state.get") == r0, method
    for bp in c.call("breakpoints.list")["breakpoints"]:
        c.call("breakpoints.delete", {"breakpoint_id": bp["breakpoint_id"]})
    assert c.call("state.get") == r0


def test_each_mutation_advances_the_revision_once_without_running(c):
    # L147 and COMPAT Common: +1 per successful set_registers, memory.write,
    # io.write, io.read, serial.write, keyboard batch (however many events)
    # and input.joystick; the CPU does not run
    c.call("execution.pause")
    program_uart(c)
    r = c.call("state.get")
    clock = r["clock"]
    mutations = [
        ("state.set_registers", lambda n: {"expected_state_revision": n,
                                           "expected": {"si": r["general"]["si"]},
                                           "set": {"si": r["general"]["si"]}}),
        ("memory.write", lambda n: {"address": 0x600, "data_base64": b64(b"\0" * 40)}),
        ("memory.write", lambda n: {"address": "0xFE000", "data_base64": "AA=="}),   # ROM
        ("io.write", lambda n: {"port": 0x2E0, "value": 0}),          # no device there
        ("io.read", lambda n: {"port": 0x2E0}),
        ("serial.write", lambda n: {"data_base64": "QQ=="}),
        ("input.keyboard", lambda n: {"events": [{"scan_code": 0x2C, "pressed": True},
                                                 {"scan_code": 0x2C, "pressed": False},
                                                 {"scan_code": 0x2D, "pressed": True},
                                                 {"scan_code": 0x2D, "pressed": False}]}),
        ("keyboard.scancode", lambda n: {"scan_code": 0x2E, "pressed": False}),
        ("input.joystick", lambda n: {"joystick": 0, "x": 0.25, "y": -0.25,
                                      "buttons": [True, True]}),
    ]
    n = r["state_revision"]
    for method, params in mutations:
        out = c.call(method, params(n))
        n += 1
        got = out["after"]["state_revision"] if method == "state.set_registers" \
            else out["state_revision"]
        assert got == n, method
        assert c.call("state.get")["clock"] == clock, method


# -- state.set_registers (L153-L172) -----------------------------------------------------

def test_all_fourteen_register_names_are_writable_in_one_request(c):
    # L165: ax bx cx dx sp bp si di cs ds es ss ip flags
    c.call("execution.pause")
    r = c.call("state.get")
    current = {**r["general"], **r["segments"], "ip": r["ip"], "flags": r["flags"]}
    new = {name: (0x1111 * (i + 1)) & 0xFFFF for i, name in enumerate(REGISTERS)}
    new["flags"] = 0xF0D7                          # every 8088 flag bit that sticks
    out = c.call("state.set_registers", {"expected_state_revision": r["state_revision"],
                                         "expected": current, "set": new})
    after = out["after"]
    got = {**after["general"], **after["segments"], "ip": after["ip"], "flags": after["flags"]}
    assert got == new
    assert after["flags_text"] == "---szapc"
    assert out["before"] == r
    c.call("state.set_registers", {"expected_state_revision": after["state_revision"],
                                   "expected": new, "set": current})


@pytest.mark.parametrize("flags, text", [
    (0x0002, "--------"), (0x0096, "---s-ap-"), (0x0F02, "oIT-----"), (0x0E57, "oI--zapc"),
    (0x0402, "--------")])
def test_flags_text_letters(c, flags, text):
    # COMPAT Common: O I T S Z A P C as o I T s z a p c, clear as '-', DF not shown
    c.call("execution.pause")
    r = c.call("state.get")
    out = c.call("state.set_registers", {"expected_state_revision": r["state_revision"],
                                         "expected": {"flags": r["flags"]},
                                         "set": {"flags": flags}})["after"]
    assert out["flags_text"] == text and out["flags"] & 0x0FFF == flags
    c.call("state.set_registers", {"expected_state_revision": out["state_revision"],
                                   "expected": {"flags": out["flags"]},
                                   "set": {"flags": r["flags"]}})


@pytest.mark.parametrize("case, params, reason", [
    # running beats every other fault
    ("running", {"expected": {"eax": 0}, "set": {}}, "TARGET_NOT_PAUSED"),
    # then the revision
    ("stale", {"expected": {}, "set": {"eax": 1}}, "REVISION_MISMATCH"),
    # then non-empty expected and set
    ("paused", {"expected": {}, "set": {"eax": 1}}, "INVALID_PARAMS"),
    ("paused", {"expected": {"ax": "CUR"}, "set": {}}, "INVALID_PARAMS"),
    # then per register, in order: known, guarded, guard matches, 16-bit
    ("paused", {"expected": {"ax": "CUR"}, "set": {"eax": 1, "bx": 1}}, "INVALID_PARAMS"),
    ("paused", {"expected": {"ax": "CUR"}, "set": {"bx": 0x10000, "ax": 1}},
     "PRECONDITION_FAILED"),
    ("paused", {"expected": {"ax": "BAD"}, "set": {"ax": 0x10000}}, "PRECONDITION_FAILED"),
    ("paused", {"expected": {"ax": "CUR", "bx": "BAD"}, "set": {"ax": 0x10000, "bx": 1}},
     "INVALID_PARAMS"),
    ("paused", {"expected": {"ax": "CUR", "bx": "BAD"}, "set": {"bx": 1, "ax": 0x10000}},
     "PRECONDITION_FAILED"),
])
def test_set_registers_checks_in_the_compat_order(c, case, params, reason):
    # COMPAT State: paused, revision, expected/set non-empty, then per
    # register: known name, guarded, current value matches, new value 16-bit
    if case == "running":
        c.call("execution.continue")
    else:
        c.call("execution.pause")
    r = c.call("state.get")
    cur = {**r["general"], **r["segments"]}
    expected = {k: (cur[k] if v == "CUR" else (cur[k] + 1) & 0xFFFF if v == "BAD" else v)
                for k, v in params["expected"].items()}
    req = {"expected_state_revision": r["state_revision"] + (5 if case == "stale" else 0),
           "expected": expected, "set": params["set"]}
    err = c.error("state.set_registers", req)
    assert err["code"] == -32602 and err["data"]["reason"] == reason, err
    c.call("execution.pause")
    after = c.call("state.get")
    assert {**after["general"], **after["segments"]} == cur or case == "running"


# -- state.observe (L174-L189) ------------------------------------------------------------

def test_observe_window_limits_are_inclusive(c):
    # L183: at most 16 windows, each 1..65536 bytes, at most 65536 in total
    c.call("execution.pause")
    n = rev(c)
    out = c.call("state.observe", {"expected_state_revision": n,
                                   "memory": [{"address": i * 4096, "length": 4096}
                                              for i in range(16)]})
    assert [m["address"] for m in out["memory"]] == [i * 4096 for i in range(16)]
    assert sum(m["byte_count"] for m in out["memory"]) == 65536
    out = c.call("state.observe", {"expected_state_revision": n,
                                   "memory": [{"address": 0xF0000, "length": 65536}]})
    assert out["memory"][0]["byte_count"] == 65536
    for bad in ([{"address": 0, "length": 0}],
                [{"address": {"space": "linear", "offset": "0xFFFFF"}, "length": 2}],
                [{"address": {"space": "segmented", "segment": "0xFFFF", "offset": 0},
                  "length": 32}],
                [{"address": 0, "length": 65536}, {"address": 0, "length": 1}],
                [{"length": 4}], "0x400", [0x400], None):
        err = c.error("state.observe", {"expected_state_revision": n, "memory": bad})
        assert err["code"] == -32602, bad
    assert rev(c) == n


def test_observe_video_memory_is_outside_the_window_budget(c):
    # L185: video_memory's bytes are separate from the 65536-byte budget; it
    # is the whole text backing store with address and adapter
    cga_text_mode(c)
    n = rev(c)
    out = c.call("state.observe", {"expected_state_revision": n,
                                   "memory": [{"address": 0, "length": 65536}],
                                   "video_memory": True})
    vm = out["video_memory"]
    assert out["memory"][0]["byte_count"] == 65536
    assert vm["adapter"] == "CGA" and vm["address"] == 0xB8000 and vm["byte_count"] == 16384
    data = base64.b64decode(vm["data_base64"])
    assert vm["data_hex"] == data.hex() and vm["sha256"] == hashlib.sha256(data).hexdigest()
    assert vm["state_revision"] == n
    assert data == base64.b64decode(c.call("memory.read", {"address": 0xB8000,
                                                           "length": 16384})["data_base64"])


def test_observe_allocates_no_video_snapshot_and_omits_unrequested_parts(c):
    # L176: no retained video snapshot; COMPAT: unrequested keys are absent
    c.call("execution.pause")
    n = rev(c)
    first = int(c.call("video.snapshot")["snapshot_id"].split("-")[1])
    out = c.call("state.observe", {"expected_state_revision": n, "video_text": {"page": 1},
                                   "video_memory": True})
    assert out["video_text"]["page"] == 1 and out["video_text"]["state_revision"] == n
    assert c.call("video.snapshot")["snapshot_id"] == f"snap-{first + 1}"
    out = c.call("state.observe", {"expected_state_revision": n, "video_memory": False})
    assert set(out) == {"state_revision", "registers", "memory"}
    assert rev(c) == n


@pytest.mark.parametrize("video_text", [None, True, [], "page", {"page": 0, "x": 1}])
def test_observe_video_text_must_be_a_selection_object(c, video_text):
    # L183: video_text, if supplied, is an object with only page or display_address
    c.call("execution.pause")
    n = rev(c)
    err = c.error("state.observe", {"expected_state_revision": n, "video_text": video_text})
    assert err["code"] == -32602 and rev(c) == n


def test_observe_copies_rom_as_memory_read_does(c):
    # L187: safe RAM and immutable ROM are copied directly
    c.call("execution.pause")
    n = rev(c)
    windows = [{"address": {"space": "linear", "offset": "0xFE000"}, "length": 8192},
               {"address": {"space": "segmented", "segment": "0x0040", "offset": "0x10"},
                "length": 32}]
    out = c.call("state.observe", {"expected_state_revision": n, "memory": windows})
    assert out["memory"] == [c.call("memory.read", w) for w in windows]


# -- memory.read / memory.write (L191-L238) -----------------------------------------------

@pytest.mark.parametrize("address, length", [
    ({"space": "linear", "offset": "0xFFFFF"}, 2),
    ({"space": "physical", "offset": 0xFFFF0}, 17),
    ({"space": "segmented", "segment": "0xFFFF", "offset": "0x0000"}, 17),
    ({"space": "segmented", "segment": 0, "offset": "0x10000"}, 1),
    ({"space": "linear", "offset": 0x100000}, 1),
])
def test_reads_never_wrap_past_1mib(c, address, length):
    # L203: physical/linear forms do not wrap; accesses stay inside 1 MiB;
    # segment and offset are 16-bit
    c.call("execution.pause")
    n = rev(c)
    assert c.error("memory.read", {"address": address, "length": length})["code"] == -32602
    err = c.error("memory.write", {"address": address, "data_base64": b64(bytes(length))})
    assert err["code"] == -32602 and rev(c) == n


def test_the_last_bytes_of_the_address_space(c):
    # L203: a block may end exactly at 1 MiB, in every address form
    c.call("execution.pause")
    a = c.call("memory.read", {"address": {"space": "linear", "offset": 0xFFFF0},
                               "length": 16})
    b = c.call("memory.read", {"address": {"space": "segmented", "segment": "0xFFFF",
                                           "offset": 0}, "length": 16})
    d = c.call("memory.read", {"address": {"space": "segmented", "segment": "0xF000",
                                           "offset": "0xFFF0"}, "length": "16"})
    assert a == b == d and a["address"] == 0xFFFF0


def test_memory_write_guard_and_result(c):
    # L228-236: expected_sha256 must match the current bytes (any hex case);
    # the result names the bytes before and after
    c.call("execution.pause")
    addr = {"space": "linear", "offset": "0x700"}
    old = c.call("memory.read", {"address": addr, "length": 3})
    out = c.call("memory.write", {"address": addr, "data_base64": b64(b"xyz"),
                                  "expected_sha256": old["sha256"].upper()})
    assert out["before_sha256"] == old["sha256"]
    assert out["after_sha256"] == hashlib.sha256(b"xyz").hexdigest()
    assert out["address"] == 0x700 and out["byte_count"] == 3
    assert c.call("memory.read", {"address": 0x700, "length": 3})["data_hex"] == b"xyz".hex()


# -- video.text (L240-L276) ------------------------------------------------------------

def test_cga_crtc_start_address_picks_the_active_page(c):
    # L242/L252 and COMPAT Video: the CRTC start address (in words on the
    # CGA) is the displayed page; page reads never touch the CRTC
    cga_text_mode(c)
    c.call("memory.write", {"address": 0xB8000 + 4000, "data_base64": b64(b"P\x07a\x07g\x07")})
    for index, value in ((12, 0x07), (13, 0xD0)):          # word 07D0h = byte 0FA0h
        c.call("io.write", {"port": 0x3D4, "value": index})
        c.call("io.write", {"port": 0x3D5, "value": value})
    t = c.call("video.text")
    assert (t["display_address"], t["page"], t["active_page"], t["is_active_page"]) == \
        (0xFA0, 1, 1, True)
    assert t["text"][0].startswith("Pag")
    zero = c.call("video.text", {"page": 0})
    assert zero["is_active_page"] is False and zero["active_page"] == 1
    snap = c.call("video.snapshot")
    assert snap["display_address"] == 0xFA0 and snap["active_page"] == 1
    assert c.call("video.text") == t                   # the page read changed nothing
    for index, value in ((12, 0x27), (13, 0xD0)):          # 27D0h words: wraps in 16 KiB
        c.call("io.write", {"port": 0x3D4, "value": index})
        c.call("io.write", {"port": 0x3D5, "value": value})
    assert c.call("video.text")["display_address"] == (0x27D0 * 2) & 0x3FFF
    cga_text_mode(c)


@pytest.mark.parametrize("mode, columns, pages, name", [
    (0x29, 80, 4, "Text80"), (0x28, 40, 8, "Text40"), (0x2A, 40, 8, "G320"),
    (0x1E, 80, 4, "G640"), (0x09, 80, 4, "Text80")])
def test_cga_pages_modes_and_mode_byte(c, mode, columns, pages, name):
    # L252: CGA 16 KiB = four 80-column or eight 40-column pages of
    # columns*25*2 bytes; COMPAT Video: mode names, graphics_mode = 3D8h;
    # L276: graphics modes still give 25 rows of raw characters
    cga_text_mode(c, mode)
    t = c.call("video.text")
    assert (t["columns"], t["page_count"], t["page_size_bytes"], t["mode"],
            t["graphics_mode"]) == (columns, pages, columns * 50, name, mode)
    assert len(t["text"]) == 25 and len(t["cells"]) == 25
    assert all(len(row) == columns for row in t["cells"])
    assert c.call("video.text", {"page": pages - 1})["page"] == pages - 1
    assert c.error("video.text", {"page": pages})["code"] == -32602
    snap = c.call("video.snapshot")
    assert (snap["video_mode"], snap["columns"], snap["rows"]) == (mode, columns, 25)
    cga_text_mode(c)


def test_text_rows_are_trimmed_cp437_with_controls_as_spaces(c):
    # L276: 25 strings, trimmed on the right, CP437 decoded; COMPAT: control
    # characters (< 32) show as spaces; cells keep the raw bytes
    cga_text_mode(c)
    row = bytes([0x01, 0x07, 0xB0, 0x07, 0xC9, 0x07, 0x41, 0x07, 0x00, 0x07, 0x82, 0x07])
    row += b" \x07" * 74
    c.call("memory.write", {"address": 0xB8000 + 160 * 24, "data_base64": b64(row)})
    t = c.call("video.text")
    assert t["text"][24] == " ░╔A é"
    cells = t["cells"][24]
    assert [x["code"] for x in cells[:6]] == [1, 0xB0, 0xC9, 0x41, 0, 0x82]
    assert [x["char"] for x in cells[1:3]] == ["░", "╔"]
    assert all(x["attribute"] == 7 for x in cells)


@pytest.mark.parametrize("mode", [0x29, 0x09])
def test_cga_cells_always_read_bit_7_as_blink(c, mode):
    # L276 and COMPAT Video ("CGA always has the blink bit"): low four bits
    # foreground, bits 4..6 background, bit 7 blink -- whatever 3D8h bit 5 says
    cga_text_mode(c, mode)
    c.call("memory.write", {"address": 0xB8000, "data_base64": b64(b"A\xF1B\x1EC\x8F")})
    cells = c.call("video.text")["cells"][0][:3]
    assert [(x["attribute"], x["foreground"], x["background"], x["blink"]) for x in cells] == \
        [(0xF1, 1, 7, True), (0x1E, 14, 1, False), (0x8F, 15, 0, True)]
    n = rev(c)
    obs = c.call("state.observe", {"expected_state_revision": n, "video_text": {}})
    assert obs["video_text"]["cells"][0][:3] == cells
    assert "cursor" not in c.call("video.text")           # L276: VGA adds a cursor
    cga_text_mode(c)


def test_vga_text_pages_word_start_and_cursor(v):
    # L252: VGA 32 KiB = eight 80-column pages; display_address is a byte
    # offset converted from the CRTC's word start address; L276 and COMPAT
    # Video: the cursor object
    bios_mode(v, 3)
    t = v.call("video.text")
    assert (t["columns"], t["page_count"], t["page_size_bytes"], t["mode"],
            t["graphics_mode"]) == (80, 8, 4000, "Text80", 3)
    assert set(t["cursor"]) == {"address", "start_scanline", "end_scanline", "enabled",
                                "visible", "blink_phase", "column", "row"}
    assert v.call("video.text", {"page": 7})["page"] == 7
    assert v.error("video.text", {"page": 8})["code"] == -32602
    for index, value in ((12, 0x07), (13, 0xD0)):
        v.call("io.write", {"port": 0x3D4, "value": index})
        v.call("io.write", {"port": 0x3D5, "value": value})
    t = v.call("video.text")
    assert (t["display_address"], t["active_page"], t["is_active_page"]) == (0xFA0, 1, True)
    bios_mode(v, 1)                                       # 40x25
    t = v.call("video.text")
    assert (t["columns"], t["page_count"], t["page_size_bytes"], t["mode"]) == \
        (40, 16, 2000, "Text40")
    bios_mode(v, 3)


def vga_blink(c, on):
    c.call("io.read", {"port": 0x3DA})                    # attribute flip-flop to index
    c.call("io.write", {"port": 0x3C0, "value": 0x10})    # mode control, palette off
    c.call("io.write", {"port": 0x3C0, "value": 0x0C if on else 0x04})   # line graphics
    c.call("io.write", {"port": 0x3C0, "value": 0x20})    # palette on again


def test_vga_blink_bit_follows_the_attribute_controller(v):
    # L276: VGA blink enabled -> bit 7 is blink; disabled -> fourth background bit
    bios_mode(v, 3)
    v.call("memory.write", {"address": 0xB8000, "data_base64": b64(b"A\xF1")})
    vga_blink(v, False)
    cell = v.call("video.text")["cells"][0][0]
    assert (cell["foreground"], cell["background"], cell["blink"]) == (1, 15, False)
    vga_blink(v, True)
    cell = v.call("video.text")["cells"][0][0]
    assert (cell["foreground"], cell["background"], cell["blink"]) == (1, 7, True)
    bios_mode(v, 3)


def test_vga_starts_with_blink_disabled():
    # COMPAT Video: "VGA starts with blink disabled"
    need("vga")
    f = RpcFixture(plugins=["vga"])
    try:
        c = f.client()
        c.call("execution.pause")
        c.call("memory.write", {"address": 0xB8000 + 3998, "data_base64": b64(b"Z\x9F")})
        cell = c.call("video.text")["cells"][24][79]
        assert (cell["code"], cell["background"], cell["blink"]) == (ord("Z"), 9, False)
    finally:
        f.close()


# -- video.snapshot (L278-L319) ------------------------------------------------------------

def test_cga_snapshot_fields(c):
    # L282-296: the CGA result; L298: font, graphics_vram and cursor are VGA's
    cga_text_mode(c)
    r = c.call("state.get")
    snap = c.call("video.snapshot", {})
    assert set(snap) == {"snapshot_id", "state_revision", "captured_ticks", "adapter",
                         "video_mode", "columns", "rows", "display_address", "active_page",
                         "text", "vram"}
    assert snap["captured_ticks"] == r["clock"] and snap["state_revision"] == r["state_revision"]
    assert (snap["adapter"], snap["video_mode"], snap["columns"], snap["rows"]) == \
        ("CGA", 0x29, 80, 25)
    text = c.call("video.snapshot.read", {"snapshot_id": snap["snapshot_id"],
                                          "component": "text", "offset": 0, "length": 65536})
    assert text["component_byte_count"] == snap["text"]["byte_count"] == text["byte_count"]
    assert text["component_sha256"] == snap["text"]["sha256"] == text["sha256"]
    err = c.error("video.snapshot.read", {"snapshot_id": snap["snapshot_id"],
                                          "component": "font"})
    assert err["code"] == -32602


def test_vga_mode_12h_snapshot_concatenates_the_four_planes(v):
    # L280/L305: mode 12h graphics_vram is planes 0..3, 64 KiB each (262144)
    bios_mode(v, 0x12)
    code = bytes([0xBA, 0xC4, 0x03, 0xB8, 0x02, 0x02, 0xEF,     # map mask: plane 1
                  0xB8, 0x00, 0xA0, 0x8E, 0xC0,
                  0x26, 0xC6, 0x06, 0x05, 0x00, 0x2A,           # mov byte es:[5], 2Ah
                  0xB8, 0x02, 0x0F, 0xEF,                       # all planes again
                  0xEB, 0xFE])
    run_code(v, code)
    snap = v.call("video.snapshot")
    assert snap["video_mode"] == 0x12
    assert snap["graphics_vram"]["byte_count"] == 262144
    assert snap["graphics_vram_layout"] == "planes_0_to_3_concatenated"
    assert snap["font"]["byte_count"] == 65536
    out = v.call("video.snapshot.read", {"snapshot_id": snap["snapshot_id"],
                                         "component": "graphics_vram", "offset": 65536,
                                         "length": 8})
    assert base64.b64decode(out["data_base64"])[5] == 0x2A
    assert out["component_byte_count"] == 262144
    # L276: graphics modes still give the raw character reading, 25 rows
    t = v.call("video.text")
    assert (t["mode"], t["graphics_mode"], len(t["text"]), len(t["cells"])) == \
        ("G640", 0x12, 25, 25)
    # L203: memory.read observes device mappings through the bus: with the
    # graphics controller's read map on plane 1, A0005h reads plane 1's byte
    v.call("io.write", {"port": 0x3CE, "value": 4})
    v.call("io.write", {"port": 0x3CF, "value": 1})
    assert v.call("memory.read", {"address": "0xA0005"})["data_hex"] == "2a"
    v.call("io.write", {"port": 0x3CF, "value": 0})
    assert v.call("memory.read", {"address": "0xA0005"})["data_hex"] == "00"
    bios_mode(v, 3)


# -- video.history (L321-L327) ---------------------------------------------------------------

def test_history_capacity_default_and_bounds(c):
    # L323: capacity 1..1,000,000, default 500,000
    c.call("execution.pause")
    assert c.call("video.history.start", {})["capacity"] == 500_000
    for bad in (0, -1, "0x0"):
        assert c.error("video.history.start", {"capacity": bad})["code"] == -32602
    assert c.call("video.history.start", {"capacity": 1_000_000})["capacity"] == 1_000_000
    assert c.call("video.history.start", {"capacity": 1})["capacity"] == 1
    c.call("video.history.stop")


def test_history_polls_newer_events_with_next_sequence(c):
    # L325: with next_cursor null and recording on, next_sequence - 1 as the
    # cursor of a later poll gives only the newer events
    cga_text_mode(c)
    h = c.call("video.history.start", {})
    c.call("memory.write", {"address": 0xB8000, "data_base64": b64(b"\x01\x02")})
    page = c.call("video.history.read", {"history_id": h["history_id"], "cursor": None,
                                         "limit": 1024})
    assert page["next_cursor"] is None and page["active"] is True
    mark = page["next_sequence"] - 1
    c.call("memory.write", {"address": 0xB8010, "data_base64": b64(b"\x03")})
    newer = c.call("video.history.read", {"cursor": mark})
    assert [(e["kind"], e["address"], e["new"]) for e in newer["events"]] == \
        [("text", 0x10, 3)]
    assert newer["events"][0]["sequence"] == mark + 1
    assert c.call("video.history.read", {"cursor": mark + 1})["events"] == []
    stopped = c.call("video.history.stop", {"history_id": h["history_id"]})
    assert stopped["events"] == mark + 1


def test_history_of_guest_port_writes_gives_the_width(c):
    # L325: a port event's old is the transfer width (1 or 2), new the value,
    # for the guest's own OUTs
    cga_text_mode(c)
    c.call("video.history.start", {})
    code = bytes([0xBA, 0xD9, 0x03, 0xB0, 0x05, 0xEE,          # out 3D9h, al=5
                  0xBA, 0xD4, 0x03, 0xB8, 0x0E, 0x0A, 0xEF,    # out 3D4h, ax=0A0Eh
                  0xEB, 0xFE])
    run_code(c, code, offset=0x300)
    events = [(e["kind"], e["address"], e["old"], e["new"])
              for e in c.call("video.history.read")["events"]]
    assert events == [("port", 0x3D9, 1, 5), ("port", 0x3D4, 2, 0x0A0E)]
    c.call("video.history.stop")


def test_a_new_start_replaces_the_history(c):
    # L327: the stream stays readable until another start; a new history
    # counts from sequence 1
    cga_text_mode(c)
    first = c.call("video.history.start", {})
    c.call("memory.write", {"address": 0xB8000, "data_base64": b64(b"\x05\x06")})
    c.call("video.history.stop")
    assert len(c.call("video.history.read", {"history_id": first["history_id"]})["events"]) \
        == 2
    second = c.call("video.history.start", {})
    assert second["history_id"] != first["history_id"] and second["first_sequence"] == 1
    err = c.error("video.history.read", {"history_id": first["history_id"]})
    assert err["code"] == -32602
    assert c.call("video.history.read")["events"] == []
    c.call("video.history.stop")


def test_history_read_limit_default_and_what_is_journaled(c):
    # COMPAT Video: read limit 1..4096, default 1024; text events only when
    # a byte changes; port events for the video card's ports only
    cga_text_mode(c)
    vram = base64.b64decode(c.call("memory.read", {"address": 0xB8000,
                                                   "length": 1100})["data_base64"])
    h = c.call("video.history.start", {})
    c.call("memory.write", {"address": 0xB8000, "data_base64": b64(vram)})   # same bytes
    c.call("io.write", {"port": 0x2E0, "value": 1})                          # not video
    c.call("io.read", {"port": 0x3DA})                                       # a read
    assert c.call("video.history.read")["events"] == []
    c.call("memory.write", {"address": 0xB8000,
                            "data_base64": b64(bytes(x ^ 0x55 for x in vram))})
    page = c.call("video.history.read", {"history_id": h["history_id"], "cursor": None})
    assert len(page["events"]) == 1024 and page["next_cursor"] == 1024
    assert page["next_sequence"] == 1101
    rest = c.call("video.history.read", {"cursor": page["next_cursor"], "limit": 4096})
    assert len(rest["events"]) == 76 and rest["next_cursor"] is None
    for bad in (0, 4097, -1):
        assert c.error("video.history.read", {"limit": bad})["code"] == -32602
    c.call("video.history.stop")


def test_a_machine_snapshot_import_ends_the_history(c, tmp_path):
    # L327: snapshot restore invalidates the stream
    cga_text_mode(c)
    n = rev(c)
    out = c.call("machine.snapshot.export", {"path": str(tmp_path / "s.zip"),
                                             "expected_state_revision": n})
    c.call("video.history.start", {})
    c.call("memory.write", {"address": 0xB8000, "data_base64": b64(b"\x11\x22")})
    assert len(c.call("video.history.read")["events"]) == 2
    c.call("machine.snapshot.import", {"path": out["path"], "disk_root": str(tmp_path / "d"),
                                       "expected_sha256": out["sha256"],
                                       "expected_state_revision": rev(c)})
    assert c.error("video.history.read", {})["code"] == -32602
    assert c.error("video.history.stop", {})["code"] == -32602
    h = c.call("video.history.start", {})
    assert h["first_sequence"] == 1
    assert c.call("video.history.read", {"history_id": h["history_id"]})["events"] == []
    c.call("video.history.stop")


def test_vga_history_journals_font_plane_bytes_and_not_graphics_memory(v):
    # L323: VGA font-plane bytes are journaled (old/new byte values at their
    # plane-2 offset, L325); L327: graphics VRAM writes are not
    bios_mode(v, 3)
    start = v.call("video.history.start", {})
    assert start["adapter"] == "VGA" and "cursor" in start        # COMPAT Video
    font = base64.b64decode(start["font_base64"])
    assert len(font) == 65536 and hashlib.sha256(font).hexdigest() == start["font_sha256"]
    new = font[0x20] ^ 0xFF
    code = bytes([0xBA, 0xC4, 0x03, 0xB8, 0x02, 0x04, 0xEF,     # map mask: plane 2
                  0xB8, 0x04, 0x07, 0xEF,                       # sequential addressing
                  0xBA, 0xCE, 0x03, 0xB8, 0x04, 0x02, 0xEF,     # read map 2
                  0xB8, 0x05, 0x00, 0xEF, 0xB8, 0x06, 0x04, 0xEF,   # A0000h, 64 KiB, text
                  0xB8, 0x00, 0xA0, 0x8E, 0xC0,
                  0x26, 0xC6, 0x06, 0x20, 0x00, new,           # mov byte es:[20h], new
                  0xBA, 0xC4, 0x03, 0xB8, 0x02, 0x03, 0xEF, 0xB8, 0x04, 0x02, 0xEF,
                  0xBA, 0xCE, 0x03, 0xB8, 0x04, 0x00, 0xEF, 0xB8, 0x05, 0x10, 0xEF,
                  0xB8, 0x06, 0x0E, 0xEF,
                  0xEB, 0xFE])
    run_code(v, code)
    events = v.call("video.history.read", {"limit": 4096})["events"]
    fonts = [(e["address"], e["old"], e["new"]) for e in events if e["kind"] == "font"]
    assert fonts == [(0x20, font[0x20], new)]
    ports = [(e["address"], e["old"]) for e in events if e["kind"] == "port"]
    assert (0x3C4, 2) in ports and (0x3CE, 2) in ports
    # mode 13h: pixels land in plane 2 too, and are not journaled as fonts
    bios_mode(v, 0x13)
    mark = v.call("video.history.read", {"limit": 1})["next_sequence"] - 1
    run_code(v, bytes([0xB8, 0x00, 0xA0, 0x8E, 0xC0, 0x26, 0xC6, 0x06, 0x02, 0x00, 0x77,
                       0xEB, 0xFE]))
    later = v.call("video.history.read", {"cursor": mark, "limit": 4096})["events"]
    assert [e for e in later if e["kind"] in ("font", "text")] == []
    mode_events = [e for e in v.call("video.history.read", {"limit": 4096})["events"]
                   if e["kind"] == "mode"]
    assert mode_events and mode_events[-1]["address"] == 0x13
    v.call("video.history.stop")
    bios_mode(v, 3)


def all_events(c, cursor):
    out = []
    while True:
        page = c.call("video.history.read", {"cursor": cursor, "limit": 4096})
        out += page["events"]
        if page["next_cursor"] is None:
            return out
        cursor = page["next_cursor"]


def test_vga_history_mode_sets_give_mode_clear_text_and_font_events(v):
    # L323/L325: VGA text clear and mode events; clear_text resets text VRAM
    # to zero; mode gives the mode number, columns and display offset
    bios_mode(v, 3)
    v.call("video.history.start", {})
    bios_mode(v, 0x12)
    events = all_events(v, 0)
    kinds = collections.Counter(e["kind"] for e in events)
    assert kinds["clear_text"] == 1 and kinds["text"] == 0 and kinds["font"] == 0
    clear = next(e for e in events if e["kind"] == "clear_text")
    assert (clear["address"], clear["old"], clear["new"]) == (0, 0, 0)
    modes = [(e["address"], e["old"], e["new"]) for e in events if e["kind"] == "mode"]
    assert modes[-1] == (0x12, 80, 0)
    t = v.call("video.text")
    assert t["cells"][0][0]["code"] == 0 and t["text"] == [""] * 25
    mark = events[-1]["sequence"]
    bios_mode(v, 3)                          # the text mode loads its font again
    back = all_events(v, mark)
    kinds = collections.Counter(e["kind"] for e in back)
    assert kinds["text"] > 0 and kinds["font"] > 0
    assert [(e["address"], e["old"], e["new"]) for e in back if e["kind"] == "mode"][-1] \
        == (3, 80, 0)
    v.call("video.history.stop")


def test_cga_history_mode_events_follow_the_crtc_start(c):
    # L325: a mode event's address/old/new are the mode number, columns and
    # display offset -- a new CRTC start address is a new display offset
    cga_text_mode(c)
    c.call("video.history.start", {})
    for index, value in ((12, 0x07), (13, 0xD0)):
        c.call("io.write", {"port": 0x3D4, "value": index})
        c.call("io.write", {"port": 0x3D5, "value": value})
    modes = [(e["address"], e["old"], e["new"]) for e in all_events(c, 0)
             if e["kind"] == "mode"]
    assert modes == [(0x29, 80, 0x0E00), (0x29, 80, 0x0FA0)]
    c.call("video.history.stop")
    cga_text_mode(c)


def test_vga_history_keeps_journaling_ports_across_a_hardware_trace(vga, v):
    # L323: video port writes are journaled while recording, also after a
    # hardware trace (which switches the ports' fast path too) stops
    bios_mode(v, 3)
    v.call("hardware.trace.start", {"include_irq": False})
    v.call("video.history.start", {})
    v.call("hardware.trace.stop")
    run_code(v, bytes([0xBA, 0xC4, 0x03, 0xB8, 0x02, 0x0F, 0xEF, 0xEB, 0xFE]), offset=0x200)
    events = v.call("video.history.read", {"limit": 4096})["events"]
    assert [(e["kind"], e["address"], e["old"], e["new"]) for e in events] == \
        [("port", 0x3C4, 2, 0x0F02)]
    v.call("video.history.stop")
    assert vga.machine.ports.fast_reads is True          # the fast path is back


# -- io.read / io.write (L329-L349) ------------------------------------------------------------

@pytest.mark.parametrize("params", [{"port": 0x10000}, {"port": -1}, {}, {"port": None},
                                    {"port": "0x3D8", "value": 1}, {"port": "port 60"}])
def test_io_read_rejections_change_nothing(c, params):
    # L335/L339: port is a required 16-bit integer; invalid parameters leave
    # the machine and revision unchanged
    c.call("execution.pause")
    n = rev(c)
    status = c.call("serial.status")
    assert c.error("io.read", params)["code"] == -32602
    assert rev(c) == n and c.call("serial.status") == status


def idle(c):
    """Point the paused CPU at ``sti / jmp $``."""
    c.call("memory.write", {"address": (CODE << 4) + 0x400,
                            "data_base64": b64([0xFB, 0xEB, 0xFE])})
    set_csip(c, CODE, 0x400)


def run_a_little(c, ns=20_000_000):
    op = c.call("execution.run_until", {"max_emulated_ns": ns})["operation_id"]
    done = c.call("execution.wait", {"operation_id": op, "timeout_ms": 30000})
    assert done["stop_reason"]["kind"] == "emulated_time_limit", done


def test_io_read_has_the_in_side_effects(c):
    # L339 and COMPAT I/O: the read is the IN's (3F8h takes the byte out of
    # the UART's receive buffer); each read advances the revision once
    c.call("execution.pause")
    idle(c)
    program_uart(c)
    for _ in range(20):                       # input earlier tests left behind
        run_a_little(c)
        if not c.call("io.read", {"port": 0x3FD})["value"] & 1 \
                and not c.call("serial.status")["rx_pending"]:
            break
        c.call("io.read", {"port": 0x3F8})
    c.call("serial.write", {"data_base64": b64(b"OK")})
    run_a_little(c)
    assert c.call("io.read", {"port": 0x3FD})["value"] & 1      # data ready
    n = rev(c)
    first = c.call("io.read", {"port": "0x3F8"})
    assert first == {"port": 0x3F8, "value": ord("O"), "state_revision": n + 1}
    # taken out; flow-controlled (C600), the next byte moved in at once
    assert c.call("serial.status")["rx_pending"] == 1
    assert c.call("io.read", {"port": 0x3FD})["value"] & 1
    assert c.call("io.read", {"port": 0x3F8})["value"] == ord("K")
    assert not c.call("io.read", {"port": 0x3FD})["value"] & 1
    assert c.call("serial.status")["rx_pending"] == 0


def test_io_write_reports_handled_per_device(c):
    # L347-349 and COMPAT I/O: handled is true where a device owns the port
    c.call("execution.pause")
    assert c.call("io.write", {"port": 0x3F9, "value": 0})["handled"] is True   # UART
    assert c.call("io.write", {"port": 0x201, "value": 0})["handled"] is True   # game port
    assert c.call("io.write", {"port": 0x2F8, "value": 0})["handled"] is False  # no COM2
    assert c.call("io.read", {"port": 0x2F8})["value"] == 0xFF


# -- input (L351-L399) ------------------------------------------------------------------------

def test_keyboard_limits_are_inclusive(c):
    # L362: 1..32 events; scan codes 0x00..0x7F
    c.call("execution.pause")
    events = [{"scan_code": i % 0x80, "pressed": bool(i % 2)} for i in range(31)]
    events.append({"scan_code": "0x7F", "pressed": False})
    assert c.call("input.keyboard", {"events": events})["accepted"] == 32
    assert c.call("input.keyboard", {"events": [{"scan_code": 0, "pressed": False}]})[
        "accepted"] == 1
    assert c.call("keyboard.scancode", {"scan_code": "0x7F", "pressed": False})[
        "accepted"] == 1


def test_make_and_break_codes_reach_the_keyboard_in_order(c):
    # L362: pressed:true queues the make code, false the break code
    # (scan_code | 0x80), in the listed order -- as the guest reads them at 60h
    c.call("execution.pause")
    c.call("hardware.trace.start", {"include_irq": False,
                                    "ports": [{"first": "0x60", "last": "0x60"}]})
    c.call("input.keyboard", {"events": [{"scan_code": "0x4D", "pressed": True},
                                         {"scan_code": "0x4D", "pressed": False},
                                         {"scan_code": 0x1E, "pressed": True}]})
    c.call("keyboard.scancode", {"scan_code": 0x1E, "pressed": False})
    # sti / 1: mov ah,1 / int 16h / jz 1 / mov ah,0 / int 16h / jmp 1 -- the
    # guest empties the BIOS buffer, so keys typed by earlier tests move on
    c.call("memory.write", {"address": (CODE << 4) + 0x500, "data_base64": b64(
        [0xFB, 0xB4, 0x01, 0xCD, 0x16, 0x74, 0xFA, 0xB4, 0x00, 0xCD, 0x16, 0xEB, 0xF4])})
    set_csip(c, CODE, 0x500)
    run_a_little(c, 2_000_000_000)            # two emulated seconds: whatever the host's load
    events, cursor = [], None
    while True:
        page = c.call("hardware.trace.read", {"cursor": cursor, "limit": 1000})
        events += page["events"]
        cursor = page.get("next_cursor")
        if not page["events"] or cursor is None:
            break
    c.call("hardware.trace.stop")
    seen = [e["value"] for e in events if e["kind"] == "io_read"]
    # keys of earlier tests may still be on their way in: from the first 4Dh
    seen = seen[seen.index(0x4D):] if 0x4D in seen else []
    tail = [x for i, x in enumerate(seen) if i == 0 or x != seen[i - 1]]
    assert tail[:4] == [0x4D, 0xCD, 0x1E, 0x9E]
    assert 0x1E not in c.call("input.state")["keyboard"]["pressed_scancodes"]


def test_keyboard_batches_are_taken_while_running(c):
    # L366: keyboard requests are allowed while running or paused
    c.call("execution.continue")
    out = c.call("input.keyboard", {"events": [{"scan_code": 0x39, "pressed": True},
                                               {"scan_code": 0x39, "pressed": False}]})
    assert out["accepted"] == 2
    assert c.call("keyboard.scancode", {"scan_code": 0x2A})["accepted"] == 1
    assert 0x2A in c.call("input.state")["keyboard"]["pressed_scancodes"]
    c.call("keyboard.scancode", {"scan_code": 0x2A, "pressed": False})
    c.call("execution.pause")


def test_joystick_update_is_validated_whole_before_any_change(c):
    # L388: indices 0 and 1, finite axes in -1..+1, exactly two boolean
    # buttons; all fields validated before mutation; both methods return two
    # records and the revision
    c.call("execution.pause")
    good = {"joystick": 0, "x": -0.5, "y": 1, "buttons": [False, True]}
    out = c.call("input.joystick", good)
    assert [j["joystick"] for j in out["joysticks"]] == [0, 1]
    assert out["joysticks"][0] == {"joystick": 0, "x": -0.5, "y": 1.0,
                                   "buttons": [False, True]}
    state = c.call("input.joystick.state")
    assert state == {"joysticks": out["joysticks"], "state_revision": out["state_revision"]}
    for bad in ({**good, "x": 1e400}, {**good, "y": -1.0001}, {**good, "joystick": -1},
                {**good, "buttons": [True, False, True]}, {**good, "buttons": [None, True]},
                {**good, "x": None}, {k: v for k, v in good.items() if k != "y"},
                {**good, "z": 0}, {**good, "x": True}):
        raw = json.dumps({"jsonrpc": "2.0", "id": "j", "method": "input.joystick",
                          "params": bad}).replace("Infinity", "1e400").encode() + b"\n"
        c.send_raw(raw)
        reply = c.read_reply()
        assert reply["error"]["code"] == -32602, bad
        assert c.call("input.joystick.state") == state
