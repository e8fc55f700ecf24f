"""Method group ``state``: ``state.get_registers`` (alias ``state.get``),
``state.set_registers`` (guarded, paused) and ``state.observe`` (registers,
memory windows and video at one paused revision)."""

from pypc_core import hookimpl
from pypc_core.machine import Machine
from pypc_core.rpc import needs_live_target, params as P
from pypc_core.rpc import video_text as video
from pypc_core.rpc.errors import invalid, limit
from pypc_core.rpc.shapes import data_fields

MAX_WINDOWS = 16
MAX_WINDOW_BYTES = 65536
MAX_OBSERVATION_BYTES = 65536


@needs_live_target
def get_registers(ctl, params):
    return ctl.registers()


@needs_live_target
def set_registers(ctl, params):
    ctl.require_paused("state.set_registers")
    ctl.check_revision(params)
    expected, changes = params["expected"], params["set"]
    if not expected:
        raise invalid("expected must name at least one register", field="expected")
    if not changes:
        raise invalid("set must name at least one register", field="set")
    names = ctl.machine.REGISTER_NAMES
    current = {n: v for n, v in ctl.machine.registers.as_dict().items() if n in names}
    # COMPAT: per register being set, in request order: a known name,
    # guarded by expected, the guard matches, the new value is 16-bit; then
    # the guards on registers that are not set (known, matching)
    new = {}
    for name, value in changes.items():
        _known(name)
        if name not in expected:
            raise invalid(f"register {name} is set but not guarded by expected",
                          "PRECONDITION_FAILED", register=name)
        _guard(name, expected[name], current)
        new[name] = P.number(value, f"set.{name}", 0, 0xFFFF)
    for name, value in expected.items():
        if name not in changes:
            _known(name)
            _guard(name, value, current)
    before = ctl.registers()
    ctl.machine.set_registers(**new)
    ctl.bump()
    return {"before": before, "after": ctl.registers()}


def _known(name):
    names = Machine.REGISTER_NAMES
    if name not in names:
        raise invalid(f"unknown register {name!r} (supported: "
                      f"{', '.join(names)})", field=name)


def _guard(name, value, current):
    want = P.number(value, f"expected.{name}", 0, 0xFFFF)
    if want != current[name]:
        raise invalid(f"expected.{name} is {want:#06x} but {name} is "
                      f"{current[name]:#06x}; nothing was written",
                      "PRECONDITION_FAILED", register=name, current=current[name])


@needs_live_target
def observe(ctl, params):
    ctl.require_paused("state.observe")
    ctl.check_revision(params)
    windows = params.get("memory", [])
    if len(windows) > MAX_WINDOWS:
        raise limit(f"memory has {len(windows)} windows; the limit is {MAX_WINDOWS}",
                    field="memory", limit=MAX_WINDOWS)
    plan, total = [], 0
    for i, win in enumerate(windows):
        length = P.length(win.get("length", 1), f"memory[{i}].length", MAX_WINDOW_BYTES)
        start = P.resolve_block(win["address"], length, f"memory[{i}].address")
        total += length
        plan.append((start, length))
    if total > MAX_OBSERVATION_BYTES:
        raise limit(f"memory windows total {total} bytes; the limit is "
                    f"{MAX_OBSERVATION_BYTES}", field="memory", limit=MAX_OBSERVATION_BYTES)
    selection = None
    if "video_text" in params:
        selection = video.parse_selection(params["video_text"], "video_text")
    want_vram = P.boolean(params.get("video_memory", False), "video_memory")
    if (selection is not None or want_vram) and ctl.machine.video is None:
        video.adapter(ctl, "state.observe")
    copies = [_safe_copy(ctl, start, length, f"memory[{i}]")
              for i, (start, length) in enumerate(plan)]
    # everything is checked: shape the copies
    out = {"state_revision": ctl.revision, "registers": ctl.registers(), "memory": []}
    for start, data in zip((s for s, _ in plan), copies):
        block = {"address": start}
        block.update(data_fields(data))
        block["state_revision"] = ctl.revision
        out["memory"].append(block)
    if selection is not None:
        out["video_text"] = video.text_result(ctl, selection, "state.observe")
    if want_vram:
        vid = ctl.machine.video
        base, data = video.text_backing(vid)
        block = {"address": base, "adapter": vid.adapter}
        block.update(data_fields(data))
        block["state_revision"] = ctl.revision
        out["video_memory"] = block
    return out


def _safe_copy(ctl, start, length, where):
    """The bytes of a window, copied without calling any device: RAM, ROM,
    unmapped and plain device pages come from the bus's bytes; pages a
    device answers through a handler (VGA planar memory) are refused,
    except the adapter's text window at B8000h, which comes from its text
    backing store (as video_memory does)."""
    mm = ctl.machine.memory
    kinds = mm.page_kind
    shift = mm.PAGE_SHIFT
    adapter = ctl.machine.video
    text_base = text = None
    out = bytearray(mm.mem[start:start + length].tobytes())
    for page in range(start >> shift, ((start + length - 1) >> shift) + 1):
        if kinds[page] != "handler":
            continue
        lo = max(start, page << shift)
        hi = min(start + length, (page + 1) << shift)
        if adapter is not None and text is None:
            text_base, text = video.text_backing(adapter)
        if text is None or not text_base <= lo or hi > text_base + len(text):
            raise invalid(f"{where}: {lo:#07x} is device memory read through a handler "
                          f"(owner {mm.page_owner[page]!r}); state.observe does not call "
                          f"devices -- use memory.read or video.snapshot", "UNSUPPORTED",
                          field=where)
        out[lo - start:hi - start] = text[lo - text_base:hi - text_base]
    return bytes(out)


@hookimpl
def pypc_rpc_methods():
    return {"state.get_registers": get_registers, "state.get": get_registers,
            "state.set_registers": set_registers, "state.observe": observe}
