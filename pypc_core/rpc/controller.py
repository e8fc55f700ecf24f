"""The machine-thread side of the RPC server.

The :class:`Controller` owns the machine loop.  Socket threads only read,
validate and :meth:`submit` requests; every request runs here, on the thread
that runs the CPU, between two slices of emulated time -- that is, at an
instruction boundary, so what a request sees is coherent.

* Running: the guest runs in short slices (about a millisecond of host
  time each in turbo, one emulated millisecond when paced) and queued
  requests are served between them.
* Paused: the loop blocks on the request queue (with a timeout, so a live
  view can redraw and Ctrl-C is seen).

Execution requests (``execution.continue``/``run_until``/``step``) return an
operation id at once; the operation completes when the machine stops
(breakpoint, predicate, pause, step done), and ``execution.wait`` reports it.

The state revision is the number of executed CPU Ticks (instructions,
interrupt entries, HLT waits) plus the number of successful state changes made
through the RPC (register/memory/port writes, port reads, input batches).
"""

import collections
import json
import os
import queue
import threading
import time
import traceback

from ..cpu import state as S
from ..scheduler import CPU_HZ
from . import params as P
from .errors import (INTERNAL_ERROR, RpcError, invalid, not_found, not_paused,
                     revision_mismatch)
from .fairqueue import FairQueue
from .parts import MACHINE_REPLACED, Parts
from .stops import (contract_stop, cycles_to_ns,
                    resumes_breakpoint_stop)

MAX_OPERATIONS = 256
MAX_REQUEST_IDS = 1024          # completed request_id results kept (the contract's 5.3)
STEP_OVER_MAX_CYCLES = 60 * CPU_HZ      # a step over a call that never returns


def needs_live_target(fn):
    """Mark an RPC method that a session whose program has exited refuses
    (reason TARGET_EXITED): it reads or changes the program's machine.  A
    method group marks its own methods; the controller reads the mark."""
    fn.needs_live_target = True
    return fn

#: set (not "0"), the dispatcher checks every result against its method's
#: schema before replying (PYPC_DEBUG=1 turns it on too); a result that does
#: not match is an INTERNAL_ERROR naming the method and its plugin
VALIDATE_ENV = "PYPC_VALIDATE_RESULTS"
PAUSED_POLL_S = 0.05            # a paused loop returns this often to its caller
TURBO_SLICE_S = 0.001           # host time per running slice (unpaced)
MIN_SLICE = CPU_HZ // 20000     # cycles
MAX_SLICE = CPU_HZ // 10
PACED_SLICE = CPU_HZ // 1000
SERVICE_BUDGET_S = 0.002        # host time for requests between two running slices

_FLAG_TEXT = ((S.F_OF, "o"), (S.F_IF, "I"), (S.F_TF, "T"), (S.F_SF, "s"),
              (S.F_ZF, "z"), (S.F_AF, "a"), (S.F_PF, "p"), (S.F_CF, "c"))
GENERAL = ("ax", "bx", "cx", "dx", "sp", "bp", "si", "di")
SEGMENTS = ("cs", "ds", "es", "ss")


def flags_text(flags):
    return "".join(ch if flags & bit else "-" for bit, ch in _FLAG_TEXT)


class Request:
    """One validated request waiting for the machine thread."""

    __slots__ = ("conn", "id", "notify", "method", "params", "fn", "request_id")

    def __init__(self, conn, rid, notify, method, params, fn, request_id=None):
        self.conn = conn
        self.id = rid
        self.notify = notify
        self.method = method
        self.params = params
        self.fn = fn
        self.request_id = request_id    # params.request_id: a retry key (see _execute)


class Park:
    """A handler's answer "reply later": ``check()`` returns the result once
    it is ready (or None), and ``deadline`` (perf_counter) forces a reply
    with ``timeout_result``."""

    def __init__(self, check, deadline, timeout_result):
        self.check = check
        self.deadline = deadline
        self.timeout_result = timeout_result


class Operation:
    __slots__ = ("id", "kind", "stop", "predicate", "deadline", "requested_ns", "start",
                 "mode", "on_deadline")

    def __init__(self, op_id, kind, predicate=None):
        self.id = op_id
        self.kind = kind                # continue | run_until | step | stop
        self.mode = "into"              # step: into | over
        self.stop = None                # the stop object once done
        self.predicate = predicate      # run_until: the machine breakpoint id
        self.deadline = None            # run_until: the emulated-time limit (cycle)
        self.requested_ns = None
        self.start = None
        self.on_deadline = None         # fn(op) -> the stop at the deadline (a graceful
                                        # session.stop ends the program there)


class Controller:
    """Runs ``machine`` and serves RPC requests between slices.

    :param machine: a built :class:`pypc_core.machine.Machine`.
    :param endpoint: ``"127.0.0.1:PORT"`` for ``agent.capabilities``.
    """

    def __init__(self, machine, endpoint=None):
        self.machine = machine
        self.cpu = machine.cpu
        self.endpoint = endpoint
        self.queue = FairQueue()        # round-robin between connections
        self.running = True
        self.last_stop = None
        self.extra_revision = 0
        self.operations = collections.OrderedDict()
        self.active = None              # the Operation running now (continue/run_until)
        self.pending_step = None        # an accepted step not executed yet
        self.next_op = 1
        self.parked = []                # [(Request, Park)]
        self.pressed = set()            # host-enqueued make codes still held
        self.parts = Parts()            # what the method groups keep (rpc.parts)
        self.bp_meta = {}               # machine breakpoint id -> stops.BreakpointMeta
        self.at_slice_boundary = False  # the last run ended on its budget, not a stop
        self.adopt_hooks = []           # fn(machine) when adopt() replaces the machine
        self.slice = PACED_SLICE
        self.requests_served = 0
        self.stopped = threading.Event()
        self.machine_run_until_cycle = machine.run_loop_until   # the machine's own
        self.schemas = None             # set by the server (rpc.discover)
        self.methods = {}               # {name: fn}: the server's (or a stub's own)
        self.method_names = []
        self.session = None             # the program session.start started (rpc_methods.session)
        self.request_ids = collections.OrderedDict()   # request_id -> (payload, result)
        self.validate_results = validating_results()    # check results against schemas

    # ------------------------------------------------------------------
    # state the method groups share
    # ------------------------------------------------------------------
    @property
    def revision(self):
        return self.cpu.ticks + self.extra_revision

    def bump(self):
        """One successful RPC state change (the revision advances by one)."""
        self.extra_revision += 1

    def registers(self):
        regs = self.cpu.regs
        ix = S.REG_INDEX
        flags = int(regs[S.FLAGS])
        return {
            "general": {n: int(regs[ix[n]]) for n in GENERAL},
            "segments": {n: int(regs[ix[n]]) for n in SEGMENTS},
            "ip": int(regs[S.IP]),
            "flags": flags,
            "flags_text": flags_text(flags),
            "clock": int(self.cpu.ctl[S.C_CYCLES]),
            "in_hlt": bool(self.cpu.ctl[S.C_HALTED]),
            "state_revision": self.revision,
        }

    def call(self, method, params=None):
        """Run the registered RPC method ``method`` here, on the machine
        thread, as a request would run it (its params checked against its
        schema when the server loaded them): for a front end that must act
        as a JSON-RPC client does -- the gdb stub's breakpoints are the
        RPC's, listed by ``breakpoints.list``.  Raises RpcError."""
        params = {} if params is None else params
        fn = self.methods.get(method)
        if fn is None:
            raise invalid(f"no method {method!r} on this server", "METHOD_NOT_FOUND")
        if self.schemas is not None:
            errors = self.schemas.param_errors(method, params)
            if errors:
                raise invalid(f"{method}: {errors[0]}")
        return fn(self, params)

    def check_revision(self, params):
        """The guard of a state change: ``params["expected_state_revision"]``
        must be the revision now (REVISION_MISMATCH otherwise)."""
        expected = P.number(params["expected_state_revision"], "expected_state_revision",
                            0, (1 << 63) - 1)
        if expected != self.revision:
            raise revision_mismatch(expected, self.revision)

    def require_paused(self, method):
        if self.running:
            raise not_paused(method)

    @property
    def state(self):
        return "running" if self.running else "stopped"

    # ------------------------------------------------------------------
    # operations
    # ------------------------------------------------------------------
    def new_operation(self, kind, predicate=None):
        op = Operation(f"op-{self.next_op}", kind, predicate)
        self.next_op += 1
        self.operations[op.id] = op
        while len(self.operations) > MAX_OPERATIONS:
            self.operations.popitem(last=False)
        return op

    def operation(self, op_id):
        op = self.operations.get(op_id)
        if op is None:
            raise not_found(f"no operation {op_id!r} (unknown, or one of more than "
                            f"{MAX_OPERATIONS} older ones)", operation_id=op_id)
        return op

    def busy(self):
        return self.active is not None or self.pending_step is not None

    def resume(self, op):
        """Start running for ``op`` (continue / run_until)."""
        # resuming from an execution/INT breakpoint's stop lets that breakpoint
        # through once; after any other stop one at CS:IP is judged first
        self.at_slice_boundary = not resumes_breakpoint_stop(self)
        self.active = op
        self.running = True
        self.last_stop = None

    def stop_now(self, stop):
        """The machine stops (pause, breakpoint, predicate, step done):
        record ``stop`` and complete the active operation with it."""
        stop = self.exit_stop(stop)
        self.running = False
        self.last_stop = stop
        self.at_slice_boundary = False
        op = self.active
        if op is not None:
            op.stop = stop
            self.active = None
            self._drop_predicate(op)

    def _drop_predicate(self, op):
        if op.predicate is not None:
            self.bp_meta.pop(op.predicate, None)
            try:
                self.machine.breakpoints.remove(op.predicate)
            except Exception:
                pass                        # a one-shot predicate removed itself

    def exit_stop(self, stop):
        """``stop``, or the ``program_exit`` stop when the session's program
        has ended (the DOS's "program ended" loop is where it stopped)."""
        session = self.session
        if session is None or stop.get("kind") == "program_exit" \
                or not self.machine.dos.exited:
            return stop
        session.exited = True
        return self.make_stop("program_exit", exit_code=int(self.machine.dos.exit_code),
                              **session.exit_fields(self))

    def adopt(self, machine):
        """Run ``machine`` from now on instead of the current one (the
        session's program machine): the revision goes on from where it was
        (one more), the RPC's breakpoint descriptors and held keys are
        dropped with the old machine; the new one is stopped."""
        revision = self.revision
        self.machine = machine
        self.cpu = machine.cpu
        self.machine_run_until_cycle = machine.run_loop_until
        self.extra_revision = revision + 1 - self.cpu.ticks
        self.bp_meta.clear()
        self.pressed.clear()
        self.running = False
        self.at_slice_boundary = False
        for hook in self.adopt_hooks:   # (the viewers show the new machine)
            hook(machine)
        # the method groups' journals of the old machine go, the rest adjust
        self.parts.event(MACHINE_REPLACED, self)

    def make_stop(self, kind, **fields):
        stop = {"kind": kind}
        stop.update(fields)
        stop["registers"] = self.registers()
        symbols = getattr(self.machine, "symbols", None)
        if symbols:
            # pypc extension: name+offset of CS:IP from the loaded symbols
            name = self.machine.symbol_at()
            if name is not None:
                stop["symbol"] = name
        return stop

    # ------------------------------------------------------------------
    # requests
    # ------------------------------------------------------------------
    def submit(self, request):
        """Queue ``request`` (any thread)."""
        self.queue.put(request)

    def _execute(self, req):
        self.requests_served += 1
        if req.conn is not None:
            req.conn.done()
        if req.request_id is not None:
            payload = json.dumps([req.method, req.params], sort_keys=True)
            seen = self.request_ids.get(req.request_id)
            if seen is not None:
                if seen[0] != payload:
                    self._reply_error(req, invalid(
                        f"request_id {req.request_id!r} was used before with another "
                        f"method or params", "REQUEST_ID_CONFLICT",
                        request_id=req.request_id).to_json())
                else:
                    self._reply(req, seen[1])      # a retry: the first result, not run again
                return
        session = self.session
        if session is not None and session.exited and getattr(req.fn, "needs_live_target", False):
            self._reply_error(req, invalid(
                f"{req.method}: the program of session {session.id} has exited (exit code "
                f"{session.exit_code}); session.start runs another", "TARGET_EXITED",
                session_id=session.id, state="exited").to_json())
            return
        try:
            result = req.fn(self, req.params)
        except RpcError as exc:
            self._reply_error(req, exc.to_json())
            return
        except Exception as exc:       # a bug in a handler: report it, keep serving
            self._reply_error(req, self.internal_error(req.method, exc))
            return
        if isinstance(result, Park):
            ready = result.check()
            if ready is None:
                self.parked.append((req, result))
                parked = getattr(req.conn, "parked", None)
                if parked is not None:
                    parked()        # its reply may come after later ones (docs/rpc.md)
                return
            result = ready
        self._reply(req, result)

    def _plugin_words(self, method):
        """`` (RPC method group 'video')``: who provides ``method``."""
        pm = getattr(self.machine, "plugin_manager", None)
        owner = pm.owner_of(method) if hasattr(pm, "owner_of") else None
        return "" if owner is None else f" ({owner[0]} {owner[1]!r})"

    def internal_error(self, method, exc, what=None):
        """The INTERNAL_ERROR reply for handler ``method`` failing with
        ``exc``: the message names the method and its plugin; the diagnostics
        ring (``debug.output.read``, source ``rpc``) gets an ``error`` record
        with that message and a ``debug`` record with the traceback on one
        line; ``PYPC_DEBUG=1`` also prints the traceback on stderr."""
        text = what or f"{type(exc).__name__}: {exc}"
        message = " ".join(f"{method} failed{self._plugin_words(method)}: {text}".split())
        ring = self.machine.diagnostics
        record = ring.add("error", message, "rpc")
        if exc is not None:
            ring.add("debug", f"{method} traceback: {traceback_line(exc)}", "rpc")
            if os.environ.get("PYPC_DEBUG"):
                traceback.print_exception(exc)
        return {"code": INTERNAL_ERROR,
                "message": f"{message} (diagnostics record {record['sequence']}, "
                           f"debug.output.read)",
                "data": {"reason": "INTERNAL_ERROR"}}

    def _reply(self, req, result):
        if self.validate_results and self.schemas is not None:
            try:
                errors = self.schemas.result_errors(req.method, result)
            except KeyError:
                errors = []             # a method the schema set does not know
            if errors:
                self._reply_error(req, self.internal_error(
                    req.method, None, f"its result does not match its schema: {errors[0]}"))
                return
        if req.request_id is not None and req.request_id not in self.request_ids:
            self.request_ids[req.request_id] = (
                json.dumps([req.method, req.params], sort_keys=True), result)
            while len(self.request_ids) > MAX_REQUEST_IDS:
                self.request_ids.popitem(last=False)
        if req.notify or req.conn is None:
            return
        req.conn.send_result(req.id, result)

    def _reply_error(self, req, error):
        if req.notify or req.conn is None:
            return
        req.conn.send_error(req.id, error)

    def _check_parked(self):
        if not self.parked:
            return
        now = time.perf_counter()
        keep = []
        for req, park in self.parked:
            try:
                ready = park.check()
            except Exception as exc:       # a bug in a handler: report it, keep serving
                self._reply_error(req, self.internal_error(req.method, exc))
                continue
            if ready is not None:
                self._reply(req, ready)
            elif now >= park.deadline:
                self._reply(req, park.timeout_result)
            else:
                keep.append((req, park))
        self.parked = keep

    def service(self):
        """Serve the queued requests (machine thread).  While the guest runs,
        at most :data:`SERVICE_BUDGET_S` of host time goes to requests
        between two slices, so a request storm slows the guest down but
        never stops it."""
        q = self.queue
        budget_end = time.perf_counter() + SERVICE_BUDGET_S if self.running else None
        while budget_end is None or time.perf_counter() < budget_end:
            try:
                req = q.get_nowait()
            except queue.Empty:
                break
            self._execute(req)
            if self.pending_step is not None:
                self._step()        # before the next request: a wait sees it done
        self._check_parked()

    def _block(self, timeout):
        """Paused: wait up to ``timeout`` s for one request and serve it."""
        if self.parked:
            nearest = min(p.deadline for _, p in self.parked) - time.perf_counter()
            timeout = max(0.0, min(timeout, nearest))
        try:
            req = self.queue.get(timeout=timeout)
        except queue.Empty:
            self._check_parked()
            return
        self._execute(req)
        if self.pending_step is not None:
            self._step()
        self.service()

    # ------------------------------------------------------------------
    # the loop
    # ------------------------------------------------------------------
    def _step(self):
        op = self.pending_step
        self.pending_step = None
        for hook in self.parts.before_run:
            hook(self)
        before = self.cpu.ticks
        m = self.machine
        # an interrupt breakpoint on the INT at CS:IP wins over the step,
        # unless the step resumes from that breakpoint's stop
        early = None if resumes_breakpoint_stop(self) else m.int_breakpoint_at_boundary()
        try:
            if early is not None:
                stop = early
            elif op.mode == "over":
                # a launcher routes the machine's runs through this
                # controller; a step over runs its own loop, unserved
                with m.unrouted():
                    stop = m.step_over(max_cycles=STEP_OVER_MAX_CYCLES)
            else:
                stop = m.step()
        except Exception as exc:                # a device failed during the step
            stop = None
            result = self.make_stop("fault", message=f"{type(exc).__name__}: {exc}")
        if self.cpu.ticks == before and early is None:
            self.extra_revision += 1           # a firmware service is a Tick too
        if stop is not None:
            result = contract_stop(self, stop) or self.make_stop(
                "pause" if stop.kind == "budget" and op.mode == "over" else "step")
        result = self.exit_stop(result)
        self.running = False
        self.last_stop = result
        self.at_slice_boundary = False
        op.stop = result
        for hook in self.parts.after_slice:
            hook(self)

    def _run_slice(self, target):
        m = self.machine
        ctl = self.cpu.ctl
        if self.at_slice_boundary:
            stop = m.breakpoint_at_boundary()
            if stop is not None:
                self.stop_now(contract_stop(self, stop))
                return
        now = int(ctl[S.C_CYCLES])
        n = min(self.slice, target - now)
        op = self.active
        if op is not None and op.deadline is not None:
            n = max(1, min(n, op.deadline - now))
        parts = self.parts
        for hook in parts.limits:
            n = max(1, min(n, hook(self, n)))
        for hook in parts.before_run:
            hook(self)
        t0 = time.perf_counter()
        stop = self.machine_run_until_cycle(now + n)
        elapsed = time.perf_counter() - t0
        result = contract_stop(self, stop)
        for hook in parts.after_slice:
            hook(self)
        if result is not None:
            self.stop_now(result)
            return
        self.at_slice_boundary = True
        if op is not None and op.deadline is not None and m.clock() >= op.deadline:
            self.stop_now((op.on_deadline or self._deadline_stop)(op))
            return
        if stop.kind == "halt":
            # HLT with interrupts off: nothing runs until an NMI; wait for requests
            self._block(0.005)
            return
        if m.scheduler.speed:
            self.slice = PACED_SLICE
        elif elapsed > 0:
            want = int(self.slice * TURBO_SLICE_S / elapsed)
            self.slice = max(MIN_SLICE, min(MAX_SLICE, (self.slice + want) // 2))

    def _deadline_stop(self, op):
        now = self.machine.clock()
        start_ns = cycles_to_ns(op.start)
        deadline_ns = start_ns + op.requested_ns
        actual_ns = cycles_to_ns(now)
        return self.make_stop("emulated_time_limit", emulated_time_ns=actual_ns,
                              emulated_time_limit={
                                  "requested_duration_ns": op.requested_ns,
                                  "start_emulated_time_ns": start_ns,
                                  "deadline_emulated_time_ns": deadline_ns,
                                  "actual_stop_emulated_time_ns": actual_ns,
                                  "reached": actual_ns >= deadline_ns,
                                  "overshoot_ns": max(0, actual_ns - deadline_ns)})

    def run_until_cycle(self, target, wall_timeout=PAUSED_POLL_S):
        """Run towards emulated cycle ``target``, serving requests.  Returns
        once ``target`` is reached, or after ``wall_timeout`` host seconds
        while the machine is paused (the caller's loop goes on: redraw,
        timeouts, Ctrl-C)."""
        cpu = self.cpu
        end = None
        while True:
            self.service()
            if self.cpu is not cpu:
                # another machine was adopted (a session's program, a
                # restore): the cycles still to go carry over to its clock
                # (comparing the old machine's clock with ``target`` ran
                # the new one one cycle a slice, for ever)
                left = max(0, target - int(cpu.ctl[S.C_CYCLES]))
                cpu = self.cpu
                target = int(cpu.ctl[S.C_CYCLES]) + left
            if self.pending_step is not None:
                self._step()
                continue
            if self.running:
                if int(cpu.ctl[S.C_CYCLES]) >= target:
                    return
                self._run_slice(target)
                continue
            now = time.perf_counter()
            if end is None:
                end = now + wall_timeout
            if now >= end:
                return
            self._block(end - now)
            for hook in getattr(self.machine, "run_hooks", ()):   # viewers see a paused
                hook()                                              # machine too

    def serve_forever(self, stop_event=None):
        """The machine loop for a machine without a launcher (tests,
        scripts): run and serve until ``stop_event`` is set."""
        stop_event = stop_event or self.stopped
        frame = CPU_HZ // 50
        while not stop_event.is_set():
            self.run_until_cycle(int(self.cpu.ctl[S.C_CYCLES]) + frame)


def validating_results():
    """Whether results are checked against their schemas:
    ``PYPC_VALIDATE_RESULTS`` set (not ``0``) or ``PYPC_DEBUG`` set."""
    return os.environ.get(VALIDATE_ENV, "") not in ("", "0") or bool(os.environ.get("PYPC_DEBUG"))


def traceback_line(exc, limit=12):
    """``exc``'s traceback on one line, innermost frame first:
    ``ZeroDivisionError: ... at mod.py:12 in fn (1 // 0) <- controller.py:290 in _execute``."""
    frames = traceback.extract_tb(exc.__traceback__)[-limit:]
    parts = [f"{os.path.basename(f.filename)}:{f.lineno} in {f.name}"
             + (f" ({f.line.strip()})" if f.line else "") for f in reversed(frames)]
    head = " ".join(f"{type(exc).__name__}: {exc}".split())
    return f"{head} at " + " <- ".join(parts) if parts else head
