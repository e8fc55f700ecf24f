"""A rich progress bar for saving and loading large bundles -- only on a
terminal, never on a pipe or a file."""

import sys

#: bundles with fewer disk bytes than this finish too fast to need a bar
MIN_BYTES = 8 << 20


class TerminalProgress:
    """``start(total, what)`` / ``advance(n)`` / ``finish()`` drawn with
    ``rich.progress`` on ``stream`` (default stderr)."""

    def __init__(self, stream=None):
        from rich.console import Console
        self.console = Console(file=stream or sys.stderr)
        self._progress = None
        self._task = None

    def start(self, total, what):
        from rich.progress import (BarColumn, DownloadColumn, Progress, TextColumn,
                                   TimeRemainingColumn, TransferSpeedColumn)
        self.finish()
        self._progress = Progress(TextColumn("{task.description}"), BarColumn(),
                                  DownloadColumn(), TransferSpeedColumn(),
                                  TimeRemainingColumn(), console=self.console,
                                  transient=True)
        self._progress.start()
        self._task = self._progress.add_task(what, total=max(1, int(total)))

    def advance(self, n):
        if self._progress is not None:
            self._progress.advance(self._task, n)

    def finish(self):
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


def terminal_progress(nbytes, stream=None):
    """A :class:`TerminalProgress` when ``stream`` (stderr) is a terminal
    and ``nbytes`` is large enough to be worth showing; otherwise None."""
    stream = stream or sys.stderr
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    if not tty or nbytes < MIN_BYTES:
        return None
    return TerminalProgress(stream)
