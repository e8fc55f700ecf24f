"""A card on ports E0h (its write handler raises) and E1h (its read
handler raises); its name on the board is ``portcard``."""

from pypc_core import hookimpl

from ._card import Card, declaration

PORTS = (0xE0, 0xE1)


class PortFails(Card):
    def read_port(self, port):
        if port == 0xE1:
            raise LookupError("in-boom")
        return 0x00

    def write_port(self, port, value):
        if port == 0xE0:
            raise RuntimeError(f"out-boom {value:02X}")
        self.writes.append((port, value))


@hookimpl
def pypc_device_declare():
    return declaration("portcard", PORTS)


@hookimpl
def pypc_device_create():
    return PortFails("portcard", PORTS)
