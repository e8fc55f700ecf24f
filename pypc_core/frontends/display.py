"""What the viewers see: copies of the screen that the machine thread
publishes, and the keys they hand back.

Viewers (the telnet and VNC sessions) run on their own threads and never
touch the machine.  The machine thread calls :meth:`Display.service` between
two runs of the CPU (at an instruction boundary, so nothing is half-updated);
only while a viewer is waiting for a picture, and at most
:attr:`Display.interval` seconds of host time apart, it renders the card's
frame and/or text page and publishes them as one immutable
:class:`Snapshot`.  With no viewer connected ``service`` returns at once.

Keys typed in a viewer are queued here and given to the keyboard by the
machine thread in ``service``; the contract allows that only under
``--no-rpc`` (``keyboard=False`` drops them).

A viewer may also ask for the debugger's view (``wait(debug=True)``: the
web view's panes): the registers, the instructions at CS:IP, the machine's
last stop that did not just end a time slice, and the breakpoints, taken on
the machine thread with the picture (:func:`debugger_view`).

The display epoch is carried in every snapshot: a viewer that sees it
change redraws everything.  It is ``(machine generation, machine.display_epoch)``:
the machine's own epoch moves when a snapshot is restored, the generation
when :meth:`Display.follow` moves to another machine (an agent server's
``session.start``), whose own epoch may well equal the old one's.
"""

import collections
import threading
import time

import numpy as np

DEFAULT_INTERVAL_S = 1 / 30       # host seconds between two published pictures
# Share of host time the viewers may take (publishing on the machine thread,
# diffing and encoding on each viewer's thread): an unpaced (turbo) run keeps
# it small, since every millisecond there is one the guest does not run; a
# paced run has idle time to spare.
TURBO_BUDGET = 0.04
PACED_BUDGET = 0.25
DISASSEMBLY_LINES = 8             # instructions from CS:IP in the debugger view
REGISTERS = ("ax", "bx", "cx", "dx", "si", "di", "bp", "sp",
             "cs", "ds", "es", "ss", "ip", "flags")


def render_frame(video):
    """The card's picture as RGB ``uint8[H, W, 3]`` at the mode's native
    resolution: the one place the viewers take pixels from."""
    return np.ascontiguousarray(video.frame(), dtype=np.uint8)


class DisassemblyCache:
    """``DISASSEMBLY_LINES`` instructions from CS:IP as JSON-ready dicts,
    decoded again only when CS:IP or one of the bytes they were decoded
    from has changed (decoding costs milliseconds; a halted or waiting CPU
    sits at one place)."""

    def __init__(self):
        self._key = None                # (cs, ip, linear addresses, their bytes)
        self._lines = None

    def lines(self, machine):
        regs = machine.cpu.r
        cs, ip = regs.cs, regs.ip
        mem = machine.memory.mem
        key = self._key
        if key is not None and key[0] == cs and key[1] == ip and np.array_equal(mem[key[2]],
                                                                                key[3]):
            return self._lines
        insns = machine.disassemble(count=DISASSEMBLY_LINES)
        length = sum(len(insn.bytes) for insn in insns)
        where = ((cs << 4) + ((ip + np.arange(length)) & 0xFFFF)) & 0xFFFFF
        self._key = (cs, ip, where, mem[where].copy())
        self._lines = [{"cs": insn.cs, "ip": insn.ip, "bytes": insn.bytes.hex(),
                        "text": insn.text} for insn in insns]
        return self._lines


def debugger_view(machine, stop, disassembly=None):
    """What a read-only debugger pane shows (machine thread): a JSON-ready
    dict of the registers, ``DISASSEMBLY_LINES`` instructions from CS:IP
    (through ``disassembly``, a :class:`DisassemblyCache`, when given),
    ``stop`` (a :class:`~pypc_core.debugger.Stop` or None), the machine's
    breakpoints (internal stepping helpers left out) and its cycle count."""
    r = machine.cpu.r
    lines = (disassembly or DisassemblyCache()).lines(machine)
    return {"registers": {name: getattr(r, name) for name in REGISTERS},
            "disassembly": lines,
            "last_stop": stop.to_dict() if stop is not None else None,
            "breakpoints": [bp.to_dict() for bp in machine.breakpoints.list()],
            "cycles": machine.clock()}


class Snapshot:
    """One published picture (read-only for viewers).

    ``frame``: RGB ``uint8[H, W, 3]`` at the mode's native resolution (None
    when no viewer asked for it); ``codes``/``attrs``: ``uint8[rows, cols]``
    of the displayed text page (None when not asked for); ``cursor``: the
    card's cursor dict; ``mode``, ``graphics``, ``blink`` (attribute bit 7
    blinks), ``adapter``, ``epoch``, ``seq`` (publication number), ``clock``
    (emulated cycle); ``debug``: :func:`debugger_view`'s dict (None when no
    viewer asked for it)."""

    __slots__ = ("seq", "epoch", "clock", "adapter", "mode", "graphics", "frame",
                 "codes", "attrs", "blink", "cursor", "debug")

    def __init__(self, **fields):
        for name in self.__slots__:
            setattr(self, name, fields.get(name))


def text_arrays(page):
    """(codes, attrs) ``uint8[rows, cols]`` of a ``video.text`` record."""
    cells = page["cells"]
    codes = np.array([[c["code"] for c in row] for row in cells], dtype=np.uint8)
    attrs = np.array([[c["attribute"] for c in row] for row in cells], dtype=np.uint8)
    return codes, attrs


class Display:
    """The exchange between the machine thread and the viewer threads."""

    def __init__(self, machine, keyboard=False, interval=DEFAULT_INTERVAL_S):
        self.machine = machine
        self.keyboard = keyboard
        self.interval = interval
        self._cond = threading.Condition()
        self._snapshot = None
        self._seq = 0
        self._want_frame = 0            # viewers waiting for a frame
        self._want_text = 0             # viewers waiting for text
        self._want_debug = 0            # viewers waiting for the debugger's view
        self.last_stop = None           # the machine's last stop that was not "budget"
        self._disassembly = DisassemblyCache()
        self._urgent = False            # a viewer wants one now (first picture)
        self._next = 0.0                # perf_counter of the next allowed publication
        self._keys = collections.deque()
        self.viewers = 0                # connected sessions (any thread)
        self.published = 0
        self.generation = 0             # machines shown before this one (follow)

    # -- machine thread -----------------------------------------------------
    def service(self):
        """Publish a snapshot if a viewer waits for one and the interval has
        passed; hand queued viewer keys to the keyboard.  Machine thread."""
        stop = getattr(self.machine, "last_stop", None)
        if stop is None or stop.kind != "budget":
            self.last_stop = stop           # (None: a restored state has none)
        if self._keys:
            codes = []
            while self._keys:
                codes.extend(self._keys.popleft())
            if self.keyboard and codes:
                self.machine.press_keys(codes)
        if not (self._want_frame or self._want_text or self._want_debug):
            return
        now = time.perf_counter()
        if not self._urgent and now < self._next:
            return
        self.publish()
        cost = time.perf_counter() - now
        self._next = now + max(self.interval, cost / self.budget())

    def budget(self):
        """The share of host time viewers may use now (see TURBO_BUDGET)."""
        scheduler = getattr(self.machine, "scheduler", None)
        return PACED_BUDGET if getattr(scheduler, "speed", 0) else TURBO_BUDGET

    def pace(self, started, cost):
        """Viewer threads: sleep so that work of ``cost`` host seconds begun
        at ``started`` (perf_counter) stays within the budget."""
        wait = started + cost / self.budget() - time.perf_counter()
        if wait > 0 and not self.closed:
            time.sleep(min(wait, 1.0))

    def publish(self):
        """Render and publish now (machine thread)."""
        m = self.machine
        video = m.video
        want_frame, want_text, want_debug = self._want_frame, self._want_text, self._want_debug
        fields = {"epoch": (self.generation, getattr(m, "display_epoch", 0)),
                  "clock": m.clock()}
        if video is None:
            fields.update(adapter="none", mode="none", graphics=True,
                          frame=np.zeros((200, 640, 3), dtype=np.uint8) if want_frame else None)
        else:
            graphics = bool(video.is_graphics())
            fields.update(adapter=getattr(video, "adapter", "video"),
                          mode=video.mode_name(), graphics=graphics,
                          cursor=video.cursor())
            if want_frame:
                fields["frame"] = render_frame(video)
            if want_text and not graphics:
                fields["codes"], fields["attrs"] = text_arrays(video.text_page())
                fields["blink"] = bool(getattr(video, "blink_enabled", lambda: True)())
        if want_debug:
            fields["debug"] = debugger_view(m, self.last_stop, self._disassembly)
        with self._cond:
            self._seq += 1
            fields["seq"] = self._seq
            self._snapshot = Snapshot(**fields)
            self._urgent = False
            self.published += 1
            self._cond.notify_all()

    def follow(self, machine):
        """Show ``machine`` from now on (machine thread): a new display
        epoch, and a picture at once for the viewers waiting."""
        self._keys.clear()              # typed for the old machine
        self.machine = machine
        self.last_stop = None
        self.generation += 1
        if self._want_frame or self._want_text or self._want_debug:
            self.publish()

    # -- viewer threads -----------------------------------------------------
    def latest(self):
        return self._snapshot

    @property
    def seq(self):
        """The number of the newest published snapshot (0: none yet)."""
        return self._seq

    def wait(self, after_seq, frame=False, text=False, timeout=None, urgent=False,
             debug=False):
        """A snapshot newer than ``after_seq`` that has what the caller needs
        (``frame``, ``text``, ``debug``), or None after ``timeout`` host seconds (or
        when :meth:`close` was called).  Any viewer thread."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            if frame:
                self._want_frame += 1
            if text:
                self._want_text += 1
            if debug:
                self._want_debug += 1
            if urgent:
                self._urgent = True
            try:
                while True:
                    snap = self._snapshot
                    if (snap is not None and snap.seq > after_seq
                            and (not frame or snap.frame is not None)
                            and (not text or snap.codes is not None or snap.graphics)
                            and (not debug or snap.debug is not None)):
                        return snap
                    if self.closed:
                        return None
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        return None
                    self._cond.wait(remaining if remaining is not None else 0.5)
            finally:
                if frame:
                    self._want_frame -= 1
                if text:
                    self._want_text -= 1
                if debug:
                    self._want_debug -= 1

    closed = False

    def close(self):
        with self._cond:
            self.closed = True
            self._cond.notify_all()

    def send_keys(self, codes):
        """Queue scan codes typed in a viewer (dropped unless ``keyboard``).
        Returns True when they will reach the guest."""
        if not self.keyboard or not codes:
            return False
        self._keys.append(list(codes))
        return True
