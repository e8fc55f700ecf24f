"""The built-in DOS, part: paths, the system file table and handles.  A mixin of
:class:`pypc_core.dos.kernel.Dos`; its methods share the Dos instance's state."""

import os


from ..firmware.memio import linear
from .errors import (
    DosError, E_ACCESS_DENIED, E_FILE_EXISTS, E_FILE_NOT_FOUND, E_INVALID_ACCESS,
    E_INVALID_DRIVE, E_INVALID_HANDLE, E_PATH_NOT_FOUND,
    E_TOO_MANY_FILES,
)
from .hostfs import device_name
from .common import (
    MAX_SFT, SftEntry, normalise_name
)


class FilesMixin:
    """Paths, the system file table and handles."""

    # ------------------------------------------------------------------
    # paths
    # ------------------------------------------------------------------
    def read_asciiz(self, addr, limit=128):
        data = bytes(self.mem.read(addr, limit))
        return data.split(b"\0")[0]

    def drive_letter(self, number):
        """Letter of a drive number (0 = default, 1 = A:) or DosError 0Fh."""
        letter = self.cur_drive if number == 0 else chr(ord("A") + number - 1)
        if letter not in self.drives:
            raise DosError(E_INVALID_DRIVE)
        return letter

    def parse_path(self, text, wildcards=False):
        """(drive letter, [components from the root]) of a DOS path."""
        if isinstance(text, bytes):
            text = text.decode("latin-1")
        text = text.strip()
        drive = self.cur_drive
        if len(text) >= 2 and text[1] == ":":
            drive = text[0].upper()
            text = text[2:]
            if drive not in self.drives:
                raise DosError(E_INVALID_DRIVE if not text else E_PATH_NOT_FOUND)
        if not text:
            return drive, list(self.cwd[drive])
        text = text.replace("/", "\\")
        parts = [] if text.startswith("\\") else list(self.cwd[drive])
        pieces = [p for p in text.split("\\")]
        last = len(pieces) - 1
        for i, piece in enumerate(pieces):
            if piece in ("", "."):
                continue
            if piece == "..":
                if not parts:
                    raise DosError(E_PATH_NOT_FOUND)
                parts.pop()
                continue
            name = normalise_name(piece, wildcards and i == last)
            if name is None:
                raise DosError(E_PATH_NOT_FOUND if i < last else E_FILE_NOT_FOUND)
            parts.append(name)
        return drive, parts

    def dos_path(self, r_seg, r_off):
        return self.read_asciiz(linear(r_seg, r_off), 128)

    # ------------------------------------------------------------------
    # files
    # ------------------------------------------------------------------
    def new_sft(self, entry):
        for i, old in enumerate(self.sft):
            if old is None:
                self.sft[i] = entry
                return i
        if len(self.sft) >= MAX_SFT:
            raise DosError(E_TOO_MANY_FILES)
        self.sft.append(entry)
        return len(self.sft) - 1

    def release(self, idx):
        if idx >= len(self.sft) or self.sft[idx] is None:
            return
        entry = self.sft[idx]
        entry.refs -= 1
        if entry.refs <= 0:
            fd = self._files.pop(idx, None)
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
            self.sft[idx] = None

    def new_handle(self, entry):
        addr, size = self.jft()
        for i in range(size):
            if self.mem.rb(addr + i) == 0xFF:
                idx = self.new_sft(entry)
                self.mem.wb(addr + i, idx)
                return i
        if entry.fd is not None:
            os.close(entry.fd)
        raise DosError(E_TOO_MANY_FILES)

    def handle_entry(self, handle):
        addr, size = self.jft()
        if handle >= size:
            raise DosError(E_INVALID_HANDLE)
        idx = self.mem.rb(addr + handle)
        if idx == 0xFF or idx >= len(self.sft) or self.sft[idx] is None:
            raise DosError(E_INVALID_HANDLE)
        return idx, self.sft[idx]

    def fd(self, idx, entry):
        fd = self._files.get(idx)
        if fd is None:
            fd = self._reopen(entry)
            self._files[idx] = fd
        return fd

    def _reopen(self, entry):
        """An fd of an open file's drive and DOS path, found again inside
        the current mounts (DosError if it is not there)."""
        hd = self.drives.get(entry.drive)
        if hd is None or not entry.parts:
            raise DosError(E_ACCESS_DENIED)
        folder, found, name = hd.resolve(list(entry.parts))
        entry.path = hd.host_path(folder, found, name)
        return hd.open_file(folder, found, entry.mode)

    def open_path(self, path, mode, create=False, exclusive=False, attr=0):
        """A new handle for ``path`` (a device name gives the device)."""
        drive, parts = self.parse_path(path)
        if not parts:
            raise DosError(E_ACCESS_DENIED if create else E_FILE_NOT_FOUND)
        dev = device_name(parts[-1])
        if dev is not None:
            kind = {"COM1": "AUX", "LPT1": "PRN"}.get(dev, dev)
            return self.new_handle(SftEntry(kind, mode=mode, name=kind))
        hd = self.drives[drive]
        folder, entry, name = hd.resolve(parts, must_exist=not create)
        if entry is not None and entry.is_dir:
            raise DosError(E_ACCESS_DENIED)
        if create and entry is not None and exclusive:
            raise DosError(E_FILE_EXISTS)
        host = hd.host_path(folder, entry, name)
        if create:
            fd = hd.create_file(folder, entry, name, exclusive)
            mode = 2
            if attr & 0x01:
                try:
                    os.fchmod(fd, 0o444)
                except OSError:
                    pass
        else:
            if mode > 2:
                raise DosError(E_INVALID_ACCESS)
            fd = hd.open_file(folder, entry, mode)
        entry = SftEntry("file", None, host, mode, parts[-1], drive, parts)
        try:
            handle = self.new_handle(entry)
        except DosError:
            os.close(fd)
            raise
        idx = self.mem.rb(self.jft()[0] + handle)
        self._files[idx] = fd
        return handle

    def read_handle(self, handle, count, addr, r):
        """Bytes read into memory (AH=3Fh); None means wait for the keyboard."""
        idx, entry = self.handle_entry(handle)
        if entry.kind == "file":
            if entry.mode == 1:
                raise DosError(E_ACCESS_DENIED)
            fd = self.fd(idx, entry)
            os.lseek(fd, entry.pos, os.SEEK_SET)
            data = os.read(fd, count)
            entry.pos += len(data)
        elif entry.kind == "CON":
            if not self.con_pending:
                line = self.line_input(126)
                if line is None:
                    return None
                if line == b"\x03":
                    return self.ctrl_c(r)
                self.con_write(b"\n")
                self.con_pending = line + b"\r\n"
                if line.startswith(b"\x1a"):
                    self.con_pending = b""
            data, self.con_pending = self.con_pending[:count], self.con_pending[count:]
        else:
            data = b""                        # NUL, AUX (nothing attached), PRN
        self.mem.write(addr, data)
        return len(data)

    def write_handle(self, handle, data):
        idx, entry = self.handle_entry(handle)
        if entry.kind == "file":
            if entry.mode == 0:
                raise DosError(E_ACCESS_DENIED)
            fd = self.fd(idx, entry)
            if not data:                      # CX=0 truncates at the position
                os.ftruncate(fd, entry.pos)
                return 0
            size = os.fstat(fd).st_size
            if entry.pos > size:
                os.ftruncate(fd, entry.pos)
            os.lseek(fd, entry.pos, os.SEEK_SET)
            n = os.write(fd, data)
            entry.pos += n
            return n
        if entry.kind == "CON":
            self.con_write(data)
        elif entry.kind == "PRN":
            self.printer_out += data
        return len(data)
