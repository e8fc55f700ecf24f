"""The game port plugin: one-shots answered inside the CPU, the 100 kilohm
timing model, buttons active low, movement never re-arming an expired axis,
and the guest polling loop tests/guest/joystick.asm."""

import json
import math
import sys
from pathlib import Path

import pytest

from pypc_core.board import Backplane
from pypc_core.cpu import state as S
from pypc_core.machine import Machine, MachineConfig
from pypc_plugins.gameport import GamePort, JoystickError, axis_cycles

sys.path.insert(0, str(Path(__file__).resolve().parent))
from guest import HERE  # noqa: E402

from port_exits import ExitCounter

PROGRAM = Path(HERE) / "joystick.bin"
LOOP_CYCLES = 57                 # the counting loop of joystick.asm
# the one-shots fire as the OUT completes, when the first IN starts


class Bench:
    def __init__(self):
        self.cycle = 1000
        self.bp = Backplane(clock=lambda: self.cycle)
        self.gp = GamePort()
        self.gp.attach(self.bp.board(GamePort.declaration))

    def read(self):
        return self.bp.ports.read(0x201)

    def fire(self):
        self.bp.ports.write(0x201, 0)


def test_axis_length_follows_the_100_kilohm_model():
    assert axis_cycles(-1) == 120            # 25.2 us
    assert axis_cycles(0) == 2744            # 575.2 us
    assert axis_cycles(1) == 5367            # 1125.2 us
    assert axis_cycles(0.5) == round((25.2 + 550 * 1.5) * 4.77)


def test_fire_read_and_buttons_active_low():
    b = Bench()
    assert b.read() == 0xF0                  # nothing timing, no button pressed
    b.gp.set_joystick(0, -1, 1, [True, False])
    b.gp.set_joystick(1, 0, 0, [False, True])
    assert b.read() == 0xF0 & ~0x10 & ~0x80  # A1 and B2 pressed read 0
    b.fire()
    assert b.read() & 0x0F == 0x0F
    b.cycle = 1000 + 120                     # A x (-1) has run out
    assert b.read() & 0x0F == 0x0E
    b.cycle = 1000 + 2744                    # B x, B y (centre) too
    assert b.read() & 0x0F == 0x02
    b.cycle = 1000 + 5367
    assert b.read() & 0x0F == 0x00


def test_movement_moves_a_running_axis_but_never_rearms_an_expired_one():
    b = Bench()
    b.gp.set_joystick(0, -1, 0, [False, False])
    b.fire()
    b.cycle = 1000 + 500                      # A x expired (120), A y runs (2744)
    b.gp.set_joystick(0, 1, -1, [False, False])
    assert b.read() & 0x03 == 0x00            # x stays expired; y now ends at 120
    b.gp.set_joystick(0, 1, 1, [False, False])
    assert b.read() & 0x03 == 0x00            # y expired by then: not re-armed
    b.fire()                                  # the next fire uses the new positions
    b.cycle += 5366
    assert b.read() & 0x03 == 0x03
    b.cycle += 1
    assert b.read() & 0x03 == 0x00
    b.fire()
    b.cycle += 100
    b.gp.set_joystick(0, -1, 0, [False, False])   # x still timing: now ends at 120
    assert b.read() & 0x03 == 0x03
    b.cycle += 20
    assert b.read() & 0x03 == 0x02


@pytest.mark.parametrize("args, message", [
    ((2, 0, 0, [False, False]), "index"),
    ((0, 1.5, 0, [False, False]), "x must be"),
    ((0, 0, math.nan, [False, False]), "y must be"),
    ((0, True, 0, [False, False]), "x must be"),
    ((0, 0, 0, [False]), "two booleans"),
    ((0, 0, 0, [1, 0]), "two booleans"),
])
def test_bad_updates_change_nothing(args, message):
    b = Bench()
    before = b.gp.get_state()
    with pytest.raises(JoystickError, match=message):
        b.gp.set_joystick(*args)
    assert b.gp.get_state() == before


def test_state_round_trip():
    b = Bench()
    b.gp.set_joystick(1, 0.25, -0.5, [True, False])
    b.fire()
    b.cycle += 300
    state = json.loads(json.dumps(b.gp.get_state()))
    other = Bench()
    other.cycle = b.cycle
    other.gp.set_state(state)
    assert other.gp.get_state() == state
    for step in range(0, 6000, 37):
        b.cycle = other.cycle = state["last_fire"] + step
        assert b.read() == other.read()
    assert other.gp.joysticks()[1] == {"joystick": 1, "x": 0.25, "y": -0.5,
                                        "buttons": [True, False]}
    with pytest.raises(ValueError):
        other.gp.set_state({"positions": []})


POSITIONS = [((-1, -1), (False, False)), ((0, 0.5), (True, False)),
             ((1, 1), (False, True)), ((0.25, -0.75), (True, True))]


def run_joystick_program(fast=True):
    """Counts and buttons for each of POSITIONS, and the exits on 201h."""
    results, exits = [], []
    with Machine(MachineConfig(plugins=["cga", "gameport"])) as m:
        m.ports.set_fast_reads(fast)
        m.run_seconds(0.3)
        assert (m.memory.read_word(0x410) >> 12) & 1            # game adapter present
        m.memory.write(0x10000, PROGRAM.read_bytes())
        m.cpu.r.cs, m.cpu.r.ip = 0x1000, 0
        m.cpu.ctl[S.C_HALTED] = 0
        m.ports.add_observer(ExitCounter(exits), exits_only=True)
        gp = m.devices["gameport"]
        for n, ((x, y), buttons) in enumerate(POSITIONS, start=1):
            gp.set_joystick(0, x, y, list(buttons))
            gp.set_joystick(1, -y, x, [buttons[1], buttons[0]])
            m.memory.write(0x500, bytes([n]))
            for _ in range(100):
                m.run_for(10_000)
                if m.memory.read(0x501, 1)[0] == n:
                    break
            assert m.memory.read(0x501, 1)[0] == n
            counts = [m.memory.read_word(0x510 + 2 * i) for i in range(4)]
            results.append((counts, m.memory.read(0x518, 1)[0]))
    return results, exits


def test_guest_joystick_counts_follow_the_axis_positions():
    results, exits = run_joystick_program()
    for ((x, y), buttons), (counts, nibble) in zip(POSITIONS, results):
        for pos, count in zip((x, y, -y, x), counts):
            cycles = axis_cycles(pos)
            # within one polling iteration of the model ...
            assert abs(count - cycles / LOOP_CYCLES) <= 1, (pos, count)
            # ... and exactly the IN reads that fall before the axis expires
            assert count == -(-cycles // LOOP_CYCLES)
        pressed = [buttons[0], buttons[1], buttons[1], buttons[0]]
        assert nibble == sum(0 if p else 1 << i for i, p in enumerate(pressed))
    assert 0x201 not in exits                 # every OUT and IN stayed in the CPU


def test_python_path_gives_the_same_counts():
    fast, fast_exits = run_joystick_program(True)
    slow, slow_exits = run_joystick_program(False)
    assert fast == slow
    assert 0x201 in slow_exits and 0x201 not in fast_exits


def test_joystick_program_reassembles(tmp_path):
    from guest import assemble, find_nasm
    if find_nasm() is None:
        pytest.skip("nasm is not installed")
    assert assemble("joystick", str(tmp_path / "j.bin")) == PROGRAM.read_bytes()
