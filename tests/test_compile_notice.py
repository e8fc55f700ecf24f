"""The first run compiles the numba core (about 25 s): on a terminal pypc
says so with a spinner; on a pipe it says nothing; a warm cache says
nothing either.  The cold runs get an empty numba cache (NUMBA_CACHE_DIR)
and are ended a few seconds into the compile: the notice, or its absence,
comes before the compile, and that a cold run then completes is what every
first run of the suite shows."""

import os
import subprocess
import time

from guest import program_image
from test_launcher import pypc_command, pypc_env
from test_live_terminal import PtyRun

from pypc_core.cli.compile_notice import COMPILE_NOTICE

CEILING_S = 600
INTO_THE_COMPILE_S = 6
NOTICE = COMPILE_NOTICE.rstrip("\u2026").encode()


def test_compile_notice_on_a_terminal_only_and_only_when_cold(tmp_path, monkeypatch):
    original_cache = os.environ.get("NUMBA_CACHE_DIR")      # this process's own
    image = program_image(tmp_path, "video")
    args = ["run", "--no-rpc", "--no-viewers", "--headless", "--turbo", "--floppy", image, "--timeout", "1"]
    piped_cache = tmp_path / "cache-piped"
    tty_cache = tmp_path / "cache-tty"
    piped_cache.mkdir()
    tty_cache.mkdir()

    # cold, stderr a pipe: no word while it compiles
    env = dict(pypc_env(), NUMBA_CACHE_DIR=str(piped_cache))
    proc = subprocess.Popen(pypc_command() + [str(a) for a in args], cwd=tmp_path, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(INTO_THE_COMPILE_S)
        assert proc.poll() is None              # still compiling (a warm run is done by now)
    finally:
        proc.kill()
        _, err = proc.communicate(timeout=60)
    assert err == ""

    # cold, on a terminal: the spinner, from the start of the compile
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tty_cache))
    run = PtyRun(args, tmp_path)
    try:
        assert run.read_until(NOTICE, CEILING_S), run.out[-2000:]
    finally:
        run.close()

    # warm (this process compiled or loaded the core into the usual cache),
    # on a terminal: nothing to say, and the run completes
    from pypc_core.cpu import Cpu
    Cpu().step()
    if original_cache is None:
        monkeypatch.delenv("NUMBA_CACHE_DIR")
    else:
        monkeypatch.setenv("NUMBA_CACHE_DIR", original_cache)
    run = PtyRun(args, tmp_path)
    try:
        assert run.wait(CEILING_S) == 0, run.out[-3000:]
    finally:
        run.close()
    assert NOTICE not in run.out
