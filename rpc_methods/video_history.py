"""Method group ``video_history``: ``video.history.start``, ``.read`` and
``.stop`` -- an opt-in ordered journal of the text display: changed bytes of
the adapter's text backing store (and a VGA's font plane), writes to the
adapter's ports, and mode changes.

How it records: the video card journals its memory write by write
(``journal_start``: while recording, every byte a write changes is appended
to a ``bus.journal.WriteLog`` -- by the core itself for a card's RAM window
(a CGA's), by the card's compiled window handler for a VGA's planes; CPU
writes, REP STOSW included, and the firmware's and ``memory.write``'s
alike); every write to the card's ports is journaled as it happens (the
history observes the machine's port map while recording,
``PortMap.add_observer``, so ports the CPU would answer itself go through
Python too).  The log is this history's ring: the core, the card and this
module append to it in program order, so two writes to one byte are two
events, in order, and nothing is copied out of it (events become dicts
only for a read's page).  An event's ``clock`` is exact: the emulated
cycle its write happened at -- for a CPU write the cycle its instruction
began at (a REP string's: its iteration's), which the core hands the
journal with the write; for ``memory.write``, firmware writes and port
writes the machine's cycle when they were made.

In a graphics mode (CGA mode register bit 1, VGA graphics controller 6 bit
0) video memory is not journaled; when the card returns to a text mode, the
text bytes (and VGA font bytes) that differ from what the journal last
showed become events right after the ``mode`` event -- on a VGA, text memory
found all zero then is one ``clear_text`` event instead, and so is text
memory a VGA mode set to a graphics mode clears to zero.  A change the
journal did not see (a device reset, a checkpoint restore) is added the same
way when the history is read or stopped.  Graphics VRAM is not journaled."""

import base64
import hashlib

import numpy as np

from pypc_core import hookimpl
from pypc_core.bus.journal import FONT, TEXT, WriteLog, event_fields, event_word
from pypc_core.rpc import params as P
from pypc_core.rpc.errors import device_absent, invalid, not_found
from pypc_core.rpc.parts import Counter

MAX_CAPACITY = 1_000_000
DEFAULT_CAPACITY = 500_000
MAX_READ = 4096
DEFAULT_READ = 1024
KIND_NAMES = {1: "text", 2: "font", 3: "port", 4: "clear_text", 5: "mode"}
KIND_CODES = {name: code for code, name in KIND_NAMES.items()}
# the card's log kinds are the events' codes (its entries are the events)
assert KIND_CODES["text"] == TEXT and KIND_CODES["font"] == FONT


class HistoryIds(Counter):
    """video-N ids, never reused in a server's life (a controller part)."""


class History:
    def __init__(self, ctl, history_id, capacity):
        self.ctl = ctl
        self.id = history_id
        self.capacity = capacity
        # the retained events: the log's ring (word 0 kind, address, old and
        # new packed as ``bus.journal.event_word`` does, word 1 the clock),
        # the event of sequence q its entry q - 1; it keeps at least
        # ``capacity`` entries (written through once here: appending then
        # never waits for the operating system to hand out fresh pages)
        self.log = WriteLog(capacity)
        self.log.ring[:] = 0
        self.active = False
        video = ctl.machine.video
        self.video = video
        # the text memory (and a VGA's plane 2, the fonts) as the journal
        # shows it: the log's views, which every append keeps current
        now = np.frombuffer(video.vram_bytes(), dtype=np.uint8)
        self.vram = self.log.views[TEXT][:len(now)]
        self.vram[:] = now
        font_plane = getattr(video, "font_plane", None)     # a card with a font in RAM
        self.font = None
        if font_plane is not None:
            plane = np.asarray(font_plane(), dtype=np.uint8)
            self.font = self.log.views[FONT][:len(plane)]
            self.font[:] = plane
        self.mode = self._mode()
        self.graphics = bool(video.is_graphics())
        self._pm = None                 # the port map observed (this machine's)
        self._ports = set(p for p in video.declaration.ports)

    def _mode(self):
        v = self.video
        return (int(v.graphics_mode()), int(v.columns()), int(v.display_address()))

    def _add(self, kind, address, old, new, clock=None):
        self.log.append(event_word(KIND_CODES[kind], int(address), int(old), int(new)),
                        self.ctl.machine.clock() if clock is None else clock)

    @property
    def next_sequence(self):
        return self.log.count + 1

    @property
    def lost(self):
        """Events overwritten in the ring."""
        return max(0, self.log.count - self.capacity)

    def page(self, first, n):
        """Events of sequences ``first`` .. ``first + n - 1`` as dicts."""
        out = []
        for q in range(first, first + n):
            word, clock = self.log.row(q - 1)
            kind, address, old, new = event_fields(word)
            out.append({"sequence": q, "clock": clock, "kind": KIND_NAMES[kind],
                        "address": address, "old": old, "new": new})
        return out

    def start(self):
        pm = self._pm = self.ctl.machine.ports
        self.video.journal_start(self.log)
        self.active = True
        pm.add_observer(self)

    # (the port map's observer protocol: the card's port writes, appended
    # after the memory writes logged before them)
    def after_write(self, port, value, width):
        if self.active and port in self._ports:
            self._add("port", port, width, value & (0xFF if width == 1 else 0xFFFF))
            self.compare_mode()

    def stop(self):
        if self.active:
            self.catch_up()
            self.active = False
            self.video.journal_stop()
            self._pm.remove_observer(self)

    close = stop                        # dropped by the controller (rpc.parts)

    def catch_up(self):
        """Events for what the text (and font) memory holds that the journal
        did not show, in address order (nothing in a graphics mode); each
        event's new byte goes to the log's view as it is added."""
        if self.video.is_graphics():
            return
        now = np.frombuffer(self.video.vram_bytes(), dtype=np.uint8)
        changed = np.nonzero(now != self.vram)[0]
        if len(changed) > 1 and self.font is not None and not now.any():
            self._add("clear_text", 0, 0, 0)     # the VGA's text memory became all zero
            self.vram[:] = 0
        else:
            for a in changed.tolist():
                self._add("text", a, self.vram[a], now[a])
        if self.font is not None:
            plane = self.video.font_plane()
            changed = np.nonzero(plane != self.font)[0]
            for a in changed.tolist():
                self._add("font", a, self.font[a], plane[a])

    def compare_mode(self):
        mode = self._mode()
        if mode != self.mode:
            self.mode = mode
            self._add("mode", mode[0], mode[1], mode[2])
        graphics = bool(self.video.is_graphics())
        if graphics != self.graphics:
            self.graphics = graphics
            if not graphics:
                self.catch_up()         # back in a text mode: what changed meanwhile
        if graphics:
            self.cleared()

    def cleared(self):
        """In a VGA graphics mode: text memory that became all zero (a mode
        set's clear) is one ``clear_text`` event."""
        if self.font is None or not self.vram.any():
            return
        if not np.frombuffer(self.video.vram_bytes(), dtype=np.uint8).any():
            self._add("clear_text", 0, 0, 0)
            self.vram[:] = 0

    def after_slice(self, ctl):
        if self.active:
            self.compare_mode()

    @property
    def first_available(self):
        return max(1, self.next_sequence - self.capacity)


def _current(ctl, history_id, method):
    h = ctl.parts.get(History)
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
    if not callable(getattr(video, "journal_start", None)):
        raise device_absent(f"video.history.start: the {video.adapter} card cannot journal "
                            "its memory writes (no journal_start)", device="video")
    capacity = P.length(params.get("capacity", DEFAULT_CAPACITY), "capacity", MAX_CAPACITY)
    ctl.parts.pop(History)              # (stops the one it replaces first)
    n = ctl.parts.setdefault(HistoryIds, HistoryIds).take()
    h = History(ctl, f"video-{n}", capacity)
    h.start()
    ctl.parts.put(History, h)
    vram = h.vram.tobytes()
    out = {"history_id": h.id, "first_sequence": h.next_sequence, "capacity": capacity,
           "clock": ctl.machine.clock(), "adapter": video.adapter,
           "columns": h.mode[1], "display_address": h.mode[2], "mode": h.mode[0],
           "vram_base64": base64.b64encode(vram).decode("ascii"),
           "vram_sha256": hashlib.sha256(vram).hexdigest()}
    # the cursor as it stands (every VideoDevice has one): what a client
    # replaying the journal starts from
    out["cursor"] = {k: v for k, v in video.cursor().items() if v is not None}
    if h.font is not None:
        font = video.font_plane().tobytes()
        out["font_base64"] = base64.b64encode(font).decode("ascii")
        out["font_sha256"] = hashlib.sha256(font).hexdigest()
    return out


def read(ctl, params):
    h = _current(ctl, params.get("history_id"), "video.history.read")
    if h.active:
        h.catch_up()
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
    count = min(n, h.next_sequence - 1 - after)
    events = h.page(after + 1, count)
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
