"""The XT's NMI mask register: port A0h, write-only, bit 7 = NMI enabled.

Power-on clears it (NMI disabled); the BIOS writes 80h once POST is done.
Reads of A0h float (FFh), which the port map gives for a port without a read
handler.  ``on_change(enabled)`` lets the machine gate the CPU's NMI input.
"""

from ..device import Device, DeviceDeclaration

NMI_MASK_PORT = 0xA0


class NmiMask(Device):
    declaration = DeviceDeclaration(name="nmi", ports=[NMI_MASK_PORT])

    def __init__(self, on_change=None, name="nmi"):
        self.on_change = on_change
        self.name = name
        self.reset()

    def attach(self, board):
        board.claim_ports((NMI_MASK_PORT,), write=self.port_write)

    def reset(self):
        self.value = 0
        self.enabled = False

    def port_write(self, port, value):
        self.value = value & 0xFF
        enabled = bool(value & 0x80)
        if enabled != self.enabled:
            self.enabled = enabled
            if self.on_change is not None:
                self.on_change(enabled)

    def nmi_enabled(self):
        return self.enabled

    def get_state(self):
        return {"value": self.value, "enabled": self.enabled}

    def set_state(self, state):
        self.value = state["value"]
        self.enabled = state["enabled"]
