"""Emulated time: the CPU runs exactly to the next device deadline, devices
catch up to the cycle they are told, and wall-clock pacing only ever slows
the loop down (it never changes what the guest sees).

Machine time is CPU cycles at 4.77 MHz (14.31818 MHz / 3).  A device with
timed behaviour (the PIT's IRQ0 edges, the keyboard's byte delivery) answers
``next_event()`` with the cycle of its next visible change and is advanced
with ``advance(cycle)`` once the CPU has reached it.
"""

import time

from .cpu.state import CPU_HZ  # noqa: F401  (the machine's clock; the cpu package defines it)


class Scheduler:
    def __init__(self, clock, ports, speed=0.0):
        self.clock = clock          # () -> current CPU cycle
        self.ports = ports          # PortMap: refreshed after devices change
        self.speed = speed          # 0: unpaced; 1.0: a real XT; N: N times that
        self.timed = []
        self._port_owners = {}      # id(device) -> owners to mark stale after advance
        self._anchor = None
        self._due = None

    def add(self, device, port_owners=(), *, first=False, marks_ports=True):
        """A device with timed events.  ``port_owners``: the port-map owners
        whose CPU-answered (peeked) reads its ``advance`` can change -- its
        own; a device with none given (the keyboard, read through the PPI)
        marks every peeked port stale when it advances, unless
        ``marks_ports`` is false (a host-side observer such as a recorder,
        which changes no port).  ``first``: advanced before every other
        device due at the same cycle (replayed input, which the devices must
        see as a key press would be)."""
        if first:
            self.timed.insert(0, device)
        else:
            self.timed.append(device)
        if port_owners:
            self._port_owners[id(device)] = tuple(port_owners)
        elif not marks_ports:
            self._port_owners[id(device)] = ()
        self.invalidate()

    def remove(self, device):
        """Take a device or observer added by :meth:`add` out again (no error
        if it is not there)."""
        try:
            self.timed.remove(device)
        except ValueError:
            return
        self._port_owners.pop(id(device), None)
        self.invalidate()

    def reset(self):
        self._anchor = None
        self.invalidate()

    def invalidate(self):
        """Something outside the port map changed a device's timing (input
        from the host, a snapshot): recompute the next deadline."""
        self.ports.timing_dirty = True
        self._due = None

    def next_stop(self, limit, now=None):
        """Catch devices up if their time has come and return the cycle the
        CPU may run to: ``limit`` or the first device event.  The device
        deadline is cached until a device is advanced or a timing-relevant
        port is touched, so exits that only talk to other devices (video
        registers, EOIs) skip the scan.  ``now`` is the current cycle if the
        caller has it at hand."""
        ports = self.ports
        if now is None:
            now = self.clock()
        due = self._due
        if due is None or now >= due or ports.timing_dirty:
            due = self._due = self._catch_up(now)
            ports.timing_dirty = False
        if ports.dirty:
            ports.refresh()
        if due >= limit:
            return limit if limit > now else now + 1
        return due if due > now else now + 1

    def _catch_up(self, now):
        """One pass over the timed devices: advance those whose event has
        come, and return the first event still ahead."""
        due = 1 << 62
        for dev in self.timed:
            ev = dev.next_event()
            if ev is not None and ev <= now:
                dev.advance(now)
                owners = self._port_owners.get(id(dev))
                if owners is None:
                    self.ports.mark_all_dirty()
                else:
                    # (what it does to other devices, an IRQ into the PIC
                    # say, those mark themselves)
                    for owner in owners:
                        self.ports.mark_dirty(owner)
                ev = dev.next_event()
            if ev is not None and ev < due:
                due = ev
        return due

    def pace(self):
        """Sleep while emulated time is ahead of ``speed`` times wall time."""
        if not self.speed:
            return
        now = time.perf_counter()
        cycles = self.clock()
        if self._anchor is None:
            self._anchor = (now, cycles)
            return
        t0, c0 = self._anchor
        ahead = (cycles - c0) / (CPU_HZ * self.speed) - (now - t0)
        if ahead > 0.002:
            time.sleep(ahead)
        elif ahead < -0.25:
            self._anchor = (now, cycles)     # we fell behind: don't race to catch up
