"""The uPD765 floppy controller card at port level: every command, its
result phase and interrupt, with and without DMA (through the real 8237),
on a bare backplane whose clock the test moves to the card's events."""

import pytest

from pypc_core.board import Backplane
from pypc_core.bus import MemoryMap, PortMap
from pypc_core.chipset import Dma8237, Pit8253
from pypc_core.storage import DiskImage
from pypc_plugins.fdc import Fdc765
from pypc_plugins.fdc import fdc as F


class Pic:
    """IRQ line recorder."""

    def __init__(self):
        self.level = False
        self.edges = 0

    def raise_irq(self, n):
        assert n == 6
        self.edges += not self.level
        self.level = True

    def lower_irq(self, n):
        self.level = False

    def pulse_irq(self, n):
        self.edges += 1


def pattern_image(size=368640):
    data = bytearray(size)
    for lba in range(size // 512):
        data[lba * 512:(lba + 1) * 512] = bytes([lba & 0xFF, lba >> 8]) * 256
    return bytes(data)


class Rig:
    def __init__(self, image=None, mode="rw", drives=2, disks=None):
        self.now = 0
        self.memory = MemoryMap()
        self.memory.map_ram(0, 0xA0000)
        self.ports = PortMap()
        self.pic = Pic()
        self.dma = Dma8237(memory=self.memory)
        if disks is None:
            disks = {0: DiskImage.from_bytes(image or pattern_image(), mode=mode)}
        self.disks = disks
        bp = Backplane(self.memory, self.ports, self.clock, self.pic, self.dma)
        self.dma.attach(bp.board(self.dma.declaration))
        self.fdc = Fdc765(disks=self.disks, drives=drives)
        self.fdc.attach(bp.board(self.fdc.declaration))

    def clock(self):
        return self.now

    def out(self, port, value):
        self.ports.write(port, value)

    def inp(self, port):
        return self.ports.read(port)

    def run_to(self, cycle):
        while True:
            due = self.fdc.next_event()
            if due is None or due > cycle:
                break
            self.now = due
            self.fdc.advance(due)
        self.now = max(self.now, cycle)

    def run_until_irq(self, limit=20 * F.REV):
        """Move time to the card's events until IRQ 6 rises; the cycle."""
        end = self.now + limit
        while not self.pic.level:
            due = self.fdc.next_event()
            assert due is not None and due <= end, "no interrupt came"
            self.now = due
            self.fdc.advance(due)
        return self.now

    def cmd(self, *data):
        for b in data:
            assert self.inp(F.MSR_PORT) & 0xC0 == 0x80, hex(self.inp(F.MSR_PORT))
            self.out(F.DATA_PORT, b)

    def results(self):
        out = []
        while self.inp(F.MSR_PORT) & 0xC0 == 0xC0:
            out.append(self.inp(F.DATA_PORT))
        assert self.inp(F.MSR_PORT) == 0x80
        return out

    def sense(self):
        self.cmd(0x08)
        return self.results()

    def power_up(self, motors=0x10, dma=True):
        self.out(F.DOR_PORT, 0x00)
        self.out(F.DOR_PORT, motors | 0x04 | (0x08 if dma else 0))
        assert self.pic.level == dma
        assert [self.sense() for _ in range(4)] == [[0xC0 + d, 0] for d in range(4)]
        assert not self.pic.level
        self.cmd(0x03, 0xDF, 0x02)                      # specify: SRT 3 (6 ms here), DMA

    def dma_setup(self, mode, addr, length, ch=2):
        self.out(0x0A, 0x04 | ch)
        self.out(0x0C, 0)
        self.out(0x0B, mode | ch)
        self.out(0x04, addr & 0xFF)
        self.out(0x04, addr >> 8 & 0xFF)
        self.out(0x81, addr >> 16)
        self.out(0x05, (length - 1) & 0xFF)
        self.out(0x05, (length - 1) >> 8)
        self.out(0x0A, ch)

    def seek(self, cyl, drive=0, head=0):
        self.cmd(0x0F, drive | head << 2, cyl)
        self.run_until_irq()
        return self.sense()

    def read(self, c, h, r, eot, n=2, mt=True, unit=None, code=0x46):
        unit = (h << 2) if unit is None else unit
        self.cmd((0x80 if mt else 0) | code, unit, c, h, r, n, eot, 0x2A, 0xFF)
        self.run_until_irq()
        return self.results()


def sector(lba):
    return bytes([lba & 0xFF, lba >> 8]) * 256


def lba_of(c, h, s, heads=2, spt=9):
    return (c * heads + h) * spt + s - 1


# -- reset, specify, sense ------------------------------------------------------------

def test_reset_gives_four_ready_changes_then_sense_is_invalid():
    rig = Rig()
    assert rig.inp(F.MSR_PORT) == 0x00                  # held in reset at power-on
    rig.power_up()
    assert rig.sense() == [0x80]                        # nothing pending: invalid
    rig.cmd(0x1F)                                       # no such command
    assert rig.results() == [0x80]
    assert rig.inp(F.DOR_PORT) == 0xFF                  # DOR is write-only


def test_sense_drive_status_st3():
    rig = Rig(mode="readonly")
    rig.power_up()
    rig.cmd(0x04, 0x04)                                 # drive 0, head 1
    st3 = rig.results()
    assert st3 == [F.ST3_RY | F.ST3_T0 | F.ST3_TS | F.ST3_WP | F.ST3_HD]
    rig.seek(5)
    rig.cmd(0x04, 0x00)
    assert rig.results() == [F.ST3_RY | F.ST3_TS | F.ST3_WP]    # off track 0
    rig.cmd(0x04, 0x01)                                 # drive 1: no media
    assert rig.results() == [F.ST3_RY | F.ST3_T0 | F.ST3_TS | F.ST3_WP | 1]
    assert not rig.pic.level                            # sense drive status: no interrupt


# -- seek and recalibrate -------------------------------------------------------------

def test_seek_busy_bit_step_time_interrupt_and_sense():
    rig = Rig()
    rig.power_up()
    start = rig.now
    rig.cmd(0x0F, 0x04, 10)                              # head 1, cylinder 10
    assert rig.inp(F.MSR_PORT) == 0x81                  # drive 0 seeking, RQM
    done = rig.run_until_irq()
    step = int(3 * 2 * F.MS)                            # SRT D: 3 units of 2 ms (250 kbit/s)
    assert done - start == 10 * step
    assert rig.inp(F.MSR_PORT) == 0x80
    assert rig.sense() == [0x24, 10]                    # SE, head 1, PCN 10
    assert not rig.pic.level
    assert rig.fdc.track[0] == 10


def test_a_command_byte_drops_an_unsensed_seek_interrupt():
    # the Super PC/Turbo XT BIOS recalibrates, does not sense it, seeks and
    # waits for the seek's interrupt: the seek's command bytes drop INT, so
    # its end is a new edge at the (edge-triggered) 8259; both statuses stay
    # queued for sense interrupt status
    rig = Rig()
    rig.power_up()
    rig.cmd(0x07, 0x00)
    rig.run_until_irq()
    edges = rig.pic.edges
    rig.cmd(0x0F, 0x00, 0)
    assert not rig.pic.level
    rig.run_until_irq()
    assert rig.pic.edges == edges + 1
    assert rig.sense() == [0x20, 0]          # the recalibrate's
    assert rig.sense() == [0x20, 0]          # the seek's
    assert rig.sense() == [0x80] and not rig.pic.level


def test_recalibrate_gives_up_after_77_steps():
    rig = Rig(image=pattern_image(737280))              # 80 cylinders
    rig.power_up()
    assert rig.seek(79) == [0x20, 79]
    rig.fdc.pcn[0] = 79
    rig.cmd(0x07, 0x00)
    rig.run_until_irq()
    assert rig.sense() == [0x70, 2]                     # abnormal, SE, EC: 77 steps short
    rig.cmd(0x07, 0x00)
    rig.run_until_irq()
    assert rig.sense() == [0x20, 0]                     # the second one reaches track 0
    assert rig.fdc.track[0] == 0


def test_recalibrate_a_drive_that_is_not_there():
    rig = Rig(drives=1)
    rig.power_up()
    rig.cmd(0x07, 0x01)
    rig.run_until_irq()
    assert rig.sense()[0] == 0x71                       # equipment check on drive 1


def test_change_line_through_dir_cleared_by_a_step():
    rig = Rig()
    rig.power_up(motors=0x10)
    assert rig.inp(F.DIR_PORT) == 0x00
    rig.disks[0].mark_changed()
    assert rig.inp(F.DIR_PORT) == 0x80
    rig.seek(0)                                         # no step: the line stays
    assert rig.inp(F.DIR_PORT) == 0x80
    rig.seek(1)
    assert rig.inp(F.DIR_PORT) == 0x00
    rig.out(F.DOR_PORT, 0x0D | 0x20)                     # drive 1 (empty), motor on
    assert rig.inp(F.DIR_PORT) == 0x80                  # no media: active
    rig.out(F.DOR_PORT, 0x0D)                           # motor off: not gated through
    assert rig.inp(F.DIR_PORT) == 0x00


# -- read data ------------------------------------------------------------------------

def test_read_data_by_dma_terminal_count_ends_normally():
    rig = Rig()
    rig.power_up()
    rig.seek(5)
    rig.dma_setup(0x46, 0x20000, 1024)                  # two sectors, to memory
    rig.cmd(0xE6, 0x00, 5, 0, 8, 2, 9, 0x2A, 0xFF)      # MT MF SK read, C5 H0 R8
    assert rig.inp(F.MSR_PORT) == 0x10                  # busy, DMA mode: no RQM
    rig.run_until_irq()
    assert rig.inp(F.MSR_PORT) == 0xD0                  # result phase
    res = rig.results()
    # TC on the last sector of head 0: next is head 1, sector 1
    assert res == [0x04, 0, 0, 5, 1, 1, 2]
    assert not rig.pic.level                            # cleared by the first result byte
    assert rig.memory.read(0x20000, 1024) == sector(lba_of(5, 0, 8)) + sector(lba_of(5, 0, 9))
    assert rig.inp(0x08) & 0x04                         # the 8237 saw terminal count on ch 2


def test_read_waits_for_motor_spin_up_and_rotation():
    rig = Rig()
    rig.power_up(motors=0x00)                           # motor off
    rig.dma_setup(0x46, 0x20000, 512)
    rig.cmd(0x46, 0x00, 0, 0, 1, 2, 9, 0x2A, 0xFF)
    rig.run_to(rig.now + 10 * F.REV)
    assert not rig.pic.level and rig.fdc.next_event() is None    # no index pulses: waits
    on = rig.now
    rig.out(F.DOR_PORT, 0x1C)                           # motor on now
    done = rig.run_until_irq()
    assert done >= on + F.SPINUP
    assert done <= on + F.SPINUP + F.REV + F.REV // 9 + 10
    assert rig.results()[:3] == [0x00, 0, 0]
    assert rig.memory.read(0x20000, 512) == sector(0)


def test_multi_track_read_runs_into_head_1_and_end_of_cylinder():
    rig = Rig()
    rig.power_up()
    rig.seek(2)
    rig.dma_setup(0x46, 0x30000, 3 * 512)
    res = rig.read(2, 0, 8, 9)                          # MT: 8, 9, then head 1 sector 1
    assert res == [0x04, 0, 0, 2, 1, 2, 2]
    assert rig.memory.read(0x30000, 1536) == b"".join(
        sector(lba_of(2, h, s)) for h, s in ((0, 8), (0, 9), (1, 1)))
    # without MT, reading past EOT is "end of cylinder"
    rig.dma_setup(0x46, 0x30000, 3 * 512)
    res = rig.read(2, 0, 8, 9, mt=False)
    assert res == [0x40, F.ST1_EN, 0, 3, 0, 1, 2]
    # with MT, past the last sector of head 1 as well
    rig.dma_setup(0x46, 0x30000, 3 * 512)
    res = rig.read(2, 1, 9, 9)
    assert res[:3] == [0x40 | 0x00, F.ST1_EN, 0] and res[3:6] == [3, 0, 1]


def test_read_errors_no_data_missing_address_mark_wrong_cylinder():
    rig = Rig()
    rig.power_up()
    rig.dma_setup(0x46, 0x20000, 512)
    t0 = rig.now
    res = rig.read(0, 0, 10, 10)                        # sector 10 of 9
    assert res[:3] == [0x40, F.ST1_ND, 0]
    assert rig.now - t0 <= 2 * F.REV + F.SPINUP + 100   # gave up at the second index pulse
    # a single-sided disk has nothing under head 1: missing address mark
    rig = Rig(image=pattern_image(184320))
    rig.power_up()
    rig.dma_setup(0x46, 0x20000, 512)
    res = rig.read(0, 1, 1, 9, unit=0x04)
    assert res[:3] == [0x44, F.ST1_MA, 0]
    # the head stops at the last track: cylinder 40 is not there, 39's IDs are
    rig = Rig()
    rig.power_up()
    assert rig.seek(40) == [0x20, 40]
    assert rig.fdc.track[0] == 39
    rig.dma_setup(0x46, 0x20000, 512)
    res = rig.read(40, 0, 1, 9)
    assert res[:3] == [0x40, F.ST1_ND, F.ST2_WC]
    assert rig.memory.read(0x20000, 2) == b"\0\0"      # nothing was transferred


def test_overrun_when_the_dma_channel_is_masked():
    rig = Rig()
    rig.power_up()
    rig.dma_setup(0x46, 0x20000, 512)
    rig.out(0x0A, 0x06)                                 # mask channel 2 again
    res = rig.read(0, 0, 1, 9)
    assert res[:3] == [0x40, F.ST1_OR, 0]


def test_verify_mode_dma_reads_without_touching_memory():
    rig = Rig()
    rig.power_up()
    rig.memory.write(0x20000, b"\xAA" * 1024)
    rig.dma_setup(0x42, 0x20000, 1024)
    res = rig.read(0, 0, 1, 9)
    assert res == [0x00, 0, 0, 0, 0, 3, 2]
    assert rig.memory.read(0x20000, 1024) == b"\xAA" * 1024


def test_read_without_dma_through_the_data_register():
    rig = Rig()
    rig.power_up()
    rig.cmd(0x03, 0xDF, 0x03)                           # specify ND: non-DMA
    rig.cmd(0x46, 0x00, 0, 0, 8, 2, 9, 0x2A, 0xFF)
    got = bytearray()
    while True:
        rig.run_until_irq()
        msr = rig.inp(F.MSR_PORT)
        if msr & 0x20 == 0:
            break
        assert msr & 0xF0 == 0xF0                       # RQM DIO NDM CB
        while rig.inp(F.MSR_PORT) & 0x20:
            got.append(rig.inp(F.DATA_PORT))
    assert bytes(got) == sector(7) + sector(8)
    res = rig.results()                                 # no TC without DMA: ends at EOT
    assert res == [0x40, F.ST1_EN, 0, 1, 0, 1, 2]


# -- write data -----------------------------------------------------------------------

def test_write_data_by_dma_and_write_protect():
    rig = Rig()
    rig.power_up()
    rig.seek(3)
    rig.memory.write(0x40000, b"\x5A" * 512 + b"\xA5" * 512)
    rig.dma_setup(0x4A, 0x40000, 1024)                  # memory -> controller
    rig.cmd(0xC5, 0x04, 3, 1, 4, 2, 9, 0x2A, 0xFF)
    rig.run_until_irq()
    assert rig.results() == [0x04, 0, 0, 3, 1, 6, 2]
    disk = rig.disks[0]
    assert disk.read_sectors(lba_of(3, 1, 4), 2) == b"\x5A" * 512 + b"\xA5" * 512
    assert disk.read_sectors(lba_of(3, 1, 6), 1) == sector(lba_of(3, 1, 6))
    rig = Rig(mode="readonly")
    rig.power_up()
    rig.dma_setup(0x4A, 0x40000, 512)
    rig.cmd(0xC5, 0x00, 0, 0, 1, 2, 9, 0x2A, 0xFF)
    assert rig.pic.level                                # at once: write protected
    assert rig.results() == [0x40, F.ST1_NW, 0, 0, 0, 1, 2]
    assert rig.disks[0].read_sectors(0, 1) == sector(0)


def test_write_without_dma():
    rig = Rig()
    rig.power_up()
    rig.cmd(0x03, 0xDF, 0x03)
    rig.cmd(0x45, 0x00, 0, 0, 9, 2, 9, 0x2A, 0xFF)
    rig.run_until_irq()
    assert rig.inp(F.MSR_PORT) & 0xF0 == 0xB0           # RQM NDM CB, DIO clear: wants bytes
    for i in range(512):
        rig.out(F.DATA_PORT, i & 0xFF)
    rig.run_until_irq()
    assert rig.results() == [0x40, F.ST1_EN, 0, 1, 0, 1, 2]
    assert rig.disks[0].read_sectors(8, 1) == bytes(range(256)) * 2


# -- read ID, format, read track ----------------------------------------------------------

def test_read_id_reports_the_next_sector_under_the_head():
    rig = Rig()
    rig.power_up()
    rig.seek(7)
    rig.cmd(0x4A, 0x04)
    rig.run_until_irq()
    res = rig.results()
    assert res[:3] == [0x04, 0, 0] and res[3] == 7 and res[4] == 1 and res[6] == 2
    assert 1 <= res[5] <= 9
    rig = Rig(image=pattern_image(184320))
    rig.power_up()
    rig.cmd(0x4A, 0x04)                                 # single-sided: no IDs on head 1
    rig.run_until_irq()
    assert rig.results()[:2] == [0x44, F.ST1_MA]


def test_format_track_by_dma_and_read_it_back():
    rig = Rig()
    rig.power_up()
    rig.seek(4)
    ids = b"".join(bytes([4, 1, r, 2]) for r in (1, 6, 2, 7, 3, 8, 4, 9, 5))   # interleaved
    rig.memory.write(0x50000, ids)
    rig.dma_setup(0x4A, 0x50000, len(ids))
    rig.cmd(0x4D, 0x04, 2, 9, 0x50, 0xE5)
    rig.run_until_irq()
    res = rig.results()
    assert res[:3] == [0x04, 0, 0]
    disk = rig.disks[0]
    assert disk.read_sectors(lba_of(4, 1, 1), 9) == b"\xE5" * 512 * 9
    assert disk.read_sectors(lba_of(4, 0, 1), 1) == sector(lba_of(4, 0, 1))
    rig.dma_setup(0x46, 0x60000, 9 * 512)
    assert rig.read(4, 1, 1, 9) == [0x00, 0, 0, 5, 0, 1, 2]   # TC at EOT of head 1
    assert rig.memory.read(0x60000, 9 * 512) == b"\xE5" * 9 * 512


def test_format_a_foreign_layout_is_kept_by_the_controller():
    rig = Rig()
    rig.power_up()
    rig.seek(6)
    ids = b"".join(bytes([6, 0, r, 3]) for r in (0x41, 0x42, 0x43, 0x44))   # 4 x 1 KiB
    rig.memory.write(0x50000, ids)
    rig.dma_setup(0x4A, 0x50000, len(ids))
    rig.cmd(0x4D, 0x00, 3, 4, 0x74, 0x6D)
    rig.run_until_irq()
    assert rig.results()[:3] == [0x00, 0, 0]
    rig.memory.write(0x40000, bytes(range(256)) * 4)
    rig.dma_setup(0x4A, 0x40000, 1024)
    rig.cmd(0x45, 0x00, 6, 0, 0x43, 3, 0x44, 0x2A, 0xFF)
    rig.run_until_irq()
    assert rig.results()[:3] == [0x00, 0, 0]
    rig.dma_setup(0x46, 0x60000, 2048)
    rig.cmd(0x46, 0x00, 6, 0, 0x42, 3, 0x44, 0x2A, 0xFF)
    rig.run_until_irq()
    assert rig.results() == [0x00, 0, 0, 6, 0, 0x44, 3]
    assert rig.memory.read(0x60000, 2048) == b"\x6D" * 1024 + bytes(range(256)) * 4
    rig.dma_setup(0x46, 0x60000, 512)                   # the old 512-byte sectors are gone
    assert rig.read(6, 0, 1, 9)[:3] == [0x40, F.ST1_ND, 0]
    assert rig.disks[0].read_sectors(lba_of(6, 0, 1), 1) == sector(lba_of(6, 0, 1))
    # the layout is part of the card's state
    state = rig.fdc.get_state()
    other = Rig()
    other.fdc.set_state(state)
    assert other.fdc.custom == rig.fdc.custom


def test_format_without_dma_and_write_protected_format():
    rig = Rig()
    rig.power_up()
    rig.cmd(0x03, 0xDF, 0x03)
    rig.cmd(0x4D, 0x00, 2, 9, 0x50, 0x00)
    rig.run_until_irq()
    assert rig.inp(F.MSR_PORT) & 0xF0 == 0xB0
    for r in range(1, 10):
        for b in (0, 0, r, 2):
            rig.out(F.DATA_PORT, b)
    rig.run_until_irq()
    assert rig.results()[:3] == [0x00, 0, 0]
    assert rig.disks[0].read_sectors(0, 9) == bytes(9 * 512)
    rig = Rig(mode="readonly")
    rig.power_up()
    rig.cmd(0x4D, 0x00, 2, 9, 0x50, 0x00)
    assert rig.results()[:2] == [0x40, F.ST1_NW]


def test_read_track_from_the_index_hole():
    rig = Rig()
    rig.power_up()
    rig.seek(1)
    rig.dma_setup(0x46, 0x20000, 3 * 512)
    rig.cmd(0x42, 0x00, 1, 0, 1, 2, 9, 0x2A, 0xFF)
    rig.run_until_irq()
    res = rig.results()
    assert res == [0x00, 0, 0, 1, 0, 4, 2]
    assert rig.memory.read(0x20000, 1536) == b"".join(sector(lba_of(1, 0, s)) for s in (1, 2, 3))
    # IDs that do not match the command's are read all the same, flagged ND
    rig.dma_setup(0x46, 0x20000, 2 * 512)
    rig.cmd(0x42, 0x00, 1, 0, 5, 2, 9, 0x2A, 0xFF)
    rig.run_until_irq()
    assert rig.results()[:3] == [0x00, F.ST1_ND, 0]
    assert rig.memory.read(0x20000, 512) == sector(lba_of(1, 0, 1))


def test_interrupt_gated_by_dor_bit_3():
    rig = Rig()
    rig.power_up(dma=False)
    rig.cmd(0x0F, 0x00, 3)
    rig.run_to(rig.now + F.CPU_HZ)
    assert not rig.pic.level and rig.fdc.int_line        # the card's driver is off
    rig.out(F.DOR_PORT, 0x1C)
    assert rig.pic.level
    assert rig.sense() == [0x20, 3]


def test_state_round_trip_in_the_middle_of_a_read():
    def start():
        rig = Rig()
        rig.power_up()
        rig.dma_setup(0x46, 0x20000, 4 * 512)
        rig.cmd(0xE6, 0x00, 0, 0, 3, 2, 9, 0x2A, 0xFF)
        rig.run_to(rig.now + F.SPINUP + F.REV // 2)
        return rig
    a = start()
    state, dma = a.fdc.get_state(), a.dma.get_state()
    b = start()
    b.memory.mem[:] = a.memory.mem
    b.fdc.set_state(state)
    b.dma.set_state(dma)
    ra, rb = a.run_until_irq(), b.run_until_irq()
    assert ra == rb and a.results() == b.results()
    assert a.memory.read(0x20000, 2048) == b.memory.read(0x20000, 2048)
    assert a.memory.read(0x20000, 2048) == b"".join(sector(s) for s in range(2, 6))


# -- DMA channel 0: DRAM refresh ------------------------------------------------------

def test_dram_refresh_runs_channel_0_to_terminal_count():
    rig = Rig()
    pit = Pit8253(clock=rig.clock)
    rig.dma.attach_refresh(pit, rig.clock)
    pit.port_write(0x43, 0x54)                           # counter 1, LSB, mode 2
    pit.port_write(0x41, 18)                             # every 18 PIT clocks (72 cycles)
    rig.out(0x0B, 0x58)                                  # ch 0: single, auto-init, read
    rig.out(0x0C, 0)
    rig.out(0x00, 0)
    rig.out(0x00, 0)
    rig.out(0x01, 0xFF)
    rig.out(0x01, 0x00)                                  # 256 transfers per cycle
    rig.out(0x0A, 0x00)                                  # unmask
    assert rig.inp(0x08) & 1 == 0
    rig.now += 72 * 100
    rig.out(0x0C, 0)
    lo, hi = rig.inp(0x00), rig.inp(0x00)
    assert (hi << 8 | lo) == 100                         # the address moved with the edges
    lo, hi = rig.inp(0x01), rig.inp(0x01)
    assert (hi << 8 | lo) == 0xFF - 100
    rig.now += 72 * 200                                  # past terminal count
    assert rig.inp(0x08) & 1                             # TC status for channel 0 ...
    assert rig.inp(0x08) & 1 == 0                        # ... cleared by the read
    rig.out(0x0C, 0)
    lo, hi = rig.inp(0x00), rig.inp(0x00)
    assert (hi << 8 | lo) == 300 - 256                   # auto-initialised and running
    rig.out(0x0A, 0x04)                                  # masked: refresh stops
    rig.now += 72 * 50
    rig.out(0x0C, 0)
    assert rig.inp(0x00) == 300 - 256


def test_card_declaration_and_options():
    assert Fdc765.declaration.irqs == [6] and Fdc765.declaration.dma_channels == [2]
    assert "floppy-controller" in Fdc765.declaration.capabilities
    with pytest.raises(ValueError, match="1-4 drives"):
        Fdc765(drives=5)
