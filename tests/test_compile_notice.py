"""The first run compiles the numba core (about 25 s): on a terminal pypc
says so with a spinner; on a pipe it says nothing.  Each test gets an empty
numba cache (NUMBA_CACHE_DIR), so the core really is compiled cold here
(slow on purpose: once to the end, once until the notice shows)."""

import os
import subprocess

from guest import program_image
from test_launcher import pypc_command, pypc_env
from test_live_terminal import PtyRun

from pypc_core.launcher import COMPILE_NOTICE

CEILING_S = 600
NOTICE = COMPILE_NOTICE.rstrip("\u2026").encode()


def test_compile_notice_on_a_terminal_only_and_only_when_cold(tmp_path, monkeypatch):
    image = program_image(tmp_path, "video")
    args = ["run", "--no-rpc", "--no-viewers", "--headless", "--turbo", "--floppy", image, "--timeout", "1"]
    piped_cache = tmp_path / "cache-piped"
    tty_cache = tmp_path / "cache-tty"
    piped_cache.mkdir()
    tty_cache.mkdir()

    # cold, stderr a pipe: no word
    env = dict(pypc_env(), NUMBA_CACHE_DIR=str(piped_cache))
    proc = subprocess.run(pypc_command() + [str(a) for a in args], cwd=tmp_path, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=CEILING_S)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert any(name.endswith(".nbi") for _, _, names in os.walk(piped_cache)
               for name in names)                 # it did compile, quietly

    # cold, on a terminal: the spinner, from the start of the compile (the
    # run is ended there: that the compile then finishes the piped run showed)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tty_cache))
    run = PtyRun(args, tmp_path)
    try:
        assert run.read_until(NOTICE, CEILING_S), run.out[-2000:]
    finally:
        run.close()

    # warm (the piped run filled that cache), on a terminal: nothing to say
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(piped_cache))
    run = PtyRun(args, tmp_path)
    try:
        assert run.wait(CEILING_S) == 0, run.out[-3000:]
    finally:
        run.close()
    assert NOTICE not in run.out
