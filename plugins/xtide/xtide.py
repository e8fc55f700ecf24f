"""An XT-IDE style hard-disk card: an ATA drive on the XT bus, with an
option ROM written here (``xtide.asm``, assembled to ``xtide_rom.bin``).

Ports
    300h data (8-bit transfers: one byte per access), 301h error (read) /
    features (write), 302h sector count, 303h sector number (LBA 0-7),
    304h/305h cylinder low/high (LBA 8-23), 306h drive/head (bit 4 drive,
    bit 6 LBA, LBA 24-27), 307h status (read) / command (write), 30Eh
    alternate status (read) / device control (write: bit 2 SRST).  No
    interrupt line: the ROM polls.

Commands: ECh IDENTIFY DEVICE, 20h/21h READ SECTORS, 30h/31h WRITE
SECTORS, 40h/41h READ VERIFY SECTORS, 91h INITIALIZE DEVICE PARAMETERS
(accepted for the drive's own geometry only), EFh SET FEATURES (01h 8-bit
transfers and the rest accepted), 1xh RECALIBRATE, 7xh SEEK, 90h EXECUTE
DEVICE DIAGNOSTIC.  Anything else, and the slave (drive 1, absent), is
ABRT.  A sector outside the disk is IDNF (error bit 4); a write to a
read-only image is ABRT with the write-fault bit (status bit 5); host I/O
errors are UNC.  Commands complete at once (no BSY time): the drive is a
fast solid-state one.

The drive is a :class:`pypc_core.storage.DiskImage` (hard-disk kind, with
its geometry as the storage layer finds it, and all its modes).  The ROM
(2 KiB at D000:0000) gets its checksum byte here when it is mapped.
"""

import importlib.resources

from pypc_core.device import Device, DeviceDeclaration, MemoryWindow
from pypc_core.errors import PypcError
from pypc_core.storage.image import DiskImageError, DiskWriteProtected, SECTOR_SIZE

BASE = 0x300
CTRL = BASE + 0x0E
ROM_BASE = 0xD0000
ROM_SIZE = 0x800
ROM_WINDOW = 0x1000                # the bus maps ROM in 4 KiB pages
PORTS = tuple(range(BASE, BASE + 8)) + (CTRL,)

BSY, DRDY, DF, DSC, DRQ, ERR = 0x80, 0x40, 0x20, 0x10, 0x08, 0x01
E_IDNF, E_UNC, E_ABRT = 0x10, 0x40, 0x04

ROM_NAME = "xtide_rom.bin"          # package data of pypc_plugins.xtide (pyproject.toml)


def rom_image():
    """The assembled ROM with its checksum byte set (sum of all bytes 0),
    read with importlib.resources from wherever the package is installed."""
    data = bytearray(importlib.resources.files(__package__).joinpath(ROM_NAME).read_bytes())
    data[-1] = (-sum(data[:-1])) & 0xFF
    return bytes(data)


class XtIde(Device):
    declaration = DeviceDeclaration(
        name="xtide", ports=list(PORTS),
        memory=[MemoryWindow(ROM_BASE, ROM_WINDOW, "rom")],
        capabilities=["hard-disk-controller"])

    def __init__(self, disk=None, name="xtide", image_path=None):
        """``disk``: the drive; without one the board gives it at attach:
        the image at ``image_path`` (opened as the machine opens its own),
        else, with a third-party BIOS, the machine's C: (``--hdd``)."""
        self.disk = disk
        self.image_path = image_path
        self.name = name
        self._board = None
        self.reset()

    def attach(self, board):
        self._board = board
        board.claim_ports(PORTS, read=self.port_read, write=self.port_write,
                          peek=self.port_peek)
        board.map_rom(ROM_BASE, rom_image())
        if self.disk is None:
            self.disk = self._board_disk(board)

    def _board_disk(self, board):
        from pypc_core.storage import DiskImage
        if board.drives is None:        # a scratch board (pypc plugins): a blank drive
            return DiskImage.from_bytes(bytes(17 * 4 * 512), kind="hdd")
        if self.image_path:
            return board.open_disk(self.image_path, "hdd", option="--xtide-image")
        disk = board.drives.get(0x80) if not board.builtin_bios else None
        if disk is None:
            raise PypcError("the xtide card needs a disk: --xtide-image IMAGE "
                            "(or --hdd IMAGE with a third-party --bios)")
        return disk

    def reset(self):
        self.regs = {"features": 0, "count": 1, "sector": 1, "cyl_lo": 0, "cyl_hi": 0,
                     "head": 0xA0}
        self.error = 0x01                 # diagnostic: no error
        self.status = DRDY | DSC
        self.buffer = bytearray()
        self.pos = 0
        self.op = None                    # None, "read", "write", "identify"
        self.lba = 0
        self.left = 0
        self.control = 0

    # -- registers ------------------------------------------------------------------
    def _selected(self):
        return not self.regs["head"] & 0x10

    def _status(self):
        return self.status if self._selected() else 0x00

    def port_peek(self, port):
        if port in (BASE + 7, CTRL):
            return self._status()
        if port == BASE:
            return None
        return self.port_read(port)

    def port_read(self, port):
        if port in (BASE + 7, CTRL):
            return self._status()
        if port == BASE + 1:
            return self.error
        if port == BASE:
            return self._read_data()
        name = {BASE + 2: "count", BASE + 3: "sector", BASE + 4: "cyl_lo",
                BASE + 5: "cyl_hi", BASE + 6: "head"}[port]
        return self.regs[name]

    def port_write(self, port, value):
        value &= 0xFF
        if port == CTRL:
            if value & 0x04 and not self.control & 0x04:
                self.reset()
            self.control = value
            return
        if port == BASE:
            self._write_data(value)
            return
        if port == BASE + 7:
            self._command(value)
            return
        name = {BASE + 1: "features", BASE + 2: "count", BASE + 3: "sector",
                BASE + 4: "cyl_lo", BASE + 5: "cyl_hi", BASE + 6: "head"}[port]
        self.regs[name] = value

    # -- addressing -------------------------------------------------------------------
    def _address(self):
        """LBA of the task file's address, or None outside the disk."""
        r = self.regs
        d = self.disk
        if r["head"] & 0x40:
            lba = (r["head"] & 0x0F) << 24 | r["cyl_hi"] << 16 | r["cyl_lo"] << 8 | r["sector"]
            return lba if lba < d.total_sectors else None
        cyl = r["cyl_hi"] << 8 | r["cyl_lo"]
        head = r["head"] & 0x0F
        sec = r["sector"]
        if not (cyl < d.cylinders and head < d.heads and 1 <= sec <= d.sectors):
            return None
        return (cyl * d.heads + head) * d.sectors + sec - 1

    def _set_address(self, lba):
        """The task file after the last sector transferred (as ATA leaves it)."""
        r = self.regs
        d = self.disk
        lba = min(lba, d.total_sectors - 1)
        if r["head"] & 0x40:
            r["sector"], r["cyl_lo"], r["cyl_hi"] = lba & 0xFF, lba >> 8 & 0xFF, lba >> 16 & 0xFF
            r["head"] = (r["head"] & 0xF0) | (lba >> 24 & 0x0F)
        else:
            cyl, rem = divmod(lba, d.heads * d.sectors)
            head, sec = divmod(rem, d.sectors)
            r["sector"], r["cyl_lo"], r["cyl_hi"] = sec + 1, cyl & 0xFF, cyl >> 8
            r["head"] = (r["head"] & 0xF0) | head

    # -- commands ---------------------------------------------------------------------
    def _log(self, level, message):
        """A record in the machine's diagnostics ring (``board.log``)."""
        if self._board is not None:
            self._board.log(level, message)

    def _refused_write(self):
        self._log("warning", f"write at LBA {self.lba} refused (ABRT): the disk is "
                             f"write-protected (read-only image)")

    def _fail(self, error, extra=0):
        self.error = error
        self.status = DRDY | DSC | ERR | extra
        self.op = None
        self.buffer = bytearray()

    def _command(self, cmd):
        if not self._selected():
            return                                  # no slave drive
        self.error = 0
        self.status = DRDY | DSC
        count = self.regs["count"] or 256
        if cmd == 0xEC:
            self.buffer = bytearray(self._identify())
            self.pos = 0
            self.op = "identify"
            self.status |= DRQ
        elif cmd in (0x20, 0x21, 0x30, 0x31, 0x40, 0x41):
            lba = self._address()
            if lba is None:
                self._fail(E_IDNF)
                return
            self.lba, self.left = lba, count
            if cmd >= 0x40:
                n = min(count, self.disk.total_sectors - lba)
                try:
                    self.disk.read_sectors(lba, n)
                except (OSError, DiskImageError) as exc:
                    self._log("error", f"verify at LBA {lba} failed on the host ({exc}): UNC")
                    self._fail(E_UNC)
                    return
                self._set_address(lba + n - 1)
                if n < count:
                    self._fail(E_IDNF)
                return
            if cmd >= 0x30:
                if self.disk.readonly:
                    self._refused_write()
                    self._fail(E_ABRT, DF)
                    return
                self.op = "write"
                self.buffer = bytearray()
                self.status |= DRQ
            else:
                self.op = "read"
                self._next_read()
        elif cmd == 0x91:
            heads = (self.regs["head"] & 0x0F) + 1
            if heads != self.disk.heads or self.regs["count"] != self.disk.sectors:
                self._fail(E_ABRT)
        elif cmd == 0xEF or 0x10 <= cmd <= 0x1F or 0x70 <= cmd <= 0x7F:
            pass
        elif cmd == 0x90:
            self.error = 0x01
        else:
            self._fail(E_ABRT)

    def _next_read(self):
        if self.left <= 0:
            self.op = None
            self.status = DRDY | DSC
            return
        if self.lba >= self.disk.total_sectors:
            self._fail(E_IDNF)
            return
        try:
            self.buffer = bytearray(self.disk.read_sectors(self.lba, 1))
        except (OSError, DiskImageError) as exc:
            self._log("error", f"read at LBA {self.lba} failed on the host ({exc}): UNC")
            self._fail(E_UNC)
            return
        self._set_address(self.lba)
        self.pos = 0
        self.status = DRDY | DSC | DRQ

    def _read_data(self):
        if self.op not in ("read", "identify") or self.pos >= len(self.buffer):
            return 0xFF
        value = self.buffer[self.pos]
        self.pos += 1
        if self.pos >= len(self.buffer):
            if self.op == "identify":
                self.op = None
                self.status = DRDY | DSC
            else:
                self.lba += 1
                self.left -= 1
                self._next_read()
        return value

    def _write_data(self, value):
        if self.op != "write":
            return
        self.buffer.append(value)
        if len(self.buffer) < SECTOR_SIZE:
            return
        if self.lba >= self.disk.total_sectors:
            self._fail(E_IDNF)
            return
        try:
            self.disk.write_sectors(self.lba, bytes(self.buffer))
        except DiskWriteProtected:
            self._refused_write()
            self._fail(E_ABRT, DF)
            return
        except (OSError, DiskImageError) as exc:
            self._log("error", f"write at LBA {self.lba} failed on the host ({exc}): UNC")
            self._fail(E_UNC)
            return
        self._set_address(self.lba)
        self.buffer = bytearray()
        self.lba += 1
        self.left -= 1
        if self.left <= 0:
            self.op = None
            self.status = DRDY | DSC

    def _identify(self):
        d = self.disk
        w = [0] * 256
        w[0] = 0x0040                                # fixed disk
        w[1], w[3], w[6] = d.cylinders, d.heads, d.sectors
        w[49] = 0x0200                               # LBA supported
        w[53] = 0x0001
        w[54], w[55], w[56] = d.cylinders, d.heads, d.sectors
        cap = d.cylinders * d.heads * d.sectors
        w[57], w[58] = cap & 0xFFFF, cap >> 16
        w[60], w[61] = d.total_sectors & 0xFFFF, d.total_sectors >> 16

        def text(first, count, s):
            s = s.ljust(2 * count)[:2 * count].encode("ascii")
            for i in range(count):
                w[first + i] = s[2 * i] << 8 | s[2 * i + 1]
        text(10, 10, "PYPC0001")
        text(23, 4, "1.0")
        text(27, 20, "pypc XT-IDE disk")
        return b"".join(v.to_bytes(2, "little") for v in w)

    # -- snapshots -------------------------------------------------------------------
    def get_state(self):
        return {"regs": dict(self.regs), "error": self.error, "status": self.status,
                "buffer": list(self.buffer), "pos": self.pos, "op": self.op, "lba": self.lba,
                "left": self.left, "control": self.control}

    def set_state(self, state):
        self.regs = {k: int(v) for k, v in state["regs"].items()}
        self.error, self.status = int(state["error"]), int(state["status"])
        self.buffer = bytearray(state["buffer"])
        self.pos, self.op = int(state["pos"]), state["op"]
        self.lba, self.left = int(state["lba"]), int(state["left"])
        self.control = int(state["control"])
