"""Method group ``video``: ``video.text``, ``video.snapshot``,
``video.snapshot.read`` (retained immutable copies of the adapter's video
RAM and decoded text).  ``video.history.*`` lives in ``video_history``."""

import collections


from pypc_core import hookimpl
from pypc_core.rpc import params as P
from pypc_core.rpc.errors import not_found
from pypc_core.rpc.shapes import data_fields, sha256
from pypc_core.rpc.video_text import adapter, parse_selection, text_result

RETAINED_SNAPSHOTS = 8
MAX_READ = 65536


def text(ctl, params):
    return text_result(ctl, parse_selection(params))


class Snapshots:
    """The retained video snapshots (a controller part): forgotten with the
    machine they show (a new session, an imported snapshot), while their id
    counter goes on."""

    def __init__(self):
        self.next = 1
        self.items = collections.OrderedDict()

    def on_event(self, event, ctl):
        self.items.clear()
        return True


def _snapshots(ctl):
    return ctl.parts.setdefault(Snapshots, Snapshots)


def snapshot(ctl, params):
    video = adapter(ctl, "video.snapshot")
    page = video.text_page()
    text_bytes = "\n".join(page["text"]).encode("utf-8")
    components = {"vram": video.vram_bytes(), "text": text_bytes}
    extra = {}
    parts = getattr(video, "snapshot_parts", None)  # a card with more than text memory
    if parts is not None:
        more, extra = parts(page["graphics_mode"])
        components.update(more)
    snaps = _snapshots(ctl)
    snap_id = f"snap-{snaps.next}"
    snaps.next += 1
    snaps.items[snap_id] = components
    while len(snaps.items) > RETAINED_SNAPSHOTS:
        snaps.items.popitem(last=False)
    out = {
        "snapshot_id": snap_id,
        "state_revision": ctl.revision,
        "captured_ticks": ctl.machine.clock(),
        "adapter": video.adapter,
        "video_mode": page["graphics_mode"],
        "columns": page["columns"],
        "rows": page["rows"],
        "display_address": page["display_address"],
        "active_page": page["active_page"],
        "text": {"byte_count": len(text_bytes), "sha256": sha256(text_bytes)},
        "vram": {"byte_count": len(components["vram"]), "sha256": sha256(components["vram"])},
    }
    for name in ("font", "graphics_vram"):
        if name in components:
            out[name] = {"byte_count": len(components[name]), "sha256": sha256(components[name])}
    out.update(extra)
    return out


def snapshot_read(ctl, params):
    snap_id = params["snapshot_id"]
    snaps = _snapshots(ctl).items
    if snap_id not in snaps:
        raise not_found(f"no retained video snapshot {snap_id!r} (at most "
                        f"{RETAINED_SNAPSHOTS} are kept)", snapshot_id=snap_id)
    component = params["component"]
    data = snaps[snap_id].get(component)
    if data is None:
        raise not_found(f"snapshot {snap_id} has no {component!r} component "
                        f"(it has {', '.join(snaps[snap_id])})", component=component)
    offset = P.number(params.get("offset", 0), "offset", 0, len(data) - 1)
    length = P.length(params.get("length", MAX_READ), "length", MAX_READ)
    chunk = data[offset:offset + length]
    out = {"snapshot_id": snap_id, "component": component, "offset": offset,
           "component_byte_count": len(data), "component_sha256": sha256(data)}
    fields = data_fields(chunk)
    del fields["data_hex"]
    out.update(fields)
    return out


@hookimpl
def pypc_rpc_methods():
    return {"video.text": text, "video.snapshot": snapshot,
            "video.snapshot.read": snapshot_read}
