"""The program a built-in DOS run starts: the host folders mounted as drives
and the program found on them, read and its header checked, before any
machine exists (``pypc run PROGRAM``, ``--drive``, ``session.start``)."""

import os
import re

from ..errors import PypcError
from .common import DosConfig, normalise_name
from .errors import DosError
from .exe import parse as parse_program
from .hostfs import HostDrive

PROGRAM_EXTENSIONS = (".COM", ".EXE", ".BAT")


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
