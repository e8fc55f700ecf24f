"""A third-party test card for pypc, written only against the documented
plugin interface (``pypc_core.hookimpl``, ``pypc_core.device``, the board it
is given in ``attach``): no ``pypc_core`` internals.

What it puts on the bus (all declared):

* D0000h-D0FFFh: a compiled memory window (a numba ``cfunc``): writes store
  the byte, reads give it back inverted (XOR FFh);
* D1000h-D1FFFh: a Python memory window: reads give the low byte of the
  address plus the number of writes seen so far;
* D2000h-D2FFFh: RAM, seen again at D3000h-D3FFFh (an alias);
* port 300h: two one-shots in the core (bit 0: 1000 cycles, bit 1: 50,000
  cycles) over constant bits F0h;
* port 301h: a compiled port handler counting writes (reads give the count);
* IRQ 5: a line the card raises when asked (``raise_irq``).
"""

import numba
import numpy as np
from numba import types

from pypc_core import hookimpl
from pypc_core.device import Device, DeviceDeclaration, MemoryWindow

SIG = types.int64(types.voidptr, types.int64, types.int64, types.int64)

DECLARATION = DeviceDeclaration(
    name="testcard", ports=[0x300, 0x301], irqs=[5],
    memory=[MemoryWindow(0xD0000, 0x4000, "device")],
    capabilities=["test"])

SHORT, LONG = 1000, 50_000


@numba.cfunc(SIG, nopython=True)
def inverted(ctx, address, value, op):
    data = numba.carray(ctx, 4096, np.uint8)
    if op == 0:
        return data[address & 0xFFF] ^ 0xFF
    data[address & 0xFFF] = value
    return 0


@numba.cfunc(SIG, nopython=True)
def write_counter(ctx, port, value, op):
    count = numba.carray(ctx, 1, np.int64)
    if op & 1 == 0:                     # a port handler: op >> 1 is the cycle
        return count[0] & 0xFF
    count[0] += 1
    return 0


class TestCard(Device):
    declaration = DECLARATION

    def __init__(self):
        self.store = np.zeros(4096, dtype=np.uint8)
        self.writes = np.zeros(1, dtype=np.int64)
        self.python_writes = []

    def attach(self, board):
        self.board = board
        board.map_compiled(0xD0000, 0x1000, inverted, self.store)
        board.map_handler(0xD1000, 0x1000, read=self.read_mem, write=self.write_mem)
        self.ram = board.map_ram(0xD2000, 0x1000)
        board.map_alias(0xD3000, 0x1000, 0xD2000)
        board.claim_ports([0x300])
        self.oneshot = board.oneshot(0x300, masks=[0x01, 0x02], constant_bits=0xF0)
        self.oneshot.set_duration(0, SHORT)
        self.oneshot.set_duration(1, LONG)
        board.claim_ports([0x301])
        board.compiled_port(0x301, write_counter, self.writes)
        self.irq = board.irq(5)

    def read_mem(self, address):
        return (address + len(self.python_writes)) & 0xFF

    def write_mem(self, address, value):
        self.python_writes.append((address, value))

    def raise_irq(self):
        self.irq.high()


@hookimpl
def pypc_device_declare():
    return DECLARATION


@hookimpl
def pypc_device_create():
    return TestCard()
