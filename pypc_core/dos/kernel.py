"""The built-in DOS: its boot, traps and state, with its parts as mixins --
``process.py`` (environments, PSPs, loading, termination), ``arena.py``
(the memory arena), ``console.py``, ``files.py`` (paths, the file table,
handles) and ``int21.py`` (the INT 21h functions); ``common.py`` holds the
layout and numbers they share.

Layout in guest memory (640 KiB machine):

* 0000:0000 IVT, 0040:0000 BIOS data (the BIOS's own);
* ``ROOT_PSP`` (0060h): the DOS's own PSP, parent of the first program,
  holding the standard handles (CON, CON, CON, AUX, PRN);
* ``FIRST_MCB`` (0070h) onwards: the memory arena, a chain of 16-byte
  memory control blocks ('M', last 'Z'; owner PSP, 0 = free, 8 = DOS;
  size in paragraphs; DOS 4-style 8-byte name) up to the top of RAM;
* EF00:0000 the DOS ROM page with the interrupt stubs (``rom.py``).

The DOS boots from the BIOS: it marks the BIOS's INT 19h entry with a trap,
so after POST, instead of reading a boot sector, ``boot`` sets up the
vectors and the arena and starts the program (or the COMMAND shell) as a
child of the root PSP.  Every INT 21h reaches ``on_trap`` through the DOS
ROM stub; a service that must wait for a key leaves IP on the trap and
halts with IF=1, as the BIOS does.  Time and date come from the BIOS tick
count (emulated time); nothing depends on the host clock except the
timestamps of host files.
"""

import os


from ..cpu import state as S
from ..cpu.registers import Registers
from ..firmware.memio import Mem, linear
from . import rom as dosrom
from .errors import (
    DosConfigError, DosError, DosStateError, LoadError, E_GENERAL_FAILURE,
)
from .hostfs import HostDrive
from .common import (
    DosConfig, FIRST_MCB, JFT_SIZE, MAX_SFT, OWNER_FREE, ROOT_PSP, SFT_KINDS,
    START_DATE, SftEntry, WAIT, _dos_parts, command_tail, log
)
from .arena import ArenaMixin
from .console import ConsoleMixin
from .files import FilesMixin
from .int21 import FUNCTIONS, Int21Mixin
from .process import ProcessMixin


class Dos(ProcessMixin, ArenaMixin, ConsoleMixin, FilesMixin, Int21Mixin):
    """The built-in DOS on ``machine`` (which runs the built-in BIOS)."""

    def __init__(self, machine, config):
        self.machine = machine
        self.config = config
        self.mem = Mem(machine)
        self.drives = {}
        for letter, folder in sorted(config.drives.items()):
            letter = letter.upper()
            if len(letter) != 1 or not "A" <= letter <= "Z":
                raise DosConfigError(f"drive {letter!r}: a drive is one letter A-Z")
            self.drives[letter] = HostDrive(folder)
        if not self.drives:
            raise DosConfigError("the built-in DOS needs at least one drive (--drive C=DIR)")
        self._rom = dosrom.build_dos_rom()
        self._traps = {dosrom.DOS_BASE + off: name for off, name in self._rom.traps.items()}
        self.console_out = bytearray()      # everything written to CON
        self.printer_out = bytearray()      # everything written to PRN
        self.unsupported = set()            # INT 21h functions seen and not provided
        self.shell = None
        self._files = {}                    # sft index -> host fd (not part of the state)
        self.tracer = None                  # a trace.DosTrace recording the calls, or None
        self._reset_state()

    # ------------------------------------------------------------------
    # install, boot and traps
    # ------------------------------------------------------------------
    def label(self, name):
        return self._rom.labels[name]

    @property
    def exited_address(self):
        """Linear address where the CPU idles once the first program ended."""
        return dosrom.DOS_BASE + self.label("exited")

    def install(self):
        m = self.machine
        m.memory.map_rom(dosrom.DOS_BASE, dosrom.rom_image(self._rom), owner="dos")
        for address in self._traps:
            m.memory.xflags[address] |= S.XF_TRAP
        self._boot_hook = linear(0xF000, m.bios.label("int19"))
        m.memory.xflags[self._boot_hook] |= S.XF_TRAP

    def on_trap(self, address):
        """Run the DOS service of the trap at ``address``; False if not ours."""
        regs = self.machine.cpu.regs
        r = Registers(regs)
        if address == self._boot_hook:
            self.boot(r)
            return True
        name = self._traps.get(address)
        if name is None:
            return False
        service = getattr(self, "_svc_" + name)
        # dos.trace: a recorder (trace.py) sees the calls; none costs this test
        ah = r.ah                           # (the function asked for, for a fault report)
        try:
            result = service(r) if self.tracer is None else self.tracer.serve(name, service, r)
        except Exception as exc:            # a fault of ours, never the guest's crash
            result = self.internal_error(name, r, exc, ah)
        if result is None:
            regs[S.IP] = (int(regs[S.IP]) + 1) & 0xFFFF
        elif result == WAIT:
            r.if_ = True
            self.machine.cpu.ctl[S.C_HALTED] = 1
        return True

    def internal_error(self, name, r, exc, ah):
        """A service raised: the call fails as DOS reports a failure
        (INT 21h: CF=1 and AX=1Fh "general failure" for functions 38h and
        up, AL=FFh for the FCB functions, AL=00h for the others; another
        service just returns) and a diagnostics line says what happened."""
        what = f"INT 21h function {ah:02X}h" if name == "int21" else f"DOS service {name}"
        self.machine.note("error", f"{what} failed inside pypc ({type(exc).__name__}: "
                          f"{exc}); the call fails with DOS error 1Fh", source="dos")
        log.warning("built-in DOS: %s failed", what, exc_info=True)
        if name == "int21":
            if ah >= 0x38:
                self.set_error(r, E_GENERAL_FAILURE)
            elif 0x0F <= ah <= 0x24 or 0x27 <= ah <= 0x29:
                self.last_error = E_GENERAL_FAILURE
                r.al = 0xFF
            else:
                r.al = 0x00
        return None

    def _reset_state(self):
        for fd in self._files.values():
            try:
                os.close(fd)
            except OSError:
                pass
        self._files = {}
        self.sft = []
        self.cur_drive = "C" if "C" in self.drives else sorted(self.drives)[0]
        self.cwd = {letter: [] for letter in self.drives}
        self.current_psp = ROOT_PSP
        self.dta = (ROOT_PSP, 0x80)
        self.break_flag = False
        self.verify = False
        self.last_error = 0
        self.return_code = 0
        self.exited = False
        self.exit_code = None
        self.entry_breakpoint = None
        self.date = START_DATE
        self.search_dirs = []
        self.pending_scan = None
        self.line = None                    # buffered line input in progress
        self.con_pending = b""              # CON input read by AH=3Fh, not yet returned
        self.strategy = 0
        self.booted = False
        self.started = None                 # (cs, ip) of the first program's entry

    def boot(self, r):
        """After POST: vectors, the arena, the first program or the shell."""
        self._reset_state()
        self.booted = True
        mem = self.mem
        seg = dosrom.DOS_SEGMENT
        lab = self.label
        for vec, name in ((0x20, "int20"), (0x21, "int21"), (0x22, "exited"),
                          (0x23, "int23"), (0x24, "int24"), (0x25, "int25"),
                          (0x26, "int25"), (0x27, "int27"), (0x28, "dummy_iret"),
                          (0x29, "int29"), (0x2A, "dummy_iret"), (0x2F, "dummy_iret")):
            mem.set_vector(vec, seg, lab(name))
        top = min(int(self.machine.ram_kb), 640) * 64
        self.write_mcb(FIRST_MCB, "Z", OWNER_FREE, top - FIRST_MCB - 1)
        for i, kind in enumerate(("CON", "AUX", "PRN")):
            self.sft.append(SftEntry(kind, name=kind))
        self.sft[0].refs = 3
        jft = bytes([0, 0, 0, 1, 2]) + b"\xff" * (JFT_SIZE - 5)
        self.make_psp(ROOT_PSP, ROOT_PSP + 0x10, ROOT_PSP, 0, b"", jft=jft,
                      terminate=(seg, lab("exited")))
        r.ss, r.sp = ROOT_PSP, 0x100
        r.ds = r.es = ROOT_PSP
        r.if_ = True
        try:
            if self.config.program:
                self._start_first(r)
            else:
                self.start_shell(r, batch=None)
        except (DosError, LoadError) as exc:
            code = exc.code
            msg = str(exc) if isinstance(exc, LoadError) else f"cannot start: DOS error {code:02X}h"
            self.con_write((f"pypc DOS: {msg}\r\n").encode("latin-1", "replace"))
            self.finish(0xFF)
            r.cs, r.ip = seg, lab("exited")

    def _start_first(self, r):
        program = self.config.program
        if program.upper().endswith(".BAT"):
            self.start_shell(r, batch=(program, list(self.config.args)))
            return
        tail = command_tail(self.config.args)
        env = self.build_environment(self.default_environment(), program)
        psp, start = self.load(program, tail, env, ROOT_PSP)
        self.mem.ww(linear(ROOT_PSP, 0x2E), r.sp)
        self.mem.ww(linear(ROOT_PSP, 0x30), r.ss)
        self.enter_program(r, psp, start)

    def enter_program(self, r, psp, start):
        cs, ip, ss, sp = start
        self.current_psp = psp
        self.dta = (psp, 0x80)
        r.cs, r.ip, r.ss, r.sp = cs, ip, ss, sp
        r.ds = r.es = psp
        r.ax, r.bx, r.cx, r.dx = 0, 0, 0x00FF, psp
        r.si, r.di, r.bp = ip, sp, 0x091C
        r.if_ = True
        if self.started is None:
            self.started = (cs, ip)
            if self.config.break_at_entry:
                self.entry_breakpoint = linear(cs, ip)
                self.machine.memory.xflags[self.entry_breakpoint] |= S.XF_BREAKPOINT

    def clear_entry_breakpoint(self):
        """Remove the breakpoint ``break_at_entry`` put on the entry point."""
        if self.entry_breakpoint is not None:
            self.machine.memory.xflags[self.entry_breakpoint] &= ~S.XF_BREAKPOINT & 0xFF
            self.entry_breakpoint = None

    def finish(self, code):
        self.exited = True
        self.exit_code = code & 0xFF

    # ------------------------------------------------------------------
    # state
    # ------------------------------------------------------------------
    def get_state(self):
        return {
            "sft": [e.as_dict() if e is not None else None for e in self.sft],
            "cur_drive": self.cur_drive, "cwd": {k: list(v) for k, v in self.cwd.items()},
            "current_psp": self.current_psp, "dta": self.dta, "break_flag": self.break_flag,
            "verify": self.verify, "last_error": self.last_error,
            "return_code": self.return_code, "exited": self.exited,
            "exit_code": self.exit_code, "date": self.date,
            "search_dirs": list(self.search_dirs), "pending_scan": self.pending_scan,
            "line": None if self.line is None else bytes(self.line),
            "con_pending": self.con_pending, "strategy": self.strategy,
            "booted": self.booted, "started": self.started,
            "shell": self.shell.get_state() if self.shell is not None else None,
        }

    def prepare_state(self, state):
        """Check a saved DOS state against this DOS and open its files again:
        each open file by its drive and DOS path, found inside the current
        mounts (never by a host path).  Returns what :meth:`set_state` puts
        in place; raises DosStateError (with every file it opened closed,
        nothing of the live DOS changed) when the state names a drive this
        DOS lacks, a folder or file that is not there, or is malformed."""
        if not isinstance(state, dict):
            raise DosStateError("the DOS state is not an object")
        saved = state.get("cwd")
        if not isinstance(saved, dict) or sorted(saved) != sorted(self.drives):
            theirs = ", ".join(f"{k}:" for k in sorted(saved)) if isinstance(saved, dict) else "?"
            raise DosStateError(f"the saved DOS has drives {theirs or 'none'}; this one has "
                                + ", ".join(f"{k}:" for k in sorted(self.drives)))
        if state.get("cur_drive") not in self.drives:
            raise DosStateError(f"the saved current drive {state.get('cur_drive')!r} is not "
                                f"a drive of this DOS")
        cwd = {}
        for letter, parts in saved.items():
            parts = _dos_parts(parts)
            if parts is None:
                raise DosStateError(f"the saved current folder of {letter}: is malformed")
            try:
                self.drives[letter].resolve_dir(parts)
            except DosError:
                raise DosStateError(f"the saved current folder {letter}:\\"
                                    + "\\".join(parts) + f" is not in {self.drives[letter].root}")
            cwd[letter] = parts
        search = []
        for item in state.get("search_dirs") or []:
            if not (isinstance(item, (list, tuple)) and len(item) == 2
                    and item[0] in self.drives and _dos_parts(item[1]) is not None):
                raise DosStateError("a saved directory search is malformed")
            search.append((item[0], tuple(_dos_parts(item[1]))))
        sft, files = [], {}
        live = {i: (e.drive, e.parts, e.mode) for i, e in enumerate(self.sft)
                if e is not None and e.kind == "file" and i in self._files}
        try:
            for i, d in enumerate(state.get("sft") or []):
                if d is None:
                    sft.append(None)
                    continue
                e = self._saved_entry(d)
                if e.kind == "file":
                    key = (e.drive, e.parts, e.mode)
                    if live.get(i) == key:
                        files[i] = os.dup(self._files[i])     # the same file: keep it
                        e.path = self.sft[i].path
                    else:
                        try:
                            files[i] = self._reopen(e)
                        except DosError as err:
                            raise DosStateError(
                                f"the saved open file {e.drive}:\\" + "\\".join(e.parts)
                                + f" cannot be opened again in {self.drives[e.drive].root} "
                                f"(DOS error {err.code:02X}h)") from None
                sft.append(e)
            if len(sft) > MAX_SFT:
                raise DosStateError(f"the saved DOS has {len(sft)} open files (at most "
                                    f"{MAX_SFT})")
        except BaseException:
            for fd in files.values():
                os.close(fd)
            raise
        return {"sft": sft, "files": files, "cwd": cwd, "search_dirs": search}

    def _saved_entry(self, d):
        if not isinstance(d, dict) or d.get("kind") not in SFT_KINDS:
            raise DosStateError("a saved open file is malformed")
        mode, refs, pos = d.get("mode"), d.get("refs"), d.get("pos")
        for v in (mode, refs, pos):
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise DosStateError("a saved open file is malformed")
        if mode > 2 or refs > 255 or pos > 0xFFFFFFFF or not isinstance(d.get("name"), str):
            raise DosStateError("a saved open file is malformed")
        parts = None
        if d["kind"] == "file":
            parts = _dos_parts(d.get("parts"))
            if not parts or d.get("drive") not in self.drives:
                raise DosStateError("a saved open file names no file on a drive of this DOS")
        e = SftEntry(d["kind"], None, None, mode, d["name"], d.get("drive"), parts)
        e.refs, e.pos = refs, pos
        return e

    def set_state(self, state, prepared=None):
        """Restore a saved state (``prepared``: what :meth:`prepare_state`
        returned for it; prepared here when not given)."""
        if prepared is None:
            prepared = self.prepare_state(state)
        for fd in self._files.values():
            try:
                os.close(fd)
            except OSError:
                pass
        self.sft = prepared["sft"]
        self._files = prepared["files"]
        self.cur_drive = state["cur_drive"]
        self.cwd = prepared["cwd"]
        self.current_psp = state["current_psp"]
        self.dta = tuple(state["dta"])
        for key in ("break_flag", "verify", "last_error", "return_code", "exited",
                    "exit_code", "pending_scan", "con_pending", "strategy", "booted"):
            setattr(self, key, state[key])
        self.date = tuple(state["date"])
        self.started = state["started"]
        self.search_dirs = list(prepared["search_dirs"])
        self.line = None if state["line"] is None else bytearray(state["line"])
        if state.get("shell") is not None:
            from .shell import Shell
            if self.shell is None:
                self.shell = Shell(self)
            self.shell.set_state(state["shell"])
        else:
            self.shell = None

    def discard_prepared(self, prepared):
        """Close the files a :meth:`prepare_state` opened and that were not used."""
        for fd in prepared["files"].values():
            try:
                os.close(fd)
            except OSError:
                pass


# ----------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------


__all__ = ["Dos", "DosConfig", "DosError", "LoadError", "FUNCTIONS"]
