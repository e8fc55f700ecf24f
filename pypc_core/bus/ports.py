"""The I/O port map: which device answers each of the 65,536 ports.

Devices claim ports with read/write handlers.  ``port_kind`` (an
``np.uint8[65536]`` handed to the jitted core) tells the core whether a port
is unclaimed (handled inside the JIT: reads 0xFF, writes vanish) or needs an
exit to Python.  Two devices claiming one port is a start-up error naming both.
"""

import numpy as np

PORT_UNCLAIMED = 0
PORT_PYTHON = 1


class PortConflictError(ValueError):
    """Two devices claimed the same I/O port."""


class PortMap:
    def __init__(self):
        self.port_kind = np.zeros(65536, dtype=np.uint8)
        self._owner = {}
        self._read = {}
        self._write = {}

    def claim(self, owner, ports, read=None, write=None):
        """Claim ``ports`` (an iterable of ints or a range) for ``owner``.

        ``read(port) -> int`` and ``write(port, value)`` handle single bytes;
        the bus splits word accesses into two byte accesses (as the 8088's
        8-bit bus does).
        """
        ports = list(ports)
        for port in ports:
            if not 0 <= port <= 0xFFFF:
                raise PortConflictError(f"{owner}: port {port!r} is outside 0000h-FFFFh")
            other = self._owner.get(port)
            if other is not None:
                raise PortConflictError(
                    f"I/O port {port:04X}h claimed by both {other} and {owner}")
        for port in ports:
            self._owner[port] = owner
            self._read[port] = read
            self._write[port] = write
            self.port_kind[port] = PORT_PYTHON

    def owner(self, port):
        return self._owner.get(port & 0xFFFF)

    def claims(self):
        """{owner: sorted list of ports}."""
        out = {}
        for port, owner in self._owner.items():
            out.setdefault(owner, []).append(port)
        return {k: sorted(v) for k, v in out.items()}

    def read_byte(self, port):
        port &= 0xFFFF
        handler = self._read.get(port)
        if handler is None:
            return 0xFF
        return int(handler(port)) & 0xFF

    def write_byte(self, port, value):
        port &= 0xFFFF
        handler = self._write.get(port)
        if handler is not None:
            handler(port, value & 0xFF)
            return True
        return port in self._owner

    def read(self, port, width=1):
        if width == 1:
            return self.read_byte(port)
        return self.read_byte(port) | (self.read_byte(port + 1) << 8)

    def write(self, port, value, width=1):
        handled = self.write_byte(port, value)
        if width == 2:
            handled = self.write_byte(port + 1, value >> 8) or handled
        return handled
