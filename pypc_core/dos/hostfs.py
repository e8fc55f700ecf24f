"""A host directory seen by the built-in DOS as a drive.

DOS sees every host file and folder under an 8.3 name: names that already
are valid 8.3 names appear upper-cased; the others get ``BASE~N.EXT`` (the
first six usable characters of the name, a number, the first three of the
extension), numbered in sorted host-name order, so a listing is the same
every time.  Lookups are case-insensitive.  New files and folders are
created under the upper-case DOS name.

Nothing outside the mounted folder can be reached: ``..`` above the root is
"path not found", and every file operation goes through :class:`HostDrive`,
which opens each folder of a path relative to the one before and never
follows a symlink.  Only regular files and folders are seen: symlinks
(wherever they point), FIFOs, sockets and devices are neither listed nor
opened, and a new name that clashes with one of them is "access denied".
"""

import errno
import os
import stat

from .errors import (
    DosConfigError, DosError, E_ACCESS_DENIED, E_FILE_EXISTS, E_FILE_NOT_FOUND,
    E_PATH_NOT_FOUND,
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
    """A host file or folder the guest sees: its DOS name, host name, kind
    and the ``lstat`` taken when the folder was listed."""
    __slots__ = ("dos", "host", "is_dir", "stat")

    def __init__(self, dos, host, is_dir, st=None):
        self.dos = dos
        self.host = host
        self.is_dir = is_dir
        self.stat = st


class HostFolder(str):
    """A folder of a mount: ``names`` are its host names from the root; the
    string itself is the host path, for reports only (every operation goes
    through the drive, relative to directory handles)."""

    def __new__(cls, root, names=()):
        self = super().__new__(cls, os.path.join(root, *names) if names else root)
        self.names = tuple(names)
        return self


_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def _renameat2():
    """libc's renameat2 (Linux), for a rename that never replaces, or None."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError, ImportError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_RENAMEAT2 = None
_RENAME_NOREPLACE = 1


class HostDrive:
    """One mounted folder, and the one place where the built-in DOS touches
    it.  Every operation opens the root, then each folder below it relative
    to the one before (``O_NOFOLLOW``), and acts on the last name relative
    to that folder's handle: no symlink is followed anywhere in a path.

    Only regular files and folders are seen by the guest.  Symlinks (to
    anything, inside the mount or not), FIFOs, sockets and devices are
    neither listed nor opened; a new name that matches one of them
    (ignoring case) is "access denied", so nothing is created or renamed
    over a host entry the guest cannot see."""

    def __init__(self, root):
        if not os.path.isdir(root):
            raise DosConfigError(f"{root}: not a folder (a drive is a host folder)")
        self.root = os.path.realpath(root)

    # -- directory handles -------------------------------------------------------
    def _open_dir(self, folder):
        """A read-only handle of ``folder`` (walked from the root without
        following links); the caller closes it.  DosError 3 if it is gone."""
        names = getattr(folder, "names", ())
        try:
            fd = os.open(self.root, _DIR_FLAGS)
        except OSError:
            raise DosError(E_PATH_NOT_FOUND) from None
        for name in names:
            try:
                nfd = os.open(name, _DIR_FLAGS | _NOFOLLOW, dir_fd=fd)
            except OSError:
                raise DosError(E_PATH_NOT_FOUND) from None
            finally:
                os.close(fd)
            fd = nfd
        return fd

    # -- listings -------------------------------------------------------------
    def _scan(self, folder):
        """([Entry] the guest sees, {upper-case host name} of every entry)."""
        fd = self._open_dir(folder)
        try:
            with os.scandir(fd) as it:
                raw = []
                for de in it:
                    try:
                        st = de.stat(follow_symlinks=False)
                    except OSError:
                        st = None
                    raw.append((de.name, st))
        except OSError:
            raise DosError(E_PATH_NOT_FOUND) from None
        finally:
            os.close(fd)
        every = {name.upper() for name, _st in raw}
        visible = sorted((name, st) for name, st in raw
                         if st is not None and (stat.S_ISREG(st.st_mode)
                                                or stat.S_ISDIR(st.st_mode)))
        taken = set()
        plain, mapped = [], []
        for host, st in visible:
            upper = host.upper()
            if is_valid_83(upper) and upper not in taken and not upper.endswith("."):
                taken.add(upper)
                plain.append((host, upper, st))
            else:
                mapped.append((host, st))
        out = list(plain)
        for host, st in mapped:
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
            out.append((host, dos, st))
        entries = [Entry(dos, host, stat.S_ISDIR(st.st_mode), st)
                   for host, dos, st in sorted(out, key=lambda item: item[0])]
        return entries, every

    def entries(self, folder):
        """[Entry] of a folder of the mount (``.``/``..`` excluded), in the
        order of their host names; links and special files are left out."""
        return self._scan(folder)[0]

    def lookup(self, folder, dos_name):
        for entry in self.entries(folder):
            if entry.dos == dos_name:
                return entry
        return None

    # -- paths ----------------------------------------------------------------
    def dos_parts(self, host_path):
        """The DOS components of a host path inside the mount (its folders
        taken as real paths, its last name as given), or None when it is
        outside or not a file or folder the guest sees."""
        host_path = os.path.abspath(host_path)
        real = os.path.join(os.path.realpath(os.path.dirname(host_path)),
                            os.path.basename(host_path))
        if real == self.root:
            return []
        if not real.startswith(self.root + os.sep):
            return None
        rel = os.path.relpath(real, self.root)
        parts, names = [], []
        for piece in rel.split(os.sep):
            try:
                listing = self.entries(HostFolder(self.root, names))
            except DosError:
                return None
            for entry in listing:
                if entry.host == piece:
                    parts.append(entry.dos)
                    names.append(entry.host)
                    break
            else:
                return None
        return parts

    def resolve_dir(self, parts):
        """The HostFolder of DOS folder components (from the root)."""
        names = []
        for part in parts:
            entry = self.lookup(HostFolder(self.root, names), part)
            if entry is None or not entry.is_dir:
                raise DosError(E_PATH_NOT_FOUND)
            names.append(entry.host)
        return HostFolder(self.root, names)

    def resolve(self, parts, must_exist=True):
        """(HostFolder, Entry or None, final DOS name) of a DOS path given as
        components from the root.  ``must_exist``: a missing last component
        is "file not found" (and so is the root itself)."""
        if not parts:
            if must_exist:
                raise DosError(E_FILE_NOT_FOUND)
            return None, None, ""
        folder = self.resolve_dir(parts[:-1])
        entry = self.lookup(folder, parts[-1])
        if entry is None and must_exist:
            raise DosError(E_FILE_NOT_FOUND)
        return folder, entry, parts[-1]

    def host_path(self, folder, entry, name):
        """The host path of a name in ``folder``, for reports only."""
        return os.path.join(folder, entry.host if entry is not None else name)

    # -- operations ---------------------------------------------------------------
    def _new_name(self, folder, name):
        """``name`` may be created in ``folder``: no entry of any kind has it
        (ignoring case), visible or not."""
        if folder is None or not name or device_name(name):
            raise DosError(E_ACCESS_DENIED)
        if name.upper() in self._scan(folder)[1]:
            raise DosError(E_ACCESS_DENIED)

    def open_file(self, folder, entry, mode):
        """An fd of a visible regular file (mode 0 read, 1 write, 2 both):
        opened without following a link and without blocking, and checked
        to be a regular file before anything is read."""
        if entry is None:
            raise DosError(E_FILE_NOT_FOUND)
        if entry.is_dir:
            raise DosError(E_ACCESS_DENIED)
        flags = (os.O_RDONLY, os.O_WRONLY, os.O_RDWR)[mode if mode < 3 else 2]
        dfd = self._open_dir(folder)
        try:
            return self._open_regular(dfd, entry.host, flags)
        finally:
            os.close(dfd)

    @staticmethod
    def _open_regular(dfd, host, flags):
        try:
            fd = os.open(host, flags | _NOFOLLOW | _NONBLOCK | getattr(os, "O_CLOEXEC", 0),
                         dir_fd=dfd)
        except FileNotFoundError:
            raise DosError(E_FILE_NOT_FOUND) from None
        except OSError:
            raise DosError(E_ACCESS_DENIED) from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise DosError(E_ACCESS_DENIED)
            if _NONBLOCK:
                os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def create_file(self, folder, entry, name, exclusive=False):
        """An fd (read/write) of a file created or truncated: an existing
        visible file is truncated (``exclusive``: "file exists"); a new
        name is created exclusively, never through a link."""
        if entry is not None:
            if entry.is_dir:
                raise DosError(E_ACCESS_DENIED)
            if exclusive:
                raise DosError(E_FILE_EXISTS)
            dfd = self._open_dir(folder)
            try:
                fd = self._open_regular(dfd, entry.host, os.O_RDWR)
            finally:
                os.close(dfd)
            try:
                os.ftruncate(fd, 0)
            except OSError:
                os.close(fd)
                raise DosError(E_ACCESS_DENIED) from None
            return fd
        dfd = self._open_dir(folder)
        try:
            self._new_name(folder, name)
            try:
                return os.open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL | _NOFOLLOW
                               | getattr(os, "O_CLOEXEC", 0), 0o666, dir_fd=dfd)
            except OSError:
                raise DosError(E_ACCESS_DENIED) from None
        finally:
            os.close(dfd)

    def read_file(self, folder, entry, limit):
        """Up to ``limit`` bytes of a visible regular file."""
        fd = self.open_file(folder, entry, 0)
        try:
            parts, got = [], 0
            while got < limit:
                block = os.read(fd, min(limit - got, 1 << 20))
                if not block:
                    break
                parts.append(block)
                got += len(block)
            return b"".join(parts)
        except OSError:
            raise DosError(E_ACCESS_DENIED) from None
        finally:
            os.close(fd)

    def unlink(self, folder, entry):
        if entry is None or entry.is_dir:
            raise DosError(E_ACCESS_DENIED)
        dfd = self._open_dir(folder)
        try:
            st = os.stat(entry.host, dir_fd=dfd, follow_symlinks=False)
            if not stat.S_ISREG(st.st_mode):
                raise DosError(E_ACCESS_DENIED)
            os.unlink(entry.host, dir_fd=dfd)
        except OSError:
            raise DosError(E_ACCESS_DENIED) from None
        finally:
            os.close(dfd)

    def mkdir(self, folder, name):
        dfd = self._open_dir(folder)
        try:
            self._new_name(folder, name)
            os.mkdir(name, 0o777, dir_fd=dfd)
        except OSError:
            raise DosError(E_ACCESS_DENIED) from None
        finally:
            os.close(dfd)

    def rmdir(self, folder, entry):
        if entry is None or not entry.is_dir:
            raise DosError(E_PATH_NOT_FOUND)
        dfd = self._open_dir(folder)
        try:
            os.rmdir(entry.host, dir_fd=dfd)
        except OSError:
            raise DosError(E_ACCESS_DENIED) from None
        finally:
            os.close(dfd)

    def rename(self, folder, entry, new_folder, new_name):
        """Rename a visible entry to a new name (never over anything: an
        existing name, visible or not, is "access denied")."""
        global _RENAMEAT2
        if entry is None:
            raise DosError(E_FILE_NOT_FOUND)
        sfd = self._open_dir(folder)
        try:
            dfd = self._open_dir(new_folder)
        except BaseException:
            os.close(sfd)
            raise
        try:
            self._new_name(new_folder, new_name)
            if _RENAMEAT2 is None:
                _RENAMEAT2 = _renameat2() or False
            if _RENAMEAT2:
                import ctypes
                rc = _RENAMEAT2(sfd, os.fsencode(entry.host), dfd, os.fsencode(new_name),
                                _RENAME_NOREPLACE)
                if rc == 0:
                    return
                if ctypes.get_errno() not in (errno.ENOSYS, errno.EINVAL):
                    raise DosError(E_ACCESS_DENIED)
                _RENAMEAT2 = False       # not supported here: checked above, then rename
            os.rename(entry.host, new_name, src_dir_fd=sfd, dst_dir_fd=dfd)
        except OSError:
            raise DosError(E_ACCESS_DENIED) from None
        finally:
            os.close(sfd)
            os.close(dfd)

    def stat(self, folder, entry):
        """``lstat`` of a visible entry now (OSError-free: DosError)."""
        dfd = self._open_dir(folder)
        try:
            return os.stat(entry.host, dir_fd=dfd, follow_symlinks=False)
        except OSError:
            raise DosError(E_FILE_NOT_FOUND) from None
        finally:
            os.close(dfd)

    def folder_stat(self, folder):
        """``fstat`` of a folder of the mount."""
        dfd = self._open_dir(folder)
        try:
            return os.fstat(dfd)
        finally:
            os.close(dfd)

    def writable(self, folder, entry):
        """The entry may be written by this process (its read-only bit clear)."""
        dfd = self._open_dir(folder)
        try:
            return os.access(entry.host, os.W_OK, dir_fd=dfd, follow_symlinks=False)
        except (OSError, NotImplementedError):
            return bool(entry.stat is not None and entry.stat.st_mode & 0o222)
        finally:
            os.close(dfd)

    def set_read_only(self, folder, entry, read_only):
        """Set or clear the write bits of a visible entry (through its own
        handle, never a link's target)."""
        dfd = self._open_dir(folder)
        try:
            flags = _DIR_FLAGS if entry.is_dir else (os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            try:
                fd = os.open(entry.host, flags | _NOFOLLOW | _NONBLOCK, dir_fd=dfd)
            except OSError:
                raise DosError(E_ACCESS_DENIED) from None
            try:
                st = os.fstat(fd)
                if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
                    raise DosError(E_ACCESS_DENIED)
                mode = stat.S_IMODE(st.st_mode)
                os.fchmod(fd, (mode & ~0o222) if read_only else (mode | 0o200))
            except OSError:
                raise DosError(E_ACCESS_DENIED) from None
            finally:
                os.close(fd)
        finally:
            os.close(dfd)

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
