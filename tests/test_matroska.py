"""pypc_core/matroska.py: DisplayWidth/DisplayHeight written into a closed
Matroska/WebM file.  A real WebM from PyAV (VP9 + Opus, SeekHead, Cues)
comes back with the display size, every SeekPosition and
CueClusterPosition still pointing at the element it names, the Segment
size right, the clusters byte for byte and every frame decoding the same;
a hand-built file whose positions grow a byte (the SeekHead then grows
and moves everything again) and whose Tracks carry a CRC-32 settles
right; malformed files are a MatroskaError and stay untouched."""

import zlib
from fractions import Fraction

import numpy as np
import pytest

from pypc_core import matroska
from pypc_core.matroska import MatroskaError, display_size, set_display_size, set_pixel_aspect

av = pytest.importorskip("av")


# -- an independent EBML reader for checking -----------------------------------
def vint(buf, pos, keep_marker):
    first = buf[pos]
    n = 1
    while n <= 8 and not first & (0x100 >> n):
        n += 1
    assert n <= 8, f"a bad vint at {pos}"
    value = int.from_bytes(buf[pos:pos + n], "big")
    if not keep_marker:
        value &= (1 << (7 * n)) - 1
    return value, pos + n


def elements(buf, pos, end):
    """[(id, header start, data start, data end)] of buf[pos:end]."""
    out = []
    while pos < end:
        start = pos
        eid, pos = vint(buf, pos, True)
        size, pos = vint(buf, pos, False)
        out.append((eid, start, pos, pos + size))
        pos += size
    assert pos == end
    return out


def child(buf, parent, eid):
    return [e for e in elements(buf, parent[2], parent[3]) if e[0] == eid]


def uint(buf, e):
    return int.from_bytes(buf[e[2]:e[3]], "big")


def check_structure(path):
    """Every size adds up, every position names the element it should;
    returns (segment data, {level-1 id: [elements]}, the Segment)."""
    buf = open(path, "rb").read()
    top = elements(buf, 0, len(buf))
    assert top[0][0] == matroska.EBML and top[1][0] == matroska.SEGMENT
    seg = top[1]
    base = seg[2]
    level1 = elements(buf, seg[2], seg[3])
    by_start = {e[1] - base: e for e in level1}
    kinds = {}
    for e in level1:
        kinds.setdefault(e[0], []).append(e)
        masters = (matroska.SEEK_HEAD, 0x1549A966, matroska.TRACKS, matroska.CUES, 0x1254C367)
        crc = elements(buf, e[2], e[3])[:1] if e[0] in masters else []
        if crc and crc[0][0] == matroska.CRC32:
            assert int.from_bytes(buf[crc[0][2]:crc[0][3]], "little") == \
                zlib.crc32(buf[crc[0][3]:e[3]])
    for head in kinds.get(matroska.SEEK_HEAD, []):
        for seek in child(buf, head, matroska.SEEK):
            named = int.from_bytes(buf[child(buf, seek, 0x53AB)[0][2]:
                                       child(buf, seek, 0x53AB)[0][3]], "big")
            at = uint(buf, child(buf, seek, matroska.SEEK_POSITION)[0])
            assert by_start[at][0] == named
    for cues in kinds.get(matroska.CUES, []):
        for point in child(buf, cues, matroska.CUE_POINT):
            for tp in child(buf, point, matroska.CUE_TRACK_POSITIONS):
                at = uint(buf, child(buf, tp, matroska.CUE_CLUSTER_POSITION)[0])
                assert by_start[at][0] == matroska.CLUSTER
    return buf, kinds, seg


def webm(path, frames=12, audio=True, width=64, height=40):
    with av.open(str(path), "w", format="webm",
                 container_options={"fflags": "+bitexact"}) as c:
        v = c.add_stream("libvpx-vp9", rate=30,
                         options={"deadline": "realtime", "cpu-used": "8", "g": "4"})
        v.width, v.height, v.pix_fmt = width, height, "yuv420p"
        a = c.add_stream("libopus", rate=48000, layout="mono") if audio else None
        rng = np.random.default_rng(1)
        for i in range(frames):
            f = av.VideoFrame.from_ndarray(
                rng.integers(0, 256, (height, width, 3), dtype=np.uint8), format="rgb24")
            f.pts = i
            for p in v.encode(f):
                c.mux(p)
            if a is not None:
                s = av.AudioFrame.from_ndarray(np.zeros((1, 1600), np.int16), format="s16",
                                               layout="mono")
                s.sample_rate, s.pts = 48000, i * 1600
                for p in a.encode(s):
                    c.mux(p)
        for st in (v, a):
            if st is not None:
                for p in st.encode(None):
                    c.mux(p)
    return path


def decoded(path):
    with av.open(str(path)) as c:
        sar = c.streams.video[0].sample_aspect_ratio
        return sar, [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]


def test_display_size_prefers_whole_pixels():
    assert display_size(640, 200, Fraction(5, 12)) == (640, 480)     # CGA
    assert display_size(720, 400, Fraction(20, 27)) == (720, 540)    # VGA text
    assert display_size(320, 200, Fraction(5, 6)) == (320, 240)      # 13h
    assert display_size(10, 10, Fraction(4, 3)) == (4, 3)            # neither: lowest terms
    assert display_size(9, 7, Fraction(2, 1)) == (18, 7)
    for bad in [(0, 200, 1), (640, 200, 0), (640, 200, -1)]:
        with pytest.raises(MatroskaError):
            display_size(*bad)


def test_a_webm_gets_its_aspect_and_keeps_everything_else(tmp_path):
    path = webm(tmp_path / "a.webm")
    before, kinds0, _ = check_structure(path)
    assert matroska.SEEK_HEAD in kinds0 and matroska.CUES in kinds0
    sar0, frames0 = decoded(path)
    assert sar0 in (None, Fraction(1))
    assert set_pixel_aspect(path, Fraction(5, 12)) == (64, 96)
    after, kinds, seg = check_structure(path)
    info = matroska.read_video_track(path)
    assert (info["display_width"], info["display_height"]) == (64, 96)
    assert (info["pixel_width"], info["pixel_height"]) == (64, 40)
    assert len(after) == len(before) + 8                 # two 4-byte elements
    assert seg[3] == len(after)                          # the Segment size
    clusters0 = [before[e[1]:e[3]] for e in kinds0[matroska.CLUSTER]]
    assert [after[e[1]:e[3]] for e in kinds[matroska.CLUSTER]] == clusters0
    sar, frames = decoded(path)
    assert sar == Fraction(5, 12)
    assert len(frames) == len(frames0) == 12
    assert all((a == b).all() for a, b in zip(frames, frames0))
    with av.open(str(path)) as c:                        # the Cues still seek
        c.seek(int(0.3 / c.streams.video[0].time_base), stream=c.streams.video[0])
        assert next(c.decode(video=0)) is not None


def test_writing_it_again_replaces_it(tmp_path):
    path = webm(tmp_path / "a.webm", audio=False)
    set_display_size(path, 100, 50)
    once = path.read_bytes()
    set_display_size(path, 100, 50)
    assert path.read_bytes() == once
    set_display_size(path, 64, 96)
    check_structure(path)
    info = matroska.read_video_track(path)
    assert (info["display_width"], info["display_height"]) == (64, 96)
    assert decoded(path)[0] == Fraction(5, 12)
    assert [p.name for p in tmp_path.iterdir()] == ["a.webm"]      # no side files


# -- a hand-built file: positions that need one more byte ---------------------
def el(eid, payload):
    size = len(payload)
    n = 1
    while size >= (1 << (7 * n)) - 1:
        n += 1
    return matroska._encode_id(eid) + ((1 << (7 * n)) | size).to_bytes(n, "big") + payload


def u(eid, value, width):
    return el(eid, value.to_bytes(width, "big"))


def hand_built(cues_at=250, crc=True, cluster_extra=b""):
    """EBML, Segment{SeekHead{Seek Tracks, Seek Cues}, Tracks{(CRC-32)
    TrackEntry{Video}}, Cluster, Cues}: the Cues at segment position
    ``cues_at`` (< 256, held in one byte)."""
    header = el(matroska.EBML, el(0x4282, b"webm"))
    entry = el(matroska.TRACK_ENTRY, u(0xD7, 1, 1) + u(matroska.TRACK_TYPE, 1, 1)
               + el(0x86, b"V_VP9")
               + el(matroska.VIDEO, u(matroska.PIXEL_WIDTH, 640, 2)
                    + u(matroska.PIXEL_HEIGHT, 200, 1)))
    tracks_body = (el(matroska.CRC32, zlib.crc32(entry).to_bytes(4, "little")) if crc else b"") \
        + entry

    def seekhead(tracks_at, cues_pos):
        return el(matroska.SEEK_HEAD,
                  el(matroska.SEEK, el(0x53AB, matroska._encode_id(matroska.TRACKS))
                     + u(matroska.SEEK_POSITION, tracks_at, 1))
                  + el(matroska.SEEK, el(0x53AB, matroska._encode_id(matroska.CUES))
                       + u(matroska.SEEK_POSITION, cues_pos, 1)))

    tracks = el(matroska.TRACKS, tracks_body)
    sh_len = len(seekhead(0, 0))
    cluster_at = sh_len + len(tracks)
    blocks = u(0xE7, 0, 1) + cluster_extra
    for fill in range(cues_at):                          # a SimpleBlock that fills the gap
        cluster = el(matroska.CLUSTER, blocks + el(0xA3, b"\x81\x00\x00\x80" + b"\0" * fill))
        if cluster_at + len(cluster) == cues_at:
            break
    assert cluster_at + len(cluster) == cues_at
    cues = el(matroska.CUES, el(matroska.CUE_POINT, u(0xB3, 0, 1) + el(
        matroska.CUE_TRACK_POSITIONS, u(0xF7, 1, 1)
        + u(matroska.CUE_CLUSTER_POSITION, cluster_at, 1))))
    body = seekhead(sh_len, cues_at) + tracks + cluster + cues
    return header + el(matroska.SEGMENT, body)


def test_positions_that_grow_a_byte_settle(tmp_path):
    path = tmp_path / "h.mkv"
    path.write_bytes(hand_built(cues_at=250))
    check_structure(path)
    set_display_size(path, 640, 480)
    buf, kinds, seg = check_structure(path)              # every position right, CRC too
    cues_at = kinds[matroska.CUES][0][1] - seg[2]
    assert cues_at > 255                                 # moved past one byte's reach
    info = matroska.read_video_track(path)
    assert (info["display_width"], info["display_height"]) == (640, 480)


def test_an_existing_display_unit_is_replaced(tmp_path):
    path = tmp_path / "h.mkv"
    path.write_bytes(hand_built(cues_at=210, crc=False))
    set_display_size(path, 4, 3)
    buf = path.read_bytes()
    assert matroska.read_video_track(path)["display_unit"] is None
    set_display_size(path, 640, 480)
    check_structure(path)
    assert len(path.read_bytes()) == len(buf) + 2        # 4 -> 640: one byte each
    assert matroska.read_video_track(path)["display_width"] == 640


@pytest.mark.parametrize("name,make,message", [
    ("empty", lambda: b"", "no EBML header|past its end"),
    ("not ebml", lambda: b"RIFF" + bytes(60), "no EBML header|bad element"),
    ("truncated", lambda: hand_built()[:150], "truncated|past"),
    ("cut in the Tracks", lambda: hand_built()[:60], "truncated|past"),
    ("cut in the header", lambda: hand_built()[:7], "bad EBML header"),
    ("no segment", lambda: hand_built()[:12] + b"\xec\x80", "no Segment"),
    ("cluster position", lambda: hand_built(cluster_extra=matroska._encode_id(0xA7) + b"\x81\x05"),
     "Position"),
    ("unknown-size cluster", lambda: hand_built().replace(
        matroska._encode_id(matroska.CLUSTER) + b"\x40",
        matroska._encode_id(matroska.CLUSTER) + b"\x7f\xff", 1), "unknown size"),
])
def test_malformed_files_are_errors_and_stay_untouched(tmp_path, name, make, message):
    data = make()
    path = tmp_path / "bad.webm"
    path.write_bytes(data)
    with pytest.raises(MatroskaError, match=message):
        set_display_size(path, 640, 480)
    assert path.read_bytes() == data
    assert [p.name for p in tmp_path.iterdir()] == ["bad.webm"]


def test_no_video_track_and_bad_sizes(tmp_path):
    path = tmp_path / "a.webm"
    with av.open(str(path), "w", format="webm") as c:
        a = c.add_stream("libopus", rate=48000, layout="mono")
        s = av.AudioFrame.from_ndarray(np.zeros((1, 960), np.int16), format="s16",
                                       layout="mono")
        s.sample_rate, s.pts = 48000, 0
        for p in a.encode(s) + a.encode(None):
            c.mux(p)
    data = path.read_bytes()
    with pytest.raises(MatroskaError, match="no video track"):
        set_display_size(path, 640, 480)
    video = webm(tmp_path / "v.webm", audio=False)
    vdata = video.read_bytes()
    for w, h in [(0, 480), (640, -1), (640.0, 480), ("640", 480)]:
        with pytest.raises(MatroskaError, match="bad display size"):
            set_display_size(video, w, h)
    assert path.read_bytes() == data and video.read_bytes() == vdata
    with pytest.raises(FileNotFoundError):
        set_display_size(tmp_path / "missing.webm", 640, 480)
