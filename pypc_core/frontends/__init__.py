"""Viewers beside the RPC port, and the PC speaker.

* :mod:`.telnet` -- the text screen for a telnet client (``--telnet-port``)
* :mod:`.vnc`    -- the picture for a VNC viewer, RFB 3.8 (``--vnc-port``)
* :mod:`.web`    -- the browser view: the picture, keys and debugger panes
  (``--web [PORT]``, off unless asked for, in every kind of run)
* :mod:`.audio`  -- the speaker to a WAV file (``--audio``) and the host
* ``--video-out FILE`` -- a recording of the display and the speaker
  (:class:`pypc_core.recording.Recorder`, in emulated time)
* :mod:`.display` -- the snapshots the machine thread publishes for them
* :mod:`.gdbstub` -- the GDB remote protocol (``--gdb``)

:class:`Frontends` holds the running viewers and speaker sinks of one
machine; it is served on the machine thread after every run
(``machine.run_hooks``) and closed when the run ends.  An agent server whose
``session.start`` replaces the machine moves them to the new one
(:meth:`Frontends.follow`).  Which of them a ``pypc run`` starts, and the
checks of their options, are the command line's
(:mod:`pypc_core.cli.viewers`).
"""

import sys

from ..errors import PypcError

DEFAULT_LISTEN = "127.0.0.1"


class Frontends:
    """The running viewers and speaker sinks of one machine."""

    def __init__(self, machine, telnet_port=None, vnc_port=None, listen=DEFAULT_LISTEN,
                 keyboard=False, audio_path=None, live_sound=False, vnc_password=None,
                 web_port=None, video_out=None, stream=None):
        from .display import Display
        self.machine = machine
        self.display = Display(machine, keyboard=keyboard)
        self.telnet = None
        self.vnc = None
        self.web = None
        self.speaker = None
        self.recorder = None
        #: the one-line error of a --video-out recording that failed while
        #: running (``pypc run`` reports it after the run has been closed)
        self.recording_error = None
        self.stream = stream or sys.stderr
        self._hooked = False
        try:
            if video_out is not None:
                from ..recording import Recorder
                self.recorder = Recorder.start(machine, video_out)
            if vnc_port is not None:
                from .vnc import VncServer
                self.vnc = VncServer(self.display, listen, vnc_port,
                                     password=vnc_password).start()
            if telnet_port is not None:
                from .telnet import TelnetServer
                self.telnet = TelnetServer(self.display, listen, telnet_port,
                                           vnc_port=self.vnc.port if self.vnc else None).start()
            if web_port is not None:
                from .web import WebServer
                self.web = WebServer(self.display, listen, web_port).start()
            sinks = []
            if audio_path:
                from .audio import WavSink
                sinks.append(WavSink(audio_path))
            if live_sound:
                from .audio import LivePlayer
                player = LivePlayer()
                if player.available:
                    sinks.append(player)
            if sinks:
                from ..speaker import Speaker
                self.speaker = Speaker(machine, sinks)
            if self.telnet or self.vnc or self.web:
                machine.run_hooks.append(self.display.service)
                self._hooked = True
        except BaseException:
            self.close()
            raise

    def service(self):
        """Machine thread: publish for waiting viewers, deliver their keys,
        render the speaker.  (Also done after every run by the hooks.)"""
        if self._hooked:
            self.display.service()
        if self.speaker is not None:
            self.speaker.render()

    def follow(self, machine):
        """Show and sound ``machine`` from now on instead of the current one
        (an agent server's ``session.start`` replaced it).  Connected
        viewers stay connected and get a full picture of the new machine."""
        old = self.machine
        if machine is old:
            return
        if self._hooked:
            if self.display.service in old.run_hooks:
                old.run_hooks.remove(self.display.service)
            machine.run_hooks.append(self.display.service)
        self.machine = machine
        self.display.follow(machine)
        if self.speaker is not None:
            self.speaker.follow(machine)
        if self.recorder is not None:           # --video-out records the first machine
            self._end_recording()

    def _end_recording(self):
        rec, self.recorder = self.recorder, None
        try:
            summary = rec.stop()
        except PypcError as exc:            # it failed while running (a full disk)
            self.recording_error = f"--video-out: {exc}"
            return
        files = ", ".join(summary["files"])
        self.stream.write(f"pypc: video: {summary['frames']} frames, "
                          f"{summary['seconds']:.2f} emulated s -> {files}\n")
        self.stream.flush()

    def close(self):
        try:
            if self.recorder is not None:
                self._end_recording()
        finally:
            self._close_rest()

    def _close_rest(self):
        if self._hooked:
            try:
                self.machine.run_hooks.remove(self.display.service)
            except ValueError:
                pass
            self._hooked = False
        self.display.close()
        for server in (self.telnet, self.vnc, self.web):
            if server is not None:
                server.close()
        if self.speaker is not None:
            self.speaker.close()
            self.speaker = None
