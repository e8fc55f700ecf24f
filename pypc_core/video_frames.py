"""One image path: the display card's picture as pixels, its shape and
rate, and PNG encoding (Pillow).

Screenshots (``--screenshot``, ``pypc screenshot``, the ``video.screenshot``
RPC extension), recordings (:mod:`pypc_core.recording`), the VNC viewer's
frames and the MCP adapter's images all take their pixels here:

``frame(source) -> numpy.uint8[H, W, 3]``
    the visible picture at the mode's native resolution (CGA 640x200 in
    every mode, VGA 720x400 text, 320x200 mode 13h, 640x480 mode 12h ...).
``pixel_aspect(source) -> fractions.Fraction``
    the width of one pixel over its height on the monitor (CGA 5/12, VGA
    text 20/27, mode 13h 5/6, 640x480 1/1).
``frame_rate_hz(source) -> float``
    frames per emulated second with the card's current programming (CGA
    59.92, VGA 70.09 in 400-line modes, 59.94 in 480-line ones).
``frame_cycles(source) -> float``
    emulated CPU cycles per frame (``CPU_HZ / frame_rate_hz``).
``frame_key(source) -> bytes | None``
    what determines the frame exactly (video memory, registers, blink
    phases), for skipping the rendering of an unchanged picture.
``encode_png(rgb) -> bytes`` and ``png_bytes(source)``
    PNG of an ``uint8[H, W, 3]`` array (or of the source's frame).
``decode_png(data) -> numpy.uint8[H, W, 3]``
    the inverse (Pillow), for checks and clients.

``source`` is a :class:`~pypc_core.machine.Machine` (its ``video``) or a
video device itself (anything with the ``VideoDevice`` protocol of
:mod:`pypc_core.device`).  The functions only read the card.
"""

import io
from fractions import Fraction

import numpy as np

from .errors import PypcError
from .scheduler import CPU_HZ


def video_of(source):
    """The video device of ``source`` (a machine or a device)."""
    video = source if hasattr(source, "frame") else getattr(source, "video", None)
    if video is None or not hasattr(video, "frame"):
        raise PypcError("no video adapter is plugged in")
    return video


def frame(source):
    """The visible picture, ``uint8[H, W, 3]`` (a fresh, contiguous array)."""
    return np.ascontiguousarray(video_of(source).frame(), dtype=np.uint8)


def frame_key(source):
    """The card's ``frame_key()`` -- bytes that are equal only when
    ``frame()`` would be -- or None for a card without one."""
    video = video_of(source)
    fn = getattr(video, "frame_key", None)
    return fn() if callable(fn) else None


def pixel_aspect(source):
    """The card's ``pixel_aspect()``; for a card without one, that of its
    frame filling a 4:3 screen."""
    video = video_of(source)
    if callable(getattr(video, "pixel_aspect", None)):
        return Fraction(video.pixel_aspect())
    h, w = video.frame().shape[:2]
    return aspect_for(w, h)


def frame_rate_hz(source):
    """Frames per emulated second: the card's ``frame_rate_hz()``, else
    ``CPU_HZ / frame_cycles()``."""
    video = video_of(source)
    if callable(getattr(video, "frame_rate_hz", None)):
        return float(video.frame_rate_hz())
    return CPU_HZ / frame_cycles(video)


def frame_cycles(source):
    """Emulated CPU cycles per frame (a card without ``frame_cycles()``
    cannot be timed: PypcError)."""
    video = video_of(source)
    if not callable(getattr(video, "frame_cycles", None)):
        raise PypcError(f"the {getattr(video, 'adapter', 'video')} card has no frame_cycles() "
                        "(the VideoDevice protocol's frame timing)")
    return float(video.frame_cycles())


def aspect_for(width, height):
    """Pixel aspect of a ``width`` x ``height`` picture filling a 4:3 screen
    (what both cards' monitors show)."""
    if width <= 0 or height <= 0:
        return Fraction(1)
    return Fraction(4 * height, 3 * width)


def encode_png(rgb, compress_level=6):
    """PNG bytes of an ``uint8[H, W, 3]`` array (Pillow), 8-bit RGB."""
    from PIL import Image
    rgb = np.ascontiguousarray(rgb, dtype=np.uint8)
    if rgb.ndim != 3 or rgb.shape[2] != 3:
        raise ValueError(f"encode_png wants uint8[H, W, 3], not shape {rgb.shape}")
    if rgb.shape[0] == 0 or rgb.shape[1] == 0:
        raise ValueError("encode_png: an empty picture (the card displays nothing)")
    image = Image.fromarray(rgb, "RGB")
    out = io.BytesIO()
    image.save(out, "PNG", compress_level=compress_level)
    return out.getvalue()


def decode_png(data):
    """``uint8[H, W, 3]`` of PNG bytes."""
    from PIL import Image
    with Image.open(io.BytesIO(data)) as image:
        return np.asarray(image.convert("RGB"), dtype=np.uint8).copy()


def png_bytes(source, double=False):
    """PNG of the source's frame (``double``: the card's ``frame_doubled()``,
    close to the screen's shape, square pixels implied)."""
    video = video_of(source)
    if double:
        return encode_png(video.frame_doubled())
    rgb = frame(video)
    return encode_png(rgb)


def write_png(path, rgb):
    """Write ``rgb`` as a PNG file; returns its size in bytes."""
    data = encode_png(rgb)
    with open(path, "wb") as f:
        f.write(data)
    return len(data)


__all__ = ["aspect_for", "decode_png", "encode_png", "frame", "frame_cycles", "frame_key",
           "frame_rate_hz", "pixel_aspect", "png_bytes", "video_of", "write_png"]
