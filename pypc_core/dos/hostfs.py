"""A host directory seen by the built-in DOS as a drive.

DOS sees every host file and folder under an 8.3 name: names that already
are valid 8.3 names appear upper-cased; the others get ``BASE~N.EXT`` (the
first six usable characters of the name, a number, the first three of the
extension), numbered in sorted host-name order, so a listing is the same
every time.  Lookups are case-insensitive.  New files and folders are
created under the upper-case DOS name.

Nothing outside the mounted folder can be reached: ``..`` above the root is
"path not found", and a host entry whose real path leaves the mount (a
symlink pointing outside) is neither listed nor opened.
"""

import os

from .errors import (
    DosConfigError, DosError, E_ACCESS_DENIED, E_FILE_NOT_FOUND, E_PATH_NOT_FOUND,
)

VALID_CHARS = set("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'()-@^_`{}~")
DEVICE_NAMES = ("CON", "NUL", "AUX", "PRN", "COM1", "LPT1")


def valid_part(text, limit):
    return 0 < len(text) <= limit and all(c in VALID_CHARS for c in text)


def is_valid_83(name):
    """``name`` (upper case) is a DOS 8.3 file name."""
    base, dot, ext = name.partition(".")
    if not valid_part(base, 8):
        return False
    if dot and not (ext == "" or valid_part(ext, 3)):
        return False
    return True


def split_83(name):
    """("BASE", "EXT") of a DOS name."""
    base, _dot, ext = name.partition(".")
    return base, ext


def fcb_form(name):
    """The 11-character blank-padded form of an 8.3 name (``*`` expanded
    to ``?``), as DOS compares names."""
    base, _dot, ext = name.partition(".")

    def pad(part, n):
        out = ""
        for ch in part:
            if ch == "*":
                out += "?" * (n - len(out))
                break
            out += ch
        return (out + " " * n)[:n]
    return pad(base, 8) + pad(ext, 3)


def matches(pattern11, name):
    target = fcb_form(name)
    return all(p == "?" or p == t for p, t in zip(pattern11, target))


def device_name(name):
    """The device a DOS file name denotes (``CON`` for ``con.txt`` too), or None."""
    base = name.upper().partition(".")[0]
    return base if base in DEVICE_NAMES else None


class Entry:
    __slots__ = ("dos", "host", "is_dir")

    def __init__(self, dos, host, is_dir):
        self.dos = dos
        self.host = host
        self.is_dir = is_dir


class HostDrive:
    """One mounted folder.  ``resolve`` maps DOS path components to host
    paths; every host path handed out lies inside ``root``."""

    def __init__(self, root):
        if not os.path.isdir(root):
            raise DosConfigError(f"{root}: not a folder (a drive is a host folder)")
        self.root = os.path.realpath(root)

    # -- safety ---------------------------------------------------------------
    def inside(self, host_path):
        real = os.path.realpath(host_path)
        return real == self.root or real.startswith(self.root + os.sep)

    # -- listings -------------------------------------------------------------
    def entries(self, host_dir):
        """[Entry] of a host folder (``.``/``..`` excluded), in DOS-name order
        of their host names; entries leaving the mount are left out."""
        try:
            names = sorted(os.listdir(host_dir))
        except OSError:
            raise DosError(E_PATH_NOT_FOUND) from None
        taken = set()
        plain, mapped = [], []
        for host in names:
            full = os.path.join(host_dir, host)
            if not self.inside(full):
                continue
            upper = host.upper()
            if is_valid_83(upper) and upper not in taken and not upper.endswith("."):
                taken.add(upper)
                plain.append((host, upper))
            else:
                mapped.append(host)
        out = [(host, dos) for host, dos in plain]
        for host in mapped:
            stem, dot, ext = host.upper().rpartition(".")
            if not dot or not stem:
                stem, ext = host.upper(), ""
            stem = "".join(c for c in stem if c in VALID_CHARS)[:6] or "_"
            ext = "".join(c for c in ext if c in VALID_CHARS)[:3]
            n = 1
            while True:
                tail = f"~{n}"
                dos = stem[:8 - len(tail)] + tail + (f".{ext}" if ext else "")
                if dos not in taken:
                    break
                n += 1
            taken.add(dos)
            out.append((host, dos))
        result = []
        for host, dos in sorted(out, key=lambda item: item[0]):
            full = os.path.join(host_dir, host)
            result.append(Entry(dos, host, os.path.isdir(full)))
        return result

    def lookup(self, host_dir, dos_name):
        for entry in self.entries(host_dir):
            if entry.dos == dos_name:
                return entry
        return None

    # -- paths ----------------------------------------------------------------
    def dos_parts(self, host_path):
        """The DOS components of a host path inside the mount, or None when
        it is outside (or reached through a symlink leading out)."""
        if not self.inside(host_path):
            return None
        rel = os.path.relpath(os.path.realpath(host_path), self.root)
        if rel == ".":
            return []
        parts, folder = [], self.root
        for piece in rel.split(os.sep):
            for entry in self.entries(folder):
                if entry.host == piece:
                    parts.append(entry.dos)
                    folder = os.path.join(folder, entry.host)
                    break
            else:
                return None
        return parts

    def resolve_dir(self, parts):
        """Host folder of DOS folder components (from the root)."""
        host = self.root
        for part in parts:
            entry = self.lookup(host, part)
            if entry is None or not entry.is_dir:
                raise DosError(E_PATH_NOT_FOUND)
            host = os.path.join(host, entry.host)
        return host

    def resolve(self, parts, must_exist=True):
        """(host folder, Entry or None, final DOS name) of a DOS path given as
        components from the root.  ``must_exist``: a missing last component
        is "file not found"."""
        if not parts:
            return None, None, ""
        folder = self.resolve_dir(parts[:-1])
        entry = self.lookup(folder, parts[-1])
        if entry is None and must_exist:
            raise DosError(E_FILE_NOT_FOUND)
        return folder, entry, parts[-1]

    def host_path(self, folder, entry, name):
        path = os.path.join(folder, entry.host if entry is not None else name)
        if not self.inside(os.path.dirname(path)) or (entry is not None and not self.inside(path)):
            raise DosError(E_ACCESS_DENIED)
        return path

    def free_space(self):
        """(sectors per cluster, free clusters, bytes per sector, total clusters)."""
        try:
            st = os.statvfs(self.root)
            free = st.f_bavail * st.f_frsize
            total = st.f_blocks * st.f_frsize
        except (OSError, AttributeError):
            free = total = 0
        spc = 64                       # 32 KiB clusters: 2 GiB fit in 65535 clusters
        unit = spc * 512
        return spc, min(free // unit, 0xFFFE), 512, min(total // unit, 0xFFFE)
