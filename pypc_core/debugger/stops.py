"""Why a run returned: the :class:`Stop` the machine's run methods give."""

import attrs

from .addresses import MEM_TOP

STOP_KINDS = ("budget", "breakpoint", "step", "halt", "pause", "until", "fault", "key_wait")


@attrs.define
class Stop:
    """Why a run returned, and where the CPU stands now.

    kind: budget (the cycle budget was used up), breakpoint, step (a step,
    step over or step out finished), halt (HLT with interrupts disabled),
    pause (``request_pause``), until (a ``run_until`` target), fault (an
    opcode the core failed to decode, or a device's port handler that
    raised: ``machine.DeviceFault``), key_wait (the guest waits for a key,
    only when asked for).
    """
    kind: str
    cycles: int
    detail: dict = attrs.Factory(dict)
    cs: int = 0
    ip: int = 0
    breakpoint: object = None          # the Breakpoint that stopped the run
    access: dict = None                # memory / I/O access of a breakpoint stop
    interrupt: dict = None             # INT / IRQ breakpoint stops

    @property
    def linear(self):
        return ((self.cs << 4) + self.ip) & (MEM_TOP - 1)

    def to_dict(self):
        d = {"kind": self.kind, "cycles": self.cycles, "cs": self.cs, "ip": self.ip,
             "linear": self.linear}
        if self.breakpoint is not None and not self.breakpoint.internal:
            d["breakpoint"] = self.breakpoint.id
        if self.access is not None:
            d["access"] = dict(self.access)
        if self.interrupt is not None:
            d["interrupt"] = dict(self.interrupt)
        if self.detail:
            d["detail"] = dict(self.detail)
        return d
