"""The gdb remote stub (``pypc run --gdb``) over real sockets: a raw GDB
Remote Serial Protocol client for each packet kind and edge, beside a
JSON-RPC client of the same machine (one controller, one breakpoint table).

The guest (linear 7C00h, run as 07C0:0000 so CS is not 0)::

    7C00 mov ax,1234h / 7C03 mov bx,5678h
    7C06 inc ax / 7C07 mov [0500h],ax / 7C0A inc bx / 7C0B jmp 7C06
"""

import socket
import time

import pytest

from rpc_client import RpcFixture

from pypc_core.frontends import gdbstub
from pypc_core.frontends.gdbstub import GdbServer, checksum, escape_binary, frame

PROG = bytes.fromhex("B83412" "BB7856" "40" "A30005" "43" "EBF9")
ENTRY = (0x07C0, 0)


class Rsp:
    """A raw RSP client: ``tx(payload)`` sends a packet, checks the ack and
    returns the reply payload."""

    def __init__(self, port, timeout=20):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)    # as gdb does
        self.buf = b""

    def send_raw(self, data):
        self.sock.sendall(data)

    def _fill(self):
        data = self.sock.recv(65536)
        if not data:
            raise ConnectionError("closed")
        self.buf += data

    def read_ack(self):
        while not self.buf:
            self._fill()
        ack, self.buf = self.buf[:1], self.buf[1:]
        return ack

    def read_packet(self):
        while True:
            start = self.buf.find(b"$")
            end = self.buf.find(b"#", start)
            if start >= 0 and end >= 0 and len(self.buf) >= end + 3:
                break
            self._fill()
        payload = self.buf[start + 1:end]
        assert int(self.buf[end + 1:end + 3], 16) == checksum(payload)
        self.buf = self.buf[end + 3:]
        self.sock.sendall(b"+")
        return payload

    def tx(self, payload):
        if isinstance(payload, str):
            payload = payload.encode("latin-1")
        self.send_raw(frame(payload))
        assert self.read_ack() == b"+"
        return self.read_packet().decode("latin-1")

    def monitor(self, command):
        """(output, final reply) of ``monitor COMMAND``."""
        self.send_raw(frame(b"qRcmd," + command.encode().hex().encode()))
        assert self.read_ack() == b"+"
        out = ""
        while True:
            p = self.read_packet().decode()
            if p.startswith("O") and p != "OK":
                out += bytes.fromhex(p[1:]).decode()
            else:
                return out, p

    def close(self):
        self.sock.close()


@pytest.fixture
def fx():
    f = RpcFixture(plugins=[], bare=True, loads=[(PROG, 0x7C00)], entry=ENTRY)
    f.gdb = GdbServer(f.controller, port=0).start()
    yield f
    f.gdb.close()
    f.close()


@pytest.fixture
def g(fx):
    client = Rsp(fx.gdb.port)
    yield client
    client.close()


def regs(reply):
    """{name: value} from a g reply."""
    raw = bytes.fromhex(reply)
    out, pos = {}, 0
    for name, size in gdbstub.REGISTERS:
        out[name] = int.from_bytes(raw[pos:pos + size], "little")
        pos += size
    assert pos == len(raw)
    return out


def wait_paused(c, timeout=20):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if c.call("agent.capabilities").get("state", "stopped") != "running" and \
                not c.call("execution.wait", {"operation_id": "op-1", "timeout_ms": 0}) \
                .get("running", False):
            return True
        time.sleep(0.05)
    return False


def run_to(g, linear):
    assert g.tx(f"Z0,{linear:x},1") == "OK"
    assert g.tx("c") == "T05swbreak:;thread:1;"
    assert g.tx(f"z0,{linear:x},1") == "OK"


def test_qsupported_and_the_target_description(g):
    features = g.tx("qSupported:multiprocess+;swbreak+;hwbreak+;xmlRegisters=i386").split(";")
    assert "qXfer:features:read+" in features
    size = [f for f in features if f.startswith("PacketSize=")]
    assert size and int(size[0].split("=")[1], 16) >= 0x10000 * 2 + 8
    xml, off = "", 0
    while True:                              # read it in small chunks, as gdb may
        part = g.tx(f"qXfer:features:read:target.xml:{off:x},100")
        assert part[0] in "ml"
        xml += part[1:]
        off += len(part) - 1
        if part[0] == "l":
            break
    assert xml == gdbstub.TARGET_XML
    assert "<architecture>i8086</architecture>" in xml
    assert 'name="org.gnu.gdb.i386.core"' in xml and '<reg name="ip" bitsize="16"' in xml
    assert g.tx("qXfer:features:read:other.xml:0,100").startswith("E")
    assert g.tx("qAttached") == "1" and g.tx("qfThreadInfo") == "m1"
    assert g.tx("vCont?") == "vCont;c;C;s;S"
    assert g.tx("qNoSuchThing") == ""          # unknown packets: the empty reply


def test_attach_pauses_and_g_reports_eip_as_the_linear_pc(fx, g):
    assert g.tx("?") == "T02thread:1;"
    c = fx.client()
    state = c.call("state.get_registers")
    r = regs(g.tx("g"))
    assert r["cs"] == state["segments"]["cs"] == 0x07C0
    assert r["ip"] == state["ip"]
    assert r["eip"] == (0x07C0 << 4) + state["ip"]
    assert r["eax"] == state["general"]["ax"] and r["ebx"] == state["general"]["bx"]
    assert r["eflags"] == state["flags"] and r["fs"] == r["gs"] == r["st0"] == 0
    assert g.tx("g") == g.tx("g")                # paused: nothing moves
    # p reads one register of the same description
    assert g.tx("p%x" % gdbstub.REG_NUM["eip"]) == r["eip"].to_bytes(4, "little").hex()
    assert g.tx("p%x" % gdbstub.REG_NUM["ip"]) == r["ip"].to_bytes(2, "little").hex()
    assert g.tx("p999").startswith("E")


def test_P_and_G_write_registers_seen_over_json_rpc(fx, g):
    c = fx.client()
    run_to(g, 0x7C07)
    assert g.tx("P0=05000000") == "OK"                        # eax = 5
    assert c.call("state.get_registers")["general"]["ax"] == 5
    assert g.tx("P0=00000100").startswith("E")                # 8088 registers are 16-bit
    assert g.tx("P%x=01000000" % gdbstub.REG_NUM["fs"]).startswith("E")   # no FS
    assert g.tx("P0=0500").startswith("E")                    # wrong size
    assert g.tx("P0").startswith("E") and g.tx("Pzz=00").startswith("E")
    # eip inside CS's window moves IP only; outside it CS:IP become L>>4:L&F
    assert g.tx("P8=067c0000") == "OK"
    s = c.call("state.get_registers")
    assert (s["segments"]["cs"], s["ip"]) == (0x07C0, 6)
    assert g.tx("P8=23010200") == "OK"                        # linear 20123h
    s = c.call("state.get_registers")
    assert (s["segments"]["cs"], s["ip"]) == (0x2012, 3)
    assert g.tx("P8=00001000").startswith("E")                # beyond 1 MiB
    assert g.tx("P8=067c0000") == "OK"
    # G: what g said comes back unchanged; a changed bx is written
    before = g.tx("g")
    assert g.tx("G" + before) == "OK" and g.tx("g") == before
    r = regs(before)
    raw = bytearray(bytes.fromhex(before))
    raw[12:14] = (0xBEEF).to_bytes(2, "little")               # ebx (register 3)
    assert g.tx("G" + raw.hex()) == "OK"
    assert c.call("state.get_registers")["general"]["bx"] == 0xBEEF
    assert regs(g.tx("g"))["eip"] == r["eip"]
    assert g.tx("G" + before + "00" * 8).startswith("E")      # too long
    assert g.tx("Gxyz").startswith("E")


def test_m_M_X_memory_is_linear_and_wraps_at_1_mib(fx, g):
    c = fx.client()
    assert g.tx("?").startswith("T")
    assert g.tx("m7c00,d") == PROG.hex()
    assert g.tx("M600,4:deadbeef") == "OK"
    got = c.call("memory.read", {"address": {"space": "linear", "offset": 0x600}, "length": 4})
    assert got["data_hex"] == "deadbeef"
    assert g.tx("m600,4") == "deadbeef"
    special = bytes([0x23, 0x24, 0x7D, 0x2A, 0x00, 0xFF])
    assert g.tx(b"X610,6:" + escape_binary(special)) == "OK"
    assert g.tx("m610,6") == special.hex()
    assert g.tx("X610,0:") == "OK"                          # gdb's probe for X
    assert g.tx("M0,2:3412") == "OK" and g.tx("Mfffff,1:77") == "OK"
    # FFFFFh is unmapped on a bare machine: a write leaves its FFh, as the CPU's
    assert g.tx("mfffff,3") == "ff3412"                      # FFFFFh, then 0, 1
    assert len(g.tx("m0,10000")) == 0x20000                  # a 64 KiB read in one packet
    assert g.tx("m0,10001").startswith("E")
    assert g.tx("m7c00").startswith("E") and g.tx("mxyz,2").startswith("E")
    assert g.tx("M600,4:dead").startswith("E")               # shorter than LENGTH
    assert g.tx("X600,4:ab").startswith("E")


def test_a_gdb_breakpoint_is_a_json_rpc_breakpoint_and_back(fx, g):
    c = fx.client()
    assert g.tx("?").startswith("T")
    assert g.tx("Z0,7c0a,1") == "OK"
    listed = c.call("breakpoints.list")["breakpoints"]
    assert len(listed) == 1 and listed[0]["kind"] == "execution"
    assert listed[0]["address"] == {"space": "linear", "offset": 0x7C0A}
    assert g.tx("c") == "T05swbreak:;thread:1;"
    assert regs(g.tx("g"))["eip"] == 0x7C0A
    out, reply = g.monitor("breakpoints")
    assert reply == "OK" and listed[0]["breakpoint_id"] in out and "(gdb)" in out
    assert g.tx("z0,7c0a,1") == "OK"
    assert c.call("breakpoints.list")["breakpoints"] == []
    assert g.tx("z0,7c0a,1") == "OK"                         # removing it twice: done
    # the other way round: a JSON-RPC breakpoint stops gdb's continue (a plain T05)
    made = c.call("breakpoints.create", {"kind": "execution", "address": {
        "space": "segmented", "segment": 0x07C0, "offset": 0x0B}})
    out, _ = g.monitor("breakpoints")
    assert made["breakpoint_id"] in out and "07C0:000B" in out
    assert g.tx("c") == "T05thread:1;"
    assert regs(g.tx("g"))["ip"] == 0x0B
    # deleting a gdb breakpoint over JSON-RPC: gdb's z0 still answers OK
    assert g.tx("Z0,7c06,1") == "OK"
    gdb_id = [b for b in c.call("breakpoints.list")["breakpoints"]
              if b["breakpoint_id"] != made["breakpoint_id"]][0]["breakpoint_id"]
    c.call("breakpoints.delete", {"breakpoint_id": gdb_id})
    assert g.tx("z0,7c06,1") == "OK"
    assert g.tx("Z0,100000,1").startswith("E")              # beyond 1 MiB
    assert g.tx("Z9,7c06,1") == ""                           # a type we do not have
    assert g.tx("Z0,zz,1").startswith("E")


def test_watchpoints_stop_after_the_access_with_its_address(fx, g):
    c = fx.client()
    assert g.tx("?").startswith("T")
    assert g.tx("Z2,500,2") == "OK"
    listed = c.call("breakpoints.list")["breakpoints"]
    assert [(b["kind"], b["length"]) for b in listed] == [("memory_write", 2)]
    assert g.tx("c") == "T05watch:500;thread:1;"
    assert regs(g.tx("g"))["eip"] == 0x7C0A                  # after mov [0500h],ax
    assert g.tx("z2,500,2") == "OK"
    assert g.tx("Z4,501,1") == "OK"
    assert g.tx("c") == "T05awatch:501;thread:1;"
    assert g.tx("z4,501,1") == "OK"
    assert g.tx("Z3,7c06,1") == "OK"                         # a read: the opcode fetch
    assert c.call("breakpoints.list")["breakpoints"][0]["kind"] == "memory_read"
    assert g.tx("z3,7c06,1") == "OK"
    assert g.tx("Z2,fffff,2").startswith("E")                # past 1 MiB
    # a JSON-RPC watchpoint stops gdb's continue with a plain T05
    c.call("breakpoints.create", {"kind": "memory_write", "address": {
        "space": "linear", "offset": 0x500}, "length": 2})
    assert g.tx("c") == "T05thread:1;" and regs(g.tx("g"))["eip"] == 0x7C0A


def test_steps_and_vcont(fx, g):
    run_to(g, 0x7C06)
    assert g.tx("s") == "T05thread:1;"
    assert regs(g.tx("g"))["eip"] == 0x7C07
    assert g.tx("vCont;s:1") == "T05thread:1;"
    assert regs(g.tx("g"))["eip"] == 0x7C0A
    assert g.tx("S05") == "T05thread:1;"
    assert g.tx("Z0,7c07,1") == "OK"
    assert g.tx("vCont;c") == "T05swbreak:;thread:1;"
    assert g.tx("vCont;s:1;c") == "T05thread:1;"            # the step wins
    assert g.tx("z0,7c07,1") == "OK"
    assert g.tx("Z1,7c0b,1") == "OK"                         # a "hardware" one: the same
    assert g.tx("c") == "T05swbreak:;thread:1;" and regs(g.tx("g"))["eip"] == 0x7C0B
    assert g.tx("z1,7c0b,1") == "OK"
    assert g.tx("vCont;t").startswith("E")
    assert g.tx("s7c00").startswith("E")                     # resuming elsewhere: set $pc


def test_ctrl_c_pauses_a_running_machine(fx, g):
    c = fx.client()
    assert g.tx("?").startswith("T")
    g.send_raw(frame(b"c"))
    assert g.read_ack() == b"+"
    time.sleep(0.2)
    clock = c.call("state.get_registers")["clock"]
    time.sleep(0.1)
    assert c.call("state.get_registers")["clock"] > clock   # it runs
    g.send_raw(b"\x03")
    assert g.read_packet().decode() == "T02thread:1;"
    assert c.call("state.get_registers")["clock"] == c.call("state.get_registers")["clock"]
    # a JSON-RPC pause ends gdb's continue too
    g.send_raw(frame(b"c"))
    assert g.read_ack() == b"+"
    time.sleep(0.1)
    c.call("execution.pause")
    assert g.read_packet().decode() == "T02thread:1;"


def test_bad_checksum_bad_packets_and_no_ack_mode(fx, g):
    g.send_raw(b"$g#00")                                     # wrong checksum
    assert g.read_ack() == b"-"
    assert g.tx("g")                                          # the retransmission works
    assert g.tx("Mzz").startswith("E") and g.tx("m,").startswith("E")
    assert g.tx("Z0").startswith("E") and g.tx("P") .startswith("E")
    g.send_raw(b"noise" + frame(b"?"))
    assert g.read_ack() == b"+" and g.read_packet().startswith(b"T")
    assert g.tx("QStartNoAckMode") == "OK"
    g.send_raw(frame(b"m7c00,1"))                            # no ack comes now
    assert g.read_packet() == b"b8"


def test_monitor_commands(fx, g):
    c = fx.client()
    assert g.tx("?").startswith("T")
    out, reply = g.monitor("help")
    assert reply == "OK" and "monitor int N" in out and "monitor screen" in out
    out, reply = g.monitor("regs")
    state = c.call("state.get_registers")
    assert f"CS:IP=07C0:{state['ip']:04X}" in out and f"AX={state['general']['ax']:04X}" in out
    assert g.monitor("linear 07C0:000B") == ("07C0B\n", "OK")
    out, _ = g.monitor("x 07C0:0000 d")
    assert out.startswith("07C0:0000  b8 34 12 bb 78 56 40 a3 00 05 43 eb f9")
    out, _ = g.monitor("disasm 07C0:0006 3")
    assert out.splitlines()[0].split()[:3] == ["07C0:0006", "40", "inc"]
    out, reply = g.monitor("int 21 4c")
    assert reply == "OK" and "INT 21h" in out
    listed = c.call("breakpoints.list")["breakpoints"]
    assert listed[0]["event"] == {"type": "software_interrupt", "number": 0x21, "ah": 0x4C}
    out, reply = g.monitor("break 07C0:0007")
    bp = out.split(":")[0]
    assert reply == "OK" and any(b["breakpoint_id"] == bp and b["address"]["space"] == "segmented"
                                 for b in c.call("breakpoints.list")["breakpoints"])
    assert g.tx("c") == "T05thread:1;" and regs(g.tx("g"))["ip"] == 7
    assert g.monitor(f"delete {bp}") == (f"deleted {bp}\n", "OK")
    out, reply = g.monitor("screen")
    assert reply == "OK" and "no video card" in out
    for bad in ("frobnicate", "linear 12345:0", "x", "break 7c00", "int 100", "delete bp-99"):
        out, reply = g.monitor(bad)
        assert reply.startswith("E") and out.startswith("monitor "), bad


def test_a_vanished_client_leaves_it_paused_and_the_port_open(fx):
    c = fx.client()
    a = Rsp(fx.gdb.port)
    assert a.tx("Z0,7c0a,1") == "OK"
    a.send_raw(frame(b"c"))
    assert a.read_ack() == b"+"
    assert a.read_packet().startswith(b"T05")
    a.send_raw(b"$m7c0")                                      # mid-packet, gone
    a.close()
    time.sleep(0.3)
    assert c.call("breakpoints.list")["breakpoints"] == []    # gdb's are gone with it
    regs_a = c.call("state.get_registers")
    time.sleep(0.1)
    assert c.call("state.get_registers")["clock"] == regs_a["clock"]   # still paused
    b = Rsp(fx.gdb.port)                                      # the port takes the next one
    assert b.tx("?").startswith("T")
    third = socket.create_connection(("127.0.0.1", fx.gdb.port), timeout=10)
    assert third.recv(10) == b""                              # one gdb at a time
    third.close()
    # vanishing while it runs: paused too
    b.send_raw(frame(b"c"))
    assert b.read_ack() == b"+"
    b.close()
    time.sleep(0.3)
    clock = c.call("state.get_registers")["clock"]
    time.sleep(0.1)
    assert c.call("state.get_registers")["clock"] == clock
    d = Rsp(fx.gdb.port)
    assert d.tx("?").startswith("T")
    d.close()


def test_detach_lets_it_run(fx):
    c = fx.client()
    a = Rsp(fx.gdb.port)
    assert a.tx("Z0,7c0a,1") == "OK"
    assert a.tx("D") == "OK"
    assert a.sock.recv(10) == b""                             # the stub hangs up
    a.close()
    assert c.call("breakpoints.list")["breakpoints"] == []
    clock = c.call("state.get_registers")["clock"]
    time.sleep(0.2)
    assert c.call("state.get_registers")["clock"] > clock     # running again
    b = Rsp(fx.gdb.port)                                      # and re-attach
    assert b.tx("?") == "T02thread:1;"
    b.close()


def test_cli_refuses_bad_gdb_options(tmp_path):
    import subprocess
    import sys
    prog = tmp_path / "p.bin"
    prog.write_bytes(PROG)

    def run(*args):
        return subprocess.run([sys.executable, "-m", "pypc_core.cli", "run", "--headless",
                               *args], capture_output=True, text=True, timeout=120)
    p = run("--bare", "--load", f"{prog}@0:7C00", "--gdb", "70000")
    assert p.returncode == 2 and "port 70000 is outside 0-65535" in p.stderr
    p = run("--bare", "--load", f"{prog}@0:7C00", "--gdb", "0", "--until-halt")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "--until-halt" in p.stderr
    p = run("--bare", "--load", f"{prog}@0:7C00", "--gdb", "--listen", "bogus")
    assert p.returncode == 2 and "--listen 'bogus' is not an IP address" in p.stderr
    p = run("--bare", "--load", f"{prog}@0:7C00", "--gdb", "--rpc-port", "1234")
    assert p.returncode == 2 and "--gdb and --rpc-port are both 1234" in p.stderr
    p = run("--bare", "--load", f"{prog}@0:7C00", "--rpc-port", "0")
    assert p.returncode == 2 and "--bare serves no JSON-RPC" in p.stderr
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    try:
        p = run("--bare", "--load", f"{prog}@0:7C00", "--gdb", str(busy.getsockname()[1]))
    finally:
        busy.close()
    assert p.returncode == 2 and "cannot listen" in p.stderr and "--gdb" in p.stderr
    assert p.stderr.count("\n") == 1, p.stderr
