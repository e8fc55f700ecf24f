"""`pypc console`: its session logic (commands, guarded writes, step over,
stops) against a live server, the Textual app through Textual's headless
pilot, and a real run in tmux (keys sent to a terminal, the screen read
back with capture-pane)."""

import asyncio
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

pytest.importorskip("textual", reason="Textual is not installed")

from pypc_core.client import Client                                     # noqa: E402
from pypc_core.console.app import ConsoleApp, render_disasm, render_memory   # noqa: E402
from pypc_core.console.session import (CommandError, DebugSession,       # noqa: E402
                                       parse_address, parse_value)
from rpc_client import RpcFixture                                         # noqa: E402

SEG = 0x1000
# 1000:0000 mov cx,3 / 0003 call 000Ch / 0006 loop 0003 / 0008 inc dx / 0009 jmp 0009
# 000B nop / 000C inc ax / 000D inc bx / 000E ret
PROGRAM = bytes.fromhex("B90300" "E80600" "E2FB" "42" "EBFE" "90" "40" "43" "C3")


@pytest.fixture(scope="module")
def fx():
    f = RpcFixture()
    yield f
    f.close()


def load(fx):
    """A fresh session on the program at 1000:0000, paused, no breakpoints."""
    with Client(port=fx.port) as c:
        c.execution.pause()
        for b in c.breakpoints.list().breakpoints:
            c.breakpoints.delete(breakpoint_id=b.breakpoint_id)
        c.memory.write(address={"space": "segmented", "segment": SEG, "offset": 0},
                       data=PROGRAM)
        regs = c.state.get_registers()
        c.state.set_registers(
            expected_state_revision=regs.state_revision,
            expected={"cs": regs.segments.cs, "ip": regs.ip, "ss": regs.segments.ss,
                      "sp": regs.general.sp, "ax": regs.general.ax, "bx": regs.general.bx,
                      "dx": regs.general.dx, "ds": regs.segments.ds},
            set={"cs": SEG, "ip": 0, "ss": SEG, "sp": 0x1000, "ax": 0, "bx": 0, "dx": 0,
                 "ds": SEG})
    return DebugSession(port=fx.port)


def test_numbers_and_addresses():
    assert parse_value("1234") == 0x1234 and parse_value("0x10") == 16
    assert parse_value("7Bh") == 0x7B
    assert parse_address("1234:0100", 0) == (0x1234, 0x100)
    assert parse_address("100", 0x2000) == (0x2000, 0x100)
    assert parse_address("B8000", 0) == (0xB800, 0)            # linear
    assert parse_address("12345", 0) == (0x1234, 5)
    for bad in ("xyz", "", "12345:0", "100000"):
        with pytest.raises(CommandError):
            parse_address(bad, 0)


def test_session_commands(fx):
    s = load(fx)
    try:
        view = s.snapshot()
        assert not view.running and (view.registers.segments.cs, view.registers.ip) == (SEG, 0)
        assert view.disasm[0][3] == "mov cx,0x3" and view.disasm[0][4]      # current line
        assert s.command("t").startswith("step")
        assert s.registers().general.cx == 3
        assert s.command("p").startswith("step at 1000:0006")             # call: run through
        regs = s.registers()
        assert regs.ip == 6 and regs.general.ax == 1 and regs.general.bx == 1
        assert s.command("bp 1000:0008").startswith("breakpoint bp-")
        assert s.command("g") == "running"
        assert s.wait_stop(5000).startswith("breakpoint")
        regs = s.registers()
        assert regs.ip == 8 and regs.general.ax == 3 and regs.general.cx == 0
        view = s.snapshot()
        assert any(line[5] and line[1] == 8 for line in view.disasm)       # bp mark
        assert view.breakpoints and "1000:0008" in view.breakpoints[0]
        assert s.command("r ax=5") == "AX 0003 -> 0005"
        assert s.registers().general.ax == 5
        assert s.command("e 1000:0020 de ad").endswith("DE AD")
        s.command("d 1000:0020")
        assert s.snapshot().dump[:2] == b"\xde\xad"
        with pytest.raises(CommandError, match="no register"):
            s.command("r zz=1")
        with pytest.raises(CommandError, match="unknown command"):
            s.command("frobnicate")
        assert s.command("bc *") == "cleared 1 breakpoint(s)"
        assert s.command("trace 10").startswith("tracing")
        s.command("t 2")
        assert len(s.snapshot().trace) == 2
        s.command("trace off")
    finally:
        s.close()


def test_guarded_write_refuses_a_stale_view(fx):
    s = load(fx)
    try:
        s.snapshot()
        with Client(port=fx.port) as other:          # someone else changes the machine
            other.memory.write(address=0x500, data=b"\x01")
        before = s.registers()
        with pytest.raises(CommandError, match="changed since"):
            s.command("r ax=7")
        assert s.registers() == before                # nothing written
        with pytest.raises(CommandError, match="changed since"):
            s.command("e 1000:0030 11")
        s.snapshot()                                  # the panes re-read: now it may
        assert s.command("r ax=7") == f"AX {before.general.ax:04X} -> 0007"
    finally:
        s.close()


def test_refuses_to_step_while_running(fx):
    s = load(fx)
    try:
        s.command("g")
        with pytest.raises(CommandError, match="running"):
            s.command("t")
        assert s.command("pause") == "paused"
    finally:
        s.close()


# -- the Textual app, headless ---------------------------------------------------------

def pane_text(app, pane_id):
    return str(app.query_one(pane_id).content)


async def settle(app, pilot, until, limit_s=30):
    """Let the app's workers run until ``until()`` holds (or the limit)."""
    deadline = time.monotonic() + limit_s
    while not until() and time.monotonic() < deadline:
        await pilot.pause(0.05)
    return until()


def test_pilot_steps_breaks_and_edits(fx):
    session = load(fx)

    async def main():
        app = ConsoleApp(session)
        async with app.run_test(size=(160, 50)) as pilot:
            assert await settle(app, pilot, lambda: app.view is not None)
            assert "1000:0000" in pane_text(app, "#disasm")
            await pilot.press("f8")                                  # mov cx,3
            assert await settle(app, pilot, lambda: app.view.registers.ip == 3)
            assert "CX=0003" in pane_text(app, "#regs")
            await pilot.press("f10")                                 # call: through
            assert await settle(app, pilot, lambda: app.view.registers.ip == 6)
            assert "AX=0001" in pane_text(app, "#regs")
            # the cursor (on CS:IP) down to 1000:0008 and F9 sets a breakpoint there
            assert session.cursor_address() == (SEG, 6)
            await pilot.press("down")
            assert session.cursor_address() == (SEG, 8)
            await pilot.press("f9")
            assert await settle(app, pilot, lambda: bool(app.view.breakpoints))
            assert render_disasm(app.view, session.cursor).plain.splitlines()[3].startswith(
                "*  1000:0008")
            await pilot.press("f5")                                  # continue to it
            assert await settle(app, pilot, lambda: app.view.registers.ip == 8 and
                                not app.view.running)
            assert "breakpoint" in pane_text(app, "#stop")
            assert any(m.startswith("stopped: breakpoint") for m in app.messages)
            # DEBUG commands on the command line
            await pilot.click("#cmd")
            for text in ("r ax=42", "d 1000:0000"):
                app.query_one("#cmd").value = text
                await pilot.press("enter")
                await settle(app, pilot, lambda: app.messages and
                             app.messages[-1].startswith(("AX", "dump")))
            assert await settle(app, pilot, lambda: app.view.registers.general.ax == 0x42)
            assert await settle(app, pilot, lambda: app.view.dump[:3] == PROGRAM[:3])
            assert "B9 03 00" in render_memory(app.view).plain
            # a refused command says why and changes nothing
            app.query_one("#cmd").value = "r ax=12345"
            await pilot.press("enter")
            assert await settle(app, pilot, lambda: "16 bits" in app.messages[-1])
            assert app.view.registers.general.ax == 0x42
            # the guest runs: the console stays responsive and pauses it
            await pilot.press("f9")                                  # clear the bp
            assert await settle(app, pilot, lambda: not app.view.breakpoints)
            await pilot.press("f5")
            assert await settle(app, pilot, lambda: app.view.running)
            await pilot.press("f6")
            assert await settle(app, pilot, lambda: not app.view.running)
            assert app.view.registers.ip == 9                        # jmp $ forever
            # another client runs and stops the machine: the console shows both
            with Client(port=fx.port) as other:
                other.execution.continue_()
                assert await settle(app, pilot, lambda: app.view.running)
                other.execution.pause()
            assert await settle(app, pilot, lambda: not app.view.running)
            assert "last stop: pause at 1000:0009" in pane_text(app, "#stop")
    asyncio.run(main())
    session.close()


# -- a real terminal --------------------------------------------------------------------

def tmux(*args):
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=True).stdout


def wait_screen(name, pattern, limit_s=60):
    deadline = time.monotonic() + limit_s
    while True:
        screen = tmux("capture-pane", "-p", "-t", name)
        if re.search(pattern, screen):
            return screen
        assert time.monotonic() < deadline, f"no {pattern!r} on the screen:\n{screen}"
        time.sleep(0.1)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_console_in_tmux(fx):
    load(fx).close()
    name = f"pypc-console-{os.getpid()}"
    # COLUMNS/LINES from the test run's environment would fix Textual's size
    cmd = f"env -u COLUMNS -u LINES {sys.executable} -m pypc_core.cli console --port {fx.port}"
    tmux("new-session", "-d", "-s", name, "-x", "176", "-y", "52", "sh")
    try:
        # a tmux server that was already running may size new windows its own
        # way: fix the size first, then start the console in it
        tmux("set-option", "-t", name, "window-size", "manual")
        tmux("resize-window", "-t", name, "-x", "176", "-y", "52")
        tmux("send-keys", "-t", name, f"exec {cmd}", "Enter")
        screen = wait_screen(name, r"1000:0000 .*mov cx,0x3")
        assert "registers" in screen and "IP=0000" in screen
        tmux("send-keys", "-t", name, "t", "Enter")               # DEBUG's t
        screen = wait_screen(name, r"CX=0003")
        assert "IP=0003" in screen
        tmux("send-keys", "-t", name, "bp 1000:0008", "Enter")
        screen = wait_screen(name, r"bp-\d+ execution 1000:0008")
        assert re.search(r"\*  1000:0008", screen)                # the mark in the listing
        tmux("send-keys", "-t", name, "F5")                       # continue to it
        screen = wait_screen(name, r"stopped: breakpoint")
        assert "IP=0008" in screen and "AX=0003" in screen and "CX=0000" in screen
        tmux("send-keys", "-t", name, "F8")
        screen = wait_screen(name, r"IP=0009")
        assert "DX=0001" in screen
        tmux("send-keys", "-t", name, "q", "Enter")
        deadline = time.monotonic() + 30
        while name in subprocess.run(["tmux", "ls"], capture_output=True, text=True).stdout:
            assert time.monotonic() < deadline, "the console did not quit"
            time.sleep(0.1)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)


def test_step_over_on_a_server_without_mode_over(fx, monkeypatch):
    from pypc_core.client import Unsupported
    s = load(fx)
    try:
        step = s.client.execution.step

        def old_server_step(*, mode=None, rpc_timeout=None):
            if mode == "over":
                raise Unsupported(-32602, "mode over is unsupported", {"reason": "UNSUPPORTED"})
            return step(mode=mode, rpc_timeout=rpc_timeout)
        monkeypatch.setattr(s.client.execution, "step", old_server_step)
        s.command("t")
        assert s.command("p") == "running to 1000:0006"      # a one-shot run_until
        assert s.wait_stop(5000).startswith("run_until")
        regs = s.registers()
        assert regs.ip == 6 and regs.general.ax == 1
    finally:
        s.close()


def test_pilot_run_to_cursor_and_go_to_address(fx):
    session = load(fx)

    async def main():
        app = ConsoleApp(session)
        async with app.run_test(size=(176, 52)) as pilot:
            assert await settle(app, pilot, lambda: app.view is not None)
            for _ in range(3):
                await pilot.press("down")
            assert session.cursor_address() == (SEG, 8)
            await pilot.press("f4")                                  # run to the cursor
            assert await settle(app, pilot, lambda: app.view.registers.ip == 8 and
                                not app.view.running)
            assert app.view.registers.general.cx == 0 and app.view.registers.general.ax == 3
            # (a run_until stop names its predicate: breakpoint_id until-N)
            assert re.search(r"run_until until-\d+ at 1000:0008", pane_text(app, "#stop"))
            await pilot.press("ctrl+g")                              # go to an address
            assert app.query_one("#cmd").value == "u "
            await pilot.press(*"1000:000C", "enter")
            assert await settle(app, pilot, lambda: app.view.disasm[0][1] == 0xC)
            assert app.view.disasm[0][3] == "inc ax"
            revision = app.view.revision
            with Client(port=fx.port) as other:           # refreshes change nothing
                other.memory.write(address=0x600, data=b"\x01")
            assert await settle(app, pilot, lambda: app.view.revision > revision)
            assert app.view.disasm[0][1] == 0xC
            await pilot.press("f8")                                  # CS:IP moves: back
            assert await settle(app, pilot, lambda: app.view.registers.ip == 9)
            assert app.view.disasm[0][1] == 9 and app.view.disasm[0][4]
    asyncio.run(main())
    session.close()
