"""Method group ``hardware``: ``hardware.trace.start``, ``.read`` and
``.stop`` -- a bounded recorder of port I/O and PIC IRQ transitions that
never changes the emulated machine.

While it records, the machine's port map sends every guest port access
through Python (``PortMap.set_fast_reads(False)``: reads the CPU would answer
itself are seen too; ports no device claims exit to the port map too) and
the recorder wraps, on these instances only, the port map's
``read``/``write``, the PIC's ``raise_irq``/``lower_irq``/``acknowledge`` and
the machine's ``_service_exit`` (to know a guest OUT).  Stopping restores all
of it.  Port writes the CPU only counts (the BIOS's keyboard-poll stamp
port) are not seen.  A guest OUT is recorded at its own instruction's
address (the core serves it after IP moved on)."""


import numpy as np

from pypc_core import hookimpl
from pypc_core.cpu import state as S
from pypc_core.cpu.state import PORT_NONE, PORT_PY
from pypc_core.event_ring import EventRing
from pypc_core.rpc import params as P
from pypc_core.rpc.errors import invalid
from pypc_core.rpc.stops import cycles_to_ns

MAX_CAPACITY = 65536
DEFAULT_CAPACITY = 4096
MAX_READ = 65536
DEFAULT_READ = 128


class Recorder(EventRing):
    def __init__(self, ctl, capacity, include_io, include_irq, ports, irqs):
        super().__init__(capacity)
        self.ctl = ctl
        self.include_io = include_io
        self.include_irq = include_irq
        self.ports = ports              # [(first, last)], empty: all
        self.irqs = set(irqs)           # empty: all
        self.active = False
        self.serving_out = False        # the machine is serving a guest OUT's exit
        self._saved = {}

    # -- recording ---------------------------------------------------------------
    def _where(self):
        regs = self.ctl.cpu.regs
        return {"space": "segmented", "segment": int(regs[S.CS]), "offset": int(regs[S.IP])}

    def _port_wanted(self, port):
        return not self.ports or any(a <= port <= b for a, b in self.ports)

    def _out_where(self, port, width):
        """The address of the guest OUT being served: the core exits after
        the OUT executed, so CS:IP is already the next instruction.  Back up
        over ``OUT imm8`` (E6/E7 port) or ``OUT DX`` (EE/EF, DX = port)."""
        regs = self.ctl.cpu.regs
        mem = self.ctl.machine.memory.mem
        cs, ip = int(regs[S.CS]), int(regs[S.IP])

        def byte(back):
            return int(mem[((cs << 4) + ((ip - back) & 0xFFFF)) & 0xFFFFF])
        wide = width == 2
        if byte(2) == (0xE7 if wide else 0xE6) and byte(1) == port:
            ip -= 2
        elif byte(1) == (0xEF if wide else 0xEE) and int(regs[S.DX]) == port:
            ip -= 1
        return {"space": "segmented", "segment": cs, "offset": ip & 0xFFFF}

    def _io(self, kind, port, width, value):
        if self._port_wanted(port):
            where = self._out_where(port, width) if self.serving_out else self._where()
            self._add({"kind": kind, "emulated_time": cycles_to_ns(self.ctl.machine.clock()),
                       "address": where, "port": port, "byte_count": width,
                       "value": value})

    def _irq(self, kind, irq, vector=None):
        if self.irqs and irq not in self.irqs:
            return
        ev = {"kind": kind, "irq": irq, "address": self._where(),
              "emulated_time": cycles_to_ns(self.ctl.machine.clock())}
        if vector is not None:
            ev["vector"] = vector
        self._add(ev)

    def start(self):
        m = self.ctl.machine
        pm, pic = m.ports, m.pic
        if self.include_io:
            read, write = pm.read, pm.write

            def traced_read(port, width=1):
                value = read(port, width)
                if self.active:
                    self._io("io_read", port & 0xFFFF, width, value)
                return value

            def traced_write(port, value, width=1):
                handled = write(port, value, width)
                if self.active:
                    self._io("io_write", port & 0xFFFF, width,
                             value & (0xFF if width == 1 else 0xFFFF))
                return handled
            self._saved["ports"] = hook(pm, {"read": traced_read, "write": traced_write})
            service = m._service_exit

            def traced_service(reason):
                self.serving_out = reason == S.EXIT_IO_OUT
                try:
                    return service(reason)
                finally:
                    self.serving_out = False
            self._saved["machine"] = hook(m, {"_service_exit": traced_service})
            self._saved["fast"] = (pm, getattr(pm, "fast_reads", True))
            pm.set_fast_reads(False)
            # ports no device claims (reads FFh, writes vanish) exit to the
            # port map too while recording, so a guest's probes are seen
            kind = pm.port_kind
            unclaimed = np.flatnonzero(kind == PORT_NONE)
            kind[unclaimed] = PORT_PY
            self._saved["unclaimed"] = (pm, unclaimed)
        if self.include_irq:
            raise_irq, lower_irq, acknowledge = pic.raise_irq, pic.lower_irq, pic.acknowledge

            def traced_raise(n):
                was = pic.lines & (1 << n)
                raise_irq(n)
                if self.active and not was and pic.lines & (1 << n):
                    self._irq("irq_raise", n)

            def traced_lower(n):
                was = pic.lines & (1 << n)
                lower_irq(n)
                if self.active and was and not pic.lines & (1 << n):
                    self._irq("irq_lower", n)

            def traced_ack():
                vector = acknowledge()
                if self.active:
                    self._irq("irq_dispatch", (vector - pic.vector_base) & 0x07, vector)
                return vector
            self._saved["pic"] = hook(pic, {"raise_irq": traced_raise,
                                            "lower_irq": traced_lower,
                                            "acknowledge": traced_ack})
        self.active = True

    def stop(self):
        if not self.active:
            return
        self.active = False
        for key in ("ports", "machine", "pic"):
            saved = self._saved.pop(key, None)
            if saved is not None:
                unhook(*saved)
        unclaimed = self._saved.pop("unclaimed", None)
        if unclaimed is not None:
            pm, ports = unclaimed
            kind = pm.port_kind
            ports = ports[kind[ports] == PORT_PY]
            kind[[p for p in ports.tolist() if pm.owner(p) is None]] = PORT_NONE
        fast = self._saved.pop("fast", None)
        if fast is not None:
            fast[0].set_fast_reads(fast[1])

    # -- results -------------------------------------------------------------------
    def meta(self):
        return {"active": self.active, "capacity": self.capacity,
                "dropped_event_count": self.dropped,
                "first_available_sequence": self.first_available}


def hook(obj, wrappers):
    """Put ``wrappers`` ({name: fn}) on the instance ``obj``; returns what
    :func:`unhook` needs to put back what was there (another recorder's
    wrapper, or nothing)."""
    before = {name: obj.__dict__.get(name) for name in wrappers}
    for name, fn in wrappers.items():
        setattr(obj, name, fn)
    return obj, wrappers, before


def unhook(obj, wrappers, before):
    """Undo :func:`hook` where its wrapper is still the outermost; a wrapper
    that another recorder wrapped again stays (inactive, it only forwards)."""
    for name, fn in wrappers.items():
        if obj.__dict__.get(name) is fn:
            if before[name] is None:
                del obj.__dict__[name]
            else:
                obj.__dict__[name] = before[name]


def _current(ctl, method):
    rec = ctl.extensions.get("hardware_trace")
    if rec is None:
        raise invalid(f"{method}: no hardware trace has been started "
                      f"(hardware.trace.start)", "PRECONDITION_FAILED")
    return rec


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
    old = ctl.extensions.get("hardware_trace")
    if old is not None:
        old.stop()
    rec = Recorder(ctl, capacity, include_io, include_irq, ranges, irqs)
    rec.start()
    ctl.extensions["hardware_trace"] = rec
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
