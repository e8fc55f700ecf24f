"""Method group ``memory``: ``memory.read`` and ``memory.write`` (physical,
linear or segmented addresses; 1..65536 bytes inside the 1 MiB space).

Both go through the bus as the CPU would: RAM, ROM and plain card memory are
bytes, a window a device answers through a handler (VGA planar memory) calls
the device; a write to ROM or unmapped memory leaves it unchanged."""

from pypc_core import hookimpl
from pypc_core.rpc import needs_live_target, params as P
from pypc_core.rpc.errors import invalid, limit
from pypc_core.rpc.params import resolve_block as resolve
from pypc_core.rpc.shapes import check_sha256, data_fields, decode_base64, sha256

MAX_BYTES = 65536


def read_result(ctl, start, length):
    data = ctl.machine.memory.read(start, length)
    out = {"address": start}
    out.update(data_fields(data))
    out["state_revision"] = ctl.revision
    return out


@needs_live_target
def read(ctl, params):
    length = P.length(params.get("length", 1), "length", MAX_BYTES)
    start = resolve(params["address"], length)
    return read_result(ctl, start, length)


@needs_live_target
def write(ctl, params):
    ctl.require_paused("memory.write")
    data = decode_base64(params["data_base64"])
    if not data:
        raise invalid("data_base64 must decode to at least 1 byte", field="data_base64")
    if len(data) > MAX_BYTES:
        raise limit(f"data_base64 decodes to {len(data)} bytes; the limit is {MAX_BYTES}",
                    field="data_base64", limit=MAX_BYTES)
    start = resolve(params["address"], len(data))
    expected = None
    if "expected_sha256" in params:
        expected = check_sha256(params["expected_sha256"], "expected_sha256")
    memory = ctl.machine.memory
    before = sha256(memory.read(start, len(data)))
    if expected is not None and expected != before:
        raise invalid("expected_sha256 does not match the current bytes; nothing was "
                      "written", "PRECONDITION_FAILED", before_sha256=before)
    memory.write(start, data)
    after = sha256(memory.read(start, len(data)))
    ctl.bump()
    return {"address": start, "byte_count": len(data), "before_sha256": before,
            "after_sha256": after, "state_revision": ctl.revision}


@hookimpl
def pypc_rpc_methods():
    return {"memory.read": read, "memory.write": write}
