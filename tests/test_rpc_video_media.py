"""video.screenshot and video.record.start/stop over the real server and a
real socket: the PNG is the card's frame (decoded with Pillow), a recording
of one emulated second has the card's frame count, refusals change
nothing, and a session.start or the server's end finishes a running
recording."""

import base64
import hashlib

import pytest

from rpc_client import RpcFixture

from pypc_core.video_frames import decode_png

av = pytest.importorskip("av")


@pytest.fixture
def fx():
    f = RpcFixture(plugins=["cga"])
    yield f
    f.close()


def run_emulated(c, ns):
    op = c.call("execution.run_until", {"max_emulated_ns": ns})["operation_id"]
    c.call("execution.wait", {"operation_id": op, "timeout_ms": 60000})


def count_frames(path):
    with av.open(str(path)) as container:
        return [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]


def test_screenshot_is_the_frame(fx):
    c = fx.client()
    running = c.call("video.screenshot")                  # allowed while running
    assert running["adapter"] == "CGA" and running["width"] == 640
    c.call("execution.pause")
    shot = c.call("video.screenshot")
    png = base64.b64decode(shot["png_base64"])
    assert shot["byte_count"] == len(png) and shot["sha256"] == hashlib.sha256(png).hexdigest()
    assert (decode_png(png) == fx.machine.video.frame()).all()
    assert shot["pixel_aspect"] == {"numerator": 5, "denominator": 12}
    assert shot["frame_rate_hz"] == pytest.approx(59.92, abs=0.01)
    doubled = c.call("video.screenshot", {"double": True})
    assert (doubled["width"], doubled["height"]) == (640, 400)
    assert doubled["pixel_aspect"] == {"numerator": 5, "denominator": 6}
    assert (decode_png(base64.b64decode(doubled["png_base64"]))
            == fx.machine.video.frame_doubled()).all()
    err = c.error("video.screenshot", {"double": 1})
    assert err["data"]["reason"] == "INVALID_PARAMS"


def test_record_one_emulated_second(fx, tmp_path):
    c = fx.client()
    c.call("execution.pause")
    out = tmp_path / "rpc.mkv"
    started = c.call("video.record.start", {"path": str(out)})
    assert started["format"] == "mkv" and started["audio"] is True
    assert (started["width"], started["height"]) == (640, 200)
    assert started["clock"] == fx.machine.clock()
    first = fx.machine.video.frame()
    run_emulated(c, 1_000_000_000)
    stopped = c.call("video.record.stop")
    assert stopped["recording_id"] == started["recording_id"]
    assert stopped["files"] == [str(out)]
    frames = count_frames(out)
    assert len(frames) == stopped["frames"] and abs(len(frames) - 59.92) <= 1
    assert (frames[0] == first).all()
    assert fx.machine.scheduler.timed == [d for d in fx.machine.scheduler.timed
                                          if type(d).__name__ != "Recorder"]


def test_refusals_change_nothing(fx, tmp_path):
    c = fx.client()
    assert c.error("video.record.stop")["data"]["reason"] == "NOT_FOUND"
    bad = c.error("video.record.start", {"path": str(tmp_path / "a.avi")})
    assert bad["data"]["reason"] == "INVALID_PARAMS" and "a recording is a" in bad["message"]
    assert c.error("video.record.start", {"path": str(tmp_path / "none" / "a.mp4")}
                   )["data"]["reason"] == "INVALID_PARAMS"
    keep = tmp_path / "keep.mp4"
    keep.write_bytes(b"the caller's file")
    err = c.error("video.record.start", {"path": str(keep)})
    assert err["data"]["reason"] == "PRECONDITION_FAILED" and "overwrite" in err["message"]
    assert keep.read_bytes() == b"the caller's file"
    assert c.error("video.record.start", {"path": str(keep), "fps": 30}
                   )["data"]["reason"] == "INVALID_PARAMS"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.mp4"]
    first = c.call("video.record.start", {"path": str(keep), "overwrite": True})
    again = c.error("video.record.start", {"path": str(tmp_path / "b.mkv")})
    assert again["data"]["reason"] == "PRECONDITION_FAILED"
    assert c.call("video.record.stop")["recording_id"] == first["recording_id"]
    assert keep.read_bytes() != b"the caller's file" and len(count_frames(keep)) >= 1


def test_no_video_card():
    f = RpcFixture(plugins=[])
    try:
        c = f.client()
        for method, params in (("video.screenshot", {}),
                               ("video.record.start", {"path": "/tmp/never.mkv"})):
            assert c.error(method, params)["data"]["reason"] == "DEVICE_ABSENT"
    finally:
        f.close()


def test_the_servers_end_finishes_a_running_recording(tmp_path):
    f = RpcFixture(plugins=["cga"])
    out = tmp_path / "open.mp4"
    try:
        c = f.client()
        c.call("execution.pause")
        c.call("video.record.start", {"path": str(out)})
        run_emulated(c, 200_000_000)
    finally:
        f.close()                                 # the machine's end: pypc_machine_shutdown
    frames = count_frames(out)                    # an MP4 is readable only once finished
    assert abs(len(frames) - 0.2 * 59.92) <= 1


def test_session_start_finishes_the_recording(tmp_path):
    from session_common import runtime_folder, start_session
    folder = runtime_folder(tmp_path, {"agent_fixture": "AGENTFIX.COM"})
    f = RpcFixture(plugins=["cga"])
    try:
        c = f.client()
        c.call("execution.pause")
        out = tmp_path / "before.mkv"
        started = c.call("video.record.start", {"path": str(out)})
        run_emulated(c, 100_000_000)
        first_machine = f.controller.machine
        start_session(c, folder, "AGENTFIX.COM", break_at="entry")
        assert f.controller.machine is not first_machine       # a new machine ...
        assert all(type(d).__name__ != "Recorder" for d in first_machine.scheduler.timed)
        frames = count_frames(out)                             # ... the file is finished
        again = c.call("video.record.stop")                    # and reported once
        assert again["recording_id"] == started["recording_id"]
        assert again["frames"] == len(frames) and abs(len(frames) - 0.1 * 59.92) <= 1
        assert c.error("video.record.stop")["data"]["reason"] == "NOT_FOUND"
        # the new machine can be recorded
        second = c.call("video.record.start", {"path": str(tmp_path / "after.gif")})
        assert second["recording_id"] != started["recording_id"]
        assert c.call("video.record.stop")["frames"] >= 1
    finally:
        f.close_with_session()
