"""Counting a machine's port exits in tests (a port observer)."""


class ExitCounter:
    """The ports of the accesses that reach Python (the exits): a port
    observer that leaves the core's fast paths on."""

    def __init__(self, ports):
        self.ports = ports

    def after_read(self, port, width, value):
        self.ports.append(port)

    def after_write(self, port, value, width):
        self.ports.append(port)
