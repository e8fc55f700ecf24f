"""A bounded recorder of the file, directory, program and memory calls the
built-in DOS serves (``Dos.tracer``; the RPC methods ``dos.trace.*``).

Every INT 21h, 20h, 27h and 23h reaches Python through the DOS ROM's traps
(``Dos.on_trap``).  With no recorder that path tests one attribute
(``Dos.tracer is None``) and nothing else changes; with one, the calls of
the selected classes are decoded before the service runs (the arguments as
the guest gave them, and the host file a path resolves to on its mount),
served exactly as without a recorder, and their outcome is read from the
registers and memory afterwards (CF and AX for the handle-era functions,
AL=FFh for the FCB functions).  A call that waits for a key (a read from
CON) is recorded once, when it completes.

Classes (``CLASSES``): ``file`` (handles 3Ch-46h, 56h, 57h, 5Ah-5Ch,
67h, 68h, 6Ch and the FCB file functions), ``directory`` (0Eh, 19h, 1Ah, FCB
search 11h/12h, 39h-3Bh, 47h, 4Eh, 4Fh), ``program`` (00h, 31h, 4Bh-4Dh,
INT 20h, 27h and the default INT 23h), ``memory`` (48h-4Ah, 58h).
Functions the built-in DOS does not provide (FCB file access, 5Ah, 5Ch,
6Ch) are recorded with ``not_provided``.

Events are plain dicts (``sequence``, ``clock`` in CPU cycles, ``psp``,
``return_address`` and, when the call is an ``INT n`` instruction,
``address``, ``interrupt``, ``function`` (AH, INT 21h only), ``name``,
``class``, ``args``, ``result``); the ring keeps the newest ``capacity``
and counts the ones it dropped.  Nothing here changes the machine: the
recorder reads registers, memory and host folder listings only."""

import base64
import logging

from ..cpu import state as S
from ..event_ring import EventRing
from ..firmware.memio import linear
from .errors import DosError
from .hostfs import device_name
from .common import JUMPED, WAIT
from .int21 import FUNCTIONS as SERVED

log = logging.getLogger("pypc.dos")

CLASSES = ("file", "directory", "program", "memory")
MAX_CAPACITY = 65536
DEFAULT_CAPACITY = 4096
MAX_DATA_BYTES = 4096
DEFAULT_DATA_BYTES = 64
MAX_RETAINED_DATA = 16 << 20        # capacity x data_bytes
MAX_PATH_FILTER = 128

ERROR_NAMES = {
    0x01: "invalid_function", 0x02: "file_not_found", 0x03: "path_not_found",
    0x04: "too_many_open_files", 0x05: "access_denied", 0x06: "invalid_handle",
    0x07: "memory_control_blocks_destroyed", 0x08: "insufficient_memory",
    0x09: "invalid_memory_block", 0x0A: "invalid_environment", 0x0B: "invalid_format",
    0x0C: "invalid_access_code", 0x0D: "invalid_data", 0x0F: "invalid_drive",
    0x10: "remove_current_directory", 0x11: "not_same_device", 0x12: "no_more_files",
    0x50: "file_exists",
}

ORIGINS = {0: "start", 1: "current", 2: "end"}
ACCESS = {0: "read", 1: "write", 2: "read_write"}

# AH -> (name, class).  The FCB and other functions the built-in DOS lacks
# are kept here so that a program trying them shows up in the trace.
FUNCTIONS = {
    0x00: ("terminate", "program"),
    0x0E: ("select_drive", "directory"),
    0x0F: ("fcb_open", "file"),
    0x10: ("fcb_close", "file"),
    0x11: ("fcb_find_first", "directory"),
    0x12: ("fcb_find_next", "directory"),
    0x13: ("fcb_delete", "file"),
    0x14: ("fcb_read_sequential", "file"),
    0x15: ("fcb_write_sequential", "file"),
    0x16: ("fcb_create", "file"),
    0x17: ("fcb_rename", "file"),
    0x19: ("current_drive", "directory"),
    0x1A: ("set_dta", "directory"),
    0x21: ("fcb_read_random", "file"),
    0x22: ("fcb_write_random", "file"),
    0x23: ("fcb_file_size", "file"),
    0x24: ("fcb_set_random_record", "file"),
    0x27: ("fcb_read_random_block", "file"),
    0x28: ("fcb_write_random_block", "file"),
    0x31: ("keep", "program"),
    0x39: ("mkdir", "directory"),
    0x3A: ("rmdir", "directory"),
    0x3B: ("chdir", "directory"),
    0x3C: ("create", "file"),
    0x3D: ("open", "file"),
    0x3E: ("close", "file"),
    0x3F: ("read", "file"),
    0x40: ("write", "file"),
    0x41: ("delete", "file"),
    0x42: ("seek", "file"),
    0x43: ("attributes", "file"),
    0x44: ("ioctl", "file"),
    0x45: ("duplicate", "file"),
    0x46: ("force_duplicate", "file"),
    0x47: ("get_cwd", "directory"),
    0x48: ("allocate", "memory"),
    0x49: ("free", "memory"),
    0x4A: ("resize", "memory"),
    0x4B: ("exec", "program"),
    0x4C: ("exit", "program"),
    0x4D: ("get_return_code", "program"),
    0x4E: ("find_first", "directory"),
    0x4F: ("find_next", "directory"),
    0x56: ("rename", "file"),
    0x57: ("file_time", "file"),
    0x58: ("allocation_strategy", "memory"),
    0x5A: ("create_temp", "file"),
    0x5B: ("create_new", "file"),
    0x5C: ("lock", "file"),
    0x67: ("set_handle_count", "file"),
    0x68: ("commit", "file"),
    0x6C: ("extended_open", "file"),
}

# the other interrupts whose DOS service ends a program
TRAPS = {"int20": (0x20, "terminate"), "int27": (0x27, "keep"),
         "int23": (0x23, "ctrl_c_exit")}

_PATH_DX = (0x39, 0x3A, 0x3B, 0x3C, 0x3D, 0x41, 0x43, 0x5A, 0x5B)
_HANDLE_BX = (0x3E, 0x3F, 0x40, 0x42, 0x45, 0x46, 0x57, 0x68)
_FCB = (0x0F, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x21, 0x22, 0x23, 0x24,
        0x27, 0x28)
_IOCTL_HANDLE = (0x00, 0x01, 0x02, 0x03, 0x06, 0x07, 0x0A, 0x0C, 0x10)


class _Snap:
    """The registers at a call, read once (``Registers`` reads the array on
    every attribute)."""

    __slots__ = ("ax", "cx", "dx", "bx", "sp", "bp", "si", "di", "es", "cs", "ss", "ds")
    assert [S.REG_INDEX[n] for n in __slots__] == list(range(12))

    def __init__(self, regs):
        (self.ax, self.cx, self.dx, self.bx, self.sp, self.bp, self.si, self.di,
         self.es, self.cs, self.ss, self.ds) = regs[:12].tolist()

    ah = property(lambda self: self.ax >> 8)
    al = property(lambda self: self.ax & 0xFF)
    bl = property(lambda self: self.bx & 0xFF)
    dl = property(lambda self: self.dx & 0xFF)


class TraceConfigError(ValueError):
    """A recorder setting out of range (``field`` names it; ``limit`` is
    set when a bound, not a form, was broken)."""

    def __init__(self, message, field, limit=None):
        super().__init__(message)
        self.field = field
        self.limit = limit


def _segmented(seg, off):
    return {"space": "segmented", "segment": seg & 0xFFFF, "offset": off & 0xFFFF}


def error_name(code):
    return ERROR_NAMES.get(code, f"error_{code:02x}h")


class DosTrace(EventRing):
    """The recorder.  ``classes``: a subset of :data:`CLASSES`;
    ``path_contains``: keep only events that name a path, file, device or
    found name containing this text (case-insensitive); ``data_bytes``: how
    many of the bytes a read or write moved are kept (base64)."""

    def __init__(self, dos, capacity=DEFAULT_CAPACITY, classes=CLASSES, path_contains=None,
                 data_bytes=DEFAULT_DATA_BYTES):
        if not 1 <= capacity <= MAX_CAPACITY:
            raise TraceConfigError(f"capacity must be 1..{MAX_CAPACITY}, not {capacity}",
                                   "capacity", MAX_CAPACITY if capacity > 0 else None)
        if not 0 <= data_bytes <= MAX_DATA_BYTES:
            raise TraceConfigError(f"data_bytes must be 0..{MAX_DATA_BYTES}, not {data_bytes}",
                                   "data_bytes", MAX_DATA_BYTES if data_bytes > 0 else None)
        if capacity * data_bytes > MAX_RETAINED_DATA:
            raise TraceConfigError(
                f"capacity {capacity} x data_bytes {data_bytes} would retain over "
                f"{MAX_RETAINED_DATA >> 20} MiB of data; lower one of them",
                "data_bytes", MAX_RETAINED_DATA // capacity)
        wanted = set(classes)
        if not wanted or wanted - set(CLASSES):
            raise TraceConfigError(f"classes must be some of {', '.join(CLASSES)}", "classes")
        classes = tuple(c for c in CLASSES if c in wanted)
        if path_contains is not None and not 1 <= len(path_contains) <= MAX_PATH_FILTER:
            raise TraceConfigError(f"path_contains must be 1..{MAX_PATH_FILTER} characters",
                                   "path_contains")
        self.dos = dos
        self.machine = dos.machine if dos is not None else None
        self.mem = dos.mem if dos is not None else None
        super().__init__(capacity)
        self.classes = classes
        self.path_contains = path_contains
        self._needle = path_contains.upper() if path_contains is not None else None
        self.data_bytes = data_bytes
        self.active = False
        self._functions = {ah: v for ah, v in FUNCTIONS.items() if v[1] in classes}
        self._traps = TRAPS if "program" in classes else {}
        self._opened = {}           # sft index -> (host path, the guest's path)
        self._failed = False

    # -- control -----------------------------------------------------------------
    def start(self):
        """Attach to the DOS (replacing any recorder it had) and record."""
        old = self.dos.tracer
        if old is not None and old is not self:
            old.stop()
        self.active = True
        self.dos.tracer = self

    def stop(self):
        """Detach; the events recorded so far stay readable."""
        self.active = False
        if self.dos.tracer is self:
            self.dos.tracer = None

    @property
    def recorded(self):
        """Events recorded since the start (dropped ones included)."""
        return self.next_sequence - 1

    # -- the hook ------------------------------------------------------------------
    def serve(self, name, service, r):
        """Run ``service(r)`` (the DOS's trap ``name``) and record it when it
        is a call this recorder wants.  Returns what the service returned."""
        if name == "int21":
            ah = int(r.regs[S.AX]) >> 8
            spec = self._functions.get(ah)
            if spec is None:
                return service(r)
            interrupt, function, fname, fclass = 0x21, ah, spec[0], spec[1]
        else:
            trap = self._traps.get(name)
            if trap is None:
                return service(r)
            interrupt, function, fname, fclass = trap[0], None, trap[1], "program"
        try:
            event = self._before(_Snap(r.regs), interrupt, function, fname, fclass)
        except Exception:                       # a recorder bug must never fail the call
            self._report_failure()
            return service(r)
        result = service(r)
        if result == WAIT:                      # served again when a key comes
            return result
        try:
            self._after(event, r, result)
            if self._wanted(event):
                self._add(event)
        except Exception:
            self._report_failure()
        return result

    def _report_failure(self):
        if not self._failed:
            self._failed = True
            log.exception("dos trace: decoding a DOS call failed (the call was served; "
                          "this and later undecodable calls are not recorded)")

    def _wanted(self, event):
        needle = self._needle
        if needle is None:
            return True
        return any(needle in text.upper() for text in _texts(event))

    # -- decoding ----------------------------------------------------------------
    def _before(self, r, interrupt, function, name, cls):
        dos = self.dos
        mem = self.mem
        ret_seg = mem.rw(linear(r.ss, (r.sp + 2) & 0xFFFF))
        ret_off = mem.rw(linear(r.ss, r.sp))
        event = {"clock": self.machine.clock()}
        if dos is not None:
            event["psp"] = dos.current_psp
        event["return_address"] = _segmented(ret_seg, ret_off)
        at = (ret_off - 2) & 0xFFFF             # the INT n before the return, if one is
        if mem.rb(linear(ret_seg, at)) == 0xCD \
                and mem.rb(linear(ret_seg, (at + 1) & 0xFFFF)) == interrupt:
            event["address"] = _segmented(ret_seg, at)
        event["interrupt"] = interrupt
        if function is not None:
            event["function"] = function
        event["name"] = name
        event["class"] = cls
        args = {}
        event["args"] = args
        event["_in"] = {"ax": r.ax, "bx": r.bx, "cx": r.cx, "dx": r.dx, "ds": r.ds,
                        "es": r.es, "si": r.si, "di": r.di}
        if interrupt != 0x21:
            self._program_args(event, r)
            return event
        ah, al = r.ah, r.al
        if ah in _PATH_DX:
            self._path_arg(args, "path", r.ds, r.dx, must_exist=ah not in (0x39, 0x3C, 0x5A,
                                                                           0x5B))
        if ah in (0x3C, 0x5A, 0x5B):
            args["attributes"] = r.cx
        elif ah == 0x3D:
            args["mode"] = al
            args["access"] = ACCESS.get(al & 0x07, "invalid")
        elif ah == 0x43:
            args["subfunction"] = al
            if al == 1:
                args["attributes"] = r.cx
        if ah in _HANDLE_BX or (ah == 0x44 and al in _IOCTL_HANDLE):
            args["handle"] = r.bx
            self._describe_handle(args, r.bx)
        if ah in (0x3F, 0x40):
            args["byte_count"] = r.cx
            args["buffer"] = _segmented(r.ds, r.dx)
        elif ah == 0x42:
            args["origin"] = ORIGINS.get(al, "invalid")
            offset = (r.cx << 16) | r.dx
            args["offset"] = offset - (1 << 32) if offset & 0x80000000 else offset
        elif ah == 0x44:
            args["subfunction"] = al
            if al in (0x08, 0x09):
                args["drive"] = r.bl
        elif ah == 0x46:
            args["new_handle"] = r.cx
        elif ah == 0x57:
            args["subfunction"] = al
            if al == 1:
                args["time"], args["date"] = r.cx, r.dx
        elif ah == 0x56:
            self._path_arg(args, "path", r.ds, r.dx, must_exist=True)
            self._path_arg(args, "new_path", r.es, r.di, must_exist=False)
        elif ah == 0x6C:
            self._path_arg(args, "path", r.ds, r.si, must_exist=False)
            args["mode"] = r.bl
            args["attributes"] = r.cx
            args["action"] = r.dx
        elif ah == 0x5C:
            args["handle"] = r.bx
            self._describe_handle(args, r.bx)
            args["subfunction"] = al
        elif ah == 0x67:
            args["count"] = r.bx
        elif ah in (0x0E, 0x47):
            args["drive"] = r.dl
        elif ah == 0x1A:
            args["address"] = _segmented(r.ds, r.dx)
        elif ah == 0x4E:
            args["attributes"] = r.cx
            self._find_arg(args, r)
        elif ah in _FCB:
            args["fcb"] = self._fcb(linear(r.ds, r.dx))
            if ah == 0x17:
                args["new_fcb_name"] = self._fcb_name(linear(r.ds, r.dx) + 0x11
                                                      + (7 if mem.rb(linear(r.ds, r.dx)) == 0xFF
                                                         else 0))
        elif ah == 0x4B:
            self._exec_args(args, r)
        elif ah in (0x00, 0x31, 0x4C):
            self._program_args(event, r)
        elif ah == 0x48:
            args["paragraphs"] = r.bx
        elif ah == 0x49:
            args["segment"] = r.es
        elif ah == 0x4A:
            args["segment"] = r.es
            args["paragraphs"] = r.bx
        elif ah == 0x58:
            args["subfunction"] = al
            if al == 1:
                args["strategy"] = r.bx
        return event

    def _program_args(self, event, r):
        args = event["args"]
        name = event["name"]
        if name == "exit":
            args["exit_code"] = r.al
        elif name == "keep":
            args["exit_code"] = r.al if event["interrupt"] == 0x21 else 0
            args["paragraphs"] = r.dx if event["interrupt"] == 0x21 else (r.dx + 15) // 16
        elif name == "terminate":
            args["exit_code"] = 0
        if self.dos is not None:
            args["parent_psp"] = self.mem.rw(linear(self.dos.current_psp, 0x16))

    def _asciiz(self, addr, limit):
        return bytes(self.mem.read(addr, limit)).split(b"\0")[0]

    def _read_path(self, seg, off):
        raw = self._asciiz(linear(seg, off), 128)
        return raw, raw.decode("cp437")

    def _path_arg(self, args, key, seg, off, must_exist):
        raw, text = self._read_path(seg, off)
        args[key] = text
        if self.dos is None:
            return
        where = self._resolve(raw, must_exist)
        if where is not None:
            kind, value = where
            args[("new_" if key == "new_path" else "") + kind] = value

    def _resolve(self, raw, must_exist=True):
        """("host_path", path) or ("device", name) of a DOS path, or None."""
        dos = self.dos
        try:
            drive, parts = dos.parse_path(raw)
            if not parts:
                return "host_path", dos.drives[drive].root
            dev = device_name(parts[-1])
            if dev is not None:
                return "device", {"COM1": "AUX", "LPT1": "PRN"}.get(dev, dev)
            hd = dos.drives[drive]
            folder, entry, name = hd.resolve(parts, must_exist=must_exist)
            return "host_path", hd.host_path(folder, entry, name)
        except (DosError, OSError, KeyError):
            return None

    def _find_arg(self, args, r):
        raw, text = self._read_path(r.ds, r.dx)
        args["path"] = text
        dos = self.dos
        if dos is None:
            return
        try:
            drive, parts = dos.parse_path(raw, wildcards=True)
            if parts:
                args["host_folder"] = dos.drives[drive].resolve_dir(parts[:-1])
        except (DosError, OSError, KeyError):
            pass

    def _describe_handle(self, args, handle):
        dos = self.dos
        if dos is None:
            return
        try:
            idx, entry = dos.handle_entry(handle)
        except DosError:
            return
        if entry.kind != "file":
            args["device"] = entry.kind
            return
        args["file_name"] = entry.name
        args["host_path"] = entry.path
        seen = self._opened.get(idx)
        if seen is not None and seen[0] == entry.path:
            args["path"] = seen[1]

    def _fcb_name(self, addr):
        raw = bytes(self.mem.read(addr, 11)).decode("cp437")
        base, ext = raw[:8].rstrip(), raw[8:].rstrip()
        return base + ("." + ext if ext else "")

    def _fcb(self, addr):
        mem = self.mem
        extended = mem.rb(addr) == 0xFF
        out = {"address": addr, "extended": extended}
        if extended:
            out["attributes"] = mem.rb(addr + 6)
            addr += 7
        out["drive"] = mem.rb(addr)
        out["name"] = self._fcb_name(addr + 1)
        return out

    def _exec_args(self, args, r):
        mem = self.mem
        args["subfunction"] = r.al
        self._path_arg(args, "path", r.ds, r.dx, must_exist=True)
        block = linear(r.es, r.bx)
        if r.al in (0x00, 0x01):
            tail_addr = linear(mem.rw(block + 4), mem.rw(block + 2))
            n = min(mem.rb(tail_addr), 127)
            args["command_tail"] = bytes(mem.read(tail_addr + 1, n)).decode("cp437")
            args["environment"] = mem.rw(block)
        elif r.al == 0x03:
            args["load_segment"] = mem.rw(block)
            args["relocation_factor"] = mem.rw(block + 2)

    def _dta(self):
        """Linear address of the DTA searches fill."""
        return linear(*self.dos.dta)

    def _data(self, seg, off, count):
        n = min(count, self.data_bytes)
        return base64.b64encode(bytes(self.mem.read(linear(seg, off), n))).decode() \
            if n else None

    def _after(self, event, r, result, regs_in=None):
        if regs_in is None:
            regs_in = event.pop("_in")
        res = {}
        event["result"] = res
        if event["interrupt"] != 0x21:
            res["ok"] = True
            return
        ah = event["function"]
        if event["name"] in ("terminate", "keep", "exit"):
            res["ok"] = True
            return
        if result == JUMPED and ah != 0x4B:     # Ctrl-C ended the call
            res["ok"] = False
            res["ctrl_c"] = True
            return
        provided = self.dos is None or ah in SERVED
        if ah in _FCB:
            res["ok"] = r.al != 0xFF
            if not provided:
                res["not_provided"] = True
            return
        if ah < 0x38 or (ah == 0x4B and result == JUMPED):
            res["ok"] = True
        elif r.cf:
            res["ok"] = False
            res["error"] = {"code": r.ax, "name": error_name(r.ax)}
            if not provided:
                res["not_provided"] = True
            if ah in (0x48, 0x4A) and r.ax == 0x08:
                res["largest_paragraphs"] = r.bx
            return
        else:
            res["ok"] = True
        args = event["args"]
        dos = self.dos
        if ah in (0x3C, 0x3D, 0x5A, 0x5B, 0x45, 0x6C):
            res["handle"] = r.ax
            if ah != 0x45 and dos is not None:
                try:
                    idx, entry = dos.handle_entry(r.ax)
                except DosError:
                    idx, entry = None, None
                if entry is not None and entry.kind == "file":
                    self._opened[idx] = (entry.path, args.get("path", ""))
        elif ah in (0x3F, 0x40):
            res["byte_count"] = r.ax
            data = self._data(regs_in["ds"], regs_in["dx"], r.ax)
            if data is not None:
                res["data_base64"] = data
        elif ah == 0x42:
            res["position"] = (r.dx << 16) | r.ax
        elif ah == 0x43 and args.get("subfunction") == 0:
            res["attributes"] = r.cx
        elif ah == 0x44:
            sub = args.get("subfunction")
            if sub == 0x00:
                res["info"] = r.dx
            elif sub in (0x06, 0x07):
                res["info"] = r.al
            elif sub == 0x08:
                res["info"] = r.ax
            elif sub == 0x09:
                res["info"] = r.dx
        elif ah == 0x57 and args.get("subfunction") == 0:
            res["time"], res["date"] = r.cx, r.dx
        elif ah == 0x47:
            raw = self._asciiz(linear(regs_in["ds"], regs_in["si"]), 64)
            res["path"] = raw.decode("cp437")
        elif ah in (0x4E, 0x4F) and self._dta() is not None:
            dta = self._dta()
            mem = self.mem
            res["found"] = {"name": self._asciiz(dta + 30, 13).decode("cp437"),
                            "attributes": mem.rb(dta + 21), "size": mem.rd(dta + 26),
                            "time": mem.rw(dta + 22), "date": mem.rw(dta + 24)}
        elif ah == 0x4B and dos is not None:
            sub = args.get("subfunction")
            if sub == 0x00:
                res["child_psp"] = dos.current_psp
                res["entry"] = _segmented(r.cs, r.ip)
            elif sub == 0x01:
                block = linear(regs_in["es"], regs_in["bx"])
                res["child_psp"] = dos.current_psp
                res["entry"] = _segmented(dos.mem.rw(block + 0x14), dos.mem.rw(block + 0x12))
        elif ah == 0x4D:
            res["exit_code"] = r.al
            res["exit_type"] = r.ah
        elif ah == 0x19:
            res["drive"] = r.al
        elif ah == 0x0E:
            res["drive_count"] = r.al
        elif ah == 0x48:
            res["segment"] = r.ax
        elif ah == 0x58 and args.get("subfunction") == 0:
            res["strategy"] = r.ax


def _texts(event):
    """The path-like strings of an event (for ``path_contains``)."""
    args = event["args"]
    for key in ("path", "host_path", "new_path", "new_host_path", "device", "new_device",
                "file_name", "host_folder"):
        value = args.get(key)
        if isinstance(value, str):
            yield value
    fcb = args.get("fcb")
    if fcb is not None:
        yield fcb["name"]
    if "new_fcb_name" in args:
        yield args["new_fcb_name"]
    found = event.get("result", {}).get("found")
    if found is not None:
        yield found["name"]
