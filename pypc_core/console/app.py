"""The Textual application of ``pypc console``.

Every RPC call runs on a worker thread (:class:`DebugSession` is the only
thing that talks to pypc); the UI thread only draws what a worker hands it,
so the console answers keys while the guest runs, while a step runs and while
a stop is awaited.  A watcher thread waits for the execution operation in
progress (``execution.wait`` in 250 ms slices) and redraws every pane when it
stops; besides, the panes are re-read twice a second (the guest runs, or
another client stopped or changed it).
"""

import threading

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer, Input, Static

from ..client import ClientError
from ..errors import PypcError
from .session import REG16, SEGS, CommandError, DebugSession, flags_line

RUNNING_REFRESH_S = 0.5


class Pane(Static):
    def __init__(self, title, **kw):
        super().__init__("", **kw)
        self.border_title = title


class ConsoleApp(App):
    TITLE = "pypc console"
    CSS = """
    Screen { layout: vertical; }
    #top { height: 1fr; }
    #left { width: 88; }
    #right { width: 1fr; }
    Pane { border: round $accent; padding: 0 1; }
    #regs { height: 6; }
    #disasm { height: 1fr; min-height: 10; }
    #memory { height: 10; }
    #screen { height: 27; }
    #bps { height: 1fr; min-height: 4; }
    #stop { height: 3; }
    #trace { height: 1fr; min-height: 4; }
    #message { height: 1; padding: 0 1; }
    #cmd { height: 3; }
    """
    BINDINGS = [
        Binding("f8", "step", "Step"),
        Binding("f10", "step_over", "Over"),
        Binding("f5", "go", "Go"),
        Binding("f6", "pause", "Pause"),
        Binding("f4", "run_to_cursor", "To cursor"),
        Binding("f9", "toggle_breakpoint", "Toggle bp"),
        Binding("ctrl+g", "prompt('u ')", "Go to addr"),
        Binding("ctrl+e", "prompt_edit", "Edit mem"),
        Binding("ctrl+r", "prompt('r ')", "Edit reg"),
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("ctrl+q", "quit", "Quit"),
    ]

    def __init__(self, session, **kw):
        super().__init__(**kw)
        self.session = session
        self.view = None
        self.messages = []
        self._watching = threading.Lock()
        self._busy = threading.Lock()

    def compose(self) -> ComposeResult:
        with Horizontal(id="top"):
            with Vertical(id="left"):
                yield Pane("registers", id="regs")
                yield Pane("disassembly", id="disasm")
                yield Pane("memory", id="memory")
            with Vertical(id="right"):
                yield Pane("screen", id="screen")
                yield Pane("breakpoints", id="bps")
                yield Pane("stop", id="stop")
                yield Pane("trace", id="trace")
        yield Static("", id="message")
        yield Input(placeholder="command: t  p  g [addr]  bp addr  bc id  d addr  u addr  "
                                "r ax=5  e addr bytes  trace n  pause  ?", id="cmd")
        yield Footer()

    def on_mount(self):
        self.query_one("#cmd", Input).focus()
        self.run_job(None)
        self.set_interval(RUNNING_REFRESH_S, self._refresh_if_running)

    # -- jobs on worker threads ---------------------------------------------------
    def run_job(self, fn, *args):
        """``fn(*args)`` on a worker thread, then every pane re-read."""
        self.run_worker(lambda: self._job(fn, args), thread=True, group="job")

    def _job(self, fn, args):
        with self._busy:
            msg = None
            if fn is not None:
                try:
                    msg = fn(*args)
                except CommandError as exc:
                    msg = f"error: {exc}"
                except Exception as exc:            # a lost connection, a bad reply
                    msg = f"error: {type(exc).__name__}: {exc}"
            self._read_and_show(msg)
        if self.session.quit:
            self.call_from_thread(self.exit)
            return
        if self.session.operation is not None:
            self._start_watcher()

    def _read_and_show(self, msg):
        try:
            view = self.session.snapshot()
        except Exception as exc:
            view = None
            msg = f"{msg + ' -- ' if msg else ''}cannot read the machine: {exc}"
        self.call_from_thread(self.show, view, msg)

    def _start_watcher(self):
        if self._watching.acquire(blocking=False):
            self.run_worker(self._watch, thread=True, group="watch")

    def _watch(self):
        try:
            while self.session.operation is not None and not self.session.quit:
                try:
                    stop = self.session.wait_stop(250)
                except Exception as exc:
                    self.call_from_thread(self.show, None, f"error: {exc}")
                    return
                if stop is not None:
                    with self._busy:
                        self._read_and_show(f"stopped: {stop}")
                    return
        finally:
            self._watching.release()

    def _refresh_if_running(self):
        """Re-read the panes (the guest runs, or another client may stop or
        change it) unless a job is reading them already."""
        if self.view is not None and not self._busy.locked():
            self.run_worker(self._refresh_running, thread=True, group="refresh",
                            exclusive=True)

    def _refresh_running(self):
        if self._busy.acquire(blocking=False):
            try:
                self._read_and_show(None)
            finally:
                self._busy.release()

    # -- drawing (UI thread) ----------------------------------------------------------
    def show(self, view, msg):
        if msg:
            self.query_one("#message", Static).update(Text(msg))
            self.messages.append(msg)
        if view is None:
            return
        self.view = view
        self.query_one("#regs", Pane).update(render_registers(view))
        self.query_one("#disasm", Pane).update(render_disasm(view, self.session.cursor))
        self.query_one("#memory", Pane).update(render_memory(view))
        self.query_one("#screen", Pane).update(Text("\n".join(view.screen)))
        self.query_one("#bps", Pane).update(Text("\n".join(view.breakpoints) or
                                                 "none (F9 or bp SSSS:OOOO)"))
        self.query_one("#stop", Pane).update(Text(view.stop))
        self.query_one("#trace", Pane).update(Text("\n".join(view.trace) or
                                                   "off (trace N records N instructions)"))

    # -- actions ------------------------------------------------------------------------
    def on_input_submitted(self, event):
        line = event.value.strip()
        event.input.value = ""
        if line:
            self.run_job(self.session.command, line)

    def action_step(self):
        self.run_job(self.session.step)

    def action_step_over(self):
        self.run_job(self.session.step_over)

    def action_go(self):
        self.run_job(self.session.go)

    def action_pause(self):
        self.run_job(self.session.pause)

    def action_run_to_cursor(self):
        self.run_job(lambda: self.session.run_to(*self.session.cursor_address()))

    def action_toggle_breakpoint(self):
        self.run_job(lambda: self.session.toggle_breakpoint(*self.session.cursor_address()))

    def action_cursor(self, delta):
        self.session.move_cursor(int(delta))
        if self.view is not None:
            self.query_one("#disasm", Pane).update(render_disasm(self.view,
                                                                 self.session.cursor))

    def action_prompt(self, text):
        box = self.query_one("#cmd", Input)
        box.value = text
        box.cursor_position = len(text)
        box.focus()

    def action_prompt_edit(self):
        seg, off = self.session.dump_at or (0, 0)
        self.action_prompt(f"e {seg:04X}:{off:04X} ")


def render_registers(view):
    r = view.registers
    if r is None:
        return Text("")
    g, s = r.general, r.segments
    line1 = "  ".join(f"{n.upper()}={getattr(g, n):04X}" for n in REG16[:4])
    line2 = "  ".join(f"{n.upper()}={getattr(g, n):04X}" for n in REG16[4:])
    line3 = "  ".join(f"{n.upper()}={getattr(s, n):04X}" for n in SEGS) + f"  IP={r.ip:04X}"
    line4 = f"{flags_line(r.flags)}   rev {r.state_revision}" + ("  HLT" if r.in_hlt else "")
    return Text("\n".join((line1, line2, line3, line4)))


def render_disasm(view, cursor):
    out = Text()
    for i, (seg, ip, hexbytes, text, current, bp) in enumerate(view.disasm):
        mark = ("*" if bp else " ") + (">" if current else " ")
        line = f"{mark} {seg:04X}:{ip:04X}  {hexbytes:<12} {text}"
        style = ""
        if current:
            style = "bold yellow"
        if bp:
            style += " red" if not current else ""
        if i == cursor:
            style += " reverse"
        out.append(line + "\n", style=style.strip() or None)
    return out


def render_memory(view):
    seg, off = view.dump_address
    lines = []
    for row in range(0, len(view.dump), 16):
        chunk = view.dump[row:row + 16]
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        linear = ((seg << 4) + off + row) & 0xFFFFF
        lines.append(f"{seg:04X}:{(off + row) & 0xFFFF:04X} {linear:05X}  "
                     f"{chunk.hex(' ').upper():<47}  {text}")
    return Text("\n".join(lines))


def run(port=None, run_args=(), socket_path=None, token=None):
    """``pypc console``: attach to ``port`` (or the Unix socket
    ``socket_path``; ``token`` for a server with --rpc-token-file) or start a
    pypc with ``run_args``."""
    from ..client import Client
    spawned = None
    if port is None and socket_path is None:
        from ..spawn import SpawnedPypc
        spawned = SpawnedPypc(list(run_args))
        port, socket_path = spawned.port, spawned.socket_path
    try:
        session = DebugSession(client=Client(port=port or 2301, timeout=30,
                                             socket_path=socket_path, token=token))
    except ClientError as exc:
        if spawned is not None:
            spawned.close()
        raise PypcError(f"pypc console: {exc}") from None
    except BaseException:
        if spawned is not None:
            spawned.close()
        raise
    try:
        ConsoleApp(session).run()
    finally:
        session.close()
        if spawned is not None:
            spawned.close()
    return 0
