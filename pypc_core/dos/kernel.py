"""The built-in DOS: process management, memory, INT 20h/21h/27h services.

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

import logging
import os

import attrs
import numpy as np

from ..cpu import state as S
from ..cpu.registers import Registers
from ..firmware.memio import BDA_TICKS, BDA_TICKS_ROLLOVER, Mem, linear
from .. import symbols
from . import rom as dosrom
from .errors import (
    DosConfigError, DosError, DosStateError, LoadError, ERROR_CLASS,
    E_ACCESS_DENIED, E_BAD_ENVIRONMENT, E_CURRENT_DIRECTORY,
    E_FILE_EXISTS, E_FILE_NOT_FOUND, E_INVALID_ACCESS, E_INVALID_BLOCK,
    E_INVALID_DRIVE, E_INVALID_FUNCTION, E_INVALID_HANDLE, E_MCB_DESTROYED,
    E_NO_MEMORY, E_NO_MORE_FILES, E_NOT_SAME_DEVICE, E_PATH_NOT_FOUND,
    E_GENERAL_FAILURE, E_TOO_MANY_FILES,
)
from .exe import parse as parse_program
from .hostfs import HostDrive, device_name, fcb_form, is_valid_83, matches

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


class Dos:
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
    # environment and PSP
    # ------------------------------------------------------------------
    def default_environment(self):
        first = self.cur_drive
        return [f"COMSPEC={first}:\\COMMAND.COM", f"PATH={first}:\\", "PROMPT=$P$G"]

    def build_environment(self, strings, program_path):
        """Bytes of an environment block: the strings, an empty one, the
        count word 1 and the program's full path."""
        body = b"".join(s.encode("latin-1", "replace") + b"\0" for s in strings)
        if not strings:
            body = b"\0"
        return body + b"\0" + b"\x01\x00" + program_path.encode("latin-1") + b"\0"

    def environment_strings(self, env_seg):
        if not env_seg:
            return []
        out, addr = [], linear(env_seg, 0)
        for _ in range(64):
            raw = self.read_asciiz(addr, 1024)
            if not raw:
                break
            out.append(raw.decode("latin-1"))
            addr += len(raw) + 1
        return out

    def make_psp(self, seg, end_seg, parent, env_seg, tail, jft=None, terminate=None,
                 fcbs=(b"", b"")):
        mem = self.mem
        base = linear(seg, 0)
        mem.fill(base, 0x100, 0)
        mem.write(base, b"\xcd\x20")
        mem.ww(base + 2, end_seg & 0xFFFF)
        mem.wb(base + 5, 0x9A)                                  # CALL FAR to the CP/M entry
        mem.ww(base + 6, self.label("call5"))
        mem.ww(base + 8, dosrom.DOS_SEGMENT)
        term = terminate or self.mem.vector(0x22)
        mem.ww(base + 0x0A, term[1])
        mem.ww(base + 0x0C, term[0])
        for off, vec in ((0x0E, 0x23), (0x12, 0x24)):
            vseg, voff = mem.vector(vec)
            mem.ww(base + off, voff)
            mem.ww(base + off + 2, vseg)
        mem.ww(base + 0x16, parent)
        mem.write(base + 0x18, jft if jft is not None else b"\xff" * JFT_SIZE)
        mem.ww(base + 0x2C, env_seg)
        mem.ww(base + 0x32, JFT_SIZE)
        mem.ww(base + 0x34, 0x18)
        mem.ww(base + 0x36, seg)
        mem.ww(base + 0x38, 0xFFFF)
        mem.ww(base + 0x3A, 0xFFFF)
        mem.write(base + 0x50, b"\xcd\x21\xcb")
        for i, off in enumerate((0x5C, 0x6C)):
            mem.write(base + off, fcbs[i] or (b"\0" + b" " * 11))
        tail = tail[:126]
        mem.wb(base + 0x80, len(tail))
        mem.write(base + 0x81, tail + b"\r")

    def jft(self, psp=None):
        psp = self.current_psp if psp is None else psp
        size = self.mem.rw(linear(psp, 0x32)) or JFT_SIZE
        off, seg = self.mem.rw(linear(psp, 0x34)), self.mem.rw(linear(psp, 0x36))
        if seg == 0:
            seg, off = psp, 0x18
        return linear(seg, off), min(size, 255)

    # ------------------------------------------------------------------
    # memory arena
    # ------------------------------------------------------------------
    def write_mcb(self, seg, sig, owner, size, name=None):
        base = linear(seg, 0)
        mem = self.mem
        mem.wb(base, ord(sig))
        mem.ww(base + 1, owner)
        mem.ww(base + 3, size)
        mem.fill(base + 5, 3, 0)
        mem.write(base + 8, (name or "").encode("latin-1")[:8].ljust(8, b"\0"))

    def chain(self):
        """[(mcb segment, signature, owner, size, name)]; DosError 7 if the
        chain is broken."""
        out = []
        seg = FIRST_MCB
        top = min(int(self.machine.ram_kb), 640) * 64
        for _ in range(0x10000):
            base = linear(seg, 0)
            sig = chr(self.mem.rb(base))
            if sig not in "MZ":
                raise DosError(E_MCB_DESTROYED)
            owner = self.mem.rw(base + 1)
            size = self.mem.rw(base + 3)
            name = bytes(self.mem.read(base + 8, 8)).split(b"\0")[0].decode("latin-1", "replace")
            out.append((seg, sig, owner, size, name))
            if sig == "Z":
                return out
            seg = seg + size + 1
            if seg >= top:
                raise DosError(E_MCB_DESTROYED)
        raise DosError(E_MCB_DESTROYED)

    def _merge_free(self):
        blocks = self.chain()
        i = 0
        while i < len(blocks) - 1:
            seg, sig, owner, size, name = blocks[i]
            nseg, nsig, nowner, nsize, _ = blocks[i + 1]
            if owner == OWNER_FREE and nowner == OWNER_FREE:
                size = size + nsize + 1
                self.write_mcb(seg, nsig, OWNER_FREE, size)
                blocks[i] = (seg, nsig, OWNER_FREE, size, "")
                del blocks[i + 1]
            else:
                i += 1

    def largest_free(self):
        self._merge_free()
        return max([size for _s, _g, owner, size, _n in self.chain() if owner == OWNER_FREE],
                   default=0)

    def allocate(self, paras, owner, name=None):
        """Segment of a new block (first fit, or the strategy set by AH=58h);
        DosError(8) with ``largest`` set when nothing fits."""
        self._merge_free()
        fits = [b for b in self.chain() if b[2] == OWNER_FREE and b[3] >= paras]
        if not fits:
            err = DosError(E_NO_MEMORY)
            err.largest = self.largest_free()
            raise err
        strategy = self.strategy & 3
        if strategy == 1:
            block = min(fits, key=lambda b: b[3])
        elif strategy == 2:
            block = fits[-1]
        else:
            block = fits[0]
        seg, sig, _owner, size, _name = block
        if strategy == 2 and size > paras:
            # last fit: take the top of the block
            self.write_mcb(seg, "M", OWNER_FREE, size - paras - 1)
            new = seg + size - paras
            self.write_mcb(new, sig, owner, paras, name)
            return new + 1
        if size > paras:
            self.write_mcb(seg + paras + 1, sig, OWNER_FREE, size - paras - 1)
            sig = "M"
        self.write_mcb(seg, sig, owner, paras, name)
        return seg + 1

    def _block(self, seg):
        for block in self.chain():
            if block[0] + 1 == seg:
                return block
        raise DosError(E_INVALID_BLOCK)

    def free(self, seg):
        mcb, sig, owner, size, _name = self._block(seg)
        if owner == OWNER_FREE:
            raise DosError(E_INVALID_BLOCK)
        self.write_mcb(mcb, sig, OWNER_FREE, size)
        self._merge_free()

    def resize(self, seg, paras):
        """Grow or shrink a block; DosError(8) with ``largest`` if it cannot grow."""
        self._merge_free()
        blocks = self.chain()
        for i, (mcb, sig, owner, size, name) in enumerate(blocks):
            if mcb + 1 == seg:
                break
        else:
            raise DosError(E_INVALID_BLOCK)
        if owner == OWNER_FREE:
            raise DosError(E_INVALID_BLOCK)
        avail = size
        nxt = blocks[i + 1] if i + 1 < len(blocks) else None
        if nxt is not None and nxt[2] == OWNER_FREE:
            avail = size + nxt[3] + 1
        if paras > avail:
            err = DosError(E_NO_MEMORY)
            err.largest = avail
            raise err
        end_sig = nxt[1] if (nxt is not None and nxt[2] == OWNER_FREE) else sig
        keep_name = bytes(self.mem.read(linear(mcb, 8), 8))
        if nxt is not None and nxt[2] == OWNER_FREE:
            total = avail
        else:
            total = size
        if paras < total:
            self.write_mcb(mcb, "M", owner, paras)
            self.write_mcb(mcb + paras + 1, end_sig, OWNER_FREE, total - paras - 1)
        else:
            self.write_mcb(mcb, end_sig, owner, paras)
        self.mem.write(linear(mcb, 8), keep_name)
        self._merge_free()

    def free_owned(self, psp):
        for mcb, sig, owner, size, _name in self.chain():
            if owner == psp:
                self.write_mcb(mcb, sig, OWNER_FREE, size)
        self._merge_free()

    def memory_map(self):
        """The MCB chain as dicts: segment (of the block), size (paragraphs),
        owner (PSP segment; 0 free, 8 DOS), name."""
        return [{"mcb": mcb, "segment": mcb + 1, "size": size, "owner": owner,
                 "name": name if owner not in (OWNER_FREE,) else "",
                 "last": sig == "Z"}
                for mcb, sig, owner, size, name in self.chain()]

    # ------------------------------------------------------------------
    # loading programs
    # ------------------------------------------------------------------
    def read_program(self, path):
        """(full DOS path, bytes) of a program file; DosError if missing."""
        drive, parts = self.parse_path(path)
        if not parts or device_name(parts[-1]):
            raise DosError(E_FILE_NOT_FOUND)
        folder, entry, name = self.drives[drive].resolve(parts)
        if entry.is_dir:
            raise DosError(E_ACCESS_DENIED)
        data = self.drives[drive].read_file(folder, entry, 0xA0001)
        return f"{drive}:\\" + "\\".join(parts), data

    def load(self, path, tail, env_bytes, parent, jft=None):
        """Load a program as a child of ``parent``: returns (psp, (cs, ip, ss, sp)).
        Nothing stays allocated when it fails."""
        full, data = self.read_program(path)
        image = parse_program(data, full)
        name = full.rsplit("\\", 1)[-1].split(".")[0]
        allocated = []
        try:
            env_seg = self.allocate((len(env_bytes) + 15) // 16, OWNER_DOS)
            allocated.append(env_seg)
            self.mem.write(linear(env_seg, 0), env_bytes)
            largest = self.largest_free()
            if image.kind == "com":
                need = (len(image.load) + 0x100 + 0x100 + 15) // 16
                if largest < need:
                    raise DosError(E_NO_MEMORY)
                paras = largest
            else:
                need = 0x10 + image.load_paragraphs + image.min_extra
                want = min(0xFFFF, 0x10 + image.load_paragraphs + image.max_extra)
                if largest < need:
                    raise DosError(E_NO_MEMORY)
                paras = min(largest, want)
            psp = self.allocate(paras, OWNER_DOS)
            allocated.append(psp)
        except DosError:
            for seg in allocated:
                self.free(seg)
            raise
        self.mem.ww(linear(env_seg - 1, 1), psp)
        self.mem.ww(linear(psp - 1, 1), psp)
        self.mem.write(linear(psp - 1, 8), name.encode("latin-1")[:8].ljust(8, b"\0"))
        if jft is None:
            jft = self.inherit_jft(parent)
        self.make_psp(psp, psp + paras, parent, env_seg, tail, jft=jft,
                      fcbs=fcbs_for_tail(tail))
        if image.kind == "com":
            self.mem.write(linear(psp, 0x100), image.load)
            top = 0xFFFE if paras >= 0x1000 else paras * 16 - 2
            self.mem.ww(linear(psp, top), 0)
            self._program_symbols(full, psp)
            return psp, (psp, 0x100, psp, top)
        start = psp + 0x10
        self.mem.write(linear(start, 0), image.load)
        for seg, off in image.relocations:
            addr = linear(start + seg, off)
            self.mem.ww(addr, (self.mem.rw(addr) + start) & 0xFFFF)
        self._program_symbols(full, start)
        return psp, ((start + image.cs) & 0xFFFF, image.ip, (start + image.ss) & 0xFFFF, image.sp)

    def _program_symbols(self, full, load_segment):
        """A program was loaded at ``load_segment`` (the PSP for a .COM,
        PSP+10h for an .EXE): relocate the ``--symbols`` maps that wait for
        it, and load ``NAME.MAP`` from beside it when there is one
        (pypc_core.symbols; a map that does not parse is a warning note,
        the program runs on).  Host-side only: the guest sees nothing."""
        self.program_load_segment = load_segment      # symbols.load's default base
        table = getattr(self.machine, "symbols", None)
        if table is None:
            return
        table.program_loaded(load_segment)
        map_path = full.rsplit(".", 1)[0] + ".MAP"
        try:
            map_path, data = self.read_program(map_path)
        except (DosError, LoadError, OSError):
            return                      # no map beside the program
        try:
            mapfile = symbols.parse_map(symbols.decode_map(bytes(data), map_path), map_path)
        except symbols.SymbolError as exc:
            self.machine.note("warning", f"symbols not loaded: {exc}", source="dos")
            return
        if table.holds(mapfile, load_segment):
            return                      # given with --symbols too: loaded once
        table.add(mapfile, load_segment, key="dos:" + map_path.upper())
        self.machine.note("info", f"{len(mapfile.symbols)} symbols from {map_path} at "
                                  f"{load_segment:04X}h", source="dos")

    def inherit_jft(self, parent):
        addr, size = self.jft(parent)
        out = bytearray(b"\xff" * JFT_SIZE)
        for i in range(min(size, JFT_SIZE)):
            idx = self.mem.rb(addr + i)
            if idx != 0xFF and idx < len(self.sft) and self.sft[idx] is not None:
                self.sft[idx].refs += 1
                out[i] = idx
        return bytes(out)

    # ------------------------------------------------------------------
    # termination
    # ------------------------------------------------------------------
    def terminate(self, r, code, kind=TERM_NORMAL, keep_paras=None):
        psp = self.current_psp
        mem = self.mem
        base = linear(psp, 0)
        parent = mem.rw(base + 0x16)
        if kind == TERM_TSR:
            try:
                self.resize(psp, max(keep_paras, 0x10))
            except DosError:
                pass
        else:
            addr, size = self.jft(psp)
            for i in range(size):
                idx = mem.rb(addr + i)
                if idx != 0xFF:
                    self.release(idx)
                    mem.wb(addr + i, 0xFF)
            if psp != ROOT_PSP:
                try:
                    self.free_owned(psp)
                except DosError:
                    self.machine.note("error", f"the program at PSP {psp:04X}h ended with "
                                      f"its memory control blocks destroyed; its memory "
                                      f"is not freed", source="dos")
        for off, vec in ((0x0A, 0x22), (0x0E, 0x23), (0x12, 0x24)):
            mem.set_vector(vec, mem.rw(base + off + 2), mem.rw(base + off))
        self.return_code = (kind << 8) | (code & 0xFF)
        self.line = None
        self.pending_scan = None
        term_seg, term_off = mem.rw(base + 0x0C), mem.rw(base + 0x0A)
        if psp == ROOT_PSP or parent == psp:
            parent = ROOT_PSP
        self.current_psp = parent
        self.dta = (parent, 0x80)
        pbase = linear(parent, 0)
        r.ss, r.sp = mem.rw(pbase + 0x30), mem.rw(pbase + 0x2E)
        if parent == ROOT_PSP and (term_seg, term_off) == (dosrom.DOS_SEGMENT, self.label("exited")):
            self.finish(code)
        flags = mem.rw(linear(r.ss, r.sp + 4)) if parent != ROOT_PSP else r.flags
        if parent != ROOT_PSP:
            r.sp = (r.sp + 6) & 0xFFFF
        r.flags = (flags & ~S.F_CF) | S.F_IF
        r.cs, r.ip = term_seg, term_off
        r.ds = r.es = parent
        return JUMPED

    def _svc_int20(self, r):
        return self.terminate(r, 0)

    def _svc_int27(self, r):
        return self.terminate(r, 0, TERM_TSR, (r.dx + 15) // 16)

    def _svc_int23(self, r):
        return self.terminate(r, 0, TERM_CTRL_C)

    def _svc_int29(self, r):
        self.con_write(bytes([r.al]))

    def _svc_shell(self, r):
        return self.shell.step(r)

    def start_shell(self, r, batch):
        from .shell import Shell
        self.shell = Shell(self)
        return self.shell.start(r, batch)

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
    # console
    # ------------------------------------------------------------------
    def con_write(self, data):
        video = self.machine.bios.video
        for b in bytes(data):
            if b == 0x09:
                col = video.cursor(video.active_page)[1]
                for _ in range(8 - col % 8):
                    video.teletype(0x20)
            else:
                video.teletype(b)
        self.console_out += data
        if self.config.console is not None:
            self.config.console(bytes(data))

    def key_available(self):
        if self.pending_scan is not None:
            return True
        return self.machine.bios.keyboard.peek() is not None

    def get_key(self):
        """The next character from the keyboard (extended keys give 00h,
        then the scan code), or None: the caller waits (WAIT)."""
        if self.pending_scan is not None:
            ch, self.pending_scan = self.pending_scan, None
            return ch
        bios = self.machine.bios
        scratch = Registers(np.zeros(S.REGS_SIZE, dtype=np.uint16))
        scratch.ah = 0
        if bios.keyboard.int16(scratch):
            bios._wait_mark = int(self.machine.cpu.ctl[S.C_INSTRUCTIONS])
            return None
        word = scratch.ax
        if word == 0x0000:
            return 0x03                      # Ctrl-Break
        ch = word & 0xFF
        if ch == 0:
            self.pending_scan = word >> 8     # an extended key: 00h, then its code
        return ch

    def ctrl_c(self, r):
        """Ctrl-C seen while checking: echo ^C, run INT 23h (our default
        ends the program; a program's handler that IRETs makes the call
        start again)."""
        self.con_write(b"^C\r\n")
        seg, off = self.mem.vector(0x23)
        if (seg, off) == (dosrom.DOS_SEGMENT, self.label("int23")):
            return self._svc_int23(r)
        # call the program's handler; its IRET comes back to the INT 21h trap
        sp = (r.sp - 6) & 0xFFFF
        self.mem.ww(linear(r.ss, sp + 4), r.flags)
        self.mem.ww(linear(r.ss, sp + 2), dosrom.DOS_SEGMENT)
        self.mem.ww(linear(r.ss, sp), r.ip)
        r.sp = sp
        r.if_ = False
        r.tf = False
        r.cs, r.ip = seg, off
        return JUMPED

    def line_input(self, limit, echo=True):
        """Advance the buffered line input; the finished line (bytes, without
        the CR), or None to wait.  Backspace edits, Esc cancels the line."""
        if self.line is None:
            self.line = bytearray()
        while True:
            ch = self.get_key()
            if ch is None:
                return None
            if ch == 0:                       # extended key: ignored in line input
                self.pending_scan = None
                continue
            if ch == 0x0D:
                line = bytes(self.line)
                self.line = None
                if echo:
                    self.con_write(b"\r")
                return line
            if ch == 0x03:
                self.line = None
                return b"\x03"
            if ch in (0x08, 0x7F):
                if self.line:
                    self.line.pop()
                    if echo:
                        self.con_write(b"\x08 \x08")
                continue
            if ch == 0x1B:
                if echo:
                    self.con_write(b"\\\r\n")
                self.line = bytearray()
                continue
            if len(self.line) >= limit:
                continue                      # (a real DOS beeps)
            self.line.append(ch)
            if echo:
                self.con_write(bytes([ch]))

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
_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")
FUNCTIONS = {}
for _name, _fn in list(vars(Dos).items()):
    if len(_name) == 3 and _name[0] == "f":
        try:
            FUNCTIONS[int(_name[1:], 16)] = _fn
        except ValueError:
            pass


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


__all__ = ["Dos", "DosConfig", "DosError", "LoadError"]
