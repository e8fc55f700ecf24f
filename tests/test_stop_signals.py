"""Stopping a run: a signal ends a headless run at once, whatever the guest
does, with exit status 128 + the signal (130 for Ctrl-C); ``--timeout``
always ends it.  The guest spins with interrupts off (``cli ; jmp $``); the
signal goes to the process with ``os.kill``.  (The live view's own signal
test is in ``test_live_terminal.py``.)

Wall times are generous ceilings that only keep a broken run from hanging
the suite; nothing asserts how fast anything is.
"""

import signal
import subprocess
import sys
import time

import pytest

from guest import make_floppy
from test_launcher import pypc_command, pypc_env

SPIN = bytes([0xFA, 0xEB, 0xFE])          # cli ; jmp $  (boot sector at 7C00h)
CEILING_S = 180                           # a broken run fails instead of hanging


def boot_image(tmp_path, name, code):
    """A 360 KiB floppy whose boot sector is ``code`` (and the 55AAh mark)."""
    return make_floppy(str(tmp_path / f"{name}.img"),
                       code + bytes(510 - len(code)) + b"\x55\xaa")


@pytest.fixture
def spin(tmp_path):
    return boot_image(tmp_path, "spin", SPIN)


def start_headless_then_signal(tmp_path, image, sig=signal.SIGINT, hang=False):
    """Run pypc headless on ``image`` (through cli.main, after the machine has
    run its first slice, so the signal lands in the run loop); send ``sig``;
    return the finished process.  ``hang``: every slice after the first
    blocks for ever in the host, as a core that never returns would."""
    script = (
        "import sys, time\n"
        "from pypc_core import cli\n"
        "from pypc_core.cli import run as launcher\n"
        "first = launcher.run_headless\n"
        "def run_headless(machine, args):\n"
        "    machine.run_for(1000)\n"
        "    if %r:\n"
        "        machine.route_runs(lambda target: time.sleep(10**6))\n"
        "    print('RUNNING', flush=True)\n"
        "    return first(machine, args)\n"
        "launcher.run_headless = run_headless\n"
        "sys.exit(cli.main(sys.argv[1:]))\n" % hang)
    proc = subprocess.Popen(
        [sys.executable, "-c", script, "run", "--no-rpc", "--no-viewers", "--headless", "--turbo", "--floppy",
         str(image), "--timeout", "100000"],
        cwd=tmp_path, env=pypc_env(), stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "RUNNING\n", proc.stderr.read()
        time.sleep(0.5)                 # well inside the run loop
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=CEILING_S)
    finally:
        proc.kill()
        proc.wait()
    return proc.returncode, out, err


def test_sigint_ends_a_headless_run_of_a_spinning_guest(tmp_path, spin):
    code, out, err = start_headless_then_signal(tmp_path, spin)
    assert code == 130, err
    assert err == "pypc: interrupted\n"


def test_sigterm_ends_a_headless_run_with_its_own_status(tmp_path, spin):
    code, out, err = start_headless_then_signal(tmp_path, spin, signal.SIGTERM)
    assert code == 128 + signal.SIGTERM, err
    assert "SIGTERM" in err


def test_sigint_ends_a_run_whose_slice_never_returns(tmp_path, spin):
    """The watchdog: even when the main thread never gets back from a run
    slice, SIGINT ends the process (after the grace second) with 130."""
    code, out, err = start_headless_then_signal(tmp_path, spin, hang=True)
    assert code == 130, err
    assert "did not stop within 1 s" in err


def test_timeout_ends_a_headless_run_of_a_spinning_guest(tmp_path, spin):
    proc = subprocess.run(pypc_command() + ["run", "--no-rpc", "--no-viewers", "--headless", "--turbo", "--floppy",
                                            str(spin), "--timeout", "5"],
                          cwd=tmp_path, env=pypc_env(), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=CEILING_S)
    assert proc.returncode == 0, proc.stderr
    assert "pypc XT BIOS" in proc.stdout




# the guest of issue 6 that once wedged the core: it reads PIT counter 0
# before the counter first wraps, then writes "OK" into the CGA text memory
#   mov ax, 0B800h / mov ds, ax / in al, 40h
#   mov word [0], 0F4Fh / mov word [2], 0F4Bh / jmp $
PIT_READER = bytes.fromhex("B800B8 8ED8 E440 C70600004F0F C70602004B0F EBFE")


def test_timeout_and_sigint_end_a_guest_reading_the_pit(tmp_path):
    image = boot_image(tmp_path, "pit", PIT_READER)
    proc = subprocess.run(pypc_command() + ["run", "--no-rpc", "--no-viewers", "--headless", "--turbo", "--floppy",
                                            str(image), "--timeout", "3"],
                          cwd=tmp_path, env=pypc_env(), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=CEILING_S)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].startswith("OK")
    code, out, err = start_headless_then_signal(tmp_path, image)
    assert (code, err) == (130, "pypc: interrupted\n")
