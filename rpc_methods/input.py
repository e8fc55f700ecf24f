"""Method group ``input``: ``input.keyboard`` (a batch of XT make/break
events), ``keyboard.scancode`` (one event), ``input.state``, and the game
port's ``input.joystick`` / ``input.joystick.state``.

Keys enter the keyboard through the machine's typist (``Machine.press_keys``):
in order, after anything still being typed, at a pace the 8088 BIOS keeps up
with, so a batch never overflows the keyboard's FIFO."""

from pypc_core import hookimpl
from pypc_core.rpc import needs_live_target, params as P
from pypc_core.rpc.errors import device_absent, invalid, limit

MAX_EVENTS = 32


def _event(event, where, default_pressed=None):
    code = P.number(event["scan_code"], f"{where}.scan_code", 0, 0x7F)
    if "pressed" in event:
        pressed = P.boolean(event["pressed"], f"{where}.pressed")
    elif default_pressed is None:
        raise invalid(f"{where}.pressed is required", field=f"{where}.pressed")
    else:
        pressed = default_pressed
    return code, pressed


def _queue(ctl, events):
    codes = []
    for code, pressed in events:
        codes.append(code if pressed else code | 0x80)
    ctl.machine.press_keys(codes)
    for code, pressed in events:
        if pressed:
            ctl.pressed.add(code)
        else:
            ctl.pressed.discard(code)
    ctl.bump()
    return {"accepted": len(events), "state_revision": ctl.revision}


@needs_live_target
def keyboard(ctl, params):
    if "events" in params:
        events = params["events"]
        if len(events) > MAX_EVENTS:
            raise limit(f"events has {len(events)} entries; the limit is {MAX_EVENTS}",
                        field="events", limit=MAX_EVENTS)
        if not events:
            raise invalid("events must contain at least one event", field="events")
        parsed = [_event(e, f"events[{i}]") for i, e in enumerate(events)]
    else:
        parsed = [_event(params, "params")]
    return _queue(ctl, parsed)


@needs_live_target
def scancode(ctl, params):
    return _queue(ctl, [_event(params, "params", default_pressed=True)])


def gameport(ctl):
    for dev in ctl.machine.devices.values():
        caps = getattr(getattr(dev, "declaration", None), "capabilities", None) or []
        if "game-port" in caps or "gameport" in caps:
            return dev
    return None


def joysticks(ctl):
    dev = gameport(ctl)
    if dev is None:
        return []
    return [dict(j) for j in dev.joysticks()]


def state(ctl, params):
    return {"keyboard": {"pressed_scancodes": sorted(ctl.pressed)},
            "joysticks": joysticks(ctl), "state_revision": ctl.revision}


@needs_live_target
def joystick(ctl, params):
    ctl.require_paused("input.joystick")
    dev = gameport(ctl)
    if dev is None:
        raise device_absent("input.joystick: no game port (start pypc with the "
                            "game-port plugin)", device="gameport")
    index = P.number(params["joystick"], "joystick", 0, 1)
    axes = {}
    for axis in ("x", "y"):
        value = params[axis]
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or value != value or not -1.0 <= value <= 1.0:
            raise invalid(f"{axis} must be a finite number from -1 to +1", field=axis)
        axes[axis] = float(value)
    buttons = params["buttons"]
    if len(buttons) != 2 or not all(isinstance(b, bool) for b in buttons):
        raise invalid("buttons must be exactly two booleans", field="buttons")
    dev.set_joystick(index, axes["x"], axes["y"], list(buttons))
    ctl.bump()
    return {"joysticks": joysticks(ctl), "state_revision": ctl.revision}


@needs_live_target
def joystick_state(ctl, params):
    return {"joysticks": joysticks(ctl), "state_revision": ctl.revision}


@hookimpl
def pypc_rpc_methods():
    return {"input.keyboard": keyboard, "keyboard.scancode": scancode,
            "input.state": state, "input.joystick": joystick,
            "input.joystick.state": joystick_state}
