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


def find_images(setting):
    """(images, why there are none) for a PYPC_DOS_IMAGES value."""
    if not setting:
        return [], "set PYPC_DOS_IMAGES to a folder of DOS boot floppies"
    folder = Path(setting).expanduser()
    if not folder.is_dir():
        what = "not a folder" if folder.exists() else "no such folder"
        return [], f"PYPC_DOS_IMAGES={setting!r}: {what}"
    found = sorted(folder.glob("*.img"))
    if not found:
        return [], f"PYPC_DOS_IMAGES={setting!r}: no *.img files in that folder"
    return found, None


paths, SKIP_REASON = find_images(IMAGES)


@pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")
@pytest.mark.parametrize("image", paths or [None], ids=[p.name for p in paths] or ["none"])
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


def _boot_and_dir(image, cpu):
    with Machine(MachineConfig(floppy_a=str(image), cow=True, cpu=cpu)) as m:
        if m.cpu.translator is not None:
            from test_translator import EAGER_MACHINE
            for name, value in EAGER_MACHINE.items():
                setattr(m.cpu.translator, name, value)
        assert m.run_until_text("A:\\>", 120), "\n".join(m.screen_text())
        for _ in range(20):
            m.run_seconds(0.05)
        m.type_text("dir\r")
        m.run_seconds(5)
        return m.screen_text(), m.get_state(), m.cpu.translator


@pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")
@pytest.mark.parametrize("image", paths or [None], ids=[p.name for p in paths] or ["none"])
def test_the_block_translator_boots_to_the_same_machine(image):
    from test_translator import _same_state
    screen_a, state_a, _ = _boot_and_dir(image, "interpret")
    screen_b, state_b, tr = _boot_and_dir(image, "translate")
    assert screen_a == screen_b
    _same_state(state_a, state_b)
    assert tr.stats()["translated"] >= 1
    assert tr.stats()["translated_instructions"] > 0


def test_the_skip_says_why(tmp_path):
    """A missing folder, a file, an empty folder: each skip reason says which."""
    (tmp_path / "file.img").write_bytes(b"")
    (tmp_path / "empty").mkdir()
    assert find_images(None)[1].startswith("set PYPC_DOS_IMAGES")
    assert find_images(str(tmp_path / "nosuch"))[1].endswith("no such folder")
    assert find_images(str(tmp_path / "file.img"))[1].endswith("not a folder")
    assert "no *.img files" in find_images(str(tmp_path / "empty"))[1]
    assert find_images(str(tmp_path)) == ([tmp_path / "file.img"], None)
