"""``pypc run PROGRAM [ARGS...]`` and ``--drive``: the command-line side of
the built-in DOS.

:func:`prepare` checks everything before a machine exists (the folders, the
program, its header), so bad input is one ``pypc: error:`` line with
nothing opened or written; :func:`run_headless` runs the program with its
console on stdout and returns its exit code.
"""

import argparse
import os
import re
import sys

from ..errors import PypcError
from .errors import DosError, LoadError
from .exe import parse as parse_program
from .hostfs import HostDrive
from .common import DosConfig, normalise_name

EXIT_TIMEOUT = 124
PROGRAM_EXTENSIONS = (".COM", ".EXE", ".BAT")


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


def prepare_program(program, arguments, mounts):
    """A checked DosConfig: ``mounts`` ({letter: host folder}) must be
    folders; ``program`` (None: the COMMAND shell) must be a loadable
    program inside them (see :func:`resolve_program`)."""
    drives = {}
    for letter, folder in sorted(mounts.items()):
        letter = str(letter).upper()
        if len(letter) != 1 or not "A" <= letter <= "Z":
            raise PypcError(f"drive {letter!r}: a drive is one letter A-Z")
        if not os.path.isdir(folder):
            raise PypcError(f"--drive {letter}={folder}: no such folder")
        drives[letter] = HostDrive(folder)
    dos_path = None
    if program is not None:
        dos_path, drives = resolve_program(program, drives)
    if not drives:
        raise PypcError("the built-in DOS needs a program or a drive (--drive C=DIR)")
    return DosConfig(drives={k: v.root for k, v in drives.items()},
                     program=dos_path, args=[str(a) for a in arguments])


def resolve_program(program, drives):
    """(DOS path, drives) of PROGRAM: a DOS path on a mounted drive, or a
    host file inside a mounted folder (its own folder as C: when no drive
    is given).  The file is read and its header checked."""
    m = re.match(r"^([A-Za-z]):(.*)$", program)
    if m and m.group(1).upper() in drives:
        letter = m.group(1).upper()
        parts = dos_parts(m.group(2), program)
        hd = drives[letter]
        try:
            folder, entry, name = hd.resolve(parts)
        except DosError:
            raise PypcError(f"{program}: no such program on drive {letter}: "
                            f"({hd.root})") from None
        if entry.is_dir:
            raise PypcError(f"{program}: is a folder, not a program")
        host = hd.host_path(folder, entry, name)
    else:
        host = program
        if not os.path.lexists(host):
            raise PypcError(f"{program}: no such file")
        if os.path.isdir(host):
            raise PypcError(f"{program}: is a folder, not a program")
        if not drives:
            drives = {"C": HostDrive(os.path.dirname(os.path.abspath(host)))}
        for letter, hd in sorted(drives.items()):
            parts = hd.dos_parts(os.path.abspath(host))
            if parts:
                break
        else:
            where = ", ".join(f"{k}: = {v.root}" for k, v in sorted(drives.items()))
            raise PypcError(f"{program}: outside the mounted folders ({where}), or a "
                            f"symlink (the DOS follows none); DOS cannot reach it")
    if not os.path.isfile(host):
        raise PypcError(f"{program}: not a regular file")
    if not parts[-1].upper().endswith(PROGRAM_EXTENSIONS):
        raise PypcError(f"{program}: not a DOS program (a .COM, .EXE or .BAT file)")
    if not parts[-1].upper().endswith(".BAT"):
        try:                                # through the drive, as the DOS will read it
            folder, entry, _name = hd.resolve(parts)
            data = hd.read_file(folder, entry, 0xA0001)
        except DosError as exc:
            raise PypcError(f"{program}: cannot read it from drive {letter}: "
                            f"(DOS error {exc.code:02X}h)") from None
        parse_program(data, program)
    return f"{letter}:\\" + "\\".join(parts), drives


def dos_parts(text, program):
    """Components of a DOS path from the root of its drive; a path that
    climbs above the root is refused."""
    parts = []
    for piece in text.replace("/", "\\").split("\\"):
        if piece in ("", "."):
            continue
        if piece == "..":
            if not parts:
                raise PypcError(f"{program}: the path leaves the mounted folder")
            parts.pop()
            continue
        name = normalise_name(piece)
        if name is None:
            raise PypcError(f"{program}: {piece!r} is not a DOS file name")
        parts.append(name)
    if not parts:
        raise PypcError(f"{program}: names a drive, not a program")
    return parts


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
    from ..launcher import (
        DEFAULT_HEADLESS_TIMEOUT_S, StopSignals, headless_loop, interrupted, write_screenshot,
    )
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


__all__ = ["add_arguments", "prepare", "prepare_program", "run_headless", "print_console",
           "LoadError"]
