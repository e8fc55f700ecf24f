"""Where the PC speaker's samples (:class:`pypc_core.speaker.Speaker`) go
in the live view and viewers: a WAV file (``--audio FILE.wav``) and live
playback on the host (:class:`LivePlayer`: the optional ``sounddevice``
package when it is installed and finds an output device, else ``pw-play``,
``paplay`` or ``aplay`` if present; nothing, quietly, when none works).
Live playback drops samples rather than ever blocking the machine."""

import os
import shutil
import subprocess
import threading
import wave

from ..speaker import AMPLITUDE, RATE, Speaker, channel_levels  # noqa: F401  (also importable from here)


class WavSink:
    """16-bit mono PCM into a WAV file (header completed on close)."""

    def __init__(self, path, rate=RATE):
        self.path = path
        self._wav = wave.open(path, "wb")
        self._wav.setnchannels(1)
        self._wav.setsampwidth(2)
        self._wav.setframerate(rate)

    def write(self, pcm):
        self._wav.writeframesraw(pcm.tobytes())

    def close(self):
        self._wav.close()


class LivePlayer:
    """Live playback on the host, if any way to play works here; else
    ``available`` is False and writes do nothing.  Never blocks the caller:
    what the player cannot take at once is dropped."""

    PLAYERS = (
        ("pw-play", ["--rate", str(RATE), "--channels", "1", "--format", "s16", "-"]),
        ("paplay", ["--raw", f"--rate={RATE}", "--channels=1", "--format=s16le"]),
        ("aplay", ["-q", "-t", "raw", "-f", "S16_LE", "-r", str(RATE), "-c", "1"]),
    )

    def __init__(self, rate=RATE):
        self.available = False
        self._stream = None
        self._proc = None
        self._open_sounddevice(rate) or self._open_player()

    def _open_sounddevice(self, rate):
        try:
            import sounddevice
            sounddevice.query_devices(kind="output")
            stream = sounddevice.RawOutputStream(samplerate=rate, channels=1, dtype="int16",
                                                 latency="low")
            stream.start()
        except Exception:          # not installed, no PortAudio, no device
            return False
        self._stream = stream
        self.available = True
        return True

    def _open_player(self):
        for name, args in self.PLAYERS:
            exe = shutil.which(name)
            if exe is None:
                continue
            try:
                proc = subprocess.Popen([exe] + args, stdin=subprocess.PIPE,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            except OSError:
                continue
            os.set_blocking(proc.stdin.fileno(), False)
            self._proc = proc
            self.available = True
            return True
        return False

    def write(self, pcm):
        if not self.available:
            return
        data = pcm.tobytes()
        try:
            if self._stream is not None:
                free = self._stream.write_available
                if free:
                    self._stream.write(data[:2 * free])
            elif self._proc is not None:
                if self._proc.poll() is not None:       # the player gave up (no device)
                    self.available = False
                    return
                os.write(self._proc.stdin.fileno(), data)
        except (BlockingIOError, BrokenPipeError, OSError):
            pass
        except Exception:
            self.available = False

    def close(self):
        if self._stream is not None:
            try:
                self._stream.stop()
                self._stream.close()
            except Exception:
                pass
        if self._proc is not None:
            try:
                self._proc.stdin.close()
            except OSError:
                pass
            threading.Thread(target=self._reap, daemon=True).start()

    def _reap(self):
        try:
            self._proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self._proc.kill()
