"""The built-in COMMAND shell.

The shell is a process like any other (its own PSP, environment and stack
in the arena), whose code is one trap in the DOS ROM: each time the CPU
reaches it, :meth:`Shell.step` runs a piece of the shell in Python --
print the prompt, read a line (waiting for keys like INT 21h AH=0Ah), run a
built-in command or start a program as its child.  A program returns to the
trap, and the shell goes on with the next line.

Built-in commands: DIR, TYPE, CD/CHDIR, COPY, DEL/ERASE, ECHO, SET, EXIT,
REM, CLS, VER, MD/MKDIR, RD/RMDIR, and ``X:`` to change the drive.  Any
other word runs ``NAME.COM``, ``NAME.EXE`` or ``NAME.BAT`` from the current
folder or a folder of PATH.  Batch files run line by line with ``%0``-``%9``
replaced by their arguments and ``@`` / ECHO OFF hiding the lines.
Redirection, pipes, IF, GOTO, FOR and CALL are not provided.
"""

import os

from ..firmware.memio import linear
from . import rom as dosrom
from .errors import E_ACCESS_DENIED, DosError, LoadError
from .hostfs import device_name, fcb_form, matches

SHELL_PARAGRAPHS = 0x30          # PSP (10h) + a 512-byte stack
MAX_BATCH_BYTES = 1 << 20


class Shell:
    def __init__(self, dos):
        self.dos = dos
        self.psp = None
        self.env_seg = None
        self.echo = True
        self.batch = None              # {"lines", "index", "args"}
        self.need_prompt = True
        self.child_running = False
        self.errorlevel = 0
        self.exit_after_batch = False

    # -- life cycle ------------------------------------------------------------
    def start(self, r, batch):
        from .common import ENV_PARAGRAPHS, OWNER_DOS, ROOT_PSP
        dos = self.dos
        mem = dos.mem
        env_seg = dos.allocate(ENV_PARAGRAPHS, OWNER_DOS)
        psp = dos.allocate(SHELL_PARAGRAPHS, OWNER_DOS, "COMMAND")
        mem.ww(linear(env_seg - 1, 1), psp)
        mem.ww(linear(psp - 1, 1), psp)
        self.psp, self.env_seg = psp, env_seg
        self.write_env(dos.default_environment())
        jft = dos.inherit_jft(ROOT_PSP)
        dos.make_psp(psp, psp + SHELL_PARAGRAPHS, ROOT_PSP, env_seg, b"", jft=jft,
                     terminate=(dosrom.DOS_SEGMENT, dos.label("exited")))
        mem.ww(linear(ROOT_PSP, 0x2E), r.sp)
        mem.ww(linear(ROOT_PSP, 0x30), r.ss)
        dos.current_psp = psp
        dos.dta = (psp, 0x80)
        r.ss, r.sp = psp, SHELL_PARAGRAPHS * 16 - 2
        r.ds = r.es = psp
        r.cs, r.ip = dosrom.DOS_SEGMENT, dos.label("shell")
        if batch is not None:
            path, args = batch
            self.exit_after_batch = dos.config.exit_after_batch
            self.start_batch(path, args)
        return "jumped"

    # -- environment -------------------------------------------------------------
    def env_strings(self):
        return self.dos.environment_strings(self.env_seg)

    def write_env(self, strings):
        from .common import ENV_PARAGRAPHS
        data = b"".join(s.encode("latin-1", "replace") + b"\0" for s in strings) + b"\0"
        data += b"\x01\x00C:\\COMMAND.COM\0"
        if len(data) > ENV_PARAGRAPHS * 16:
            return False
        self.dos.mem.fill(linear(self.env_seg, 0), ENV_PARAGRAPHS * 16, 0)
        self.dos.mem.write(linear(self.env_seg, 0), data)
        return True

    def getenv(self, name):
        for s in self.env_strings():
            key, _eq, value = s.partition("=")
            if key.upper() == name.upper():
                return value
        return None

    # -- output -----------------------------------------------------------------
    def out(self, text):
        self.dos.con_write(text.replace("\n", "\r\n").encode("latin-1", "replace"))

    def prompt(self):
        d = self.dos.cur_drive
        return f"{d}:\\" + "\\".join(self.dos.cwd[d]) + ">"

    # -- the trap ----------------------------------------------------------------
    def step(self, r):
        dos = self.dos
        if self.child_running:
            self.child_running = False
            self.errorlevel = dos.return_code & 0xFF
            dos.current_psp = self.psp
            if not self.batch and self._cursor_col():
                self.out("\n")
        if self.batch is not None:
            lines, index = self.batch["lines"], self.batch["index"]
            if index >= len(lines):
                self.batch = None
                self.need_prompt = True
                if self.exit_after_batch:
                    return dos.terminate(r, self.errorlevel)
                return None
            self.batch["index"] += 1
            line = self.expand(lines[index])
            quiet = line.startswith("@")
            line = line.lstrip("@")
            if self.echo and not quiet and line.strip():
                self.out(self.prompt() + line + "\n")
            return self.execute(r, line)
        if self.need_prompt:
            self.out(self.prompt())
            self.need_prompt = False
        line = dos.line_input(127)
        if line is None:
            return "wait"
        self.dos.con_write(b"\n")               # (the line input echoed the CR)
        self.need_prompt = True
        if line == b"\x03":
            return None
        return self.execute(r, line.decode("latin-1"))

    def _cursor_col(self):
        video = self.dos.machine.bios.video
        return video.cursor(video.active_page)[1]

    def expand(self, line):
        args = self.batch["args"]
        out, i = [], 0
        while i < len(line):
            ch = line[i]
            if ch == "%" and i + 1 < len(line):
                nxt = line[i + 1]
                if nxt.isdigit():
                    n = int(nxt)
                    out.append(args[n] if n < len(args) else "")
                    i += 2
                    continue
                if nxt == "%":
                    out.append("%")
                    i += 2
                    continue
                end = line.find("%", i + 1)
                if end > i + 1:
                    out.append(self.getenv(line[i + 1:end]) or "")
                    i = end + 1
                    continue
            out.append(ch)
            i += 1
        return "".join(out)

    # -- commands -------------------------------------------------------------------
    def execute(self, r, line):
        line = line.strip()
        if not line:
            return None
        word, rest = split_command(line)
        upper = word.upper()
        if len(upper) == 2 and upper[1] == ":" and not rest:
            if upper[0] in self.dos.drives:
                self.dos.cur_drive = upper[0]
            else:
                self.out("Invalid drive specification\n")
            return None
        handler = getattr(self, "cmd_" + upper.lower(), None) if upper.isalpha() else None
        if upper in ("CHDIR",):
            handler = self.cmd_cd
        elif upper == "ERASE":
            handler = self.cmd_del
        elif upper == "MKDIR":
            handler = self.cmd_md
        elif upper == "RMDIR":
            handler = self.cmd_rd
        elif upper.startswith("ECHO."):
            self.out(upper[5:] + rest + "\n")
            return None
        if handler is not None:
            try:
                return handler(r, rest.strip())
            except DosError as err:
                self.out(error_text(err.code) + "\n")
                return None
        return self.run_program(r, word, rest)

    def cmd_rem(self, r, rest):
        return None

    def cmd_echo(self, r, rest):
        if not rest:
            self.out(f"ECHO is {'on' if self.echo else 'off'}\n")
        elif rest.upper() in ("ON", "OFF"):
            self.echo = rest.upper() == "ON"
        else:
            self.out(rest + "\n")

    def cmd_set(self, r, rest):
        strings = self.env_strings()
        if not rest:
            for s in strings:
                self.out(s + "\n")
            return None
        name, eq, value = rest.partition("=")
        if not eq or not name.strip():
            self.out("Syntax error\n")
            return None
        name = name.strip().upper()
        strings = [s for s in strings if s.partition("=")[0].upper() != name]
        if value:
            strings.append(f"{name}={value}")
        if not self.write_env(strings):
            self.out("Out of environment space\n")

    def cmd_exit(self, r, rest):
        if self.batch is not None:
            self.batch = None
        return self.dos.terminate(r, self.errorlevel if self.exit_after_batch else 0)

    def cmd_cls(self, r, rest):
        video = self.dos.machine.bios.video
        video.set_mode(video.mode)

    def cmd_ver(self, r, rest):
        from .common import DOS_VERSION
        self.out(f"\npypc built-in DOS version {DOS_VERSION[0]}.{DOS_VERSION[1]:02d}\n\n")

    def cmd_cd(self, r, rest):
        dos = self.dos
        if not rest:
            self.out(self.prompt()[:-1] + "\n")
            return None
        if len(rest) == 2 and rest[1] == ":":
            letter = rest[0].upper()
            if letter not in dos.drives:
                self.out("Invalid drive specification\n")
                return None
            self.out(f"{letter}:\\" + "\\".join(dos.cwd[letter]) + "\n")
            return None
        try:
            drive, parts = dos.parse_path(rest)
            dos.drives[drive].resolve_dir(parts)
        except DosError:
            self.out("Invalid directory\n")
            return None
        dos.cwd[drive] = parts

    def cmd_md(self, r, rest):
        drive, parts = self.dos.parse_path(rest)
        hd = self.dos.drives[drive]
        folder, entry, name = hd.resolve(parts, must_exist=False)
        if entry is not None or not parts:
            self.out("Unable to create directory\n")
            return None
        try:
            hd.mkdir(folder, name)
        except DosError:
            self.out("Unable to create directory\n")

    def cmd_rd(self, r, rest):
        drive, parts = self.dos.parse_path(rest)
        hd = self.dos.drives[drive]
        folder, entry, name = hd.resolve(parts, must_exist=False)
        if entry is None or not entry.is_dir or self.dos.cwd[drive][:len(parts)] == parts:
            self.out("Invalid path, not directory,\nor directory not empty\n")
            return None
        try:
            hd.rmdir(folder, entry)
        except DosError:
            self.out("Invalid path, not directory,\nor directory not empty\n")

    def _matching(self, spec):
        """(drive, folder parts, host folder, [Entry]) of the files ``spec`` names
        (a folder means all its files)."""
        dos = self.dos
        drive, parts = dos.parse_path(spec or ".", wildcards=True)
        hd = dos.drives[drive]
        pattern = "???????????"
        folder_parts = parts
        try:
            folder = hd.resolve_dir(parts)
        except DosError:
            if not parts:
                raise
            folder_parts, pattern = parts[:-1], fcb_form(parts[-1])
            folder = hd.resolve_dir(folder_parts)
        entries = [e for e in hd.entries(folder) if matches(pattern, e.dos)]
        return drive, folder_parts, folder, entries

    def cmd_dir(self, r, rest):
        dos = self.dos
        try:
            drive, folder_parts, folder, entries = self._matching(rest)
        except DosError:
            self.out("File not found\n")
            return None
        from .common import dos_datetime
        self.out(f"\n Volume in drive {drive} has no label\n")
        self.out(f" Directory of {drive}:\\" + "\\".join(folder_parts) + "\n\n")
        files = total = 0
        for e in entries:
            st = e.stat
            base, _dot, ext = e.dos.partition(".")
            tw, dw = dos_datetime(st.st_mtime)
            date = f"{(dw >> 5) & 15:2d}-{dw & 31:02d}-{((dw >> 9) + 80) % 100:02d}"
            time = f"{tw >> 11:2d}:{(tw >> 5) & 63:02d}"
            size = "<DIR>    " if e.is_dir else f"{st.st_size:9d}"
            self.out(f"{base:<8} {ext:<3} {size}  {date}  {time}\n")
            files += 1
            total += 0 if e.is_dir else st.st_size
        if not entries:
            self.out("File not found\n")
        _spc, free, _bps, _total = dos.drives[drive].free_space()
        self.out(f"{files:9d} File(s) {free * _spc * _bps:12d} bytes free\n")

    def cmd_type(self, r, rest):
        if not rest:
            self.out("Required parameter missing\n")
            return None
        dos = self.dos
        drive, parts = dos.parse_path(rest)
        if parts and device_name(parts[-1]):
            return None
        hd = dos.drives[drive]
        folder, entry, name = hd.resolve(parts)
        if entry.is_dir:
            self.out("Access denied\n")
            return None
        data = hd.read_file(folder, entry, MAX_BATCH_BYTES)
        end = data.find(b"\x1a")
        dos.con_write(data if end < 0 else data[:end])

    def cmd_del(self, r, rest):
        if not rest:
            self.out("Required parameter missing\n")
            return None
        _drive, _parts, folder, entries = self._matching(rest)
        files = [e for e in entries if not e.is_dir]
        if not files:
            self.out("File not found\n")
        hd = self.dos.drives[_drive]
        for e in files:
            try:
                hd.unlink(folder, e)
            except DosError:
                self.out(f"Access denied - {e.dos}\n")

    def cmd_copy(self, r, rest):
        args = rest.split()
        if not args:
            self.out("Required parameter missing\n")
            return None
        src = args[0]
        dst = args[1] if len(args) > 1 else "."
        dos = self.dos
        sdrive, _sparts, sfolder, entries = self._matching(src)
        files = [e for e in entries if not e.is_dir]
        if not files:
            self.out("File not found\n")
            self.out("        0 file(s) copied\n")
            return None
        ddrive, dparts = dos.parse_path(dst, wildcards=True)
        dhd = dos.drives[ddrive]
        try:
            dfolder = dhd.resolve_dir(dparts)
            target_name = None
        except DosError:
            if not dparts:
                raise
            dfolder = dhd.resolve_dir(dparts[:-1])
            target_name = dparts[-1]
        shd = dos.drives[sdrive]
        copied = 0
        for e in files:
            name = e.dos if target_name is None or "?" in fcb_form(target_name) else target_name
            if device_name(name):
                self.out("Access denied\n")
                continue
            existing = dhd.lookup(dfolder, name)
            if existing is not None and existing.is_dir:
                self.out("Access denied\n")
                continue
            if existing is not None and same_file(shd.stat(sfolder, e),
                                                  dhd.stat(dfolder, existing)):
                self.out("File cannot be copied onto itself\n")
                continue
            try:
                self._copy_one(shd, sfolder, e, dhd, dfolder, existing, name)
            except DosError as err:
                self.out(error_text(err.code) + "\n")
                continue
            self.out(e.dos + "\n")
            copied += 1
        self.out(f"{copied:9d} file(s) copied\n")

    @staticmethod
    def _copy_one(shd, sfolder, entry, dhd, dfolder, existing, name):
        """Copy one file through the drives' own operations (no link is
        followed at either end; a name the guest cannot see is refused)."""
        src = shd.open_file(sfolder, entry, 0)
        try:
            dst = dhd.create_file(dfolder, existing, name)
            try:
                while True:
                    block = os.read(src, 1 << 16)
                    if not block:
                        break
                    view = memoryview(block)
                    while view:
                        view = view[os.write(dst, view):]
            except OSError:
                raise DosError(E_ACCESS_DENIED) from None
            finally:
                os.close(dst)
        finally:
            os.close(src)

    # -- programs ------------------------------------------------------------------
    def find_program(self, word):
        dos = self.dos
        has_ext = "." in word.replace("\\", "/").rsplit("/", 1)[-1]
        candidates = [word] if has_ext else [word + ext for ext in (".COM", ".EXE", ".BAT")]
        folders = [""]
        if "\\" not in word and ":" not in word:
            path = self.getenv("PATH") or ""
            folders += [p.rstrip("\\") + "\\" for p in path.split(";") if p]
        for folder in folders:
            for cand in candidates:
                try:
                    drive, parts = dos.parse_path(folder + cand)
                    folder_host, entry, name = dos.drives[drive].resolve(parts)
                except DosError:
                    continue
                if entry is not None and not entry.is_dir:
                    return f"{drive}:\\" + "\\".join(parts)
        return None

    def run_program(self, r, word, rest):
        path = self.find_program(word)
        if path is None or not path.upper().endswith((".COM", ".EXE", ".BAT")):
            self.out("Bad command or file name\n")
            return None
        if path.upper().endswith(".BAT"):
            self.start_batch(path, rest.split())
            return None
        dos = self.dos
        tail = (" " + rest.strip()).encode("latin-1", "replace") if rest.strip() else b""
        if rest.startswith((" ", "/")) and rest.strip():
            tail = rest.encode("latin-1", "replace")
        try:
            dos.exec_from_shell(r, path, tail[:126], self.env_strings(),
                                (dosrom.DOS_SEGMENT, dos.label("shell")))
        except LoadError as err:
            self.out(f"{err}\n")
            return None
        except DosError as err:
            self.out(("Program too big to fit in memory" if err.code == 8
                      else error_text(err.code)) + "\n")
            return None
        self.child_running = True
        return "jumped"

    def start_batch(self, path, args):
        dos = self.dos
        drive, parts = dos.parse_path(path)
        hd = dos.drives[drive]
        folder, entry, name = hd.resolve(parts)
        text = hd.read_file(folder, entry, MAX_BATCH_BYTES).split(b"\x1a")[0].decode("latin-1")
        lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        self.batch = {"lines": lines, "index": 0, "args": [path] + list(args)}

    # -- state ----------------------------------------------------------------------
    def get_state(self):
        return {"psp": self.psp, "env_seg": self.env_seg, "echo": self.echo,
                "batch": None if self.batch is None else
                {"lines": list(self.batch["lines"]), "index": self.batch["index"],
                 "args": list(self.batch["args"])},
                "need_prompt": self.need_prompt, "child_running": self.child_running,
                "errorlevel": self.errorlevel, "exit_after_batch": self.exit_after_batch}

    _STATE_KEYS = ("psp", "env_seg", "echo", "batch", "need_prompt", "child_running",
                   "errorlevel", "exit_after_batch")

    def set_state(self, state):
        for key in self._STATE_KEYS:          # only the shell's own fields
            setattr(self, key, state[key])


def same_file(a, b):
    """Two ``stat`` results are of one host file (two drives may mount one folder)."""
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def split_command(line):
    """(command word, rest of the line): ``DIR/W`` and ``CD..`` split too."""
    i = 0
    while i < len(line) and line[i] not in " \t/;,=+" and not (i > 0 and line[i] in ".\\"
                                                              and line[:i].upper() in ("CD", "ECHO")):
        i += 1
    if line[:i].upper() == "ECHO" and i < len(line) and line[i] == ".":
        return line[:i + 1], line[i + 1:]
    return line[:i], line[i:].lstrip(" \t") if line[i:i + 1] in (" ", "\t") else line[i:]


def error_text(code):
    return {2: "File not found", 3: "Path not found", 4: "Too many open files",
            5: "Access denied", 8: "Insufficient memory", 15: "Invalid drive specification",
            11: "Invalid format"}.get(code, f"DOS error {code}")
