"""The emulation rules live in the Machine and its parts, not in whoever
calls them: register writes (``Machine.set_registers``), host port access
(``Machine.io_read``/``io_write``) and the observers of the port map and the
PIC (which replaced wrapping their methods on the instance).  The RPC
methods go through the same calls; tests/test_contract*.py cover them over
the wire."""

import pytest

from pypc_core.bus.ports import PORT_PYTHON, PORT_UNCLAIMED
from pypc_core.machine import Machine, MachineConfig

BASE = 0x7C00
# cli; mov al,0AAh; out 21h,al; mov dx,21h; out dx,al; in al,21h; in al,dx;
# in al,0F0h (a port nobody claims); mov ax,1234h; out dx,ax (a word); hlt
PROGRAM = bytes.fromhex("FA B0AA E621 BA2100 EE E421 EC E4F0 B83412 EF F4")
OUT_IMM, OUT_DX, IN_IMM, IN_DX, IN_FREE, OUT_WORD = 0x7C03, 0x7C08, 0x7C09, 0x7C0B, 0x7C0C, 0x7C11


def bare(code=PROGRAM):
    return Machine(MachineConfig(plugins=[], bare=True, loads=[(code, BASE)],
                                 entry=(0, BASE)))


class Seen:
    def __init__(self, machine):
        self.machine = machine
        self.events = []

    def before_write(self, port, value, width):
        self.events.append(("before", port, value, width, self.machine.io_source(port, width)))

    def after_write(self, port, value, width):
        self.events.append(("write", port, value, width, self.machine.io_source(port, width)))

    def after_read(self, port, width, value):
        self.events.append(("read", port, value, width, self.machine.io_source(port, width)))


def final_state(m):
    return m.clock(), m.cpu.regs.tobytes(), m.memory.read(0, 0x100000)


@pytest.mark.parametrize("unclaimed", [False, True])
def test_a_port_observer_sees_every_guest_access_at_its_own_instruction(unclaimed):
    plain = bare()
    assert plain.run_for(100_000).kind == "halt"
    m = bare()
    seen = Seen(m)
    m.ports.add_observer(seen, unclaimed=unclaimed)
    assert m.run_for(100_000).kind == "halt"
    writes = [e for e in seen.events if e[0] == "write"]
    reads = [e for e in seen.events if e[0] == "read"]
    assert writes == [("write", 0x21, 0xAA, 1, (0, OUT_IMM)),
                      ("write", 0x21, 0xAA, 1, (0, OUT_DX)),
                      ("write", 0x21, 0x1234, 2, (0, OUT_WORD))]
    # every write is announced before it happens, in the same order
    assert [e[1:4] for e in seen.events if e[0] == "before"] == [w[1:4] for w in writes]
    expected_reads = [("read", 0x21, 0xAA, 1, (0, IN_IMM)), ("read", 0x21, 0xAA, 1, (0, IN_DX))]
    if unclaimed:
        expected_reads.append(("read", 0xF0, 0xFF, 1, (0, IN_FREE)))
    assert reads == expected_reads
    # the observer changed nothing the guest computed
    assert final_state(m) == final_state(plain)


def test_host_port_access_is_marked_as_the_hosts():
    m = bare()
    seen = Seen(m)
    m.ports.add_observer(seen)
    assert m.io_write(0x21, 0x5A) is True
    assert m.io_read(0x21) == 0x5A
    assert m.io_write(0xF0, 1) is False                 # nobody took it
    assert [e for e in seen.events if e[0] != "before"] == [
        ("write", 0x21, 0x5A, 1, None), ("read", 0x21, 0x5A, 1, None),
        ("write", 0xF0, 1, 1, None)]


def test_observers_hold_the_fast_paths_off_until_the_last_one_leaves():
    m = bare()
    pm = m.ports
    kinds = pm.port_kind.copy()
    assert kinds[0x21] != PORT_PYTHON                  # the PIC's IMR: answered in the CPU
    a, b = Seen(m), Seen(m)
    pm.add_observer(a, unclaimed=True)
    pm.add_observer(a)                                  # once is once
    pm.add_observer(b)
    assert pm.observed and not pm.fast_reads
    assert pm.port_kind[0x21] == PORT_PYTHON and pm.port_kind[0xF0] == PORT_PYTHON
    pm.set_fast_reads(True)                             # asked for, but observed: stays off
    assert not pm.fast_reads and pm.port_kind[0x21] == PORT_PYTHON
    pm.remove_observer(a)                               # only a wanted unclaimed ports
    assert pm.port_kind[0xF0] == PORT_UNCLAIMED and pm.port_kind[0x21] == PORT_PYTHON
    pm.remove_observer(b)
    pm.remove_observer(b)                               # gone is no error
    assert not pm.observed and pm.fast_reads
    assert (pm.port_kind == kinds).all()
    assert "read" not in pm.__dict__ and "write" not in pm.__dict__
    # an observer added while fast reads are switched off leaves them off
    pm.set_fast_reads(False)
    pm.add_observer(a)
    pm.remove_observer(a)
    assert not pm.fast_reads


def test_pic_observers_see_edges_and_acknowledges():
    m = bare()
    pic = m.pic
    seen = []

    def watch(kind, irq, vector):
        seen.append((kind, irq, vector))
    pic.add_observer(watch)
    pic.add_observer(watch)
    pic.raise_irq(3)
    pic.raise_irq(3)                    # already high: no edge
    pic.lower_irq(3)
    pic.lower_irq(3)
    pic.remove_observer(watch)
    pic.raise_irq(4)
    assert seen == [("irq_raise", 3, None), ("irq_lower", 3, None)]


def test_set_registers_is_all_or_nothing_and_restarts_at_a_new_csip():
    m = bare(bytes.fromhex("F4"))       # hlt (interrupts on: the CPU waits in HLT)
    m.run_for(10_000)
    assert m.cpu.halted
    before = m.cpu.regs.tobytes()
    with pytest.raises(ValueError, match="unknown register 'xx'"):
        m.set_registers(ax=1, xx=2)
    with pytest.raises(ValueError, match="16-bit"):
        m.set_registers(ax=1, bx=0x10000)
    with pytest.raises(ValueError, match="16-bit"):
        m.set_registers(ax=True)
    assert m.cpu.regs.tobytes() == before and m.cpu.halted
    after = m.set_registers(ax=0x1234, ip=BASE)
    assert after["ax"] == 0x1234 and after["ip"] == BASE
    assert not m.cpu.halted                             # a fresh instruction at CS:IP
    m.set_registers(flags=0)
    assert m.registers.flags & 0xF002 == 0xF002         # the 8088's fixed ones stay


# cli; cld; xor di,di; mov ax,1000h; mov es,ax; xor ax,ax;
# again: mov cx,0FFFFh; rep stosb; jmp again           (then sti; hlt at 7C20h)
REP_FOREVER = bytes.fromhex("FA FC 31FF B80010 8EC0 31C0 B9FFFF F3AA EBF9")
HALT_AT = 0x7C20
HALT_CODE = bytes.fromhex("FA F4")                      # cli; hlt: waits for good


def _cpu_state(m):
    from pypc_core.cpu import state as S
    st = m.cpu.get_state()
    ctl = st["ctl"].copy()
    return st["regs"].tobytes(), int(ctl[S.C_REP_RESUME]), int(ctl[S.C_HALTED])


def test_a_register_write_through_python_and_through_rpc_leaves_the_same_machine():
    # the same rule on both roads: mid-REP and in HLT, a new IP over
    # state.set_registers and over Machine.set_registers gives one CPU state
    from rpc_client import RpcFixture
    from pypc_core.cpu import state as S
    code = REP_FOREVER + bytes(HALT_AT - BASE - len(REP_FOREVER)) + HALT_CODE
    fx = RpcFixture(plugins=[], bare=True, loads=[(code, BASE)], entry=(0, BASE))
    try:
        c = fx.client()
        c.call("execution.pause")
        for _ in range(50):                             # stop inside the REP
            if fx.machine.cpu.ctl[S.C_REP_RESUME]:
                break
            op = c.call("execution.run_until", {"max_emulated_ns": 7_000})
            c.call("execution.wait", {"operation_id": op["operation_id"], "timeout_ms": 5000})
        assert fx.machine.cpu.ctl[S.C_REP_RESUME] == 1
        for case in ("rep", "hlt"):
            py = bare(code)
            py.cpu.set_state(fx.machine.cpu.get_state())
            py.memory.mem[:] = fx.machine.memory.mem
            before = _cpu_state(py)
            assert before[1 if case == "rep" else 2] == 1, case
            regs = c.call("state.get_registers")
            c.call("state.set_registers", {
                "expected_state_revision": regs["state_revision"],
                "expected": {"ip": regs["ip"]}, "set": {"ip": HALT_AT}})
            py.set_registers(ip=HALT_AT)
            assert _cpu_state(py) == _cpu_state(fx.machine), case
            assert _cpu_state(py)[1:] == (0, 0)
            if case == "rep":                           # now into the HLT for the second case
                op = c.call("execution.run_until", {"max_emulated_ns": 50_000})
                c.call("execution.wait", {"operation_id": op["operation_id"],
                                          "timeout_ms": 5000})
                c.call("execution.pause")
                assert fx.machine.cpu.halted
    finally:
        fx.close()
