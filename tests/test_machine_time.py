"""Machine time is emulated cycles: pacing, slicing and snapshots of the CPU
never change what the guest computes."""

import numpy as np

from pypc_core.bench import load_standard_loop
from pypc_core.cpu import Cpu
from pypc_core.cpu import state as S
from pypc_core.machine import Machine, MachineConfig
from pypc_core.system_bench import cpu_guest, floppy_image


def guest_state(m):
    return (m.clock(), m.cpu.instructions, m.cpu.regs.tobytes(),
            m.memory.read(0, 0x100000), m.memory.read(0x400, 0x100))


def run_guest(tmp_path, name, speed, seconds):
    path = tmp_path / f"{name}.img"
    floppy_image(path, cpu_guest())
    with Machine(MachineConfig(floppy_a=str(path), cow=True, speed=speed)) as m:
        m.run_seconds(seconds)
        return guest_state(m)


def test_pacing_never_changes_what_the_guest_sees(tmp_path):
    # the standard loop with the timer interrupt on, unpaced and paced to
    # 40x a real XT: same cycles, registers, memory and BIOS tick count
    turbo = run_guest(tmp_path, "turbo", 0.0, 1.5)
    paced = run_guest(tmp_path, "paced", 40.0, 1.5)
    assert turbo[0] == paced[0]
    assert turbo == paced


def test_pacing_slows_the_wall_clock(tmp_path):
    import time
    t0 = time.perf_counter()
    run_guest(tmp_path, "slow", 20.0, 1.0)       # 1 emulated s at 20x: >= 0.05 s
    assert time.perf_counter() - t0 >= 0.05


def test_cpu_state_restores_exactly():
    cpu = Cpu()
    load_standard_loop(cpu, 3, 700)
    cpu.run(cpu.cycles + 12_345)
    mem = cpu.mem.copy()
    snap = cpu.get_state()
    cpu.run(1 << 62)
    first = (cpu.regs.copy(), cpu.ctl.copy(), cpu.mem.copy())
    cpu.mem[:] = mem
    cpu.set_state(snap)
    cpu.run(1 << 62)
    assert np.array_equal(first[0], cpu.regs)
    assert np.array_equal(first[1], cpu.ctl)
    assert np.array_equal(first[2], cpu.mem)


def test_machine_step_is_one_tick():
    with Machine(MachineConfig()) as m:
        m.run_seconds(0.3)                    # the BIOS waits for a key: halted
        code = bytes([0xB0, 0x42,             # mov al, 42h
                      0xE6, 0x80,             # out 80h, al   (unclaimed port)
                      0xE4, 0x21,             # in al, 21h    (PIC IMR)
                      0xFA, 0xF4])            # cli / hlt
        m.memory.write(0x10000, code)
        m.cpu.r.cs, m.cpu.r.ip = 0x1000, 0
        m.cpu.r.if_ = False
        m.cpu.ctl[S.C_HALTED] = 0
        for ip in (2, 4, 6, 7, 8):
            n = m.cpu.instructions
            m.step()
            assert m.cpu.r.ip == ip and m.cpu.instructions == n + 1
        assert m.cpu.r.al == m.pic.imr
        # a step of a halted CPU waits only until the next device event
        before = m.clock()
        m.step()
        assert 0 < m.clock() - before <= 4 * 65536


def test_machine_state_restores_exactly(tmp_path):
    """A run from a restored state repeats the original cycle for cycle:
    timer interrupts, the BIOS, CGA, keyboard input and disk overlays."""
    path = tmp_path / "cpu.img"
    floppy_image(path, cpu_guest())
    with Machine(MachineConfig(floppy_a=str(path), cow=True)) as m:
        m.run_seconds(0.7)
        m.disks[0].write_sectors(5, bytes([0xA5]) * 512)      # an overlay to carry
        snap = m.get_state()
        m.type_text("abc")
        m.run_seconds(0.9)
        first = guest_state(m) + (m.keyboard.get_state()["fifo"], m.pit.get_state())
        m.set_state(snap)
        assert m.disks[0].read_sectors(5, 1) == bytes([0xA5]) * 512
        m.type_text("abc")
        m.run_seconds(0.9)
        again = guest_state(m) + (m.keyboard.get_state()["fifo"], m.pit.get_state())
    assert first == again


def test_machine_state_of_another_machine_is_refused(tmp_path):
    import pytest
    from pypc_core.machine import MachineError
    path = tmp_path / "cpu.img"
    floppy_image(path, cpu_guest())
    with Machine(MachineConfig(floppy_a=str(path), cow=True)) as m:
        m.run_seconds(0.2)
        snap = m.get_state()
    with Machine(MachineConfig()) as other:
        before = guest_state(other)
        with pytest.raises(MachineError, match="disk drives"):
            other.set_state(snap)
        assert guest_state(other) == before


def test_plugins_hear_machine_ready_and_shutdown():
    from pypc_core import hookimpl
    from pypc_core.plugins import PluginManager

    heard = []

    class Listener:
        @hookimpl
        def pypc_machine_ready(self, machine):
            heard.append(("ready", machine.clock(), machine.cpu.r.cs))

        @hookimpl
        def pypc_machine_shutdown(self, machine):
            heard.append(("shutdown",))

    pm = PluginManager()
    pm.select(["cga"])
    pm.pm.register(Listener(), name="listener")
    with Machine(MachineConfig(plugin_manager=pm)):
        assert heard == [("ready", 0, 0xFFFF)]             # built, reset, not run
    assert heard[-1] == ("shutdown",)


class _FrameObserver:
    """A host-side observer on emulated time: wants cycle k * period."""

    def __init__(self, start, period, count):
        self.origin = start
        self.due = start + period
        self.period = period
        self.left = count
        self.seen = []

    def next_event(self):
        return self.due if self.left else None

    def advance(self, cycle):
        self.seen.append(cycle)
        self.left -= 1
        self.due += self.period


def test_a_timed_observer_sees_its_exact_cycles_whatever_the_slicing(tmp_path):
    # a recorder's frames fall on exact emulated cycles however the run is cut
    # up, change nothing the guest computes, and stop once it is removed
    path = tmp_path / "g.img"
    floppy_image(path, cpu_guest())
    results = []
    total = 79_545 * 20 + 10
    for pieces in (1, 7, 0):
        with Machine(MachineConfig(floppy_a=str(path), cow=True)) as m:
            obs = _FrameObserver(m.clock(), 79_545, 20)
            if pieces:
                m.scheduler.add(obs, marks_ports=False)
            start = m.clock()
            for k in range(1, max(pieces, 1) + 1):
                m.run_until_cycle(start + total * k // max(pieces, 1))
            m.scheduler.remove(obs)
            m.scheduler.remove(obs)             # a second remove is no error
            assert obs not in m.scheduler.timed
            results.append((obs.seen, guest_state(m)))
            origin = obs.origin
    assert results[0][0] == [origin + 79_545 * k for k in range(1, 21)]
    assert results[0] == results[1]
    assert results[2] == ([], results[0][1])    # the guest never noticed
