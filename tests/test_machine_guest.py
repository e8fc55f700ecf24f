"""Guest programs written here boot on the whole machine: built-in BIOS,
chipset, CGA plugin, floppy image.

The programs live in tests/guest/ (NAME.asm, assembled to NAME.bin, which is
committed: the suite needs no assembler).  Each is a boot sector plus a few
sectors it loads itself; it reports its results in words at 0000:0610h and
on the screen, and marks its progress in the phase byte 0000:0602h so the
test can type or press keys at the right moment.  See each .asm header for
the meaning of its result slots.

Each program runs once per module (a fixture records what the tests look
at); the determinism tests run them again and compare.
"""

import hashlib
import os
import random
import re
import struct
import sys

import pytest

if os.path.dirname(os.path.abspath(__file__)) not in sys.path:      # tests/guest/ helpers
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from guest import (  # noqa: E402
    PROGRAMS, SECTOR, assemble, bda_ticks, bin_path, find_nasm, loader_status, phase,
    program_bytes, program_image, run_to_done, run_to_phase, run_until, slots, word,
)
from pypc_core.machine import CPU_HZ, Machine, MachineConfig  # noqa: E402

TICKS_PER_DAY = 0x1800B0
TICK_HZ = CPU_HZ / 4 / 65536                    # 18.2065 Hz
TIMEOUT_S = 5.0                                 # emulated seconds per step, at most

# the RGBI colours the CGA plugin renders
BLACK = (0, 0, 0)
BLUE = (0, 0, 0xAA)
RED = (0xAA, 0, 0)
LIGHT_CYAN = (0x55, 0xFF, 0xFF)
LIGHT_MAGENTA = (0xFF, 0x55, 0xFF)
YELLOW = (0xFF, 0xFF, 0x55)
WHITE = (0xFF, 0xFF, 0xFF)

# Rendered-frame hashes (sha256 of the uint8 RGB bytes of a region of
# Machine.screen_rgb()).  The text one depends on the pypc 8x8 font.
MODE4_LINES_40_119_SHA256 = "d625f48969b7eef014420b2a37c0be0d4aeb8824750335e75173a36e99fe615b"
TEXT_ROWS_8_10_SHA256 = "c5ed8e22a01b47aff296a1e1915e6227d08dbcb569b1468e1a25c8cf9c8bbf14"


def sha(array):
    return hashlib.sha256(array.tobytes()).hexdigest()


def rgb(frame, y, x):
    return tuple(int(v) for v in frame[y, x])


def new_machine(image, **cfg):
    cfg.setdefault("cow", True)
    return Machine(MachineConfig(floppy_a=image, plugins=["cga", "fdc"], **cfg))


def boot(m, first_phase=None):
    """Run until the program's loader has handed over (phase set or done)."""
    if first_phase is not None:
        assert run_to_phase(m, first_phase, TIMEOUT_S), (
            f"phase {first_phase} not reached (phase {phase(m)}, loader "
            f"{loader_status(m):04X}h)\n" + "\n".join(m.screen_text()))


def finish(m):
    assert run_to_done(m, TIMEOUT_S), (
        f"program did not finish (phase {phase(m)})\n" + "\n".join(m.screen_text()))


# ---------------------------------------------------------------------------
# the committed bytes
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", PROGRAMS)
def test_committed_binary_is_a_boot_program(name):
    data = program_bytes(name)
    assert len(data) % SECTOR == 0
    assert SECTOR * 2 <= len(data) <= SECTOR * 9      # the loader reads track 0 only
    assert data[510:512] == b"\x55\xaa"


@pytest.mark.parametrize("name", PROGRAMS)
def test_committed_binary_matches_source(name, tmp_path):
    nasm = find_nasm()
    if nasm is None:
        pytest.skip("nasm is not installed (the committed .bin files are used as they are)")
    fresh = assemble(name, str(tmp_path / (name + ".bin")), nasm)
    assert fresh == program_bytes(name), (
        f"{bin_path(name)} is stale: re-assemble with "
        f"nasm -f bin -I tests/guest/ -o tests/guest/{name}.bin tests/guest/{name}.asm")


# ---------------------------------------------------------------------------
# video.asm: INT 10h and the CGA ports
# ---------------------------------------------------------------------------
def run_video(tmp_path):
    """Run video.asm; returns what the tests check."""
    rec = {}
    with new_machine(program_image(tmp_path, "video")) as m:
        boot(m, 1)
        assert run_until(m, lambda mm: mm.waiting_for_key(), 1.0)
        rec["mode4_slots"] = slots(m, 7)
        rec["mode4_frame"] = m.screen_rgb().copy()
        m.type_text(" ")
        finish(m)
        rec["slots"] = slots(m, 17)
        rec["text"] = m.screen_text()
        rec["frame"] = m.screen_rgb().copy()
        rec["cursor"] = m.video.cursor()
        rec["cycles"] = m.clock()
    return rec


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    return run_video(tmp_path_factory.mktemp("video"))


def test_video_mode4_pixels(video):
    s = video["mode4_slots"]
    assert s[0] == 0x2804                     # AH=0Fh: 40 columns, mode 4
    assert s[1:5] == [1, 2, 3, 2]             # AH=0Dh reads what AH=0Ch wrote
    assert s[5] == 0x026C                     # the same pixels in video RAM (even/odd banks)
    assert s[6] == ord("G")                   # AH=08h recognises a teletyped glyph


def test_video_mode4_rendered_frame(video):
    f = video["mode4_frame"]
    assert f.shape == (200, 640, 3)
    # 320x200: every pixel is two dots wide; palette 1, intense (3D9h = 30h)
    assert rgb(f, 50, 200) == rgb(f, 50, 201) == LIGHT_CYAN
    assert rgb(f, 50, 202) == LIGHT_MAGENTA
    assert rgb(f, 50, 204) == WHITE
    assert rgb(f, 50, 206) == BLACK
    assert rgb(f, 51, 206) == LIGHT_MAGENTA
    block = f[100:108, 320:352]
    assert (block == WHITE).all()
    assert rgb(f, 99, 320) == rgb(f, 108, 320) == rgb(f, 100, 319) == rgb(f, 100, 352) == BLACK
    # nothing else drawn between lines 40 and 120
    region = f[40:120]
    assert sha(region) == MODE4_LINES_40_119_SHA256
    colours = {tuple(c) for c in region.reshape(-1, 3).tolist()}
    assert colours == {BLACK, LIGHT_CYAN, LIGHT_MAGENTA, WHITE}


def test_video_text_services(video):
    s = video["slots"]
    assert s[7] == 0x5003                     # AH=0Fh: 80 columns, mode 3
    assert s[8] == 0                          # active page
    assert s[9] == 0x1E58                     # AH=09h 'X' in 1Eh, read back with AH=08h
    assert s[10] == 0x1800                    # teletype scrolled: cursor row 24, column 0
    assert s[11] == 0x4F20                    # AH=06h blanked the window line in 4Fh
    assert s[12] == 0x0748                    # ... and moved 'H' up one row
    assert s[16] == 0x0741                    # outside the window: unchanged


def test_video_screen_text(video):
    t = video["text"]
    assert len(t) == 25
    # the teletype lines made the whole screen scroll up twice
    assert t[0] == "     XXX"
    assert t[8] == "ROW10     FGHIJKLMNOP"
    assert t[9] == "     ABCDE           QRSTUVWXYZ"
    assert t[10] == ""
    assert t[12] == "MODE4 2804 PIX 026C MODE3 5003 CELL 1E58"
    assert t[13].startswith("VSYNC/10T 00")
    assert t[13].endswith("LINES 00C8")
    assert t[14] == "VIDEO DONE"
    assert t[21:24] == ["LINE1", "LINE2", "LINE3"]
    assert t[24] == ""


def test_video_text_frame(video):
    f = video["frame"]
    # the window line blanked in attribute 4Fh: red background (row 10 after the scroll)
    assert rgb(f, 10 * 8 + 4, 12 * 8 + 4) == RED
    cells = f[10 * 8:11 * 8, 10 * 8:21 * 8].reshape(-1, 3)
    assert {tuple(c) for c in cells.tolist()} == {RED}
    # 'X' in 1Eh: yellow on blue
    cell = f[0:8, 5 * 8:6 * 8].reshape(-1, 3)
    assert {tuple(c) for c in cell.tolist()} == {BLUE, YELLOW}
    # the rendered rows 8-10 (text in 07h, the red window line; no cursor there)
    assert sha(f[64:88]) == TEXT_ROWS_8_10_SHA256


def test_video_retrace_rate_relative_to_ticks(video):
    vsyncs = video["slots"][13]
    # a frame is 262 lines of 304 cycles: 59.92 Hz, 3.29 frames per tick
    frames_per_tick = (CPU_HZ / (262 * 304)) / TICK_HZ
    assert abs(vsyncs - 10 * frames_per_tick) <= 1
    assert 59 <= vsyncs / 10 * TICK_HZ <= 61
    # one display-enable edge per displayed scan line
    assert video["slots"][14] == 200


def test_video_crtc_cursor_through_ports(video):
    assert video["slots"][15] == 0x0251       # R14/R15 read back through 3D5h
    cur = video["cursor"]
    assert cur["address"] == 0x0251
    assert (cur["row"], cur["column"]) == (7, 33)


# ---------------------------------------------------------------------------
# disk.asm: INT 13h on a 360 KiB floppy
# ---------------------------------------------------------------------------
DATA_LBA = 9                       # cylinder 0, head 1, sectors 1-9
DATA = random.Random(0x5EED).randbytes(9 * SECTOR)
WRITE_LBA = 47                     # cylinder 2, head 1, sector 3
WRITTEN = bytearray((i * 3 + 0x5A) & 0xFF for i in range(SECTOR))
WRITTEN[:16] = b"GUEST WROTE THIS"
WRITTEN = bytes(WRITTEN)


def checksums(data):
    """What disk.asm computes: byte sum, and h = rol(h, 1) xor word."""
    h = 0
    for (w,) in struct.iter_unpack("<H", data):
        h = ((h << 1) | (h >> 15)) & 0xFFFF
        h ^= w
    return sum(data) & 0xFFFF, h


def file_sha(path):
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def run_disk(tmp_path, **cfg):
    image = program_image(tmp_path, "disk", {DATA_LBA: DATA})
    before = file_sha(image)
    rec = {"image": image, "before": before}
    with new_machine(image, **cfg) as m:
        finish(m)
        rec["slots"] = slots(m, 29)
        rec["text"] = m.screen_text()
        rec["cycles"] = m.clock()
        rec["machine_sees"] = bytes(m.disks[0].read_sectors(WRITE_LBA, 1))
    rec["after"] = file_sha(image)
    rec["files"] = sorted(os.listdir(tmp_path))
    return rec


@pytest.fixture(scope="module")
def disk(tmp_path_factory):
    return run_disk(tmp_path_factory.mktemp("disk"))


def test_disk_reset_and_read(disk):
    s = disk["slots"]
    assert s[0:2] == [0x0000, 0]              # AH=00h reset
    assert s[2:4] == [0x0009, 0]              # AH=02h: 9 sectors read
    assert (s[4], s[5]) == checksums(DATA)    # ... and they are the test's data
    assert s[28] == 0                         # 0040:0041 after a good read


def test_disk_write_read_back_verify(disk):
    s = disk["slots"]
    assert s[6:8] == [0x0001, 0]              # AH=03h
    assert s[8:10] == [0x0001, 0]             # AH=02h of the same sector
    assert s[10] == 0                         # no byte differs
    assert s[27] == 0x5547                    # "GU"
    assert s[11:13] == [0x0001, 0]            # AH=04h verify
    assert disk["machine_sees"] == WRITTEN


def test_disk_parameters_360k(disk):
    s = disk["slots"]
    bx, cx, dx, cf = s[13:17]
    assert bx & 0xFF == 1                     # drive type 1: 360 KiB
    assert cx >> 8 == 39                      # last cylinder
    assert cx & 0xFF == 9                     # sectors per track
    assert dx >> 8 == 1                       # last head
    assert dx & 0xFF == 1                     # one floppy drive
    assert cf == 0


def test_disk_errors(disk):
    s = disk["slots"]
    assert s[17:19] == [0x0400, 1]            # sector 10: sector not found, CF
    assert s[19:21] == [0x0404, 1]            # AH=01h returns the last status
    assert s[21:23] == [0x0400, 1]            # cylinder 40
    assert s[23:25] == [0x0900, 1]            # DMA across a 64 KiB boundary
    assert s[25:27] == [0x8000, 1]            # drive B: absent -> timeout


def test_disk_screen(disk):
    t = disk["text"]
    sums = "SUM %04X %04X" % checksums(DATA)
    assert f"RESET 0000 READ 0009 {sums}" in t
    assert "WRITE 0001 BACK 0001 DIFF 0000 VERIFY 0001" in t
    assert "PARMS 0001 2709 0101" in t
    assert "ERRORS 0400 0404 0400 0900 8000" in t
    assert "DISK DONE" in t


def test_disk_cow_leaves_the_image_alone(disk):
    assert disk["after"] == disk["before"]
    assert disk["files"] == ["disk.img"]      # no side file either


def test_disk_readonly_write_protected(tmp_path):
    rec = run_disk(tmp_path, cow=False, readonly=True)
    s = rec["slots"]
    assert s[6:8] == [0x0300, 1]              # write protected
    assert s[8:10] == [0x0001, 0]             # the read back sees the old (zero) sector
    assert s[10] != 0
    assert s[2:6] == [0x0009, 0, *checksums(DATA)]
    assert rec["after"] == rec["before"]


def test_disk_read_write_mode_writes_the_image(tmp_path):
    rec = run_disk(tmp_path, cow=False)
    assert rec["slots"][6:11] == [0x0001, 0, 0x0001, 0, 0]
    with open(rec["image"], "rb") as fh:
        image = fh.read()
    assert image[WRITE_LBA * SECTOR:(WRITE_LBA + 1) * SECTOR] == WRITTEN
    expected = bytearray(368640)
    program = program_bytes("disk")
    expected[:len(program)] = program
    expected[DATA_LBA * SECTOR:DATA_LBA * SECTOR + len(DATA)] = DATA
    expected[WRITE_LBA * SECTOR:(WRITE_LBA + 1) * SECTOR] = WRITTEN
    assert image == bytes(expected)           # nothing else was touched


# ---------------------------------------------------------------------------
# keyboard.asm: INT 16h, and ports 60h/61h with IRQ 1 masked
# ---------------------------------------------------------------------------
def run_keyboard(tmp_path):
    rec = {}
    with new_machine(program_image(tmp_path, "keyboard")) as m:
        boot(m, 1)
        assert run_until(m, lambda mm: mm.waiting_for_key(), 1.0)
        m.type_text("aB\r")
        assert run_to_phase(m, 2, TIMEOUT_S)
        m.type_text("x")
        assert run_to_phase(m, 3, TIMEOUT_S)
        m.press_keys([0x2A])                  # Left Shift down, held
        assert run_to_phase(m, 4, TIMEOUT_S)
        rec["flags_held"] = bytes(m.memory.read(0x417, 1))[0]
        m.type_text("c")
        assert run_to_phase(m, 5, TIMEOUT_S)
        m.press_keys([0xAA])                  # Left Shift up
        assert run_to_phase(m, 6, TIMEOUT_S)
        m.press_keys([0x10, 0x90])            # "q" down and up, IRQ 1 masked
        finish(m)
        rec["slots"] = slots(m, 19)
        rec["text"] = m.screen_text()
        rec["cycles"] = m.clock()
        rec["buffer_empty"] = word(m, 0x41A) == word(m, 0x41C)
        rec["imr"] = m.pic.imr
    return rec


@pytest.fixture(scope="module")
def keyboard(tmp_path_factory):
    return run_keyboard(tmp_path_factory.mktemp("keyboard"))


def test_keyboard_int16_read_and_peek(keyboard):
    s = keyboard["slots"]
    assert s[0] == 1                          # AH=01h on an empty buffer: ZF=1
    assert s[1:4] == [0x1E61, 0x3042, 0x1C0D]  # a, B (with Shift), Enter
    assert s[4:6] == [0x2D78, 0]              # AH=01h sees 'x', ZF=0
    assert s[6] == 0x2D78                     # ... without taking it
    assert s[7] == 0x2D78                     # AH=00h takes it
    assert s[8] == 1                          # and the buffer is empty again


def test_keyboard_shift_flags(keyboard):
    s = keyboard["slots"]
    assert keyboard["flags_held"] & 0x02
    assert s[9] == 0x02                       # AH=02h: Left Shift down
    assert s[10] == 0x2E43                    # 'c' typed with Shift held: 'C'
    assert s[11] == 0x00                      # released


def test_keyboard_ports_with_irq1_masked(keyboard):
    s = keyboard["slots"]
    assert s[12] & 0x02                       # IMR bit 1 set through port 21h
    assert s[12] == 0xBE                      # the BIOS's mask (timer, keyboard, diskette) + bit 1
    assert s[13] == 0x10                      # make code of "q" from port 60h
    assert s[14] == 0x90                      # then its break code, after the acknowledge
    assert s[15] == 0x00                      # port 60h reads 00h once acknowledged
    assert s[16] == 0x2D                      # SW1 while 61h bit 7 is set (documented choice)
    assert s[17] == 1                         # the BIOS never saw the key
    assert keyboard["buffer_empty"]
    assert not keyboard["imr"] & 0x02         # unmasked again


def test_keyboard_screen(keyboard):
    t = keyboard["text"]
    assert "KEYBOARD TEST" in t
    assert "aB" in t
    assert "C" in t
    assert "KEYS 1E61 3042 1C0D 2D78 2E43" in t
    assert "PORT60 0010 0090" in t
    assert "KBD DONE" in t


# ---------------------------------------------------------------------------
# timer.asm: INT 1Ah, the BIOS tick, the 8253 through its ports
# ---------------------------------------------------------------------------
TICK_RUN_S = 10
IRQ_RUN_S = 2


def run_timer(tmp_path):
    rec = {}
    with new_machine(program_image(tmp_path, "timer")) as m:
        boot(m, 1)
        c0, t0 = m.clock(), bda_ticks(m)
        wakes0 = slots(m, 10)[9]
        m.run_seconds(TICK_RUN_S)
        c1, t1 = m.clock(), bda_ticks(m)
        rec["tick_run"] = (c0, t0, c1, t1)
        rec["phase1"] = slots(m, 10)
        rec["phase1_wakes"] = rec["phase1"][9] - wakes0
        rec["rollover_flag"] = bytes(m.memory.read(0x470, 1))[0]
        m.type_text(" ")
        assert run_to_phase(m, 3, TIMEOUT_S)
        n0, b0 = slots(m, 13)[12], bda_ticks(m)
        c2 = m.clock()
        m.run_seconds(IRQ_RUN_S)
        rec["irq_run"] = (c2, n0, m.clock(), slots(m, 13)[12])
        rec["ticks_during_irq_run"] = bda_ticks(m) - b0
        m.type_text(" ")
        finish(m)
        rec["slots"] = slots(m, 23)
        rec["text"] = m.screen_text()
        rec["cycles"] = m.clock()
    return rec


@pytest.fixture(scope="module")
def timer(tmp_path_factory):
    return run_timer(tmp_path_factory.mktemp("timer"))


def test_timer_int1a_set_and_read(timer):
    s = timer["slots"]
    assert s[0:3] == [0x0018, 0x009C, 0]      # AH=01h then AH=00h: the count set, no midnight
    assert s[3:5] == [0x0018, 0x009C]         # 0040:006C holds the same


def test_timer_tick_rate(timer):
    c0, t0, c1, t1 = timer["tick_run"]
    assert c1 - c0 == TICK_RUN_S * CPU_HZ
    ticks = (t1 - t0) % TICKS_PER_DAY         # the count passed midnight
    assert t1 < t0
    expected = (c1 - c0) / CPU_HZ * 18.2065
    assert abs(ticks - expected) <= 1, (ticks, expected)


def test_timer_int1a_agrees_with_the_data_area(timer):
    s = timer["phase1"]
    _c0, _t0, _c1, t1 = timer["tick_run"]
    assert (s[5] << 16 | s[6]) == t1          # the last AH=00h is the count now
    assert s[7] == 0                          # never differed from 0040:006C
    assert s[8] == 1                          # AL != 0 exactly once: midnight passed
    assert timer["rollover_flag"] == 0        # ... and AH=00h cleared the flag
    ticks = (t1 - timer["tick_run"][1]) % TICKS_PER_DAY
    assert timer["phase1_wakes"] == ticks     # one wake (and one check) per tick


def test_timer_latch_counts_down(timer):
    s = timer["slots"]
    a, b = s[10], s[11]                       # BIOS mode 3: steps of 2
    assert a % 2 == 0 and b % 2 == 0
    assert 0 < a - b < 1000
    a, b = s[13], s[14]                       # mode 2, count 11932: steps of 1
    assert a < 11932 and b < 11932
    assert 0 < a - b < 500
    assert 1.5 < (s[10] - s[11]) / (s[13] - s[14]) < 2.5


def test_timer_reprogrammed_channel0_irq_rate(timer):
    c2, n0, c3, n1 = timer["irq_run"]
    expected = (c3 - c2) / CPU_HZ * (CPU_HZ / 4 / 11932)     # 99.998 Hz
    assert abs((n1 - n0) - expected) <= 1, (n1 - n0, expected)
    assert timer["ticks_during_irq_run"] == 0  # the BIOS handler was not called
    s = timer["slots"]
    assert s[21] == s[22]                      # nor at all while hooked
    assert s[12] >= n1


def test_timer_channel2_gate_and_output(timer):
    s = timer["slots"]
    toggles_per_tick = 2 * 65536 / 1000       # mode 3, divisor 1000
    assert abs(s[15] - toggles_per_tick) <= 2
    assert s[16] == 0                         # gate off: no toggles
    assert s[17] == 0x20                      # ... and mode 3 holds OUT high
    assert s[18] == 0                         # mode 0: OUT low after the mode is set
    assert s[19] == 0                         # gate off: the count does not run
    assert 0 < s[20] < 4096                   # gate on: OUT rises within 16384 cycles


def test_timer_screen(timer):
    t = timer["text"]
    assert any(row.startswith("TICKS ") and "MISMATCH 0000" in row for row in t)
    assert any(re.fullmatch(r"CH2 008[1-5] 0000 0[0-9A-F]{3}", row) for row in t)
    assert "TIMER DONE" in t


# ---------------------------------------------------------------------------
# determinism: the same program and inputs give the same machine
# ---------------------------------------------------------------------------
def test_determinism_video(video, tmp_path):
    again = run_video(tmp_path)
    assert again["slots"] == video["slots"]
    assert again["mode4_slots"] == video["mode4_slots"]
    assert again["cycles"] == video["cycles"]
    assert again["text"] == video["text"]
    assert sha(again["frame"]) == sha(video["frame"])


def test_determinism_disk(disk, tmp_path):
    again = run_disk(tmp_path)
    assert again["slots"] == disk["slots"]
    assert again["cycles"] == disk["cycles"]
    assert again["text"] == disk["text"]


def test_determinism_keyboard(keyboard, tmp_path):
    again = run_keyboard(tmp_path)
    assert again["slots"] == keyboard["slots"]
    assert again["cycles"] == keyboard["cycles"]


def test_determinism_timer(timer, tmp_path):
    again = run_timer(tmp_path)
    assert again["slots"] == timer["slots"]
    assert again["tick_run"] == timer["tick_run"]
    assert again["irq_run"] == timer["irq_run"]
    assert again["cycles"] == timer["cycles"]
