"""The built-in BIOS, driven through its traps on a fake machine.

The fake machine has the attributes the BIOS relies on (memory, ports,
cpu.regs/ctl, disks, equipment, initial_ticks); its ports record what the BIOS writes and
serve scan codes on port 60h.  Its diskette adapter is the real one (the
``fdc`` card and the 8237), on a clock the test moves.  ``call`` puts CS:IP
on a service's trap byte and calls ``Bios.on_trap`` exactly as the machine
does when the CPU core stops there; while a service waits (IP left on the
trap, CPU halted) it lets emulated time pass to the controller's next event
and delivers IRQ 6 through the handler's trap, as the CPU would.
"""

import struct
import types


from pypc_core.board import Backplane, Equipment
from pypc_core.bus import MemoryMap, PortMap
from pypc_core.chipset import Dma8237
from pypc_core.cpu import state as S
from pypc_core.cpu.registers import Registers
from pypc_core.firmware import Bios, rom
from pypc_core.storage import DiskImage

CHIP_PORTS = [0x20, 0x21, 0x40, 0x41, 0x42, 0x43, 0x60, 0x61, 0x62, 0x63, 0xA0,
              0x3D4, 0x3D5, 0x3D8, 0x3D9]
FDC_PORTS = (0x3F2, 0x3F4, 0x3F5, 0x3F7)


class LoggedPorts(PortMap):
    """Writes to the diskette adapter are recorded in ``io`` too."""

    def write(self, port, value, width=1):
        if port in FDC_PORTS:
            self.io.append((port, value))
        super().write(port, value, width)


class FakePic:
    def __init__(self):
        self.edges = 0
        self.level = False

    def raise_irq(self, n):
        self.edges += not self.level
        self.level = True

    def lower_irq(self, n):
        self.level = False

    def pulse_irq(self, n):
        self.edges += 1


class FakeMachine:
    def __init__(self, disks=None, devices=()):
        self.memory = MemoryMap()
        self.memory.map_ram(0, 0xA0000)
        self.memory.map_device(0xB8000, 0x4000, "cga")
        self.ports = LoggedPorts()
        self.io = self.ports.io = []
        self.now = 0
        self.scancodes = []
        self.pb = 0x4C
        self.isr = 0
        self.ports.claim("fake-chipset", CHIP_PORTS, read=self._read, write=self._write)
        self.cpu = types.SimpleNamespace(regs=S.new_regs(), ctl=S.new_ctl())
        self.disks = dict(disks or {})
        self.devices = set(devices)
        self.equipment = Equipment(
            floppy_drives=2 if 1 in self.disks else 1, memory_kib=640,
            serial_ports=[0x3F8] if "uart" in self.devices else [],
            parallel_ports=[0x378] if "lpt" in self.devices else [],
            game_port="gameport" in self.devices, video="cga")
        self.initial_ticks = 0
        self.video = None               # the CGA: the BIOS's own INT 10h
        # services that wait (INT 14h) let emulated time pass and catch up
        self.scheduler = types.SimpleNamespace(invalidate=lambda: None,
                                               next_stop=lambda limit: limit)
        from pypc_plugins.fdc import Fdc765
        self.pic = FakePic()
        self.dma = Dma8237(memory=self.memory)
        backplane = Backplane(self.memory, self.ports, self.clock, self.pic, self.dma)
        self.dma.attach(backplane.board(self.dma.declaration))
        self.fdc = Fdc765(self.disks, drives=max(1, self.equipment.floppy_drives))
        self.fdc.attach(backplane.board(self.fdc.declaration))

    def _read(self, port):
        if port == 0x60:
            return self.scancodes.pop(0) if self.scancodes else 0
        if port == 0x61:
            return self.pb
        if port == 0x20:
            return self.isr
        return 0

    def _write(self, port, value):
        self.io.append((port, value))

    def clock(self):
        return self.now


def new_bios(disks=None, devices=(), post=True):
    m = FakeMachine(disks, devices)
    bios = Bios(m)
    bios.install()
    if post:
        bios.post()
    m.io.clear()
    return m, bios


def call(bios, service, **regs):
    """Run one service as the CPU would reach it; returns Registers."""
    m = bios.machine
    r = Registers(m.cpu.regs)
    for name, value in regs.items():
        setattr(r, name, value)
    linear = next(a for a, n in bios.trap_addresses.items() if n == service)
    irq6 = next(a for a, n in bios.trap_addresses.items() if n == "int0e")
    for _ in range(100000):
        r.cs = rom.BIOS_SEGMENT
        r.ip = linear - rom.BIOS_BASE
        assert bios.on_trap(linear)
        if (service not in ("int13", "int19") or r.ip != linear - rom.BIOS_BASE
                or not m.cpu.ctl[S.C_HALTED]):
            return r
        m.cpu.ctl[S.C_HALTED] = 0                  # waiting: an interrupt wakes it
        if m.pic.edges:
            m.pic.edges = 0
            assert bios.on_trap(irq6)              # the IRQ 6 handler
            continue
        due = m.fdc.next_event()
        tick = m.now + 262144                      # else the next timer tick
        m.now = min(due, tick) if due is not None else tick
        m.fdc.advance(m.now)
    raise AssertionError(f"{service} never finished")


def ip_after(bios, service):
    return next(a for a, n in bios.trap_addresses.items() if n == service) - rom.BIOS_BASE + 1


def word(m, addr):
    return m.memory.read_word(addr)


def screen_text(m, row, cols=80):
    return bytes(m.memory.read(0xB8000 + row * cols * 2, cols * 2)[::2]).decode("latin-1")


# -- ROM layout ----------------------------------------------------------------------------
def test_rom_layout():
    m, bios = new_bios(post=False)
    image = bios.rom_image()
    assert len(image) == 0x10000
    assert image[0xFFF0:0xFFF5] == bytes([0xEA, 0x5B, 0xE0, 0x00, 0xF0])   # JMP F000:E05B
    assert image[0xFFFE] == 0xFE                                           # PC/XT model
    assert image[0xFFF5:0xFFFD] == b"11/30/26"
    assert sum(image) & 0xFF == 0
    assert image[0xE05B] == 0xFA                                           # POST: CLI
    assert image[0xFF53] == 0xCF                                           # dummy IRET
    for entry in (0xE6F2, 0xE739, 0xE82E, 0xE987, 0xEC59, 0xEFD2, 0xF065, 0xF841,
                  0xF84D, 0xF859, 0xFE6E, 0xFEA5, 0xFF54):
        assert image[entry] == 0xFB, hex(entry)                            # STI first
    # mapped at F0000h with the trap bytes marked and nothing else
    assert m.memory.read(0xF0000, 0x10000) == image
    traps = bios.trap_addresses
    assert len(traps) >= 20
    marked = {a for a in range(0xF0000, 0x100000) if m.memory.xflags[a] & S.XF_TRAP}
    assert marked == set(traps)
    for addr in traps:
        assert m.memory.mem[addr] == 0x90
    names = set(traps.values())
    for off, name in ((0xEC5A, "int13"), (0xF066, "int10"),
                      (0xE989, "int09"), (0xFE6F, "int1a"),
                      (0xE6F3, "int19"), (0xE05C, "post")):
        assert traps[0xF0000 + off] == name and name in names
    # INT 16h answers AH=01h in 8088 code (STI; CMP AH,1; JNE service) and
    # traps to Python for the other functions
    assert image[0xE82E:0xE832] == bytes([0xFB, 0x80, 0xFC, 0x01]) and image[0xE832] == 0x75
    service = 0xE834 + image[0xE833]
    assert traps[0xF0000 + service] == "int16"
    # RETF 2 after the INT 13h trap keeps the service's flags
    assert image[0xEC5B:0xEC5E] == bytes([0xCA, 0x02, 0x00])
    # tables
    assert image[0xEFC7 + 3] == 2 and image[0xEFC7 + 4] == 9              # 512 bytes, 9 spt
    assert image[0xF0A4 + 16:0xF0A4 + 18] == bytes([0x71, 0x50])           # 80x25 CRTC
    from pypc_core.font import FONT_8X8
    assert image[0xFA6E:0xFA6E + 1024] == bytes(FONT_8X8[:1024])
    assert image[0xF100:0xF100 + 1024] == bytes(FONT_8X8[1024:])


# -- POST ------------------------------------------------------------------------------------
def test_post_ivt_bda_and_chips():
    floppy = DiskImage.from_bytes(bytes(368640))
    m, bios = new_bios({0: floppy}, devices={"uart"}, post=False)
    m.memory.write(0x472, b"\x34\x12")
    r = call(bios, "post")
    assert r.ip == ip_after(bios, "post")
    vec = lambda n: (word(m, n * 4 + 2), word(m, n * 4))        # noqa: E731
    assert vec(0x13) == (0xF000, 0xEC59)
    assert vec(0x10) == (0xF000, 0xF065)
    assert vec(0x08) == (0xF000, 0xFEA5)
    assert vec(0x09) == (0xF000, 0xE987)
    assert vec(0x19) == (0xF000, 0xE6F2)
    assert vec(0x1D) == (0xF000, 0xF0A4)
    assert vec(0x1E) == (0xF000, 0xEFC7)
    assert vec(0x1F) == (0xF000, 0xF100)
    assert vec(0x1C) == (0xF000, 0xFF53)
    assert vec(0x67) == (0xF000, 0xFF53)
    assert vec(0x41) == (0, 0)                                  # no hard disk
    eq = word(m, 0x410)
    assert eq & 1 and (eq >> 6) & 3 == 0                        # one floppy drive
    assert (eq >> 4) & 3 == 2                                   # 80x25 colour
    assert (eq >> 9) & 7 == 1                                   # one serial port
    assert word(m, 0x413) == 640
    assert word(m, 0x400) == 0x3F8 and word(m, 0x402) == 0
    assert word(m, 0x408) == 0                                  # no printer
    assert word(m, 0x41A) == word(m, 0x41C) == 0x1E
    assert word(m, 0x480) == 0x1E and word(m, 0x482) == 0x3E
    assert m.memory.read_byte(0x449) == 3 and word(m, 0x44A) == 80
    assert word(m, 0x463) == 0x3D4
    assert m.memory.read(0x46C, 4) == bytes(4)
    assert m.memory.read_byte(0x475) == 0
    io = m.io
    assert io[:4] == [(0x20, 0x13), (0x21, 0x08), (0x21, 0x09), (0x21, 0xBC)]
    assert io[4:7] == [(0x43, 0x36), (0x40, 0), (0x40, 0)]
    assert (0x3D8, 0x29) in io                                  # mode 3, video on
    assert m.memory.read(0xB8000, 4) == b"\x20\x07\x20\x07"
    assert (r.ss, r.sp) == (0, 0x7C00) and not r.if_


def test_post_without_uart_and_with_hard_disk():
    hdd = DiskImage.from_bytes(bytes(20 * 2 * 17 * 512), kind="hdd", geometry=(20, 2, 17))
    m, bios = new_bios({0x80: hdd})
    assert word(m, 0x400) == 0
    assert (word(m, 0x410) >> 9) & 7 == 0
    assert m.memory.read_byte(0x475) == 1
    seg, off = word(m, 0x41 * 4 + 2), word(m, 0x41 * 4)
    fdpt = m.memory.read(seg * 16 + off, 16)
    assert struct.unpack_from("<H", fdpt, 0)[0] == 20 and fdpt[2] == 2 and fdpt[14] == 17


def test_option_rom_scan_then_post_done():
    m, bios = new_bios(post=False)
    call(bios, "post")
    image = bytearray(2048)
    image[0:3] = b"\x55\xaa\x04"
    image[3] = 0xCB                                             # RETF
    image[-1] = (-sum(image)) & 0xFF
    m.memory.map_rom(0xC8000, bytes(image), owner="option")
    r = call(bios, "romscan")
    assert r.ip == ip_after(bios, "romscan")                    # -> CALL FAR [0000:04F0]
    assert (word(m, 0x4F2), word(m, 0x4F0)) == (0xC800, 0x0003) and r.ds == 0
    r = call(bios, "romscan")                                   # no more ROMs
    assert (r.cs, r.ip) == (0xF000, bios.label("post_done"))
    call(bios, "post_done")
    assert screen_text(m, 0).startswith("pypc XT BIOS")


# -- INT 19h -------------------------------------------------------------------------------------
def test_int19_boots_floppy_and_reports_no_disk():
    sector = bytes([0xEB, 0x3C, 0x90]) + bytes(range(256)) * 2
    sector = sector[:510] + b"\x55\xaa"
    img = bytearray(368640)
    img[:512] = sector
    m, bios = new_bios({0: DiskImage.from_bytes(bytes(img))})
    r = call(bios, "int19")
    assert (r.cs, r.ip, r.dl) == (0, 0x7C00, 0) and r.if_
    assert m.memory.read(0x7C00, 512) == sector
    # no disk at all: message screen, then wait for a key and retry
    m, bios = new_bios()
    r = call(bios, "int19")
    assert r.ip == ip_after(bios, "int19")
    text = "".join(screen_text(m, row) for row in range(25))
    assert "No bootable disk" in text and bios.boot_failed
    # a hard disk without the 55AAh signature is not bootable
    hdd = DiskImage.from_bytes(bytes(20 * 2 * 17 * 512), kind="hdd", geometry=(20, 2, 17))
    m, bios = new_bios({0x80: hdd})
    call(bios, "int19")
    assert bios.boot_failed
    hdd.write_sectors(0, bytes(510) + b"\x55\xaa")
    r = call(bios, "int19")
    assert (r.cs, r.ip, r.dl) == (0, 0x7C00, 0x80)


# -- INT 13h ---------------------------------------------------------------------------------------
def make_floppy(tmp_path, mode="rw", size=368640):
    data = bytearray(size)
    for lba in range(size // 512):
        data[lba * 512:lba * 512 + 512] = bytes([lba & 0xFF]) * 512
    path = tmp_path / "fd.img"
    path.write_bytes(bytes(data))
    return path, DiskImage(path, "floppy", mode=mode)


def test_int13_floppy_read_write(tmp_path):
    path, disk = make_floppy(tmp_path)
    m, bios = new_bios({0: disk})
    r = call(bios, "int13", ah=2, al=2, ch=1, cl=8, dh=1, dl=0, es=0x2000, bx=0x10)
    assert not r.cf and r.ah == 0 and r.al == 2
    lba = (1 * 2 + 1) * 9 + 7                                   # C1 H1 S8
    assert m.memory.read(0x20010, 1024) == bytes([lba]) * 512 + bytes([lba + 1]) * 512
    m.memory.write(0x30000, b"\xC3" * 512)
    r = call(bios, "int13", ah=3, al=1, ch=0, cl=2, dh=0, dl=0, es=0x3000, bx=0)
    assert not r.cf and r.al == 1
    disk.close()
    assert path.read_bytes()[512:1024] == b"\xC3" * 512
    assert m.memory.read_byte(0x441) == 0


def test_int13_errors(tmp_path):
    _path, disk = make_floppy(tmp_path, mode="readonly")
    m, bios = new_bios({0: disk})
    r = call(bios, "int13", ah=2, al=1, ch=0, cl=10, dh=0, dl=0, es=0x2000, bx=0)
    assert r.cf and r.ah == 0x04 and r.al == 0                  # sector 10 on a 9-sector track
    assert m.memory.read_byte(0x441) == 0x04
    r = call(bios, "int13", ah=1, dl=0)
    assert r.ah == 0x04 and r.cf                                # status of last operation
    r = call(bios, "int13", ah=2, al=1, ch=40, cl=1, dh=0, dl=0, es=0x2000, bx=0)
    assert r.cf and r.ah == 0x04                                # cylinder 40 of 0-39
    r = call(bios, "int13", ah=3, al=1, ch=0, cl=1, dh=0, dl=0, es=0x2000, bx=0)
    assert r.cf and r.ah == 0x03                                # write protected
    r = call(bios, "int13", ah=2, al=2, ch=0, cl=1, dh=0, dl=0, es=0x1000, bx=0xFE00)
    assert r.cf and r.ah == 0x09 and r.al == 0                  # crosses 20000h
    r = call(bios, "int13", ah=2, al=1, ch=0, cl=1, dh=0, dl=1, es=0x2000, bx=0)
    assert r.cf and r.ah == 0x80                                # no drive B:
    r = call(bios, "int13", ah=0x42, dl=0)
    assert r.cf and r.ah == 0x01                                # unknown function
    r = call(bios, "int13", ah=0, dl=0)
    assert not r.cf and r.ah == 0
    r = call(bios, "int13", ah=2, al=1, ch=0, cl=1, dh=0, dl=0x80, es=0x2000, bx=0)
    assert r.cf                                                 # no hard disk


def test_int13_parameters_and_types(tmp_path):
    _path, disk = make_floppy(tmp_path)
    m, bios = new_bios({0: disk})
    r = call(bios, "int13", ah=8, dl=0)
    assert not r.cf and r.bl == 1 and r.ch == 39 and r.cl == 9 and r.dh == 1 and r.dl == 1
    assert (r.es, r.di) == (0xF000, rom.OFF_DPT_TYPES)
    assert m.memory.read_byte(0xF0000 + r.di + 4) == 9
    r = call(bios, "int13", ah=0x15, dl=0)
    assert not r.cf and r.ah == 2                               # change line supported
    r = call(bios, "int13", ah=0x16, dl=0)
    assert not r.cf and r.ah == 0
    disk.mark_changed()
    r = call(bios, "int13", ah=0x16, dl=0)
    assert r.cf and r.ah == 0x06
    r = call(bios, "int13", ah=0x16, dl=0)
    assert not r.cf


def test_int13_hard_disk(tmp_path):
    data = bytearray(30 * 4 * 17 * 512)
    for lba in range(len(data) // 512):
        data[lba * 512:lba * 512 + 2] = struct.pack("<H", lba)
    path = tmp_path / "hd.img"
    path.write_bytes(bytes(data))
    hdd = DiskImage(path, "hdd", geometry=(30, 4, 17))
    m, bios = new_bios({0x80: hdd})
    assert m.memory.read_byte(0x475) == 1
    r = call(bios, "int13", ah=8, dl=0x80)
    assert not r.cf and r.ch == 29 and r.cl == 17 and r.dh == 3 and r.dl == 1
    r = call(bios, "int13", ah=0x15, dl=0x80)
    assert not r.cf and r.ah == 3 and (r.cx << 16 | r.dx) == 30 * 4 * 17
    # cylinder 2, head 3, sector 17 and the next sector (next cylinder)
    r = call(bios, "int13", ah=2, al=2, ch=2, cl=17, dh=3, dl=0x80, es=0x1FFF, bx=0x00F0)
    assert not r.cf and r.al == 2
    lba = (2 * 4 + 3) * 17 + 16
    got = m.memory.read(0x1FFF0 + 0xF0, 1024)
    assert struct.unpack_from("<H", got, 0)[0] == lba
    assert struct.unpack_from("<H", got, 512)[0] == lba + 1
    r = call(bios, "int13", ah=8, dl=0x81)
    assert r.cf
    r = call(bios, "int13", ah=2, al=1, ch=0, cl=18, dh=0, dl=0x80, es=0x1000, bx=0)
    assert r.cf and r.ah == 0x04 and m.memory.read_byte(0x474) == 0x04
    hdd.close()


def test_int13_format_track(tmp_path):
    _path, disk = make_floppy(tmp_path)
    m, bios = new_bios({0: disk})
    fields = b"".join(bytes([3, 1, s, 2]) for s in range(1, 10))
    m.memory.write(0x5000, fields)
    r = call(bios, "int13", ah=5, al=9, ch=3, dh=1, dl=0, es=0x500, bx=0)
    assert not r.cf
    lba = disk.chs_to_lba(3, 1, 1)
    assert disk.read_sectors(lba, 9) == b"\xF6" * 512 * 9
    assert disk.read_sectors(lba + 9, 1) == bytes([(lba + 9) & 0xFF]) * 512


# -- INT 10h --------------------------------------------------------------------------------------
def teletype(bios, text, color=7):
    for ch in text.encode("latin-1"):
        call(bios, "int10", ah=0x0E, al=ch, bl=color)


def test_int10_teletype_and_scroll():
    m, bios = new_bios()
    call(bios, "int10", ah=0, al=3)
    call(bios, "int10", ah=6, al=0, bh=0x1E, cx=0, dh=24, dl=79)   # clear to yellow on blue
    teletype(bios, "Hi\r\nthere")
    assert m.memory.read(0xB8000, 4) == b"H\x1ei\x1e"
    assert screen_text(m, 1).startswith("there")
    r = call(bios, "int10", ah=3, bh=0)
    assert (r.dh, r.dl) == (1, 5)
    assert r.cx == 0x0607
    # the hardware cursor follows (CRTC R14/R15 = 1*80+5)
    io = m.io
    assert io[-4:] == [(0x3D4, 14), (0x3D5, 0), (0x3D4, 15), (0x3D5, 85)]
    # fill the screen; one more line scrolls
    for row in range(2, 25):
        teletype(bios, f"\r\nline {row}")
    assert screen_text(m, 24).startswith("line 24")
    teletype(bios, "\r\nlast")
    assert screen_text(m, 0).startswith("there")
    assert screen_text(m, 23).startswith("line 24")
    assert screen_text(m, 24).startswith("last")
    assert m.memory.read_byte(0xB8000 + 24 * 160 + 79 * 2 + 1) == 0x1E   # fill uses the attribute
    # backspace and wrap at column 80
    teletype(bios, "\b\bX")
    assert screen_text(m, 24).startswith("laXt")


def test_int10_window_scroll_chars_and_mode_info():
    m, bios = new_bios()
    for row in range(5):
        call(bios, "int10", ah=2, bh=0, dh=row, dl=0)
        call(bios, "int10", ah=9, al=ord("A") + row, bh=0, bl=0x07, cx=10)
    call(bios, "int10", ah=6, al=2, bh=0x70, ch=0, cl=2, dh=4, dl=5)
    assert screen_text(m, 0)[:10] == "AACCCCAAAA"
    assert screen_text(m, 3)[:10] == "DD    DDDD"
    assert m.memory.read_byte(0xB8000 + 3 * 160 + 2 * 2 + 1) == 0x70
    call(bios, "int10", ah=7, al=1, bh=0x07, ch=0, cl=0, dh=4, dl=79)
    assert screen_text(m, 0).strip() == ""
    assert screen_text(m, 1)[:10] == "AACCCCAAAA"
    call(bios, "int10", ah=2, bh=0, dh=1, dl=2)
    r = call(bios, "int10", ah=8, bh=0)
    assert (r.al, r.ah) == (ord("C"), 0x07)
    call(bios, "int10", ah=0x0A, al=ord("z"), bh=0, bl=0x4F, cx=2)
    assert m.memory.read(0xB8000 + 160 + 4, 4) == b"z\x07z\x07"
    r = call(bios, "int10", ah=0x0F)
    assert (r.al, r.ah, r.bh) == (3, 80, 0)
    # AH=13h write string with attributes, cursor updated
    m.memory.write(0x6000, b"O\x1fK\x2f")
    call(bios, "int10", ah=0x13, al=3, bh=0, bl=0, cx=2, dh=10, dl=4, es=0x600, bp=0)
    assert m.memory.read(0xB8000 + 10 * 160 + 8, 4) == b"O\x1fK\x2f"
    r = call(bios, "int10", ah=3, bh=0)
    assert (r.dh, r.dl) == (10, 6)
    # EGA/VGA-only functions leave the registers alone (CGA detection)
    r = call(bios, "int10", ah=0x12, bl=0x10)
    assert r.bl == 0x10
    r = call(bios, "int10", ah=0x1A, al=0)
    assert r.al == 0


def test_int10_graphics_modes():
    m, bios = new_bios()
    call(bios, "int10", ah=0, al=4)
    assert m.memory.read_byte(0x449) == 4 and word(m, 0x44A) == 40
    assert (0x3D8, 0x2A) in m.io
    call(bios, "int10", ah=0x0C, al=3, cx=5, dx=1)
    call(bios, "int10", ah=0x0C, al=2, cx=6, dx=0)
    assert m.memory.read_byte(0xB8000 + 0x2000 + 1) == 0b00110000    # odd line bank, x=5: bits 5-4
    assert call(bios, "int10", ah=0x0D, cx=5, dx=1).al == 3
    assert call(bios, "int10", ah=0x0D, cx=6, dx=0).al == 2
    call(bios, "int10", ah=0x0C, al=0x81, cx=5, dx=1)                # XOR
    assert call(bios, "int10", ah=0x0D, cx=5, dx=1).al == 2
    call(bios, "int10", ah=0x0B, bh=1, bl=0)
    assert m.memory.read_byte(0x466) & 0x20 == 0
    # characters in 640x200 mode, read back by matching the font
    call(bios, "int10", ah=0, al=6)
    call(bios, "int10", ah=2, bh=0, dh=3, dl=7)
    call(bios, "int10", ah=9, al=ord("Q"), bh=0, bl=1, cx=1)
    r = call(bios, "int10", ah=8, bh=0)
    assert r.al == ord("Q")
    teletype(bios, "ok")
    call(bios, "int10", ah=2, bh=0, dh=3, dl=8)
    assert call(bios, "int10", ah=8, bh=0).al == ord("k")


# -- keyboard ----------------------------------------------------------------------------------
def irq1(bios, *codes):
    m = bios.machine
    exits = []
    for code in codes:
        m.scancodes.append(code)
        r = call(bios, "int09")
        exits.append(r.ip)
    return exits


def drain(bios):
    words = []
    while True:
        r = call(bios, "int16", ah=1)
        if r.zf:
            return words
        words.append(call(bios, "int16", ah=0).ax)


def test_int09_translation():
    m, bios = new_bios()
    kb_done = bios.label("kb_done")
    assert irq1(bios, 0x1E, 0x9E) == [kb_done, kb_done]           # a
    assert (0x61, 0xCC) in m.io and (0x61, 0x4C) in m.io          # acknowledged on 61h bit 7
    irq1(bios, 0x2A, 0x1E, 0x9E, 0x03, 0x83, 0xAA)                # Shift-a, Shift-2
    irq1(bios, 0x3A, 0xBA, 0x1E, 0x9E, 0x02, 0x82, 0x3A, 0xBA)    # Caps: A, 1
    irq1(bios, 0x1D, 0x2E, 0xAE, 0x9D)                            # Ctrl-C
    irq1(bios, 0x38, 0x1F, 0x9F, 0xB8)                            # Alt-S
    irq1(bios, 0x3B, 0xBB, 0x2A, 0x3C, 0xBC, 0xAA)                # F1, Shift-F2
    irq1(bios, 0x48, 0xC8, 0x45, 0xC5, 0x48, 0xC8, 0x45, 0xC5)    # Up, NumLock 8
    assert drain(bios) == [0x1E61, 0x1E41, 0x0340, 0x1E41, 0x0231, 0x2E03,
                           0x1F00, 0x3B00, 0x5500, 0x4800, 0x4838]
    irq1(bios, 0x1C, 0x9C, 0x0E, 0x8E, 0x01, 0x81)                # Enter BS Esc
    irq1(bios, 0x38, 0x4F, 0xCF, 0x48, 0xC8, 0x4B, 0xCB, 0xB8)    # Alt+1,8,4 = 184 ('¸')
    irq1(bios, 0xE0, 0x48, 0xE0, 0xC8)                            # gray Up
    assert drain(bios) == [0x1C0D, 0x0E08, 0x011B, 0x00B8, 0x4800]
    assert m.memory.read_byte(0x417) == 0


def test_int09_special_keys():
    m, bios = new_bios()
    # Ctrl-Alt-Del: warm boot flag and the reboot exit
    exits = irq1(bios, 0x1D, 0x38, 0x53)
    assert exits[-1] == bios.label("kb_reboot") and word(m, 0x472) == 0x1234
    irq1(bios, 0xD3, 0xB8, 0x9D)
    # Ctrl-Break: buffer flushed, break flag, INT 1Bh exit, then 0000h stored
    irq1(bios, 0x1E, 0x9E)
    exits = irq1(bios, 0x1D, 0x46)
    assert exits[-1] == bios.label("kb_break")
    assert m.memory.read_byte(0x471) == 0x80
    assert drain(bios) == []
    call(bios, "kb_break_done")
    assert drain(bios) == [0x0000]
    irq1(bios, 0xC6, 0x9D)
    # Shift-PrtSc
    exits = irq1(bios, 0x2A, 0x37)
    assert exits[-1] == bios.label("kb_prtsc")
    irq1(bios, 0xB7, 0xAA)
    # Pause (Ctrl-NumLock) waits until the next key, which is dropped
    exits = irq1(bios, 0x1D, 0x45, 0xC5, 0x9D)
    assert exits[1] == bios.label("kb_pause")
    r = call(bios, "kb_pause")
    assert m.cpu.ctl[S.C_HALTED] == 1 and r.if_
    irq1(bios, 0x1E, 0x9E)
    m.cpu.ctl[S.C_HALTED] = 0
    r = call(bios, "kb_pause")
    assert r.ip == ip_after(bios, "kb_pause")
    assert drain(bios) == []
    # buffer full: the 16th key is dropped
    for _ in range(16):
        irq1(bios, 0x1E, 0x9E)
    assert len(drain(bios)) == 15


def test_int16_read_peek_flags_and_wait():
    m, bios = new_bios()
    bios.keyboard.push(0x1C0D)
    bios.keyboard.push(0x3062)
    r = call(bios, "int16", ah=1)
    assert not r.zf and r.ax == 0x1C0D
    r = call(bios, "int16", ah=0)
    assert r.ax == 0x1C0D and r.ip == ip_after(bios, "int16")
    assert call(bios, "int16", ah=0).ax == 0x3062
    assert call(bios, "int16", ah=1).zf
    m.memory.write(0x417, b"\x43")
    assert call(bios, "int16", ah=2).al == 0x43
    # empty buffer: IP stays on the trap, IF=1, the CPU halts until an interrupt
    r = call(bios, "int16", ah=0)
    assert r.ip == ip_after(bios, "int16") - 1 and r.if_
    assert m.cpu.ctl[S.C_HALTED] == 1 and bios.waiting_for_key
    m.cpu.ctl[S.C_HALTED] = 0
    bios.keyboard.push(0x011B)
    r = call(bios, "int16", ah=0)
    assert r.ax == 0x011B and not bios.waiting_for_key
    # enhanced-keyboard functions do not exist on an XT
    r = call(bios, "int16", ah=0x10, al=0x55)
    assert r.ax == 0x1055


# -- timer, time of day, misc ------------------------------------------------------------------
class PortLog:
    """A port-map observer: the writes the machine's ports saw."""

    def __init__(self):
        self.writes = []

    def after_write(self, port, value, width):
        self.writes.append((port, value))


def timer_tick_by_int08(m):
    """Run the BIOS's INT 08h handler once, as the guest's ``INT 08h`` (IRQ
    0 masked, so no real tick comes in between); returns to a ``jmp $``."""
    # mov al,0FFh / out 21h,al / int 08h / jmp $
    code = bytes([0xB0, 0xFF, 0xE6, 0x21, 0xCD, 0x08, 0xEB, 0xFE])
    m.memory.write(0x10000, code)
    m.set_registers(cs=0x1000, ip=0)
    m.cpu.ctl[S.C_HALTED] = 0
    m.run_for(5000)
    assert (m.cpu.r.cs, m.cpu.r.ip) == (0x1000, 6)


def real_machine():
    from pypc_core.machine import Machine, MachineConfig
    m = Machine(MachineConfig())
    m.run_seconds(0.3)                   # POST done, waiting for a boot disk
    return m


def test_int08_counts_ticks_and_rolls_over_at_a_day():
    # the handler is 8088 code (no trap): the tick count, midnight at
    # 1800B0h ticks or beyond, then INT 1Ch, EOI and IRET
    with real_machine() as m:
        assert not any(n == "int08" for n in m.bios.trap_addresses.values())
        # INT 1Ch points at a counter of our own: inc byte [cs:0100h] / iret
        m.memory.write(0x20000, bytes([0x2E, 0xFE, 0x06, 0x00, 0x01, 0xCF]))
        m.memory.write(0x1C * 4, struct.pack("<HH", 0, 0x2000))
        m.memory.write(0x46C, struct.pack("<I", 0x00123456))
        timer_tick_by_int08(m)
        assert struct.unpack("<I", m.memory.read(0x46C, 4))[0] == 0x00123457
        assert m.memory.read_byte(0x470) == 0
        for before, after, rolled in ((0x0012FFFF, 0x00130000, 0),
                                      (0x001800AF, 0, 1),      # one tick before midnight
                                      (0x001900FF, 0, 1)):     # past a day already
            m.memory.write(0x470, b"\x00")
            m.memory.write(0x46C, struct.pack("<I", before))
            timer_tick_by_int08(m)
            assert struct.unpack("<I", m.memory.read(0x46C, 4))[0] == after, hex(before)
            assert m.memory.read_byte(0x470) == rolled, hex(before)
        assert m.memory.read_byte(0x20100) == 4                 # INT 1Ch each time
        assert m.pic.isr == 0                                    # the EOI came


def test_int08_floppy_motor_timeout():
    with real_machine() as m:
        log = PortLog()
        m.ports.add_observer(log)
        m.memory.write(0x43F, b"\x01\x02")                     # motor A on, 2 ticks left
        timer_tick_by_int08(m)
        assert m.memory.read(0x43F, 2) == b"\x01\x01"
        assert (0x3F2, 0x0C) not in log.writes
        timer_tick_by_int08(m)
        assert m.memory.read(0x43F, 2) == b"\x00\x00" and (0x3F2, 0x0C) in log.writes
        timer_tick_by_int08(m)                                   # a count of 0 stays 0
        assert m.memory.read(0x43F, 2) == b"\x00\x00"
        assert log.writes.count((0x3F2, 0x0C)) == 1


def test_int1a_time_of_day():
    m, bios = new_bios()
    r = call(bios, "int1a", ah=1, cx=0x0012, dx=0x3456)
    assert not r.cf
    r = call(bios, "int1a", ah=0)
    assert (r.cx, r.dx, r.al) == (0x0012, 0x3456, 0) and not r.cf
    m.memory.write(0x470, b"\x01")                               # a midnight passed
    r = call(bios, "int1a", ah=0)
    assert r.al == 1
    assert call(bios, "int1a", ah=0).al == 0                      # flag cleared by the read
    assert call(bios, "int1a", ah=2).cf                           # no RTC on an XT


def test_small_services():
    m, bios = new_bios()
    assert call(bios, "int11").ax == word(m, 0x410)
    assert call(bios, "int12").ax == 640
    r = call(bios, "int15", ah=0xC0)
    assert r.cf and r.ah == 0x86
    r = call(bios, "int14", ah=3, dx=0)
    assert r.ah & 0x80                                            # no COM1
    r = call(bios, "int17", ah=2, dx=0)
    assert r.ah == 0x81                                           # no printer
    call(bios, "int05")
    assert m.memory.read_byte(0x500) == 0xFF
    # an unexpected IRQ 5 is recorded, masked and acknowledged
    m.isr = 0x20
    call(bios, "irq_other")
    assert m.memory.read_byte(0x46B) == 0x20
    assert (0x21, 0x20) in m.io and m.io[-1] == (0x20, 0x20)


def test_int18_message():
    m, bios = new_bios()
    r = call(bios, "int18")
    assert r.ip == bios.label("int18_halt")
    text = "".join(screen_text(m, row) for row in range(25))
    assert "No ROM BASIC" in text


def test_state_round_trip():
    m, bios = new_bios()
    irq1(bios, 0xE1)
    state = bios.get_state()
    _m2, bios2 = new_bios()
    bios2.set_state(state)
    assert bios2.keyboard.e1_pending == 2


def test_set_mode_programs_crtc_from_int1d_table():
    m, bios = new_bios()
    call(bios, "int10", ah=0, al=1)
    crtc = [v for (p, v) in m.io if p == 0x3D5][:16]
    assert bytes(crtc) == rom.CRTC_40X25
    assert m.io[0] == (0x3D8, 0x28 & ~0x08)                       # video off while programming
    assert (0x3D8, 0x28) in m.io and (0x3D9, 0x30) in m.io
    assert word(m, 0x44A) == 40 and word(m, 0x44C) == 2048
    # a program's own INT 1Dh table is used
    table = bytes(range(0x40, 0x80))
    m.memory.write(0x7000, table)
    m.memory.write(0x1D * 4, b"\x00\x70\x00\x00")
    m.io.clear()
    call(bios, "int10", ah=0, al=3)
    assert bytes(v for (p, v) in m.io if p == 0x3D5)[:16] == table[16:32]


def test_int14_through_a_uart():
    m, bios = new_bios(devices={"uart"})
    uart = {"lsr": 0x60, "rx": None, "writes": []}

    def rd(port):
        if port == 0x3FD:
            return uart["lsr"] | (1 if uart["rx"] is not None else 0)
        if port == 0x3F8 and uart["rx"] is not None:
            value, uart["rx"] = uart["rx"], None
            return value
        return 0xB0 if port == 0x3FE else 0

    m.ports.claim("fake-uart", range(0x3F8, 0x400), read=rd,
                  write=lambda p, v: uart["writes"].append((p, v)))
    r = call(bios, "int14", ah=0, al=0xE3, dx=0)                  # 9600 8N1
    assert uart["writes"][:4] == [(0x3FB, 0x80), (0x3F8, 12), (0x3F9, 0), (0x3FB, 0x03)]
    assert r.ah == 0x60 and r.al == 0xB0
    uart["writes"].clear()
    r = call(bios, "int14", ah=1, al=ord("A"), dx=0)
    assert (0x3F8, ord("A")) in uart["writes"] and not r.ah & 0x80
    before = int(m.cpu.ctl[S.C_CYCLES])
    r = call(bios, "int14", ah=2, dx=0)
    assert r.ah & 0x80                                            # nothing received
    assert int(m.cpu.ctl[S.C_CYCLES]) - before == 262_144         # after one tick's wait
    uart["rx"] = ord("z")
    r = call(bios, "int14", ah=2, dx=0)
    assert r.al == ord("z") and not r.ah & 0x80


def test_int13_write_to_cow_image_leaves_file(tmp_path):
    path, _ = make_floppy(tmp_path, mode="readonly")
    _.close()
    before = path.read_bytes()
    disk = DiskImage(path, "floppy", mode="cow")
    m, bios = new_bios({0: disk})
    m.memory.write(0x30000, b"\x99" * 512)
    r = call(bios, "int13", ah=3, al=1, ch=0, cl=1, dh=0, dl=0, es=0x3000, bx=0)
    assert not r.cf
    r = call(bios, "int13", ah=2, al=1, ch=0, cl=1, dh=0, dl=0, es=0x4000, bx=0)
    assert m.memory.read(0x40000, 512) == b"\x99" * 512
    disk.close()
    assert path.read_bytes() == before
