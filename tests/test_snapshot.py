"""Machine bundles: a round trip through a file and a fresh process is
byte-exact (registers, memory, frame and the whole state after N more
frames), with a key press pending, mid-REP, in an interrupt shadow and with
a UART transfer in flight; checkpoints; disk modes; atomic publication."""

import json
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

from pypc_core.cpu import state as S
from pypc_core.machine import Machine, MachineConfig
from pypc_core.snapshot import SnapshotError, open_bundle
from pypc_core.snapshot.replay import state_sha256

import snapshot_support as T

FRAMES = 20
HERE = os.path.dirname(os.path.abspath(__file__))


def plugin_available(name):
    import importlib.metadata as md
    return any(e.name == name for e in md.entry_points(group="pypc.devices"))


def test_the_committed_guest_matches_its_source(tmp_path):
    nasm = shutil.which("nasm")
    if nasm is None:
        pytest.skip("nasm is not installed (the committed .bin is used as it is)")
    out = tmp_path / "snapkeys.bin"
    subprocess.run([nasm, "-f", "bin", "-o", str(out),
                    os.path.join(HERE, "guest", "snapkeys.asm")], check=True)
    with open(T.GUEST, "rb") as fh:
        assert out.read_bytes() == fh.read()


def round_trip(m, tmp_path, plugins, frames=FRAMES, config=None):
    """Export ``m``, import the bundle in a fresh process (a machine with
    ``plugins`` and ``config``; disks to a new directory) and run ``frames``
    frames there; run ``m`` the same frames here; both fingerprints."""
    before = state_sha256(m)
    for attempt in range(3):
        path = str(tmp_path / f"machine{attempt}.zip")
        out = m.save(path, progress=None)
        assert state_sha256(m) == before            # exporting changes nothing
        child = subprocess.run(
            [sys.executable, os.path.join(HERE, "snapshot_support.py"), path, out["sha256"],
             str(frames), ",".join(plugins), str(tmp_path / f"disks{attempt}"),
             json.dumps(config or {})],
            capture_output=True, text=True, timeout=600, cwd=HERE)
        # the bundle is refused if a source file changed in between (the
        # contract's source hash): only a working tree being edited does that
        if child.returncode == 0 or "other emulator code" not in child.stderr:
            break
    assert child.returncode == 0, child.stderr[-3000:]
    os.replace(path, tmp_path / "machine.zip")
    theirs = json.loads(child.stdout.strip().splitlines()[-1])
    T.run_frames(m, frames)
    return T.fingerprint(m), theirs


def test_round_trip_with_a_key_press_pending(tmp_path):
    m = T.start_guest(T.make_machine())
    T.run_frames(m, 3)
    m.type_text("hi")
    m.run_for(2000)
    assert m.keyboard.typing_pending() or m.keyboard.pending()   # keys still on their way
    ours, theirs = round_trip(m, tmp_path, ["cga"])
    assert ours == theirs
    assert bytes(m.memory.mem[T.LOAD + 0x42:T.LOAD + 0x44]) == b"hi"    # the keys arrived
    m.close()


def test_round_trip_mid_rep_string(tmp_path):
    m = T.start_guest(T.make_machine())
    for _ in range(2000):
        m.run_for(997)
        if m.cpu.ctl[S.C_REP_RESUME]:
            break
    assert m.cpu.ctl[S.C_REP_RESUME] == 1 and m.cpu.r.cx not in (0, 0x8000)
    ours, theirs = round_trip(m, tmp_path, ["cga"])
    assert ours == theirs
    m.close()


def test_round_trip_in_an_interrupt_shadow(tmp_path):
    m = T.start_guest(T.make_machine())
    for _ in range(5):                     # mov ax,cs / mov ds / mov es / cli / mov ss,ax
        m.step()
    assert m.cpu.ctl[S.C_INHIBIT] == 1
    ours, theirs = round_trip(m, tmp_path, ["cga"])
    assert ours == theirs
    m.close()


@pytest.mark.skipif(not plugin_available("uart"), reason="no UART card installed")
def test_round_trip_with_a_uart_transfer_in_flight(tmp_path):
    m = T.start_guest(T.make_machine(("cga", "uart")))
    uart = m.devices["uart"]
    # 9600 8N1 through the ports (divisor 12), as a DOS program would
    for port, value in ((0x3FB, 0x80), (0x3F8, 12), (0x3F9, 0), (0x3FB, 0x03)):
        m.ports.write(port, value, 1)
    uart.write_input(b"serial bytes still on the wire")
    m.run_for(3000)
    pending = uart.rx_pending() if callable(uart.rx_pending) else uart.rx_pending
    assert pending > 0
    ours, theirs = round_trip(m, tmp_path, ["cga", "uart"])
    assert ours == theirs
    with zipfile.ZipFile(tmp_path / "machine.zip") as zf:
        manifest = json.loads(zf.read("manifest.json"))
    assert manifest["version"] == 3 and manifest["configuration"]["uarts"] == ["uart"]
    m.close()


@pytest.mark.skipif(not plugin_available("gameport"), reason="no game-port card installed")
def test_round_trip_with_game_port_one_shots_running(tmp_path):
    m = T.start_guest(T.make_machine(("cga", "gameport")))
    port = m.devices["gameport"]
    port.set_joystick(0, 0.5, -0.25, [True, False])
    port.set_joystick(1, 1.0, 0.0, [False, True])
    m.ports.write(0x201, 0xFF, 1)                      # fire the four one-shots
    m.run_for(200)
    now = m.clock()
    running = [e for e in port.get_state()["expiry"] if e > now]
    assert len(running) == 4                            # all four still timing
    ours, theirs = round_trip(m, tmp_path, ["cga", "gameport"])
    assert ours == theirs
    assert open_bundle(str(tmp_path / "machine.zip")).version == 4
    m.close()


@pytest.mark.skipif(not plugin_available("vga"), reason="no VGA card installed")
def test_round_trip_on_vga(tmp_path):
    m = T.start_guest(T.make_machine(("vga",)))
    m.type_text("vga")
    T.run_frames(m, 2)
    ours, theirs = round_trip(m, tmp_path, ["vga"], frames=10)
    assert ours == theirs
    m.close()


# -- in-process ---------------------------------------------------------------------

def test_bundles_are_deterministic_and_load_in_process(tmp_path):
    m = T.start_guest(T.make_machine())
    T.run_frames(m, 2)
    a = m.save(str(tmp_path / "a.zip"), progress=None)
    b = m.save(str(tmp_path / "b.zip"), progress=None)
    assert a["sha256"] == b["sha256"] and a["bytes"] == b["bytes"]
    expect = T.fingerprint(m)
    T.run_frames(m, 5)
    moved = state_sha256(m)
    m.load(a["path"], expected_sha256=a["sha256"], progress=None)
    assert T.fingerprint(m) == expect
    T.run_frames(m, 5)
    assert state_sha256(m) == moved
    m.close()


def test_checkpoint_restore_repeats_a_run(tmp_path):
    m = T.start_guest(T.make_machine())
    cp = m.checkpoint()
    m.type_text("xyz")
    T.run_frames(m, 10)
    after = T.fingerprint(m)
    for _ in range(2):                      # a checkpoint can be restored again
        m.restore(cp)
        assert m.clock() == cp.clock
        m.type_text("xyz")
        T.run_frames(m, 10)
        assert T.fingerprint(m) == after
    with pytest.raises(SnapshotError):
        m.restore({"not": "a checkpoint"})
    m.close()


def test_restore_keeps_breakpoints_and_import_can_clear_them(tmp_path):
    m = T.start_guest(T.make_machine())
    path = str(tmp_path / "bp.zip")
    m.save(path, progress=None)
    bp = m.breakpoints.add("exec", (0x1000, 0x117))      # inc byte [passes]
    cp = m.checkpoint()
    m.restore(cp)
    assert [b.id for b in m.breakpoints.list()] == [bp.id]
    stop = m.run_for(T.CPU_HZ)
    assert stop.kind == "breakpoint" and (m.cpu.r.cs, m.cpu.r.ip) == (0x1000, 0x117)
    m.load(path, progress=None)
    assert [b.id for b in m.breakpoints.list()] == [bp.id]       # preserved by default
    m.load(path, preserve_breakpoints=False, progress=None)
    assert m.breakpoints.list() == []
    assert m.run_for(T.CPU_HZ).kind == "budget"
    m.close()


def test_export_never_replaces_a_file_and_leaves_no_temporary(tmp_path):
    m = T.make_machine()
    target = tmp_path / "exists.zip"
    target.write_bytes(b"keep me")
    with pytest.raises(SnapshotError) as exc:
        m.save(str(target), progress=None)
    assert exc.value.check == "path_exists"
    assert target.read_bytes() == b"keep me"
    os.symlink(str(tmp_path / "nowhere"), str(tmp_path / "dangling.zip"))
    with pytest.raises(SnapshotError):
        m.save(str(tmp_path / "dangling.zip"), progress=None)
    with pytest.raises(SnapshotError):
        m.save(str(tmp_path / "no" / "such" / "dir.zip"), progress=None)
    with pytest.raises(SnapshotError):
        m.save(str(tmp_path / "x.zip"), disk_mode="sideways", progress=None)
    assert sorted(os.listdir(tmp_path)) == ["dangling.zip", "exists.zip"]
    m.close()


# -- disks ----------------------------------------------------------------------------

def hdd_image(path, seed, sectors=2040):          # 30 x 4 x 17
    import numpy as np
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 256, sectors * 512, dtype=np.uint8).tobytes()
    path.write_bytes(data)
    return data


@pytest.mark.parametrize("mode", ["cow", "rw"])
def test_embedded_disk_goes_to_a_new_disk_root(tmp_path, mode):
    img = tmp_path / "c.img"
    original = hdd_image(img, 1)
    m = T.make_machine(hdd=str(img), cow=(mode == "cow"))
    m.disks[0x80].write_sectors(5, b"\xAB" * 512)        # what a guest write does
    out = m.save(str(tmp_path / "d.zip"), disk_mode="embed", progress=None)
    seen = m.disks[0x80].read_sectors(0, 2040)
    other = tmp_path / "other.img"
    hdd_image(other, 2)
    m2 = T.make_machine(hdd=str(other), cow=(mode == "cow"))
    root = tmp_path / "restored"
    m2.load(out["path"], disk_root=str(root), expected_sha256=out["sha256"], progress=None)
    assert os.listdir(root) == ["disk0-C.img"]
    assert m2.disks[0x80].path == str(root / "disk0-C.img")
    assert m2.disks[0x80].read_sectors(0, 2040) == seen
    restored = (root / "disk0-C.img").read_bytes()
    if mode == "cow":           # the image as it was, the written sector in the overlay
        assert img.read_bytes() == original == restored
        assert m2.disks[0x80].overlay_sectors == [5]
    else:
        assert restored[:len(seen)] == seen
    assert other.read_bytes() != seen                     # the old image is untouched
    assert state_sha256(m2) == state_sha256(m)
    m2.close()
    m.close()


def test_referenced_disk_is_checked_and_copied(tmp_path):
    img = tmp_path / "c.img"
    hdd_image(img, 3)
    m = T.make_machine(hdd=str(img), cow=True)
    m.disks[0x80].write_sectors(7, b"\xCD" * 512)        # in the overlay
    out = m.save(str(tmp_path / "r.zip"), disk_mode="reference", progress=None)
    with zipfile.ZipFile(out["path"]) as zf:
        names = zf.namelist()
    assert "disks/0.overlay" in names and "disks/0.img" not in names
    seen = m.disks[0x80].read_sectors(0, 2040)
    m.close()                                               # release the image's lock
    moved = tmp_path / "moved.img"
    shutil.copy(img, moved)
    m2 = T.make_machine(hdd=str(moved), cow=True)
    before = state_sha256(m2)
    # a reference that is not the saved image is refused, nothing written
    tampered = tmp_path / "tampered.img"
    data = bytearray(img.read_bytes())
    data[100] ^= 1
    tampered.write_bytes(bytes(data))
    with pytest.raises(SnapshotError) as exc:
        m2.load(out["path"], disk_root=str(tmp_path / "r1"), references={"0": str(tampered)},
                progress=None)
    assert exc.value.check == "reference_sha256"
    assert not (tmp_path / "r1").exists() and state_sha256(m2) == before
    with pytest.raises(SnapshotError):
        m2.load(out["path"], disk_root=str(tmp_path / "r1"), references={"3": str(img)},
                progress=None)
    m2.load(out["path"], disk_root=str(tmp_path / "r2"), references={"0": str(moved)},
            progress=None)
    assert m2.disks[0x80].read_sectors(0, 2040) == seen
    assert (tmp_path / "r2" / "disk0-C.img").read_bytes() == img.read_bytes()
    assert m2.disks[0x80].overlay_sectors == [7]
    m2.close()


def test_reference_mode_refuses_in_memory_images_and_disk_root_must_be_new(tmp_path):
    from pypc_core.storage import DiskImage
    m = T.make_machine()
    m.disks[0x80] = DiskImage.from_bytes(bytes(1024 * 512), kind="hdd")
    with pytest.raises(SnapshotError) as exc:
        m.save(str(tmp_path / "x.zip"), disk_mode="reference", progress=None)
    assert exc.value.kind == "unsupported"
    del m.disks[0x80]
    out = m.save(str(tmp_path / "y.zip"), progress=None)
    (tmp_path / "existing").mkdir()
    with pytest.raises(SnapshotError) as exc:
        m.load(out["path"], disk_root=str(tmp_path / "existing"), progress=None)
    assert exc.value.check == "disk_root"
    m.close()


# -- progress ---------------------------------------------------------------------------

class _Terminal:
    """A stream that says it is a terminal (rich draws to it)."""

    def __init__(self):
        import io
        self.buf = io.StringIO()

    def isatty(self):
        return True

    def write(self, text):
        return self.buf.write(text)

    def flush(self):
        pass


def test_progress_bar_only_on_a_terminal_and_for_large_disks(tmp_path):
    import io
    from pypc_core.snapshot.progress import MIN_BYTES, TerminalProgress, terminal_progress
    assert terminal_progress(MIN_BYTES * 4, io.StringIO()) is None        # a pipe or file
    assert terminal_progress(MIN_BYTES - 1, _Terminal()) is None          # too small to show
    term = _Terminal()
    bar = terminal_progress(MIN_BYTES, term)
    assert isinstance(bar, TerminalProgress)
    img = tmp_path / "c.img"
    hdd_image(img, 4, sectors=17 * 4 * 40)
    m = T.make_machine(hdd=str(img), cow=True)
    out = m.save(str(tmp_path / "p.zip"), disk_mode="embed", progress=bar)
    m.load(out["path"], disk_root=str(tmp_path / "p"), progress=bar)
    assert "saving p.zip" in term.buf.getvalue() and "writing disks" in term.buf.getvalue()
    m.close()


def test_built_in_dos_machine_round_trip_and_reference_refuses_host_folders(tmp_path):
    from pypc_core.dos import DosConfig
    from pypc_core.machine import Machine, MachineConfig
    folder = tmp_path / "c"
    folder.mkdir()
    (folder / "A.TXT").write_bytes(b"hello\r\n")

    def machine():
        return Machine(MachineConfig(plugins=["cga"], dos=DosConfig(drives={"C": str(folder)})))
    m = machine()
    assert m.run_until_text("C:\\>", timeout_s=20)
    m.type_text("dir\r")
    m.run_for(20_000)                                  # DIR half typed
    out = m.save(str(tmp_path / "dos.zip"), progress=None)
    with pytest.raises(SnapshotError) as exc:
        m.save(str(tmp_path / "ref.zip"), disk_mode="reference", progress=None)
    assert exc.value.check == "host_mount"
    m2 = machine()
    m2.load(out["path"], expected_sha256=out["sha256"], progress=None)
    T.run_frames(m, 60)
    T.run_frames(m2, 60)
    assert T.fingerprint(m2) == T.fingerprint(m)
    assert m2.screen_contains("1 File(s)")
    m.close()
    m2.close()


def test_command_line_load_snapshot_brings_its_disks(tmp_path):
    img = tmp_path / "c.img"
    data = hdd_image(img, 9)
    snap = tmp_path / "s.zip"
    base = [sys.executable, "-m", "pypc_core.cli", "run", "--no-rpc", "--no-viewers", "--headless", "--turbo",
            "--plugins", "cga"]
    first = subprocess.run(base + ["--hdd", str(img), "--cow", "--timeout", "1",
                                   "--save-snapshot", str(snap)],
                           capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    again = subprocess.run(base + ["--cow", "--timeout", "0.5", "--load-snapshot", str(snap)],
                           capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    restored = tmp_path / "s.zip.disks" / "disk0-C.img"
    assert restored.read_bytes() == data == img.read_bytes()
    clash = subprocess.run(base + ["--timeout", "0.5", "--load-snapshot", str(snap)],
                           capture_output=True, text=True, timeout=600)
    assert clash.returncode == 2 and "already exists" in clash.stderr
    assert clash.stdout == ""


BOOT = bytes([0xB8, 0x4F, 0x0E, 0xCD, 0x10,      # mov ax, 0E4Fh / int 10h    'O'
              0xB0, 0x4B, 0xCD, 0x10,            # mov al, 'K'   / int 10h
              0xEB, 0xFE])                       # jmp $


def boot_floppy(path):
    img = bytearray(1_474_560)
    img[:len(BOOT)] = BOOT
    img[510:512] = b"\x55\xAA"
    path.write_bytes(bytes(img))


@pytest.mark.skipif(not plugin_available("fdc"), reason="no floppy controller card installed")
def test_round_trip_while_the_floppy_controller_reads_the_boot_sector(tmp_path):
    boot_floppy(tmp_path / "boot.img")
    boot_floppy(tmp_path / "other.img")
    plugins = ["cga", "fdc"]
    m = Machine(MachineConfig(plugins=plugins, floppy_a=str(tmp_path / "boot.img"), cow=True))
    for _ in range(2000):                     # into the boot, during a command's execution
        m.run_for(T.CPU_HZ // 1000)
        if m.clock() > T.CPU_HZ // 4 and m.devices["fdc"].get_state()["phase"] == "exec":
            break
    assert m.devices["fdc"].get_state()["phase"] == "exec"          # mid-command
    assert not m.screen_contains("OK")
    ours, theirs = round_trip(m, tmp_path, plugins, frames=40,
                              config={"floppy_a": str(tmp_path / "other.img"), "cow": True})
    assert ours == theirs
    assert m.screen_contains("OK")                                   # the boot went on
    m.close()


@pytest.mark.skipif(not plugin_available("fdc"), reason="no floppy controller card installed")
def test_floppy_boot_round_trips_at_every_stage_in_process(tmp_path):
    boot_floppy(tmp_path / "boot.img")
    boot_floppy(tmp_path / "other.img")
    m = T.make_machine(["cga", "fdc"], floppy_a=str(tmp_path / "boot.img"), cow=True)
    m2 = Machine(MachineConfig(plugins=["cga", "fdc"], floppy_a=str(tmp_path / "other.img"),
                               cow=True))
    for k in range(8):                        # 0.5 s of boot, every 1/16 s
        m.run_for(T.CPU_HZ // 16)
        out = m.save(str(tmp_path / f"b{k}.zip"), progress=None)
        m2.load(out["path"], disk_root=str(tmp_path / f"d{k}"), progress=None)
        cp = m.checkpoint()
        T.run_frames(m, 3)
        T.run_frames(m2, 3)
        assert T.fingerprint(m2) == T.fingerprint(m), k
        m.restore(cp)
    m.close()
    m2.close()


def test_host_directory_disks_are_refused_by_bundles_and_kept_by_checkpoints(tmp_path):
    hostdir = pytest.importorskip("pypc_core.storage.hostdir")
    folder = tmp_path / "share"
    folder.mkdir()
    (folder / "A.TXT").write_bytes(b"host file\r\n")
    m = T.make_machine()
    try:
        disk = hostdir.HostDirDisk(str(folder), mode="rw", kind="hdd")
    except TypeError:
        pytest.skip("HostDirDisk has another constructor")
    m.disks[0x80] = disk
    for mode in ("auto", "embed", "reference", "reference-files"):
        with pytest.raises(SnapshotError) as exc:
            m.save(str(tmp_path / f"{mode}.zip"), disk_mode=mode, progress=None)
        assert exc.value.check == "host_mount"
    assert not any(p.name.endswith(".zip") for p in tmp_path.iterdir())
    cp = m.checkpoint()
    before = disk.read_sectors(0, 4)
    disk.write_sectors(0, bytes(2048))
    m.restore(cp)
    assert disk.read_sectors(0, 4) == before
    del m.disks[0x80]
    disk.close()
    m.close()
