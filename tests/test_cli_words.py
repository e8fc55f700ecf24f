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
    run = PtyRun(["run", "--no-rpc", "--turbo", "--plugins", ""], tmp_path)
    try:
        assert run.wait(CEILING_S) == 2
    finally:
        run.close()
    text = run.out.decode()
    assert text.startswith("pypc: error: ") and "no display" in text
    assert "--headless" in text
    assert "\x1b[?1049h" not in text            # the live view never started
