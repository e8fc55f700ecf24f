"""The guest debug console: the Bochs/QEMU "port E9h" convention.

A guest writes text, a byte at a time, to one I/O port (E9h unless
configured otherwise); pypc turns it into lines in the machine's
diagnostics ring (:mod:`pypc_core.diagnostics`, source ``guest``, level
``info``), which ``debug.output.read`` serves.  It is what retro developers
use for printf debugging: ``mov dx, 0E9h`` / ``out dx, al``.

* Bytes are CP437 characters.  CR or LF ends a line (one record, empty
  lines included); the LF of a CR LF pair ends nothing more.
* A line reaching :data:`MAX_LINE` characters becomes a record at once;
  the rest of it continues in the next record.
* A line without its end is not a record yet: it waits, as part of the
  device's state (a checkpoint keeps it), for its end.
* Reading the port returns E9h, as on Bochs and QEMU, so a guest can tell
  the console is there (an XT without it floats the bus: FFh).

A real XT has nothing at E9h, so the console is opt-in:
``MachineConfig(debug_port=0xE9)`` / ``pypc run --debug-port [PORT]``.  It is
an ordinary device on the machine's board: its port is declared and checked
against every card's (two owners of one port are a start-up error), reads
are answered inside the CPU core (a ``peek``), and only a write leaves the
compiled loop.  Without the option nothing is attached and the port is
unclaimed.
"""

from .device import Device, DeviceDeclaration

DEFAULT_PORT = 0xE9
MAX_LINE = 256              # characters in one guest record
SIGNATURE = 0xE9            # what a read of the port returns
NAME = "debugcon"
SOURCE = "guest"


class DebugConsole(Device):
    """The debug console on ``port``; ``sink(message)`` receives each
    finished line (the machine passes its diagnostics ring's writer)."""

    def __init__(self, port=DEFAULT_PORT, sink=None):
        if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port <= 0xFFFF:
            raise ValueError(f"the debug port must be 0000h-FFFFh, not {port!r}")
        self.port = port
        self.declaration = DeviceDeclaration(name=NAME, ports=[port],
                                             capabilities=["debug-console"])
        self.sink = sink
        self.line = bytearray()
        self.after_cr = False
        self.lines = 0              # records written (finished or cut lines)

    def attach(self, board):
        board.claim_ports([self.port], read=self.port_read, write=self.port_write,
                          peek=self.port_peek)

    def reset(self):
        self.line = bytearray()
        self.after_cr = False

    def port_peek(self, port):
        return SIGNATURE

    def port_read(self, port):
        return SIGNATURE

    def port_write(self, port, value):
        value &= 0xFF
        if value == 0x0A and self.after_cr:
            self.after_cr = False           # the LF of CR LF
            return
        self.after_cr = value == 0x0D
        if value in (0x0A, 0x0D):
            self._emit()
            return
        self.line.append(value)
        if len(self.line) >= MAX_LINE:
            self._emit()

    def _emit(self):
        text = bytes(self.line).decode("cp437")
        self.line = bytearray()
        self.lines += 1
        if self.sink is not None:
            self.sink(text)

    def get_state(self):
        return {"line": self.line.hex(), "after_cr": self.after_cr}

    def set_state(self, state):
        line = bytes.fromhex(state["line"])
        if len(line) >= MAX_LINE:
            raise ValueError(f"a pending debug console line holds at most {MAX_LINE - 1} "
                             f"bytes, not {len(line)}")
        self.line = bytearray(line)
        self.after_cr = bool(state["after_cr"])


__all__ = ["DEFAULT_PORT", "DebugConsole", "MAX_LINE", "SIGNATURE"]
