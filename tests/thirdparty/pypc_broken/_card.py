"""A card that works: the broken device plugins change one piece of it."""

from pypc_core.device import Device, DeviceDeclaration


def declaration(name, ports=()):
    return DeviceDeclaration(name=name, ports=list(ports))


class Card(Device):
    def __init__(self, name, ports=()):
        self.declaration = declaration(name, ports)
        self.writes = []

    def attach(self, board):
        if self.declaration.ports:
            board.claim_ports(self.declaration.ports, read=self.read_port,
                              write=self.write_port)

    def read_port(self, port):
        return 0x00

    def write_port(self, port, value):
        self.writes.append((port, value))
