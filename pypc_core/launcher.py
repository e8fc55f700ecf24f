"""``pypc run``: build a machine from the command line and run it, either
live in the terminal (rich) or headless for scripts and agents."""

import os
import select
import signal
import sys
import threading
import time

import numpy as np

from .errors import PypcError
from .machine import CPU_HZ, Machine, MachineConfig
from . import scancodes
from .terminal_keys import ESCAPE_HELP, KeyInput

FRAME_S = 1 / 60
DEFAULT_HEADLESS_TIMEOUT_S = 60.0
# a served headless run whose client paused the machine and left (run_headless_served)
LEFT_PAUSED_GRACE_S = 5.0
TYPE_AFTER_IDLE_FRAMES = 6          # built-in BIOS: frames in its keyboard wait
TYPE_AFTER_STILL_FRAMES = 60         # own keyboard driver or another BIOS: frames of an unchanged screen


def config_from_args(args):
    if args.turbo:
        speed = 0.0
    elif args.speed:
        speed = float(args.speed)
    else:
        speed = 1.0
    return MachineConfig(
        plugins=[p for p in args.plugins.split(",") if p],
        floppy_a=args.floppy, floppy_b=args.floppy_b, hdd=args.hdd,
        hdd_geometry=args.hdd_geometry, readonly=args.readonly,
        host_dir=getattr(args, "host_dir", None),
        cow=args.cow or bool(args.cow_dir), cow_dir=args.cow_dir,
        bios=args.bios, option_roms=list(args.option_rom or []), speed=speed,
        cpu=getattr(args, "cpu", "interpret"),
        plugin_manager=getattr(args, "plugin_manager", None), options=args,
        dos=getattr(args, "dos_config", None), debug_port=getattr(args, "debug_port", None),
        symbols=list(getattr(args, "symbols", None) or []))


def unescape(text):
    """``--type 'dir\\r'``: backslash escapes \\r \\n \\t \\e \\\\."""
    out = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            mapped = {"r": "\r", "n": "\r", "t": "\t", "e": "\x1b", "\\": "\\", "b": "\b"}.get(nxt)
            if mapped is not None:
                out.append(mapped)
                i += 2
                continue
        out.append(ch)
        i += 1
    return "".join(out)


def check_args(args):
    """Bad input that needs no machine: a clear PypcError before anything
    (disk, lock, ROM) is opened."""
    if args.type is not None:
        try:
            scancodes.text_to_scancodes(unescape(args.type))
        except ValueError as exc:
            raise PypcError(f"--type: {exc}") from None
    if args.hdd_geometry is not None and not args.hdd:
        raise PypcError("--hdd-geometry needs a hard-disk image (--hdd IMAGE)")
    if args.screenshot:
        folder = os.path.dirname(os.path.abspath(args.screenshot))
        if os.path.isdir(args.screenshot):
            raise PypcError(f"--screenshot {args.screenshot!r} is a directory, not a PNG file")
        if not args.screenshot.lower().endswith(".png"):
            raise PypcError(f"--screenshot {args.screenshot!r}: a screenshot is a PNG file; "
                            f"give a name ending in .png")
        if not os.path.isdir(folder):
            raise PypcError(f"--screenshot {args.screenshot!r}: no such directory {folder!r}")
    if not args.headless and not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise PypcError("the live display needs a terminal (stdin and stdout); "
                        "use --headless for scripts")


def check_machine(machine, args):
    """Bad input that shows only once the machine is built (before it runs)."""
    if machine.video is None:
        for option, value in (("--screenshot", args.screenshot),
                              ("--until-text", args.until_text)):
            if value:
                raise PypcError(f"{option} needs a video plugin (e.g. --plugins cga)")
        if getattr(machine, "dos", None) is None:
            if not args.headless:
                raise PypcError(f"--plugins {args.plugins!r} selects no video plugin, so "
                                f"there is no display to show: use --headless, or add "
                                f"one (e.g. --plugins cga)")
            sys.stderr.write(f"pypc: note: --plugins {args.plugins!r} selects no video "
                             f"plugin: no display, no screen to print\n")


def echo_guest_lines(machine, stream):
    """Print each line of the guest debug console (``--debug-port``) on
    ``stream`` as it arrives: ``pypc: guest: TEXT``."""
    def echo(record):
        if record["source"] == "guest":
            stream.write(f"pypc: guest: {record['message']}\n")
            stream.flush()
    machine.diagnostics.subscribe(echo)


def run(args):
    check_args(args)
    from .rpc import launch as rpc_launch_args
    rpc_launch_args.check_serve(args)   # --serve
    from . import frontends
    frontends.check_args(args)          # --telnet-port, --vnc-port, --listen, --audio
    from .frontends import gdbstub
    gdbstub.check_args(args)            # --gdb
    from .snapshot import cli as snapshot_cli
    snapshot_cli.check(args)            # --load/--save-snapshot, --record, --replay
    try:
        from .dos import launch as dos_launch
        dos_launch.prepare(args)        # PROGRAM / --drive: the built-in DOS
        compile_core(sys.stderr)
        machine = Machine(config_from_args(args))
    except BaseException:
        snapshot_cli.discard_written(args)  # a --load-snapshot's disks, never installed
        raise
    # a card's port handler that raises ends a run with one line naming the
    # card and the guest's CS:IP (exit 2); an agent server (--serve) goes on
    # serving, its client sees the fault stop
    machine.raise_device_faults = not getattr(args, "serve", False)
    viewers = rpc = gdb = None
    try:
        check_machine(machine, args)
        for record in machine.diagnostics.records():     # what the machine noted when built
            if record["source"] == "machine" and record["level"] in ("warning", "error"):
                sys.stderr.write(f"pypc: note: {record['message']}\n")
        if args.headless and getattr(args, "debug_port", None) is not None:
            echo_guest_lines(machine, sys.stderr)
        viewers = frontends.start(machine, args)    # served after every run (run_hooks)
        from .rpc import launch as rpc_launch
        if getattr(args, "serve", False):
            return rpc_launch.serve(machine, args, viewers=viewers)  # it owns the loop
        rpc = rpc_launch.start(machine, args)       # JSON-RPC (unless --no-rpc)
        from .frontends import gdbstub
        gdb = gdbstub.start(machine, args, rpc.controller if rpc is not None else None)
        snapshot_cli.before_run(machine, args)
        if getattr(args, "replay", None):
            return snapshot_cli.run_replay(machine, args)
        if args.headless:
            if machine.dos is not None:
                return dos_launch.run_headless(machine, args)
            if rpc is not None:
                return run_headless_served(machine, args, rpc, viewers)
            return run_headless(machine, args)
        result = run_live(machine, args, rpc)
        if machine.dos is not None:
            dos_launch.print_console(machine)
            if machine.dos.exited and result == 0:
                return machine.dos.exit_code
        return result
    finally:
        try:
            if sys.exc_info()[0] is None:
                snapshot_cli.after_run(machine, args)     # --record, --save-snapshot
        finally:
            if viewers is not None:
                viewers.close()
            if gdb is not None:
                gdb.close()
            if rpc is not None:
                rpc.close()
            machine.close()
            snapshot_cli.discard_written(args)  # (only when the bundle was not installed)
            failed = getattr(viewers, "recording_error", None)
            if failed and sys.exc_info()[0] is None:
                raise PypcError(failed)         # --video-out failed while running


COMPILE_NOTICE = "compiling the 8088 core (first run only)\u2026"


def core_cache_is_cold():
    """True when the numba core has neither been compiled in this process nor
    cached on disk (its cache index has no entry), so its first use compiles
    it (about 25 s).  False under NUMBA_DISABLE_JIT (nothing to compile)."""
    from .cpu import core
    for dispatcher in (core.run, core.interrupt):
        cache = getattr(dispatcher, "_cache", None)
        if cache is None or dispatcher.signatures:
            continue
        try:
            if not cache._cache_file._load_index():
                return True
        except Exception:
            return False            # an unreadable index: let numba decide quietly
    return False


def compile_core(stream):
    """Compile (or load) the core before the machine is built; when it has
    to be compiled and ``stream`` is a terminal, say so with a spinner.  A
    pipe or a file gets no word."""
    if not core_cache_is_cold():
        return False
    isatty = getattr(stream, "isatty", None)
    if isatty is None or not isatty():
        return False                # compiled silently on first use
    from rich.console import Console
    from .cpu import Cpu
    with Console(file=stream).status(COMPILE_NOTICE):
        cpu = Cpu()                 # the machine's arrays have the same types
        cpu.step()                  # compiles core.run ...
        cpu.interrupt(0)            # ... and core.interrupt
    return True


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


def type_chunks(text):
    """``--type`` text split after each Enter: every line is typed when the
    guest waits for input again, so type-ahead never overflows the BIOS's
    15-key buffer while a command runs."""
    chunks, start = [], 0
    for i, ch in enumerate(text):
        if ch == "\r":
            chunks.append(text[start:i + 1])
            start = i + 1
    if start < len(text):
        chunks.append(text[start:])
    return chunks


class Typist:
    """Feeds ``--type`` chunks as the guest becomes ready for each."""

    def __init__(self, machine, text, after=None):
        self.machine = machine
        self.chunks = type_chunks(text) if text else []
        self.readiness = TypingReadiness(machine)
        self.after = after          # screen text that must appear first

    def frame(self):
        """Call once per emulated frame."""
        if self.after is not None:
            if not self.machine.screen_contains(self.after):
                return
            self.after = None
        ready = self.readiness.ready()
        if (self.chunks and ready
                and self.machine.keyboard.typing_pending() == 0):
            self.machine.type_text(self.chunks.pop(0))
            self.readiness.frames = 0


class TypingReadiness:
    """When ``--type`` may type (its next line).  Called once per emulated
    frame; depends on emulated state only.

    * The built-in BIOS handles the keyboard (INT 09h points into its ROM):
      once the guest has sat in the BIOS keyboard wait for a few frames
      (DOS kernels poll the keyboard while booting, and a key typed then
      would be eaten before the prompt).
    * Anything else -- a guest with its own keyboard driver (INT 09h points
      elsewhere, as in ELKS) or another BIOS, whose waits cannot be seen --
      once the text screen has not changed for a second of emulated time and
      the keyboard holds no byte the guest has not taken.

    Either way the keyboard's typist then hands over one byte at a time,
    each only after the guest has read and acknowledged the previous one."""

    def __init__(self, machine):
        self.machine = machine
        self.frames = 0
        self.last_screen = None

    def ready(self):
        m = self.machine
        if m.bios is not None and not guest_drives_keyboard(m):
            self.last_screen = None
            self.frames = self.frames + 1 if m.waiting_for_key() else 0
            return self.frames >= TYPE_AFTER_IDLE_FRAMES
        screen = m.screen_text()
        kb = m.keyboard
        still = screen == self.last_screen and not kb.pending() and not kb.full
        self.frames = self.frames + 1 if still else 0
        self.last_screen = screen
        return self.frames >= TYPE_AFTER_STILL_FRAMES


def guest_drives_keyboard(machine):
    """True when the INT 09h (IRQ 1) vector no longer points into the BIOS
    ROM (F0000h-FFFFFh): the guest reads the keyboard with its own driver."""
    offset = machine.memory.read_word(9 * 4)
    segment = machine.memory.read_word(9 * 4 + 2)
    return ((segment << 4) + offset) & 0xFFFFF < 0xF0000


def headless_loop(machine, args, stop=None):
    """The loop of every headless run (``pypc run --headless``, a built-in
    DOS program, a ``pypc batch`` job): type ``--type`` as the guest gets
    ready, run a frame at a time until the built-in DOS's program exits
    (``"exit"``), ``--until-text`` is on the screen (``"until_text"``),
    ``--timeout`` emulated seconds pass (default 60, ``"timeout"``) or
    ``stop`` (a :class:`StopSignals`) has seen a signal (``"signal"``).
    Prints nothing; returns the reason."""
    timeout = args.timeout if args.timeout else DEFAULT_HEADLESS_TIMEOUT_S
    end = machine.clock() + int(timeout * CPU_HZ)
    typist = Typist(machine, unescape(args.type) if args.type is not None else "",
                    getattr(args, "type_after", None))
    frame = int(FRAME_S * CPU_HZ)
    dos = machine.dos
    until_text = getattr(args, "until_text", None)
    while True:
        if stop is not None and stop.signum is not None:
            stop.stopped()
            return "signal"
        typist.frame()
        if dos is not None and dos.exited:
            return "exit"
        if until_text and machine.screen_contains(until_text):
            # text typed later may not be on screen yet; keep going only
            # until what was asked for is there
            return "until_text"
        if machine.clock() >= end:
            return "timeout"
        machine.run_until_cycle(min(end, machine.clock() + frame))


def run_headless(machine, args):
    """Run until ``--until-text`` appears or ``--timeout`` emulated seconds
    (default 60) pass, then print the text screen.  Exit 0, or 1 when
    ``--until-text`` was asked for and never appeared; a signal ends the
    run at once with 128 + its number (130 for Ctrl-C)."""
    timeout = args.timeout if args.timeout else DEFAULT_HEADLESS_TIMEOUT_S
    with StopSignals() as stop:
        reason = headless_loop(machine, args, stop)
    if reason == "signal":
        return interrupted(stop)
    if args.screenshot:
        write_screenshot(machine, args.screenshot)
    if machine.video is not None:
        print("\n".join(row.rstrip() for row in machine.screen_text()).rstrip("\n"))
    if args.until_text and reason != "until_text":
        sys.stderr.write(f"pypc: {args.until_text!r} did not appear within "
                         f"{timeout:g} emulated seconds\n")
        return 1
    return 0


def run_headless_served(machine, args, rpc, viewers=None):
    """``--headless`` with a JSON-RPC server (``--rpc-port``/``--rpc-socket``)
    and no program: the controller owns the loop, as under ``--serve``, so
    every method works on this run -- ``session.start`` included, which puts
    a program's machine in place (the viewers follow it).

    The run ends when ``--until-text`` appears, after ``--timeout`` emulated
    seconds of running, or -- without ``--timeout`` -- once the default 60
    emulated seconds have run and no client is connected: an agent that
    launched the run keeps it while it talks to it.  A machine that a client
    paused spends no emulated time; once it has sat paused with no client
    connected for :data:`LEFT_PAUSED_GRACE_S` host seconds (time for a
    client to reconnect), the run ends.  A signal ends it at once (128 + its
    number).
    Prints the text screen of the machine served last; exits as
    :func:`run_headless` does."""
    from .rpc.controller import PAUSED_POLL_S
    controller, server = rpc.controller, rpc.server
    machine.route_runs(None)            # the controller's loop, not the launcher's
    if viewers is not None:
        controller.adopt_hooks.append(viewers.follow)
    timeout = args.timeout
    budget = int((timeout if timeout else DEFAULT_HEADLESS_TIMEOUT_S) * CPU_HZ)
    typist = Typist(machine, unescape(args.type) if args.type is not None else "",
                    getattr(args, "type_after", None))
    frame = int(FRAME_S * CPU_HZ)
    ran = 0
    found = False
    idle_since = None
    try:
        with StopSignals() as stop:
            while True:
                if stop.signum is not None:
                    stop.stopped()
                    return interrupted(stop)
                m = controller.machine
                if m is machine:
                    typist.frame()      # (--type is for the machine this run built)
                if args.until_text and m.screen_contains(args.until_text):
                    found = True
                    break
                if ran >= budget and (timeout or not server.connections):
                    break
                if controller.running or server.connections:
                    idle_since = None
                elif idle_since is None:
                    idle_since = time.monotonic()
                elif time.monotonic() - idle_since >= LEFT_PAUSED_GRACE_S:
                    break               # paused, and its client has gone
                before = m.clock()
                controller.run_until_cycle(before + min(frame, budget - ran) if ran < budget
                                           else before + frame, wall_timeout=PAUSED_POLL_S)
                if controller.machine is m:
                    ran += m.clock() - before
        last = controller.machine
        if args.screenshot:
            write_screenshot(last, args.screenshot)
        if last.video is not None:
            print("\n".join(row.rstrip() for row in last.screen_text()).rstrip("\n"))
    finally:
        session = controller.session
        if session is not None:
            session.dos_session.close()     # the last session's machine and drives
    if args.until_text and not found:
        sys.stderr.write(f"pypc: {args.until_text!r} did not appear within "
                         f"{budget / CPU_HZ:g} emulated seconds\n")
        return 1
    return 0


def write_screenshot(machine, path):
    if machine.video is None:
        raise PypcError("--screenshot needs a video plugin (e.g. --plugins cga)")
    machine.video.write_png(path)


# ---------------------------------------------------------------------------
# live terminal display
# ---------------------------------------------------------------------------

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
        from .video_frames import frame
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

    With a JSON-RPC server (``rpc``, the launcher's) and no DOS program, the
    controller owns the loop, as in a served headless run: every method
    works, ``session.start`` included, and the view, the keys and
    ``--until-text`` follow the machine it puts in place; ``--timeout``
    counts the emulated seconds run."""
    if not sys.stdin.isatty():
        raise PypcError("the live display needs a terminal; use --headless for scripts")
    from .rpc.controller import PAUSED_POLL_S
    controller = rpc.controller if rpc is not None and machine.dos is None else None
    if controller is not None:
        machine.route_runs(None)        # the controller's loop, not the launcher's
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
