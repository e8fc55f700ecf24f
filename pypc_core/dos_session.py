"""A DOS program under control, in-process: start it stopped on its first
instruction, step, set execution breakpoints, continue, read its exit code.

A layer above the machine (it builds one, with the built-in DOS of
``pypc_core.dos``, which is below the machine).

This is the Python side of the agent flow (start, step, break, read memory,
stop, read the exit code); an RPC method group adapts it.  Stops are plain
dicts shaped like the agent spec's stop events::

    {"kind": "startup" | "step" | "breakpoint" | "pause" | "program_exit",
     "cs": 0x0076, "ip": 0x0100,            # where the CPU stopped
     "breakpoint_id": "bp-1",               # kind breakpoint
     "exit_code": 0}                        # kind program_exit

Example::

    with DosSession("tests/guest/dos/agent_fixture.com") as s:
        s.start()                       # {"kind": "startup", "ip": 0x100, ...}
        s.step()                        # AX = 1234h
        bp = s.add_breakpoint(s.cs, 0x106)
        s.resume()                      # {"kind": "breakpoint", "breakpoint_id": bp, ...}
        s.resume()                      # {"kind": "program_exit", "exit_code": 0}

Breakpoints live in the machine's breakpoint table (``Machine.breakpoints``,
shared with anything else driving the machine); stepping is
``Machine.step`` / ``Machine.step_over``.  The program's end becomes a stop
through an execution flag on the DOS's "program ended" idle loop.
"""

from .cpu import state as S
from .cpu.registers import Registers
from .debugger import BreakpointError
from .dos.common import TERM_CTRL_C
from .dos.program import prepare_program
from .errors import PypcError
from .machine import CPU_HZ, Machine, MachineConfig

STATES = ("created", "stopped", "running", "exited", "failed")
DEFAULT_START_SECONDS = 5.0


class SessionError(PypcError):
    """A session call that its state does not allow (``reason`` says why:
    TARGET_EXITED, TARGET_NOT_STOPPED, BREAKPOINT_NOT_FOUND ...)."""

    def __init__(self, message, reason):
        super().__init__(message)
        self.reason = reason


class DosSession:
    """One program on its own machine (built-in BIOS and DOS).

    ``program``: a host path (its folder becomes C: unless ``mounts`` is
    given) or a DOS path on one of ``mounts`` ({"C": host folder}).  Bad
    input (missing, not a program, outside the mounts, corrupt header)
    raises PypcError before any machine exists."""

    def __init__(self, program, arguments=(), mounts=None, plugins=("cga",), memory_kib=640,
                 debug_port=None):
        self.dos_config = prepare_program(program, list(arguments), dict(mounts or {}))
        self.plugins = list(plugins)
        self.memory_kib = memory_kib
        self.debug_port = debug_port       # the guest debug console (pypc_core.debugcon)
        self.machine = None
        self.state = "created"
        self.last_stop = None
        self.revision = 0
        self._exit_bp = None
        self.checkpoints = {}          # id -> (machine state, session state, stop)
        self._next_cp = 1

    # -- life cycle ---------------------------------------------------------------
    def start(self, timeout_s=DEFAULT_START_SECONDS):
        """Boot and stop on the program's first instruction (kind ``startup``).
        A program DOS cannot load ends the session at once (kind
        ``program_exit``, state ``exited``)."""
        if self.machine is not None:
            raise SessionError("the session has already started", "SESSION_BUSY")
        cfg = self.dos_config
        cfg.break_at_entry = True
        self.machine = Machine(MachineConfig(plugins=self.plugins, memory_kib=self.memory_kib,
                                             dos=cfg, debug_port=self.debug_port))
        dos = self.machine.dos
        stop = self.machine.run_for(int(timeout_s * CPU_HZ))
        if stop.kind == "breakpoint" and dos.entry_breakpoint is not None \
                and stop.detail.get("address") == dos.entry_breakpoint:
            dos.clear_entry_breakpoint()
            self._arm_exit()
            return self._stopped("startup")
        dos.clear_entry_breakpoint()
        if dos.exited:
            return self._exited()
        self.state = "failed"
        self.last_stop = {"kind": "fault", "reason": "the program did not start",
                          "console": bytes(dos.console_out).decode("cp437")}
        return dict(self.last_stop)

    def close(self):
        if self.machine is not None:
            self.machine.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- what a client reads -----------------------------------------------------------
    @property
    def dos(self):
        return self.machine.dos

    @property
    def cs(self):
        return self.machine.cpu.r.cs

    @property
    def registers(self):
        self._require_stopped()
        return self.machine.cpu.r.as_dict()

    @property
    def exit_code(self):
        return self.machine.dos.exit_code if self.machine is not None else None

    def status(self):
        return {"state": self.state, "last_stop": dict(self.last_stop or {}) or None,
                "state_revision": self.revision,
                "program": self.dos_config.program,
                "arguments": list(self.dos_config.args),
                "exit_code": self.exit_code if self.state == "exited" else None}

    def memory_map(self):
        """The DOS memory arena: [{segment, size, owner, name, ...}] (see
        ``Dos.memory_map``)."""
        self._require_stopped()
        return self.machine.dos.memory_map()

    def read_memory(self, segment, offset, length):
        self._require_stopped()
        return self.machine.memory.read(((segment << 4) + offset) & 0xFFFFF, length)

    def write_memory(self, segment, offset, data):
        self._require_stopped()
        self.machine.memory.write(((segment << 4) + offset) & 0xFFFFF, data)
        self.revision += 1

    # -- breakpoints -------------------------------------------------------------------
    def add_breakpoint(self, segment, offset):
        """An execution breakpoint at segment:offset in the machine's
        breakpoint table (``Machine.breakpoints``); returns its id ("bp-N")."""
        self._require_not_exited()
        bp = self.machine.breakpoints.add("exec", address=(segment, offset))
        self.revision += 1
        return f"bp-{bp.id}"

    def remove_breakpoint(self, bp):
        try:
            self.machine.breakpoints.remove(int(str(bp).removeprefix("bp-")))
        except (BreakpointError, ValueError):
            raise SessionError(f"no breakpoint {bp!r}", "BREAKPOINT_NOT_FOUND") from None
        self.revision += 1

    def list_breakpoints(self):
        return [{"breakpoint_id": f"bp-{bp.id}", "linear": bp.address}
                for bp in self.machine.breakpoints.list() if bp.kind == "exec"]

    # -- running -----------------------------------------------------------------------
    def step(self, mode="into", max_seconds=60.0):
        """``into``: execute one instruction (an INT 21h service counts as
        one once the CPU is on the DOS's trap).  ``over``: a CALL, INT,
        LOOP or REP string instruction runs through to the next instruction
        at the same stack depth (``Machine.step_over``) -- unless a
        breakpoint, the program's end or ``max_seconds`` of emulated time
        comes first.  Returns the stop (``step``, ``breakpoint``, ``pause``
        or ``program_exit``)."""
        if mode not in ("into", "over"):
            raise SessionError(f"step mode {mode!r}: 'into' or 'over'", "INVALID_PARAMS")
        self._require_stopped()
        m = self.machine
        if mode == "over":
            stop = m.step_over(max_cycles=int(max_seconds * CPU_HZ))
        else:
            stop = m.step()
        return self._after(stop)

    def resume(self, max_seconds=None):
        """Continue until a breakpoint, the program's end or ``max_seconds``
        of emulated time (then kind ``pause``: the program is still there)."""
        self._require_stopped()
        self.state = "running"
        budget = int((max_seconds if max_seconds is not None else 3600) * CPU_HZ)
        return self._after(self.machine.run_for(budget))

    def _after(self, stop):
        """The session's stop for a machine Stop."""
        m = self.machine
        if m.dos.exited or m.cpu.pc == self._exit_bp:
            return self._exited()
        if stop.kind == "breakpoint" and stop.breakpoint is not None:
            return self._stopped("breakpoint", breakpoint_id=f"bp-{stop.breakpoint.id}")
        if stop.kind == "step":
            return self._stopped("step")
        return self._stopped("pause")

    def stop(self):
        """End the program (as a Ctrl-Break would, level by level, back to
        the DOS) unless it has ended; returns the ``program_exit`` stop."""
        if self.state == "exited" and (self.machine is None or self.machine.dos.exited):
            return dict(self.last_stop)     # (a machine restored to before the end goes on)
        if self.machine is None or self.state == "failed":
            self.state = "exited"
            self.last_stop = {"kind": "program_exit", "exit_code": None, "forced": True}
            return dict(self.last_stop)
        dos = self.machine.dos
        r = Registers(self.machine.cpu.regs)
        for _ in range(64):
            if dos.exited:
                break
            dos.terminate(r, 0, TERM_CTRL_C)
        stop = self._exited()
        stop["forced"] = True
        self.last_stop["forced"] = True
        return stop

    # -- checkpoints -----------------------------------------------------------------------
    def checkpoint(self):
        """Keep the whole machine (CPU, memory, devices, the DOS's state) in
        memory; returns its id ("cp-N").  Breakpoints are not part of it, nor
        are the host files the program wrote."""
        self._require_settled()
        cp = f"cp-{self._next_cp}"
        self._next_cp += 1
        self.checkpoints[cp] = (self.machine.get_state(), self.state, dict(self.last_stop))
        return cp

    def restore(self, cp):
        """Go back to checkpoint ``cp`` exactly: a run from it repeats the
        original cycle for cycle."""
        if cp not in self.checkpoints:
            raise SessionError(f"no checkpoint {cp!r}", "CHECKPOINT_NOT_FOUND")
        state, session_state, last_stop = self.checkpoints[cp]
        self.machine.set_state(state)
        self.machine.breakpoints.rearm()
        self.state, self.last_stop = session_state, dict(last_stop)
        self.revision += 1
        return dict(self.last_stop)

    def list_checkpoints(self):
        return list(self.checkpoints)

    def delete_checkpoint(self, cp):
        if self.checkpoints.pop(cp, None) is None:
            raise SessionError(f"no checkpoint {cp!r}", "CHECKPOINT_NOT_FOUND")

    # -- internals -----------------------------------------------------------------------
    def _require_settled(self):
        if self.machine is None or self.state not in ("stopped", "exited"):
            raise SessionError(f"the session is {self.state}, not stopped",
                               "TARGET_NOT_STOPPED")

    def _arm_exit(self):
        self._exit_bp = self.machine.dos.exited_address
        self.machine.memory.xflags[self._exit_bp] |= S.XF_BREAKPOINT

    def _stopped(self, kind, **fields):
        r = self.machine.cpu.r
        self.state = "stopped"
        self.revision += 1
        self.last_stop = {"kind": kind, "cs": r.cs, "ip": r.ip, **fields}
        return dict(self.last_stop)

    def _exited(self):
        self.state = "exited"
        self.revision += 1
        self.last_stop = {"kind": "program_exit", "exit_code": self.machine.dos.exit_code}
        return dict(self.last_stop)

    def _require_stopped(self):
        if self.state == "exited":
            raise SessionError("the program has exited", "TARGET_EXITED")
        if self.state != "stopped":
            raise SessionError(f"the session is {self.state}, not stopped", "TARGET_NOT_STOPPED")

    def _require_not_exited(self):
        if self.state in ("exited", "failed") or self.machine is None:
            raise SessionError(f"the session is {self.state}", "TARGET_EXITED")
