"""Launching with cards: --plugins / --video / --game-port, the default
cards, and the BIOS equipment word following the cards present."""

import subprocess
import sys

import pytest

from pypc_core.cli import launch_plugins
from pypc_core.machine import Machine, MachineConfig
from pypc_core.plugins import PluginManager, UnknownPluginError


@pytest.fixture(scope="module")
def pm():
    return PluginManager()


def test_video_shorthand_replaces_the_video_card(pm):
    assert launch_plugins(pm, "cga,fdc,uart") == "cga,fdc,uart"
    assert launch_plugins(pm, "cga,fdc,uart", video="vga") == "vga,fdc,uart"
    assert launch_plugins(pm, "fdc,uart", video="cga") == "cga,fdc,uart"
    assert launch_plugins(pm, "cga", game_port=True) == "cga,gameport"
    assert launch_plugins(pm, "cga,gameport", game_port=True) == "cga,gameport"
    assert launch_plugins(pm, "vga,gameport") == "vga,gameport"     # exactly as named


def test_unknown_video_card_is_the_usual_unknown_plugin_error(pm):
    with pytest.raises(UnknownPluginError, match="unknown device plugin 'ega'"):
        PluginManager().select(launch_plugins(pm, "cga", video="ega"))


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "pypc_core.cli", *args],
                          capture_output=True, text=True, timeout=120)


def test_two_video_cards_are_one_clear_error():
    proc = run_cli("run", "--no-rpc", "--no-viewers", "--headless", "--turbo", "--timeout", "1", "--plugins", "cga,vga")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == ("pypc: error: two video cards: cga and vga; a machine "
                                   "has one display (choose one, e.g. --video cga)")


def test_default_cards_and_the_equipment_word():
    config = MachineConfig()
    assert config.plugins == ["cga", "fdc", "uart"]
    with Machine(MachineConfig(plugins=["cga", "uart"])) as m:
        m.run_seconds(0.3)
        word = m.memory.read_word(0x410)
        assert (word >> 9) & 7 == 1 and not word & 0x1000      # one COM port, no game
        assert (word >> 4) & 3 == 2                            # CGA 80x25
        assert m.memory.read_word(0x400) == 0x3F8
    with Machine(MachineConfig(plugins=["cga", "gameport"])) as m:
        m.run_seconds(0.3)
        word = m.memory.read_word(0x410)
        assert (word >> 9) & 7 == 0 and word & 0x1000
        assert m.memory.read_word(0x400) == 0
    with Machine(MachineConfig(plugins=["vga", "uart", "uart2", "gameport"])) as m:
        m.run_seconds(0.3)
        word = m.memory.read_word(0x410)
        assert (word >> 9) & 7 == 2 and word & 0x1000 and (word >> 4) & 3 == 0
        assert m.ppi.sw1 >> 4 & 3 == 0                         # the switches agree
