"""A DOS program under control, in-process: start it stopped on its first
instruction, step, set execution breakpoints, continue, read its exit code.

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

Breakpoints are the CPU's per-byte execution flags (``XF_BREAKPOINT``) at
linear addresses; the session owns the ones it set and the one on the DOS's
"program ended" idle loop, which is how a program's end becomes a stop.
"""

from ..cpu import state as S
from ..cpu.disasm import disassemble_range
from ..errors import PypcError
from ..machine import CPU_HZ, Machine, MachineConfig
from .launch import prepare_program

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

    def __init__(self, program, arguments=(), mounts=None, plugins=("cga",), memory_kib=640):
        self.dos_config = prepare_program(program, list(arguments), dict(mounts or {}))
        self.plugins = list(plugins)
        self.memory_kib = memory_kib
        self.machine = None
        self.state = "created"
        self.last_stop = None
        self.revision = 0
        self.breakpoints = {}          # id -> linear address
        self._next_bp = 1
        self._exit_bp = None
        self.checkpoints = {}          # id -> (machine state, session state, stop, breakpoints)
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
                                             dos=cfg))
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
        """An execution breakpoint at segment:offset; returns its id ("bp-N")."""
        self._require_not_exited()
        bp = f"bp-{self._next_bp}"
        self._next_bp += 1
        address = ((segment << 4) + offset) & 0xFFFFF
        self.breakpoints[bp] = address
        self.machine.memory.xflags[address] |= S.XF_BREAKPOINT
        self.revision += 1
        return bp

    def remove_breakpoint(self, bp):
        address = self.breakpoints.pop(bp, None)
        if address is None:
            raise SessionError(f"no breakpoint {bp!r}", "BREAKPOINT_NOT_FOUND")
        if address not in self.breakpoints.values() and address != self._exit_bp:
            self.machine.memory.xflags[address] &= ~S.XF_BREAKPOINT & 0xFF
        self.revision += 1

    def list_breakpoints(self):
        return [{"breakpoint_id": bp, "linear": address} for bp, address in self.breakpoints.items()]

    # -- running -----------------------------------------------------------------------
    def step(self, mode="into", max_seconds=60.0):
        """``into``: execute one instruction (an INT 21h service counts as
        one once the CPU is on the DOS's trap).  ``over``: a CALL, INT,
        LOOP or REP string instruction runs through to the next instruction
        (back at the same stack depth or above) -- unless a breakpoint, the
        program's end or ``max_seconds`` of emulated time comes first.
        Returns the stop (``step``, ``breakpoint``, ``pause`` or
        ``program_exit``)."""
        if mode not in ("into", "over"):
            raise SessionError(f"step mode {mode!r}: 'into' or 'over'", "INVALID_PARAMS")
        self._require_stopped()
        m = self.machine
        if mode == "over":
            r = m.cpu.r
            insn = disassemble_range(m.memory.read_byte, r.cs, r.ip, 1)[0]
            if insn.call_like:
                return self._run_to(r.cs, insn.next_ip, r.ss, r.sp, max_seconds)
        self._skip_breakpoint_here()
        m.step()
        if m.cpu.pc == self._exit_bp or m.dos.exited:
            return self._exited()
        return self._stopped("step")

    def resume(self, max_seconds=None):
        """Continue until a breakpoint, the program's end or ``max_seconds``
        of emulated time (then kind ``pause``: the program is still there)."""
        self._require_stopped()
        m = self.machine
        self._skip_breakpoint_here()
        self.state = "running"
        budget = int((max_seconds if max_seconds is not None else 3600) * CPU_HZ)
        stop = m.run_for(budget)
        if stop.kind == "breakpoint":
            address = stop.detail.get("address")
            if address == self._exit_bp or m.dos.exited:
                return self._exited()
            ids = [bp for bp, a in self.breakpoints.items() if a == address]
            return self._stopped("breakpoint", breakpoint_id=ids[0] if ids else None)
        if m.dos.exited:
            return self._exited()
        return self._stopped("pause")

    def _run_to(self, cs, ip, ss, sp, max_seconds):
        """Run until CS:IP with SS:SP at or above ``sp`` (a temporary
        breakpoint; the session's own are left as they are)."""
        m = self.machine
        xflags = m.memory.xflags
        target = ((cs << 4) + ip) & 0xFFFFF
        had = xflags[target] & S.XF_BREAKPOINT
        xflags[target] |= S.XF_BREAKPOINT
        end = m.clock() + int(max_seconds * CPU_HZ)
        try:
            while True:
                left = max(1, end - m.clock()) / CPU_HZ
                stop = self.resume(max_seconds=left)
                r = m.cpu.r
                at_target = (stop["kind"] in ("breakpoint",) and m.cpu.pc == target
                             and r.cs == cs and r.ss == ss and r.sp >= sp)
                if at_target:
                    ids = stop.get("breakpoint_id")
                    return self._stopped("step") if ids is None else stop
                if stop["kind"] == "breakpoint" and stop.get("breakpoint_id") is None \
                        and m.cpu.pc == target and m.clock() < end:
                    continue                  # the same place deeper in the stack
                return stop
        finally:
            if not had:
                xflags[target] &= ~S.XF_BREAKPOINT & 0xFF

    def stop(self):
        """End the program (as a Ctrl-Break would, level by level, back to
        the DOS) unless it has ended; returns the ``program_exit`` stop."""
        if self.state == "exited":
            return dict(self.last_stop)
        if self.machine is None or self.state == "failed":
            self.state = "exited"
            self.last_stop = {"kind": "program_exit", "exit_code": None, "forced": True}
            return dict(self.last_stop)
        from ..cpu.registers import Registers
        from .kernel import TERM_CTRL_C
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
        """Keep the whole machine (CPU, memory, devices, the DOS's state) and
        the session's breakpoints in memory; returns its id ("cp-N").  Host
        files the program wrote are not part of it."""
        self._require_settled()
        cp = f"cp-{self._next_cp}"
        self._next_cp += 1
        self.checkpoints[cp] = (self.machine.get_state(), self.state, dict(self.last_stop),
                                dict(self.breakpoints))
        return cp

    def restore(self, cp):
        """Go back to checkpoint ``cp`` exactly: a run from it repeats the
        original cycle for cycle."""
        if cp not in self.checkpoints:
            raise SessionError(f"no checkpoint {cp!r}", "CHECKPOINT_NOT_FOUND")
        state, session_state, last_stop, breakpoints = self.checkpoints[cp]
        xflags = self.machine.memory.xflags
        for address in self.breakpoints.values():
            xflags[address] &= ~S.XF_BREAKPOINT & 0xFF
        self.machine.set_state(state)
        self.breakpoints = dict(breakpoints)
        for address in self.breakpoints.values():
            xflags[address] |= S.XF_BREAKPOINT
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

    def _skip_breakpoint_here(self):
        cpu = self.machine.cpu
        if self.machine.memory.xflags[cpu.pc] & S.XF_BREAKPOINT:
            cpu.ctl[S.C_SKIP_BP] = 1

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
