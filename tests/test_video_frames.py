"""The one image path (pypc_core/video_frames.py): PNG through Pillow is
lossless at every size and colour count, bad pictures are refused, and the
screenshot paths (``--screenshot``/``pypc screenshot`` via
``cli.headless.write_screenshot``, ``Device.write_png``) give the card's frame
pixel for pixel, for the CGA and the VGA."""

from fractions import Fraction

import numpy as np
import pytest

from viewers_common import plugins_with

from pypc_core import video_frames
from pypc_core.errors import PypcError
from pypc_core.cli.headless import write_screenshot
from pypc_core.machine import CPU_HZ, Machine, MachineConfig


@pytest.mark.parametrize("shape", [(1, 1), (1, 7), (3, 1), (200, 640), (400, 720),
                                   (480, 640), (201, 321)])
def test_png_round_trip_is_exact(shape):
    rng = np.random.default_rng(sum(shape))
    rgb = rng.integers(0, 256, size=shape + (3,), dtype=np.uint8)
    data = video_frames.encode_png(rgb)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    back = video_frames.decode_png(data)
    assert back.shape == rgb.shape and (back == rgb).all()


def test_non_contiguous_and_other_dtypes_are_taken_as_uint8():
    rgb = np.arange(4 * 6 * 3, dtype=np.int64).reshape(4, 6, 3)[:, ::2]
    back = video_frames.decode_png(video_frames.encode_png(rgb))
    assert (back == rgb.astype(np.uint8)).all()


@pytest.mark.parametrize("bad", [np.zeros((0, 640, 3), np.uint8), np.zeros((4, 4), np.uint8),
                                 np.zeros((4, 4, 4), np.uint8)])
def test_bad_pictures_are_refused(bad):
    with pytest.raises(ValueError):
        video_frames.encode_png(bad)


def test_aspect_for_a_4_3_screen():
    assert video_frames.aspect_for(640, 200) == Fraction(5, 12)
    assert video_frames.aspect_for(720, 400) == Fraction(20, 27)
    assert video_frames.aspect_for(320, 200) == Fraction(5, 6)
    assert video_frames.aspect_for(640, 480) == 1
    assert video_frames.aspect_for(0, 0) == 1


@pytest.mark.parametrize("card,shape,aspect,rate", [
    ("cga", (200, 640, 3), Fraction(5, 12), 59.92),
    ("vga", (400, 720, 3), Fraction(20, 27), 70.09)])
def test_screenshots_are_the_frame(tmp_path, card, shape, aspect, rate):
    with Machine(MachineConfig(plugins=plugins_with(card))) as m:
        m.run_for(CPU_HZ)                          # the BIOS's no-disk screen
        rgb = video_frames.frame(m)
        assert rgb.shape == shape and rgb.any()
        assert video_frames.pixel_aspect(m) == aspect
        assert video_frames.frame_rate_hz(m) == pytest.approx(rate, abs=0.01)
        assert video_frames.frame_cycles(m) == pytest.approx(CPU_HZ / rate, rel=2e-4)
        shot = tmp_path / "shot.png"
        write_screenshot(m, str(shot))             # --screenshot, pypc screenshot
        assert (video_frames.decode_png(shot.read_bytes()) == rgb).all()
        size = m.video.write_png(str(tmp_path / "d.png"), double=True)
        doubled = video_frames.decode_png((tmp_path / "d.png").read_bytes())
        assert size == (tmp_path / "d.png").stat().st_size
        assert (doubled == m.video.frame_doubled()).all()
        assert (video_frames.decode_png(video_frames.png_bytes(m)) == rgb).all()


def test_no_video_card_is_an_error(tmp_path):
    with Machine(MachineConfig(plugins=[p for p in plugins_with("cga") if p != "cga"])) as m:
        with pytest.raises(PypcError, match="no video adapter"):
            video_frames.frame(m)
        with pytest.raises(PypcError, match="needs a video plugin"):
            write_screenshot(m, str(tmp_path / "x.png"))
    assert list(tmp_path.iterdir()) == []
