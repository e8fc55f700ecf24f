"""The generated client (pypc_core/client) against a live server: every RPC
method through its typed method, the decoded model re-encoded equal to the
raw JSON result (bytes, unions, nested models), errors as their reason's
class; and the generated files and docs/rpc-reference.md equal to a fresh
generation (after changing schemas/, run `pypc gen all`)."""

import base64
import hashlib
import shutil
import socket
import threading

import pytest

from pypc_core import codegen
from pypc_core.client import (Client, DeviceAbsent, InvalidParams, MethodNotFound, NotFound,
                              PreconditionFailed, RequestTimeout, RevisionMismatch, RpcError,
                              TargetNotPaused, TargetRunning, TransportError, Unsupported,
                              models as M)
from pypc_core.client.api import RESULT_SPECS
from pypc_core.client.runtime import decode, encode
from pypc_core.plugins import DEVICE_GROUP, PluginManager
from rpc_client import RpcFixture

PLUGINS = ["cga", "uart", "gameport"]
AVAILABLE = set(PluginManager().available(DEVICE_GROUP))
SEG = 0x1000
# mov ax,1234h / inc ax / mov [0200h],ax / jmp $
PROGRAM = bytes([0xB8, 0x34, 0x12, 0x40, 0xA3, 0x00, 0x02, 0xEB, 0xFE])


# -- drift ---------------------------------------------------------------------------

def test_generated_client_matches_the_schemas(tmp_path):
    codegen.write_client(tmp_path / "client")
    stale = [name for name in codegen.GENERATED + codegen.HANDWRITTEN
             if (tmp_path / "client" / name).read_text() !=
             (codegen.CLIENT_DIR / name).read_text()]
    assert not stale, (f"pypc_core/client/{stale} differ from what schemas/ generate: "
                       f"run `pypc gen all` and commit the result")


def test_reference_page_matches_the_schemas(tmp_path):
    codegen.write_docs(tmp_path / "ref.md")
    assert (tmp_path / "ref.md").read_text() == codegen.DOCS_FILE.read_text(), \
        "docs/rpc-reference.md is stale: run `pypc gen all` and commit the result"


def test_every_schema_method_has_a_client_method():
    from pypc_core.client import api
    names = sorted(e["name"] for e in codegen.openrpc_document()["methods"])
    assert list(Client.METHODS) == names
    for name in names:
        group, attr = codegen.method_parts(name)
        assert hasattr(getattr(api, codegen.camel(group) + "Methods"), attr), name
    assert codegen.method_parts("execution.continue") == ("execution", "continue_")
    assert codegen.method_parts("video.snapshot.read") == ("video", "snapshot_read")


# -- the live round trip ---------------------------------------------------------------

@pytest.fixture(scope="module")
def fx():
    plugins = [p for p in PLUGINS if p in AVAILABLE]
    f = RpcFixture(plugins=plugins)
    f.plugins = plugins
    yield f
    f.close()


class Recorder(Client):
    """The generated client, keeping each raw JSON result it received."""

    def __init__(self, port):
        super().__init__(port=port, timeout=120)
        self.raw = []

    def call(self, method, params=None, timeout=None):
        result = super().call(method, params, timeout)
        self.raw.append((method, result))
        return result


@pytest.fixture
def c(fx):
    client = Recorder(fx.port)
    yield client
    client.close()


def seg(offset, segment=SEG):
    return M.AddressObject(space="segmented", segment=segment, offset=offset)


def paused(c):
    c.execution.pause()
    return c.session.status().state_revision


def load_program(c):
    paused(c)
    c.memory.write(address=seg(0), data=PROGRAM)
    regs = c.state.get_registers()
    return c.state.set_registers(expected_state_revision=regs.state_revision,
                                 expected={"cs": regs.segments.cs, "ip": regs.ip,
                                           "ds": regs.segments.ds},
                                 set={"cs": SEG, "ip": 0, "ds": SEG}).after


def needs(fx, card):
    if card not in fx.plugins:
        pytest.skip(f"the {card} card's plugin is not installed")


def r_agent_capabilities(c, fx, tmp):
    caps = c.agent.capabilities()
    assert isinstance(caps, M.AgentCapabilitiesResult) and caps.cpu == "8088"
    assert set(Client.METHODS) - {"dos.memory_map", "dos.status"} <= set(caps.methods)


def r_emulator_info(c, fx, tmp):
    assert c.emulator.info().endpoint == f"127.0.0.1:{fx.port}"


def r_auth(c, fx, tmp):
    assert c.auth.auth().required is False          # (tokens: tests/test_rpc_access.py)


def r_rpc_discover(c, fx, tmp):
    doc = c.rpc.discover()
    assert {m["name"] for m in doc.methods} == set(fx.server.methods)


def r_session_status(c, fx, tmp):
    paused(c)
    st = c.session.status()
    assert st.state == "stopped" and st.state_revision >= 0


def r_state_get_registers(c, fx, tmp):
    regs = load_program(c)
    got = c.state.get_registers()
    assert isinstance(got, M.Registers) and (got.segments.cs, got.ip) == (SEG, 0)
    assert got == regs                    # attrs equality over the whole model


def r_state_get(c, fx, tmp):
    load_program(c)
    assert c.state.get() == c.state.get_registers()


def r_state_set_registers(c, fx, tmp):
    regs = load_program(c)
    out = c.state.set_registers(expected_state_revision=regs.state_revision,
                                expected={"ax": regs.general.ax}, set={"ax": "0x5A5A"})
    assert out.after.general.ax == 0x5A5A and out.before.general.ax == regs.general.ax
    with pytest.raises(RevisionMismatch) as err:
        c.state.set_registers(expected_state_revision=regs.state_revision,
                              expected={}, set={"ax": 1})
    assert err.value.code == -32602 and err.value.data["state_revision"] == \
        out.after.state_revision


def r_state_observe(c, fx, tmp):
    rev = paused(c)
    out = c.state.observe(expected_state_revision=rev,
                          memory=[{"address": seg(0), "length": len(PROGRAM)}],
                          video_text=M.VideoSelection(), video_memory=True)
    assert out.memory[0].byte_count == len(PROGRAM)


def r_memory_read(c, fx, tmp):
    load_program(c)
    block = c.memory.read(address=seg(0), length=len(PROGRAM))
    assert block.data == PROGRAM and block.sha256 == hashlib.sha256(PROGRAM).hexdigest()
    assert c.memory.read(address=SEG * 16, length=2).data == PROGRAM[:2]


def r_memory_write(c, fx, tmp):
    paused(c)
    out = c.memory.write(address=seg(0x300), data=b"\x00\xffpypc")
    assert out.byte_count == 6
    assert c.memory.read(address=seg(0x300), length=6).data == b"\x00\xffpypc"


def r_io_read(c, fx, tmp):
    paused(c)
    assert 0 <= c.io.read(port=0x61).value <= 255


def r_io_write(c, fx, tmp):
    paused(c)
    c.io.write(port=0x3D4, value=0x0E)             # CGA CRTC index: cursor high
    out = c.io.write(port=0x3D5, value=0x01)
    assert out.port == 0x3D5 and out.value == 0x01


def r_input_keyboard(c, fx, tmp):
    out = c.input.keyboard(events=[M.KeyboardEvent(scan_code=0x4D, pressed=True),
                                   {"scan_code": "0x4D", "pressed": False}])
    assert out.accepted == 2


def r_keyboard_scancode(c, fx, tmp):
    assert c.keyboard.scancode(scan_code=0x4F).accepted == 1
    assert 0x4F in c.input.state().keyboard.pressed_scancodes
    c.keyboard.scancode(scan_code=0x4F, pressed=False)


def r_input_state(c, fx, tmp):
    st = c.input.state()
    assert isinstance(st.keyboard.pressed_scancodes, list)


def r_input_joystick(c, fx, tmp):
    needs(fx, "gameport")
    out = c.input.joystick(joystick=0, x=0.5, y=-0.25, buttons=[True, False])
    assert out.joysticks


def r_input_joystick_state(c, fx, tmp):
    needs(fx, "gameport")
    assert isinstance(c.input.joystick_state().joysticks, list)


def r_video_text(c, fx, tmp):
    text = c.video.text()
    assert len(text.text) == 25 and text.columns in (40, 80)


def r_video_snapshot(c, fx, tmp):
    snap = c.video.snapshot()
    assert snap.snapshot_id


def r_video_snapshot_read(c, fx, tmp):
    snap = c.video.snapshot()
    out = c.video.snapshot_read(snapshot_id=snap.snapshot_id, component="vram", offset=0,
                                length=64)
    assert out.byte_count == 64 and len(out.data) == 64
    with pytest.raises(NotFound):
        c.video.snapshot_read(snapshot_id="nope", component="vram")


def r_video_history_start(c, fx, tmp):
    h = c.video.history_start(capacity=64)
    c.video.history_stop(history_id=h.history_id)


def r_video_history_read(c, fx, tmp):
    paused(c)
    h = c.video.history_start(capacity=64)
    c.io.write(port=0x3D4, value=0x0E)
    out = c.video.history_read(history_id=h.history_id, limit=16)
    assert isinstance(out.events, list)
    c.video.history_stop(history_id=h.history_id)


def r_video_history_stop(c, fx, tmp):
    h = c.video.history_start(capacity=8)
    out = c.video.history_stop(history_id=h.history_id)
    assert out.history_id == h.history_id and out.events >= 0
    with pytest.raises(NotFound):
        c.video.history_stop(history_id="vh-unknown")


def r_execution_pause(c, fx, tmp):
    load_program(c)
    c.execution.continue_()
    c.execution.pause()
    assert c.session.status().state == "stopped"


def r_execution_continue(c, fx, tmp):
    load_program(c)
    op = c.execution.continue_()
    assert op.state == "running" and op.paused is False
    with pytest.raises(TargetRunning):
        c.execution.continue_()
    with pytest.raises(TargetNotPaused):
        c.state.set_registers(expected_state_revision=0, expected={}, set={"ax": 1})
    c.execution.pause()


def r_execution_go(c, fx, tmp):
    load_program(c)
    assert c.execution.go().state == "running"
    c.execution.pause()


def r_execution_step(c, fx, tmp):
    load_program(c)
    op = c.execution.step(mode="into")
    assert op.stepping is True
    done = c.execution.wait(operation_id=op.operation_id, timeout_ms=5000)
    assert isinstance(done, M.ExecutionWaitResultStopped)
    assert c.state.get_registers().general.ax == 0x1234
    with pytest.raises(InvalidParams):
        c.execution.step(mode="sideways")


def r_execution_run_until(c, fx, tmp):
    load_program(c)
    op = c.execution.run_until(predicate=M.BreakpointSpec(kind="execution", address=seg(7)))
    done = c.execution.wait(operation_id=op.operation_id, timeout_ms=10000)
    assert isinstance(done, M.ExecutionWaitResultStopped)
    regs = c.state.get_registers()
    assert regs.ip == 7 and regs.general.ax == 0x1235


def r_execution_wait(c, fx, tmp):
    load_program(c)
    op = c.execution.continue_()
    running = c.execution.wait(operation_id=op.operation_id, timeout_ms=1)
    assert isinstance(running, (M.ExecutionWaitResultRunning, M.ExecutionWaitResultStopped))
    c.execution.pause()
    done = c.execution.wait(operation_id=op.operation_id)
    assert isinstance(done, M.ExecutionWaitResultStopped)
    with pytest.raises(NotFound):
        c.execution.wait(operation_id="op-unknown")


def r_breakpoints_create(c, fx, tmp):
    load_program(c)
    bp = c.breakpoints.create(kind="execution", address=seg(4))
    assert isinstance(bp, M.Breakpoint) and bp.breakpoint_id.startswith("bp-")
    op = c.execution.continue_()
    done = c.execution.wait(operation_id=op.operation_id, timeout_ms=10000)
    assert done.stop_reason.kind == "breakpoint"
    assert c.state.get_registers().ip == 4
    c.breakpoints.delete(breakpoint_id=bp.breakpoint_id)


def r_breakpoints_list(c, fx, tmp):
    paused(c)
    bp = c.breakpoints.create(address=seg(0x20), once=True)
    assert [b.breakpoint_id for b in c.breakpoints.list().breakpoints] == [bp.breakpoint_id]
    c.breakpoints.delete(breakpoint_id=bp.breakpoint_id)


def r_breakpoints_delete(c, fx, tmp):
    paused(c)
    bp = c.breakpoints.create(address=seg(0x20))
    assert c.breakpoints.delete(breakpoint_id=bp.breakpoint_id).deleted is True
    with pytest.raises(NotFound):
        c.breakpoints.delete(breakpoint_id=bp.breakpoint_id)


def r_trace_start(c, fx, tmp):
    load_program(c)
    assert c.trace.start(detail="normal", instruction_count=8).active is True
    c.trace.stop()


def r_trace_read(c, fx, tmp):
    load_program(c)
    c.trace.start(detail="normal", instruction_count=8)
    op = c.execution.step()
    c.execution.wait(operation_id=op.operation_id, timeout_ms=5000)
    out = c.trace.read(cursor=None, limit=8)
    assert out.events and out.events[0].registers_before is not None
    c.trace.stop()


def r_trace_stop(c, fx, tmp):
    paused(c)
    c.trace.start(instruction_count=2)
    assert c.trace.stop().active is False


def r_hardware_trace_start(c, fx, tmp):
    paused(c)
    meta = c.hardware.trace_start(capacity=64, ports=[{"first": "0x3d0", "last": "0x3df"}])
    assert meta.capacity == 64
    c.hardware.trace_stop()


def r_hardware_trace_read(c, fx, tmp):
    paused(c)
    c.hardware.trace_start(capacity=64)
    c.io.write(port=0x3D4, value=0x0F)
    out = c.hardware.trace_read(cursor=None, limit=16)
    assert isinstance(out.events, list)
    c.hardware.trace_stop()


def r_hardware_trace_stop(c, fx, tmp):
    c.hardware.trace_start(capacity=8)
    c.hardware.trace_stop()


def r_debug_output_read(c, fx, tmp):
    fx.machine.note("warning", "a note for the client")       # (allowed while running)
    out = c.debug.output_read(min_level="warning", sources=["machine"], limit=16)
    note = out.records[-1]
    assert (note.message, note.level, note.source) == ("a note for the client", "warning",
                                                       "machine")
    assert out.next_cursor == f"debug-{note.sequence}" and out.capacity == 4096
    again = c.debug.output_read(cursor=out.next_cursor, min_level="warning",
                                sources=["machine"])
    assert again.records == [] and again.next_cursor == out.next_cursor


def program_uart(c):
    for port, value in ((0x3FB, 0x80), (0x3F8, 12), (0x3F9, 0), (0x3FB, 0x03)):
        c.io.write(port=port, value=value)


def r_serial_status(c, fx, tmp):
    if "uart" not in fx.plugins:
        with pytest.raises(DeviceAbsent):
            c.serial.status()
        pytest.skip("the uart card's plugin is not installed")
    assert c.serial.status().port == "COM1"


def r_serial_write(c, fx, tmp):
    needs(fx, "uart")
    paused(c)
    program_uart(c)
    out = c.serial.write(data=b"R\r")
    assert out.accepted == 2


def r_serial_read(c, fx, tmp):
    needs(fx, "uart")
    out = c.serial.read(offset=0, max_bytes=64)
    assert isinstance(out.data, bytes)


def r_machine_snapshot_export(c, fx, tmp):
    rev = paused(c)
    out = c.machine.snapshot_export(path=str(tmp / "m.zip"), expected_state_revision=rev)
    assert out.sha256 == hashlib.sha256((tmp / "m.zip").read_bytes()).hexdigest()


def r_machine_snapshot_import(c, fx, tmp):
    rev = paused(c)
    out = c.machine.snapshot_export(path=str(tmp / "m.zip"), expected_state_revision=rev)
    res = c.machine.snapshot_import(path=out.path, disk_root=str(tmp / "disks"),
                                    expected_sha256=out.sha256, expected_state_revision=rev)
    assert res.state_revision == rev + 1


def r_dos_status(c, fx, tmp):
    with pytest.raises(Unsupported):            # no built-in DOS on this machine
        c.dos.status()
    pytest.skip("this machine has no built-in DOS: test_dos_methods_through_the_client")


def r_dos_memory_map(c, fx, tmp):
    with pytest.raises(Unsupported):
        c.dos.memory_map()
    pytest.skip("this machine has no built-in DOS: test_dos_methods_through_the_client")


def r_checkpoints_create(c, fx, tmp):
    load_program(c)
    cp = c.checkpoints.create()
    assert cp.checkpoint_id.startswith("cp-")
    c.checkpoints.delete(checkpoint_id=cp.checkpoint_id)


def r_checkpoints_list(c, fx, tmp):
    paused(c)
    cp = c.checkpoints.create()
    assert cp.checkpoint_id in [x.checkpoint_id for x in c.checkpoints.list().checkpoints]
    c.checkpoints.delete(checkpoint_id=cp.checkpoint_id)


def r_checkpoints_restore(c, fx, tmp):
    before = load_program(c)
    cp = c.checkpoints.create()
    c.memory.write(address=seg(0), data=b"\x90")
    out = c.checkpoints.restore(checkpoint_id=cp.checkpoint_id)
    assert out.restored is True
    assert c.memory.read(address=seg(0), length=1).data == PROGRAM[:1]
    assert c.state.get_registers().ip == before.ip
    c.checkpoints.delete(checkpoint_id=cp.checkpoint_id)


def r_checkpoints_delete(c, fx, tmp):
    paused(c)
    cp = c.checkpoints.create()
    assert c.checkpoints.delete(checkpoint_id=cp.checkpoint_id).deleted is True
    with pytest.raises(NotFound):
        c.checkpoints.delete(checkpoint_id=cp.checkpoint_id)


def _symbol_list(c, tmp):
    path = tmp / "prog.sym"
    path.write_text(f"entry {SEG:04X}:0000\nstore {SEG:04X}:0004\n")
    return c.symbols.load(path=str(path))


def r_symbols_load(c, fx, tmp):
    out = _symbol_list(c, tmp)
    assert (out.format, out.base, out.symbols, out.total) == ("list", 0, 2, 2)
    c.symbols.clear()


def r_symbols_list(c, fx, tmp):
    _symbol_list(c, tmp)
    out = c.symbols.list()
    assert [s.name for s in out.symbols] == ["entry", "store"] and out.next_offset is None
    c.symbols.clear()


def r_symbols_lookup(c, fx, tmp):
    _symbol_list(c, tmp)
    hit = c.symbols.lookup(name="store+1").results[0]
    assert (hit.address.segment, hit.address.offset, hit.symbol) == (SEG, 5, "store+0x1")
    assert c.symbols.lookup(addresses=[seg(2), 0]).results[0].symbol == "entry+0x2"
    c.symbols.clear()


def r_symbols_clear(c, fx, tmp):
    _symbol_list(c, tmp)
    assert c.symbols.clear().cleared == 2
    assert c.symbols.list().total == 0


def _own_session(c, tmp, stop):
    """session.start (and session.stop) on a server of its own: a session
    replaces the machine, and the other recipes share this one."""
    from guest import dos as progs
    shutil.copy(progs.path("agent_fixture"), tmp / "AGENTFIX.COM")
    f = RpcFixture(plugins=["cga"])
    try:
        with Recorder(f.port) as own:
            started = own.session.start(target={"command": "AGENTFIX.COM", "arguments": []},
                                        mounts=[{"drive": "C", "host_path": str(tmp)}],
                                        break_at="entry")
            assert started.state == "stopped" and started.stop_reason.kind == "startup"
            if stop:
                op = own.session.stop(session_id=started.session_id)
                done = own.execution.wait(operation_id=op.operation_id)
                assert done.stop_reason.kind == "program_exit"
            c.raw.extend(own.raw)
    finally:
        f.close_with_session()


def r_session_start(c, fx, tmp):
    _own_session(c, tmp, stop=False)


def r_session_stop(c, fx, tmp):
    _own_session(c, tmp, stop=True)


def _dos_trace(c, tmp, method):
    """dos.trace.* on a server of its own (they need the built-in DOS):
    tests/guest/dos/dostrace.asm run to its end under a trace."""
    from guest import dos as progs
    shutil.copy(progs.path("dostrace"), tmp / "DOSTRACE.COM")
    shutil.copy(progs.path("child"), tmp / "CHILD.COM")
    f = RpcFixture(plugins=["cga"])
    try:
        with Recorder(f.port) as own:
            with pytest.raises(PreconditionFailed):     # no DOS at all before the start
                own.dos.trace_start()
            own.session.start(target={"command": "DOSTRACE.COM", "arguments": []},
                              mounts=[{"drive": "C", "host_path": str(tmp)}])
            meta = own.dos.trace_start(capacity=64, classes=["all"], data_bytes=8)
            assert meta.active is True and meta.capacity == 64
            op = own.execution.continue_()
            own.execution.wait(operation_id=op.operation_id, timeout_ms=60000)
            if method == "read":
                out = own.dos.trace_read(cursor=None, limit=64)
                names = [e.name for e in out.events]
                assert names[:3] == ["resize", "create", "write"] and names[-1] == "exit"
                assert out.events[2].result.data == b"01234567"          # data_base64
                assert out.events[2].class_ == "file"
            assert own.dos.trace_stop().active is False
            c.raw.extend(own.raw)
    finally:
        f.close_with_session()


def r_dos_trace_start(c, fx, tmp):
    _dos_trace(c, tmp, "start")


def r_dos_trace_read(c, fx, tmp):
    _dos_trace(c, tmp, "read")


def r_dos_trace_stop(c, fx, tmp):
    _dos_trace(c, tmp, "stop")


def recipe_for(method):
    return globals().get("r_" + method.replace(".", "_"))


@pytest.mark.parametrize("method", Client.METHODS)
def test_round_trip(method, fx, c, tmp_path):
    recipe = recipe_for(method)
    assert recipe is not None, f"tests/test_client.py has no round trip for {method}"
    recipe(c, fx, tmp_path)
    seen = [raw for name, raw in c.raw if name == method]
    assert seen, f"the recipe never called {method}"
    # every raw result decodes to its model and encodes back to the same JSON
    spec = RESULT_SPECS[method]
    for raw in seen:
        assert encode(decode(raw, spec, method)) == raw
    # leave the machine paused with no breakpoints for the next recipe
    c.execution.pause()
    for bp in c.breakpoints.list().breakpoints:
        c.breakpoints.delete(breakpoint_id=bp.breakpoint_id)


# -- errors and the transport ------------------------------------------------------

def test_errors_are_their_reasons_classes(fx, c):
    with pytest.raises(MethodNotFound) as err:
        c.call("no.such.method")
    assert err.value.code == -32601 and err.value.reason == "METHOD_NOT_FOUND"
    with pytest.raises(InvalidParams) as err:
        c.memory.read(address=0x400, length=True)     # booleans are refused
    assert isinstance(err.value, RpcError) and err.value.data["errors"]
    with pytest.raises(TypeError):
        c.memory.write(address=0, data="not bytes")


def test_dos_methods_through_the_client(tmp_path):
    from guest import dos as progs
    from test_dos_rpc import DosRpcFixture
    shutil.copy(progs.path("agent_fixture"), tmp_path / "AGENTFIX.COM")
    f = DosRpcFixture(tmp_path, "C:\\AGENTFIX.COM")
    try:
        with Client(port=f.server.port) as c:
            status = c.dos.status()
            assert status.booted and status.program == "C:\\AGENTFIX.COM"
            psp = c.state.get_registers().segments.cs
            blocks = c.dos.memory_map().blocks
            assert any(b.segment == psp and b.name == "AGENTFIX" for b in blocks)
    finally:
        f.close()


def test_timeout_and_closed_connection():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    accepted = []
    t = threading.Thread(target=lambda: accepted.append(listener.accept()[0]))
    t.start()
    c = Client(port=port, timeout=0.2)
    t.join()
    with pytest.raises(RequestTimeout):            # a server that never answers
        c.session.status()
    accepted[0].close()
    with pytest.raises(TransportError):
        c.session.status(rpc_timeout=5)
    c.close()
    listener.close()
    with pytest.raises(TransportError, match="cannot connect"):
        Client(port=port)


def test_bytes_and_models_encode_for_the_wire():
    assert encode(b"\x00\xff", "bytes") == base64.b64encode(b"\x00\xff").decode()
    assert encode(M.AddressObject(space="segmented", segment=1, offset=2)) == \
        {"space": "segmented", "segment": 1, "offset": 2}
    assert encode(M.AddressObject(offset=5)) == {"offset": 5}


def test_every_reason_has_its_exception_class():
    from pypc_core.client import errors
    from pypc_core.rpc.errors import REASONS
    assert set(errors.REASONS) == set(REASONS)
    for reason, cls in errors.REASONS.items():
        exc = errors.error_from_reply({"code": -32602, "message": "m",
                                       "data": {"reason": reason, "x": 1}})
        assert type(exc) is cls and isinstance(exc, RpcError)
        assert (exc.reason, exc.code, exc.message, exc.data["x"]) == (reason, -32602, "m", 1)
    unknown = errors.error_from_reply({"code": -32000, "message": "m",
                                       "data": {"reason": "SOMETHING_NEW"}})
    assert type(unknown) is RpcError and unknown.reason == "SOMETHING_NEW"
    assert errors.TargetRunning.__name__ == "TargetRunning"
    assert errors.RevisionMismatch.reason == "REVISION_MISMATCH"


def test_pypc_gen_command(tmp_path):
    import subprocess
    import sys
    run = [sys.executable, "-m", "pypc_core.cli", "gen"]
    out = subprocess.run(run + ["client", "--out", str(tmp_path / "pkg")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert sorted(p.name for p in (tmp_path / "pkg").glob("*.py")) == \
        sorted(codegen.GENERATED + codegen.HANDWRITTEN)
    # the package stands alone: no pypc_core import
    out = subprocess.run([sys.executable, "-I", "-c", "import sys; sys.path.insert(0, '.'); import pkg; "
                          "assert 'pypc_core' not in sys.modules; print(len(pkg.Client.METHODS))"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0 and int(out.stdout) == len(Client.METHODS), out.stderr
    out = subprocess.run(run + ["docs", "--out", str(tmp_path)], capture_output=True,
                         text=True)
    assert out.returncode == 2 and "is a directory" in out.stderr
    out = subprocess.run(run + ["all", "--out", str(tmp_path)], capture_output=True,
                         text=True)
    assert out.returncode == 2 and "--out goes with" in out.stderr


def test_replies_of_the_wrong_shape_are_decode_errors():
    from pypc_core.client import DecodeError
    with pytest.raises(DecodeError, match=r"result\.offset: matches none"):
        M.AddressObject.from_json({"offset": True})          # a bool is no number
    with pytest.raises(DecodeError, match="needs 'offset'"):
        M.AddressObject.from_json({"space": "linear"})
    block = {"address": 0, "byte_count": 1,
             "data_base64": "not base64!", "data_hex": "00", "sha256": "0" * 64,
             "state_revision": 1}
    with pytest.raises(DecodeError, match=r"result\.data_base64: not base64"):
        decode(block, RESULT_SPECS["memory.read"])
    with pytest.raises(DecodeError, match=r"result\.breakpoints\[1\]: expected an object"):
        decode({"breakpoints": [{"breakpoint_id": "bp-1", "kind": "execution", "once": False,
                                 "hit_filter": {"skip": 0, "every": 1}, "hit_count": 0}, 7]},
               RESULT_SPECS["breakpoints.list"])
