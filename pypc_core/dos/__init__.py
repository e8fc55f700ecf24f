"""The built-in DOS: run a .COM or .EXE from a host folder without a disk image.

``Dos(machine, DosConfig(drives={"C": folder}, program="C:\\\\PROG.EXE"))``
is built by the Machine when ``MachineConfig.dos`` is set; see
``kernel.py`` for the memory layout and the services, ``hostfs.py`` for
how a host folder becomes a drive and ``shell.py`` for the COMMAND shell.
The package is a layer below the machine; starting a program stopped at its
first instruction builds a machine, so that is ``pypc_core.dos_session``,
above it.
"""

from .errors import DosError, LoadError
from .common import DosConfig
from .kernel import Dos

__all__ = ["Dos", "DosConfig", "DosError", "LoadError"]
