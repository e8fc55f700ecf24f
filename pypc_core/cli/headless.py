"""Headless runs: the loop every headless run shares (:func:`headless_loop`,
also a ``pypc batch`` job's), a plain headless run and one whose JSON-RPC
controller owns the loop; the text screen printed at the end."""

import sys
import time

from ..errors import PypcError
from ..machine import CPU_HZ
from .signals import StopSignals, interrupted
from .typist import Typist, unescape

FRAME_S = 1 / 60
DEFAULT_HEADLESS_TIMEOUT_S = 60.0
# a served headless run whose client paused the machine and left (run_headless_served)
LEFT_PAUSED_GRACE_S = 5.0


def headless_loop(machine, args, stop=None):
    """The loop of every headless run (``pypc run --headless``, a built-in
    DOS program, a ``pypc batch`` job): type ``--type`` as the guest gets
    ready, run a frame at a time until the built-in DOS's program exits
    (``"exit"``), ``--until-text`` is on the screen (``"until_text"``),
    ``--timeout`` emulated seconds pass (default 60, ``"timeout"``) or
    ``stop`` (a :class:`StopSignals`) has seen a signal (``"signal"``).
    Prints nothing; returns the reason."""
    timeout = args.timeout if args.timeout else DEFAULT_HEADLESS_TIMEOUT_S
    end = machine.clock() + int(timeout * CPU_HZ)
    typist = Typist(machine, unescape(args.type) if args.type is not None else "",
                    getattr(args, "type_after", None))
    frame = int(FRAME_S * CPU_HZ)
    dos = machine.dos
    until_text = getattr(args, "until_text", None)
    while True:
        if stop is not None and stop.signum is not None:
            stop.stopped()
            return "signal"
        typist.frame()
        if dos is not None and dos.exited:
            return "exit"
        if until_text and machine.screen_contains(until_text):
            # text typed later may not be on screen yet; keep going only
            # until what was asked for is there
            return "until_text"
        if machine.clock() >= end:
            return "timeout"
        machine.run_until_cycle(min(end, machine.clock() + frame))


def run_headless(machine, args):
    """Run until ``--until-text`` appears or ``--timeout`` emulated seconds
    (default 60) pass, then print the text screen.  Exit 0, or 1 when
    ``--until-text`` was asked for and never appeared; a signal ends the
    run at once with 128 + its number (130 for Ctrl-C)."""
    timeout = args.timeout if args.timeout else DEFAULT_HEADLESS_TIMEOUT_S
    with StopSignals() as stop:
        reason = headless_loop(machine, args, stop)
    if reason == "signal":
        return interrupted(stop)
    if args.screenshot:
        write_screenshot(machine, args.screenshot)
    if machine.video is not None:
        print("\n".join(row.rstrip() for row in machine.screen_text()).rstrip("\n"))
    if args.until_text and reason != "until_text":
        sys.stderr.write(f"pypc: {args.until_text!r} did not appear within "
                         f"{timeout:g} emulated seconds\n")
        return 1
    return 0


def run_headless_served(machine, args, rpc, viewers=None):
    """``--headless`` with a JSON-RPC server (``--rpc-port``/``--rpc-socket``)
    and no program: the controller owns the loop, as under ``--serve``, so
    every method works on this run -- ``session.start`` included, which puts
    a program's machine in place (the viewers follow it).

    The run ends when ``--until-text`` appears, after ``--timeout`` emulated
    seconds of running, or -- without ``--timeout`` -- once the default 60
    emulated seconds have run and no client is connected: an agent that
    launched the run keeps it while it talks to it.  A machine that a client
    paused spends no emulated time; once it has sat paused with no client
    connected for :data:`LEFT_PAUSED_GRACE_S` host seconds (time for a
    client to reconnect), the run ends.  A signal ends it at once (128 + its
    number).
    Prints the text screen of the machine served last; exits as
    :func:`run_headless` does."""
    from ..rpc.controller import PAUSED_POLL_S
    controller, server = rpc.controller, rpc.server
    machine.route_runs(None)            # the controller's loop, not this one's
    if viewers is not None:
        controller.adopt_hooks.append(viewers.follow)
    timeout = args.timeout
    budget = int((timeout if timeout else DEFAULT_HEADLESS_TIMEOUT_S) * CPU_HZ)
    typist = Typist(machine, unescape(args.type) if args.type is not None else "",
                    getattr(args, "type_after", None))
    frame = int(FRAME_S * CPU_HZ)
    ran = 0
    found = False
    idle_since = None
    try:
        with StopSignals() as stop:
            while True:
                if stop.signum is not None:
                    stop.stopped()
                    return interrupted(stop)
                m = controller.machine
                if m is machine:
                    typist.frame()      # (--type is for the machine this run built)
                if args.until_text and m.screen_contains(args.until_text):
                    found = True
                    break
                if ran >= budget and (timeout or not server.connections):
                    break
                if controller.running or server.connections:
                    idle_since = None
                elif idle_since is None:
                    idle_since = time.monotonic()
                elif time.monotonic() - idle_since >= LEFT_PAUSED_GRACE_S:
                    break               # paused, and its client has gone
                before = m.clock()
                controller.run_until_cycle(before + min(frame, budget - ran) if ran < budget
                                           else before + frame, wall_timeout=PAUSED_POLL_S)
                if controller.machine is m:
                    ran += m.clock() - before
        last = controller.machine
        if args.screenshot:
            write_screenshot(last, args.screenshot)
        if last.video is not None:
            print("\n".join(row.rstrip() for row in last.screen_text()).rstrip("\n"))
    finally:
        session = controller.session
        if session is not None:
            session.dos_session.close()     # the last session's machine and drives
    if args.until_text and not found:
        sys.stderr.write(f"pypc: {args.until_text!r} did not appear within "
                         f"{budget / CPU_HZ:g} emulated seconds\n")
        return 1
    return 0


def write_screenshot(machine, path):
    if machine.video is None:
        raise PypcError("--screenshot needs a video plugin (e.g. --plugins cga)")
    machine.video.write_png(path)
