"""The built-in DOS, part: programs: environments, PSPs, loading .COM/.EXE images, termination.  A mixin of
:class:`pypc_core.dos.kernel.Dos`; its methods share the Dos instance's state."""



from ..cpu import state as S
from ..firmware.memio import linear
from .. import symbols
from . import rom as dosrom
from .errors import (
    DosError, LoadError, E_ACCESS_DENIED, E_FILE_NOT_FOUND, E_NO_MEMORY,
)
from .exe import parse as parse_program
from .hostfs import device_name
from .common import (
    JFT_SIZE, JUMPED, OWNER_DOS, ROOT_PSP, TERM_CTRL_C, TERM_NORMAL, TERM_TSR,
    fcbs_for_tail
)


class ProcessMixin:
    """Programs: environments, PSPs, loading .COM/.EXE images, termination."""

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
