"""``pypc run`` from the outside: booting a guest written here, headless
scripting, screenshots, and every kind of bad input (one line on stderr
starting with ``pypc: error:``, exit status 2, no image written).

The guests are boot sectors assembled by hand below (source beside the bytes),
so no third-party disk image is needed.

The command runs as ``python -m pypc_core.cli`` with this source tree first on
``PYTHONPATH`` -- the same ``main()`` as the ``pypc`` console script, but
always the code under test even when the installed script points elsewhere.
"""

import fcntl
import hashlib
import os
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pypc_core import cli
from pypc_core.machine import CPU_HZ, Machine, MachineConfig
from pypc_core.storage import DiskImage

ROOT = Path(__file__).resolve().parents[1]
FLOPPY_360K = 368640
RUN_TIMEOUT = 180            # host seconds for one pypc process

# -- guests ---------------------------------------------------------------------

# Prints a line with INT 10h teletype, waits for a key (INT 16h AH=00h),
# echoes it, then halts with interrupts on.
#
#   7C00  FA           cli
#   7C01  31 C0        xor  ax, ax
#   7C03  8E D8        mov  ds, ax
#   7C05  8E D0        mov  ss, ax
#   7C07  BC 00 7C     mov  sp, 7C00h
#   7C0A  FB           sti
#   7C0B  FC           cld
#   7C0C  BE 2A 7C     mov  si, msg              ; msg = 7C2Ah
#   7C0F  AC    print: lodsb
#   7C10  08 C0        or   al, al
#   7C12  74 08        jz   key                  ; -> 7C1C
#   7C14  B4 0E        mov  ah, 0Eh              ; teletype output
#   7C16  31 DB        xor  bx, bx               ; page 0
#   7C18  CD 10        int  10h
#   7C1A  EB F3        jmp  print                ; -> 7C0F
#   7C1C  31 C0   key: xor  ax, ax               ; AH=00h: wait for a key
#   7C1E  CD 16        int  16h
#   7C20  B4 0E        mov  ah, 0Eh              ; echo it (AL = ASCII)
#   7C22  31 DB        xor  bx, bx
#   7C24  CD 10        int  10h
#   7C26  FB     halt: sti
#   7C27  F4           hlt
#   7C28  EB FC        jmp  halt                 ; jmp $-2
#   7C2A        msg:   db "PYPC BOOT OK", 0
BOOT_MESSAGE = "PYPC BOOT OK"
HELLO_BOOT = bytes.fromhex(
    "FA 31C0 8ED8 8ED0 BC007C FB FC BE2A7C"
    "AC 08C0 7408 B40E 31DB CD10 EBF3"
    "31C0 CD16 B40E 31DB CD10"
    "FB F4 EBFC") + BOOT_MESSAGE.encode("ascii") + b"\0"
assert HELLO_BOOT.index(BOOT_MESSAGE.encode()) == 0x2A

# Writes itself to sector 2 of the boot drive with INT 13h AH=03h and stores
# the result: AH at 0000:0500, CF at 0000:0501, AAh at 0000:0502 when done.
#
#   7C00  31 C0           xor  ax, ax
#   7C02  8E D8           mov  ds, ax
#   7C04  8E C0           mov  es, ax
#   7C06  B8 01 03        mov  ax, 0301h         ; AH=03h write, AL=1 sector
#   7C09  BB 00 7C        mov  bx, 7C00h         ; ES:BX = this boot sector
#   7C0C  B9 02 00        mov  cx, 0002h         ; cylinder 0, sector 2
#   7C0F  B6 00           mov  dh, 0             ; head 0; DL = boot drive
#   7C11  CD 13           int  13h
#   7C13  88 26 00 05     mov  [0500h], ah       ; status
#   7C17  B0 00           mov  al, 0             ; (MOV leaves CF alone)
#   7C19  73 02           jnc  store             ; -> 7C1D
#   7C1B  B0 01           mov  al, 1
#   7C1D  A2 01 05 store: mov  [0501h], al       ; carry
#   7C20  C6 06 02 05 AA  mov  byte [0502h], 0AAh ; done
#   7C25  FB        halt: sti
#   7C26  F4              hlt
#   7C27  EB FC           jmp  halt              ; jmp $-2
WRITE_BOOT = bytes.fromhex(
    "31C0 8ED8 8EC0 B80103 BB007C B90200 B600 CD13"
    "88260005 B000 7302 B001 A20105 C6060205AA"
    "FB F4 EBFC")
assert len(WRITE_BOOT) == 0x29

SECTOR2_FILL = 0xE5          # what the image holds in sector 2 before the guest writes


def floppy(path, code):
    """A 360 KiB floppy image with ``code`` as its boot sector."""
    image = bytearray([SECTOR2_FILL]) * FLOPPY_360K
    image[:512] = bytes(512)
    image[:len(code)] = code
    image[510:512] = b"\x55\xaa"
    path.write_bytes(bytes(image))
    return path


def boot_sector(path):
    return path.read_bytes()[:512]


def sha(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@pytest.fixture
def hello(tmp_path):
    return floppy(tmp_path / "hello.img", HELLO_BOOT)


# -- running pypc ----------------------------------------------------------------

def pypc_env():
    env = dict(os.environ)
    env.pop("PYPC_DEBUG", None)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def pypc_command():
    return [sys.executable, "-m", "pypc_core.cli"]


def no_rpc(argv):
    """Test runs serve no JSON-RPC: several pypc processes (and test runs)
    at once would all want 127.0.0.1:2301."""
    if argv[:1] == ["run"]:
        return ["run", "--no-rpc", "--no-viewers"] + argv[1:]
    if argv[:1] == ["screenshot"] and len(argv) > 1:
        return argv[:2] + ["--no-rpc", "--no-viewers"] + argv[2:]
    return argv


def pypc(*args, cwd, timeout=RUN_TIMEOUT, stdin=subprocess.DEVNULL):
    return subprocess.run(pypc_command() + no_rpc([str(a) for a in args]), cwd=cwd,
                          env=pypc_env(), stdin=stdin, capture_output=True,
                          text=True, timeout=timeout)


def assert_one_line_error(proc, *words):
    """Exit 2, nothing on stdout, one ``pypc: error:`` line naming ``words``."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    line = lines[0]
    assert line.startswith("pypc: error: "), line
    for word in words:
        assert word.lower() in line.lower(), (word, line)
    assert proc.stdout == "", proc.stdout          # the machine never ran
    return line


HEADLESS = ("run", "--headless", "--turbo")


# -- booting the guest -------------------------------------------------------------

def test_boots_the_floppy_and_prints_the_screen(tmp_path, hello):
    proc = pypc(*HEADLESS, "--floppy", hello, "--until-text", BOOT_MESSAGE,
                "--timeout", 20, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    lines = proc.stdout.splitlines()
    assert BOOT_MESSAGE in lines
    assert any(line.startswith("pypc XT BIOS") for line in lines)
    assert len(lines) <= 25


def test_type_is_echoed_by_the_guest(tmp_path, hello):
    proc = pypc(*HEADLESS, "--floppy", hello, "--type", "x",
                "--until-text", BOOT_MESSAGE + "x", "--timeout", 20, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert BOOT_MESSAGE + "x" in proc.stdout.splitlines()


def test_until_text_timeout_exits_1(tmp_path, hello):
    before = sha(hello)
    proc = pypc(*HEADLESS, "--floppy", hello, "--until-text", "NEVER",
                "--timeout", 2, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "NEVER" in proc.stderr and "2 emulated seconds" in proc.stderr
    assert BOOT_MESSAGE in proc.stdout          # the screen is printed anyway
    assert sha(hello) == before


def png_size(path):
    data = Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert (length, kind) == (13, b"IHDR")
    return struct.unpack(">II", data[16:24])


def test_screenshot_option_writes_a_png(tmp_path, hello):
    out = tmp_path / "out.png"
    proc = pypc(*HEADLESS, "--floppy", hello, "--until-text", BOOT_MESSAGE,
                "--timeout", 20, "--screenshot", out, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert png_size(out) == (640, 200)


def test_screenshot_command(tmp_path, hello):
    out = tmp_path / "shot.png"
    proc = pypc("screenshot", out, "--floppy", hello, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert png_size(out) == (640, 200)
    assert BOOT_MESSAGE in proc.stdout


def test_no_disk_shows_the_no_bootable_disk_screen(tmp_path):
    from pypc_core.firmware.bios import Bios
    proc = pypc(*HEADLESS, "--timeout", 3, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert Bios.NO_BOOT_TITLE + "." in proc.stdout.splitlines()
    assert "A: no disk" in proc.stdout and "--floppy IMAGE" in proc.stdout


def test_same_image_and_keys_give_the_same_screen(tmp_path, hello):
    runs = []
    for i in range(2):
        png = tmp_path / f"run{i}.png"
        proc = pypc(*HEADLESS, "--floppy", hello, "--type", "q", "--timeout", 2,
                    "--screenshot", png, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        runs.append((proc.stdout, png.read_bytes()))
    assert BOOT_MESSAGE + "q" in runs[0][0]
    assert runs[0] == runs[1]


# -- bad input: one line, exit 2, nothing written --------------------------------------

def test_missing_image(tmp_path):
    proc = pypc(*HEADLESS, "--floppy", tmp_path / "nosuch.img", cwd=tmp_path)
    assert_one_line_error(proc, "nosuch.img", "no such file")
    assert not (tmp_path / "nosuch.img").exists()


def test_image_of_unknown_size(tmp_path):
    img = tmp_path / "odd.img"
    img.write_bytes(b"\x90" * 1000)
    before = sha(img)
    proc = pypc(*HEADLESS, "--floppy", img, cwd=tmp_path)
    assert_one_line_error(proc, "odd.img", "unknown size", "1000")
    assert sha(img) == before


def test_floppy_size_that_is_whole_sectors_but_no_format(tmp_path, hello):
    img = tmp_path / "odd.img"
    img.write_bytes(bytes(100 * 512))
    before = (sha(img), sha(hello))
    proc = pypc(*HEADLESS, "--floppy", hello, "--floppy-b", img, cwd=tmp_path)
    assert_one_line_error(proc, "odd.img", "unknown size", "known floppy sizes")
    assert (sha(img), sha(hello)) == before


def test_directory_as_image(tmp_path):
    (tmp_path / "disk.img").mkdir()
    proc = pypc(*HEADLESS, "--hdd", tmp_path / "disk.img", cwd=tmp_path)
    assert_one_line_error(proc, "disk.img", "directory")


def test_one_image_for_two_drives(tmp_path, hello):
    before = sha(hello)
    proc = pypc(*HEADLESS, "--floppy", hello, "--floppy-b", hello, cwd=tmp_path)
    assert_one_line_error(proc, "hello.img", "A:", "B:")
    assert sha(hello) == before


def wait_until_locked(path, proc, timeout=120):
    """Poll until another process holds the exclusive lock on ``path``."""
    end = time.monotonic() + timeout
    with open(path, "rb") as fh:
        while time.monotonic() < end:
            assert proc.poll() is None, proc.stderr.read()
            try:
                fcntl.flock(fh, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return
            fcntl.flock(fh, fcntl.LOCK_UN)
            time.sleep(0.1)
    pytest.fail(f"{path} was never locked by the first pypc")


def test_image_in_use_by_another_instance(tmp_path, hello):
    before = sha(hello)
    # the first instance is paced to real time: it idles in the guest's HLT
    first = subprocess.Popen(
        pypc_command() + ["run", "--no-rpc", "--no-viewers", "--headless", "--speed", "1", "--floppy", str(hello),
                          "--timeout", "600"],
        cwd=tmp_path, env=pypc_env(), stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_until_locked(hello, first)
        proc = pypc(*HEADLESS, "--floppy", hello, "--timeout", 2, cwd=tmp_path)
        assert_one_line_error(proc, "hello.img", "in use")
        # a reader cannot share an image that someone writes either
        proc = pypc(*HEADLESS, "--floppy", hello, "--readonly", "--timeout", 2,
                    cwd=tmp_path)
        assert_one_line_error(proc, "hello.img", "in use")
        assert first.poll() is None
    finally:
        first.kill()
        first.wait(timeout=30)
        first.stderr.close()
    assert sha(hello) == before
    with DiskImage(hello, mode="rw"):        # the lock went with the process
        pass


def test_unknown_plugin_lists_the_available_ones(tmp_path, hello):
    before = sha(hello)
    proc = pypc(*HEADLESS, "--plugins", "cga,nosuch", "--floppy", hello, cwd=tmp_path)
    line = assert_one_line_error(proc, "'nosuch'", "available:", "cga")
    assert sha(hello) == before
    assert "Traceback" not in line


def test_bios_of_the_wrong_size(tmp_path, hello):
    rom = tmp_path / "bios.bin"
    rom.write_bytes(b"\xea" * 1000)
    before = (sha(hello), sha(rom))
    proc = pypc(*HEADLESS, "--bios", rom, "--floppy", hello, cwd=tmp_path)
    assert_one_line_error(proc, "bios.bin", "1000 bytes", "KiB")
    assert (sha(hello), sha(rom)) == before


def test_missing_bios(tmp_path, hello):
    before = sha(hello)
    proc = pypc(*HEADLESS, "--bios", tmp_path / "nosuch.bin", "--floppy", hello,
                cwd=tmp_path)
    assert_one_line_error(proc, "nosuch.bin", "BIOS", "no such file")
    assert sha(hello) == before


def option_rom(path, size=2048):
    data = bytearray(size)
    data[:3] = b"\x55\xaa" + bytes([size // 512])
    data[3] = 0xCB                                   # RETF
    data[-1] = (-sum(data)) & 0xFF                   # checksum
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("spec, words", [
    ("plain.bin@C800", ["plain.bin", "55AA"]),         # no signature
    ("rom.bin", ["FILE@SEGMENT"]),                    # no @SEGMENT
    ("rom.bin@C8G0", ["--option-rom", "C8G0", "hexadecimal"]),
    ("rom.bin@", ["FILE@SEGMENT"]),
    ("rom.bin@B800", ["rom.bin", "C000h-EFFFh"]),      # outside the option ROM area
    ("rom.bin@F000", ["rom.bin", "C000h-EFFFh"]),
    ("rom.bin@C801", ["rom.bin", "2 KiB boundary"]),
    ("nosuch.bin@C800", ["nosuch.bin", "option ROM", "no such file"]),
])
def test_bad_option_rom(tmp_path, hello, spec, words):
    option_rom(tmp_path / "rom.bin")
    (tmp_path / "plain.bin").write_bytes(bytes(2048))
    before = sha(hello)
    proc = pypc(*HEADLESS, "--floppy", hello, "--option-rom", spec, cwd=tmp_path)
    assert_one_line_error(proc, *words)
    assert sha(hello) == before


def test_two_option_roms_at_one_segment(tmp_path, hello):
    option_rom(tmp_path / "a.bin")
    option_rom(tmp_path / "b.bin")
    proc = pypc(*HEADLESS, "--floppy", hello, "--option-rom", "a.bin@C800",
                "--option-rom", "b.bin@C800", cwd=tmp_path)
    assert_one_line_error(proc, "a.bin", "b.bin")


@pytest.mark.parametrize("extra, words", [
    (["--hdd-geometry", "0,0,0"], ["--hdd-geometry", "0,0,0", "cylinders"]),
    (["--hdd-geometry", "615,4"], ["--hdd-geometry", "C,H,S"]),
    (["--hdd-geometry", "615,4,17"], ["--hdd-geometry", "--hdd"]),   # no --hdd
    (["--speed", "-1"], ["--speed", "-1"]),
    (["--speed", "fast"], ["--speed", "fast"]),
    (["--timeout", "0"], ["--timeout"]),
    (["--type", "caf\u00e9"], ["--type", "\u00e9"]),
    (["--readonly", "--cow"], ["--readonly", "--cow"]),
    # no video plugin: nothing could show the text asked for
    (["--plugins", "fdc", "--until-text", "OK"], ["--until-text", "video plugin"]),
    (["--screenshot", "nosuchdir/x.png"], ["--screenshot", "nosuchdir"]),
    (["--nosuch-option"], ["--nosuch-option"]),
])
def test_bad_options(tmp_path, hello, extra, words):
    before = sha(hello)
    proc = pypc(*HEADLESS, "--floppy", hello, *extra, cwd=tmp_path)
    assert_one_line_error(proc, *words)
    assert sha(hello) == before


def test_hdd_geometry_larger_than_the_image(tmp_path, hello):
    hdd = tmp_path / "hdd.img"
    hdd.write_bytes(bytes(10 * 17 * 4 * 512))
    before = sha(hdd)
    proc = pypc(*HEADLESS, "--floppy", hello, "--hdd", hdd, "--hdd-geometry", "615,4,17",
                cwd=tmp_path)
    assert_one_line_error(proc, "hdd.img", "615,4,17")
    assert sha(hdd) == before


def test_live_display_without_a_terminal(tmp_path, hello):
    before = sha(hello)
    proc = pypc("run", "--turbo", "--floppy", hello, "--timeout", 2, cwd=tmp_path)
    assert_one_line_error(proc, "terminal", "--headless")
    # also as the default subcommand, the way users start it
    proc = pypc("--floppy", hello, cwd=tmp_path)
    assert_one_line_error(proc, "terminal", "--headless")
    assert sha(hello) == before


# -- conflicting devices (a test plugin, installed only as a dist-info) ----------------

def write_dist(root, dist, entry_points, files):
    for path, text in files.items():
        (root / path).write_text(text)
    info = root / f"{dist}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    lines = ["[pypc.devices]"] + [f"{k} = {v}" for k, v in entry_points.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")


CLASH_PLUGINS = '''
from pypc_core import hookimpl
from pypc_core.device import Device, DeviceDeclaration


class Declared(Device):
    """Says up front that it wants the CGA's CRTC index port."""
    declaration = DeviceDeclaration(name="crtc-clash", ports=[0x3D4])


class Sneaky(Device):
    """Declares nothing, then claims 3D4h when it is attached: the board
    refuses a claim outside the declaration."""
    declaration = DeviceDeclaration(name="sneaky")

    def attach(self, board):
        board.claim_ports([0x3D4], read=lambda port: 0xFF,
                          write=lambda port, value: None)
'''

DECLARED = '''
from pypc_core import hookimpl
from pypc_test_clashes import Declared

@hookimpl
def pypc_device_declare():
    return Declared.declaration

@hookimpl
def pypc_device_create(machine):
    return Declared()
'''

SNEAKY = '''
from pypc_core import hookimpl
from pypc_test_clashes import Sneaky

@hookimpl
def pypc_device_create(machine):
    return Sneaky()
'''


@pytest.fixture
def clash_plugins(tmp_path, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    write_dist(site, "pypc_test_clashes",
               {"crtcclash": "pypc_test_clash_declared", "sneaky": "pypc_test_clash_sneaky"},
               {"pypc_test_clashes.py": CLASH_PLUGINS,
                "pypc_test_clash_declared.py": DECLARED,
                "pypc_test_clash_sneaky.py": SNEAKY})
    monkeypatch.syspath_prepend(str(site))
    before = set(sys.modules)
    yield site
    for name in set(sys.modules) - before:
        if name.startswith("pypc_test_clash"):
            del sys.modules[name]


@pytest.mark.parametrize("plugin, owner", [("crtcclash", "crtc-clash"),
                                           ("sneaky", "sneaky")])
def test_device_port_conflict_names_both(tmp_path, hello, clash_plugins, capsys,
                                         plugin, owner):
    before = sha(hello)
    status = cli.main(["run", "--no-rpc", "--no-viewers", "--headless", "--turbo", "--plugins", f"cga,{plugin}",
                       "--floppy", str(hello), "--timeout", "1"])
    captured = capsys.readouterr()
    assert status == 2, captured
    assert captured.out == ""
    line, = captured.err.splitlines()
    assert line.startswith("pypc: error: ")
    assert "03D4h" in line and owner in line
    if plugin == "sneaky":
        assert "not in its declaration" in line
    else:
        assert "cga" in line
    assert sha(hello) == before
    with DiskImage(hello, mode="rw"):     # the failed machine let go of its lock
        pass


def test_device_port_conflict_from_the_command_line(tmp_path, hello, clash_plugins):
    env = pypc_env()
    env["PYTHONPATH"] = os.pathsep.join([str(clash_plugins), env["PYTHONPATH"]])
    before = sha(hello)
    proc = subprocess.run(
        pypc_command() + ["run", "--no-rpc", "--no-viewers", "--headless", "--turbo", "--plugins", "cga,sneaky",
                          "--floppy", str(hello)],
        cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, capture_output=True,
        text=True, timeout=RUN_TIMEOUT)
    assert_one_line_error(proc, "03D4h", "sneaky", "not in its declaration")
    assert sha(hello) == before


# -- guest writes under --readonly and --cow (Machine API) ------------------------------

def run_write_guest(path, **config):
    """Boot WRITE_BOOT from ``path``; return (AH, CF, sector 2 as the guest sees it)."""
    with Machine(MachineConfig(floppy_a=str(path), **config)) as machine:
        for _ in range(100):
            if machine.memory.read_byte(0x502) == 0xAA:
                break
            machine.run_for(CPU_HZ // 10)
        else:
            pytest.fail("the write guest never finished: "
                        + " / ".join(r for r in machine.screen_text() if r.strip()))
        return (machine.memory.read_byte(0x500), machine.memory.read_byte(0x501),
                machine.disks[0x00].read_sectors(1, 1))


def test_guest_write_goes_to_a_rw_image(tmp_path):
    img = floppy(tmp_path / "rw.img", WRITE_BOOT)
    ah, cf, sector2 = run_write_guest(img)
    assert (ah, cf) == (0x00, 0)
    assert sector2 == boot_sector(img)
    assert img.read_bytes()[512:1024] == boot_sector(img)


def test_guest_write_to_a_readonly_image_is_write_protected(tmp_path):
    img = floppy(tmp_path / "ro.img", WRITE_BOOT)
    before = sha(img)
    ah, cf, sector2 = run_write_guest(img, readonly=True)
    assert (ah, cf) == (0x03, 1)                      # BIOS: write protected
    assert sector2 == bytes([SECTOR2_FILL]) * 512
    assert sha(img) == before


def test_guest_write_to_a_cow_image_stays_in_the_overlay(tmp_path):
    img = floppy(tmp_path / "cow.img", WRITE_BOOT)
    before = sha(img)
    ah, cf, sector2 = run_write_guest(img, cow=True)
    assert (ah, cf) == (0x00, 0)
    assert sector2 == boot_sector(img)                # the guest sees its write
    assert sha(img) == before                         # the image never does
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cow.img"]


def test_machine_releases_its_locks_when_construction_fails(tmp_path, hello):
    bad_bios = tmp_path / "bios.bin"
    bad_bios.write_bytes(bytes(1000))
    with pytest.raises(Exception, match="1000 bytes"):
        Machine(MachineConfig(floppy_a=str(hello), bios=str(bad_bios)))
    with DiskImage(hello, mode="rw"):
        pass


def test_type_text_is_split_after_each_enter():
    from pypc_core.cli.typist import type_chunks
    assert type_chunks("ver\recho a > b\rdir") == ["ver\r", "echo a > b\r", "dir"]
    assert type_chunks("x") == ["x"]
    assert type_chunks("") == []


def test_cow_dir_keeps_writes_in_a_side_file_across_runs(tmp_path):
    """--cow-dir: the guest's writes survive into the next run through
    DIR/IMAGE.cow; the image itself never changes."""
    from pypc_core.machine import Machine, MachineConfig
    img = floppy(tmp_path / "write.img", WRITE_BOOT)
    before = sha(img)
    cow_dir = tmp_path / "overlays"
    cow_dir.mkdir()
    with Machine(MachineConfig(floppy_a=str(img), cow=True, cow_dir=str(cow_dir))) as m:
        m.run_seconds(2)
        assert m.memory.read(0x500, 3) == b"\x00\x00\xAA"       # AH=0, CF=0, done
        written = m.disks[0].read_sectors(1, 1)
    assert sha(img) == before
    assert (cow_dir / "write.img.cow").exists()
    with Machine(MachineConfig(floppy_a=str(img), cow=True, cow_dir=str(cow_dir))) as m:
        assert m.disks[0].read_sectors(1, 1) == written             # seen again
    with Machine(MachineConfig(floppy_a=str(img), cow=True)) as m:
        assert m.disks[0].read_sectors(1, 1) != written             # not without it
    proc = pypc(*HEADLESS, "--floppy", img, "--cow-dir", tmp_path / "missing",
                "--timeout", "1", cwd=tmp_path)
    assert_one_line_error(proc, "copy-on-write directory")
    assert sha(img) == before


def test_live_view_draws_graphics_modes_with_half_blocks():
    import numpy as np
    from pypc_core.cli.live import render_graphics, render_rich
    from pypc_core.machine import Machine, MachineConfig

    rgb = np.zeros((200, 640, 3), np.uint8)
    rgb[:100] = (255, 0, 0)
    rgb[100:] = (0, 0, 255)
    text = render_graphics(rgb, 40, 10)
    lines = text.plain.split("\n")
    assert len(lines) == 10 and all(line == "\u2580" * 40 for line in lines)
    styles = {str(span.style) for span in text.spans}
    assert styles == {"#ff0000 on #ff0000", "#0000ff on #0000ff"}

    with Machine(MachineConfig()) as m:
        m.run_seconds(0.2)
        m.ports.write(0x3D8, 0x0A)               # 320x200 graphics, video on
        m.memory.write(0xB8000, b"\xff" * 0x2000)  # even lines: colour 3
        shown = render_rich(m, 80, 25)
        assert shown.plain.split("\n")[0] == "\u2580" * 80
        assert len(shown.plain.split("\n")) == 25
