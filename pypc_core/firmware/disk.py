"""INT 13h: diskette (DL=00h-03h) and fixed disk (DL=80h-) services.

Data moves between ``machine.disks[DL]`` (a :class:`~pypc_core.storage.DiskImage`)
and memory at ES:BX as the DMA controller would move it (ROM pages are left
alone).  Results follow IBM: CF clear and AH=00h on success, CF set and AH =
status on error, the status also kept at 0040:0041 (diskette) or 0040:0074
(fixed disk).  AL = sectors transferred for reads/writes/verifies.

Status codes used:
  01h bad command or parameter   03h write protected    04h sector not found
  06h media changed (AH=16h)     09h DMA crosses a 64 KiB boundary (diskette)
  07h drive parameters (AH=08h on an absent fixed disk)
  20h controller failure (host I/O error)               80h timeout (no disk)

Choices (documented because a real controller would decide them):
* the starting C/H/S must lie inside the geometry (04h otherwise); a
  multi-sector transfer then continues across heads and cylinders, like the
  fixed-disk controller and the FDC's multi-track mode, and stops at the end
  of the disk with 04h and AL = sectors done;
* the 64 KiB DMA boundary check (09h, nothing transferred) applies to
  diskette reads and writes only;
* an empty floppy drive (no image) answers 80h (timeout), like a drive with
  its door open; AH=16h reports 06h for it;
* AH=15h reports change-line support (02h) for every floppy drive; the line
  is raised by ``DiskImage.mark_changed()`` and read-and-cleared by AH=16h
  only (reads do not fail with 06h).
"""

from ..storage.image import DiskImageError, DiskRangeError, DiskWriteProtected, SECTOR_SIZE
from . import rom
from .memio import (
    Service,
    BDA_FD_MOTOR, BDA_FD_MOTOR_COUNT, BDA_FD_RECAL, BDA_FD_STATUS, BDA_HD_STATUS,
    linear,
)

ST_OK = 0x00
ST_BAD_COMMAND = 0x01
ST_WRITE_PROTECT = 0x03
ST_NOT_FOUND = 0x04
ST_MEDIA_CHANGED = 0x06
ST_DRIVE_PARMS = 0x07
ST_DMA_BOUNDARY = 0x09
ST_CONTROLLER = 0x20
ST_TIMEOUT = 0x80

MOTOR_TICKS = 37        # ticks until the motor turns off after an access (about 2 s)


class DiskService(Service):
    # -- drives ---------------------------------------------------------------------
    @property
    def disks(self):
        return self.bios.machine.disks

    def floppy_count(self):
        return self.bios.floppy_count()

    def hdd_count(self):
        return self.bios.hdd_count()

    def floppy_type(self, drive):
        disk = self.disks.get(drive)
        if disk is not None:
            return disk.drive_type
        return 4              # an empty drive reports the most capable type

    # -- dispatch --------------------------------------------------------------------
    def int13(self, r):
        ah, dl = r.ah, r.dl
        hdd = bool(dl & 0x80)
        status_addr = BDA_HD_STATUS if hdd else BDA_FD_STATUS
        if ah == 0x01:                                   # status of last operation
            status = self.mem.rb(status_addr)
            r.ah = status
            r.al = status
            r.cf = status != 0
            return
        fn = getattr(self, f"_fn{ah:02X}", None)
        if fn is None:
            status = ST_BAD_COMMAND
        else:
            status = fn(r, dl, hdd)
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
        disk = self.disks.get(dl)
        if disk is None:
            return None, ST_TIMEOUT
        return disk, None

    def _motor(self, drive):
        self.mem.wb(BDA_FD_MOTOR, (self.mem.rb(BDA_FD_MOTOR) & 0xF0) | (1 << (drive & 3)))
        self.mem.wb(BDA_FD_MOTOR_COUNT, MOTOR_TICKS)

    # AH=00h reset
    def _fn00(self, r, dl, hdd):
        self.mem.wb(BDA_FD_STATUS, 0)
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
        if hdd:
            return r.ch | ((r.cl & 0xC0) << 2), r.dh, r.cl & 0x3F
        return r.ch, r.dh, r.cl

    def _transfer(self, r, dl, hdd, op):
        count = r.al
        disk, err = self._disk(dl, hdd)
        if err is not None:
            r.al = 0
            return err
        if not hdd:
            self._motor(dl)
        if count == 0:
            return ST_BAD_COMMAND
        addr = linear(r.es, r.bx)
        if not hdd and op != "verify" and (addr & 0xFFFF) + count * SECTOR_SIZE > 0x10000:
            r.al = 0
            return ST_DMA_BOUNDARY
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
            r.al = 0
            return ST_WRITE_PROTECT
        except (OSError, DiskImageError):
            r.al = 0
            return ST_CONTROLLER
        r.al = n
        return ST_OK if n == count else ST_NOT_FOUND

    # AH=05h format track
    def _fn05(self, r, dl, hdd):
        disk, err = self._disk(dl, hdd)
        if err is not None:
            return err
        if hdd:
            cyl, head, _s = self._chs(r, True)
            sectors = range(1, disk.sectors + 1)
            fill = 0x00
        else:
            self._motor(dl)
            cyl, head = r.ch, r.dh
            seg, off = self.mem.vector(0x1E)
            fill = self.mem.rb(linear(seg, off) + 8)
            fields = self.mem.read(linear(r.es, r.bx), 4 * r.al)
            sectors = [fields[i + 2] for i in range(0, len(fields), 4)
                       if fields[i + 3] == 2 and 1 <= fields[i + 2] <= disk.sectors]
        if not (0 <= cyl < disk.cylinders and 0 <= head < disk.heads):
            return ST_NOT_FOUND
        try:
            for s in sectors:
                disk.write_sectors(disk.chs_to_lba(cyl, head, s), bytes([fill]) * SECTOR_SIZE)
        except DiskWriteProtected:
            return ST_WRITE_PROTECT
        except (OSError, DiskImageError):
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

    # AH=16h change line
    def _fn16(self, r, dl, hdd):
        if hdd:
            return ST_BAD_COMMAND
        disk, err = self._disk(dl, hdd)
        if err is not None:
            return ST_MEDIA_CHANGED if err == ST_TIMEOUT and dl < self.floppy_count() else err
        return ST_MEDIA_CHANGED if disk.take_changed() else ST_OK

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
