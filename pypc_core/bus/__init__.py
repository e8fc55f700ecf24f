"""The system bus: 1 MiB physical memory map and the 64 Ki I/O port map."""

from .memory import MemoryMap, MemoryMapError
from .ports import PortMap, PortConflictError, PORT_UNCLAIMED, PORT_PYTHON

__all__ = [
    "MemoryMap", "MemoryMapError", "PortMap", "PortConflictError",
    "PORT_UNCLAIMED", "PORT_PYTHON",
]
