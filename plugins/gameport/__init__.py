"""pypc device plugin: the IBM game control adapter (port 201h).

Found through the ``pypc.devices`` entry point ``gameport``; ``pypc
--game-port`` is the contract's spelling of adding it.  Its declaration
carries the ``game-port`` capability, so the BIOS equipment word shows a
game adapter.  The device is ``pypc_plugins.gameport.gameport.GamePort``;
``set_joystick`` / ``joysticks`` are what the ``input.joystick`` RPC methods
use.
"""

from pypc_core import hookimpl

from .gameport import GamePort, JoystickError, axis_cycles

__all__ = ["GamePort", "JoystickError", "axis_cycles", "pypc_device_declare",
           "pypc_device_create"]


@hookimpl
def pypc_device_declare():
    """Port 201h, capability game-port."""
    return GamePort.declaration


@hookimpl
def pypc_device_create():
    """Two centred sticks, buttons up."""
    return GamePort()
