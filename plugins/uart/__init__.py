"""pypc device plugins: the serial ports (8250/16450 UART).

Two entry points of the group ``pypc.devices`` name two instances of one
plugin class: ``uart`` is COM1 (3F8h-3FFh, IRQ 4) and ``uart2`` is COM2
(2F8h-2FFh, IRQ 3), so ``--plugins cga,uart,uart2`` gives a machine two
serial ports.  The BIOS lists them in its data area and equipment word
because their declarations carry the ``serial`` capability.

Options: ``--serial-tcp PORT`` exposes COM1 as a raw TCP socket on
127.0.0.1:PORT (for a terminal program); ``--serial-timing flow|wire``
(both ports): ``flow``, the default, moves bytes as soon as the other side
has room (no baud delay), ``wire`` gives each character its time at the
programmed baud rate.  The device is
``pypc_plugins.uart.uart.Uart8250``; its host side (``write_input``,
``read_output``, ``status``) is what the RPC ``serial.*`` methods use.
"""

from pypc_core import hookimpl

from .fast import char_cycles
from .uart import TIMINGS, SerialError, TcpBridge, Uart8250

__all__ = ["Uart8250", "SerialError", "TcpBridge", "char_cycles", "SerialPortPlugin",
           "com1", "com2"]


class SerialPortPlugin:
    """The hooks of one serial port (one instance per entry point)."""

    def __init__(self, name, base, irq, tcp_option=False):
        self.name = name
        self.base = base
        self.irq = irq
        self.tcp_option = tcp_option

    def __repr__(self):
        return f"<serial port plugin {self.name} {self.base:03X}h IRQ {self.irq}>"

    @hookimpl
    def pypc_device_declare(self):
        return Uart8250(self.name, self.base, self.irq).declaration

    @hookimpl
    def pypc_cli_add_options(self, parser):
        if self.tcp_option:
            parser.add_argument(
                "--serial-tcp", type=_tcp_port, metavar="PORT",
                help="expose COM1 as a raw TCP socket on 127.0.0.1:PORT")
            parser.add_argument(
                "--serial-timing", choices=TIMINGS, default="flow",
                help="flow (default): bytes move as soon as the other side has room, "
                     "no baud delay; wire: each character takes its time at the "
                     "programmed baud rate")

    @hookimpl
    def pypc_device_create(self, options):
        port = getattr(options, "serial_tcp", None) if self.tcp_option else None
        timing = getattr(options, "serial_timing", None) or "flow"
        return Uart8250(self.name, self.base, self.irq, tcp_port=port, timing=timing)

    @hookimpl
    def pypc_machine_shutdown(self, machine):
        device = machine.devices.get(self.name)
        if isinstance(device, Uart8250):
            device.close()


def _tcp_port(text):
    import argparse
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a TCP port number") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"TCP port {port} is not 1-65535")
    return port


com1 = SerialPortPlugin("uart", 0x3F8, 4, tcp_option=True)
com2 = SerialPortPlugin("uart2", 0x2F8, 3)
