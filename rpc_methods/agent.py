"""Method group ``agent``: ``agent.capabilities``, ``emulator.info`` and the
``rpc.discover`` extension (the OpenRPC document assembled from
``schemas/``)."""

from pypc_core import __version__, hookimpl
from pypc_core.rpc.errors import invalid

PROTOCOL = "JSON-RPC 2.0 over localhost JSON-lines"
LIMITS = {"max_memory_bytes": 65536, "max_keyboard_events": 32,
          "max_trace_events": 65536, "max_observation_windows": 16,
          "max_observation_memory_bytes": 65536, "retained_video_snapshots": 8}

# The contract's method order; implemented methods are listed in this order
# and extensions (methods the contract does not name) after them.
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


def method_list(names):
    names = set(names)
    ordered = [m for m in CONTRACT_METHODS if m in names]
    return ordered + sorted(names - set(CONTRACT_METHODS))


CONTRACT_ADAPTERS = ("CGA", "VGA")


def video_adapters(machine):
    """Adapters pypc can run: the contract's ``["CGA", "VGA"]`` in that order
    (whichever one this machine uses; ``session.status`` names it), then
    any other installed video device plugin's."""
    found = []
    if machine.video is not None:
        found.append(machine.video.adapter)
    pm = machine.plugin_manager
    from pypc_core.plugins import DEVICE_GROUP
    for name in pm.available(DEVICE_GROUP):
        try:
            module = pm.load(name, DEVICE_GROUP)
            decl = module.pypc_device_declare()
        except Exception:
            continue
        for d in decl if isinstance(decl, (list, tuple)) else [decl]:
            caps = getattr(d, "capabilities", None) or []
            if "video" in caps and d.name.upper() not in found:
                found.append(d.name.upper())
    return [a for a in CONTRACT_ADAPTERS if a in found] + \
        [a for a in found if a not in CONTRACT_ADAPTERS]


class Capabilities:
    """agent.capabilities, worked out once per server (a controller part
    that outlives the machine: adapters and methods are the server's)."""

    def __init__(self, value):
        self.value = value

    def on_event(self, event, ctl):
        return True


def capabilities(ctl, params):
    part = ctl.parts.get(Capabilities)
    if part is None:
        cache = {
            "protocol": PROTOCOL,
            "endpoint": ctl.endpoint or "",
            "cpu": "8088",
            "memory_bytes": 1 << 20,
            "video_adapters": video_adapters(ctl.machine),
            "address_spaces": ["physical", "linear", "segmented"],
            "limits": dict(LIMITS),
            "methods": method_list(ctl.method_names),
        }
        part = ctl.parts.put(Capabilities, Capabilities(cache))
    cache = part.value
    out = dict(cache)
    out["limits"] = dict(cache["limits"])
    out["methods"] = list(cache["methods"])
    out["video_adapters"] = list(cache["video_adapters"])
    return out


def discover(ctl, params):
    if ctl.schemas is None:
        raise invalid("no schemas are loaded")
    return ctl.schemas.openrpc(title="pypc", version=__version__)


@hookimpl
def pypc_rpc_methods():
    return {"agent.capabilities": capabilities, "emulator.info": capabilities,
            "rpc.discover": discover}
