"""``pypc run --debug-port [PORT]``: the guest debug console from the command
line -- a bare binary and a DOS program writing lines to E9h, printed on
stderr as ``pypc: guest: ...``; the optional PORT; bad ports."""

import pytest

from pypc_core.cli import _normalise_argv
from test_diagnostics import lines_then
from test_launcher import assert_one_line_error, pypc

HLT = b"\xF4"


def dos_program():
    """A .COM: the text to port E9h byte by byte, then INT 21h AH=4Ch."""
    code = bytearray.fromhex("BAE900 BE0000 AC 08C0 7403 EE EBF8 B8004C CD21")
    code[4:6] = (0x100 + len(code)).to_bytes(2, "little")
    return bytes(code) + b"from dos\r\nbye\r\n\x00"


def guest_lines(stderr):
    return [line[len("pypc: guest: "):] for line in stderr.splitlines()
            if line.startswith("pypc: guest: ")]


@pytest.fixture
def boot_bin(tmp_path):
    path = tmp_path / "hello.bin"
    path.write_bytes(lines_then(HLT, b"hello, E9\nsecond line\n"))
    return path


def bare_run(path, *extra, cwd):
    return pypc("run", "--headless", "--turbo", "--bare", "--load", f"{path}@0000:7C00",
                "--entry", "0000:7C00", "--until-halt", *extra, cwd=cwd)


def test_a_bare_binary_prints_its_lines(boot_bin, tmp_path):
    proc = bare_run(boot_bin, "--debug-port", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert guest_lines(proc.stderr) == ["hello, E9", "second line"]


def test_without_the_option_or_on_another_port_nothing_is_printed(boot_bin, tmp_path):
    for extra in ((), ("--debug-port", "0x80"), ("--debug-port=402h",)):
        proc = bare_run(boot_bin, *extra, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert guest_lines(proc.stderr) == [], extra


def test_a_dos_program_after_the_option_is_the_program(tmp_path):
    (tmp_path / "DBG.COM").write_bytes(dos_program())
    proc = pypc("run", "--headless", "--turbo", "--debug-port", "DBG.COM", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert guest_lines(proc.stderr) == ["from dos", "bye"]


def test_bad_ports_are_one_line_errors(boot_bin, tmp_path):
    for port in ("0x10000", "-1", "0xZZ", "65536"):
        proc = bare_run(boot_bin, f"--debug-port={port}", cwd=tmp_path)
        assert_one_line_error(proc, "--debug-port")
    proc = pypc("run", "--headless", "--turbo", "--plugins", "cga,uart",
                "--debug-port", "0x3F8", cwd=tmp_path)
    assert_one_line_error(proc, "3F8h", "uart", "debugcon")


def test_the_optional_port_word():
    assert _normalise_argv(["--debug-port", "TOOL.COM"]) == ["run", "--debug-port=0xE9",
                                                             "TOOL.COM"]
    assert _normalise_argv(["run", "--debug-port"]) == ["run", "--debug-port=0xE9"]
    assert _normalise_argv(["run", "--debug-port", "--headless"]) == [
        "run", "--debug-port=0xE9", "--headless"]
    for word in ("0x3F8", "233", "E9h", "0xZZ"):            # a port (maybe a bad one)
        assert _normalise_argv(["run", "--debug-port", word]) == [
            "run", "--debug-port", word]
    assert _normalise_argv(["run", "--", "--debug-port", "X"]) == [
        "run", "--", "--debug-port", "X"]
