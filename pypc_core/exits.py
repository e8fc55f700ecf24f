"""How the machine answers the core's exits (port I/O, interrupt acknowledge,
firmware traps) and turns the others into stops (breakpoints, watches,
halts, faults): a mixin of :class:`pypc_core.machine.Machine`, whose run
loop (``Machine.run_loop_until``) calls it."""

import os

from .cpu import state as S
from .debugger import Stop
from .machine_errors import DeviceFault, MachineError

_PREFIXES = frozenset((0x26, 0x2E, 0x36, 0x3E, 0xF0, 0xF1, 0xF2, 0xF3))


def int_at(mem, cs, ip):
    """The INT number of the instruction at CS:IP (after prefixes), or None."""
    def byte(n):
        return int(mem[((cs << 4) + ((ip + n) & 0xFFFF)) & 0xFFFFF])
    k = 0
    while k < 16 and byte(k) in _PREFIXES:
        k += 1
    op = byte(k)
    if op == 0xCC:
        return 3
    if op == 0xCD:
        return byte(k + 1)
    if op == 0xCE:
        return 4
    return None


class ExitHandling:
    """Exit service and stops; the Machine's state is its own."""

    def _service_exit(self, reason):
        """Answer an exit that Python completes (port I/O, interrupt
        acknowledge, firmware trap).  Returns False for the exits that stop
        a run (breakpoint, watch, step, halt, fault)."""
        cpu = self.cpu
        ctl = cpu.ctl
        if reason == S.EXIT_IO_OUT:
            try:
                # (ctl.item: a Python int, half the cost of int(ctl[i]))
                self.ports.write(ctl.item(S.C_EXIT_PORT), ctl.item(S.C_EXIT_VALUE),
                                 ctl.item(S.C_EXIT_WIDTH))
            except Exception as exc:
                raise self._port_fault(exc, "out") from exc
        elif reason == S.EXIT_IO_IN:
            try:
                value = self.ports.read(ctl.item(S.C_EXIT_PORT), ctl.item(S.C_EXIT_WIDTH))
            except Exception as exc:
                raise self._port_fault(exc, "in") from exc
            cpu.answer_in(value)
        elif reason == S.EXIT_IRQ:
            # (the PIC marks the CPU-answered ports stale itself)
            if self.pic.intr_pending():
                vector = self.pic.acknowledge()
                irq = (vector - self.pic.vector_base) & 0xFF
                if self.trace.active:
                    self.trace.record_dispatch(irq, vector)
                cpu.interrupt(vector)
                self.interrupts_taken += 1
                self._irq_taken = irq
            else:
                self._set_intr(False)
        elif reason == S.EXIT_TRAP:
            # the BIOS reaches devices only through the port map, which marks
            # what it changes
            if not self.bios.on_trap(ctl.item(S.C_EXIT_VALUE)) and self.dos is not None:
                self.dos.on_trap(ctl.item(S.C_EXIT_VALUE))
        else:
            return False
        return True

    def _port_fault(self, exc, direction):
        """The :class:`DeviceFault` for ``exc``, raised by the handler of the
        port of the pending IN or OUT exit.  An OUT exits after it executed,
        so the instruction's address is found back from its encoding (E6/E7
        ib, or EE/EF with DX); an IN has not executed (CS:IP is the IN)."""
        ctl, regs, mem = self.cpu.ctl, self.cpu.regs, self.memory.mem
        port, width = int(ctl[S.C_EXIT_PORT]), int(ctl[S.C_EXIT_WIDTH])
        cs, ip = int(regs[S.CS]), int(regs[S.IP])
        at = "at"
        if direction == "out":
            def byte(offset):
                return int(mem[((cs << 4) + ((ip - offset) & 0xFFFF)) & 0xFFFFF])
            wide = width == 2
            if byte(2) == (0xE7 if wide else 0xE6) and byte(1) == port:
                ip = (ip - 2) & 0xFFFF
            elif byte(1) == (0xEF if wide else 0xEE) and int(regs[S.DX]) == port:
                ip = (ip - 1) & 0xFFFF
            else:
                at = "just before"      # the code changed under the OUT
        owner = self.ports.owner(port) or self.ports.owner(port + 1) or "?"
        plugin = getattr(self, "device_plugins", {}).get(owner)
        who = f"device {owner!r}" if plugin is None else (
            f"plugin {plugin!r}" + ("" if owner == plugin else f" (card {owner})"))
        access = f"{direction.upper()} {port:04X}h"
        if direction == "out":
            value = int(ctl[S.C_EXIT_VALUE]) & (0xFFFF if width == 2 else 0xFF)
            access += f" ({value:0{2 * width}X}h)"
        message = (f"{who} failed in its port handler on the guest's {access} {at} "
                   f"{cs:04X}:{ip:04X}: {type(exc).__name__}: {exc}")
        return DeviceFault(" ".join(message.split()), device=owner, plugin=plugin,
                           port=port, direction=direction, width=width, cs=cs, ip=ip)

    def _device_fault(self, fault):
        """Stop on a :class:`DeviceFault` (or raise it: see
        :attr:`raise_device_faults`)."""
        self.device_fault = fault
        self.note("error", f"fault stop: {fault}")
        if self.raise_device_faults:
            raise fault                 # (its catcher prints the traceback)
        if os.environ.get("PYPC_DEBUG"):
            import traceback
            traceback.print_exception(fault.__cause__ or fault)
        return self._stop("fault", detail=dict(fault.detail))

    # -- breakpoints at a slice boundary ---------------------------------------
    def breakpoint_at_boundary(self):
        """Before a run continues at the CS:IP where the last *slice* (not a
        stop) ended: ``run_until_cycle`` lets the execution or INT
        breakpoint at CS:IP through once, which is right when resuming from
        that breakpoint's stop but would miss a hit at a slice boundary.
        Judge that breakpoint here instead, as the core would have; returns
        the Stop, or None."""
        pc = self.cpu.pc
        if self.memory.xflags[pc] & S.XF_BREAKPOINT:
            stop = self._handle_exit(S.EXIT_BREAKPOINT)
            if stop is not None:
                return stop
        stop = self.int_breakpoint_at_boundary()
        if stop is None:
            # judged here (a suppressed match counted): the run that follows
            # must not judge the same pass again
            self._resume_pc = pc
        return stop

    def int_breakpoint_at_boundary(self):
        """The software-interrupt half of :meth:`breakpoint_at_boundary`:
        the Stop of an interrupt breakpoint that the INT instruction at
        CS:IP hits, or None.  A step runs it first, as a memory or interrupt
        breakpoint in the step's Tick wins over the step (COMPAT
        Execution)."""
        cpu = self.cpu
        ctl = cpu.ctl
        if any(ctl[S.C_INT_MASK + i] for i in range(4)):
            number = int_at(self.memory.mem, int(cpu.regs[S.CS]), int(cpu.regs[S.IP]))
            if number is not None and (int(ctl[S.C_INT_MASK + (number >> 6)]) >> (number & 63)) & 1:
                if number == 4 and not cpu.regs[S.FLAGS] & S.F_OF:
                    return None
                ctl[S.C_EXIT_VALUE] = number
                return self._handle_exit(S.EXIT_INT_BREAK)
        return None

    def record_stop(self, kind, **fields):
        """The Stop of ``kind`` at the present CS:IP and clock, recorded as
        the last stop (``pypc run --bare`` ends a run that met no stop with
        a ``budget`` one)."""
        return self._stop(kind, **fields)

    # -- the one run loop --------------------------------------------------------
    def _stop(self, kind, **fields):
        r = self.cpu.regs
        stop = Stop(kind, self.clock(), cs=int(r[S.CS]), ip=int(r[S.IP]), **fields)
        self.last_stop = stop
        # resuming from a stop (not from the end of a budget slice) steps
        # past a breakpoint at CS:IP, as debuggers do
        self._resume_pc = None if kind == "budget" else stop.linear
        return stop

    def _handle_exit(self, reason):
        """Deal with one exit of the core.  Returns None to go on running,
        or the Stop that ends the run."""
        cpu = self.cpu
        ctl = cpu.ctl
        if reason == S.EXIT_IO_IN or reason == S.EXIT_IO_OUT:
            if not self.breakpoints.io_armed:
                try:
                    self._service_exit(reason)
                except DeviceFault as fault:
                    return self._device_fault(fault)
                return None
            port, width = int(ctl[S.C_EXIT_PORT]), int(ctl[S.C_EXIT_WIDTH])
            cs, ip = int(cpu.regs[S.CS]), int(cpu.regs[S.IP])
            try:
                self._service_exit(reason)
            except DeviceFault as fault:
                return self._device_fault(fault)
            if reason == S.EXIT_IO_IN:
                value, direction = int(ctl[S.C_IO_VALUE]), "read"
            else:
                value, direction = int(ctl[S.C_EXIT_VALUE]), "write"
            bp = self._match_io(port, width, direction)
            if bp is None:
                return None
            if reason == S.EXIT_IO_IN:
                # the stop comes after the access: finish the IN first
                saved = int(ctl[S.C_STEP])
                ctl[S.C_STEP] = 1
                cpu.run(self.clock() + (1 << 40))
                ctl[S.C_STEP] = max(0, saved - 1)
            else:
                # an OUT exits after it executed; cs:ip above is the next one
                cs, ip = -1, -1
            return self._bp_stop(bp, access={
                "space": "io", "kind": direction, "address": port, "width": width,
                "value": value, "old": None, "cs": cs, "ip": ip})
        if reason == S.EXIT_IRQ:
            self._irq_taken = None
            self._service_exit(reason)
            irq = self._irq_taken
            if irq is None or not self.breakpoints.irq_armed:
                return None
            for bp in self.breakpoints.all():
                if bp.kind == "irq" and bp.address == irq and bp.matches(cpu.regs, self.memory.mem):
                    return self._bp_stop(bp, interrupt={"number": irq, "source": "irq"})
            return None
        if reason == S.EXIT_TRAP:
            self._service_exit(reason)
            return None
        if reason == S.EXIT_BREAKPOINT:
            pc = cpu.pc
            mine = [bp for bp in self.breakpoints.all()
                    if bp.kind == "exec" and bp.address == pc and bp.enabled]
            if not mine:
                # a flag set outside the table (kept for old callers)
                stop = self._stop("breakpoint", detail={"address": pc})
                self._resume_pc = pc
                return stop
            hit = None
            for bp in sorted(mine, key=lambda b: b.internal):
                if bp.matches(cpu.regs, self.memory.mem) and hit is None:
                    hit = bp
            if hit is None:
                ctl[S.C_SKIP_BP] = 1
                return None
            stop = self._bp_stop(hit)
            self._resume_pc = pc
            return stop
        if reason == S.EXIT_INT_BREAK:
            number = int(ctl[S.C_EXIT_VALUE])
            regs = cpu.regs
            ah, al = int(regs[S.AX]) >> 8, int(regs[S.AX]) & 0xFF
            for bp in sorted(self.breakpoints.all(), key=lambda b: b.internal):
                if (bp.kind == "int" and bp.address == number and bp.enabled
                        and (bp.ah is None or bp.ah == ah) and (bp.al is None or bp.al == al)
                        and bp.matches(regs, self.memory.mem)):
                    stop = self._bp_stop(bp, interrupt={"number": number, "ah": ah, "al": al,
                                                        "source": "int",
                                                        "phase": "before_handler"})
                    self._resume_pc = cpu.pc
                    return stop
            ctl[S.C_SKIP_INT] = 1
            return None
        if reason == S.EXIT_WATCH:
            access = {"space": "memory", "kind": "read" if ctl[S.C_WATCH_KIND] == 1 else "write",
                      "address": int(ctl[S.C_WATCH_HIT]), "width": 1,
                      "value": int(ctl[S.C_WATCH_VALUE]), "old": int(ctl[S.C_WATCH_OLD]),
                      "cs": int(ctl[S.C_WATCH_CS]), "ip": int(ctl[S.C_WATCH_IP])}
            ctl[S.C_WATCH_KIND] = 0
            if access["kind"] == "read":
                access["old"] = access["value"]
            wanted = ("mem_read", "mem_access") if access["kind"] == "read" else \
                ("mem_write", "mem_access")
            mine = [bp for bp in self.breakpoints.all()
                    if bp.kind in wanted and bp.enabled
                    and bp.covers(access["address"], access["address"])]
            if not mine:
                if any(bp.kind.startswith("mem_") for bp in self.breakpoints.all()):
                    return None         # the other direction of an armed byte
                return self._stop("breakpoint", access=access, detail=dict(access))
            for bp in sorted(mine, key=lambda b: b.internal):
                if bp.matches(cpu.regs, self.memory.mem):
                    return self._bp_stop(bp, access=access)
            return None
        if reason == S.EXIT_HALT:
            if not cpu.regs[S.FLAGS] & S.F_IF and not ctl[S.C_NMI]:
                return self._stop("halt")
            return None
        if reason == S.EXIT_STEP:
            return self._stop("step")
        if reason == S.EXIT_FAULT:
            op = int(ctl[S.C_EXIT_VALUE])
            message = (f"the core has no decoder for opcode {op:02X}h "
                       f"at {int(cpu.regs[S.CS]):04X}:{int(cpu.regs[S.IP]):04X}")
            self.note("error", f"fault stop: {message}")
            return self._stop("fault", detail={"opcode": op, "message": message})
        raise MachineError(f"unexpected CPU exit {reason}")

    def _match_io(self, port, width, direction):
        wanted = ("io_read", "io_access") if direction == "read" else ("io_write", "io_access")
        for bp in sorted(self.breakpoints.all(), key=lambda b: b.internal):
            if (bp.kind in wanted and bp.enabled and bp.covers(port, port + width - 1)
                    and bp.matches(self.cpu.regs, self.memory.mem)):
                return bp
        return None

    def _bp_stop(self, bp, **fields):
        if bp.oneshot:
            self.breakpoints.discard(bp)
        # (internal breakpoints are removed by the run that placed them)
        return self._stop(bp.stop_kind or "breakpoint", breakpoint=bp, **fields)

    def _arm_resume(self, always=False):
        """Resuming from a stop at CS:IP lets an execution or INT
        breakpoint there through once, so the stop does not repeat at once
        (as debuggers step past a breakpoint at the PC).  A run that merely
        begins where a budget slice ended still stops at a breakpoint there.
        A step (``always``) always executes the instruction at CS:IP."""
        cpu = self.cpu
        ctl = cpu.ctl
        pc = cpu.pc
        resuming = always or self._resume_pc == pc
        self._resume_pc = None
        ctl[S.C_SKIP_BP] = 1 if resuming and self.memory.xflags[pc] & S.XF_BREAKPOINT else 0
        ctl[S.C_SKIP_INT] = 0
        if resuming and any(ctl[S.C_INT_MASK + i] for i in range(4)):
            cs, ip = int(cpu.regs[S.CS]), int(cpu.regs[S.IP])
            code = self.memory.mem
            k = 0
            while k < 16 and int(code[((cs << 4) + ((ip + k) & 0xFFFF)) & 0xFFFFF]) in _PREFIXES:
                k += 1
            op = int(code[((cs << 4) + ((ip + k) & 0xFFFF)) & 0xFFFFF])
            if op in (0xCC, 0xCD, 0xCE):
                ctl[S.C_SKIP_INT] = 1

    def _after_run(self, pc_before):
        # a skip that was not used (an interrupt came first) must not let a
        # later breakpoint through
        cpu = self.cpu
        if cpu.pc != pc_before:
            cpu.ctl[S.C_SKIP_BP] = 0
            cpu.ctl[S.C_SKIP_INT] = 0
        for hook in self.run_hooks:
            hook()
