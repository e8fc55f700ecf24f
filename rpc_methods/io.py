"""Method group ``io``: ``io.read`` (any time; real read side effects) and
``io.write`` (paused), both through the machine's port map as an 8088
``IN``/``OUT`` byte would."""

from pypc_core import hookimpl
from pypc_core.rpc import params as P


def read(ctl, params):
    port = P.number(params["port"], "port", 0, 0xFFFF)
    value = ctl.machine.ports.read(port, 1)
    ctl.machine.scheduler.invalidate()
    ctl.bump()
    return {"port": port, "value": value, "state_revision": ctl.revision}


def write(ctl, params):
    ctl.require_paused("io.write")
    port = P.number(params["port"], "port", 0, 0xFFFF)
    value = P.number(params["value"], "value", 0, 0xFF)
    handled = bool(ctl.machine.ports.write(port, value, 1))
    ctl.machine.scheduler.invalidate()
    ctl.bump()
    return {"port": port, "value": value, "handled": handled,
            "state_revision": ctl.revision}


@hookimpl
def pypc_rpc_methods():
    return {"io.read": read, "io.write": write}
