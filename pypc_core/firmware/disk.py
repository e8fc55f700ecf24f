"""INT 13h: diskette (DL=00h-03h) and fixed disk (DL=80h-) services.

Diskettes go through the floppy controller card (``pypc_plugins.fdc``) and
the 8237's channel 2, exactly as a real BIOS drives them: the service turns
the motor on (DOR 3F2h), recalibrates a drive not yet calibrated (twice,
for 80-track drives), seeks, programs DMA channel 2 (mode 46h read, 4Ah
write, 42h verify; address, page, count), sends the uPD765 command with the
parameters of the diskette parameter table at INT 1Eh (N, EOT, gap, DTL;
format: N, sectors, format gap, fill byte), waits for IRQ 6 and reads the
seven result bytes.  Waiting is a real wait: the service stays on its trap
with interrupts enabled and the CPU halted, and runs again after each
interrupt (the IRQ 6 handler sets bit 7 of 0040:003E) until the controller
has answered or two seconds of emulated time have passed (80h, and the
controller is reset).  Reads and writes use multi-track mode, so one call
may run from head 0 into head 1 of a cylinder; going past the last sector
of head 1 is the controller's "end of cylinder" (04h).  AL = sectors
transferred, from what the DMA channel has counted.

Fixed disks (DL=80h-) keep a direct path to ``machine.disks[DL]``.

Results follow IBM: CF clear and AH=00h on success, CF set and AH = status
on error, the status also kept at 0040:0041 (diskette) or 0040:0074 (fixed
disk), the controller's result bytes at 0040:0042.

Status codes used:
  01h bad command or parameter   02h address mark not found
  03h write protected            04h sector not found (ND, end of cylinder)
  06h media changed (AH=16h)     08h DMA overrun
  09h DMA crosses a 64 KiB boundary (diskette)        10h CRC (data) error
  07h drive parameters (AH=08h on an absent fixed disk)
  20h controller failure          40h seek failed      80h timeout (no disk)

Choices:
* the 64 KiB DMA boundary check (09h, nothing transferred) applies to
  diskette reads and writes;
* a drive the equipment word does not list answers 80h at once; a listed
  drive without media never gives the controller an index pulse, so the
  command times out (80h) after two seconds, like a drive with its door open;
* AH=15h reports change-line support (02h) for every floppy drive; AH=16h
  reads the controller's DIR (3F7h) with the motor on and, when the line is
  active, answers 06h and steps the head (seek to cylinder 1, or 0) so the
  drive clears it, as AT BIOSes do; without media it stays active.
"""

from ..storage.image import DiskImageError, DiskRangeError, DiskWriteProtected, SECTOR_SIZE
from . import rom
from .memio import (
    Service,
    BDA_FD_MOTOR, BDA_FD_MOTOR_COUNT, BDA_FD_RECAL, BDA_FD_STATUS, BDA_FDC_RESULT,
    BDA_HD_STATUS, linear,
)

WAIT = "wait"            # the Bios's service result: stay on the trap, halt

ST_OK = 0x00
ST_BAD_COMMAND = 0x01
ST_ADDRESS_MARK = 0x02
ST_WRITE_PROTECT = 0x03
ST_NOT_FOUND = 0x04
ST_MEDIA_CHANGED = 0x06
ST_DRIVE_PARMS = 0x07
ST_DMA_OVERRUN = 0x08
ST_DMA_BOUNDARY = 0x09
ST_CRC = 0x10
ST_CONTROLLER = 0x20
ST_SEEK = 0x40
ST_TIMEOUT = 0x80

FDC_DOR, FDC_MSR, FDC_DATA, FDC_DIR = 0x3F2, 0x3F4, 0x3F5, 0x3F7
TIMEOUT_CYCLES = 2 * 4_772_727       # two seconds of emulated time

MOTOR_TICKS = 37        # ticks until the motor turns off after an access (about 2 s)


class DiskService(Service):
    def __init__(self, bios):
        super().__init__(bios)
        self.pending = {}          # "SS:SP" of a waiting call -> its progress (a dict)

    # -- drives ---------------------------------------------------------------------
    @property
    def disks(self):
        return self.bios.machine.disks

    def floppy_count(self):
        return self.bios.floppy_count()

    def _note(self, level, message):
        """A record in the machine's diagnostics ring (source ``bios``)."""
        self.bios.machine.note(level, message, source="bios")

    def hdd_count(self):
        return self.bios.hdd_count()

    def floppy_type(self, drive):
        disk = self.disks.get(drive)
        if disk is not None:
            return disk.drive_type
        return 4              # an empty drive reports the most capable type

    def clock(self):
        return int(self.bios.machine.clock())

    # -- dispatch --------------------------------------------------------------------
    def int13(self, r):
        """Run INT 13h; returns WAIT while a diskette operation waits for the
        controller (the Bios halts on the trap and calls again)."""
        ah, dl = r.ah, r.dl
        hdd = bool(dl & 0x80)
        key = f"{r.ss:04X}:{r.sp:04X}"
        if not hdd and key in self.pending:
            return self._resume(r, key)
        status_addr = BDA_HD_STATUS if hdd else BDA_FD_STATUS
        if ah == 0x01:                                   # status of last operation
            status = self.mem.rb(status_addr)
            r.ah = status
            r.al = status
            r.cf = status != 0
            return None
        if not hdd and ah in self._FLOPPY_OPS:
            ctx = self._FLOPPY_OPS[ah](self, r, dl)
            if isinstance(ctx, dict):
                self.pending[key] = ctx
                return self._resume(r, key)
            status = ctx
        else:
            fn = getattr(self, f"_fn{ah:02X}", None)
            if fn is None:
                status = ST_BAD_COMMAND
            else:
                status = fn(r, dl, hdd)
        self._finish(r, status, status_addr)
        return None

    def _finish(self, r, status, status_addr):
        if status is None:                               # success; AH set by the function
            status = ST_OK
            r.cf = False
        else:
            r.ah = status
            r.cf = status != ST_OK
        self.mem.wb(status_addr, status)

    def _disk(self, dl, hdd):
        """(disk or None, error status or None)."""
        if hdd:
            if dl - 0x80 >= self.hdd_count():
                return None, ST_BAD_COMMAND
            return self.disks.get(dl), None
        if dl >= 4:
            return None, ST_BAD_COMMAND
        if dl >= self.floppy_count():
            return None, ST_TIMEOUT
        return self.disks.get(dl), None

    # ==================================================================================
    # diskettes, through the controller
    # ==================================================================================
    def _dpt(self, index):
        seg, off = self.mem.vector(0x1E)
        return self.mem.rb(linear(seg, off) + index)

    def _out(self, port, value):
        self.ports.write(port, value & 0xFF)

    def _in(self, port):
        return self.ports.read(port) & 0xFF

    def _motor_on(self, drive):
        self.mem.wb(BDA_FD_MOTOR, (self.mem.rb(BDA_FD_MOTOR) & 0xF0) | (1 << drive))
        self.mem.wb(BDA_FD_MOTOR_COUNT, 0xFF)           # no motor-off while busy
        self._out(FDC_DOR, 0x0C | drive | (0x10 << drive))

    def _motor_idle(self):
        self.mem.wb(BDA_FD_MOTOR_COUNT, self._dpt(2) or MOTOR_TICKS)

    def _send(self, *data):
        """Command bytes to the data register (RQM set, DIO clear)."""
        for b in data:
            msr = self._in(FDC_MSR)
            if msr & 0xC0 != 0x80:
                return False
            self._out(FDC_DATA, b)
        return True

    def _results(self, limit=7):
        out = []
        while len(out) < limit:
            msr = self._in(FDC_MSR)
            if msr & 0xC0 != 0xC0:
                break
            out.append(self._in(FDC_DATA))
        return out

    def _arm(self, ctx, phase):
        """Clear the IRQ 6 flag and wait for it in ``phase``."""
        self.mem.wb(BDA_FD_RECAL, self.mem.rb(BDA_FD_RECAL) & 0x7F)
        ctx["phase"] = phase
        ctx["deadline"] = self.clock() + TIMEOUT_CYCLES

    def _irq_seen(self):
        return bool(self.mem.rb(BDA_FD_RECAL) & 0x80)

    def _sense(self):
        """Sense interrupt status: (ST0, PCN) of a seek or recalibrate that
        ended (ready-change entries left by a reset are skipped), or None
        when the controller has none (the IRQ 6 flag was stale)."""
        for _ in range(5):
            self._send(0x08)
            res = self._results(2)
            if len(res) < 2:
                return None
            if res[0] & 0xC0 != 0xC0:
                return res
        return None

    def _fdc_reset(self, drain=True):
        """Pulse /RESET; with ``drain`` also take the four ready-change
        statuses at once and specify (step rate, head times, DMA mode)."""
        dor = 0x08 | (self.mem.rb(BDA_FD_MOTOR) & 0x0F) << 4
        self._out(FDC_DOR, dor)
        self._out(FDC_DOR, dor | 0x04)
        if drain:
            for _ in range(4):
                self._send(0x08)
                self._results(2)
            self._send(0x03, self._dpt(0), self._dpt(1))

    def post_reset(self):
        """POST: forget operations a reset interrupted; reset the controller
        (when there is one)."""
        self.pending.clear()
        if self.floppy_count():
            self.mem.wb(BDA_FD_RECAL, 0)
            self._fdc_reset()

    # -- operations: each returns a progress dict (or a status at once) -----------------
    def _op_reset(self, r, dl):
        self.mem.wb(BDA_FD_STATUS, 0)
        ctx = {"op": "reset", "drive": dl & 3}
        self.mem.wb(BDA_FD_RECAL, 0)                     # every drive recalibrates again
        self._fdc_reset(drain=False)
        self._arm(ctx, "reset")
        return ctx

    def _op_rw(self, r, dl, op):
        count = r.al
        _disk, err = self._disk(dl, False)
        if err is not None:
            r.al = 0
            return err
        if count == 0:
            return ST_BAD_COMMAND
        addr = linear(r.es, r.bx)
        if op != "verify" and (addr & 0xFFFF) + count * SECTOR_SIZE > 0x10000:
            r.al = 0
            return ST_DMA_BOUNDARY
        return {"op": op, "drive": dl, "cyl": r.ch, "head": r.dh & 1, "sector": r.cl,
                "count": count, "addr": addr, "phase": "start", "recal_tries": 0}

    def _op_read(self, r, dl):
        return self._op_rw(r, dl, "read")

    def _op_write(self, r, dl):
        return self._op_rw(r, dl, "write")

    def _op_verify(self, r, dl):
        return self._op_rw(r, dl, "verify")

    def _op_format(self, r, dl):
        _disk, err = self._disk(dl, False)
        if err is not None:
            return err
        return {"op": "format", "drive": dl, "cyl": r.ch, "head": r.dh & 1, "sector": 1,
                "count": self._dpt(4), "addr": linear(r.es, r.bx), "phase": "start",
                "recal_tries": 0}

    def _op_change(self, r, dl):
        _disk, err = self._disk(dl, False)
        if err is not None:
            return err
        self._motor_on(dl)
        if not self._in(FDC_DIR) & 0x80:
            self._motor_idle()
            return ST_OK
        disk = self.disks.get(dl)
        if disk is None:
            self._motor_idle()
            return ST_MEDIA_CHANGED
        # step the head so the drive resets the line (to cylinder 1, or 0)
        ctx = {"op": "change", "drive": dl, "cyl": 0, "head": 0}
        self._send(0x0F, dl, 1)
        self._arm(ctx, "change_seek")
        return ctx

    _FLOPPY_OPS = {0x00: _op_reset, 0x02: _op_read, 0x03: _op_write, 0x04: _op_verify,
                   0x05: _op_format, 0x16: _op_change}

    # -- the waiting engine --------------------------------------------------------------
    def _resume(self, r, key):
        ctx = self.pending[key]
        status = self._step(ctx)
        if status == WAIT:
            return WAIT
        del self.pending[key]
        if ctx["op"] in ("read", "write", "verify", "format"):
            if ctx["op"] != "format":
                r.al = ctx.get("done", 0)
            self._motor_idle()
        elif ctx["op"] == "change":
            self._motor_idle()
        self._finish(r, status if status != ST_OK else None, BDA_FD_STATUS)
        if status == ST_OK:
            r.ah = 0
        return None

    def _timed_out(self, ctx):
        """The controller never answered: reset it, forget calibration."""
        self.mem.wb(BDA_FD_RECAL, 0)
        self._fdc_reset()
        ctx["phase"] = "timeout_reset"
        return ST_TIMEOUT

    def _step(self, ctx):
        """Advance ``ctx`` as far as it goes; WAIT or a final status."""
        while True:
            phase = ctx["phase"]
            if phase in ("reset", "recal", "seek", "xfer", "change_seek", "change_back"):
                if not self._irq_seen():
                    if self.clock() < ctx["deadline"]:
                        return WAIT
                    self._timed_out(ctx)
                    return ST_TIMEOUT
            handler = getattr(self, "_ph_" + phase)
            result = handler(ctx)
            if result is not None:
                return result

    def _stale(self, ctx):
        """The IRQ 6 flag was not the controller's answer: wait on."""
        self.mem.wb(BDA_FD_RECAL, self.mem.rb(BDA_FD_RECAL) & 0x7F)
        return WAIT if self.clock() < ctx["deadline"] else self._timed_out(ctx)

    def _ph_reset(self, ctx):
        for _ in range(4):
            self._send(0x08)
            self._results(2)
        self._send(0x03, self._dpt(0), self._dpt(1))
        return ST_OK

    def _ph_change_seek(self, ctx):
        if self._sense() is None:
            return self._stale(ctx)
        self._send(0x0F, ctx["drive"], 0)
        self._arm(ctx, "change_back")

    def _ph_change_back(self, ctx):
        if self._sense() is None:
            return self._stale(ctx)
        self.mem.wb(BDA_FD_RECAL, self.mem.rb(BDA_FD_RECAL) & ~(1 << ctx["drive"]) & 0x7F)
        return ST_MEDIA_CHANGED

    def _ph_start(self, ctx):
        drive = ctx["drive"]
        self._motor_on(drive)
        if not self.mem.rb(BDA_FD_RECAL) & (1 << drive):
            self._send(0x07, drive)
            self._arm(ctx, "recal")
            return None
        ctx["phase"] = "seek_start"
        return None

    def _ph_recal(self, ctx):
        res = self._sense()
        if res is None:
            return self._stale(ctx)
        st0 = res[0]
        drive = ctx["drive"]
        if st0 & 0xF0 != 0x20:                       # equipment check: 77 steps were too few
            ctx["recal_tries"] += 1
            if ctx["recal_tries"] >= 2:
                return ST_SEEK
            self._send(0x07, drive)
            self._arm(ctx, "recal")
            return None
        self.mem.wb(BDA_FD_RECAL, (self.mem.rb(BDA_FD_RECAL) | (1 << drive)) & 0x7F)
        ctx["phase"] = "seek_start"
        return None

    def _ph_seek_start(self, ctx):
        self._send(0x0F, ctx["drive"] | ctx["head"] << 2, ctx["cyl"])
        self._arm(ctx, "seek")

    def _ph_seek(self, ctx):
        res = self._sense()
        if res is None:
            return self._stale(ctx)
        st0, pcn = res
        if st0 & 0xE0 != 0x20 or pcn != ctx["cyl"] & 0xFF:
            return ST_SEEK
        ctx["phase"] = "dma"
        return None

    def _ph_dma(self, ctx):
        op = ctx["op"]
        length = 4 * ctx["count"] if op == "format" else ctx["count"] * SECTOR_SIZE
        mode = {"read": 0x46, "write": 0x4A, "verify": 0x42, "format": 0x4A}[op]
        addr = ctx["addr"]
        ctx["length"] = length
        self._out(0x0A, 0x06)                        # mask channel 2
        self._out(0x0C, 0x00)                        # flip-flop
        self._out(0x0B, mode)
        self._out(0x04, addr & 0xFF)
        self._out(0x04, addr >> 8 & 0xFF)
        self._out(0x81, addr >> 16 & 0x0F)
        self._out(0x05, (length - 1) & 0xFF)
        self._out(0x05, (length - 1) >> 8 & 0xFF)
        self._out(0x0A, 0x02)                        # unmask channel 2
        unit = ctx["drive"] | ctx["head"] << 2
        if op == "format":
            ok = self._send(0x4D, unit, self._dpt(3), self._dpt(4), self._dpt(7), self._dpt(8))
        else:
            code = {"read": 0xE6, "verify": 0xE6, "write": 0xC5}[op]
            ok = self._send(code, unit, ctx["cyl"], ctx["head"], ctx["sector"], self._dpt(3),
                            self._dpt(4), self._dpt(5), self._dpt(6))
        if not ok:
            self._fdc_reset()
            return ST_CONTROLLER
        self._arm(ctx, "xfer")
        return None

    def _ph_xfer(self, ctx):
        if self._in(FDC_MSR) & 0xC0 != 0xC0:
            return self._stale(ctx)
        res = self._results(7)
        res += [0] * (7 - len(res))
        self.mem.write(BDA_FDC_RESULT, bytes(res))
        # bytes the DMA channel moved = programmed length - what it has left
        self._out(0x0C, 0x00)
        left = (self._in(0x05) | self._in(0x05) << 8) + 1 & 0xFFFF
        ctx["done"] = (ctx["length"] - left) // SECTOR_SIZE if left <= ctx["length"] else 0
        return _status_from_result(res)

    def _ph_timeout_reset(self, ctx):
        return ST_TIMEOUT

    # -- the boot sector for INT 19h ------------------------------------------------------
    def boot_sector(self, r):
        """Read A:'s sector 0 to 0000:7C00 through the controller.  Returns
        WAIT while it waits, else the status (00h: the sector is there)."""
        key = "boot"
        if key not in self.pending:
            ctx = {"op": "read", "drive": 0, "cyl": 0, "head": 0, "sector": 1, "count": 1,
                   "addr": 0x7C00, "phase": "start", "recal_tries": 0}
            self.pending[key] = ctx
        ctx = self.pending[key]
        status = self._step(ctx)
        if status == WAIT:
            r.if_ = True
            return WAIT
        del self.pending[key]
        self._motor_idle()
        self.mem.wb(BDA_FD_STATUS, status)
        return status

    # ==================================================================================
    # fixed disks (direct)
    # ==================================================================================
    # AH=00h reset
    def _fn00(self, r, dl, hdd):
        if hdd and dl - 0x80 >= self.hdd_count():
            return ST_BAD_COMMAND
        return ST_OK

    # AH=02h read, 03h write, 04h verify
    def _fn02(self, r, dl, hdd):
        return self._transfer(r, dl, hdd, "read")

    def _fn03(self, r, dl, hdd):
        return self._transfer(r, dl, hdd, "write")

    def _fn04(self, r, dl, hdd):
        return self._transfer(r, dl, hdd, "verify")

    @staticmethod
    def _chs(r, hdd):
        return r.ch | ((r.cl & 0xC0) << 2), r.dh, r.cl & 0x3F

    def _transfer(self, r, dl, hdd, op):
        count = r.al
        disk, err = self._disk(dl, hdd)
        if err is not None:
            r.al = 0
            return err
        if count == 0:
            return ST_BAD_COMMAND
        addr = linear(r.es, r.bx)
        cyl, head, sector = self._chs(r, hdd)
        try:
            lba = disk.chs_to_lba(cyl, head, sector)
        except DiskRangeError:
            r.al = 0
            return ST_NOT_FOUND
        n = min(count, disk.total_sectors - lba)
        try:
            if op == "read":
                self.mem.write(addr, disk.read_sectors(lba, n))
            elif op == "write":
                disk.write_sectors(lba, self.mem.read(addr, n * SECTOR_SIZE))
            else:
                disk.read_sectors(lba, n)
        except DiskWriteProtected:
            self._note("warning", f"INT 13h write to drive {dl:02X}h at LBA {lba} refused: "
                                  f"the disk is write-protected (read-only image)")
            r.al = 0
            return ST_WRITE_PROTECT
        except (OSError, DiskImageError) as exc:
            self._note("error", f"INT 13h {op} of drive {dl:02X}h at LBA {lba} failed on "
                                f"the host ({exc}): controller error")
            r.al = 0
            return ST_CONTROLLER
        r.al = n
        return ST_OK if n == count else ST_NOT_FOUND

    # AH=05h format track (fixed disk)
    def _fn05(self, r, dl, hdd):
        disk, err = self._disk(dl, hdd)
        if err is not None:
            return err
        cyl, head, _s = self._chs(r, True)
        if not (0 <= cyl < disk.cylinders and 0 <= head < disk.heads):
            return ST_NOT_FOUND
        try:
            for s in range(1, disk.sectors + 1):
                disk.write_sectors(disk.chs_to_lba(cyl, head, s), bytes(SECTOR_SIZE))
        except DiskWriteProtected:
            self._note("warning", f"INT 13h format of drive {dl:02X}h cylinder {cyl} head "
                                  f"{head} refused: the disk is write-protected")
            return ST_WRITE_PROTECT
        except (OSError, DiskImageError) as exc:
            self._note("error", f"INT 13h format of drive {dl:02X}h cylinder {cyl} head "
                                f"{head} failed on the host ({exc}): controller error")
            return ST_CONTROLLER
        return ST_OK

    # AH=08h drive parameters
    def _fn08(self, r, dl, hdd):
        if hdd:
            n = self.hdd_count()
            disk = self.disks.get(dl) if dl - 0x80 < n else None
            if disk is None:
                return ST_DRIVE_PARMS
            maxc = disk.cylinders - 1
            r.ax = 0
            r.ch = maxc & 0xFF
            r.cl = ((maxc >> 2) & 0xC0) | (disk.sectors & 0x3F)
            r.dh = disk.heads - 1
            r.dl = n
            return None
        n = self.floppy_count()
        r.ax = 0
        r.bx = 0
        if dl >= n:                # not installed: zeros, DL = count, no error
            r.cx = 0
            r.dx = n
            r.es = 0
            r.di = 0
            return None
        dtype = self.floppy_type(dl)
        cyls, spt, heads = rom.DRIVE_TYPE_LIMITS[dtype]
        r.bl = dtype
        r.ch = cyls - 1
        r.cl = spt
        r.dh = heads - 1
        r.dl = n
        r.es = rom.BIOS_SEGMENT
        r.di = rom.OFF_DPT_TYPES + 16 * (dtype - 1)
        return None

    # fixed-disk housekeeping functions: succeed for a present drive
    def _present_ok(self, r, dl, hdd):
        if not hdd:
            return ST_BAD_COMMAND
        disk, err = self._disk(dl, hdd)
        return err if err is not None else ST_OK

    _fn09 = _present_ok          # initialise drive parameters
    _fn0D = _present_ok          # alternate reset
    _fn10 = _present_ok          # test drive ready
    _fn11 = _present_ok          # recalibrate
    _fn12 = _present_ok          # controller RAM diagnostic
    _fn13 = _present_ok          # drive diagnostic
    _fn14 = _present_ok          # controller internal diagnostic

    # AH=0Ch seek
    def _fn0C(self, r, dl, hdd):
        if not hdd:
            return ST_BAD_COMMAND
        disk, err = self._disk(dl, hdd)
        if err is not None:
            return err
        cyl, head, _s = self._chs(r, True)
        if cyl >= disk.cylinders or head >= disk.heads:
            return ST_NOT_FOUND
        return ST_OK

    # AH=15h disk type
    def _fn15(self, r, dl, hdd):
        r.cf = False
        if hdd:
            disk = self.disks.get(dl) if dl - 0x80 < self.hdd_count() else None
            if disk is None:
                r.ah = 0
                return None
            r.ah = 3
            r.cx = disk.total_sectors >> 16
            r.dx = disk.total_sectors & 0xFFFF
            return None
        r.ah = 2 if dl < self.floppy_count() else 0
        return None

    # AH=16h change line (fixed disks: no such function; diskettes: _op_change)
    def _fn16(self, r, dl, hdd):
        return ST_BAD_COMMAND

    # AH=17h set media type for format (old style), 18h (new style)
    def _fn17(self, r, dl, hdd):
        if hdd or dl >= self.floppy_count():
            return ST_BAD_COMMAND
        return ST_OK

    def _fn18(self, r, dl, hdd):
        if hdd or dl >= self.floppy_count():
            return ST_BAD_COMMAND
        want = (r.ch | ((r.cl & 0xC0) << 2)) + 1, r.cl & 0x3F
        for dtype, (cyls, spt, _h) in rom.DRIVE_TYPE_LIMITS.items():
            if (cyls, spt) == want:
                r.es = rom.BIOS_SEGMENT
                r.di = rom.OFF_DPT_TYPES + 16 * (dtype - 1)
                return ST_OK
        return 0x0C                                   # media type not found

    # -- IRQ 6 ---------------------------------------------------------------------------
    def irq6(self):
        self.mem.wb(BDA_FD_RECAL, self.mem.rb(BDA_FD_RECAL) | 0x80)

    # -- snapshots ---------------------------------------------------------------------
    def get_state(self):
        return {"pending": {k: dict(v) for k, v in self.pending.items()}}

    def set_state(self, state):
        self.pending = {k: dict(v) for k, v in (state or {}).get("pending", {}).items()}


def _status_from_result(res):
    """The BIOS status for uPD765 result bytes ST0 ST1 ST2 ..."""
    st0, st1 = res[0], res[1]
    if st0 & 0xC0 == 0x00:
        return ST_OK
    if st0 & 0xC0 == 0x80:
        return ST_CONTROLLER
    for bit, status in ((0x80, ST_NOT_FOUND), (0x20, ST_CRC), (0x10, ST_DMA_OVERRUN),
                        (0x04, ST_NOT_FOUND), (0x02, ST_WRITE_PROTECT), (0x01, ST_ADDRESS_MARK)):
        if st1 & bit:
            return status
    return ST_CONTROLLER
