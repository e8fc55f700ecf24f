"""An image file its owner marked read-only (no owner write bit, e.g. mode
0444) is never written, even by root and without --readonly: pypc opens it
as --readonly and says so on stderr (one ``pypc: note:`` line)."""

import hashlib
import os
import stat

import pytest

from test_launcher import WRITE_BOOT, floppy, pypc, run_write_guest

from pypc_core.storage import DiskImage
from pypc_core.storage.image import DiskWriteProtected


def sha(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


@pytest.fixture
def ro_image(tmp_path):
    img = floppy(tmp_path / "ro.img", WRITE_BOOT)
    os.chmod(img, 0o444)
    yield img
    os.chmod(img, 0o644)


def test_a_0444_image_opens_read_only_even_for_root(ro_image):
    before = sha(ro_image)
    with DiskImage(ro_image, mode="rw") as disk:
        assert disk.mode == "readonly" and disk.readonly
        assert "0444" in disk.readonly_reason and "--readonly" in disk.readonly_reason
        with pytest.raises(DiskWriteProtected):
            disk.write_sectors(1, bytes(512))
    assert sha(ro_image) == before
    assert stat.S_IMODE(os.stat(ro_image).st_mode) == 0o444     # untouched, mode too


def test_a_writable_image_stays_read_write(tmp_path):
    img = floppy(tmp_path / "rw.img", WRITE_BOOT)
    with DiskImage(img, mode="rw") as disk:
        assert disk.mode == "rw" and disk.readonly_reason is None


def test_the_guest_sees_write_protect_and_the_image_is_unchanged(ro_image):
    before = sha(ro_image)
    ah, cf, sector2 = run_write_guest(ro_image)       # no readonly=True asked
    assert (ah, cf) == (0x03, 1)                       # BIOS: write protected
    assert sha(ro_image) == before


def test_pypc_run_says_it_uses_the_image_read_only(tmp_path, ro_image):
    before = sha(ro_image)
    proc = pypc("run", "--headless", "--turbo", "--floppy", ro_image, "--timeout", "2",
                cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    line, = proc.stderr.splitlines()
    assert line.startswith("pypc: note: ") and "ro.img" in line
    assert "read-only" in line and "0444" in line
    assert sha(ro_image) == before
