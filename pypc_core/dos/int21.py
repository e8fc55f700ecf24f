"""The built-in DOS, part: the INT 21h functions (``fXX``, one method per AH) and their dispatch.  A mixin of
:class:`pypc_core.dos.kernel.Dos`; its methods share the Dos instance's state."""

import os


from ..cpu import state as S
from ..firmware.memio import BDA_TICKS, BDA_TICKS_ROLLOVER, linear
from . import rom as dosrom
from .errors import (
    DosError, LoadError, ERROR_CLASS, E_ACCESS_DENIED, E_BAD_ENVIRONMENT,
    E_CURRENT_DIRECTORY, E_FILE_NOT_FOUND, E_INVALID_FUNCTION,
    E_INVALID_HANDLE, E_NO_MEMORY, E_NO_MORE_FILES, E_NOT_SAME_DEVICE,
    E_PATH_NOT_FOUND, E_TOO_MANY_FILES,
)
from .exe import parse as parse_program
from .hostfs import device_name, fcb_form, matches
from .common import (
    DOS_VERSION, INDOS_OFFSET, JFT_SIZE, JUMPED, LASTDRIVE, ROOT_PSP, TERM_TSR,
    TICKS_PER_DAY, WAIT, _LETTERS, _LOWER, dos_datetime, host_timestamp, log, next_day,
    valid_date, weekday
)


class Int21Mixin:
    """The INT 21h functions (``fXX``, one method per AH) and their dispatch."""

    # ------------------------------------------------------------------
    # INT 21h
    # ------------------------------------------------------------------
    def _svc_int21(self, r):
        ah = r.ah
        fn = FUNCTIONS.get(ah)
        if fn is None:
            return self.unsupported_function(r)
        try:
            result = fn(self, r)
        except DosError as err:
            self.set_error(r, err.code)
            if err.code == E_NO_MEMORY and hasattr(err, "largest"):
                r.bx = err.largest
            return None
        except LoadError as err:
            self.set_error(r, err.code)
            return None
        if result is None and ah >= 0x38:
            r.cf = False
        return result

    def set_error(self, r, code):
        self.last_error = code
        r.ax = code
        r.cf = True

    def unsupported_function(self, r):
        ah = r.ah
        if ah not in self.unsupported:
            self.unsupported.add(ah)
            log.warning("built-in DOS: INT 21h function %02Xh is not provided "
                        "(CS:IP %04X:%04X)", ah, *self._caller(r))
            self.machine.note("warning", "INT 21h function %02Xh is not provided "
                              "(CS:IP %04X:%04X); the call fails" % (ah, *self._caller(r)),
                              source="dos")
        if 0x0F <= ah <= 0x24 or 0x27 <= ah <= 0x29:
            r.al = 0xFF                       # FCB functions: "failed"
        elif ah >= 0x38:
            self.set_error(r, E_INVALID_FUNCTION)
        else:
            r.al = 0x00
        return None

    def _caller(self, r):
        return self.mem.rw(linear(r.ss, r.sp + 2)), self.mem.rw(linear(r.ss, r.sp))

    # -- console functions 01h-0Ch ----------------------------------------
    def f01(self, r):
        ch = self.get_key()
        if ch is None:
            return WAIT
        if ch == 0x03:
            return self.ctrl_c(r)
        self.con_write(bytes([ch]) if ch else b"")
        r.al = ch

    def f02(self, r):
        self.con_write(bytes([r.dl]))
        r.al = r.dl

    def f03(self, r):
        r.al = 0x1A                            # AUX: nothing attached

    def f04(self, r):
        pass

    def f05(self, r):
        self.printer_out += bytes([r.dl])

    def f06(self, r):
        if r.dl != 0xFF:
            self.con_write(bytes([r.dl]))
            r.al = r.dl
            return
        if not self.key_available():
            r.zf = True
            r.al = 0
            return
        r.al = self.get_key()
        r.zf = False

    def f07(self, r):
        ch = self.get_key()
        if ch is None:
            return WAIT
        r.al = ch

    def f08(self, r):
        ch = self.get_key()
        if ch is None:
            return WAIT
        if ch == 0x03:
            return self.ctrl_c(r)
        r.al = ch

    def f09(self, r):
        addr = linear(r.ds, r.dx)
        data = bytes(self.mem.read(addr, 0x10000))
        end = data.find(b"$")
        self.con_write(data if end < 0 else data[:end])
        r.al = 0x24

    def f0a(self, r):
        addr = linear(r.ds, r.dx)
        size = self.mem.rb(addr)
        if size == 0:
            return None
        line = self.line_input(size - 1)
        if line is None:
            return WAIT
        if line == b"\x03":
            return self.ctrl_c(r)
        self.mem.wb(addr + 1, len(line))
        self.mem.write(addr + 2, line + b"\r")

    def f0b(self, r):
        r.al = 0xFF if self.key_available() else 0x00

    def f0c(self, r):
        if self.line is None and self.pending_scan is None:
            self.machine.bios.keyboard.flush()
        fn = r.al
        if fn in (0x01, 0x06, 0x07, 0x08, 0x0A):
            return FUNCTIONS[fn](self, r)
        r.al = 0

    # -- drives, DTA, vectors, date and time ----------------------------------
    def f0d(self, r):
        pass                                   # disk reset: nothing is cached

    def f0e(self, r):
        letter = chr(ord("A") + r.dl) if r.dl < 26 else None
        if letter in self.drives:
            self.cur_drive = letter
        r.al = max(LASTDRIVE, max(ord(d) - ord("A") + 1 for d in self.drives))

    def f19(self, r):
        r.al = ord(self.cur_drive) - ord("A")

    def f1a(self, r):
        self.dta = (r.ds, r.dx)

    def f2f(self, r):
        r.es, r.bx = self.dta

    def f25(self, r):
        self.mem.set_vector(r.al, r.ds, r.dx)

    def f35(self, r):
        r.es, r.bx = self.mem.vector(r.al)

    def _ticks(self):
        if self.mem.rb(BDA_TICKS_ROLLOVER):
            self.mem.wb(BDA_TICKS_ROLLOVER, 0)
            self.date = next_day(*self.date)
        return self.mem.rd(BDA_TICKS)

    def f2a(self, r):
        self._ticks()
        y, m, d = self.date
        r.cx, r.dh, r.dl = y, m, d
        r.al = weekday(y, m, d)

    def f2b(self, r):
        y, m, d = r.cx, r.dh, r.dl
        if valid_date(y, m, d):
            self._ticks()
            self.date = (y, m, d)
            r.al = 0
        else:
            r.al = 0xFF

    def f2c(self, r):
        ticks = self._ticks()
        hundredths = ticks * 8640000 // TICKS_PER_DAY
        r.ch = hundredths // 360000
        r.cl = hundredths // 6000 % 60
        r.dh = hundredths // 100 % 60
        r.dl = hundredths % 100

    def f2d(self, r):
        h, m, s, hs = r.ch, r.cl, r.dh, r.dl
        if h < 24 and m < 60 and s < 60 and hs < 100:
            total = ((h * 60 + m) * 60 + s) * 100 + hs
            # rounded up, so reading the time back gives at least what was set
            self.mem.wd(BDA_TICKS, -(-total * TICKS_PER_DAY // 8640000))
            r.al = 0
        else:
            r.al = 0xFF

    def f2e(self, r):
        self.verify = bool(r.al)

    def f54(self, r):
        r.al = 1 if self.verify else 0

    def f30(self, r):
        major, minor = DOS_VERSION
        r.bh = 0x00 if r.al == 1 else 0xFF   # AL=01h: version flag (not in ROM)
        r.al, r.ah = major, minor
        r.bl, r.cx = 0, 0

    def f31(self, r):
        return self.terminate(r, r.al, TERM_TSR, r.dx)

    def f33(self, r):
        al = r.al
        if al == 0:
            r.dl = 1 if self.break_flag else 0
        elif al == 1:
            self.break_flag = bool(r.dl & 1)
        elif al == 5:
            r.dl = ord(self.cur_drive) - ord("A") + 1
        else:
            r.al = 0xFF

    def f36(self, r):
        try:
            letter = self.drive_letter(r.dl)
        except DosError:
            r.ax = 0xFFFF
            return
        spc, free, bps, total = self.drives[letter].free_space()
        r.ax, r.bx, r.cx, r.dx = spc, free, bps, total

    def f37(self, r):
        if r.al == 0:
            r.dl = ord("/")
            r.al = 0
        elif r.al == 1:
            r.al = 0
        else:
            r.al = 0xFF

    # -- directories ---------------------------------------------------------
    def _dir_target(self, r):
        drive, parts = self.parse_path(self.dos_path(r.ds, r.dx))
        return drive, parts, self.drives[drive]

    def f39(self, r):
        drive, parts, hd = self._dir_target(r)
        if not parts:
            raise DosError(E_ACCESS_DENIED)
        folder, entry, name = hd.resolve(parts, must_exist=False)
        if entry is not None or device_name(name):
            raise DosError(E_ACCESS_DENIED)
        hd.mkdir(folder, name)

    def f3a(self, r):
        drive, parts, hd = self._dir_target(r)
        if not parts:
            raise DosError(E_ACCESS_DENIED)
        if self.cwd[drive][:len(parts)] == parts:
            raise DosError(E_CURRENT_DIRECTORY)
        folder, entry, name = hd.resolve(parts, must_exist=False)
        if entry is None or not entry.is_dir:
            raise DosError(E_PATH_NOT_FOUND)
        hd.rmdir(folder, entry)

    def f3b(self, r):
        drive, parts, hd = self._dir_target(r)
        hd.resolve_dir(parts)
        self.cwd[drive] = parts

    def f47(self, r):
        letter = self.drive_letter(r.dl)
        text = "\\".join(self.cwd[letter]).encode("latin-1")
        self.mem.write(linear(r.ds, r.si), text[:63] + b"\0")
        r.ax = 0x0100

    # -- handles -------------------------------------------------------------
    def f3c(self, r):
        r.ax = self.open_path(self.dos_path(r.ds, r.dx), 2, create=True, attr=r.cx)

    def f5b(self, r):
        r.ax = self.open_path(self.dos_path(r.ds, r.dx), 2, create=True, exclusive=True,
                              attr=r.cx)

    def f3d(self, r):
        r.ax = self.open_path(self.dos_path(r.ds, r.dx), r.al & 0x07)

    def f3e(self, r):
        idx, _entry = self.handle_entry(r.bx)
        addr, _size = self.jft()
        self.mem.wb(addr + r.bx, 0xFF)
        self.release(idx)

    def f3f(self, r):
        n = self.read_handle(r.bx, r.cx, linear(r.ds, r.dx), r)
        if n is None:
            return WAIT
        if n == JUMPED:
            return JUMPED
        r.ax = n

    def f40(self, r):
        data = bytes(self.mem.read(linear(r.ds, r.dx), r.cx))
        r.ax = self.write_handle(r.bx, data)

    def f41(self, r):
        drive, parts = self.parse_path(self.dos_path(r.ds, r.dx))
        hd = self.drives[drive]
        if parts and device_name(parts[-1]):
            raise DosError(E_ACCESS_DENIED)
        folder, entry, name = hd.resolve(parts)
        hd.unlink(folder, entry)

    def f42(self, r):
        idx, entry = self.handle_entry(r.bx)
        offset = (r.cx << 16) | r.dx
        if entry.kind != "file":
            r.dx = r.ax = 0
            return
        if r.al == 0:
            base = 0
        elif r.al == 1:
            base = entry.pos
        elif r.al == 2:
            base = os.fstat(self.fd(idx, entry)).st_size
        else:
            raise DosError(E_INVALID_FUNCTION)
        if offset >= 0x80000000:
            offset -= 0x100000000
        entry.pos = max(0, base + offset) & 0xFFFFFFFF
        r.dx, r.ax = entry.pos >> 16, entry.pos & 0xFFFF

    def f43(self, r):
        drive, parts = self.parse_path(self.dos_path(r.ds, r.dx))
        hd = self.drives[drive]
        if r.al not in (0, 1):
            raise DosError(E_INVALID_FUNCTION)
        if parts and device_name(parts[-1]):
            raise DosError(E_FILE_NOT_FOUND)
        folder, entry, name = hd.resolve(parts)
        if r.al == 0:
            attr = 0x10 if entry.is_dir else 0x20
            if not hd.writable(folder, entry):
                attr |= 0x01
            r.cx = attr
            r.ax = attr
        else:
            hd.set_read_only(folder, entry, bool(r.cx & 1))

    def f44(self, r):
        al = r.al
        if al in (0x08, 0x09):
            self.drive_letter(r.bl)            # DosError 0Fh for a drive that is not there
            if al == 0x08:
                r.ax = 1                       # not removable
            else:
                r.dx = 0                       # local
            return
        idx, entry = self.handle_entry(r.bx)
        if al == 0x00:
            if entry.kind == "file":
                r.dx = ord(entry.drive) - ord("A")
            else:
                info = {"CON": 0x80D3, "NUL": 0x8084, "AUX": 0x80C0, "PRN": 0xA0C0}[entry.kind]
                r.dx = info
            r.ax = r.dx
        elif al == 0x01:
            pass
        elif al == 0x06:
            if entry.kind == "file":
                fd = self.fd(idx, entry)
                r.al = 0xFF if entry.pos < os.fstat(fd).st_size else 0x00
            elif entry.kind == "CON":
                r.al = 0xFF if (self.con_pending or self.key_available()) else 0x00
            else:
                r.al = 0x00 if entry.kind == "NUL" else 0xFF
        elif al == 0x07:
            r.al = 0xFF
        else:
            raise DosError(E_INVALID_FUNCTION)

    def f45(self, r):
        idx, entry = self.handle_entry(r.bx)
        addr, size = self.jft()
        for i in range(size):
            if self.mem.rb(addr + i) == 0xFF:
                self.mem.wb(addr + i, idx)
                entry.refs += 1
                r.ax = i
                return
        raise DosError(E_TOO_MANY_FILES)

    def f46(self, r):
        idx, entry = self.handle_entry(r.bx)
        addr, size = self.jft()
        if r.cx >= size:
            raise DosError(E_INVALID_HANDLE)
        old = self.mem.rb(addr + r.cx)
        if old == idx:
            return
        if old != 0xFF:
            self.release(old)
        self.mem.wb(addr + r.cx, idx)
        entry.refs += 1

    # -- memory --------------------------------------------------------------
    def f48(self, r):
        r.ax = self.allocate(r.bx, self.current_psp)

    def f49(self, r):
        self.free(r.es)

    def f4a(self, r):
        self.resize(r.es, r.bx)

    def f58(self, r):
        if r.al == 0:
            r.ax = self.strategy
        elif r.al == 1 and r.bx in (0, 1, 2):
            self.strategy = r.bx
        else:
            raise DosError(E_INVALID_FUNCTION)

    def f67(self, r):
        """Set the handle count: a table of more than 20 handles moves into
        a block of its own (owned by the PSP)."""
        want = r.bx
        addr, size = self.jft()
        base = linear(self.current_psp, 0)
        if want <= JFT_SIZE:
            return None
        if want > 255:
            raise DosError(E_TOO_MANY_FILES)
        if want <= size:
            return None
        old = bytes(self.mem.read(addr, size))
        seg = self.allocate((want + 15) // 16, self.current_psp)
        self.mem.write(linear(seg, 0), old + b"\xff" * (want - size))
        self.mem.ww(base + 0x32, want)
        self.mem.ww(base + 0x34, 0)
        self.mem.ww(base + 0x36, seg)

    def f68(self, r):
        self.handle_entry(r.bx)                # commit: host writes are not buffered

    def f34(self, r):
        r.es, r.bx = ROOT_PSP, INDOS_OFFSET

    def f38(self, r):
        if r.al == 0 and r.dx != 0xFFFF:
            info = bytearray(34)
            info[0:2] = (0).to_bytes(2, "little")          # date format: USA (m d y)
            info[2:4] = b"$\0"                            # currency symbol
            info[7:9] = b",\0"                            # thousands separator
            info[9:11] = b".\0"                           # decimal separator
            info[11:13] = b"-\0"                          # date separator
            info[13:15] = b":\0"                          # time separator
            info[15] = 0                                   # currency before, no space
            info[16] = 2                                   # digits after the decimal point
            info[17] = 0                                   # 12-hour clock
            info[18:20] = self.label("case_map").to_bytes(2, "little")
            info[20:22] = dosrom.DOS_SEGMENT.to_bytes(2, "little")
            info[22:24] = b",\0"                          # list separator
            self.mem.write(linear(r.ds, r.dx), bytes(info))
            r.bx = 1
            r.ax = 1
        elif r.dx == 0xFFFF and (r.al == 1 or (r.al == 0xFF and r.bx == 1)):
            pass                                           # set country: USA only
        else:
            raise DosError(E_FILE_NOT_FOUND)               # (DOS: no such country)

    def f29(self, r):
        """Parse a file name into an FCB (DS:SI text, ES:DI FCB, AL options)."""
        opts = r.al
        addr = linear(r.ds, r.si)
        text = bytes(self.mem.read(addr, 128))
        i = 0
        while i < len(text) and text[i] in b" \t":
            i += 1
        if opts & 1:
            while i < len(text) and text[i] in b":.;,=+ \t":
                i += 1
        fcb = linear(r.es, r.di)
        result = 0
        if i + 1 < len(text) and text[i + 1] == ord(":") and chr(text[i]).upper() in _LETTERS:
            number = ord(chr(text[i]).upper()) - ord("A") + 1
            if chr(text[i]).upper() not in self.drives:
                result = 0xFF
            self.mem.wb(fcb, number)
            i += 2
        elif not opts & 2:
            self.mem.wb(fcb, 0)
        stops = b' \t."/\\[]:|<>+=;,\r\n\0'

        def field(i, width):
            out = ""
            while i < len(text) and text[i] not in stops and text[i] >= 0x20:
                ch = chr(text[i])
                ch = ch.upper() if ch in _LOWER else ch     # bytes 80h-FFh stay as they are
                if ch == "*":
                    out = (out + "?" * width)[:width]
                elif len(out) < width:
                    out += ch
                i += 1
            return i, out
        i, name = field(i, 8)
        if name or not opts & 4:
            self.mem.write(fcb + 1, (name.ljust(8)[:8]).encode("latin-1"))
        ext = ""
        if i < len(text) and text[i] == ord("."):
            i, ext = field(i + 1, 3)
        if ext or not opts & 8:
            self.mem.write(fcb + 9, (ext.ljust(3)[:3]).encode("latin-1"))
        if result != 0xFF and "?" in bytes(self.mem.read(fcb + 1, 11)).decode("latin-1"):
            result = 1
        r.si = (r.si + i) & 0xFFFF
        r.al = result

    # -- processes -----------------------------------------------------------
    def f4b(self, r):
        mode = r.al
        path = self.dos_path(r.ds, r.dx).decode("latin-1")
        block = linear(r.es, r.bx)
        if mode == 0x03:
            return self._load_overlay(path, block)
        if mode not in (0x00, 0x01):
            raise DosError(E_INVALID_FUNCTION)
        env_seg = self.mem.rw(block)
        tail_off, tail_seg = self.mem.rw(block + 2), self.mem.rw(block + 4)
        tail_addr = linear(tail_seg, tail_off)
        n = min(self.mem.rb(tail_addr), 126)
        tail = bytes(self.mem.read(tail_addr + 1, n))
        parent = self.current_psp
        if env_seg == 0:
            env_seg = self.mem.rw(linear(parent, 0x2C))
        if env_seg and not self._env_ok(env_seg):
            raise DosError(E_BAD_ENVIRONMENT)
        full, _data = self.read_program(path)
        env = self.build_environment(self.environment_strings(env_seg), full)
        psp, start = self.load(path, tail, env, parent)
        for i, off in enumerate((6, 10)):
            fo, fs = self.mem.rw(block + off), self.mem.rw(block + off + 2)
            if fs or fo:
                self.mem.write(linear(psp, 0x5C + 16 * i), self.mem.read(linear(fs, fo), 16))
        caller_seg, caller_off = self._caller(r)
        base = linear(psp, 0)
        self.mem.ww(base + 0x0A, caller_off)
        self.mem.ww(base + 0x0C, caller_seg)
        pbase = linear(parent, 0)
        self.mem.ww(pbase + 0x2E, r.sp)
        self.mem.ww(pbase + 0x30, r.ss)
        self.mem.set_vector(0x22, caller_seg, caller_off)
        if mode == 0x01:
            cs, ip, ss, sp = start
            sp = (sp - 2) & 0xFFFF
            self.mem.ww(linear(ss, sp), 0)     # AX at entry, as DOS leaves it
            self.mem.ww(block + 0x0E, sp)
            self.mem.ww(block + 0x10, ss)
            self.mem.ww(block + 0x12, ip)
            self.mem.ww(block + 0x14, cs)
            self.current_psp = psp
            self.dta = (psp, 0x80)
            r.cf = False
            r.ax = 0
            return None
        self.enter_program(r, psp, start)
        return JUMPED

    def exec_from_shell(self, r, path, tail, env_strings, return_to):
        """Run a program as a child of the current PSP (the shell), the
        child returning to ``return_to`` (seg, off) with the shell's stack."""
        parent = self.current_psp
        full, _data = self.read_program(path)
        env = self.build_environment(env_strings, full)
        psp, start = self.load(path, tail, env, parent)
        sp = (r.sp - 6) & 0xFFFF
        self.mem.ww(linear(r.ss, sp), return_to[1])
        self.mem.ww(linear(r.ss, sp + 2), return_to[0])
        self.mem.ww(linear(r.ss, sp + 4), S.FLAGS_FIXED_ONES | S.F_IF)
        base = linear(psp, 0)
        self.mem.ww(base + 0x0A, return_to[1])
        self.mem.ww(base + 0x0C, return_to[0])
        pbase = linear(parent, 0)
        self.mem.ww(pbase + 0x2E, sp)
        self.mem.ww(pbase + 0x30, r.ss)
        self.mem.set_vector(0x22, *return_to)
        self.enter_program(r, psp, start)

    def _env_ok(self, env_seg):
        data = bytes(self.mem.read(linear(env_seg, 0), 32768))
        return b"\0\0" in data

    def _load_overlay(self, path, block):
        full, data = self.read_program(path)
        image = parse_program(data, full)
        seg = self.mem.rw(block)
        factor = self.mem.rw(block + 2)
        self.mem.write(linear(seg, 0), image.load)
        if image.kind == "exe":
            for rseg, off in image.relocations:
                addr = linear(seg + rseg, off)
                self.mem.ww(addr, (self.mem.rw(addr) + factor) & 0xFFFF)
        return None

    def f4c(self, r):
        return self.terminate(r, r.al)

    def f00(self, r):
        return self.terminate(r, 0)

    def f4d(self, r):
        r.ax = self.return_code
        self.return_code = 0

    def f50(self, r):
        self.current_psp = r.bx

    def f51(self, r):
        r.bx = self.current_psp

    f62 = f51

    def f59(self, r):
        code = self.last_error
        cls, action, locus = ERROR_CLASS.get(code, (0x0D if code else 0, 0x04 if code else 0,
                                                    0x01 if code else 0))
        r.ax = code
        r.bh, r.bl, r.ch = cls, action, locus

    # -- find ----------------------------------------------------------------
    def f4e(self, r):
        drive, parts = self.parse_path(self.dos_path(r.ds, r.dx), wildcards=True)
        if not parts:
            raise DosError(E_NO_MORE_FILES)
        hd = self.drives[drive]
        folder_parts, pattern = parts[:-1], parts[-1]
        hd.resolve_dir(folder_parts)
        key = (drive, tuple(folder_parts))
        if key in self.search_dirs:
            dir_id = self.search_dirs.index(key)
        else:
            self.search_dirs.append(key)
            dir_id = len(self.search_dirs) - 1
        dta = linear(*self.dta)
        self.mem.fill(dta, 21, 0)
        self.mem.wb(dta, ord(drive) - ord("A") + 1)
        self.mem.write(dta + 1, fcb_form(pattern).encode("latin-1"))
        self.mem.wb(dta + 12, r.cl)
        self.mem.ww(dta + 13, 0)
        self.mem.ww(dta + 15, dir_id)
        if not self._find_next(dta):
            raise DosError(E_FILE_NOT_FOUND if "?" not in fcb_form(pattern) else E_NO_MORE_FILES)

    def f4f(self, r):
        if not self._find_next(linear(*self.dta)):
            raise DosError(E_NO_MORE_FILES)

    def _find_next(self, dta):
        mem = self.mem
        dir_id = mem.rw(dta + 15)
        if dir_id >= len(self.search_dirs):
            return False
        drive, folder_parts = self.search_dirs[dir_id]
        pattern = bytes(mem.read(dta + 1, 11)).decode("latin-1")
        attr_mask = mem.rb(dta + 12)
        index = mem.rw(dta + 13)
        hd = self.drives.get(drive)
        if hd is None:
            return False
        try:
            folder = hd.resolve_dir(list(folder_parts))
            entries = hd.entries(folder)
        except DosError:
            return False
        listing = []
        if folder_parts:
            here = hd.folder_stat(folder)
            listing += [(".", here, True, None), ("..", here, True, None)]
        listing += [(e.dos, e.stat, e.is_dir, e) for e in entries]
        if attr_mask == 0x08:
            return False                       # volume labels: a host folder has none
        while index < len(listing):
            name, st, is_dir, entry = listing[index]
            index += 1
            if is_dir and not attr_mask & 0x10:
                continue
            if name in (".", ".."):
                if not all(p in "?." for p in pattern.strip()) and fcb_form(name) != pattern:
                    if pattern != fcb_form(name):
                        continue
            elif not matches(pattern, name):
                continue
            if st is None:
                continue
            attr = 0x10 if is_dir else 0x20
            if not is_dir and not hd.writable(folder, entry):
                attr |= 0x01
            tw, dw = dos_datetime(st.st_mtime)
            mem.ww(dta + 13, index)
            mem.wb(dta + 21, attr)
            mem.ww(dta + 22, tw)
            mem.ww(dta + 24, dw)
            mem.wd(dta + 26, 0 if is_dir else min(st.st_size, 0xFFFFFFFF))
            mem.write(dta + 30, (name.encode("latin-1") + b"\0").ljust(13, b"\0"))
            return True
        mem.ww(dta + 13, index)
        return False

    # -- rename, timestamps --------------------------------------------------
    def f56(self, r):
        d1, p1 = self.parse_path(self.dos_path(r.ds, r.dx))
        d2, p2 = self.parse_path(self.dos_path(r.es, r.di))
        if d1 != d2:
            raise DosError(E_NOT_SAME_DEVICE)
        if not p1 or not p2:
            raise DosError(E_ACCESS_DENIED)
        hd = self.drives[d1]
        f1, e1, n1 = hd.resolve(p1)
        f2, e2, n2 = hd.resolve(p2, must_exist=False)
        if e2 is not None or device_name(n1) or device_name(n2):
            raise DosError(E_ACCESS_DENIED)
        if e1.is_dir and p2[:len(p1)] == p1:
            raise DosError(E_ACCESS_DENIED)          # a folder into itself
        hd.rename(f1, e1, f2, n2)

    def f57(self, r):
        idx, entry = self.handle_entry(r.bx)
        if entry.kind != "file":
            r.cx = r.dx = 0
            return
        fd = self.fd(idx, entry)
        if r.al == 0:
            r.cx, r.dx = dos_datetime(os.fstat(fd).st_mtime)
        elif r.al == 1:
            try:
                ts = host_timestamp(r.cx, r.dx)
                os.utime(fd, (ts, ts))
            except (OSError, OverflowError, ValueError):
                raise DosError(E_ACCESS_DENIED) from None
        else:
            raise DosError(E_INVALID_FUNCTION)


FUNCTIONS = {}
for _name, _fn in list(vars(Int21Mixin).items()):
    if len(_name) == 3 and _name[0] == "f":
        try:
            FUNCTIONS[int(_name[1:], 16)] = _fn
        except ValueError:
            pass


