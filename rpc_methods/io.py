"""Method group ``io``: ``io.read`` (any time; real read side effects) and
``io.write`` (paused), both through the machine (``Machine.io_read``/``io_write``) as an 8088
``IN``/``OUT`` byte would."""

from pypc_core import hookimpl
from pypc_core.rpc import needs_live_target, params as P


@needs_live_target
def read(ctl, params):
    port = P.number(params["port"], "port", 0, 0xFFFF)
    value = ctl.machine.io_read(port, 1)
    ctl.bump()
    return {"port": port, "value": value, "state_revision": ctl.revision}


@needs_live_target
def write(ctl, params):
    ctl.require_paused("io.write")
    port = P.number(params["port"], "port", 0, 0xFFFF)
    value = P.number(params["value"], "value", 0, 0xFF)
    handled = ctl.machine.io_write(port, value, 1)
    ctl.bump()
    return {"port": port, "value": value, "handled": handled,
            "state_revision": ctl.revision}


@hookimpl
def pypc_rpc_methods():
    return {"io.read": read, "io.write": write}
