"""The built-in DOS keeps a guest inside its --drive folder (issue 19).

Every mounted folder here holds the host entries a guest must neither see
nor reach: a dangling symlink (V), a symlink to a file outside (W), a
symlink to a folder outside (LDIR) and a FIFO.  They point into a *canary*
folder outside the mount, which must be byte-identical (names, contents,
modes, link targets) after every test.  The guest side runs NASM programs
(tests/guest/dos/confine.asm, mcbkill.asm) through the built-in DOS and its
COMMAND shell; the property test throws random INT 21h calls at a mapped
folder.  Where permissions matter the scenario runs again as an
unprivileged user (created with useradd when the tests run as root).
"""

import json
import os
import pwd
import shutil
import stat
import subprocess
import sys

import pytest

from guest import dos as progs

HERE = os.path.dirname(os.path.abspath(__file__))


# -- the canary -----------------------------------------------------------------------
def tree_image(root):
    """Everything observable of a folder tree: per relative path its type,
    mode, and contents (file bytes, link target)."""
    out = {}
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in sorted(dirs + files):
            full = os.path.join(folder, name)
            st = os.lstat(full)
            rel = os.path.relpath(full, root)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(full))
            elif stat.S_ISREG(st.st_mode):
                with open(full, "rb") as fh:
                    out[rel] = ("file", stat.S_IMODE(st.st_mode), fh.read())
            else:
                out[rel] = ("other", stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode))
    return out


def make_canary(base):
    canary = os.path.join(base, "canary")
    os.makedirs(os.path.join(canary, "folder"))
    with open(os.path.join(canary, "victim.txt"), "wb") as fh:
        fh.write(b"canary victim\n")
    with open(os.path.join(canary, "folder", "SECRET.TXT"), "wb") as fh:
        fh.write(b"canary secret\n")
    return canary


def make_mount(base, canary):
    """A --drive folder with the hostile entries pointing into ``canary``."""
    mount = os.path.join(base, "mount")
    os.mkdir(mount)
    with open(os.path.join(mount, "A.TXT"), "wb") as fh:
        fh.write(b"payload\r\n")
    with open(os.path.join(mount, "long name.txt"), "wb") as fh:
        fh.write(b"long\r\n")
    os.symlink(os.path.join(canary, "new.txt"), os.path.join(mount, "V"))       # dangling
    os.symlink(os.path.join(canary, "victim.txt"), os.path.join(mount, "W"))
    os.symlink(os.path.join(canary, "folder"), os.path.join(mount, "LDIR"))
    os.mkfifo(os.path.join(mount, "FIFO"))
    return mount


@pytest.fixture
def canary(tmp_path):
    path = make_canary(str(tmp_path))
    before = tree_image(path)
    yield path
    assert tree_image(path) == before, "the canary folder outside the mount changed"


@pytest.fixture
def mount(tmp_path, canary):
    return make_mount(str(tmp_path), canary)


def checks(text):
    return [line for line in text.splitlines() if line.startswith(("ok   ", "FAIL "))]


# -- the scenario: a program, then the shell running what it left in the keyboard ------
SHELL_LINES = ["COPY A.TXT W", "COPY A.TXT LDIR", "COPY A.TXT LDIR\\Z.TXT", "COPY W B.TXT",
               "TYPE W", "DEL W", "MD LDIR", "CD LDIR", "TYPE FIFO", "DIR"]


def run_scenario(mount):
    """Run CONFINE.COM from the COMMAND shell, let the shell run the line
    the program put in the keyboard buffer, then type SHELL_LINES and EXIT.
    Returns (console text, exit code, CONFINE's exit code, diagnostics)."""
    from pypc_core.dos import DosConfig
    from pypc_core.machine import CPU_HZ, Machine, MachineConfig
    progs.install(mount, "confine")
    m = Machine(MachineConfig(plugins=["cga"], dos=DosConfig(drives={"C": mount})))
    try:
        typed = iter(["CONFINE\r"] + [line + "\r" for line in SHELL_LINES] + ["EXIT\r"])
        end = m.clock() + 60 * CPU_HZ
        confine_code = None
        pending = next(typed)
        while not m.dos.exited and m.clock() < end:
            if m.waiting_for_key() and pending is not None:
                if confine_code is None and pending != "CONFINE\r":
                    confine_code = m.dos.shell.errorlevel
                m.type_text(pending)
                pending = next(typed, None)
            m.run_for(CPU_HZ // 50)
        text = bytes(m.dos.console_out).decode("cp437").replace("\r\n", "\n")
        notes = [r["message"] for r in m.diagnostics.records() if r["source"] == "dos"]
        assert m.dos.exited, text
        return text, m.dos.exit_code, confine_code, notes
    finally:
        m.close()


def run_typed(mount, lines):
    """The console text of the COMMAND shell on ``mount`` given ``lines``
    (one at each prompt), then EXIT."""
    from pypc_core.dos import DosConfig
    from pypc_core.machine import CPU_HZ, Machine, MachineConfig
    m = Machine(MachineConfig(plugins=["cga"], dos=DosConfig(drives={"C": mount})))
    try:
        typed = iter([line + "\r" for line in lines] + ["EXIT\r"])
        end = m.clock() + 30 * CPU_HZ
        while not m.dos.exited and m.clock() < end:
            if m.waiting_for_key():
                m.type_text(next(typed, ""))
            m.run_for(CPU_HZ // 50)
        return bytes(m.dos.console_out).decode("cp437").replace("\r\n", "\n")
    finally:
        m.close()


def check_scenario(text, code, confine_code, mount):
    bad = [line for line in checks(text) if line.startswith("FAIL")]
    assert bad == [], text
    assert len(checks(text)) == 54, text
    assert confine_code == 0
    assert code == 0
    # the shell ran the line the program left, and refused it
    assert "C:\\>COPY A.TXT V\nAccess denied\n        0 file(s) copied\n" in text, text
    assert "C:\\>COPY A.TXT W\nAccess denied\n" in text
    # a link to a folder is "Access denied", not "Is a directory" ending the run
    assert "C:\\>COPY A.TXT LDIR\nAccess denied\n" in text
    assert "C:\\>COPY A.TXT LDIR\\Z.TXT\nPath not found\n" in text
    assert "C:\\>COPY W B.TXT\nFile not found\n" in text
    assert "C:\\>TYPE W\nFile not found\n" in text
    assert "C:\\>DEL W\nFile not found\n" in text
    assert "C:\\>MD LDIR\nUnable to create directory\n" in text
    assert "C:\\>CD LDIR\nInvalid directory\n" in text
    assert "C:\\>TYPE FIFO\nFile not found\n" in text
    listing = text.split("C:\\>DIR\n", 1)[1]
    for hidden in ("V  ", "W  ", "LDIR", "FIFO"):
        assert f"\n{hidden}" not in listing, listing
    assert "\nA        TXT" in listing and "\nLONGNA~1 TXT" in listing
    # the mount has what it had, plus the program
    assert sorted(os.listdir(mount)) == ["A.TXT", "CONFINE.COM", "FIFO", "LDIR", "V", "W",
                                         "long name.txt"]
    assert not os.path.exists(os.path.join(mount, "B.TXT"))
    assert "Is a directory" not in text and "Traceback" not in text


def test_a_guest_and_its_shell_cannot_leave_the_folder(mount):
    text, code, confine_code, notes = run_scenario(mount)
    check_scenario(text, code, confine_code, mount)
    assert not [n for n in notes if "failed inside pypc" in n], notes


def test_the_sources_assemble_to_the_committed_bytes(tmp_path):
    nasm = progs.find_nasm()
    if nasm is None:
        pytest.skip("nasm is not installed")
    for name in ("confine", "mcbkill", "hold"):
        out = tmp_path / progs.PROGRAMS[name]
        assert progs.assemble(name, str(out), nasm) == progs.program_bytes(name)


def test_int_20h_after_the_program_damaged_its_mcb_is_a_diagnostic(tmp_path, canary):
    progs.install(tmp_path, "mcbkill")
    text, code, m = progs.run(tmp_path, "C:\\MCBKILL.COM", max_seconds=5)
    try:
        assert "damaging my MCB" in text
        assert m.dos.exited and code == 0
        notes = [r for r in m.diagnostics.records() if r["source"] == "dos"]
        assert any("memory control blocks destroyed" in r["message"] for r in notes), notes
    finally:
        m.close()


# -- the same as an unprivileged user ----------------------------------------------------
UNPRIVILEGED = "pypc-test"


def _unprivileged_user():
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(UNPRIVILEGED)
    except KeyError:
        pass
    if shutil.which("useradd") is None:
        return None
    done = subprocess.run(["useradd", "--system", "--no-create-home", "--shell",
                           "/usr/sbin/nologin", UNPRIVILEGED], capture_output=True)
    if done.returncode != 0:
        return None
    return pwd.getpwnam(UNPRIVILEGED)


def test_the_scenario_as_an_unprivileged_user():
    """Run as a user that may write in the mount but not in the canary (and
    not read a file of the mount made unreadable): the guest gets DOS errors,
    never a traceback, and the canary is unchanged."""
    user = _unprivileged_user()
    if user is None:
        pytest.skip("needs root (to create and become an unprivileged user)")
    runner = shutil.which("setpriv")
    if runner is None:
        pytest.skip("setpriv is not installed")
    import pathlib
    import tempfile
    base = pathlib.Path(tempfile.mkdtemp(prefix="pypc-unpriv-"))   # (pytest's is root-only)
    try:
        _as_unprivileged(user, runner, base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _as_unprivileged(user, runner, base):
    canary = make_canary(str(base))
    mount = make_mount(str(base), canary)
    with open(os.path.join(mount, "LOCKED.TXT"), "wb") as fh:
        fh.write(b"root only\r\n")
    os.chmod(os.path.join(mount, "LOCKED.TXT"), 0o600)
    before = tree_image(canary)
    os.chmod(base, 0o755)
    os.chown(mount, user.pw_uid, user.pw_gid)
    os.chown(os.path.join(mount, "A.TXT"), user.pw_uid, user.pw_gid)
    os.chmod(canary, 0o755)
    code = (
        "import json, sys\n"
        f"sys.path.insert(0, {HERE!r})\n"
        "import test_dos_confinement as T\n"
        f"text, code, cc, notes = T.run_scenario({mount!r})\n"
        f"locked = T.run_typed({mount!r}, ['TYPE LOCKED.TXT', 'COPY LOCKED.TXT L2.TXT'])\n"
        "print(json.dumps({'text': text, 'code': code, 'cc': cc, 'locked': locked}))\n")
    # the core's numba cache is root's: the user runs the same core uncompiled
    # (seconds for this scenario) rather than compiling it for half a minute
    env = dict(os.environ, HOME=str(base), NUMBA_DISABLE_JIT="1")
    done = subprocess.run([runner, f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}",
                           "--clear-groups", sys.executable, "-c", code],
                          capture_output=True, text=True, env=env, timeout=600, cwd=str(base))
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    listing = sorted(os.listdir(mount))
    listing.remove("LOCKED.TXT")
    os.unlink(os.path.join(mount, "LOCKED.TXT"))
    check_scenario(out["text"], out["code"], out["cc"], mount)
    locked = out["locked"]
    assert "C:\\>TYPE LOCKED.TXT\nAccess denied\n" in locked, locked
    assert "C:\\>COPY LOCKED.TXT L2.TXT\nAccess denied\n        0 file(s) copied\n" in locked
    assert "L2.TXT" not in os.listdir(mount)
    assert tree_image(canary) == before
    assert "Traceback" not in done.stderr


# -- random INT 21h calls -----------------------------------------------------------------
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

_NAMES = [b"A.TXT", b"V", b"W", b"LDIR", b"FIFO", b"LDIR\\SECRET.TXT", b"\\", b"C:", b".",
          b"..", b"..\\canary\\victim.txt", b"NEW.TXT", b"SUB", b"SUB\\X", b"fifo", b"w",
          b"LONGNA~1.TXT", b"\xff", b"\xb5.TXT", b"CON", b"NUL", b"*.*", b"????????.???",
          b"C:\\LDIR\\..\\W", b"/", b"C:..", b"\\\\", b"A.TXT\\X"]


@pytest.fixture(scope="module")
def fuzz_machine(tmp_path_factory):
    base = str(tmp_path_factory.mktemp("fuzz"))
    canary = make_canary(base)
    mount = make_mount(base, canary)
    progs.install(mount, "hold")                 # a program that waits for a key
    with open(os.path.join(mount, "DATA.TXT"), "wb") as fh:
        fh.write(b"data")
    from pypc_core.dos import DosConfig
    from pypc_core.machine import CPU_HZ, Machine, MachineConfig
    m = Machine(MachineConfig(plugins=["cga"],
                              dos=DosConfig(drives={"C": mount}, program="C:\\HOLD.COM")))
    end = m.clock() + 10 * CPU_HZ
    while not m.waiting_for_key() and m.clock() < end:
        m.run_for(CPU_HZ // 50)
    assert m.waiting_for_key()
    yield m, canary, tree_image(canary)
    m.close()


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(ah=st.sampled_from([0x29, 0x39, 0x3A, 0x3B, 0x3C, 0x3D, 0x3E, 0x3F, 0x40, 0x41, 0x42,
                           0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49, 0x4A, 0x4E, 0x4F, 0x56,
                           0x57, 0x5B, 0x1A, 0x36, 0x0E, 0x59, 0x67, 0x68, 0x58])
       | st.integers(0x0D, 0x6C),
       al=st.integers(0, 255), regs=st.lists(st.integers(0, 0xFFFF), min_size=6, max_size=6),
       name=st.sampled_from(_NAMES) | st.binary(max_size=20),
       name2=st.sampled_from(_NAMES), at_end=st.booleans(), buf=st.binary(max_size=64))
def test_random_int_21h_calls_never_raise_out_of_the_dos(fuzz_machine, ah, al, regs, name,
                                                         name2, at_end, buf):
    """A random INT 21h (random AH/AL, registers, buffers, pointers at the end
    of a segment) on the mapped folder: the DOS answers, nothing escapes it,
    the canary is untouched.  The machine's state is put back after each
    call (a call may end the program, start one or wait for a key)."""
    from pypc_core.cpu import state as S
    from pypc_core.cpu.registers import Registers
    from pypc_core.firmware.memio import linear
    m, canary, before = fuzz_machine
    dos = m.dos
    state = m.get_state()
    try:
        r = Registers(m.cpu.regs)
        seg = 0x5000
        off1 = 0xFFF0 if at_end else 0x0100
        off2 = 0xFFF8 if at_end else 0x0200
        mem = dos.mem
        mem.write(linear(seg, off1), name + b"\0")
        mem.write(linear(seg, off2), name2 + b"\0")
        mem.write(linear(seg, 0x0400), buf)
        r.ah, r.al = ah, al
        r.bx, r.cx = regs[0], regs[1] & 0x00FF
        r.dx, r.si, r.di = off1, off2 if at_end else regs[3], off2
        r.ds = r.es = seg
        if ah in (0x3F, 0x40):
            r.dx = 0x0400
        address = next(a for a, n in dos._traps.items() if n == "int21")
        dos.on_trap(address)                 # what the machine runs for INT 21h
        notes = [rec["message"] for rec in m.diagnostics.records()
                 if "failed inside pypc" in rec["message"]]
        assert notes == [], notes
    finally:
        m.set_state(state)
    assert tree_image(canary) == before


def _raise(*_args, **_kw):
    raise OSError(5, "injected fault")


def test_a_fault_inside_a_service_is_the_documented_error_and_a_diagnostic(fuzz_machine):
    """Whatever raises inside a DOS or BIOS service (a fault injected here
    into this machine's own objects) ends as CF=1 with the documented code
    and one diagnostics record, never as an exception out of the machine."""
    from pypc_core.cpu.registers import Registers
    from pypc_core.firmware.memio import linear
    m, canary, before = fuzz_machine
    state = m.get_state()
    dos = m.dos
    try:
        r = Registers(m.cpu.regs)
        mount = os.path.join(os.path.dirname(canary), "mount")
        with open(os.path.join(mount, "F.TXT"), "wb") as fh:
            fh.write(b"kept")
        dos.mem.write(linear(0x5000, 0x100), b"F.TXT\0")
        r.ah, r.al, r.ds, r.dx = 0x41, 0, 0x5000, 0x100
        dos.parse_path = _raise                       # this instance only
        dos.on_trap(next(a for a, n in dos._traps.items() if n == "int21"))
        assert r.cf and r.ax == 0x1F
        rec = m.diagnostics.records()[-1]
        assert rec["source"] == "dos" and rec["level"] == "error"
        assert "INT 21h function 41h failed inside pypc" in rec["message"]
        assert "injected fault" in rec["message"]
        del dos.parse_path
        r.ah, r.al, r.cf = 0x02, 0, False              # INT 13h AH=02h: read sectors
        m.bios._svc_int13 = _raise
        address = next(a for a, n in m.bios._traps.items() if n == "int13")
        assert m.bios.on_trap(address)
        assert r.cf and r.ah == 0x01
        rec = m.diagnostics.records()[-1]
        assert rec["source"] == "bios" and "int13 failed inside pypc" in rec["message"]
    finally:
        dos.__dict__.pop("parse_path", None)
        m.bios.__dict__.pop("_svc_int13", None)
        m.set_state(state)
    assert open(os.path.join(mount, "F.TXT"), "rb").read() == b"kept"    # not deleted


def test_a_program_reached_through_a_symlink_is_a_command_line_error(mount):
    progs.install(mount, "mcbkill")
    os.symlink("MCBKILL.COM", os.path.join(mount, "LINK.COM"))      # inside, still a link
    for program in (os.path.join(mount, "LINK.COM"), "C:\\LINK.COM"):
        done = subprocess.run([sys.executable, "-m", "pypc_core.cli", "run", "--no-rpc",
                               "--no-viewers", "--headless", "--drive", f"C={mount}",
                               program], capture_output=True, text=True, timeout=120)
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith("pypc: error:"), done.stderr
        assert "Traceback" not in done.stderr


def test_copy_onto_itself_through_another_drive_keeps_the_file(tmp_path):
    """C: and D: mount one folder: COPY C:A.TXT D:A.TXT must not truncate it."""
    from pypc_core.dos import DosConfig
    from pypc_core.machine import CPU_HZ, Machine, MachineConfig
    (tmp_path / "A.TXT").write_bytes(b"payload\r\n")
    m = Machine(MachineConfig(plugins=["cga"], dos=DosConfig(
        drives={"C": str(tmp_path), "D": str(tmp_path)})))
    try:
        typed = iter(["COPY C:A.TXT D:A.TXT\r", "EXIT\r"])
        end = m.clock() + 20 * CPU_HZ
        while not m.dos.exited and m.clock() < end:
            if m.waiting_for_key():
                m.type_text(next(typed, ""))
            m.run_for(CPU_HZ // 50)
        text = bytes(m.dos.console_out).decode("cp437").replace("\r\n", "\n")
    finally:
        m.close()
    assert "File cannot be copied onto itself\n        0 file(s) copied\n" in text, text
    assert (tmp_path / "A.TXT").read_bytes() == b"payload\r\n"
