"""Recordings (pypc_core/recording.py, ``--video-out``): 5 emulated seconds
of a known guest decode (PyAV) to seconds x the card's frame rate frames,
the first and last equal to the renderer's pixel for pixel (lossless MKV),
with the speaker's tone at the PIT divisor's frequency; the same bytes at
any --speed; every format decodes at native size with its pixel aspect (WebM's
as the track's display size); a
mode change goes on in a new segment; the recorder leaves the guest's run
untouched; bad paths are one-line errors that create nothing."""

import shutil
import subprocess
from fractions import Fraction

import numpy as np
import pytest

from test_launcher import no_rpc, pypc_command, pypc_env
from viewers_common import beep_boot, floppy, plugins_with

from pypc_core import matroska, video_frames
from pypc_core.machine import CPU_HZ, Machine, MachineConfig
from pypc_core.recording import AUDIO_RATE, Recorder, RecordingError, check_path

av = pytest.importorskip("av")

#: wait for a key, then mode 13h and the whole screen in colour 15, HLT
#: forever: xor ax,ax; int 16h; mov ax,13h; int 10h; mov ax,A000h; mov es,ax;
#: xor di,di; mov al,0Fh; mov cx,64000; rep stosb; sti; hlt; jmp $-3
MODE13_ON_KEY = bytes.fromhex("31C0 CD16 B81300 CD10 B800A0 8EC0 31FF B00F B900FA F3AA"
                              "FB F4 EBFD")


#: mode 13h, the screen in colour 15, then DAC entry 15 changed about once
#: a frame (only the palette changes): mov ax,13h; int 10h; mov ax,A000h;
#: mov es,ax; xor di,di; mov al,0Fh; mov cx,64000; rep stosb;
#: l: mov dx,3C8h; mov al,0Fh; out dx,al; inc dx; inc bl; mov al,bl;
#: and al,3Fh; out dx,al (x3); mov cx,5000; loop $; jmp l
DAC_CYCLE = bytes.fromhex("B81300 CD10 B800A0 8EC0 31FF B00F B900FA F3AA"
                          "BAC803 B00F EE 42 FEC3 88D8 243F EEEEEE B98813 E2FE EBE9")
#: print "pypc" with int 10h teletype, then HLT forever (a still text
#: screen with a blinking cursor): xor ax,ax; mov ds,ax; mov si,7C18h;
#: l: lodsb; or al,al; jz h; mov ah,0Eh; xor bx,bx; int 10h; jmp l;
#: h: sti; hlt; jmp h
STILL_TEXT = bytes.fromhex("31C0 8ED8 BE187C AC 08C0 7408 B40E 31DB CD10 EBF3 FB F4 EBFD") + b"pypc\0"
assert STILL_TEXT.index(b"pypc") == 0x18


def decode(path):
    """(video frames as RGB arrays, their pts in seconds, audio samples,
    the stream's sample aspect ratio) of a recording."""
    with av.open(str(path)) as c:
        vs = c.streams.video[0]
        sar = vs.sample_aspect_ratio
        frames, times = [], []
        for f in c.decode(video=0):
            frames.append(f.to_ndarray(format="rgb24"))
            times.append(float(f.time))
    audio = np.zeros(0)
    with av.open(str(path)) as c:
        if c.streams.audio:
            chunks = [f.to_ndarray().astype(np.float64).reshape(-1)
                      for f in c.decode(audio=0)]
            audio = np.concatenate(chunks) if chunks else audio
    return frames, times, audio, sar


def measured_frequency(samples, rate):
    loud = np.flatnonzero(np.abs(samples - np.median(samples)) > 1e-3 * np.abs(samples).max())
    part = samples[loud[0]:loud[-1] + 1]
    part = part - part.mean()
    spectrum = np.abs(np.fft.rfft(part * np.hanning(len(part))))
    k = int(np.argmax(spectrum[1:])) + 1
    a, b, c = spectrum[k - 1], spectrum[k], spectrum[k + 1]
    return (k + 0.5 * (a - c) / (a - 2 * b + c)) * rate / len(part)


def frame_of_last_capture(m, rec):
    """The renderer's frame for the emulated frame the recorder took last
    (the guests here sit in HLT by then: video memory no longer changes;
    the cursor's blink phase is that frame's)."""
    assert rec.last_cycle <= m.clock() < rec.next_cycle
    return m.video.frame(frame=m.video.frame_number(rec.last_cycle))


def guest_state(m):
    r = m.cpu.r
    return (m.clock(), r.ax, r.bx, r.cx, r.dx, r.sp, r.ip, r.cs, r.flags,
            bytes(m.memory.read(0, 0x10000)))


def test_five_emulated_seconds_of_a_beep(tmp_path):
    divisor = 1193
    img = floppy(tmp_path / "beep.img", beep_boot(divisor))
    out = tmp_path / "beep.mkv"
    with Machine(MachineConfig(plugins=plugins_with("cga"), floppy_a=img, cow=True)) as m:
        m.run_for(CPU_HZ)                             # the guest beeps by now
        rate = m.video.frame_rate_hz()
        first = video_frames.frame(m)
        rec = Recorder.start(m, str(out))
        assert rec in m.scheduler.timed
        m.run_for(5 * CPU_HZ)
        last = frame_of_last_capture(m, rec)
        summary = rec.stop()
        assert rec not in m.scheduler.timed
        with_recorder = guest_state(m)
    frames, times, audio, sar = decode(out)
    assert summary["files"] == [str(out)] and summary["frames"] == len(frames)
    assert abs(len(frames) - 5 * rate) <= 1
    assert (frames[0] == first).all() and (frames[-1] == last).all()
    assert frames[0].shape == (200, 640, 3)
    assert sar == Fraction(5, 12)
    assert times[1] == pytest.approx(1 / rate, abs=1e-3)      # the card's period
    assert times[-1] == pytest.approx((len(frames) - 1) / rate, abs=2e-3)
    assert abs(len(audio) - 5 * AUDIO_RATE) <= AUDIO_RATE // 50
    want = 1_193_182 / divisor
    got = measured_frequency(audio, AUDIO_RATE)
    assert abs(got - want) <= 0.01 * want, (got, want)
    # the same run without a recorder: the guest did exactly the same
    with Machine(MachineConfig(plugins=plugins_with("cga"), floppy_a=img, cow=True)) as m:
        m.run_for(CPU_HZ)
        m.run_until_cycle(with_recorder[0])
        assert guest_state(m) == with_recorder


def cli_record(tmp_path, name, *speed, seconds="1"):
    out = tmp_path / name
    img = floppy(tmp_path / "beep.img", beep_boot(2711))
    proc = subprocess.run(pypc_command() + no_rpc(["run", "--headless", *speed, "--floppy", img, "--cow",
                                       "--timeout", seconds, "--video-out", str(out)]),
                          env=pypc_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert f"-> {out}" in proc.stderr
    return out.read_bytes()


@pytest.mark.parametrize("ext", [".mkv", ".mp4"])
def test_the_same_file_bytes_at_any_speed(tmp_path, ext):
    turbo = cli_record(tmp_path, "turbo" + ext, "--turbo")
    paced = cli_record(tmp_path, "paced" + ext, "--speed", "3")
    assert turbo == paced
    frames, _, audio, _ = decode(tmp_path / ("turbo" + ext))
    assert abs(len(frames) - 59.92) <= 1 and len(audio) > AUDIO_RATE * 0.9


@pytest.mark.parametrize("ext,lossless,sound,sar", [
    (".mp4", False, True, Fraction(5, 12)),
    (".webm", False, True, Fraction(5, 12)),        # the track's DisplayWidth/Height
    (".gif", True, False, Fraction(13, 32)),        # GIF's nearest (N + 15) / 64
    (".apng", True, False, Fraction(5, 12))])
def test_every_format(tmp_path, ext, lossless, sound, sar):
    img = floppy(tmp_path / "beep.img", beep_boot(1193))
    out = tmp_path / ("out" + ext)
    with Machine(MachineConfig(plugins=plugins_with("cga"), floppy_a=img, cow=True)) as m:
        m.run_for(CPU_HZ)
        first = video_frames.frame(m)
        rec = Recorder.start(m, str(out))
        m.run_for(CPU_HZ // 2)
        last = frame_of_last_capture(m, rec)
        summary = rec.stop()
    assert summary["audio"] is sound
    frames, times, audio, got_sar = decode(out)
    stride = 2 if ext == ".gif" else 1             # GIF: every second frame
    assert abs(len(frames) - 0.5 * 59.92 / stride) <= 1
    assert times[-1] == pytest.approx((len(frames) - 1) * stride / 59.92, abs=0.011)
    assert all(f.shape == (200, 640, 3) for f in frames)
    if lossless:
        assert (frames[0] == first).all() and (frames[-1] == last).all()
    else:                                 # lossy: close, not equal
        assert np.abs(frames[-1].astype(int) - last).mean() < 8
    assert (len(audio) > 0) is sound
    assert got_sar == sar
    if ext == ".webm":                    # 640x200 pixels shown as 640x480 (4:3)
        assert len(frames) == summary["frames"]          # every frame still decodes
        assert matroska.read_video_track(out)["display_width"] == 640
        assert matroska.read_video_track(out)["display_height"] == 480
        probe = shutil.which("ffprobe")
        if probe:
            shown = subprocess.run([probe, "-v", "error", "-select_streams", "v:0",
                                    "-show_entries", "stream=sample_aspect_ratio,"
                                    "display_aspect_ratio", "-of", "csv=p=0", str(out)],
                                   capture_output=True, text=True, check=True).stdout
            assert shown.strip() == "5:12,4:3"


def test_a_mode_change_goes_on_in_a_new_segment(tmp_path):
    img = floppy(tmp_path / "m13.img", MODE13_ON_KEY)
    out = tmp_path / "modes.mkv"
    with Machine(MachineConfig(plugins=plugins_with("vga"), floppy_a=img, cow=True)) as m:
        m.run_for(CPU_HZ * 3 // 2)                    # at the int 16h, in 80x25 text
        assert m.video.frame().shape == (400, 720, 3)
        text_rate = m.video.frame_rate_hz()
        rec = Recorder.start(m, str(out))
        m.run_for(CPU_HZ // 2)
        m.type_text(" ")
        m.run_for(CPU_HZ // 2)
        summary = rec.stop()
        last = video_frames.frame(m)
    assert summary["files"] == [str(out), str(tmp_path / "modes.1.mkv")]
    assert (summary["width"], summary["height"]) == (320, 200)
    text, _, _, sar0 = decode(out)
    graphics, times, _, sar1 = decode(tmp_path / "modes.1.mkv")
    assert {f.shape for f in text} == {(400, 720, 3)} and sar0 == Fraction(20, 27)
    assert {f.shape for f in graphics} == {(200, 320, 3)} and sar1 == Fraction(5, 6)
    assert times[0] == 0                              # each segment starts at 0
    assert (graphics[-1] == last).all() and (last == 255).all()
    assert abs(len(text) + len(graphics) - text_rate) <= 2
    assert summary["frames"] == len(text) + len(graphics)


def test_a_restored_checkpoint_continues_the_video(tmp_path):
    img = floppy(tmp_path / "beep.img", beep_boot(1193))
    out = tmp_path / "restore.mkv"
    with Machine(MachineConfig(plugins=plugins_with("cga"), floppy_a=img, cow=True)) as m:
        m.run_for(CPU_HZ)
        cp = m.checkpoint()
        rec = Recorder.start(m, str(out))
        m.run_for(CPU_HZ // 2)
        m.restore(cp)                                  # back half a second
        m.run_for(CPU_HZ // 2)
        m.restore(cp)
        m.run_for(CPU_HZ // 4)
        summary = rec.stop()
    frames, times, audio, _ = decode(out)
    assert len(frames) == summary["frames"]
    assert abs(len(frames) - 1.25 * 59.92) <= 3
    assert all(b > a for a, b in zip(times, times[1:]))        # never backwards
    assert max(b - a for a, b in zip(times, times[1:])) < 2.5 / 59.92
    assert abs(len(audio) - 1.25 * AUDIO_RATE) <= AUDIO_RATE // 20
    assert summary["seconds"] == pytest.approx(len(frames) / 59.92, rel=1e-3)


def test_a_failing_write_stops_the_recording_not_the_guest(tmp_path):
    img = floppy(tmp_path / "beep.img", beep_boot(1193))
    with Machine(MachineConfig(plugins=plugins_with("cga"), floppy_a=img, cow=True)) as m:
        m.run_for(CPU_HZ)
        rec = Recorder.start(m, str(tmp_path / "full.mkv"))
        m.run_for(CPU_HZ // 10)
        segment = rec.segments[0]

        def no_space(rgb, pts):
            raise OSError(28, "No space left on device")
        segment.add_frame = no_space                   # (the disk fills up)
        m.run_for(CPU_HZ // 2)                         # the guest runs on
        assert m.clock() >= CPU_HZ + CPU_HZ // 10 + CPU_HZ // 2 - 2
        assert rec.next_event() is None
        notes = [r["message"] for r in m.diagnostics.records() if r["level"] == "error"]
        assert any("No space left" in n and "full.mkv" in n for n in notes)
        with pytest.raises(RecordingError, match="stopped early: .*No space left"):
            rec.stop()
        assert rec not in m.scheduler.timed
    frames, _, _, _ = decode(tmp_path / "full.mkv")     # what was written is readable
    assert 4 <= len(frames) <= 8


@pytest.mark.parametrize("card,code", [("cga", STILL_TEXT), ("cga", beep_boot(1193)),
                                       ("vga", STILL_TEXT), ("vga", DAC_CYCLE)])
def test_skipping_unchanged_frames_changes_no_byte(tmp_path, card, code):
    """The cards' frame_key(): a recording that renders only changed frames
    is the very file of one that renders every frame."""
    img = floppy(tmp_path / "g.img", code)
    files, rendered = [], []
    for reuse in (True, False):
        out = tmp_path / f"{reuse}.mkv"
        with Machine(MachineConfig(plugins=plugins_with(card), floppy_a=img, cow=True)) as m:
            m.run_for(CPU_HZ * 3 // 2)
            rec = Recorder.start(m, str(out), reuse_unchanged=reuse)
            m.run_for(CPU_HZ * 3 // 4)
            summary = rec.stop()
            rendered.append(rec.rendered)
            if code is STILL_TEXT:
                assert any("pypc" in row for row in m.screen_text())
        files.append(out.read_bytes())
    assert files[0] == files[1]
    assert rendered[1] == summary["frames"]
    if code is not DAC_CYCLE:
        assert rendered[0] <= summary["frames"] // 4      # a still screen: blinks only
    else:
        assert rendered[0] >= summary["frames"] // 2      # the palette changes


@pytest.mark.skipif(not __import__("os").path.exists("/dev/full"), reason="no /dev/full")
@pytest.mark.parametrize("ext", [".mp4", ".mkv"])
def test_a_full_disk_is_a_one_line_error_after_the_run(tmp_path, ext):
    """Writes to /dev/full fail with ENOSPC: in the middle of the run (MP4
    buffers little) or when the file is finished (MKV) -- either way the
    run ends, every file is closed, one line, exit 2, no crash."""
    target = tmp_path / ("full" + ext)
    target.symlink_to("/dev/full")
    proc = subprocess.run(pypc_command() + no_rpc(["run", "--headless", "--turbo",
                                                   "--timeout", "1", "--video-out",
                                                   str(target)]),
                          env=pypc_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pypc: error: --video-out: ")
    assert "No space left on device" in lines[0]


def test_bad_paths(tmp_path):
    for path, words in ((str(tmp_path / "a.avi"), "give a name ending in"),
                        (str(tmp_path), "is a directory"),
                        (str(tmp_path / "no" / "a.mkv"), "no such directory"),
                        ("", "needs a file name")):
        with pytest.raises(RecordingError, match=words):
            check_path(path)
    with Machine(MachineConfig(plugins=[p for p in plugins_with("cga") if p != "cga"])) as m:
        with pytest.raises(RecordingError, match="needs a video plugin"):
            Recorder.start(m, str(tmp_path / "x.mkv"))
        assert not m.scheduler.timed or all(not isinstance(d, Recorder)
                                            for d in m.scheduler.timed)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args,words", [
    (["--video-out", "{tmp}/a.avi"], "--video-out '{tmp}/a.avi': a recording is a"),
    (["--video-out", "{tmp}/none/a.mp4"], "no such directory"),
    (["--video-out", "{tmp}"], "is a directory"),
])
def test_bad_video_out_is_one_line_and_exit_2(tmp_path, args, words):
    args = [a.format(tmp=tmp_path) for a in args]
    proc = subprocess.run(pypc_command() + no_rpc(["run", "--headless", "--turbo", "--timeout", "1", *args]),
                          env=pypc_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pypc: error: ")
    assert words.format(tmp=tmp_path) in lines[0]
    assert list(tmp_path.iterdir()) == []
