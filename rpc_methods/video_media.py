"""Method group ``video_media`` (pypc extensions): ``video.screenshot``
(the card's frame as PNG, :mod:`pypc_core.video_frames`) and
``video.record.start`` / ``video.record.stop`` (a recording of the display
and the speaker in emulated time, :class:`pypc_core.recording.Recorder`).

One recording at a time per server.  It records the machine it was started
on: a ``session.start`` that replaces the machine finishes it (a later
``video.record.stop`` still reports it), and so does the machine's end (the
server shutting down), so a file is never left half-written.  Paths are
the server host's (relative ones to its working directory); an existing
file is refused unless ``overwrite`` is true."""

import base64
import os
import weakref

from pypc_core import hookimpl, video_frames
from pypc_core.errors import PypcError
from pypc_core.recording import Recorder, check_path, segment_path
from pypc_core.rpc.errors import RpcError, invalid, not_found
from pypc_core.rpc.parts import MACHINE_REPLACED
from pypc_core.rpc.shapes import sha256

from pypc_core.rpc.video_text import adapter

#: machine -> its running Recorder, so the machine's end finishes the file
_RUNNING = weakref.WeakKeyDictionary()


def _ratio(fraction):
    return {"numerator": int(fraction.numerator), "denominator": int(fraction.denominator)}


def screenshot(ctl, params):
    video = adapter(ctl, "video.screenshot")
    double = bool(params.get("double", False))
    rgb = video.frame_doubled() if double else video_frames.frame(video)
    h, w = rgb.shape[:2]
    if h == 0 or w == 0:
        raise invalid("video.screenshot: the card displays no picture (0x0)",
                      reason="PRECONDITION_FAILED")
    png = video_frames.encode_png(rgb)
    return {
        "adapter": video.adapter,
        "mode": video.mode_name(),
        "width": int(w), "height": int(h),
        "double": double,
        "pixel_aspect": _ratio(video_frames.aspect_for(w, h) if double
                               else video_frames.pixel_aspect(video)),
        "frame_rate_hz": float(video_frames.frame_rate_hz(video)),
        "frame_number": int(video.frame_number()),
        "clock": int(ctl.machine.clock()),
        "byte_count": len(png),
        "sha256": sha256(png),
        "png_base64": base64.b64encode(png).decode("ascii"),
    }


class Recordings:
    """The controller's part (:mod:`pypc_core.rpc.parts`): the running
    recording, the ids handed out, and a recording a ``session.start``
    finished (or that failed then) for the next ``video.record.stop``."""

    def __init__(self):
        self.next = 1
        self.recorder = None
        self.id = None
        self.finished = None        # (id, summary) of one finished by session.start
        self.failed = None          # the RpcError of one that failed then

    def on_event(self, event, ctl):
        if event == MACHINE_REPLACED and self.recorder is not None \
                and self.recorder.machine is not ctl.machine:
            try:
                _finish(self)
            except RpcError as exc:             # reported by the next stop
                self.failed = exc
        return True                 # (a restored state: the recorder follows it)

    def close(self):
        if self.recorder is not None:
            try:
                _finish(self)
            except RpcError:
                pass                # (its error is in the machine's diagnostics)


def _state(ctl):
    return ctl.parts.setdefault(Recordings, Recordings)


def _finish(state):
    """Stop the running recorder; a recording that failed while running
    (a full disk ...) is PRECONDITION_FAILED with its error."""
    rec, state.recorder = state.recorder, None
    _RUNNING.pop(rec.machine, None)
    try:
        summary = rec.stop()
    except PypcError as exc:
        state.finished = None
        raise invalid(f"video.record.stop: {exc}", reason="PRECONDITION_FAILED",
                      recording_id=state.id) from None
    state.finished = (state.id, summary)
    return summary


def record_start(ctl, params):
    video = adapter(ctl, "video.record.start")
    state = _state(ctl)
    if state.recorder is not None:
        raise invalid(f"video.record.start: recording {state.id} is running "
                      "(video.record.stop first)", reason="PRECONDITION_FAILED",
                      recording_id=state.id)
    path = params["path"]
    try:
        check_path(path)
    except PypcError as exc:
        raise invalid(f"video.record.start: {exc}", field="path") from None
    if not params.get("overwrite", False):
        for i in range(0, 100):
            p = segment_path(path, i)
            if os.path.lexists(p):
                raise invalid(f"video.record.start: {p!r} exists (give overwrite: true to "
                              "replace it)", reason="PRECONDITION_FAILED", field="path")
    try:
        rec = Recorder.start(ctl.machine, path, audio=params.get("audio", True))
    except PypcError as exc:        # (the recorder wraps what the library raised)
        raise invalid(f"video.record.start: {exc}", field="path") from None
    rec_id = f"rec-{state.next}"
    state.next += 1
    state.recorder, state.id, state.finished, state.failed = rec, rec_id, None, None
    _RUNNING[ctl.machine] = rec
    seg = rec.segments[0]
    w, h = seg.size
    return {
        "recording_id": rec_id,
        "path": os.path.abspath(path),
        "format": os.path.splitext(path)[1].lower().lstrip("."),
        "adapter": video.adapter,
        "width": int(w), "height": int(h),
        "pixel_aspect": _ratio(video_frames.pixel_aspect(video)),
        "frame_rate_hz": float(video_frames.frame_rate_hz(video)),
        "audio": rec.speaker is not None,
        "clock": int(rec.origin),
    }


def record_stop(ctl, params):
    state = _state(ctl)
    if state.recorder is not None:
        rec_id = state.id
        summary = _finish(state)
        state.finished = None
    elif state.failed is not None:              # failed, then a session.start
        exc, state.failed = state.failed, None
        raise exc
    elif state.finished is not None:            # finished by a session.start
        (rec_id, summary), state.finished = state.finished, None
    else:
        raise not_found("video.record.stop: no recording is running")
    return {"recording_id": rec_id,
            "files": [os.path.abspath(p) for p in summary["files"]],
            "frames": summary["frames"],
            "seconds": float(summary["seconds"]),
            "frame_rate_hz": float(summary["frame_rate_hz"]),
            "width": summary["width"], "height": summary["height"],
            "audio": summary["audio"]}


@hookimpl
def pypc_machine_shutdown(machine):
    rec = _RUNNING.pop(machine, None)
    if rec is not None and (rec.active or rec.error is not None):
        try:
            rec.stop()
        except PypcError:
            pass                    # (its error is in the machine's diagnostics)


@hookimpl
def pypc_rpc_methods():
    return {"video.screenshot": screenshot, "video.record.start": record_start,
            "video.record.stop": record_stop}
