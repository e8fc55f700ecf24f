"""Video recordings of the display, in emulated time, with PyAV.

:class:`Recorder` joins the machine's scheduler as a host-side observer
(``machine.scheduler.add(recorder, marks_ports=False)``): its
``next_event()`` is the emulated cycle of the next frame, one frame period
of the card's own timing (``frame_cycles()``, 79,648 cycles = 59.92 Hz for
the BIOS's CGA modes, 70.09 Hz / 59.94 Hz for VGA 400/480-line modes) after
the last, and ``advance`` takes the card's frame there through
:mod:`pypc_core.video_frames`.  Presentation timestamps are those emulated
cycles (time base 1/4,772,727 s, rescaled by the container), so the same
run gives the same frames and the same file bytes at any ``--speed`` or
host load; containers and encoders are opened with the ``bitexact`` flag
(no library-version strings, no random segment ids).

Formats, by the file name's extension:

========  ==========  ==============================  ===============
ext       container   video                           audio
========  ==========  ==============================  ===============
``.mkv``  Matroska    H.264 RGB, qp 0 (lossless)      FLAC (lossless)
``.mp4``  MP4         H.264 (libx264), yuv420p        AAC
``.webm`` WebM        VP9 (libvpx-vp9), yuv420p       Opus
``.gif``  GIF         exact palette, every 2nd frame  none
``.apng`` APNG        RGB (lossless)                  none
========  ==========  ==============================  ===============

A card with ``frame_key()`` (both built-in cards) is rendered only when
that key (video memory, registers, blink phases) differs from the last
frame's; an unchanged picture is encoded again from the last one.

Every frame is at the mode's native resolution (CGA 640x200, VGA 720x400
text, 320x200 mode 13h ...); the pixel aspect (``pixel_aspect()``) is stored as the
stream's sample aspect ratio: exactly in MKV, MP4 and APNG (its pHYs chunk),
as the nearest step GIF's header can say ((N + 15) / 64: 13/32 for the
CGA's 5/12), and in WebM (whose VP9 stream has no field for it, and whose
muxer PyAV cannot give one) as the track's ``DisplayWidth``/``DisplayHeight``
in pixels (640x480 for the CGA's 640x200 at 5/12), written into the closed
file by :mod:`pypc_core.matroska`; nothing is resampled.  GIF frames are exact (a card shows at most 256
colours), one for every second frame of the card (GIF delays are whole
hundredths of a second, and browsers stretch those under 2/100 s); yuv420p needs even sizes, so MP4/WebM add one black column/line to
an odd width/height.

Mode changes: a file holds one resolution.  When the card's picture changes
size, the current file is finished and the recording goes on in the next
segment ``NAME.1.EXT``, ``NAME.2.EXT`` ... (timestamps restart at 0 in each;
the audio continues without a gap or an overlap).  :meth:`Recorder.stop`
lists the files.  A frame with no pixels (display disabled in a way that
leaves no picture) is recorded as black at the current size.

Jumps in time: when a snapshot or checkpoint is restored (the machine's
``display_epoch`` changes) the next frame is taken at once and the video
goes on one frame period after the last one, so timestamps never go back;
the sound goes on from the restored state without a gap.

Sound: the PC speaker (PIT counter 2 gated by port 61h,
:class:`pypc_core.speaker.Speaker`) rendered at 48,000 Hz from the
same emulated time, in the containers that carry audio (``audio=False``
leaves it out).

A :class:`Recorder` is reusable by any caller of a machine: ``pypc run
--video-out FILE``, the RPC extension ``video.record.start``/``stop``, a
batch job::

    rec = Recorder.start(machine, "run.mkv")
    machine.run_seconds(5)
    summary = rec.stop()        # files, frames, seconds, frame_rate_hz ...
"""

import os
from fractions import Fraction

import numpy as np

from . import matroska, video_frames
from .errors import PypcError
from .scheduler import CPU_HZ

AUDIO_RATE = 48_000
TIME_BASE = Fraction(1, CPU_HZ)

#: extension -> (container format, video codec, pixel format, audio codec)
FORMATS = {
    ".mkv": ("matroska", "libx264rgb", "rgb24", "flac"),
    ".mp4": ("mp4", "libx264", "yuv420p", "aac"),
    ".webm": ("webm", "libvpx-vp9", "yuv420p", "libopus"),
    ".gif": ("gif", "gif", "pal8", None),
    ".apng": ("apng", "apng", "rgb24", None),
}
STRIDE = {".gif": 2}
VIDEO_OPTIONS = {
    "libx264": {"preset": "ultrafast", "crf": "18", "threads": "1"},
    "libvpx-vp9": {"deadline": "realtime", "cpu-used": "8", "crf": "32", "b": "0",
                   "threads": "1", "row-mt": "0"},
    "libx264rgb": {"preset": "ultrafast", "qp": "0", "threads": "1"},  # qp 0: lossless
}


class RecordingError(PypcError):
    pass


def check_path(path):
    """The format of ``path`` (its extension, lower case), or a
    RecordingError saying what is wrong; creates nothing."""
    if not isinstance(path, str) or not path:
        raise RecordingError("a recording needs a file name")
    if os.path.isdir(path):
        raise RecordingError(f"{path!r} is a directory, not a video file")
    ext = os.path.splitext(path)[1].lower()
    if ext not in FORMATS:
        raise RecordingError(f"{path!r}: a recording is a {', '.join(sorted(FORMATS))} "
                             f"file; give a name ending in one of them")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise RecordingError(f"{path!r}: no such directory {folder!r}")
    if not os.access(folder, os.W_OK):
        raise RecordingError(f"{path!r}: the directory {folder!r} is not writable")
    try:
        import av  # noqa: F401
    except ModuleNotFoundError:
        raise RecordingError("recordings need PyAV: pip install av") from None
    return ext


def segment_path(path, index):
    """``NAME.EXT`` for segment 0, ``NAME.1.EXT``, ``NAME.2.EXT`` after."""
    if index == 0:
        return path
    stem, ext = os.path.splitext(path)
    return f"{stem}.{index}{ext}"


class _SpeakerTap:
    """A Speaker sink keeping the samples until the recorder muxes them."""

    def __init__(self):
        self.chunks = []
        self.count = 0

    def write(self, pcm):
        if len(pcm):
            self.chunks.append(np.asarray(pcm, dtype=np.int16).copy())
            self.count += len(pcm)

    def take(self, n):
        """The first ``n`` buffered samples (fewer if fewer are there)."""
        if not self.chunks:
            return np.zeros(0, dtype=np.int16)
        allpcm = np.concatenate(self.chunks)
        out, rest = allpcm[:n], allpcm[n:]
        self.chunks = [rest] if len(rest) else []
        self.count = len(rest)
        return out

    def close(self):
        pass


class _Segment:
    """One output file: a container with a video (and an audio) stream."""

    def __init__(self, path, ext, width, height, aspect, rate_hz, audio):
        import av
        fmt, vcodec, pix_fmt, acodec = FORMATS[ext]
        self.path = path
        self.ext = ext
        self.pix_fmt = pix_fmt
        self.size = (width, height)
        self.aspect = Fraction(aspect)
        pad = pix_fmt == "yuv420p"
        self.enc_w = width + (width & 1 if pad else 0)
        self.enc_h = height + (height & 1 if pad else 0)
        self.container = av.open(path, "w", format=fmt,
                                 container_options={"fflags": "+bitexact"})
        try:
            rate = Fraction(rate_hz).limit_denominator(1000)
            v = self.container.add_stream(vcodec, rate=rate,
                                          options=dict(VIDEO_OPTIONS.get(vcodec, {})))
            v.width, v.height = self.enc_w, self.enc_h
            v.pix_fmt = pix_fmt
            v.codec_context.time_base = TIME_BASE
            # (MKV and MP4 carry it exactly, APNG in its pHYs chunk, GIF as
            # the nearest (N + 15) / 64 of its header; VP9 in WebM drops it,
            # so close() writes the track's display size into the file)
            v.codec_context.sample_aspect_ratio = aspect
            v.sample_aspect_ratio = aspect
            self._bitexact(v)
            self.video = v
            self.audio = None
            if audio and acodec:
                a = self.container.add_stream(acodec, rate=AUDIO_RATE, layout="mono")
                a.codec_context.time_base = Fraction(1, AUDIO_RATE)
                self._bitexact(a)
                self.audio = a
        except BaseException:
            self.container.close()
            raise
        self.frames = 0
        self.samples = 0
        self._colours = None

    @staticmethod
    def _bitexact(stream):
        import av
        try:
            stream.codec_context.flags |= av.codec.context.Flags.bitexact
        except (AttributeError, TypeError):
            pass

    def add_frame(self, rgb, pts):
        import av
        h, w = rgb.shape[:2]
        if (w, h) != (self.enc_w, self.enc_h):
            canvas = np.zeros((self.enc_h, self.enc_w, 3), dtype=np.uint8)
            canvas[:min(h, self.enc_h), :min(w, self.enc_w)] = rgb[:self.enc_h, :self.enc_w]
            rgb = canvas
        if self.pix_fmt == "pal8":
            indices, palette, self._colours = _palettized(rgb, self._colours)
            frame = av.VideoFrame.from_ndarray((indices, palette), format="pal8")
        else:
            frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(rgb), format="rgb24")
        frame.pts = int(pts)
        frame.time_base = TIME_BASE
        for packet in self.video.encode(frame):
            self.container.mux(packet)
        self.frames += 1

    def add_audio(self, pcm):
        import av
        if self.audio is None or not len(pcm):
            return
        frame = av.AudioFrame.from_ndarray(np.ascontiguousarray(pcm, dtype=np.int16)[None, :],
                                           format="s16", layout="mono")
        frame.sample_rate = AUDIO_RATE
        frame.pts = self.samples
        frame.time_base = Fraction(1, AUDIO_RATE)
        self.samples += len(pcm)
        for packet in self.audio.encode(frame):
            self.container.mux(packet)

    def close(self, flush=True):
        """Finish the file: flush the encoders (not after a failed write:
        FFmpeg's muxers are not to be written to again then) and close; a
        WebM file then gets its pixel aspect as the track's display size."""
        if self.container is None:
            return
        try:
            if flush:
                for stream in (self.video, self.audio):
                    if stream is not None:
                        for packet in stream.encode(None):
                            self.container.mux(packet)
        finally:
            container, self.container = self.container, None
            container.close()
        if flush and self.ext == ".webm" and self.aspect != 1:
            try:
                matroska.set_pixel_aspect(self.path, self.aspect)
            except (OSError, matroska.MatroskaError) as exc:
                raise RecordingError(f"writing the pixel aspect of {self.path!r}: {exc}") from exc


def _palettized(rgb, colours=None):
    """``(indices uint8[H, W], palette uint8[256, 4], colours)`` of an RGB
    picture with at most 256 colours (any card frame; more are cut to 256).
    ``colours`` (the sorted 24-bit colours of the previous frame) is reused
    when it holds every colour of this one, which spares a sort."""
    flat = rgb.reshape(-1, 3)
    key = (flat[:, 0].astype(np.uint32) << 16) | (flat[:, 1].astype(np.uint32) << 8) | flat[:, 2]
    inverse = None
    if colours is not None and len(colours):
        pos = np.minimum(np.searchsorted(colours, key), len(colours) - 1)
        if (colours[pos] == key).all():
            inverse = pos
    if inverse is None:
        colours, inverse = np.unique(key, return_inverse=True)
        if len(colours) > 256:          # not a card frame; keep it encodable
            inverse = np.minimum(inverse, 255)
            colours = colours[:256]
    # PyAV takes the palette entries as bytes A, R, G, B
    palette = np.zeros((256, 4), dtype=np.uint8)
    palette[:, 0] = 255
    palette[:len(colours), 1] = (colours >> 16) & 0xFF
    palette[:len(colours), 2] = (colours >> 8) & 0xFF
    palette[:len(colours), 3] = colours & 0xFF
    return inverse.reshape(rgb.shape[:2]).astype(np.uint8), palette, colours


class Recorder:
    """Records ``machine``'s display (and speaker) to ``path`` from now on.

    Use :meth:`start` (checks, opens the first file, joins the scheduler)
    and :meth:`stop` (takes the last frame's sound, finishes the files,
    leaves the scheduler).  Frames are taken at emulated cycles ``origin +
    frame period`` ..., the first one at the start."""

    def __init__(self, machine, path, audio=True, reuse_unchanged=True):
        self.machine = machine
        self.path = path
        self.ext = check_path(path)
        self.video = machine.video
        if self.video is None:
            raise RecordingError("a recording needs a video plugin (e.g. --plugins cga)")
        if not callable(getattr(self.video, "frame_cycles", None)):
            raise RecordingError(f"the {getattr(self.video, 'adapter', 'video')} card has no "
                                 "frame_cycles() (the VideoDevice protocol's frame timing), "
                                 "so it cannot be recorded")
        self.want_audio = bool(audio) and FORMATS[self.ext][3] is not None
        #: card frames per recorded frame: GIF delays are whole 1/100 s and
        #: browsers stretch those under 2/100 s to 1/10 s, so a GIF takes
        #: every second frame (29.96 / 35.04 frames a second)
        self.stride = STRIDE.get(self.ext, 1)
        self.origin = int(machine.clock())
        self.next_cycle = self.origin
        self.segments = []
        self.files = []
        #: skip rendering when the card's frame_key() says nothing changed
        self.reuse_unchanged = bool(reuse_unchanged)
        self._last_key = None
        self._last_rgb = None
        self.rendered = 0               # frames actually rendered
        self.error = None
        self.frames = 0
        self.seconds = 0.0              # emulated seconds the frames cover
        self.active = False
        self.speaker = None
        self.tap = None
        self.last_cycle = self.origin
        self.epoch = getattr(machine, "display_epoch", 0)
        self._segment_origin = self.origin

    @classmethod
    def start(cls, machine, path, audio=True, reuse_unchanged=True):
        rec = cls(machine, path, audio=audio, reuse_unchanged=reuse_unchanged)
        rec._begin()
        return rec

    def _begin(self):
        if self.want_audio:
            from .speaker import Speaker
            self.tap = _SpeakerTap()
            self.speaker = Speaker(self.machine, [self.tap], rate=AUDIO_RATE)
        try:
            self._capture(self.origin)             # frame 0, opens the first file
        except BaseException as exc:
            try:
                self._close_files(flush=False)     # (a failed muxer takes no more)
            except Exception:
                pass
            if isinstance(exc, Exception) and not isinstance(exc, PypcError):
                raise RecordingError(f"{self.path!r}: {exc}") from exc
            raise
        self.active = True
        self.machine.scheduler.add(self, marks_ports=False)

    # -- the scheduler's observer protocol ---------------------------------
    def next_event(self):
        if not self.active:
            return None
        if getattr(self.machine, "display_epoch", 0) != self.epoch:
            return 0                        # a restored snapshot: look at once
        return self.next_cycle

    def advance(self, cycle):
        if not self.active:
            return
        epoch = getattr(self.machine, "display_epoch", 0)
        if epoch != self.epoch:
            # the machine jumped in time (a snapshot or checkpoint restored):
            # the video goes on one frame period after the last frame
            self.epoch = epoch
            if self.segments:
                last_pts = self.last_cycle - self._segment_origin
                self._segment_origin = cycle - last_pts - self._period_cycles() * self.stride
            self.next_cycle = cycle
        try:
            while self.next_cycle <= cycle:
                self._capture(self.next_cycle)
        except Exception as exc:            # a full disk, an encoder error ...
            self._fail(exc)

    def _fail(self, exc):
        """Stop taking frames (the guest runs on untouched), finish what can
        be finished and keep the error for :meth:`stop`."""
        self.active = False                 # next_event() is None from now on
        self.error = exc
        note = getattr(self.machine, "note", None)
        if note is not None:
            note("error", f"recording {self.path!r} stopped at cycle "
                          f"{int(self.machine.clock())}: {exc}")
        try:
            self._close_files(flush=False)
        except Exception:
            pass

    # -- frames and sound ----------------------------------------------------
    def _frame_period(self):
        return float(self.video.frame_cycles())

    def _period_cycles(self):
        return max(1, int(round(self._frame_period())))

    def _capture(self, at):
        key = video_frames.frame_key(self.video) if self.reuse_unchanged else None
        if key is not None and key == self._last_key:
            rgb = self._last_rgb                # the same picture as the last frame
        else:
            rgb = video_frames.frame(self.video)
            self.rendered += 1
            self._last_key, self._last_rgb = key, rgb
        h, w = rgb.shape[:2]
        seg = self.segments[-1] if self.segments else None
        if h == 0 or w == 0:
            if seg is None:
                w, h = 640, 200
            else:
                w, h = seg.size
            rgb = np.zeros((h, w, 3), dtype=np.uint8)
        if seg is None or seg.size != (w, h):
            self._new_segment(at, w, h)
            seg = self.segments[-1]
        self._pump_audio()
        seg.add_frame(rgb, at - self._segment_origin)
        self.frames += 1
        self.last_cycle = at
        step = self._period_cycles() * self.stride
        self.next_cycle = at + step
        self.seconds += step / CPU_HZ

    def _pump_audio(self):
        """Mux the speaker's samples rendered so far (up to the current
        cycle, a few cycles past the frame being taken) into the current
        segment.  The Speaker keeps its own sample count across restored
        snapshots, so the sound stays continuous."""
        if self.speaker is None or not self.segments:
            return
        self.speaker.render()
        pcm = self.tap.take(self.tap.count)
        if len(pcm):
            self.segments[-1].add_audio(pcm)

    def _new_segment(self, at, w, h):
        if self.segments:
            self._pump_audio()
            self.segments[-1].close()
        path = segment_path(self.path, len(self.segments))
        seg = _Segment(path, self.ext, w, h, video_frames.pixel_aspect(self.video),
                       CPU_HZ / self._frame_period(), self.speaker is not None)
        self.segments.append(seg)
        self.files.append(path)
        self._segment_origin = at

    # -- ending ---------------------------------------------------------------
    def stop(self):
        """Finish the files and leave the machine; returns a summary dict:
        files, frames, seconds (emulated), frame_rate_hz (of the last mode),
        width/height (of the last file), audio (bool).  A recording that
        failed while running (its error is in the machine's diagnostics)
        raises RecordingError here, after leaving the machine."""
        if self.error is not None:
            self._abort()
            raise RecordingError(f"the recording to {self.path!r} stopped early: "
                                 f"{self.error}")
        if not self.active:
            raise RecordingError("the recording is not running")
        self.active = False
        self.machine.scheduler.remove(self)
        try:
            if self.segments:
                self._pump_audio()              # the sound up to now
        except Exception as exc:                # (a failed muxer takes no more)
            try:
                self._close_files(flush=False)
            except Exception:
                pass
            raise RecordingError(f"finishing {self.path!r}: {exc}") from exc
        self._abort()
        w, h = self.segments[-1].size if self.segments else (0, 0)
        return {
            "files": list(self.files),
            "frames": self.frames,
            "seconds": self.seconds,
            "frame_rate_hz": float(video_frames.frame_rate_hz(self.video)),
            "width": int(w), "height": int(h),
            "audio": self.speaker is not None,
        }

    def _abort(self):
        """Leave the machine and close what is open (files stay as far as
        they were written)."""
        self.active = False
        self.machine.scheduler.remove(self)
        self._close_files()

    def _close_files(self, flush=True):
        if self.speaker is not None and not self.speaker.closed:
            self.speaker.close()
        errors = []
        for seg in self.segments:
            try:
                seg.close(flush=flush)
            except Exception as exc:        # keep closing the others
                errors.append(exc)
                seg.container = None
        if errors:
            raise RecordingError(f"finishing {self.path!r}: {errors[0]}")
