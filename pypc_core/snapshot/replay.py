"""Recording and replaying host input.

Everything the host gives the guest -- keys (``Machine.press_keys``, typed
text ``Machine.type_text``, which the launcher, the live terminal and the
RPC's ``input.keyboard`` all use), bytes for a serial port (``write_input``
of a UART card) and joystick moves (``set_joystick`` of a game port) -- enters at an instruction boundary.  A
:class:`Recorder` notes each accepted input with the emulated cycle (and
instruction count) of that boundary; a :class:`Replayer` is a timed device
in the scheduler whose events are those cycles, so the CPU stops exactly
there and the same input goes in again.  Emulated time does not depend on
the host's speed, so a replay ends in the same state in turbo and at any
``--speed``.

A recording is JSON::

    {"format": "pypc-input-recording", "version": 1,
     "configuration": {...},                       # bundle.configuration()
     "start": {"clock", "instructions", "state_sha256"},
     "events": [{"cycle", "instructions", "kind": "keys", "codes": [..]},
                {"cycle", "instructions", "kind": "serial", "device", "data_base64"},
                {"cycle", "instructions", "kind": "joystick", "device", "index", "x", "y",
                 "buttons"}],
     "end": {"clock", "instructions", "state_sha256"}}

While a replay runs, live host input (terminal keys, RPC input, a serial
TCP bridge) is dropped, so it cannot change the replayed session.  Not
recorded: state changes made through the debugger (register, memory and
port writes), which are not input.
"""

import base64
import hashlib
import json
import os

from . import bundle as B
from . import codec
from .errors import SnapshotError

FORMAT = "pypc-input-recording"
VERSION = 1
MAX_RECORDING = 64 << 20


def state_sha256(machine):
    """SHA-256 of the machine's whole guest state (registers, the CPU words
    of :func:`guest_ctl`, memory, devices, disk overlays, firmware) in its
    canonical bundle encoding.  The ports the
    CPU answers are refreshed first (as after any exit): devices that catch
    their own clock up lazily (the keyboard) then agree on it, so two
    machines the guest cannot tell apart hash the same."""
    machine.ports.refresh()
    state = machine.get_state()
    state["cpu"]["ctl"] = guest_ctl(state["cpu"]["ctl"])
    tree, payloads = codec.encode(state)
    h = hashlib.sha256(json.dumps(tree, sort_keys=True, separators=(",", ":")).encode())
    for digest in sorted(payloads):
        h.update(digest.encode())
    return h.hexdigest()


def guest_ctl(ctl):
    """The CPU control words the guest's future depends on (cycle counter,
    interrupt lines, HLT, interrupt shadow, a REP string in progress,
    firmware traps), the others zeroed: the last exit and budget, the
    debugger's words and the instruction count depend on how the host sliced
    the run (the core counts a REP string resumed after a slice again)."""
    from ..cpu import state as S
    keep = (S.C_CYCLES, S.C_INTR, S.C_NMI, S.C_HALTED, S.C_INHIBIT, S.C_REP_RESUME,
            S.C_TRAP_ENABLE)
    out = ctl.copy()
    out[:] = 0
    for i in keep:
        out[i] = ctl[i]
    return out


def _serial_devices(machine):
    return {name: dev for name, dev in machine.devices.items()
            if callable(getattr(dev, "write_input", None))}


def _joystick_devices(machine):
    return {name: dev for name, dev in machine.devices.items()
            if callable(getattr(dev, "set_joystick", None))}


class _InputHooks:
    """Wraps the serial cards' ``write_input`` and sets ``machine.input_hook``
    for the keyboard entry points; ``detach`` undoes both."""

    def __init__(self, machine):
        self.machine = machine
        self.wrapped = {}
        self.wrapped_sticks = {}

    def attach(self):
        m = self.machine
        if getattr(m, "input_hook", None) is not None:
            raise SnapshotError("host input is already being recorded or replayed",
                                "input_hook")
        m.input_hook = self.on_input
        for name, dev in _serial_devices(m).items():
            original = dev.write_input
            self.wrapped[name] = original

            def wrapper(data, _name=name, _orig=original):
                return self.on_serial(_name, _orig, data)
            dev.write_input = wrapper
        for name, dev in _joystick_devices(m).items():
            original = dev.set_joystick
            self.wrapped_sticks[name] = original

            def stick(index, x, y, buttons, _name=name, _orig=original):
                return self.on_joystick(_name, _orig, index, x, y, buttons)
            dev.set_joystick = stick

    def detach(self):
        m = self.machine
        m.input_hook = None
        for names, attr in ((self.wrapped, "write_input"), (self.wrapped_sticks, "set_joystick")):
            for name in names:
                try:
                    delattr(m.devices[name], attr)    # the class method again
                except AttributeError:
                    pass
        self.wrapped = {}
        self.wrapped_sticks = {}

    def now(self):
        return {"cycle": self.machine.clock(), "instructions": int(self.machine.cpu.instructions)}


class Recorder(_InputHooks):
    def __init__(self, machine):
        super().__init__(machine)
        self.events = []
        self.start = {"clock": machine.clock(), "instructions": int(machine.cpu.instructions),
                      "state_sha256": state_sha256(machine)}
        self.configuration = B.configuration(machine)
        self.attach()

    def on_input(self, kind, data, device=None):
        self.events.append(dict(self.now(), kind="keys", codes=[int(c) for c in data]))
        return True

    def on_serial(self, name, original, data):
        accepted = original(data)
        n = len(data) if accepted is None else int(accepted)
        if n:
            self.events.append(dict(self.now(), kind="serial", device=name,
                                    data_base64=base64.b64encode(bytes(data[:n])).decode()))
        return accepted

    def on_joystick(self, name, original, index, x, y, buttons):
        out = original(index, x, y, buttons)         # a refused move raises: not recorded
        self.events.append(dict(self.now(), kind="joystick", device=name, index=index,
                                x=x, y=y, buttons=list(buttons)))
        return out

    def finish(self, path=None):
        """Stop recording; returns the recording (and writes it to ``path``,
        a new file, when given)."""
        self.detach()
        m = self.machine
        rec = {"format": FORMAT, "version": VERSION, "configuration": self.configuration,
               "start": self.start, "events": self.events,
               "end": {"clock": m.clock(), "instructions": int(m.cpu.instructions),
                       "state_sha256": state_sha256(m)}}
        if path is not None:
            data = json.dumps(rec, indent=1).encode()
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)
            try:
                fd = os.open(path, flags, 0o644)
                try:
                    os.write(fd, data)
                finally:
                    os.close(fd)
            except OSError as exc:
                raise SnapshotError(f"{path}: cannot write the recording: "
                                    f"{exc.strerror or exc}", "host_io", "io") from None
        return rec


def load_recording(source):
    """A recording from a path or a dict, checked."""
    if isinstance(source, dict):
        rec = source
    else:
        from .disks import open_regular
        fd, size = open_regular(source, "recording")      # a FIFO or device: refused
        try:
            if size > MAX_RECORDING:
                raise SnapshotError(f"{source}: a recording is at most {MAX_RECORDING} bytes",
                                    "size", "limit")
            parts, got = [], 0
            while got <= MAX_RECORDING:
                block = os.read(fd, 1 << 20)
                if not block:
                    break
                parts.append(block)
                got += len(block)
            if got > MAX_RECORDING:
                raise SnapshotError(f"{source}: a recording is at most {MAX_RECORDING} bytes",
                                    "size", "limit")
            rec = json.loads(b"".join(parts).decode("utf-8"))
        except OSError as exc:
            raise SnapshotError(f"{source}: cannot read the recording: {exc.strerror or exc}",
                                "host_io", "io") from None
        except (UnicodeDecodeError, ValueError) as exc:
            raise SnapshotError(f"{source}: not a recording (JSON): {exc}", "recording") from None
        except RecursionError:
            raise SnapshotError(f"{source}: not a recording (JSON nested too deeply)",
                                "recording") from None
        finally:
            os.close(fd)
    if not isinstance(rec, dict) or rec.get("format") != FORMAT:
        raise SnapshotError("not a pypc input recording", "recording")
    if rec.get("version") != VERSION:
        raise SnapshotError(f"recording version {rec.get('version')!r} is not supported "
                            f"(this pypc reads version {VERSION})", "version", "unsupported")
    try:
        for key in ("configuration", "start", "end"):
            if not isinstance(rec.get(key), dict):
                raise ValueError(f"{key!r} must be an object")
        for key in ("start", "end"):
            clock, digest = rec[key].get("clock"), rec[key].get("state_sha256")
            if isinstance(clock, bool) or not isinstance(clock, int) or clock < 0:
                raise ValueError(f"{key}.clock must be a cycle count")
            if not isinstance(digest, str):
                raise ValueError(f"{key}.state_sha256 must be a string")
        if not isinstance(rec.get("events"), list):
            raise ValueError("'events' must be a list")
        if not all(isinstance(ev, dict) for ev in rec["events"]):
            raise ValueError("each event must be an object")
        last = int(rec["start"]["clock"])
        for ev in rec["events"]:
            cycle = ev["cycle"]
            if isinstance(cycle, bool) or not isinstance(cycle, int) or cycle < last:
                raise ValueError("event cycles must be integers in order")
            last = cycle
            if ev["kind"] == "keys":
                if not all(isinstance(c, int) and 0 <= c <= 0xFF for c in ev["codes"]):
                    raise ValueError("scan codes must be 0..255")
            elif ev["kind"] == "serial":
                base64.b64decode(ev["data_base64"], validate=True)
                if not isinstance(ev["device"], str):
                    raise ValueError("a serial event names its device")
            elif ev["kind"] == "joystick":
                if not isinstance(ev["device"], str) or ev["index"] not in (0, 1):
                    raise ValueError("a joystick event names its device and stick 0 or 1")
                for v in (ev["x"], ev["y"]):
                    if isinstance(v, bool) or not isinstance(v, (int, float)):
                        raise ValueError("joystick positions are numbers")
                if not (isinstance(ev["buttons"], list) and len(ev["buttons"]) == 2
                        and all(isinstance(b, bool) for b in ev["buttons"])):
                    raise ValueError("joystick buttons are two booleans")
            else:
                raise ValueError(f"unknown event kind {ev['kind']!r}")
        if int(rec["end"]["clock"]) < last:
            raise ValueError("the end is before the last event")
    except (KeyError, TypeError, ValueError) as exc:
        raise SnapshotError(f"malformed recording: {exc}", "recording") from None
    return rec


class Replayer(_InputHooks):
    """Feeds a recording's input back at its cycles (a timed device in the
    scheduler, ahead of the others, as live input came before the devices
    caught up at that boundary)."""

    def __init__(self, machine, recording, check_start=True):
        super().__init__(machine)
        rec = load_recording(recording)
        diffs = B.mismatches(rec["configuration"], B.configuration(machine))
        if diffs:
            raise SnapshotError("the recording is of another machine configuration: "
                                + "; ".join(diffs), "configuration", "config")
        if machine.clock() != rec["start"]["clock"] or (
                check_start and state_sha256(machine) != rec["start"]["state_sha256"]):
            raise SnapshotError(
                f"the machine is not where the recording starts (cycle {machine.clock()}, "
                f"recording {rec['start']['clock']}; load the same snapshot or start the "
                f"same fresh machine)", "replay_start", "guard")
        for ev in rec["events"]:
            have = {"serial": _serial_devices(machine),
                    "joystick": _joystick_devices(machine)}.get(ev["kind"])
            if have is not None and ev["device"] not in have:
                raise SnapshotError(f"the recording sends {ev['kind']} input to "
                                    f"{ev['device']!r}, which this machine lacks",
                                    "configuration", "config")
        self.recording = rec
        self.events = list(rec["events"])
        self.next = 0
        self.end = int(rec["end"]["clock"])
        self.injecting = False
        self.dropped = 0
        self.divergence = None
        self.attach()
        machine.scheduler.add(self, first=True)

    # -- a timed device ------------------------------------------------------------
    def next_event(self):
        if self.next < len(self.events):
            return self.events[self.next]["cycle"]
        return None

    def advance(self, cycle):
        m = self.machine
        while self.next < len(self.events) and self.events[self.next]["cycle"] <= cycle:
            ev = self.events[self.next]
            self.next += 1
            if self.divergence is None and m.clock() != ev["cycle"]:
                self.divergence = (f"input {self.next} was recorded at cycle {ev['cycle']} "
                                   f"but replayed at cycle {m.clock()}")
            self.injecting = True
            try:
                if ev["kind"] == "keys":
                    m.press_keys(ev["codes"])
                elif ev["kind"] == "serial":
                    m.devices[ev["device"]].write_input(base64.b64decode(ev["data_base64"]))
                else:
                    m.devices[ev["device"]].set_joystick(ev["index"], ev["x"], ev["y"],
                                                         ev["buttons"])
            finally:
                self.injecting = False

    # -- live input while replaying is dropped ------------------------------------------
    def on_input(self, kind, data, device=None):
        if self.injecting:
            return True
        self.dropped += 1
        return False

    def on_serial(self, name, original, data):
        if self.injecting:
            return original(data)
        self.dropped += 1
        return 0

    def on_joystick(self, name, original, index, x, y, buttons):
        if self.injecting:
            return original(index, x, y, buttons)
        self.dropped += 1
        return None

    @property
    def done(self):
        return self.next >= len(self.events) and self.machine.clock() >= self.end

    def finish(self):
        """Detach; returns ``{"identical", "state_sha256", "expected_sha256",
        "clock", "end_clock", "divergence", "dropped_live_inputs"}``."""
        m = self.machine
        self.detach()
        m.scheduler.remove(self)
        digest = state_sha256(m)
        expected = self.recording["end"]["state_sha256"]
        return {"identical": digest == expected and m.clock() == self.end
                and self.divergence is None and self.next == len(self.events),
                "state_sha256": digest, "expected_sha256": expected, "clock": m.clock(),
                "end_clock": self.end, "divergence": self.divergence,
                "dropped_live_inputs": self.dropped}


def replay(machine, recording, speed=None, check_start=True, max_cycles=None):
    """Replay ``recording`` on ``machine`` to its end; returns the result of
    :meth:`Replayer.finish` (with ``timed_out``).  ``speed`` (optional) sets
    the pacing; ``max_cycles`` (optional) ends the replay that many emulated
    cycles after it started, even before the recording's end (the result is
    then not identical and ``timed_out`` is true)."""
    rp = Replayer(machine, recording, check_start)
    if speed is not None:
        machine.scheduler.speed = speed
        machine.scheduler.reset()
    stop_at = rp.end if max_cycles is None else min(rp.end, machine.clock() + int(max_cycles))
    try:
        while machine.clock() < stop_at:
            stop = machine.run_until_cycle(stop_at)
            if stop.kind not in ("budget", "pause"):
                break
    finally:
        result = rp.finish()
    result["timed_out"] = max_cycles is not None and result["clock"] < rp.end
    return result
