"""``--type`` reaches a guest that drives the keyboard itself.

``tests/guest/ownkbd.asm`` points INT 09h at its own IRQ 1 handler, which
reads port 60h and acknowledges through port 61h bit 7; it never calls
INT 16h, so the built-in BIOS never sees it wait for a key (as with ELKS).
It shows every scan code it reads as hex on the screen.
"""

import os
import subprocess

import pytest

from guest import assemble, bin_path, find_nasm, make_floppy, program_bytes
from test_launcher import pypc_command, pypc_env

from pypc_core.chipset.keyboard import TYPE_INTERVAL_CYCLES, XtKeyboard
from pypc_core.cli.typist import guest_drives_keyboard
from pypc_core.machine import Machine, MachineConfig

CEILING_S = 180


@pytest.fixture
def ownkbd(tmp_path):
    return make_floppy(str(tmp_path / "ownkbd.img"), program_bytes("ownkbd"))


def test_type_reaches_a_guest_with_its_own_keyboard_driver(tmp_path, ownkbd):
    # two lines: the second is typed once the screen is still again
    proc = subprocess.run(
        pypc_command() + ["run", "--no-rpc", "--no-viewers", "--headless", "--turbo", "--floppy", ownkbd,
                          "--type", r"ab\rc", "--until-text", "1E 9E 30 B0 1C 9C 2E AE",
                          "--timeout", "30"],
        cwd=tmp_path, env=pypc_env(), stdin=subprocess.DEVNULL, capture_output=True,
        text=True, timeout=CEILING_S)
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    rows = proc.stdout.splitlines()
    assert rows[0] == "OWN KEYBOARD DRIVER"
    assert rows[1] == "1E 9E 30 B0 1C 9C 2E AE"        # each byte once, in order


def test_the_guest_takes_over_int_09h(ownkbd, tmp_path):
    from guest import program_image
    with Machine(MachineConfig(floppy_a=ownkbd)) as m:
        assert m.run_until_text("OWN KEYBOARD DRIVER", 20), m.screen_text()
        assert guest_drives_keyboard(m)
    keyboard_guest = program_image(tmp_path, "keyboard")     # INT 16h through the BIOS
    with Machine(MachineConfig(floppy_a=keyboard_guest)) as m:
        assert m.run_until_text("KEYBOARD TEST", 20), m.screen_text()
        assert not guest_drives_keyboard(m)


def test_typist_hands_a_byte_only_after_the_previous_was_acknowledged():
    now = [0]
    kb = XtKeyboard(clock=lambda: now[0])
    kb.type_scancodes([0x1E, 0x9E, 0x30])

    def run_to(cycle):
        while kb.next_event() is not None and kb.next_event() <= cycle:
            now[0] = max(now[0], kb.next_event())
            kb.advance(now[0])
        now[0] = cycle
        kb.advance(cycle)

    run_to(10 * TYPE_INTERVAL_CYCLES)          # long past three typing intervals
    assert kb.full and kb.read_data() == 0x1E
    assert kb.pending() == 0 and kb.typing_pending() == 2   # nothing piles up
    kb.set_lines(clock_high=True, clear=True)              # the guest acknowledges
    kb.set_lines(clock_high=True, clear=False)
    run_to(now[0] + TYPE_INTERVAL_CYCLES)
    assert kb.full and kb.read_data() == 0x9E and kb.typing_pending() == 1
    assert kb.overflow_count == 0


@pytest.mark.skipif(find_nasm() is None, reason="nasm is not installed")
def test_ownkbd_bin_is_its_source_assembled(tmp_path):
    out = os.path.join(str(tmp_path), "ownkbd.bin")
    assert assemble("ownkbd", out) == program_bytes("ownkbd")
    assert os.path.getsize(bin_path("ownkbd")) == 512
