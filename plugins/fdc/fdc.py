"""NEC uPD765 floppy disk controller on an IBM-style diskette adapter card.

Ports
    3F2h  DOR (write): bits 0-1 drive select, bit 2 /RESET (0 holds the
          controller in reset), bit 3 DMA and IRQ enable (the card's
          drivers), bits 4-7 motor on for drives 0-3.
    3F4h  MSR (read): bit 7 RQM, 6 DIO (1: controller to CPU), 5 NDM
          (execution phase in non-DMA mode), 4 CB (busy), 0-3 drive seeking.
    3F5h  data register: command bytes, execution data (non-DMA mode),
          result bytes.
    3F7h  DIR (read; AT-style): bit 7 the disk-change line of the selected
          drive while its motor is on.  Writes set the data-rate register,
          which is kept and read back nowhere (the emulated drive reads any
          media at the rate it was written with).

Commands (low five bits; MT 80h, MF 40h, SK 20h): 02h read track, 03h
specify, 04h sense drive status, 05h write data, 06h read data, 07h
recalibrate, 08h sense interrupt status, 0Ah read ID, 0Dh format track, 0Fh
seek.  Anything else is an invalid command: one result byte, ST0 = 80h.
A command byte drops the INT line; the statuses of seeks, recalibrates and
a reset that nobody sensed stay queued for sense interrupt status.

Time (emulated CPU cycles; 4,772,727 a second)
    * the disk turns at 300 rpm (one revolution every 200 ms) once the
      motor has been on for SPINUP (500 ms); with the motor off, no media or
      no drive there are no index pulses, and a command that needs the disk
      waits until they come (for ever: the BIOS times out and resets);
    * a track's sectors are evenly spaced: sector i's ID field passes at
      i/n of a revolution after the index hole, its data ends at (i+1)/n;
      a search gives up at the second index pulse (no data / missing
      address mark);
    * a step takes (16 - SRT) units of 2 ms (1 ms for 15 and 18 sector
      media, the 500 kbit/s rate); the head load time HLT x 4 ms (2 ms) is
      spent when the head was unloaded (HUT x 32 ms (16 ms) after the last
      access).

Data moves through DMA channel 2 of the 8237 one sector at a time, when the
sector has passed under the head; the 8237's terminal count ends a read or
write (normal termination); reaching EOT without it is "end of cylinder".
A channel that takes fewer bytes than a sector (masked, DOR bit 3 clear) is
an overrun (ST1 bit 4).  In non-DMA mode (specify ND=1) each sector's bytes
go through the data register with RQM/NDM and IRQ 6 raised while a byte
waits; the CPU may take its time (no overrun), and the command ends at EOT.

Media
    Drives 0 .. drives-1 exist; ``disks`` maps drive number to a
    :class:`pypc_core.storage.DiskImage` (the machine's ``disks``, read at
    each access, so a changed image is seen).  Every image sector is
    ID (C, H, R, 2) on physical track C, head H.  A drive's head moves on
    tracks 0 .. cylinders-1 of its media (0-79 without media) and stops at
    the last one: seeking further leaves the controller's cylinder number
    and the head apart, which reads report as "wrong cylinder" (ND + WC).
    Formatting a track with the image's own layout (C = track, H = head,
    N = 2, R = 1..sectors in any order) fills those image sectors with the
    filler byte; any other layout is kept by the controller in memory
    (part of its state, not the image file, which cannot hold it) and read
    and written from there.  A read-only image is write-protected (ST1 NW,
    ST3 WP); host I/O errors are data errors (ST1 DE, ST2 DD).

Disk-change line
    ``DiskImage.media_changed`` is the drive's change line (active without
    media); a step pulse with media in the drive clears it, as on real
    drives.
"""

import base64

from pypc_core.device import Device, DeviceDeclaration
from pypc_core.scheduler import CPU_HZ
from pypc_core.storage.image import DiskImageError, DiskWriteProtected, SECTOR_SIZE

DOR_PORT, MSR_PORT, DATA_PORT, DIR_PORT = 0x3F2, 0x3F4, 0x3F5, 0x3F7
PORTS = (DOR_PORT, MSR_PORT, DATA_PORT, DIR_PORT)
IRQ = 6
DMA_CHANNEL = 2

REV = CPU_HZ // 5                  # 300 rpm
SPINUP = CPU_HZ // 2               # motor on to index pulses
MS = CPU_HZ / 1000.0
DEFAULT_TRACKS = 80                # a drive's travel without media
RECAL_STEPS = 77                   # the uPD765 gives up after 77 steps

# MSR
RQM, DIO, NDM, CB = 0x80, 0x40, 0x20, 0x10
# ST0
IC_NORMAL, IC_ABNORMAL, IC_INVALID, IC_READY = 0x00, 0x40, 0x80, 0xC0
ST0_SE, ST0_EC, ST0_NR, ST0_HD = 0x20, 0x10, 0x08, 0x04
# ST1
ST1_EN, ST1_DE, ST1_OR, ST1_ND, ST1_NW, ST1_MA = 0x80, 0x20, 0x10, 0x04, 0x02, 0x01
# ST2
ST2_CM, ST2_DD, ST2_WC, ST2_BC, ST2_MD = 0x40, 0x20, 0x10, 0x02, 0x01
# ST3
ST3_FT, ST3_WP, ST3_RY, ST3_T0, ST3_TS, ST3_HD = 0x80, 0x40, 0x20, 0x10, 0x08, 0x04

# command code -> (name, parameter bytes after the command byte)
COMMANDS = {
    0x02: ("read_track", 8), 0x03: ("specify", 2), 0x04: ("sense_drive", 1),
    0x05: ("write_data", 8), 0x06: ("read_data", 8), 0x07: ("recalibrate", 1),
    0x08: ("sense_int", 0), 0x0A: ("read_id", 1), 0x0D: ("format", 5),
    0x0F: ("seek", 2),
}


class Fdc765(Device):
    """The controller card.  ``disks``: {drive: DiskImage} (may change at
    any time); ``drives``: how many drives are cabled (1-4)."""

    declaration = DeviceDeclaration(name="fdc", ports=list(PORTS), irqs=[IRQ],
                                    dma_channels=[DMA_CHANNEL],
                                    capabilities=["floppy-controller"])

    def __init__(self, disks=None, drives=2, name="fdc"):
        if not 1 <= drives <= 4:
            raise ValueError(f"a floppy controller cables 1-4 drives, not {drives}")
        self.disks = disks if disks is not None else {}
        self.drives = drives
        self.name = name
        self.clock = lambda: 0
        self._irq = None
        self._dma = None
        self._board = None
        self.custom = {}               # (drive, track, head) -> [[C, H, R, N, bytes], ...]
        self.track = [0, 0, 0, 0]      # physical head position per drive
        self.motor_since = [None] * 4  # cycle a motor was switched on
        self.srt, self.hut, self.hlt, self.nd = 8, 15, 1, False
        self.dor = 0
        self.data_rate = 0
        self.head_idle_at = None       # cycle the head was last used
        self.reset()

    # -- wiring --------------------------------------------------------------------
    def attach(self, board):
        self._board = board
        if board.drives is not None:        # the machine's drives (a scratch board has none)
            self.disks = board.drives
            self.drives = max(1, min(4, board.floppy_drive_count or 1))
        self.clock = board.clock
        self._irq = board.irq(IRQ)
        self._dma = board.dma(DMA_CHANNEL)
        board.claim_ports(PORTS, read=self.port_read, write=self.port_write,
                          peek=self.port_peek)

    def reset(self):
        """Power-on: DOR cleared (controller held in reset, motors off)."""
        self.dor = 0
        self.motor_since = [None] * 4
        self._controller_reset()
        self.phase = "reset"

    def _controller_reset(self):
        self.phase = "command"         # command, exec, result, reset
        self.cmd = []                  # bytes of the command being received
        self.result = []
        self.ex = None                 # the execution in progress (a dict)
        self.buffer = []               # non-DMA execution bytes
        self.pcn = [0, 0, 0, 0]
        self.seeks = {}                # drive -> {"end": cycle, "st0": , "pcn": }
        self.int_queue = []            # [st0, pcn] for sense interrupt status
        self.int_line = False
        self._update_irq()

    # -- time ----------------------------------------------------------------------
    def _rate_units(self, drive):
        disk = self._disk(drive)
        fast = disk is not None and disk.sectors >= 15
        return 1.0 if fast else 2.0        # ms per SRT/HLT unit

    def _step_cycles(self, drive):
        return int((16 - self.srt) * self._rate_units(drive) * MS)

    def _head_load(self, now, drive):
        unit = self._rate_units(drive)
        idle = self.head_idle_at
        if idle is not None and now - idle <= self.hut_cycles(unit):
            return 0
        return int(max(1, self.hlt) * 2 * unit * MS)

    def hut_cycles(self, unit):
        return int((self.hut or 16) * 16 * unit * MS)

    def index_origin(self, drive):
        """Cycle of an index pulse (the disk turns from then on), or None."""
        if drive >= self.drives or self._disk(drive) is None:
            return None
        since = self.motor_since[drive]
        if since is None:
            return None
        return since + SPINUP

    def next_event(self):
        due = None
        for s in self.seeks.values():
            if due is None or s["end"] < due:
                due = s["end"]
        if self.ex is not None and self.ex.get("at") is not None:
            at = self.ex["at"]
            if due is None or at < due:
                due = at
        return due

    def advance(self, cycle):
        while True:
            due = self.next_event()
            if due is None or due > cycle:
                return
            for drive in sorted(self.seeks):
                if self.seeks[drive]["end"] == due:
                    self._seek_done(drive)
                    break
            else:
                self._exec_event(due)

    def _catch_up(self):
        self.advance(self.clock())

    # -- media ---------------------------------------------------------------------
    def _disk(self, drive):
        if drive >= self.drives:
            return None
        return self.disks.get(drive)

    def _tracks(self, drive):
        disk = self._disk(drive)
        return disk.cylinders if disk is not None else DEFAULT_TRACKS

    def _layout(self, drive, track, head):
        """[(C, H, R, N, where)] in rotation order; where is ("img", lba)
        or ("mem", index into the custom track)."""
        custom = self.custom.get((drive, track, head))
        if custom is not None:
            return [(c, h, r, n, ("mem", i)) for i, (c, h, r, n, _d) in enumerate(custom)]
        disk = self._disk(drive)
        if disk is None or track >= disk.cylinders or head >= disk.heads:
            return []
        base = (track * disk.heads + head) * disk.sectors
        return [(track, head, s, 2, ("img", base + s - 1)) for s in range(1, disk.sectors + 1)]

    def _read_sector(self, drive, track, head, where):
        kind, idx = where
        if kind == "img":
            return self._disk(drive).read_sectors(idx, 1)
        return self.custom[(drive, track, head)][idx][4]

    def _write_sector(self, drive, track, head, where, data):
        kind, idx = where
        if kind == "img":
            self._disk(drive).write_sectors(idx, data)
        else:
            rec = self.custom[(drive, track, head)][idx]
            size = len(rec[4])
            rec[4] = bytes(data[:size]) + bytes(max(0, size - len(data)))

    def _protected(self, drive):
        disk = self._disk(drive)
        return disk is None or disk.readonly

    def _log(self, level, message):
        """A record in the machine's diagnostics ring (``board.log``)."""
        if self._board is not None:
            self._board.log(level, message)

    def _refused_write(self, drive, what):
        self._log("warning", f"drive {drive} ({'ABCD'[drive & 3]}:): {what} refused, "
                             f"the disk is write-protected (read-only image)")

    # -- IRQ -------------------------------------------------------------------------
    def _update_irq(self):
        if self._irq is not None:
            self._irq.set(self.int_line and bool(self.dor & 0x08))

    def _set_int(self, level):
        self.int_line = bool(level)
        self._update_irq()

    # -- ports -----------------------------------------------------------------------
    def msr(self):
        if self.phase == "reset":
            return 0
        busy = 0
        for drive in self.seeks:
            busy |= 1 << drive
        if self.phase == "command":
            return RQM | busy | (CB if self.cmd else 0)
        if self.phase == "result":
            return RQM | DIO | CB | busy
        ex = self.ex or {}
        if ex.get("pio"):
            if ex["pio"] == "out" and self.buffer:
                return RQM | DIO | NDM | CB | busy
            if ex["pio"] == "in" and ex.get("want"):
                return RQM | NDM | CB | busy
            return NDM | CB | busy
        return CB | busy

    def dir_value(self):
        drive = self.dor & 3
        if not self.dor & (0x10 << drive):
            return 0x00
        disk = self._disk(drive)
        changed = disk is None or bool(disk.media_changed)
        return 0x80 if changed else 0x00

    def port_peek(self, port):
        if port == MSR_PORT:
            return self.msr()
        if port == DIR_PORT:
            return self.dir_value()
        if port == DOR_PORT:
            return 0xFF
        return None

    def port_read(self, port):
        self._catch_up()
        if port == MSR_PORT:
            return self.msr()
        if port == DIR_PORT:
            return self.dir_value()
        if port == DATA_PORT:
            return self._read_data()
        return 0xFF                      # the DOR is write-only

    def port_write(self, port, value):
        self._catch_up()
        value &= 0xFF
        if port == DOR_PORT:
            self._write_dor(value)
        elif port == DATA_PORT:
            self._write_data(value)
        elif port == DIR_PORT:
            self.data_rate = value & 3

    def _write_dor(self, value):
        now = self.clock()
        old = self.dor
        self.dor = value
        for d in range(4):
            on = bool(value & (0x10 << d))
            if on and self.motor_since[d] is None:
                self.motor_since[d] = now
            elif not on:
                self.motor_since[d] = None
        if not value & 0x04:
            if self.phase != "reset":
                self._controller_reset()
                self.phase = "reset"
        elif self.phase == "reset" or not old & 0x04:
            # leaving reset: the ready lines of all four drives "changed"
            self._controller_reset()
            self.int_queue = [[IC_READY | d, 0] for d in range(4)]
            self._set_int(True)
        if self.ex is not None and (old ^ value) & 0xF0:
            self._replan(now)             # a motor came on or went off
        self._update_irq()
        if self._board is not None:
            self._board.reschedule()

    def _read_data(self):
        if self.phase == "result":
            value = self.result.pop(0)
            if self.int_line and self.ex is None:
                self._set_int(False)          # the first result byte clears INT
            if not self.result:
                self.phase = "command"
            return value
        if self.phase == "exec" and self.ex and self.ex.get("pio") == "out" and self.buffer:
            value = self.buffer.pop(0)
            if not self.buffer:
                self._set_int(False)
                self._pio_sector_taken()
            return value
        return 0xFF

    def _write_data(self, value):
        if self.phase == "exec" and self.ex and self.ex.get("pio") == "in" and self.ex.get("want"):
            self.buffer.append(value)
            self.ex["want"] -= 1
            if not self.ex["want"]:
                self._set_int(False)
                if self.ex.get("fmt"):
                    self._pio_format_given()
                else:
                    self._pio_sector_given()
            return
        if self.phase != "command":
            return                             # ignored, as by the chip
        if self.int_line:
            # a command byte drops INT: a seek's or recalibrate's end (or a
            # reset's ready change) that was not sensed yet stays queued for
            # sense interrupt status, and the next seek's end is a new edge
            # (BIOSes that seek after a recalibrate without sensing it, as
            # the Super PC/Turbo XT BIOS does, wait for that edge)
            self._set_int(False)
        self.cmd.append(value)
        code = self.cmd[0] & 0x1F
        name, nparams = COMMANDS.get(code, ("invalid", 0))
        if len(self.cmd) < 1 + nparams:
            return
        cmd, self.cmd = self.cmd, []
        getattr(self, "_cmd_" + name)(cmd)
        if self._board is not None:
            self._board.reschedule()

    def _finish(self, result):
        self.ex = None
        self.buffer = []
        self.result = list(result)
        self.phase = "result"

    # -- commands without execution phase ---------------------------------------------
    def _cmd_invalid(self, cmd):
        # (guests probe with commands this controller lacks, e.g. 10h version)
        self._log("debug", f"invalid command {cmd[0]:02X}h: ST0 = 80h")
        self._finish([IC_INVALID])

    def _cmd_specify(self, cmd):
        self.srt, self.hut = cmd[1] >> 4, cmd[1] & 0x0F
        self.hlt, self.nd = cmd[2] >> 1, bool(cmd[2] & 1)

    def _st3(self, drive, head):
        st3 = drive | (head << 2) | ST3_RY
        disk = self._disk(drive)
        if drive < self.drives and self.track[drive] == 0:
            st3 |= ST3_T0
        if drive < self.drives and (disk is None or disk.heads > 1):
            st3 |= ST3_TS
        if self._protected(drive):
            st3 |= ST3_WP
        return st3

    def _cmd_sense_drive(self, cmd):
        self._finish([self._st3(cmd[1] & 3, cmd[1] >> 2 & 1)])

    def _cmd_sense_int(self, cmd):
        if not self.int_queue:
            self._finish([IC_INVALID])
            return
        st0, pcn = self.int_queue.pop(0)
        if not self.int_queue:
            self._set_int(False)
        self._finish([st0, pcn])

    # -- seek and recalibrate ----------------------------------------------------------
    def _start_seek(self, drive, head, target, recal):
        now = self.clock()
        cur = self.pcn[drive]
        steps = min(cur, RECAL_STEPS) if recal else abs(target - cur)
        if recal and drive < self.drives:
            steps = min(self.track[drive], RECAL_STEPS)
            found = self.track[drive] <= RECAL_STEPS
        else:
            found = drive < self.drives
        if recal and drive >= self.drives:
            steps, found = RECAL_STEPS, False
        direction = -1 if recal or target < cur else 1
        end = now + max(1, steps) * self._step_cycles(drive)
        st0 = ST0_SE | (head << 2) | drive
        if recal:
            pcn = 0 if found else (cur - steps) & 0xFF
            if not found:
                st0 |= IC_ABNORMAL | ST0_EC
        else:
            pcn = target
        self.seeks[drive] = {"end": end, "st0": st0, "pcn": pcn, "steps": steps,
                             "dir": direction}

    def _cmd_recalibrate(self, cmd):
        self._start_seek(cmd[1] & 3, 0, 0, True)

    def _cmd_seek(self, cmd):
        self._start_seek(cmd[1] & 3, cmd[1] >> 2 & 1, cmd[2], False)

    def _seek_done(self, drive):
        s = self.seeks.pop(drive)
        self.pcn[drive] = s["pcn"]
        if drive < self.drives:
            tracks = self._tracks(drive)
            self.track[drive] = max(0, min(tracks - 1, self.track[drive] + s["dir"] * s["steps"]))
            disk = self._disk(drive)
            if s["steps"] and disk is not None:
                disk.media_changed = False      # a step pulse resets the change line
        self.int_queue.append([s["st0"], s["pcn"]])
        self._set_int(True)

    # -- commands with an execution phase ---------------------------------------------
    def _params(self, cmd):
        return {"mt": bool(cmd[0] & 0x80), "mf": bool(cmd[0] & 0x40), "sk": bool(cmd[0] & 0x20),
                "drive": cmd[1] & 3, "head": cmd[1] >> 2 & 1}

    def _begin(self, ex):
        now = self.clock()
        ex["st1"] = ex["st2"] = 0
        ex["pio"] = None
        ex["start"] = now + self._head_load(now, ex["drive"])
        self.ex = ex
        self.phase = "exec"
        self.head_idle_at = None
        self._replan(ex["start"])

    def _cmd_read_data(self, cmd):
        ex = self._params(cmd)
        ex.update(op="read", c=cmd[2], h=cmd[3], r=cmd[4], n=cmd[5], eot=cmd[6],
                  dtl=cmd[8], count=0)
        self._begin(ex)

    def _cmd_write_data(self, cmd):
        ex = self._params(cmd)
        ex.update(op="write", c=cmd[2], h=cmd[3], r=cmd[4], n=cmd[5], eot=cmd[6],
                  dtl=cmd[8], count=0)
        if self._protected(ex["drive"]) and ex["drive"] < self.drives \
                and self._disk(ex["drive"]) is not None:
            self.ex = ex
            self._refused_write(ex["drive"], "write data")
            self._result_error(ex, IC_ABNORMAL, ST1_NW, 0)
            return
        self._begin(ex)

    def _cmd_read_track(self, cmd):
        ex = self._params(cmd)
        ex.update(op="track", c=cmd[2], h=cmd[3], r=cmd[4], n=cmd[5], eot=cmd[6],
                  dtl=cmd[8], count=0, index=0)
        self._begin(ex)

    def _cmd_read_id(self, cmd):
        ex = self._params(cmd)
        ex.update(op="id", c=0, h=0, r=0, n=0)
        self._begin(ex)

    def _cmd_format(self, cmd):
        ex = self._params(cmd)
        ex.update(op="format", n=cmd[2], sc=cmd[3], gpl=cmd[4], fill=cmd[5],
                  c=0, h=0, r=0)
        if self._disk(ex["drive"]) is not None and self._protected(ex["drive"]):
            self.ex = ex
            self._refused_write(ex["drive"], "format track")
            self._result_error(ex, IC_ABNORMAL, ST1_NW, 0)
            return
        self._begin(ex)

    # -- execution ------------------------------------------------------------------------
    def _replan(self, now):
        """Find when the execution in progress next has something to do."""
        ex = self.ex
        if ex is None or ex.get("pio") and (self.buffer or ex.get("want")):
            return
        now = max(now, ex["start"])
        drive = ex["drive"]
        origin = self.index_origin(drive)
        if origin is None:
            ex["at"] = None                       # no index pulses: wait
            ex["plan"] = None
            return
        t = max(now, origin)
        # the first index pulse at or after t
        k = -(-(t - origin) // REV)
        first_index = origin + k * REV
        if ex["op"] == "format":
            ex["plan"] = ["format", first_index]
            ex["at"] = first_index + REV
            return
        track = self.track[drive] if drive < self.drives else 0
        layout = self._layout(drive, track, ex["head"])
        n = len(layout)
        deadline = first_index + REV              # the second index pulse
        if not n:
            ex["plan"] = ["error", IC_ABNORMAL, ST1_MA, 0]
            ex["at"] = deadline
            return
        slot = REV // n
        if ex["op"] == "track":
            i = ex["index"]
            if i >= n:
                ex["plan"] = ["error", IC_ABNORMAL, ST1_EN, 0]
                ex["at"] = t
                return
            if i == 0:
                ex["track_base"] = first_index
            end = ex["track_base"] + (i + 1) * slot
            if end < t:
                end += REV * (-(-(t - end) // REV))
            ex["plan"] = ["sector", i]
            ex["at"] = end
            return
        # position: IDs pass at index + i*slot + slot/16
        rot = (t - origin) % REV
        start_i = -(-(rot - slot // 16) // slot)       # first ID at or after t
        base = t - rot
        wrong_cyl = False
        for j in range(2 * n + 1):
            i = (start_i + j) % n
            tid = base + (start_i + j) * slot + slot // 16
            if tid >= deadline:
                break
            c, h, r, nn, _where = layout[i]
            if ex["op"] == "id":
                ex["plan"] = ["id", i]
                ex["at"] = tid
                return
            if (h, r, nn) == (ex["h"], ex["r"], ex["n"]):
                if c == ex["c"]:
                    ex["plan"] = ["sector", i]
                    ex["at"] = tid - slot // 16 + slot
                    return
                wrong_cyl = True
        st2 = ST2_WC if wrong_cyl else 0
        if wrong_cyl and ex["c"] == 0xFF:
            st2 = ST2_BC
        ex["plan"] = ["error", IC_ABNORMAL, ST1_ND, st2]
        ex["at"] = deadline

    def _exec_event(self, at):
        ex = self.ex
        plan = ex["plan"]
        ex["at"] = None
        kind = plan[0]
        if kind == "error":
            self._result_error(ex, plan[1], plan[2], plan[3])
        elif kind == "id":
            c, h, r, n, _w = self._layout(ex["drive"], self.track[ex["drive"]], ex["head"])[plan[1]]
            ex.update(c=c, h=h, r=r, n=n)
            self._result(ex, IC_NORMAL)
        elif kind == "format":
            self._do_format(ex, plan[1], at)
        else:
            self._do_sector(ex, plan[1], at)

    def _st0(self, ex, ic):
        return ic | (ex["head"] << 2) | ex["drive"]

    def _result(self, ex, ic):
        self.head_idle_at = self.clock()
        self._finish([self._st0(ex, ic), ex["st1"], ex["st2"],
                      ex["c"] & 0xFF, ex["h"] & 0xFF, ex["r"] & 0xFF, ex["n"] & 0xFF])
        self._set_int(True)

    def _result_error(self, ex, ic, st1, st2):
        ex["st1"] = ex.get("st1", 0) | st1
        ex["st2"] = ex.get("st2", 0) | st2
        self._result(ex, ic)

    # DMA
    def _dma_ready(self):
        return self._dma is not None and bool(self.dor & 0x08)

    def _dma_to_memory(self, data):
        """Returns (bytes taken, terminal count)."""
        if not self._dma_ready():
            return 0, False
        got = self._dma.transfer(data)
        if not isinstance(got, int):
            got = len(got)
        return got, self._dma.terminal_count

    def _dma_from_memory(self, length):
        """Returns (bytes, terminal count)."""
        if not self._dma_ready():
            return b"", False
        dma, ch = self._dma.dma, self._dma.ch
        kind = dma.transfer_type(ch)
        if kind == 2:                                # read: memory -> device
            data = self._dma.transfer(length)
        elif kind == 1:                              # the DMA writes memory from a floating bus
            taken = self._dma.transfer(b"\xFF" * length)
            data = b"\xFF" * taken
        else:
            data = bytes(self._dma.transfer(length))
        return bytes(data), self._dma.terminal_count

    def _sector_size(self, ex):
        n = ex["n"]
        return 128 << min(n, 7) if n else max(1, min(ex["dtl"], 128))

    def _do_sector(self, ex, i, at):
        drive = ex["drive"]
        track = self.track[drive]
        layout = self._layout(drive, track, ex["head"])
        c, h, r, n, where = layout[i]
        size = 128 << min(n, 7)
        if ex["op"] == "track" and (c, h, r, n) != (ex["c"], ex["h"], ex["r"], ex["n"]):
            ex["st1"] |= ST1_ND
        want = self._sector_size(ex) if ex["op"] != "track" else size
        if ex["op"] == "write":
            if self.nd:
                ex["pio"] = "in"
                ex["want"] = want
                ex["sector"] = [i, track]
                self.buffer = []
                self._set_int(True)
                return
            data, tc = self._dma_from_memory(want)
            if len(data) < want:
                self._result_error(ex, IC_ABNORMAL, ST1_OR, 0)
                return
            if not self._store(ex, drive, track, where, data, size):
                return
            self._next_sector(ex, tc, at)
            return
        try:
            data = bytes(self._read_sector(drive, track, ex["head"], where))
        except (OSError, DiskImageError) as exc:
            self._log("error", f"drive {drive}: reading track {track} head {ex['head']} "
                               f"failed on the host ({exc}): data error")
            self._result_error(ex, IC_ABNORMAL, ST1_DE, ST2_DD)
            return
        data = (data + bytes(size))[:size]
        if want < size:
            data = data[:want]
        if self.nd:
            ex["pio"] = "out"
            self.buffer = list(data)
            self._set_int(True)
            return
        taken, tc = self._dma_to_memory(data)
        if taken < len(data) and not tc:
            self._result_error(ex, IC_ABNORMAL, ST1_OR, 0)
            return
        self._next_sector(ex, tc, at)

    def _store(self, ex, drive, track, where, data, size):
        data = bytes(data) + bytes(max(0, size - len(data)))
        try:
            self._write_sector(drive, track, ex["head"], where, data[:size])
        except DiskWriteProtected:
            self._refused_write(drive, "write data")
            self._result_error(ex, IC_ABNORMAL, ST1_NW, 0)
            return False
        except (OSError, DiskImageError) as exc:
            self._log("error", f"drive {drive}: writing track {track} head {ex['head']} "
                               f"failed on the host ({exc}): data error")
            self._result_error(ex, IC_ABNORMAL, ST1_DE, ST2_DD)
            return False
        return True

    def _pio_sector_taken(self):
        ex = self.ex
        ex["pio"] = None
        self._next_sector(ex, False, self.clock())

    def _pio_sector_given(self):
        ex = self.ex
        i, track = ex.pop("sector")
        drive = ex["drive"]
        layout = self._layout(drive, track, ex["head"])
        c, h, r, n, where = layout[i]
        data, self.buffer = bytes(self.buffer), []
        ex["pio"] = None
        ex.pop("want", None)
        if self._store(ex, drive, track, where, data, 128 << min(n, 7)):
            self._next_sector(ex, False, self.clock())

    def _next_sector(self, ex, tc, at):
        """After a sector: terminal count ends normally; EOT goes to the next
        head (MT) or ends with 'end of cylinder'; else R+1."""
        ex["count"] += 1
        if ex["op"] == "track":
            ex["index"] += 1
            last = ex["count"] >= ex["eot"]
            ex["r"] = (ex["r"] + 1) & 0xFF
            if tc:
                self._result(ex, IC_NORMAL)
            elif last:
                self._result_error(ex, IC_ABNORMAL, ST1_EN, 0)
            else:
                self._replan(at)
            return
        at_eot = ex["r"] == ex["eot"]
        if at_eot:
            if ex["mt"] and ex["head"] == 0:
                ex["head"], ex["h"], ex["r"] = 1, ex["h"] ^ 1, 1
                cont = True
            else:
                if ex["mt"]:
                    ex["head"], ex["h"] = 0, ex["h"] ^ 1
                ex["c"], ex["r"] = (ex["c"] + 1) & 0xFF, 1
                cont = False
        else:
            ex["r"] = (ex["r"] + 1) & 0xFF
            cont = True
        if tc:
            self._result(ex, IC_NORMAL)
        elif not cont:
            self._result_error(ex, IC_ABNORMAL, ST1_EN, 0)
        else:
            self._replan(at)

    def _do_format(self, ex, index_at, at):
        drive = ex["drive"]
        sc, n = ex["sc"], ex["n"]
        want = 4 * sc
        if self.nd:
            # non-DMA format: the IDs come through the data register first
            if "ids" not in ex:
                ex["pio"] = "in"
                ex["want"] = want
                ex["fmt"] = True
                self.buffer = []
                self._set_int(True)
                return
            ids = ex.pop("ids")
        else:
            ids, _tc = self._dma_from_memory(want)
            if len(ids) < want:
                self._result_error(ex, IC_ABNORMAL, ST1_OR, 0)
                return
        self._apply_format(ex, drive, ids, n, sc)

    def _apply_format(self, ex, drive, ids, n, sc):
        if drive >= self.drives or self._disk(drive) is None:
            return                                    # unreachable: no index pulses
        disk = self._disk(drive)
        track, head = self.track[drive], ex["head"]
        recs = [list(ids[4 * k:4 * k + 4]) for k in range(sc)]
        size = 128 << min(n, 7)
        fill = bytes([ex["fill"]]) * size
        standard = (track < disk.cylinders and head < disk.heads and sc == disk.sectors
                    and all(c == track and h == head and nn == 2 == n for c, h, _r, nn in recs)
                    and sorted(r for _c, _h, r, _n in recs) == list(range(1, disk.sectors + 1)))
        key = (drive, track, head)
        try:
            if standard:
                base = (track * disk.heads + head) * disk.sectors
                disk.write_sectors(base, fill * disk.sectors)
                self.custom.pop(key, None)
            else:
                if disk.readonly:
                    raise DiskWriteProtected("read-only")
                self.custom[key] = [[c, h, r, nn, bytes([ex["fill"]]) * (128 << min(nn, 7))]
                                    for c, h, r, nn in recs]
        except DiskWriteProtected:
            self._refused_write(drive, "format track")
            self._result_error(ex, IC_ABNORMAL, ST1_NW, 0)
            return
        except (OSError, DiskImageError) as exc:
            self._log("error", f"drive {drive}: formatting track {track} head {head} "
                               f"failed on the host ({exc}): data error")
            self._result_error(ex, IC_ABNORMAL, ST1_DE, ST2_DD)
            return
        if recs:
            ex["c"], ex["h"], ex["r"], ex["n"] = recs[-1]
        self._result(ex, IC_NORMAL)

    # non-DMA format completes once the IDs are in
    def _pio_format_given(self):
        ex = self.ex
        ex["ids"] = bytes(self.buffer)
        self.buffer = []
        ex["pio"] = None
        ex.pop("want", None)
        ex.pop("fmt", None)
        self._do_format(ex, None, self.clock())

    # -- snapshots -------------------------------------------------------------------
    def get_state(self):
        return {
            "dor": self.dor, "data_rate": self.data_rate, "phase": self.phase,
            "cmd": list(self.cmd), "result": list(self.result),
            "ex": _jsonable(self.ex), "buffer": list(self.buffer),
            "pcn": list(self.pcn), "track": list(self.track),
            "seeks": {str(d): dict(s) for d, s in self.seeks.items()},
            "int_queue": [list(e) for e in self.int_queue], "int_line": self.int_line,
            "motor_since": list(self.motor_since),
            "specify": [self.srt, self.hut, self.hlt, self.nd],
            "head_idle_at": self.head_idle_at,
            "custom": {f"{d},{t},{h}": [[c, hh, r, n, base64.b64encode(data).decode("ascii")]
                                        for c, hh, r, n, data in recs]
                       for (d, t, h), recs in self.custom.items()},
        }

    def set_state(self, state):
        custom = {}
        for key, recs in state["custom"].items():
            d, t, h = (int(v) for v in key.split(","))
            custom[(d, t, h)] = [[int(c), int(hh), int(r), int(n), base64.b64decode(data)]
                                 for c, hh, r, n, data in recs]
        self.custom = custom
        self.dor = int(state["dor"])
        self.data_rate = int(state["data_rate"])
        self.phase = state["phase"]
        self.cmd = list(state["cmd"])
        self.result = list(state["result"])
        self.ex = _from_json(state["ex"])
        self.buffer = list(state["buffer"])
        self.pcn = list(state["pcn"])
        self.track = list(state["track"])
        self.seeks = {int(d): dict(s) for d, s in state["seeks"].items()}
        self.int_queue = [list(e) for e in state["int_queue"]]
        self.int_line = bool(state["int_line"])
        self.motor_since = list(state["motor_since"])
        self.srt, self.hut, self.hlt, self.nd = state["specify"]
        self.head_idle_at = state["head_idle_at"]
        self._update_irq()


def _jsonable(ex):
    if ex is None:
        return None
    out = dict(ex)
    if isinstance(out.get("ids"), (bytes, bytearray)):
        out["ids"] = list(out["ids"])
    return out


def _from_json(ex):
    if ex is None:
        return None
    out = dict(ex)
    if isinstance(out.get("ids"), list):
        out["ids"] = bytes(out["ids"])
    return out
