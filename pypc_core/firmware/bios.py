"""The built-in BIOS: ROM stubs with firmware traps, and their Python services.

Contract with the machine (see ``pypc_core/firmware/__init__.py``):

* ``Bios(machine)``; ``install()`` maps the 64 KiB ROM at F0000h and sets
  ``XF_TRAP`` on the trap bytes (nothing else);
* the CPU starts at FFFF:0000 (reset vector: JMP F000:E05B) with firmware
  traps enabled (``ctl[C_TRAP_ENABLE] = 1``);
* when the core stops on a trap (CS:IP at a trap byte, not executed), the
  machine calls ``on_trap(linear_address)``; the service works on
  ``machine.cpu.regs`` / ``machine.memory`` / ``machine.ports`` /
  ``machine.disks`` and then either skips the NOP (IP+1), moves CS:IP to
  another stub label or to the boot sector, or waits: IP stays on the trap,
  IF=1 and ``ctl[C_HALTED] = 1`` (INT 16h AH=00h with an empty buffer, the
  Pause key); the next interrupt's IRET comes back to the trap and the
  service runs again.

Choices where IBM's BIOS leaves room:

* POST prints a one-line banner, puts SS:SP at 0000:7C00 and calls option
  ROMs found at C0000h-EFFFFh (55AAh, size, checksum) before INT 19h;
* INT 19h boots A: (any sector 0 that is not one repeated byte), then C:
  (with the 55AAh signature), with DL = drive; if nothing boots it shows a
  "No bootable disk" screen, waits for a key (INT 16h) and tries again;
* INT 18h (ROM BASIC, absent) prints "No ROM BASIC - system halted." and
  halts with interrupts enabled, so Ctrl-Alt-Del still reboots;
* INT 1Ah functions 02h and up (AT real-time clock) return CF=1;
* the tick count starts at ``machine.initial_ticks`` (default 0): the
  guest's time of day never depends on the host clock.
"""

from ..cpu import state as S
from ..cpu.registers import Registers
from ..storage.image import DiskImageError
from . import rom
from .comms import CommsService
from .disk import DiskService
from .keyboard import KeyboardService
from .memio import (
    BDA_COM, BDA_COM_TIMEOUT, BDA_EQUIPMENT, BDA_FD_STATUS, BDA_HD_COUNT,
    BDA_HD_STATUS, BDA_KB_BUF_END, BDA_KB_BUF_START, BDA_KB_BUFFER,
    BDA_KB_BUFFER_END, BDA_KB_HEAD, BDA_KB_TAIL, BDA_LAST_IRQ, BDA_LPT,
    BDA_LPT_TIMEOUT, BDA_MEMORY_KB, BDA_RESET_FLAG, BDA_TICKS,
    BDA_TICKS_ROLLOVER, BDA, Mem,
    TICKS_PER_DAY,
)
from .video import VideoService

WAIT = "wait"          # service result: stay on the trap, halt until an interrupt
JUMPED = "jumped"      # service result: the service set CS:IP itself

F000 = rom.BIOS_SEGMENT
DUMMY = rom.OFF_DUMMY_IRET

BOOT_SECTOR = 0x7C00
POST_STACK = (0x0000, 0x7C00)      # SS:SP during POST and boot

# see Bios.waiting_for_key
WAIT_FRESH_INSTRUCTIONS = 20000
POLL_BURST = 20
POLL_BURST_GAP_CYCLES = 20_000     # about 4 ms


class Bios:
    """The built-in XT BIOS for ``machine`` (see the module docstring)."""

    def __init__(self, machine, font=None):
        self.machine = machine
        self.mem = Mem(machine)
        self._font = font
        self._rom = None
        self.video = VideoService(self)
        self.keyboard = KeyboardService(self)
        self.disk = DiskService(self)
        self.comms = CommsService(self)
        self.boot_drive = None         # drive number the last INT 19h booted
        self.boot_failed = False       # INT 19h found nothing bootable
        self.posts = 0                 # completed POST runs (cold + warm)
        self._traps = None
        self._stamp = None             # the empty-keyboard-poll stamp port (install)

    # -- ROM -----------------------------------------------------------------------------
    def _build(self):
        if self._rom is None:
            disks = self.disks
            self._rom = rom.build_rom(self._font, (disks.get(0x80), disks.get(0x81)))
            self._traps = {rom.BIOS_BASE + off: name for off, name in self._rom.traps.items()}
        return self._rom

    def rom_image(self):
        """The 64 KiB ROM image (bytes) for F0000h."""
        return bytes(self._build().image)

    @property
    def trap_addresses(self):
        """{linear address: service name} of every trap byte."""
        self._build()
        return dict(self._traps)

    def label(self, name):
        """Offset in segment F000h of a stub label (``"int13"``, ``"post"``...)."""
        return self._build().labels[name]

    def install(self):
        """Map the ROM at F0000h and mark the trap bytes (``XF_TRAP``)."""
        b = self._build()
        memory = self.machine.memory
        memory.map_rom(rom.BIOS_BASE, bytes(b.image), owner="bios")
        for linear in self._traps:
            memory.xflags[linear] |= S.XF_TRAP
        self._stamp = self.machine.ports.claim_stamp("bios", rom.IDLE_STAMP_PORT,
                                                     POLL_BURST_GAP_CYCLES)

    # -- machine facts -------------------------------------------------------------------
    # ``machine.equipment`` (a pypc_core.board.Equipment) says what is
    # installed, from the cards' declared capabilities.
    @property
    def disks(self):
        return self.machine.disks

    def floppy_count(self):
        return max(0, min(4, int(self.machine.equipment.floppy_drives)))

    def hdd_count(self):
        """Hard disks present from 80h upwards without a gap."""
        n = 0
        while 0x80 + n in self.disks and self.disks[0x80 + n] is not None:
            n += 1
        return n

    def memory_kb(self):
        return min(int(self.machine.equipment.memory_kib), 640)

    def com_ports(self):
        return list(self.machine.equipment.serial_ports)

    def lpt_ports(self):
        return list(self.machine.equipment.parallel_ports)

    def equipment_word(self):
        return self.machine.equipment.word()

    _wait_mark = 0

    # -- traps ----------------------------------------------------------------------------
    def on_trap(self, linear):
        """Run the service of the trap at ``linear``; False if it is not ours."""
        self._build()
        name = self._traps.get(linear)
        if name is None:
            return False
        regs = self.machine.cpu.regs
        r = Registers(regs)
        try:
            result = getattr(self, "_svc_" + name)(r)
        except Exception as exc:            # a fault of ours, never the guest's crash
            self.machine.note("error", f"BIOS service {name} failed inside pypc "
                              f"({type(exc).__name__}: {exc}); the call returns CF=1, "
                              f"AH=01h", source="bios")
            r.cf = True
            r.ah = 0x01
            result = None
        if result is None:
            regs[S.IP] = (int(regs[S.IP]) + 1) & 0xFFFF
        elif result == WAIT:
            r.if_ = True
            self.machine.cpu.ctl[S.C_HALTED] = 1
        elif result == JUMPED:
            pass
        else:                                       # a stub label
            regs[S.CS] = F000
            regs[S.IP] = self._rom.labels[result]
        return True

    # -- POST ------------------------------------------------------------------------------
    def _svc_post(self, r):
        self.post(r)

    def post(self, r=None):
        """Everything POST does before the option-ROM scan (see module docs)."""
        m = self.machine
        mem = self.mem
        if r is None:
            r = Registers(m.cpu.regs)
        m.cpu.ctl[S.C_HALTED] = 0
        self._refresh_rom_tables()
        mem.fill(0, 0x501, 0)                           # IVT, BDA, print-screen status
        self.setup_ivt()
        self.setup_bda()
        self.program_chips()
        self.disk.post_reset()
        self.video.set_mode(3)
        self.keyboard.e1_pending = 0
        self.keyboard.waiting = False
        mem.ww(rom.SCAN_NEXT_SEG, 0xC000)
        r.ss, r.sp = POST_STACK
        r.ds = 0
        r.es = 0
        r.if_ = False

    def _refresh_rom_tables(self):
        """Rewrite the fixed-disk tables in the mapped ROM (disks may change)."""
        memory = self.machine.memory
        for i in range(2):
            data = rom.fixed_disk_parms(self.disks.get(0x80 + i))
            memory.write(rom.BIOS_BASE + rom.OFF_FDPT + 16 * i, data, force=True)
        # INT 1Eh: the diskette parameters of the media in A: (EOT, gaps)
        memory.write(rom.BIOS_BASE + rom.OFF_DPT,
                     rom.DPT_BY_TYPE[self.disk.floppy_type(0) if self.disks.get(0) is not None else 1], force=True)

    def setup_ivt(self):
        mem = self.mem
        for n in range(256):
            mem.set_vector(n, F000, DUMMY)
        lab = self._build().labels
        vectors = {
            0x02: lab["nmi"], 0x05: lab["int05"], 0x08: lab["int08"], 0x09: lab["int09"],
            0x0A: lab["irq_other"], 0x0B: lab["irq_other"], 0x0C: lab["irq_other"],
            0x0D: lab["irq_other"], 0x0E: lab["int0e"], 0x0F: lab["irq_other"],
            0x10: lab["int10"], 0x11: lab["int11"], 0x12: lab["int12"], 0x13: lab["int13"],
            0x14: lab["int14"], 0x15: lab["int15"], 0x16: lab["int16"], 0x17: lab["int17"],
            0x18: lab["int18"], 0x19: lab["int19"], 0x1A: lab["int1a"],
            0x1B: DUMMY, 0x1C: DUMMY,
            0x1D: rom.OFF_VIDEO_PARMS, 0x1E: rom.OFF_DPT, 0x1F: rom.OFF_FONT_HIGH,
            0x40: lab["int13"],
        }
        for n, off in vectors.items():
            mem.set_vector(n, F000, off)
        for i, n in enumerate((0x41, 0x46)):
            if self.hdd_count() > i:
                mem.set_vector(n, F000, rom.OFF_FDPT + 16 * i)
            else:
                mem.set_vector(n, 0, 0)

    def setup_bda(self):
        mem = self.mem
        for i, base in enumerate(self.com_ports()[:4]):
            mem.ww(BDA_COM + 2 * i, base)
        for i, base in enumerate(self.lpt_ports()[:3]):
            mem.ww(BDA_LPT + 2 * i, base)
        mem.ww(BDA_EQUIPMENT, self.equipment_word())
        mem.ww(BDA_MEMORY_KB, self.memory_kb())
        start, end = BDA_KB_BUFFER - BDA, BDA_KB_BUFFER_END - BDA
        mem.ww(BDA_KB_HEAD, start)
        mem.ww(BDA_KB_TAIL, start)
        mem.ww(BDA_KB_BUF_START, start)
        mem.ww(BDA_KB_BUF_END, end)
        for i in range(3):
            mem.wb(BDA_LPT_TIMEOUT + i, 0x14)
        for i in range(4):
            mem.wb(BDA_COM_TIMEOUT + i, 0x01)
        mem.wb(BDA_HD_COUNT, self.hdd_count())
        mem.wb(BDA_HD_STATUS, 0)
        mem.wb(BDA_FD_STATUS, 0)
        ticks = int(self.machine.initial_ticks) % TICKS_PER_DAY
        mem.wd(BDA_TICKS, ticks)
        mem.wb(BDA_TICKS_ROLLOVER, 0)

    def program_chips(self):
        out = self.machine.ports.write
        # 8259A: edge triggered, single, ICW4; vectors 08h-0Fh; 8086 mode, buffered
        out(0x20, 0x13)
        out(0x21, 0x08)
        out(0x21, 0x09)
        out(0x21, 0xFF & ~(0x01 | 0x02 | 0x40))     # unmask IRQ0 timer, IRQ1 keyboard, IRQ6 diskette
        # 8253 channel 0: mode 3, count 65536 -> 18.2 Hz
        out(0x43, 0x36)
        out(0x40, 0x00)
        out(0x40, 0x00)
        # 8255: port A in, B out, C in; keyboard clock on, pulse "clear keyboard"
        out(0x63, 0x99)
        out(0x61, 0xCC)
        out(0x61, 0x4C)
        # NMI enabled (as IBM's POST leaves it)
        out(0xA0, 0x80)

    def _svc_romscan(self, r):
        """Find the next option ROM (C0000h-EFFFFh, 2 KiB steps, 55AAh, checksum)."""
        mem = self.mem
        seg = mem.rw(rom.SCAN_NEXT_SEG)
        while 0xC000 <= seg < 0xF000:
            base = seg << 4
            if mem.rb(base) == 0x55 and mem.rb(base + 1) == 0xAA:
                size = mem.rb(base + 2) * 512
                if size and sum(mem.read(base, size)) & 0xFF == 0:
                    mem.ww(rom.SCAN_NEXT_SEG, seg + ((size + 2047) // 2048) * 0x80)
                    mem.ww(rom.SCAN_FARPTR, 0x0003)
                    mem.ww(rom.SCAN_FARPTR + 2, seg)
                    r.ds = 0
                    return None                      # -> CALL FAR [0000:04F0]
            seg += 0x80
        return "post_done"

    def _svc_post_done(self, r):
        mem = self.mem
        mem.fill(rom.SCAN_FARPTR, 6, 0)
        mem.ww(BDA_RESET_FLAG, 0)
        self.posts += 1
        if mem.vector(0x10) == (F000, self.label("int10")):
            self.video.write_text(f"pypc XT BIOS   {self.memory_kb()} KB RAM\r\n\r\n")
        r.ds = 0x40

    # -- boot --------------------------------------------------------------------------------
    def _svc_int19(self, r):
        mem = self.mem
        mem.wb(BDA_FD_STATUS, 0)
        mem.wb(BDA_HD_STATUS, 0)
        reasons = []
        for drive, name in ((0x00, "A:"), (0x80, "C:")):
            disk = self.disks.get(drive)
            if disk is None or (drive & 0x80 and self.hdd_count() == 0):
                reasons.append(f"{name} no disk")
                continue
            if drive == 0:
                # the boot sector comes through the floppy controller and DMA
                status = self.disk.boot_sector(r)
                if status == WAIT:
                    return WAIT
                if status:
                    reasons.append(f"{name} read error (status {status:02X}h)")
                    continue
                sector = mem.read(BOOT_SECTOR, 512)
            else:
                try:
                    sector = disk.read_sectors(0, 1)
                except (DiskImageError, OSError) as e:
                    reasons.append(f"{name} read error ({e})")
                    continue
            if drive & 0x80 and sector[510:512] != b"\x55\xaa":
                reasons.append(f"{name} not bootable (no 55AAh signature)")
                continue
            if not drive & 0x80 and len(set(sector)) == 1:
                reasons.append(f"{name} not bootable (blank boot sector)")
                continue
            if drive != 0:
                mem.write(BOOT_SECTOR, sector)
            self.boot_drive = drive
            self.boot_failed = False
            r.dl = drive
            r.dh = 0
            r.ds = 0
            r.es = 0
            r.if_ = True
            r.cs = 0
            r.ip = BOOT_SECTOR
            return JUMPED
        self.boot_failed = True
        self.boot_drive = None
        self.no_boot_screen(reasons)
        return None                                  # -> wait for a key, retry

    NO_BOOT_TITLE = "No bootable disk"

    def no_boot_screen(self, reasons):
        v = self.video
        v.set_mode(3)
        v.write_text("pypc built-in XT BIOS\r\n\r\n")
        v.write_text(self.NO_BOOT_TITLE + ".\r\n\r\n", attr=0x0F)
        for reason in reasons:
            v.write_text(f"  {reason}\r\n")
        v.write_text("\r\nStart pypc with --floppy IMAGE or --hdd IMAGE,\r\n"
                     "or insert a disk and press any key to try again.\r\n")

    def _svc_int18(self, r):
        self.video.write_text("\r\nNo ROM BASIC - system halted.\r\n")

    # -- simple services -----------------------------------------------------------------------
    def _svc_int09(self, r):
        return self.keyboard.irq()

    def _svc_kb_break_done(self, r):
        self.keyboard.break_done()

    def _svc_kb_pause(self, r):
        return WAIT if self.keyboard.paused() else None

    def _svc_int16(self, r):
        if self.keyboard.int16(r):
            self._wait_mark = int(self.machine.cpu.ctl[S.C_INSTRUCTIONS])
            return WAIT
        return None

    def _svc_int10(self, r):
        self.video.int10(r)

    def _svc_int13(self, r):
        return self.disk.int13(r)

    def _svc_int0e(self, r):
        self.disk.irq6()

    def _svc_int11(self, r):
        r.ax = self.mem.rw(BDA_EQUIPMENT)

    def _svc_int12(self, r):
        r.ax = self.mem.rw(BDA_MEMORY_KB)

    def _svc_int14(self, r):
        self.comms.int14(r)

    def _svc_int15(self, r):
        r.ah = 0x86                                  # XT: no such service
        r.cf = True

    def _svc_int17(self, r):
        self.comms.int17(r)

    def _svc_int05(self, r):
        self.comms.print_screen()

    def _svc_int1a(self, r):
        mem = self.mem
        if r.ah == 0x00:
            ticks = mem.rd(BDA_TICKS)
            r.cx = ticks >> 16
            r.dx = ticks & 0xFFFF
            r.al = mem.rb(BDA_TICKS_ROLLOVER)
            mem.wb(BDA_TICKS_ROLLOVER, 0)
            r.cf = False
        elif r.ah == 0x01:
            mem.wd(BDA_TICKS, ((r.cx << 16) | r.dx) % TICKS_PER_DAY)
            mem.wb(BDA_TICKS_ROLLOVER, 0)
            r.cf = False
        else:
            r.cf = True                              # no real-time clock on an XT

    def _svc_irq_other(self, r):
        """An IRQ nobody handles: record it (0040:006B), mask it, EOI."""
        ports = self.machine.ports
        ports.write(0x20, 0x0B)                     # OCW3: read ISR
        isr = ports.read(0x20)
        ports.write(0x20, 0x0A)                     # back to IRR
        if isr == 0:
            self.mem.wb(BDA_LAST_IRQ, 0xFF)         # software interrupt or spurious IRQ 7
            return
        current = isr & -isr
        self.mem.wb(BDA_LAST_IRQ, current)
        if current & ~0x43:
            ports.write(0x21, ports.read(0x21) | current)
        ports.write(0x20, 0x20)

    # -- keyboard helpers for the machine ----------------------------------------------------
    @property
    def waiting_for_key(self):
        """True while the guest waits for a key: a blocking INT 16h AH=00h
        read seen within the last WAIT_FRESH_INSTRUCTIONS, or a burst of at
        least POLL_BURST empty AH=01h polls, each within
        POLL_BURST_GAP_CYCLES of the one before and the last one recent --
        a prompt's polling loop.  The CPU counts the polls on the stamp port
        (see rom.build_rom); DOS's once-per-command Ctrl-C checks never make
        such a burst.  Host side only: the guest never sees this."""
        cpu = self.machine.cpu
        if (self.keyboard.waiting and
                int(cpu.ctl[S.C_INSTRUCTIONS]) - self._wait_mark < WAIT_FRESH_INSTRUCTIONS):
            return True
        if self._stamp is None:
            return False
        _count, last, _start, burst, _value = self._stamp.values()
        now = int(cpu.ctl[S.C_CYCLES])
        return burst >= POLL_BURST and now - last <= POLL_BURST_GAP_CYCLES

    # -- snapshots ---------------------------------------------------------------------------
    def get_state(self):
        return {
            "keyboard": self.keyboard.get_state(),
            "boot_drive": self.boot_drive,
            "boot_failed": self.boot_failed,
            "posts": self.posts,
            "wait_mark": self._wait_mark,
            "disk": self.disk.get_state(),
        }

    def set_state(self, state):
        self.keyboard.set_state(state.get("keyboard", {}))
        self.boot_drive = state.get("boot_drive")
        self.boot_failed = bool(state.get("boot_failed", False))
        self.posts = int(state.get("posts", 0))
        self._wait_mark = int(state.get("wait_mark", 0))
        self.disk.set_state(state.get("disk"))
