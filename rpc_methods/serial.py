"""Method group ``serial``: ``serial.status``, ``serial.write`` and
``serial.read`` on COM1 (the ``uart`` device plugin; without it every call
is refused with reason ``DEVICE_ABSENT``).  Thin adapters over the UART's
host side (``write_input``, ``read_output``, ``status``)."""

from pypc_core import hookimpl
from pypc_core.rpc import params as P
from pypc_core.rpc.errors import device_absent, invalid, limit
from pypc_core.rpc.shapes import decode_base64

MAX_WRITE = 4096
MAX_READ = 65536
DEFAULT_READ = 4096


def com1(ctl, method):
    first = None
    for dev in ctl.machine.devices.values():
        caps = getattr(getattr(dev, "declaration", None), "capabilities", None) or []
        if "serial" in caps:
            if "com1" in caps:
                return dev
            first = first or dev
    if first is None:
        raise device_absent(f"{method}: no serial port (start pypc with --plugins ...,uart)",
                            device="uart")
    return first


def _error(exc):
    text = str(exc)
    if "no longer retained" in text:
        return invalid(text, "CURSOR_EXPIRED")
    if "loopback" in text or "full" in text:
        return invalid(text, "PRECONDITION_FAILED")
    return invalid(text)


def status(ctl, params):
    out = dict(com1(ctl, "serial.status").status())
    if out.get("transport") == "virtual":
        # the contract's name for a port fed through serial.write, input
        # waiting for the guest to read it (COMPAT serial)
        out["transport"] = "flow-controlled-rpc"
    return out


def write(ctl, params):
    uart = com1(ctl, "serial.write")
    data = decode_base64(params["data_base64"])
    if not data:
        raise invalid("data_base64 must decode to at least 1 byte", field="data_base64")
    if len(data) > MAX_WRITE:
        raise limit(f"data_base64 decodes to {len(data)} bytes; the limit is {MAX_WRITE}",
                    field="data_base64", limit=MAX_WRITE)
    try:
        accepted = uart.write_input(data)
    except Exception as exc:
        if type(exc).__name__ != "SerialError":
            raise
        raise _error(exc) from None
    ctl.machine.scheduler.invalidate()
    ctl.bump()
    return {"accepted": accepted, "rx_pending": uart.rx_pending,
            "state_revision": ctl.revision}


def read(ctl, params):
    uart = com1(ctl, "serial.read")
    offset = P.number(params.get("offset", 0), "offset", 0, (1 << 63) - 1)
    count = P.length(params.get("max_bytes", DEFAULT_READ), "max_bytes", MAX_READ)
    try:
        start, end, data = uart.read_output(offset, count)
    except Exception as exc:
        if type(exc).__name__ != "SerialError":
            raise
        raise _error(exc) from None
    import base64
    return {"offset": start, "next_offset": end,
            "data_base64": base64.b64encode(data).decode("ascii")}


@hookimpl
def pypc_rpc_methods():
    return {"serial.status": status, "serial.write": write, "serial.read": read}
