"""``pypc run PROGRAM [ARGS...]`` and ``--drive``: the command-line side of
the built-in DOS.

:func:`prepare` checks everything before a machine exists (the folders, the
program, its header: :func:`pypc_core.dos.program.prepare_program`), so bad
input is one ``pypc: error:`` line with nothing opened or written;
:func:`run_headless` runs the program with its console on stdout and
returns its exit code.
"""

import argparse
import sys

from ..dos.program import prepare_program
from ..errors import PypcError

EXIT_TIMEOUT = 124


def drive_spec(text):
    """``C=DIR`` for ``--drive``."""
    letter, eq, folder = text.partition("=")
    if not eq or len(letter) != 1 or not letter.isalpha() or not folder:
        raise argparse.ArgumentTypeError(f"{text!r} is not LETTER=FOLDER (e.g. C=games)")
    return letter.upper(), folder


def add_arguments(parser):
    """``--drive`` and the PROGRAM [ARGS...] positionals of ``pypc run``."""
    g = parser.add_argument_group("built-in DOS (when PROGRAM or --drive is given)")
    g.add_argument("--drive", type=drive_spec, action="append", default=[],
                   metavar="C=DIR",
                   help="mount a host folder as a DOS drive, read-write (repeatable; "
                        "default: the program's folder as C:)")
    parser.add_argument("program", nargs="?", metavar="PROGRAM",
                        help="a .COM, .EXE or .BAT to run under the built-in DOS (a host path, "
                             "or a DOS path such as C:\\GAME.EXE on a --drive); without "
                             "it, --drive starts the COMMAND shell")
    parser.add_argument("program_args", nargs=argparse.REMAINDER, metavar="ARGS",
                        help="the program's arguments")
    return parser


def prepare(args):
    """``args.dos_config`` (a DosConfig, or None without PROGRAM and
    --drive); PypcError for anything wrong, before anything is opened."""
    drives_arg = list(getattr(args, "drive", None) or [])
    program = getattr(args, "program", None)
    args.dos_config = None
    if program is None and not drives_arg:
        return None
    for option in ("floppy", "floppy_b", "hdd", "bios", "bare"):
        if getattr(args, option, None):
            flag = "--" + option.replace("_", "-")
            raise PypcError(f"PROGRAM and --drive run the built-in DOS; {flag} boots "
                            f"a disk or another BIOS instead (use one or the other)")
    mounts = {}
    for letter, folder in drives_arg:
        if letter in mounts:
            raise PypcError(f"--drive {letter}= is given twice")
        mounts[letter] = folder
    args.dos_config = prepare_program(program, getattr(args, "program_args", None) or [],
                                      mounts)
    return args.dos_config


class ConsoleWriter:
    """The programs' console bytes (CP437) as text on a host stream: CR LF
    becomes a newline, other control bytes pass through."""

    def __init__(self, stream):
        self.stream = stream
        self.pending_cr = False

    def __call__(self, data):
        text = data.decode("cp437")
        if self.pending_cr:
            text = "\r" + text
            self.pending_cr = False
        if text.endswith("\r"):
            text, self.pending_cr = text[:-1], True
        text = text.replace("\r\n", "\n")
        if text:
            self.stream.write(text)
            self.stream.flush()

    def close(self):
        if self.pending_cr:
            self.stream.write("\r")
            self.pending_cr = False
        self.stream.flush()


def run_headless(machine, args):
    """Run the built-in DOS until its first program (or the shell) ends:
    console output on stdout, the program's exit code as the result.
    ``--until-text`` stops with 0 once the text is on the screen;
    ``--timeout`` (default 60 emulated seconds) stops with 124."""
    from .headless import DEFAULT_HEADLESS_TIMEOUT_S, headless_loop, write_screenshot
    from .signals import StopSignals, interrupted
    dos = machine.dos
    writer = ConsoleWriter(sys.stdout)
    dos.config.console = writer
    timeout = args.timeout if args.timeout else DEFAULT_HEADLESS_TIMEOUT_S
    try:
        with StopSignals() as stop:
            reason = headless_loop(machine, args, stop)
    finally:
        writer.close()
        dos.config.console = None
    if reason == "signal":
        return interrupted(stop)
    if args.screenshot:
        write_screenshot(machine, args.screenshot)
    if reason == "timeout":
        what = args.program or "the shell"
        sys.stderr.write(f"pypc: {what} did not exit within {timeout:g} emulated seconds\n")
        return EXIT_TIMEOUT
    return dos.exit_code if reason == "exit" else 0


def print_console(machine):
    """After the live view: the console output, so it stays in the terminal."""
    dos = machine.dos
    if dos is None or not dos.console_out:
        return
    writer = ConsoleWriter(sys.stdout)
    writer(bytes(dos.console_out))
    writer.close()
    if not dos.console_out.endswith(b"\n"):
        sys.stdout.write("\n")
        sys.stdout.flush()


__all__ = ["add_arguments", "prepare", "run_headless", "print_console", "ConsoleWriter"]
