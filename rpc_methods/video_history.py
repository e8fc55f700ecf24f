"""Method group ``video_history``: ``video.history.start``, ``.read`` and
``.stop`` -- an opt-in ordered journal of the text display: changed bytes of
the adapter's text backing store, writes to the adapter's ports, and mode
changes.

How it records: every write to the video card's ports is journaled as it
happens (the port map's ``write`` is wrapped on this machine while recording,
and ports the CPU would answer itself go through it too);
the text backing store is compared with its previous copy after every slice
of execution and every step, and each changed byte becomes a ``text`` event
(in address order within one comparison) -- on a VGA, a comparison that
finds the whole text memory turned to zero is one ``clear_text`` event
instead, and the bytes of plane 2 (the fonts) that changed while the card is
in a text mode become ``font`` events (after the ``text`` ones).  While recording, running slices
are at most :data:`SLICE_CYCLES` (one emulated millisecond) long, so a
character that is written and overwritten again within that millisecond is
not seen.  Graphics VRAM is not journaled."""

import base64
import collections
import hashlib

import numpy as np

from pypc_core import hookimpl
from pypc_core.rpc import params as P
from pypc_core.rpc.errors import device_absent, invalid, not_found

from .hardware import hook, unhook

MAX_CAPACITY = 1_000_000
DEFAULT_CAPACITY = 500_000
MAX_READ = 4096
DEFAULT_READ = 1024
SLICE_CYCLES = 4772                  # 1 emulated ms


class History:
    def __init__(self, ctl, history_id, capacity):
        self.ctl = ctl
        self.id = history_id
        self.capacity = capacity
        self.events = collections.deque(maxlen=capacity)
        self.next_sequence = 1
        self.lost = 0
        self.active = False
        video = ctl.machine.video
        self.video = video
        self.vram = np.frombuffer(video.vram_bytes(), dtype=np.uint8).copy()
        # a VGA's plane 2 (the fonts): its bytes are journaled while the card
        # is in a text mode; in a graphics mode plane 2 holds pixels, which
        # are not journaled (the copy only follows them)
        planes = getattr(video, "planes", None)
        self.font = None if planes is None else np.array(planes[2], dtype=np.uint8)
        self.mode = self._mode()
        self._hooked = None
        self._ports = set(p for p in video.declaration.ports)

    def _mode(self):
        v = self.video
        return (int(v.graphics_mode()), int(v.columns()), int(v.display_address()))

    def _add(self, kind, address, old, new):
        if len(self.events) == self.capacity:
            self.lost += 1
        self.events.append({"sequence": self.next_sequence, "clock": self.ctl.machine.clock(),
                            "kind": kind, "address": int(address), "old": int(old),
                            "new": int(new)})
        self.next_sequence += 1

    def start(self):
        pm = self.ctl.machine.ports
        write = pm.write

        def journaled_write(port, value, width=1):
            if not self.active or (port & 0xFFFF) not in self._ports:
                return write(port, value, width)
            self.compare()              # text written before this OUT comes first
            handled = write(port, value, width)
            self._add("port", port & 0xFFFF, width, value & (0xFF if width == 1 else 0xFFFF))
            self.compare_mode()
            return handled
        self._hooked = hook(pm, {"write": journaled_write})
        self._pm = pm                   # this machine's (session.start may replace it)
        self.active = True
        self._slow_ports()

    def _slow_ports(self):
        """Keep every guest port access on the Python path while recording:
        a card may answer its ports inside the CPU (the VGA's sequencer and
        graphics controller), and those OUTs would not reach the wrapped
        ``write``.  Checked before every slice, as a hardware trace that
        stops puts the fast path back."""
        pm = self._pm
        if self.active and getattr(pm, "fast_reads", False):
            pm.set_fast_reads(False)

    def stop(self):
        if self.active:
            self.compare()
            self.active = False
            if self._hooked is not None:
                unhook(*self._hooked)
                self._hooked = None
            trace = self.ctl.extensions.get("hardware_trace")
            tracing = getattr(trace, "active", False) and getattr(trace, "include_io", False)
            pm = self._pm
            # the fast path is on unless a recorder wants it off (the two
            # recorders turn it off and back on; nothing else does)
            if not tracing and not getattr(pm, "fast_reads", True):
                pm.set_fast_reads(True)

    def compare(self):
        now = np.frombuffer(self.video.vram_bytes(), dtype=np.uint8)
        changed = np.nonzero(now != self.vram)[0]
        if len(changed) > 1 and self.font is not None and not now.any():
            self._add("clear_text", 0, 0, 0)     # the VGA's text memory became all zero
        else:
            for a in changed.tolist():
                self._add("text", a, self.vram[a], now[a])
        if len(changed):
            self.vram = now.copy()
        if self.font is not None:
            plane = self.video.planes[2]
            if self.video.is_graphics():
                self.font[:] = plane
                return
            changed = np.nonzero(plane != self.font)[0]
            for a in changed.tolist():
                self._add("font", a, self.font[a], plane[a])
            if len(changed):
                self.font[:] = plane

    def compare_mode(self):
        mode = self._mode()
        if mode != self.mode:
            self.mode = mode
            self._add("mode", mode[0], mode[1], mode[2])

    def after_slice(self, ctl):
        if self.active:
            self.compare()
            self.compare_mode()

    def limit(self, ctl, cycles):
        if not self.active:
            return cycles
        self._slow_ports()
        return min(cycles, SLICE_CYCLES)

    @property
    def first_available(self):
        return self.events[0]["sequence"] if self.events else self.next_sequence


def _current(ctl, history_id, method):
    h = ctl.extensions.get("video_history")
    if h is None:
        raise invalid(f"{method}: no video history has been started (video.history.start)",
                      "PRECONDITION_FAILED")
    if history_id is not None and history_id != h.id:
        raise not_found(f"no video history {history_id!r} (the current one is {h.id})",
                        history_id=history_id)
    return h


def start(ctl, params):
    video = ctl.machine.video
    if video is None:
        raise device_absent("video.history.start: no video adapter is plugged in",
                            device="video")
    capacity = P.length(params.get("capacity", DEFAULT_CAPACITY), "capacity", MAX_CAPACITY)
    old = ctl.extensions.get("video_history")
    if old is not None:
        old.stop()
    n = ctl.extensions.get("next_history", 1)
    ctl.extensions["next_history"] = n + 1
    h = History(ctl, f"video-{n}", capacity)
    h.start()
    ctl.extensions["video_history"] = h
    ctl.slice_hooks[:] = [f for f in ctl.slice_hooks if not getattr(f, "_video_history", 0)]
    ctl.limit_hooks[:] = [f for f in ctl.limit_hooks if not getattr(f, "_video_history", 0)]

    def after(c):
        h.after_slice(c)

    def cap(c, cycles):
        return h.limit(c, cycles)
    after._video_history = cap._video_history = True
    ctl.slice_hooks.append(after)
    ctl.limit_hooks.append(cap)
    vram = h.vram.tobytes()
    out = {"history_id": h.id, "first_sequence": h.next_sequence, "capacity": capacity,
           "clock": ctl.machine.clock(), "adapter": video.adapter,
           "columns": h.mode[1], "display_address": h.mode[2], "mode": h.mode[0],
           "vram_base64": base64.b64encode(vram).decode("ascii"),
           "vram_sha256": hashlib.sha256(vram).hexdigest()}
    if video.adapter == "VGA" and hasattr(video, "cursor"):
        cur = {k: v for k, v in video.cursor().items() if v is not None}
        out["cursor"] = cur
    if hasattr(video, "planes"):
        font = video.planes[2].tobytes()
        out["font_base64"] = base64.b64encode(font).decode("ascii")
        out["font_sha256"] = hashlib.sha256(font).hexdigest()
    return out


def read(ctl, params):
    h = _current(ctl, params.get("history_id"), "video.history.read")
    if h.active:
        h.compare()
    n = P.length(params.get("limit", DEFAULT_READ), "limit", MAX_READ)
    cursor = params.get("cursor")
    after = h.first_available - 1
    if cursor is not None:
        after = P.number(cursor, "cursor", 0, 1 << 62)
        if after >= h.next_sequence:
            raise invalid(f"cursor {after} is beyond the last event ({h.next_sequence - 1})",
                          field="cursor")
        if after < h.first_available - 1:
            raise invalid(f"cursor {after} is older than the retained events (first "
                          f"{h.first_available})", "CURSOR_EXPIRED",
                          first_available_sequence=h.first_available)
    skip = after + 1 - h.first_available
    events = [dict(e) for e in list(h.events)[skip:skip + n]]
    last = events[-1]["sequence"] if events else after
    return {"history_id": h.id, "active": h.active,
            "first_available_sequence": h.first_available,
            "next_sequence": h.next_sequence, "lost_events": h.lost, "events": events,
            "next_cursor": last if last < h.next_sequence - 1 else None}


def stop(ctl, params):
    h = _current(ctl, params.get("history_id"), "video.history.stop")
    h.stop()
    return {"history_id": h.id, "events": h.next_sequence - 1, "lost_events": h.lost}


@hookimpl
def pypc_rpc_methods():
    return {"video.history.start": start, "video.history.read": read,
            "video.history.stop": stop}
