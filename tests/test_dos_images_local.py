"""Real DOS boot floppies, when you have them (they are never committed).

    PYPC_DOS_IMAGES=/path/to/images pytest tests/test_dos_images_local.py

Every *.img there is booted with the built-in BIOS (copy-on-write, so the
images are never touched) to its A:\\> prompt, and DIR is typed on the
keyboard.  Without the variable these tests are skipped.
"""

import hashlib
import os
from pathlib import Path

import pytest

from pypc_core.machine import Machine, MachineConfig

IMAGES = os.environ.get("PYPC_DOS_IMAGES")
paths = sorted(Path(IMAGES).glob("*.img")) if IMAGES else []


@pytest.mark.skipif(not IMAGES, reason="set PYPC_DOS_IMAGES to a folder of DOS boot floppies")
@pytest.mark.parametrize("image", paths, ids=[p.name for p in paths])
def test_boot_to_prompt_and_dir(image):
    before = hashlib.sha256(image.read_bytes()).hexdigest()
    with Machine(MachineConfig(floppy_a=str(image), cow=True)) as m:
        assert m.run_until_text("A:\\>", 120), "\n".join(m.screen_text())
        for _ in range(20):                      # let the shell settle in its key wait
            m.run_seconds(0.05)
        m.type_text("dir\r")
        assert m.run_until_text("bytes free", 30), "\n".join(m.screen_text())
        # a file written through DOS and INT 13h (into the copy-on-write overlay)
        for _ in range(20):
            m.run_seconds(0.05)
        m.type_text("echo hello pypc > pypc.txt\r")
        m.run_seconds(3)
        m.type_text("type pypc.txt\r")
        m.run_seconds(3)
        rows = [r.rstrip() for r in m.screen_text()]
        assert "hello pypc" in rows, "\n".join(rows)
    assert hashlib.sha256(image.read_bytes()).hexdigest() == before
