"""SIGINT, SIGTERM and SIGHUP during a run: noted by the handler, seen by
the run loop after every slice, exit status 128 + the signal number."""

import os
import select
import signal
import sys
import threading


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
STOP_GRACE_S = 1.0


class StopSignals:
    """SIGINT, SIGTERM and SIGHUP during a run (``with StopSignals() as
    stop``): the handler only notes the signal (``stop.signum``); the run
    loop checks it after every slice, stops, and pypc exits with
    128 + the signal number (130 for SIGINT).

    The core returns to Python after a bounded slice, so the loop notices
    at once.  Should it ever not (a core fault), a watchdog thread, woken
    through ``signal.set_wakeup_fd`` even while the main thread is inside
    the compiled core (which releases the GIL), calls ``on_force`` (the live
    view restores the terminal there) and ends the process after
    ``STOP_GRACE_S`` seconds.  ``stop.stopped()`` tells the watchdog that
    the loop has regained control."""

    def __init__(self, on_force=None, grace_s=STOP_GRACE_S):
        self.signum = None
        self.on_force = on_force
        self.grace_s = grace_s
        self._done = threading.Event()
        self._closing = False

    def __enter__(self):
        self._active = threading.current_thread() is threading.main_thread()
        if not self._active:
            return self                 # signals reach the main thread only
        self._old = {sig: signal.signal(sig, self._note) for sig in STOP_SIGNALS}
        self._rfd, self._wfd = os.pipe()
        os.set_blocking(self._rfd, False)
        os.set_blocking(self._wfd, False)
        self._old_wakeup = signal.set_wakeup_fd(self._wfd, warn_on_full_buffer=False)
        self._thread = threading.Thread(target=self._watch, name="pypc-stop-watchdog",
                                        daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._done.set()
        self._closing = True
        if not self._active:
            return
        signal.set_wakeup_fd(self._old_wakeup)
        try:
            os.write(self._wfd, b"\0")          # wake the watchdog so it ends
        except OSError:
            pass
        self._thread.join(timeout=5)
        for sig, handler in self._old.items():
            signal.signal(sig, handler)
        os.close(self._rfd)
        os.close(self._wfd)

    def _note(self, signum, frame):
        if self.signum is None:
            self.signum = signum

    def stopped(self):
        """The run loop has seen the signal and stopped running the guest."""
        self._done.set()

    @property
    def exit_code(self):
        return 128 + int(self.signum)

    def _watch(self):
        wanted = {int(s) for s in STOP_SIGNALS}
        while not self._closing:
            select.select([self._rfd], [], [])
            try:
                data = os.read(self._rfd, 64)
            except BlockingIOError:
                continue
            if self._closing:
                return
            got = [b for b in data if b in wanted]
            if not got:
                continue                        # another signal (SIGWINCH ...)
            if self._done.wait(self.grace_s):
                return
            if self.on_force is not None:
                try:
                    self.on_force()
                except Exception:
                    pass
            try:
                os.write(2, b"pypc: interrupted; the run did not stop within "
                            b"1 s, so the process ends here\n")
            except OSError:
                pass
            os._exit(128 + got[0])


def interrupted(stop):
    """The message and exit status of a run ended by a signal."""
    name = signal.Signals(stop.signum).name
    sys.stderr.write("pypc: interrupted\n" if stop.signum == signal.SIGINT
                     else f"pypc: stopped by {name}\n")
    return stop.exit_code
