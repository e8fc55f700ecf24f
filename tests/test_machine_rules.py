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
