"""The display size of a Matroska/WebM video track, written after the fact.

FFmpeg's Matroska muxer writes a track's ``DisplayWidth``/``DisplayHeight``
from the *stream's* sample aspect ratio, which PyAV has no way to set (its
``sample_aspect_ratio`` goes to the encoder, and VP9 has no field for it);
MKV files from H.264 get the aspect from the bitstream, WebM files from
VP9 get none.  :func:`set_pixel_aspect` mends a closed file: it inserts
(or replaces) ``DisplayWidth`` (0x54B0) and ``DisplayHeight`` (0x54BA) in
``Segment > Tracks > TrackEntry > Video`` of the video track, in pixels
(``DisplayUnit`` 0, the default; an existing ``DisplayUnit`` is dropped),
and then fixes what the insertion moves: the sizes of ``Video``,
``TrackEntry``, ``Tracks`` and ``Segment``, every ``SeekPosition`` of the
``SeekHead`` elements, every ``CueClusterPosition`` (and
``CueCodecState``) of ``Cues``, and the ``CRC-32`` of any of those
level-1 elements that carries one.  Clusters are copied byte for byte.

The new file is written beside the old one and renamed over it, so a file
this module cannot read (not EBML, truncated, an element of unknown size
other than the Segment, a ``Cluster`` ``Position`` it would have to move,
no video track) is left exactly as it was, with a :class:`MatroskaError`
saying why.
"""

import os
import tempfile
import zlib
from fractions import Fraction
from math import gcd

from .errors import PypcError

EBML = 0x1A45DFA3
SEGMENT = 0x18538067
SEEK_HEAD, SEEK, SEEK_POSITION = 0x114D9B74, 0x4DBB, 0x53AC
TRACKS, TRACK_ENTRY, TRACK_TYPE = 0x1654AE6B, 0xAE, 0x83
VIDEO, PIXEL_WIDTH, PIXEL_HEIGHT = 0xE0, 0xB0, 0xBA
DISPLAY_WIDTH, DISPLAY_HEIGHT, DISPLAY_UNIT = 0x54B0, 0x54BA, 0x54B2
CUES, CUE_POINT, CUE_TRACK_POSITIONS = 0x1C53BB6B, 0xBB, 0xB7
CUE_CLUSTER_POSITION, CUE_CODEC_STATE = 0xF1, 0xEA
CLUSTER, CLUSTER_POSITION = 0x1F43B675, 0xA7
CRC32 = 0xBF

#: masters this module takes apart (everything else is kept as raw bytes)
_MASTERS = {SEEK_HEAD, SEEK, TRACKS, TRACK_ENTRY, VIDEO, CUES, CUE_POINT,
            CUE_TRACK_POSITIONS}
#: unsigned integers holding a position in the Segment's data
_POSITIONS = {SEEK_POSITION, CUE_CLUSTER_POSITION, CUE_CODEC_STATE}
_UNKNOWN = object()
_COPY_CHUNK = 1 << 20


class MatroskaError(PypcError):
    pass


# -- EBML primitives ----------------------------------------------------------
def _vint_length(buf, pos, end, what, longest, kind):
    """The length of the EBML variable-length integer at ``pos`` (its
    first byte's leading zeros), at most ``longest`` bytes."""
    if pos >= end:
        raise MatroskaError(f"{what}: an element header runs past its end")
    first = buf[pos]
    length = 1
    while length <= longest and not first & (0x100 >> length):
        length += 1
    if length > longest or pos + length > end:
        raise MatroskaError(f"{what}: a bad element {kind} at byte {pos}")
    return length


def _read_id(buf, pos, end, what):
    length = _vint_length(buf, pos, end, what, 4, "id")
    return int.from_bytes(buf[pos:pos + length], "big"), pos + length


def _read_size(buf, pos, end, what):
    length = _vint_length(buf, pos, end, what, 8, "size")
    value = int.from_bytes(buf[pos:pos + length], "big") & ((1 << (7 * length)) - 1)
    if value == (1 << (7 * length)) - 1:
        value = _UNKNOWN
    return value, length, pos + length


def _encode_size(value, length=1):
    """``value`` as an EBML size of at least ``length`` bytes (the one the
    file used, so that an unchanged size stays byte for byte)."""
    while value >= (1 << (7 * length)) - 1:
        length += 1
    if length > 8:
        raise MatroskaError(f"an element of {value} bytes is too large for EBML")
    return ((1 << (7 * length)) | value).to_bytes(length, "big")


def _encode_id(element_id):
    return element_id.to_bytes((element_id.bit_length() + 7) // 8, "big")


def _encode_uint(value, length=1):
    while value >= 1 << (8 * length):
        length += 1
    return value.to_bytes(length, "big")


class _Element:
    """A parsed element: ``data`` (raw bytes) or ``children`` (a master)."""

    __slots__ = ("id", "size_len", "data", "children")

    def __init__(self, element_id, size_len, data=None, children=None):
        self.id, self.size_len, self.data, self.children = element_id, size_len, data, children

    def find(self, element_id):
        return [c for c in self.children if c.id == element_id]

    def uint(self, element_id, default=None):
        found = self.find(element_id)
        if not found:
            return default
        return int.from_bytes(found[0].data, "big") if found[0].data else 0

    def payload(self):
        if self.children is None:
            return self.data
        body = [c.encode() for c in self.children]
        if self.children and self.children[0].id == CRC32:
            rest = b"".join(body[1:])
            crc = _Element(CRC32, self.children[0].size_len,
                           zlib.crc32(rest).to_bytes(4, "little"))
            return crc.encode() + rest
        return b"".join(body)

    def encode(self):
        data = self.payload()
        return _encode_id(self.id) + _encode_size(len(data), self.size_len) + data


def _parse(buf, pos, end, what):
    """The elements in ``buf[pos:end]``, masters of ``_MASTERS`` taken apart."""
    out = []
    while pos < end:
        element_id, pos = _read_id(buf, pos, end, what)
        size, size_len, pos = _read_size(buf, pos, end, what)
        if size is _UNKNOWN or pos + size > end:
            raise MatroskaError(f"{what}: element 0x{element_id:X} runs past its parent")
        if element_id in _MASTERS:
            out.append(_Element(element_id, size_len,
                                children=_parse(buf, pos, pos + size, what)))
        else:
            out.append(_Element(element_id, size_len, data=bytes(buf[pos:pos + size])))
        pos += size
    return out


def _remap(element, mapper):
    """A copy of ``element`` with every position in it passed through ``mapper``."""
    if element.children is not None:
        return _Element(element.id, element.size_len,
                        children=[_remap(c, mapper) for c in element.children])
    if element.id in _POSITIONS:
        old = int.from_bytes(element.data, "big") if element.data else 0
        return _Element(element.id, element.size_len,
                        data=_encode_uint(mapper(old), max(len(element.data), 1)))
    return element


# -- the file's layout --------------------------------------------------------
class _Child:
    """A level-1 element of the Segment: where it is, and (for the ones
    rewritten) its parsed form."""

    __slots__ = ("id", "start", "length", "tree")

    def __init__(self, element_id, start, length):
        self.id, self.start, self.length, self.tree = element_id, start, length, None


def _read_range(f, start, length):
    f.seek(start)
    data = f.read(length)
    if len(data) != length:
        raise MatroskaError("the file ends inside an element")
    return data


def _layout(f, file_size, what):
    """``(segment header start, segment size length, segment data start,
    segment data end, unknown size?, [level-1 children])``."""
    head = _read_range(f, 0, min(file_size, 64))
    element_id, pos = _read_id(head, 0, len(head), what)
    if element_id != EBML:
        raise MatroskaError(f"{what}: not a Matroska/WebM file (no EBML header)")
    size, _, pos = _read_size(head, pos, len(head), what)
    if size is _UNKNOWN or pos + size > file_size:
        raise MatroskaError(f"{what}: a bad EBML header")
    seg_start = pos + size
    head = _read_range(f, seg_start, min(file_size - seg_start, 16))
    element_id, p = _read_id(head, 0, len(head), what)
    if element_id != SEGMENT:
        raise MatroskaError(f"{what}: no Segment after the EBML header")
    seg_size, seg_size_len, p = _read_size(head, p, len(head), what)
    data_start = seg_start + p
    unknown = seg_size is _UNKNOWN
    data_end = file_size if unknown else data_start + seg_size
    if data_end > file_size:
        raise MatroskaError(f"{what}: the Segment runs past the end of the file (truncated)")
    children = []
    pos = data_start
    while pos < data_end:
        head = _read_range(f, pos, min(data_end - pos, 12))
        element_id, p = _read_id(head, 0, len(head), what)
        size, _, p = _read_size(head, p, len(head), what)
        if size is _UNKNOWN:
            raise MatroskaError(f"{what}: element 0x{element_id:X} at byte {pos} has an "
                                "unknown size (a live stream); not supported")
        if pos + p + size > data_end:
            raise MatroskaError(f"{what}: element 0x{element_id:X} at byte {pos} runs past "
                                "the end of the Segment (truncated)")
        if element_id == CLUSTER:
            _check_cluster(f, pos + p, pos + p + size, what)
        children.append(_Child(element_id, pos - data_start, p + size))
        pos += p + size
    return seg_start, seg_size_len, data_start, data_end, unknown, children


def _check_cluster(f, pos, end, what):
    """Refuse a Cluster that says where it is (its ``Position`` would move)."""
    while pos < end:
        head = _read_range(f, pos, min(end - pos, 12))
        element_id, p = _read_id(head, 0, len(head), what)
        size, _, p = _read_size(head, p, len(head), what)
        if size is _UNKNOWN or pos + p + size > end:
            raise MatroskaError(f"{what}: a bad element in the Cluster at byte {pos}")
        if element_id == CLUSTER_POSITION:
            raise MatroskaError(f"{what}: its Clusters hold their own Position; not supported")
        if element_id not in (0xE7, 0xAB, CRC32, 0xEC):     # Timestamp, PrevSize, CRC, Void
            return                                          # (Position comes before blocks)
        pos += p + size


def _video_entry(tracks, what):
    entries = [e for e in tracks.find(TRACK_ENTRY)
               if e.uint(TRACK_TYPE) == 1 or e.find(VIDEO)]
    if not entries or not entries[0].find(VIDEO):
        raise MatroskaError(f"{what}: no video track")
    return entries[0]


def display_size(pixel_width, pixel_height, aspect):
    """``(DisplayWidth, DisplayHeight)`` in pixels for a picture of that
    many pixels whose pixels are ``aspect`` (width / height) wide: the
    width scaled if that is a whole number, else the height, else the
    exact ratio in lowest terms."""
    aspect = Fraction(aspect)
    if aspect <= 0 or pixel_width <= 0 or pixel_height <= 0:
        raise MatroskaError(f"a bad display size: {pixel_width}x{pixel_height} "
                            f"pixels of aspect {aspect}")
    width = pixel_width * aspect
    if width.denominator == 1:
        return int(width), pixel_height
    height = pixel_height / aspect
    if height.denominator == 1:
        return pixel_width, int(height)
    w, h = pixel_width * aspect.numerator, pixel_height * aspect.denominator
    g = gcd(w, h)
    return w // g, h // g


def read_video_track(path):
    """``{"pixel_width", "pixel_height", "display_width", "display_height",
    "display_unit"}`` of the file's video track (display fields ``None``
    when the file has none)."""
    what = os.fspath(path)
    with open(path, "rb") as f:
        file_size = os.fstat(f.fileno()).st_size
        _, _, data_start, _, _, children = _layout(f, file_size, what)
        tracks = _load(f, data_start, children, TRACKS, what)
    video = _video_entry(tracks, what).find(VIDEO)[0]
    return {"pixel_width": video.uint(PIXEL_WIDTH), "pixel_height": video.uint(PIXEL_HEIGHT),
            "display_width": video.uint(DISPLAY_WIDTH),
            "display_height": video.uint(DISPLAY_HEIGHT),
            "display_unit": video.uint(DISPLAY_UNIT)}


def _load(f, data_start, children, element_id, what):
    found = [c for c in children if c.id == element_id]
    if not found:
        raise MatroskaError(f"{what}: no element 0x{element_id:X} in the Segment")
    c = found[0]
    buf = _read_range(f, data_start + c.start, c.length)
    return _parse(buf, 0, len(buf), what)[0]


def set_pixel_aspect(path, aspect):
    """Give the video track of the Matroska/WebM file at ``path`` the
    display size of its pixels at ``aspect`` (a Fraction, width / height
    of one pixel); returns ``(DisplayWidth, DisplayHeight)``."""
    info = read_video_track(path)
    if not info["pixel_width"] or not info["pixel_height"]:
        raise MatroskaError(f"{os.fspath(path)}: the video track has no pixel size")
    size = display_size(info["pixel_width"], info["pixel_height"], aspect)
    set_display_size(path, *size)
    return size


def set_display_size(path, width, height):
    """Write ``DisplayWidth``/``DisplayHeight`` (pixels) into the video
    track of the Matroska/WebM file at ``path``, in place (through a new
    file renamed over it; on an error the file is untouched)."""
    what = os.fspath(path)
    if not (isinstance(width, int) and isinstance(height, int) and width > 0 and height > 0):
        raise MatroskaError(f"a bad display size {width!r}x{height!r}")
    with open(path, "rb") as f:
        st = os.fstat(f.fileno())
        seg_start, seg_size_len, data_start, data_end, unknown, children = \
            _layout(f, st.st_size, what)
        for c in children:
            if c.id in (SEEK_HEAD, TRACKS, CUES):
                buf = _read_range(f, data_start + c.start, c.length)
                c.tree = _parse(buf, 0, len(buf), what)[0]
        tracks = [c for c in children if c.id == TRACKS]
        if not tracks:
            raise MatroskaError(f"{what}: no Tracks in the Segment")
        video = _video_entry(tracks[0].tree, what).find(VIDEO)[0]
        video.children = [c for c in video.children
                          if c.id not in (DISPLAY_WIDTH, DISPLAY_HEIGHT, DISPLAY_UNIT)]
        video.children += [_Element(DISPLAY_WIDTH, 1, data=_encode_uint(width)),
                           _Element(DISPLAY_HEIGHT, 1, data=_encode_uint(height))]
        body = _relayout(children, what)
        fd, tmp = tempfile.mkstemp(prefix=".", suffix=".tmp",
                                   dir=os.path.dirname(os.path.abspath(path)))
        try:
            with os.fdopen(fd, "wb") as out:
                f.seek(0)
                out.write(_read_range(f, 0, seg_start))
                new_size = sum(len(b) if isinstance(b, bytes) else b.length for b in body)
                out.write(_encode_id(SEGMENT))
                if unknown:
                    out.write(_read_range(f, seg_start + 4, seg_size_len))
                else:
                    out.write(_encode_size(new_size, seg_size_len))
                for piece in body:
                    if isinstance(piece, bytes):
                        out.write(piece)
                    else:
                        _copy(f, out, data_start + piece.start, piece.length)
                _copy(f, out, data_end, st.st_size - data_end)      # anything after it
            os.chmod(tmp, st.st_mode & 0o7777)
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise


def _copy(src, dst, start, length):
    src.seek(start)
    while length > 0:
        chunk = src.read(min(length, _COPY_CHUNK))
        if not chunk:
            raise MatroskaError("the file ends inside an element")
        dst.write(chunk)
        length -= len(chunk)


def _relayout(children, what):
    """The Segment's new body: for each level-1 child its new bytes (the
    rewritten ones) or the child itself (copied as it is).  Positions
    depend on the rewritten lengths and those on the positions, so this
    settles in a few rounds."""
    lengths = [c.length for c in children]
    for _ in range(16):
        starts, at = [], 0
        for n in lengths:
            starts.append(at)
            at += n

        def mapper(old, starts=starts):
            for c, new in zip(children, starts):
                if c.start <= old < c.start + c.length:
                    return new + (old - c.start)
            raise MatroskaError(f"{what}: a position ({old}) points outside the Segment")

        body = [_remap(c.tree, mapper).encode() if c.tree is not None else c
                for c in children]
        new_lengths = [len(b) if isinstance(b, bytes) else b.length for b in body]
        if new_lengths == lengths:
            return body
        lengths = new_lengths
    raise MatroskaError(f"{what}: the positions do not settle")
