"""Method group ``session``: ``session.status``, ``session.start`` and
``session.stop``.

Without ``session.start`` the server has one implicit session, ``pypc``:
the machine it was started with.  ``session.start`` builds a new machine
with the built-in BIOS and DOS for one program (``pypc_core.dos_session.
DosSession``), stopped on the program's first instruction (stop kind
``startup``), and the controller runs that machine from then on (the
previous one is left alone; a previous session's machine is closed).  The
session is ``ses-N``; CPU, hardware and DOS traces, video histories and
retained video snapshots of the previous machine end with it.  Its
program's end, on its own or forced by
``session.stop``, is a ``program_exit`` stop with the exit code (and
``forced`` when ``session.stop`` ended it: true at once or after its
graceful timeout, false when the program ended on the Ctrl-Break a graceful
stop typed); after it,
methods that need a live program answer ``TARGET_EXITED`` until
``checkpoints.restore`` goes back before the end or ``session.start`` runs
another program.  A second ``session.start`` while a program has not
exited is ``SESSION_BUSY`` and changes nothing.

Bad input is refused before any machine exists, with nothing written:
``PROGRAM_NOT_FOUND``, ``NOT_EXECUTABLE`` (not .COM/.EXE/.BAT),
``BAD_EXECUTABLE`` (a corrupt MZ header, too big), ``PATH_OUTSIDE_MOUNT``
(``..`` above the mount's root, or a link leading out of it),
``INVALID_PARAMS`` (a mount that is not a folder, a drive given twice).

An unknown ``session_id`` (not ``pypc``, not the current session: a
previous session's id is unknown once another started) is
``SESSION_NOT_FOUND``, as is ``session.stop`` without a started program.

``session.stop`` with ``graceful_timeout_ms`` (1..60000) asks first, as a
DOS user would: it types Ctrl-Break (Ctrl + Scroll Lock) through the
keyboard's typist -- the BIOS calls INT 1Bh and leaves 0000h in its buffer,
which the built-in DOS reads as Ctrl-C at the program's next console read
and answers with INT 23h (the program's handler, or the DOS's, which ends
the program) -- and lets the machine run until the program ends or the
timeout passes in *emulated* time; then it is ended by force.  The stop is
an operation like ``execution.continue``: the session is ``running``,
``execution.pause`` or a breakpoint ends it (the program goes on living),
and a stop requested while another operation runs rides on that operation
(both end with the same stop)."""

import os
import re

from pypc_core import hookimpl
from pypc_core.dos.errors import LoadError
from pypc_core.dos_session import DosSession
from pypc_core.errors import PypcError
from pypc_core.rpc import params as P
from pypc_core.rpc.errors import invalid
from pypc_core.rpc.parts import Counter
from pypc_core.rpc.stops import cycles_to_ns, ns_to_cycles, segmented
from pypc_core.scancodes import BREAK, CTRL


class SessionIds(Counter):
    """ses-N ids, never reused in a server's life (a controller part)."""


SESSION_ID = "pypc"
PROGRAM_EXTENSIONS = (".COM", ".EXE", ".BAT")
START_SECONDS = 5.0             # emulated time the DOS gets to reach the entry point
MAX_GRACEFUL_MS = 60000         # session.stop graceful_timeout_ms: 0..this (0 = at once)
SCROLL_LOCK = 0x46
CTRL_BREAK = [CTRL, SCROLL_LOCK, SCROLL_LOCK | BREAK, CTRL | BREAK]   # what the user presses


class ProgramSession:
    """The program ``session.start`` started (``ctl.session``)."""

    def __init__(self, sid, dos_session, command, arguments, mounts):
        self.id = sid
        self.dos_session = dos_session
        self.command = command
        self.arguments = list(arguments)
        self.mounts = dict(mounts)
        self.exited = False
        self.stopping = None            # the operation a graceful session.stop runs on
        self.graceful_deadline = None   # ... and the emulated cycle it ends the program at

    def exit_fields(self, ctl):
        """Fields the controller adds to the program's ``program_exit`` stop:
        ``forced: false`` when it ended during a graceful ``session.stop``."""
        if self.stopping is not None and self.stopping is ctl.active:
            return {"forced": False}
        return {}

    @property
    def machine(self):
        return self.dos_session.machine

    @property
    def exit_code(self):
        return int(self.machine.dos.exit_code) if self.exited else None

    def target(self):
        return {"command": self.command, "arguments": list(self.arguments),
                "mounts": [{"drive": k, "host_path": v} for k, v in sorted(self.mounts.items())]}


def _check_id(ctl, params, method):
    if "session_id" not in params:
        return
    sid = params["session_id"]
    known = {SESSION_ID} | ({ctl.session.id} if ctl.session is not None else set())
    if sid not in known:
        current = ctl.session.id if ctl.session is not None else SESSION_ID
        raise invalid(f"{method}: no session {sid!r} (the current one is {current!r})",
                      "SESSION_NOT_FOUND", field="session_id", session_id=sid)


def status(ctl, params):
    _check_id(ctl, params, "session.status")
    video = ctl.machine.video
    session = ctl.session
    out = {
        "session_id": session.id if session is not None else SESSION_ID,
        "state": "exited" if session is not None and session.exited else ctl.state,
        "state_revision": ctl.revision,
        "clock": ctl.machine.clock(),
        "target": {"cpu": "8088", "memory_bytes": 1 << 20,
                   "video": video.adapter if video is not None else "none"},
        "last_stop": ctl.last_stop,
    }
    if session is not None:
        out["target"].update(session.target())
        if session.exited:
            out["exit_code"] = session.exit_code
    return out


def _mounts(params):
    mounts = {}
    for i, m in enumerate(params["mounts"]):
        letter = m["drive"].upper()
        if letter in mounts:
            raise invalid(f"mounts: drive {letter}: is given twice", field=f"mounts[{i}]")
        folder = os.path.abspath(m["host_path"])
        if not os.path.isdir(folder):
            raise invalid(f"mounts: {m['host_path']!r} (drive {letter}:) is not a folder",
                          field=f"mounts[{i}].host_path")
        mounts[letter] = folder
    return mounts


def _dos_path(command, mounts):
    """``command`` as a DOS path on a mount (a bare name is on C:, or on the
    first mounted drive without C:), checked before the DOS sees it."""
    m = re.match(r"^([A-Za-z]):(.*)$", command)
    if m:
        letter, rest = m.group(1).upper(), m.group(2)
    else:
        letter, rest = ("C" if "C" in mounts else min(mounts)), command
    if letter not in mounts:
        raise invalid(f"target.command {command!r}: no drive {letter}: is mounted",
                      "PROGRAM_NOT_FOUND", field="target.command")
    parts = []
    for piece in rest.replace("/", "\\").split("\\"):
        if piece in ("", "."):
            continue
        if piece == "..":
            if not parts:
                raise invalid(f"target.command {command!r}: the path leaves the mounted "
                              f"folder of {letter}:", "PATH_OUTSIDE_MOUNT",
                              field="target.command")
            parts.pop()
            continue
        parts.append(piece)
    if not parts:
        raise invalid(f"target.command {command!r} names a drive, not a program",
                      "PROGRAM_NOT_FOUND", field="target.command")
    root = os.path.realpath(mounts[letter])
    host = os.path.join(mounts[letter], *parts)
    if os.path.lexists(host):
        real = os.path.realpath(host)
        if real != root and not real.startswith(root + os.sep):
            raise invalid(f"target.command {command!r}: a link leads out of the mounted "
                          f"folder of {letter}:", "PATH_OUTSIDE_MOUNT", field="target.command")
    if not parts[-1].upper().endswith(PROGRAM_EXTENSIONS):
        raise invalid(f"target.command {command!r} is not a DOS program (a .COM, .EXE or "
                      f".BAT file)", "NOT_EXECUTABLE", field="target.command")
    return f"{letter}:\\" + "\\".join(parts)


def start(ctl, params):
    current = ctl.session
    if current is not None and not current.exited:
        raise invalid(f"session {current.id} is running {current.command!r}: session.stop "
                      f"it first", "SESSION_BUSY", session_id=current.id, state=ctl.state)
    if ctl.machine.runs_routed:
        raise invalid("session.start: this server runs the machine of a `pypc run` whose "
                      "launcher owns the machine loop (the live view, a DOS program); run "
                      "`pypc run --headless --rpc-port PORT` (or --serve) "
                      "(or serve a machine with pypc_core.rpc.start) for sessions",
                      "UNSUPPORTED")
    if ctl.busy():
        active = ctl.active or ctl.pending_step
        raise invalid(f"session.start: operation {active.id} is still active "
                      f"(execution.pause first)", "TARGET_RUNNING", operation_id=active.id)
    target = params["target"]
    command = target["command"]
    arguments = list(target.get("arguments", []))
    mounts = _mounts(params)
    dos_path = _dos_path(command, mounts)
    old = ctl.machine
    try:
        ds = DosSession(dos_path, arguments, mounts, plugins=list(old.config.plugins),
                        memory_kib=old.config.memory_kib, debug_port=old.config.debug_port)
    except LoadError as exc:
        raise invalid(f"target.command {command!r}: {exc}", "BAD_EXECUTABLE",
                      field="target.command") from None
    except PypcError as exc:
        raise invalid(f"target.command {command!r}: {exc}", "PROGRAM_NOT_FOUND",
                      field="target.command") from None
    stop = ds.start(timeout_s=START_SECONDS)
    if stop["kind"] != "startup":
        console = bytes(ds.machine.dos.console_out).decode("cp437") \
            if ds.machine is not None else ""
        ds.close()
        raise invalid(f"target.command {command!r} did not reach its first instruction "
                      f"({stop['kind']})", "START_FAILED", console=console[-512:])
    sid = f"ses-{ctl.parts.setdefault(SessionIds, SessionIds).take()}"
    ctl.adopt(ds.machine)                   # (the old machine's traces go with it)
    if current is not None:
        current.dos_session.close()
    ctl.session = ProgramSession(sid, ds, command, arguments, mounts)
    ctl.request_ids.clear()                 # request ids live as long as their session
    cpu = ds.machine.cpu
    ctl.last_stop = ctl.make_stop("startup", address=segmented(cpu.r.cs, cpu.r.ip))
    return {"session_id": sid, "state": "stopped", "stop_reason": ctl.last_stop,
            "state_revision": ctl.revision}


def _force(ctl, session):
    """End the program now, as Ctrl-Break would (level by level back to the
    DOS, whatever handlers it installed); returns its ``program_exit`` stop."""
    session.stopping = None
    session.dos_session.stop()
    ctl.bump()
    session.exited = True
    return ctl.make_stop("program_exit", exit_code=session.exit_code, forced=True)


def _graceful(ctl, session, timeout_ms):
    """Type Ctrl-Break and run until the program ends or ``timeout_ms`` of
    emulated time pass (then end it by force).  The operation that runs is
    a new one, or the one already running (a continue, a run_until, an
    earlier graceful stop): the stop's id then names that operation too."""
    now = ctl.machine.clock()
    deadline = ns_to_cycles(cycles_to_ns(now) + timeout_ms * 1_000_000)
    running = ctl.active
    if running is None:
        op = ctl.new_operation("stop")
        op.start, op.requested_ns = now, timeout_ms * 1_000_000
        target = op
    else:
        op = ctl.new_operation("stop")
        ctl.operations[op.id] = running     # one operation under two ids
        target = running
    own_deadline = target.deadline          # a run_until's emulated-time limit
    if session.stopping is target:
        deadline = min(deadline, session.graceful_deadline)    # never later than asked
    else:
        ctl.machine.press_keys(CTRL_BREAK)
        ctl.bump()

    def on_deadline(o):
        if ctl.machine.clock() >= deadline:
            return _force(ctl, session)
        return ctl._deadline_stop(o)        # the run_until's own limit came first

    target.deadline = deadline if own_deadline is None else min(own_deadline, deadline)
    target.on_deadline = on_deadline
    session.stopping = target
    session.graceful_deadline = deadline
    if running is None:
        ctl.resume(target)
    return op


def stop(ctl, params):
    _check_id(ctl, params, "session.stop")
    timeout_ms = 0
    if "graceful_timeout_ms" in params:
        timeout_ms = P.number(params["graceful_timeout_ms"], "graceful_timeout_ms", 0,
                              MAX_GRACEFUL_MS)
    session = ctl.session
    if session is None:
        raise invalid("session.stop: no program session (session.start starts one)",
                      "SESSION_NOT_FOUND", session_id=SESSION_ID)
    if not session.exited and timeout_ms:
        op = _graceful(ctl, session, timeout_ms)
        return {"session_id": session.id, "operation_id": op.id, "state": "running",
                "state_revision": ctl.revision}
    op = ctl.new_operation("stop")
    if not session.exited:
        ctl.stop_now(_force(ctl, session))  # an active operation ends with this stop too
    op.stop = ctl.last_stop
    return {"session_id": session.id, "operation_id": op.id, "state": "exited",
            "state_revision": ctl.revision}


@hookimpl
def pypc_rpc_methods():
    return {"session.status": status, "session.start": start, "session.stop": stop}
