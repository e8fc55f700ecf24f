"""The built-in DOS's layout in guest memory, its numbers and the small
helpers its parts share (names, dates, command tails)."""

import logging

import attrs

from .hostfs import fcb_form, is_valid_83

log = logging.getLogger("pypc.dos")

ROOT_PSP = 0x0060
FIRST_MCB = 0x0070
OWNER_FREE = 0
OWNER_DOS = 0x0008
DOS_VERSION = (3, 30)
START_DATE = (1990, 1, 1)         # the DOS date at boot (emulated, never the host's)
TICKS_PER_DAY = 0x1800B0
JFT_SIZE = 20
MAX_SFT = 40
ENV_PARAGRAPHS = 32               # the shell's master environment: 512 bytes
LASTDRIVE = 5                     # drives A: to E: exist for AH=0Eh
INDOS_OFFSET = 0x41               # the InDOS flag (AH=34h) at ROOT_PSP:0041h, always 0
WAIT = "wait"
JUMPED = "jumped"

TERM_NORMAL, TERM_CTRL_C, TERM_CRITICAL, TERM_TSR = 0, 1, 2, 3


@attrs.define
class DosConfig:
    """What the built-in DOS runs.  ``drives``: {letter: host folder};
    ``program``: a DOS path (``C:\\GAME.EXE``) or None for the COMMAND shell;
    ``args``: the program's arguments (joined with spaces into its command
    tail); ``break_at_entry``: stop (an execution breakpoint) on the first
    instruction of the first program; ``console``: called with the bytes the
    programs write to the console."""
    drives: dict = attrs.Factory(dict)
    program: str = None
    args: list = attrs.Factory(list)
    break_at_entry: bool = False
    console: object = None
    exit_after_batch: bool = True


SFT_KINDS = ("file", "CON", "NUL", "AUX", "PRN")


class SftEntry:
    """An open file or device (the system file table is Python-side).  A
    file is known by its drive and DOS path (``parts``); ``path`` is its host
    path, for reports only."""
    __slots__ = ("kind", "fd", "path", "mode", "refs", "pos", "name", "drive", "parts")

    def __init__(self, kind, fd=None, path=None, mode=0, name="", drive=None, parts=None):
        self.kind = kind          # "file" | "CON" | "NUL" | "AUX" | "PRN"
        self.fd = fd
        self.path = path
        self.mode = mode          # 0 read, 1 write, 2 read/write
        self.refs = 1
        self.pos = 0
        self.name = name
        self.drive = drive
        self.parts = list(parts) if parts is not None else None

    def as_dict(self):
        """The saved form: drive and DOS path, never a host path (a restored
        state opens the file again inside the mounts of the machine it is
        restored into)."""
        return {"kind": self.kind, "parts": self.parts, "mode": self.mode, "refs": self.refs,
                "pos": self.pos, "name": self.name, "drive": self.drive}


def dos_datetime(ts):
    """(time word, date word) of a host timestamp (local time)."""
    import time as _time
    t = _time.localtime(ts)
    year = min(max(t.tm_year, 1980), 2107)
    date = ((year - 1980) << 9) | (t.tm_mon << 5) | t.tm_mday
    tw = (t.tm_hour << 11) | (t.tm_min << 5) | (t.tm_sec // 2)
    return tw, date


def host_timestamp(time_word, date_word):
    import time as _time
    year = 1980 + (date_word >> 9)
    month = max(1, (date_word >> 5) & 15)
    day = max(1, date_word & 31)
    hour, minute, sec = time_word >> 11, (time_word >> 5) & 63, (time_word & 31) * 2
    return _time.mktime((year, month, day, hour, minute, sec, 0, 0, -1))


_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")
def _dos_parts(value):
    """``value`` as a list of DOS 8.3 names (a saved DOS path), or None."""
    if not isinstance(value, (list, tuple)) or len(value) > 32:
        return None
    if not all(isinstance(p, str) and is_valid_83(p) for p in value):
        return None
    return list(value)


def normalise_name(piece, wildcards=False):
    """The upper-case 8.3 form of a path component (long parts truncated as
    DOS does), or None if it has characters DOS refuses."""
    piece = piece.upper()
    base, dot, ext = piece.partition(".")
    if "." in ext:
        return None
    base, ext = base[:8], ext[:3]
    allowed = "?*" if wildcards else ""
    from .hostfs import VALID_CHARS
    if not base and not (wildcards and ext):
        return None
    if any(c not in VALID_CHARS and c not in allowed for c in base + ext):
        return None
    return base + ("." + ext if ext else "")


def command_tail(args):
    """The PSP command tail of an argument list: `` ARG1 ARG2`` (an
    argument with blanks in double quotes, as typed at a DOS prompt)."""
    if not args:
        return b""
    words = [f'"{a}"' if (not a or " " in a or "\t" in a) else a for a in args]
    return (" " + " ".join(words)).encode("latin-1", "replace")[:126]


def fcbs_for_tail(tail):
    """The two unopened FCBs DOS fills from the first two arguments."""
    out = []
    for word in tail.decode("latin-1").split()[:2]:
        drive = 0
        if len(word) >= 2 and word[1] == ":":
            drive = ord(word[0].upper()) - ord("A") + 1
            word = word[2:]
        name = word.split("\\")[-1].upper()
        name = name if is_valid_83(name) or "*" in name or "?" in name else ""
        form = fcb_form(name) if name else " " * 11
        out.append(bytes([drive & 0xFF]) + form.encode("latin-1"))
    while len(out) < 2:
        out.append(b"\0" + b" " * 11)
    return tuple(out)


def valid_date(y, m, d):
    if not 1980 <= y <= 2099 or not 1 <= m <= 12 or d < 1:
        return False
    return d <= days_in_month(y, m)


def days_in_month(y, m):
    if m == 2:
        return 29 if (y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)) else 28
    return 30 if m in (4, 6, 9, 11) else 31


def next_day(y, m, d):
    d += 1
    if d > days_in_month(y, m):
        d, m = 1, m + 1
        if m > 12:
            m, y = 1, y + 1
    return (y, m, d)


def weekday(y, m, d):
    """0 = Sunday."""
    import datetime
    return (datetime.date(y, m, d).weekday() + 1) % 7
