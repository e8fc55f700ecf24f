"""Third-party guests that once failed, when you have their images (they are
never committed):

    PYPC_TURBO_XT_BIOS=pcxtbios.bin PYPC_TURBO_XT_FLOPPY=freedos360.img \\
        pytest tests/test_guests_local.py
    PYPC_ELKS_IMAGE=fd1440.img pytest tests/test_guests_local.py

* the Super PC/Turbo XT BIOS 3.1 (the 8 KiB ROM) boots a DOS floppy through
  the diskette controller to its ``A:\\>`` prompt (it seeks after a
  recalibrate it never senses, and waits for the seek's interrupt);
* ELKS (a 1.44M boot floppy) logs in with ``--type-after 'login:' --type
  'root\\rls\\r'`` and runs the second line too.

Every image is used copy-on-write and checked unchanged afterwards.  Without
the variables these tests are skipped, saying which variable is missing."""

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pypc_core.machine import Machine, MachineConfig


def image(variable):
    """(path, why not) for an image named by ``variable``."""
    value = os.environ.get(variable)
    if not value:
        return None, f"set {variable} to the image file"
    path = Path(value).expanduser()
    if not path.is_file():
        return None, f"{variable}={value!r}: no such file"
    return path, None


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


TURBO_BIOS, WHY_BIOS = image("PYPC_TURBO_XT_BIOS")
TURBO_FLOPPY, WHY_FLOPPY = image("PYPC_TURBO_XT_FLOPPY")
ELKS, WHY_ELKS = image("PYPC_ELKS_IMAGE")


@pytest.mark.skipif(TURBO_BIOS is None or TURBO_FLOPPY is None,
                    reason=WHY_BIOS or WHY_FLOPPY or "")
def test_turbo_xt_bios_boots_dos_from_the_floppy():
    before = digest(TURBO_FLOPPY), digest(TURBO_BIOS)
    with Machine(MachineConfig(bios=str(TURBO_BIOS), floppy_a=str(TURBO_FLOPPY),
                               cow=True)) as m:
        # its POST counts the RAM slowly: about 15 emulated seconds for 640K
        ok = m.run_until_text("A:\\>", 120)
        screen = "\n".join(m.screen_text())
        assert ok, screen
        assert "Insert BOOT disk" not in screen
    assert (digest(TURBO_FLOPPY), digest(TURBO_BIOS)) == before


@pytest.mark.skipif(ELKS is None, reason=WHY_ELKS or "")
def test_elks_logs_in_and_types_every_line():
    before = digest(ELKS)
    out = subprocess.run(
        [sys.executable, "-m", "pypc_core.cli", "run", "--headless", "--turbo", "--no-rpc",
         "--no-viewers", "--floppy", str(ELKS), "--cow", "--timeout", "300",
         # the output "pypc-ok" is not the typed line (the shell removes the quotes)
         "--type-after", "login:", "--type", 'root\\recho py""pc-ok\\r',
         "--until-text", "pypc-ok"],
        capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert digest(ELKS) == before
