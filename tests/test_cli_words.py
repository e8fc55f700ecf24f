"""What ``pypc`` says: plugin selections that cannot work, help texts that
match the behaviour, and user errors (one ``pypc: error:`` line, exit 2)."""

import pytest

from test_launcher import HELLO_BOOT, assert_one_line_error, floppy, pypc, sha
from test_live_terminal import PtyRun

CEILING_S = 180


@pytest.fixture
def hello(tmp_path):
    return floppy(tmp_path / "hello.img", HELLO_BOOT)


# -- plugin selections ------------------------------------------------------------------

@pytest.mark.parametrize("plugins", ["cga,cga", "cga, cga", "cga,,cga"])
def test_a_plugin_named_twice_is_an_error(tmp_path, hello, plugins):
    before = sha(hello)
    proc = pypc("run", "--headless", "--turbo", "--plugins", plugins, "--floppy", hello,
                "--timeout", "1", cwd=tmp_path)
    assert_one_line_error(proc, "'cga'", "twice")
    assert sha(hello) == before


def test_no_plugins_headless_says_there_is_no_display(tmp_path):
    proc = pypc("run", "--headless", "--turbo", "--plugins", "", "--timeout", "1",
                cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    line, = proc.stderr.splitlines()
    assert line.startswith("pypc: note: ") and "no display" in line
    assert proc.stdout == ""


def test_no_plugins_live_is_an_error(tmp_path):
    run = PtyRun(["run", "--no-rpc", "--no-viewers", "--turbo", "--plugins", ""], tmp_path)
    try:
        assert run.wait(CEILING_S) == 2
    finally:
        run.close()
    text = run.out.decode()
    assert text.startswith("pypc: error: ") and "no display" in text
    assert "--headless" in text
    assert "\x1b[?1049h" not in text            # the live view never started


# -- help that says what happens --------------------------------------------------------

def help_text(tmp_path, *args):
    proc = pypc(*args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return " ".join(proc.stdout.split())


def test_run_help_matches_the_behaviour(tmp_path, hello):
    text = help_text(tmp_path, "run", "--help")
    timeout = text[text.index("--timeout SECONDS stop"):]
    assert "0, or 1 when --until-text was given" in timeout
    assert "headless default: 60" in timeout
    geometry = text[text.index("--hdd-geometry C,H,S hard-disk"):][:200]
    assert geometry.index("MBR") < geometry.index("BPB") < geometry.index("size")
    headless = text[text.index("--headless no live view"):]
    assert "60 emulated seconds" in headless[:200]
    # what the help says: --timeout alone ends with 0, with --until-text unmet 1
    assert pypc("run", "--headless", "--turbo", "--floppy", hello, "--timeout", "1",
                cwd=tmp_path).returncode == 0
    assert pypc("run", "--headless", "--turbo", "--floppy", hello, "--timeout", "1",
                "--until-text", "NEVER SHOWN", cwd=tmp_path).returncode == 1


def test_screenshot_command_has_help_and_is_listed(tmp_path):
    text = help_text(tmp_path, "screenshot", "--help")
    assert text.startswith("usage: pypc screenshot PNG [run options]")
    assert "3 emulated seconds" in text
    main = help_text(tmp_path, "--help")
    commands = main[main.index("COMMAND"):]
    assert "screenshot" in commands and "run" in commands and "plugins" in commands


@pytest.mark.parametrize("name", ["x.txt", "x", "x.png.txt"])
def test_screenshot_must_be_a_png_name(tmp_path, hello, name):
    proc = pypc("screenshot", name, "--floppy", hello, cwd=tmp_path)
    assert_one_line_error(proc, repr(name), ".png")
    assert not (tmp_path / name).exists()
    proc = pypc("run", "--headless", "--turbo", "--floppy", hello, "--screenshot", name,
                cwd=tmp_path)
    assert_one_line_error(proc, "--screenshot", ".png")
    assert not (tmp_path / name).exists()


def test_cow_dir_that_is_a_file(tmp_path, hello):
    (tmp_path / "overlays").write_text("not a folder")
    before = sha(hello)
    proc = pypc("run", "--headless", "--turbo", "--floppy", hello, "--cow-dir", "overlays",
                "--timeout", "1", cwd=tmp_path)
    line = assert_one_line_error(proc, "overlays", "is not a directory")
    assert "does not exist" not in line
    assert sha(hello) == before and (tmp_path / "overlays").read_text() == "not a folder"


def test_one_byte_is_one_byte(tmp_path, hello):
    (tmp_path / "one.img").write_bytes(b"\x00")
    proc = pypc("run", "--headless", "--turbo", "--floppy", tmp_path / "one.img",
                cwd=tmp_path)
    line = assert_one_line_error(proc, "one.img", "1 byte")
    assert "1 bytes" not in line
    (tmp_path / "one.bin").write_bytes(b"\xea")
    proc = pypc("run", "--headless", "--turbo", "--bios", tmp_path / "one.bin",
                "--floppy", hello, cwd=tmp_path)
    line = assert_one_line_error(proc, "one.bin", "not 1 byte")
    assert "1 bytes" not in line


# -- PYPC_DEBUG -----------------------------------------------------------------------------

def test_pypc_debug_adds_the_traceback_and_keeps_exit_2(tmp_path):
    import subprocess
    from test_launcher import no_rpc, pypc_command, pypc_env
    env = dict(pypc_env(), PYPC_DEBUG="1")
    proc = subprocess.run(pypc_command() + no_rpc(["run", "--headless", "--floppy",
                                                   str(tmp_path / "nosuch.img")]),
                          cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=CEILING_S)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert lines[-1].startswith("pypc: error: ") and "nosuch.img" in lines[-1]
    assert proc.stdout == ""


# -- the entry points -------------------------------------------------------------------

@pytest.mark.parametrize("module", ["pypc_core", "pypc_core.cli"])
def test_every_entry_point_is_the_same_command(tmp_path, module):
    # python -m pypc_core and python -m pypc_core.cli run what the pypc
    # script runs (pyproject: pypc = "pypc_core.cli:main"): the version, and
    # a bad option as one line and exit 2
    import subprocess
    import sys
    from importlib.metadata import entry_points

    from pypc_core import __version__
    from pypc_core.cli import main
    from pypc_core.cli.main import main as cli_main
    script, = [e for e in entry_points(group="console_scripts") if e.name == "pypc"]
    assert script.value == "pypc_core.cli:main" and script.load() is main is cli_main

    from test_launcher import pypc_env
    run = [sys.executable, "-m", module]
    out = subprocess.run(run + ["--version"], cwd=tmp_path, env=pypc_env(),
                         capture_output=True, text=True, timeout=CEILING_S)
    assert (out.returncode, out.stdout, out.stderr) == (0, f"pypc {__version__}\n", "")
    out = subprocess.run(run + ["run", "--no-such-option"], cwd=tmp_path, env=pypc_env(),
                         capture_output=True, text=True, timeout=CEILING_S)
    assert_one_line_error(out, "--no-such-option")
