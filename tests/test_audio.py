"""The PC speaker (pypc_core/frontends/audio.py): a guest beep of a known
PIT divisor gives a WAV whose measured frequency is 1,193,182 / divisor Hz
within 1 %; silence without a beep; the same run gives the same samples
(time is emulated cycles); the vectorised counter output agrees with the
PIT model's own; bad --audio paths are one-line errors.
"""

import shutil
import subprocess
import wave

import numpy as np
import pytest

from test_launcher import pypc_command, pypc_env
from viewers_common import ECHO_BOOT, beep_boot, floppy, plugins_with, viewer_args

from pypc_core.cli import viewers as frontends
from pypc_core.chipset.pit import PIT_HZ, PitChannel
from pypc_core.frontends.audio import RATE, channel_levels
from pypc_core.machine import CPU_HZ, Machine, MachineConfig


def read_wav(path):
    with wave.open(str(path), "rb") as w:
        assert (w.getnchannels(), w.getsampwidth(), w.getframerate()) == (1, 2, RATE)
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float64)


def measured_frequency(samples):
    """The strongest frequency of the sounding part (FFT peak, refined by
    a parabola through the three bins around it)."""
    loud = np.flatnonzero(np.abs(samples - np.median(samples)) > 0)
    part = samples[loud[0]:loud[-1] + 1]
    part = part - part.mean()
    spectrum = np.abs(np.fft.rfft(part * np.hanning(len(part))))
    k = int(np.argmax(spectrum[1:])) + 1
    a, b, c = spectrum[k - 1], spectrum[k], spectrum[k + 1]
    shift = 0.5 * (a - c) / (a - 2 * b + c)
    return (k + shift) * RATE / len(part)


def record(tmp_path, code, seconds, name="out.wav"):
    """Boot ``code`` with --audio semantics and run ``seconds`` emulated."""
    wav = tmp_path / name
    m = Machine(MachineConfig(plugins=plugins_with("cga"),
                              floppy_a=floppy(tmp_path / "beep.img", code)))
    try:
        fe = frontends.start(m, viewer_args(audio=str(wav)))
        try:
            m.run_for(int(seconds * CPU_HZ))
        finally:
            fe.close()
    finally:
        m.close()
    return wav


@pytest.mark.parametrize("divisor", [2711, 1193, 298])
def test_a_beep_has_the_frequency_of_its_divisor(tmp_path, divisor):
    wav = record(tmp_path, beep_boot(divisor), 1.5)
    samples = read_wav(wav)
    assert abs(len(samples) - 1.5 * RATE) <= 1
    want = 1_193_182 / divisor
    got = measured_frequency(samples)
    assert abs(got - want) <= 0.01 * want, (got, want)


def test_no_beep_is_silence(tmp_path):
    samples = read_wav(record(tmp_path, ECHO_BOOT, 1.0))
    assert len(samples) == RATE
    assert not samples.any()


def test_the_same_run_gives_the_same_samples(tmp_path):
    a = record(tmp_path, beep_boot(1193), 0.5, "a.wav").read_bytes()
    b = record(tmp_path, beep_boot(1193), 0.5, "b.wav").read_bytes()
    assert a == b


def test_the_command_line_writes_the_wav(tmp_path):
    wav = tmp_path / "beep.wav"
    proc = subprocess.run(pypc_command() + ["run", "--headless", "--turbo", "--no-rpc", "--no-viewers", "--timeout", "2",
                                            "--floppy", floppy(tmp_path / "b.img", beep_boot(1193)),
                                            "--audio", str(wav)],
                          env=pypc_env(), capture_output=True, text=True, timeout=180,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    samples = read_wav(wav)
    assert abs(len(samples) - 2 * RATE) <= RATE // 10       # the boot's cycles included
    assert abs(measured_frequency(samples) - 1_193_182 / 1193) <= 10


@pytest.mark.parametrize("args, words", [
    (["--audio", "{tmp}"], ["is a directory"]),
    (["--audio", "{tmp}/no/such/x.wav"], ["no such directory"]),
])
def test_bad_audio_paths(tmp_path, args, words):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    proc = subprocess.run(pypc_command() + ["run", "--headless", "--no-rpc", "--no-viewers", "--timeout", "1"]
                          + args,
                          env=pypc_env(), capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pypc: error:")
    assert all(w in lines[0] for w in words)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("mode", [0, 1, 2, 3, 4, 5])
@pytest.mark.parametrize("count", [1, 2, 3, 7, 100, 0])
def test_vectorised_levels_agree_with_the_pit_model(mode, count):
    """channel_levels over many edges = PitChannel.output edge by edge, from
    the state after the load of a count, after each gate change and after a
    count written while counting (a pending load)."""
    ch = PitChannel(2, gate=True)
    steps = [
        (12, lambda: (ch.control(10, 0x80 | 0x30 | (mode << 1)), ch.write(11, count & 0xFF),
                      ch.write(12, count >> 8))),
        (300, lambda: ch.set_gate(300, False)),
        (340, lambda: ch.set_gate(340, True)),
        (501, lambda: (ch.write(500, 5), ch.write(501, 0))),
    ]
    for edge, step in steps:
        step()
        scalar = PitChannel(2)
        scalar.set_state(ch.get_state())
        vector = PitChannel(2)
        vector.set_state(ch.get_state())
        edges = np.arange(edge, edge + 1500)
        want = np.array([scalar.output(int(k)) for k in edges])
        assert np.array_equal(channel_levels(vector, edges), want), (mode, count, edge)


def test_pit_rate():
    assert abs(PIT_HZ - 1_193_182) < 1


def test_live_playback_through_a_host_player(tmp_path, monkeypatch):
    """With a player program on PATH (here a stand-in ``aplay`` that writes
    what it is given to a file) the speaker plays the same samples live as
    it writes to the WAV; with none, live playback is quietly absent."""
    from pypc_core.frontends import audio
    monkeypatch.setattr(audio.LivePlayer, "_open_sounddevice", lambda self, rate: False)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    heard = tmp_path / "heard.raw"
    player = bin_dir / "aplay"
    player.write_text(f"#!/bin/sh\nexec {shutil.which('cat')} > '{heard}'\n")
    player.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    live = audio.LivePlayer()
    assert live.available
    wav = tmp_path / "beep.wav"
    m = Machine(MachineConfig(plugins=plugins_with("cga"),
                              floppy_a=floppy(tmp_path / "beep.img", beep_boot(1193))))
    try:
        m.run_for(CPU_HZ)                            # booted: the beep is on
        speaker = audio.Speaker(m, [audio.WavSink(str(wav)), live])
        m.run_for(int(0.3 * CPU_HZ))               # 26 kB of samples: less than a pipe holds
        speaker.close()
    finally:
        m.close()
    live._proc.wait(timeout=30)
    samples = read_wav(wav)
    assert samples.any()
    assert heard.read_bytes() == samples.astype("<i2").tobytes()

    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    assert not audio.LivePlayer().available
