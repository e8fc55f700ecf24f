"""The live view: the guest screen in this terminal (rich), every key to the
guest, Ctrl-] commands, a status line."""

import os
import select
import signal
import sys
import threading
import time

import numpy as np

from ..errors import PypcError
from ..machine import CPU_HZ
from ..terminal_keys import ESCAPE_HELP, KeyInput
from .headless import FRAME_S, write_screenshot
from .signals import StopSignals, interrupted
from .typist import Typist, unescape


_CGA_RICH = ["#000000", "#0000aa", "#00aa00", "#00aaaa", "#aa0000", "#aa00aa", "#aa5500",
             "#aaaaaa", "#555555", "#5555ff", "#55ff55", "#55ffff", "#ff5555", "#ff55ff",
             "#ffff55", "#ffffff"]

def render_rich(machine, width=80, height=25):
    """A rich Text of the screen: text modes cell by cell in the CGA
    attribute colours; graphics modes as half-block pixels (two pixel rows
    per character), sampled to fit ``width`` x ``height`` characters."""
    from rich.text import Text
    video = machine.video
    text = Text()
    if video is None:
        text.append("(no video plugin)")
        return text
    if video.is_graphics():
        from ..video_frames import frame
        return render_graphics(frame(video), width, height)
    cells = video.text_page()["cells"]
    for r, row in enumerate(cells):
        run_style, run = None, []
        for cell in row:
            style = f"{_CGA_RICH[cell['foreground']]} on {_CGA_RICH[cell['background']]}"
            if style != run_style and run:
                text.append("".join(run), style=run_style)
                run = []
            run_style = style
            ch = cell["char"]
            run.append(ch if ch >= " " else " ")
        if run:
            text.append("".join(run), style=run_style)
        if r != len(cells) - 1:
            text.append("\n")
    return text


def render_graphics(rgb, width, height):
    """Half-block picture of an RGB frame (``uint8[H, W, 3]``): each
    character is one sampled pixel on top (foreground of U+2580) and one below
    (background).  Adjacent characters of one colour pair share a span."""
    from rich.text import Text
    h, w = rgb.shape[:2]
    cols = max(1, min(width, w))
    rows = max(1, min(height, h // 2))
    ys = (np.arange(rows * 2) * h) // (rows * 2)
    xs = (np.arange(cols) * w) // cols
    sample = rgb[ys][:, xs]
    text = Text()
    for r in range(rows):
        top, bottom = sample[2 * r], sample[2 * r + 1]
        run_style, run_len = None, 0
        for c in range(cols):
            t, b = top[c], bottom[c]
            style = f"#{t[0]:02x}{t[1]:02x}{t[2]:02x} on #{b[0]:02x}{b[1]:02x}{b[2]:02x}"
            if style != run_style and run_len:
                text.append("\u2580" * run_len, style=run_style)
                run_len = 0
            run_style = style
            run_len += 1
        text.append("\u2580" * run_len, style=run_style)
        if r != rows - 1:
            text.append("\n")
    return text


# terminal control sequences of the live view
ENTER_SCREEN = "\x1b[?1049h\x1b[?25l\x1b[?7l\x1b[2J"   # alternate screen, no cursor, no wrap
LEAVE_SCREEN = "\x1b[0m\x1b[?7h\x1b[?25h\x1b[?1049l"   # and back
STATUS_STYLE = "\x1b[0;7m"                             # reverse video


def ansi_lines(text, width, color_system="truecolor"):
    """A rich Text as one string of ANSI-styled characters per line, each cut
    at ``width`` columns (never wrapped).  Each line ends with the erase of
    the rest of its row, except a line that fills the row: there the cursor
    sits on the last character, which an erase would remove."""
    from rich.segment import Segment
    import io
    from rich.console import Console
    console = Console(file=io.StringIO(), force_terminal=True, width=max(1, width),
                      color_system=color_system)
    options = console.options.update(width=max(1, width), no_wrap=True, overflow="crop")
    system = console._color_system
    lines = []
    for line in console.render_lines(text, options, pad=False):
        drawn = "".join(seg.style.render(seg.text, color_system=system)
                        if seg.style else seg.text for seg in line)
        erase = "\x1b[K" if Segment.get_line_length(line) < width else ""
        lines.append(drawn + "\x1b[0m" + erase)
    return lines


class TerminalView:
    """The live view: the guest screen on the terminal's alternate screen,
    clipped (text) or scaled (graphics) to the terminal and never wrapped,
    a status line on the last row, a full redraw after every resize
    (SIGWINCH); the keyboard in raw mode (no ISIG: Ctrl-C, Ctrl-Z, Ctrl-\\
    are keys for the guest)."""

    def __init__(self, machine, fd_in, fd_out, color_system=None):
        self.machine = machine
        self.fd_in = fd_in
        self.fd_out = fd_out
        self.color_system = color_system or _terminal_colors()
        self.resized = True
        self.last = None
        self.saved = None
        self._old_winch = None
        self.closed = False

    def open(self):
        import termios
        import tty
        self.saved = termios.tcgetattr(self.fd_in)
        tty.setraw(self.fd_in)
        if threading.current_thread() is threading.main_thread():
            self._old_winch = signal.signal(signal.SIGWINCH, self._on_resize)
        self._write(ENTER_SCREEN)

    def close(self):
        """Leave the alternate screen and restore the terminal (also called
        from the stop watchdog: idempotent)."""
        if self.closed:
            return
        self.closed = True
        import termios
        try:
            self._write(LEAVE_SCREEN)
        finally:
            if self.saved is not None:
                termios.tcsetattr(self.fd_in, termios.TCSADRAIN, self.saved)
            if (self._old_winch is not None
                    and threading.current_thread() is threading.main_thread()):
                signal.signal(signal.SIGWINCH, self._old_winch)
                self._old_winch = None

    def _on_resize(self, signum, frame):
        self.resized = True

    def _write(self, text):
        data = text.encode("utf-8", "replace")
        while data:
            n = os.write(self.fd_out, data)
            data = data[n:]

    def size(self):
        try:
            cols, rows = os.get_terminal_size(self.fd_out)
        except OSError:
            cols, rows = 80, 25
        return max(1, cols), max(1, rows)

    def status(self, width):
        m = self.machine
        text = f" pypc  {m.emulated_seconds:7.1f} s   {ESCAPE_HELP} "
        return STATUS_STYLE + text[:width].ljust(width) + "\x1b[0m"

    def draw(self):
        """Draw the screen; everything after a resize, else only when
        something changed."""
        cols, rows = self.size()
        full = self.resized
        self.resized = False
        screen_rows = rows - 1
        out = []
        if full:
            out.append("\x1b[0m\x1b[2J")
            self.last = None
        if screen_rows > 0:
            lines = ansi_lines(render_rich(self.machine, cols, screen_rows), cols,
                               self.color_system)[:screen_rows]
            lines += ["\x1b[0m\x1b[K"] * (screen_rows - len(lines))
            if lines != self.last:
                for r, line in enumerate(lines):
                    out.append(f"\x1b[{r + 1};1H{line}")
                self.last = lines
        out.append(f"\x1b[{rows};1H{self.status(cols)}")
        self._write("".join(out))


def _terminal_colors():
    from rich.console import Console
    return Console(force_terminal=True).color_system or "standard"


def run_live(machine, args, rpc=None):
    """The guest on this terminal until ``Ctrl-] q`` (exit 0), ``--until-text``
    or ``--timeout``; a signal (``kill -INT``) ends it with 128 + its number.

    With a JSON-RPC server (``rpc``, the run's) and no DOS program, the
    controller owns the loop, as in a served headless run: every method
    works, ``session.start`` included, and the view, the keys and
    ``--until-text`` follow the machine it puts in place; ``--timeout``
    counts the emulated seconds run."""
    if not sys.stdin.isatty():
        raise PypcError("the live display needs a terminal; use --headless for scripts")
    from ..rpc.controller import PAUSED_POLL_S
    controller = rpc.controller if rpc is not None and machine.dos is None else None
    if controller is not None:
        machine.route_runs(None)        # the controller's loop, not this one's
    fd_in = sys.stdin.fileno()
    sys.stdout.flush()
    fd_out = sys.stdout.fileno()
    typist = Typist(machine, unescape(args.type) if args.type is not None else "",
                    getattr(args, "type_after", None))
    frame = int(FRAME_S * CPU_HZ)
    keys = KeyInput()
    view = TerminalView(machine, fd_in, fd_out)
    ran = 0
    with StopSignals(on_force=view.close) as stop:
        view.open()
        try:
            last = 0.0
            while True:
                if stop.signum is not None:
                    stop.stopped()
                    break
                m = machine if controller is None else controller.machine
                if view.machine is not m:
                    view.machine = m            # session.start put a program's machine in place
                    view.resized = True
                quit_now = False
                while select.select([fd_in], [], [], 0)[0]:
                    data = os.read(fd_in, 256)
                    if not data:
                        quit_now = True         # the terminal went away
                        break
                    codes, quit_now = keys.feed(data.decode("latin-1"))
                    if codes:
                        m.press_keys(codes)
                    if quit_now:
                        break
                if quit_now:
                    break
                if m is machine:
                    typist.frame()
                before = m.clock()
                if controller is None:
                    m.run_for(frame)
                else:
                    controller.run_until_cycle(before + frame, wall_timeout=PAUSED_POLL_S)
                if controller is None or controller.machine is m:
                    ran += m.clock() - before
                if machine.dos is not None and machine.dos.exited:
                    break                       # the DOS program ended
                now = time.perf_counter()
                if view.resized or now - last > 1 / 15:
                    view.draw()
                    last = now
                if args.until_text and m.screen_contains(args.until_text):
                    break
                if args.timeout and ran >= args.timeout * CPU_HZ:
                    break
        finally:
            view.close()
            if controller is not None and controller.session is not None:
                machine = controller.machine    # (the screenshot below is of it)
                last_session = controller.session
            else:
                last_session = None
    try:
        if stop.signum is not None:
            return interrupted(stop)
        if args.screenshot:
            write_screenshot(machine, args.screenshot)
        return 0
    finally:
        if last_session is not None:
            last_session.dos_session.close()    # the last session's machine and drives
