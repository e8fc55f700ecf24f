"""What every emulated device (chipset chip or plugin card) looks like.

A device is told the emulated cycle it must catch up to; it never reads the
wall clock.  ``clock()`` (given at attach time) returns the current CPU cycle
while a port handler runs, so a handler can catch up before it answers.

Declarations (``ports``, ``irqs``, ``dma_channels``, ``memory``) are plain data
so the machine can build its dispatch tables, detect conflicts and show them in
``pypc plugins`` before anything runs.
"""

import attrs


@attrs.define
class MemoryWindow:
    base: int
    size: int
    kind: str = "device"          # "device" (RAM-like, device renders it) or "rom"


@attrs.define
class DeviceDeclaration:
    """What a device claims.  ``ports`` is a list of ints."""
    name: str
    ports: list = attrs.Factory(list)
    irqs: list = attrs.Factory(list)
    dma_channels: list = attrs.Factory(list)
    memory: list = attrs.Factory(list)      # of MemoryWindow
    capabilities: list = attrs.Factory(list)

    def describe(self):
        parts = []
        if self.ports:
            parts.append("ports " + _ranges(self.ports))
        if self.irqs:
            parts.append("IRQ " + ",".join(str(i) for i in self.irqs))
        if self.dma_channels:
            parts.append("DMA " + ",".join(str(i) for i in self.dma_channels))
        for w in self.memory:
            parts.append(f"mem {w.base:05X}h-{w.base + w.size - 1:05X}h")
        return "; ".join(parts)


def _ranges(ports):
    ports = sorted(set(ports))
    out, start, prev = [], None, None
    for p in ports:
        if start is None:
            start = prev = p
        elif p == prev + 1:
            prev = p
        else:
            out.append((start, prev))
            start = prev = p
    if start is not None:
        out.append((start, prev))
    return ",".join(f"{a:X}h" if a == b else f"{a:X}h-{b:X}h" for a, b in out)


class Device:
    """Base class for devices.  Subclasses override what they need."""

    declaration = DeviceDeclaration(name="device")

    def attach(self, machine):
        """Claim ports/memory through ``machine.ports`` / ``machine.memory``
        and keep handles (``machine.pic``, ``machine.clock``)."""

    def reset(self):
        """Power-on state."""

    def next_event(self):
        """Cycle at which this device next changes something the CPU can see
        (an IRQ edge, a retrace flip); ``None`` if nothing is scheduled."""
        return None

    def advance(self, cycle):
        """Catch up to emulated CPU cycle ``cycle``."""

    def get_state(self):
        """JSON-compatible dict that ``set_state`` restores exactly."""
        return {}

    def set_state(self, state):
        pass
