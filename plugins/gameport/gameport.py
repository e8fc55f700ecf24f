"""IBM game control adapter: port 201h, two sticks with two axes and two
buttons each.

Port 201h
    write (any value): fires the four one-shots (the NE558's timers);
    read: bits 0-3 are the one-shots of stick A x, A y, B x, B y (1 while
    timing), bits 4-7 the buttons A1, A2, B1, B2, active low (0 = pressed).

Timing (the 100 kilohm model of the API contract)
    An axis at position p (-1 left/up ... +1 right/down) times out
    25.2 + 550 x (p + 1) microseconds after the fire, at 4.77 CPU cycles a
    microsecond.  Moving a stick changes when an axis that is still timing
    expires (counted from the fire); it never re-arms one that has expired.

Both reads and writes of 201h are answered inside the CPU loop by the
board's one-shot primitive (``Board.oneshot``): a guest polling the port
never leaves the compiled code.  The Python handlers (used when fast paths
are off) compute the same from the same parameter block.
"""

import math

from pypc_core.device import Device, DeviceDeclaration
from pypc_core.errors import PypcError

PORT = 0x201
CYCLES_PER_US = 4.77
AXIS_MASKS = (0x01, 0x02, 0x04, 0x08)       # A x, A y, B x, B y
BUTTON_SHIFT = 4                            # A1, A2, B1, B2 in bits 4-7


class JoystickError(PypcError):
    """A joystick update that is refused (nothing changed)."""


def axis_cycles(position):
    """CPU cycles an axis at ``position`` (-1..1) keeps its bit set."""
    return int(round((25.2 + 550.0 * (position + 1.0)) * CYCLES_PER_US))


class GamePort(Device):
    declaration = DeviceDeclaration(name="gameport", ports=[PORT],
                                    capabilities=["game-port"])

    def __init__(self):
        self.clock = lambda: 0
        self.oneshot = None
        self.positions = [[0.0, 0.0], [0.0, 0.0]]
        self.buttons = [[False, False], [False, False]]
        self._expiry = [-(1 << 40)] * 4       # until attached
        self._fires = 0
        self._last = -(1 << 40)

    def attach(self, board):
        self.clock = board.clock
        board.claim_ports([PORT], read=self.read_port, write=self.write_port)
        self.oneshot = board.oneshot(PORT, masks=AXIS_MASKS,
                                     constant_bits=self._button_bits())
        self._publish_durations()

    def reset(self):
        """The card has no state of its own but the timers, which run out."""
        if self.oneshot is not None:
            for i in range(4):
                self.oneshot.set_expiry(i, -(1 << 40))

    # -- the port (Python path) ----------------------------------------------------
    def read_port(self, port):
        return self.oneshot.read(self.clock())

    def write_port(self, port, value):
        self.oneshot.fire(self.clock())

    # -- host input (input.joystick) ----------------------------------------------
    def _button_bits(self):
        bits = 0xF0
        for stick in range(2):
            for b in range(2):
                if self.buttons[stick][b]:
                    bits &= ~(1 << (BUTTON_SHIFT + 2 * stick + b))
        return bits

    def _publish_durations(self):
        for stick in range(2):
            for axis in range(2):
                self.oneshot.set_duration(2 * stick + axis,
                                          axis_cycles(self.positions[stick][axis]))

    def set_joystick(self, index, x, y, buttons):
        """Move stick ``index`` (0 or 1) to (``x``, ``y``), each a finite
        number in -1..1, with ``buttons`` two booleans.  Everything is
        checked first; a bad value changes nothing.  An axis still timing
        expires at the fire plus its new length; an expired one stays so."""
        if index not in (0, 1) or isinstance(index, bool):
            raise JoystickError(f"joystick index must be 0 or 1, not {index!r}")
        for name, v in (("x", x), ("y", y)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) \
                    or not math.isfinite(v) or not -1.0 <= v <= 1.0:
                raise JoystickError(f"joystick {name} must be a finite number in -1..1, "
                                    f"not {v!r}")
        if not isinstance(buttons, (list, tuple)) or len(buttons) != 2 \
                or not all(isinstance(b, bool) for b in buttons):
            raise JoystickError("joystick buttons must be exactly two booleans")
        self.positions[index] = [float(x), float(y)]
        self.buttons[index] = [buttons[0], buttons[1]]
        if self.oneshot is None:
            return
        now = self.clock()
        last = self.oneshot.last_fire
        for axis in range(2):
            i = 2 * index + axis
            self.oneshot.set_duration(i, axis_cycles(self.positions[index][axis]))
            if now < self.oneshot.expiry(i):          # still timing: moves with the stick
                self.oneshot.set_expiry(i, last + self.oneshot.duration(i))
        self.oneshot.constant_bits = self._button_bits()

    def joysticks(self):
        """The two sticks as ``input.joystick.state`` reports them."""
        return [{"joystick": i, "x": self.positions[i][0], "y": self.positions[i][1],
                 "buttons": list(self.buttons[i])} for i in range(2)]

    # -- snapshots -----------------------------------------------------------------
    def get_state(self):
        one = self.oneshot
        return {"positions": [list(p) for p in self.positions],
                "buttons": [list(b) for b in self.buttons],
                "expiry": [one.expiry(i) for i in range(4)] if one else list(self._expiry),
                "fires": one.fires if one else self._fires,
                "last_fire": one.last_fire if one else self._last}

    def set_state(self, state):
        try:
            positions = [[float(v) for v in p] for p in state["positions"]]
            buttons = [[bool(v) for v in b] for b in state["buttons"]]
            expiry = [int(v) for v in state["expiry"]]
            fires, last = int(state["fires"]), int(state["last_fire"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"game port state is malformed: {exc}") from None
        if [len(p) for p in positions] != [2, 2] or [len(b) for b in buttons] != [2, 2] \
                or len(expiry) != 4:
            raise ValueError("game port state does not fit two sticks")
        self.positions, self.buttons = positions, buttons
        if self.oneshot is None:
            self._expiry, self._fires, self._last = expiry, fires, last
            return
        self.oneshot.set_fires(fires, last)
        for i in range(4):
            self.oneshot.set_expiry(i, expiry[i])
        self._publish_durations()
        self.oneshot.constant_bits = self._button_bits()
