"""Method group ``hardware``: ``hardware.trace.start``, ``.read`` and
``.stop`` -- a bounded recorder of port I/O and PIC IRQ transitions that
never changes the emulated machine.

While it records, the recorder is an observer of the machine's port map
(``PortMap.add_observer``: every guest port access then goes through
Python, reads the CPU would answer itself included, and ports no device
claims exit too) and of the PIC (``Pic8259.add_observer``); stopping takes
it away, and the last observer leaving puts the fast paths back.  Port
writes the CPU only counts (the BIOS's keyboard-poll stamp port) are not
seen.  A guest OUT is recorded at its own instruction's address
(``Machine.io_source``); an access made over RPC (``io.read``/``io.write``)
at CS:IP."""


from pypc_core import hookimpl
from pypc_core.event_ring import EventRing
from pypc_core.rpc import needs_live_target, params as P
from pypc_core.rpc.errors import invalid
from pypc_core.rpc.stops import cycles_to_ns

MAX_CAPACITY = 65536
DEFAULT_CAPACITY = 4096
MAX_READ = 65536
DEFAULT_READ = 128


class Recorder(EventRing):
    """The hardware trace of one machine: a part of the controller
    (:mod:`pypc_core.rpc.parts`), dropped with the machine it records."""

    def __init__(self, ctl, capacity, include_io, include_irq, ports, irqs):
        super().__init__(capacity)
        self.ctl = ctl
        self.machine = ctl.machine
        self.include_io = include_io
        self.include_irq = include_irq
        self.ports = ports              # [(first, last)], empty: all
        self.irqs = set(irqs)           # empty: all
        self.active = False

    # -- recording ---------------------------------------------------------------
    def _where(self):
        r = self.machine.registers
        return {"space": "segmented", "segment": r.cs, "offset": r.ip}

    def _port_wanted(self, port):
        return not self.ports or any(a <= port <= b for a, b in self.ports)

    def _io(self, kind, port, width, value):
        if self._port_wanted(port):
            m = self.machine
            source = m.io_source(port, width)
            if source is None:
                where = self._where()
            else:
                where = {"space": "segmented", "segment": source[0], "offset": source[1]}
            self._add({"kind": kind, "emulated_time": cycles_to_ns(m.clock()),
                       "address": where, "port": port, "byte_count": width,
                       "value": value})

    # (the port map's observer protocol)
    def after_read(self, port, width, value):
        self._io("io_read", port, width, value)

    def after_write(self, port, value, width):
        self._io("io_write", port, width, value & (0xFF if width == 1 else 0xFFFF))

    # (the PIC's)
    def _irq(self, kind, irq, vector=None):
        if self.irqs and irq not in self.irqs:
            return
        ev = {"kind": kind, "irq": irq, "address": self._where(),
              "emulated_time": cycles_to_ns(self.machine.clock())}
        if vector is not None:
            ev["vector"] = vector
        self._add(ev)

    def start(self):
        m = self.machine
        if self.include_io:
            m.ports.add_observer(self, unclaimed=True)
        if self.include_irq:
            m.pic.add_observer(self._irq)
        self.active = True

    def stop(self):
        if not self.active:
            return
        self.active = False
        self.machine.ports.remove_observer(self)
        self.machine.pic.remove_observer(self._irq)

    close = stop                        # dropped by the controller (rpc.parts)

    # -- results -------------------------------------------------------------------
    def meta(self):
        return {"active": self.active, "capacity": self.capacity,
                "dropped_event_count": self.dropped,
                "first_available_sequence": self.first_available}


def _current(ctl, method):
    rec = ctl.parts.get(Recorder)
    if rec is None:
        raise invalid(f"{method}: no hardware trace has been started "
                      f"(hardware.trace.start)", "PRECONDITION_FAILED")
    return rec


@needs_live_target
def start(ctl, params):
    capacity = P.length(params.get("capacity", DEFAULT_CAPACITY), "capacity", MAX_CAPACITY)
    include_io = P.boolean(params.get("include_io", True), "include_io")
    include_irq = P.boolean(params.get("include_irq", True), "include_irq")
    if not include_io and not include_irq:
        raise invalid("enable include_io or include_irq (or both)", field="include_io")
    ranges = []
    for i, r in enumerate(params.get("ports", [])):
        first = P.number(r["first"], f"ports[{i}].first", 0, 0xFFFF)
        last = P.number(r.get("last", first), f"ports[{i}].last", 0, 0xFFFF)
        if last < first:
            raise invalid(f"ports[{i}]: last is below first", field=f"ports[{i}]")
        ranges.append((first, last))
    irqs = [P.number(n, f"irqs[{i}]", 0, 15) for i, n in enumerate(params.get("irqs", []))]
    ctl.parts.pop(Recorder)             # (stops the one it replaces first)
    rec = Recorder(ctl, capacity, include_io, include_irq, ranges, irqs)
    rec.start()
    ctl.parts.put(Recorder, rec)
    return rec.meta()


def read(ctl, params):
    rec = _current(ctl, "hardware.trace.read")
    n = P.length(params.get("limit", DEFAULT_READ), "limit", MAX_READ)
    cursor = params.get("cursor")
    after = P.ring_cursor(cursor, "hardware-", rec.first_available, rec.next_sequence,
                          lost="overwritten")
    events = [dict(e) for e in rec.page(after, n)]
    out = rec.meta()
    out["events"] = events
    out["next_cursor"] = f"hardware-{events[-1]['sequence']}" if events else cursor
    return out


def stop(ctl, params):
    rec = _current(ctl, "hardware.trace.stop")
    rec.stop()
    return rec.meta()


@hookimpl
def pypc_rpc_methods():
    return {"hardware.trace.start": start, "hardware.trace.read": read,
            "hardware.trace.stop": stop}
