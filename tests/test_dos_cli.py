"""``pypc run PROGRAM [ARGS...]`` and ``--drive``: headless runs print the
console on stdout and exit with the program's code; bad input is one
``pypc: error:`` line, exit 2, nothing written."""

import os

import pytest

from guest import dos as progs
from pypc_core.cli import main


def run(capsys, *argv):
    code = main(["run", "--no-rpc", "--no-viewers", "--headless", "--turbo", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_exit_code_and_console_on_stdout(tmp_path, capsys):
    progs.install(tmp_path, "child")
    code, out, err = run(capsys, str(tmp_path / "CHILD.COM"), "a", "--b")
    assert code == 42
    assert out == "child tail:[ a --b]\nchild path:C:\\CHILD.COM\n"
    assert err == ""


def test_drive_option_and_dos_path(tmp_path, capsys):
    games = tmp_path / "games"
    games.mkdir()
    progs.install(games, "child")
    code, out, _err = run(capsys, "--drive", f"D={games}", "D:\\CHILD.COM")
    assert code == 42
    assert "child path:D:\\CHILD.COM" in out


def test_a_host_program_inside_a_drive(tmp_path, capsys):
    sub = tmp_path / "sub"
    sub.mkdir()
    progs.install(sub, "child")
    code, out, _err = run(capsys, "--drive", f"C={tmp_path}", str(sub / "CHILD.COM"))
    assert code == 42
    assert "child path:C:\\SUB\\CHILD.COM" in out


@pytest.mark.parametrize("case", ["missing", "not-a-program", "escape", "outside",
                                  "corrupt-mz", "folder", "com-too-big", "bad-drive"])
def test_bad_input_is_one_line_exit_2_nothing_written(case, tmp_path, capsys):
    inside = tmp_path / "c"
    inside.mkdir()
    (inside / "README.TXT").write_text("text")
    (inside / "BAD.EXE").write_bytes(b"MZ\x10\x00\x02\x00\x00\x00\x40\x00" + bytes(40))
    (inside / "BIG.COM").write_bytes(bytes(70000))
    other = tmp_path / "other"
    other.mkdir()
    progs.install(other, "child")
    argv = {
        "missing": [str(inside / "NOSUCH.COM")],
        "not-a-program": [str(inside / "README.TXT")],
        "escape": ["--drive", f"C={inside}", "C:\\..\\other\\CHILD.COM"],
        "outside": ["--drive", f"C={inside}", str(other / "CHILD.COM")],
        "corrupt-mz": [str(inside / "BAD.EXE")],
        "folder": [str(other)],
        "com-too-big": [str(inside / "BIG.COM")],
        "bad-drive": ["--drive", f"C={tmp_path / 'nope'}"],
    }[case]
    before = sorted(os.walk(tmp_path))
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert err.startswith("pypc: error: ") and err.count("\n") == 1, err
    assert sorted(os.walk(tmp_path)) == before


def test_symlink_out_of_the_mount_is_refused(tmp_path, capsys):
    inside = tmp_path / "c"
    inside.mkdir()
    other = tmp_path / "other"
    other.mkdir()
    progs.install(other, "child")
    os.symlink(other / "CHILD.COM", inside / "LINK.COM")
    code, _out, err = run(capsys, "--drive", f"C={inside}", str(inside / "LINK.COM"))
    assert code == 2 and "pypc: error:" in err


def test_program_cannot_be_combined_with_a_disk(tmp_path, capsys):
    progs.install(tmp_path, "child")
    image = tmp_path / "a.img"
    image.write_bytes(bytes(368640))
    code, _out, err = run(capsys, "--floppy", str(image), str(tmp_path / "CHILD.COM"))
    assert code == 2 and "--floppy" in err


def test_shell_commands_typed(tmp_path, capsys):
    progs.install(tmp_path, "child")
    (tmp_path / "A.TXT").write_text("alpha\r\n")
    typed = (r"ECHO hi there\rTYPE A.TXT\rCOPY A.TXT B.TXT\rDIR *.TXT\rMD SUB\rCD SUB\r"
             r"CD\rCD ..\rDEL B.TXT\rSET FOO=bar\rSET\rCHILD z\rNOSUCH\rEXIT\r")
    code, out, _err = run(capsys, "--drive", f"C={tmp_path}", "--type", typed)
    assert code == 0
    assert "C:\\>ECHO hi there\nhi there\n" in out
    assert "alpha\n" in out
    assert "A.TXT\n        1 file(s) copied" in out
    assert "A        TXT         7" in out and "B        TXT         7" in out
    assert "C:\\SUB\n" in out
    assert "FOO=bar\n" in out
    assert "child tail:[ z]\n" in out
    assert "Bad command or file name\n" in out
    assert (tmp_path / "SUB").is_dir()
    assert not (tmp_path / "B.TXT").exists()


def test_batch_file_runs_and_gives_the_last_exit_code(tmp_path, capsys):
    progs.install(tmp_path, "child")
    (tmp_path / "GO.BAT").write_text("@ECHO OFF\r\nECHO batch %1\r\nCHILD %1\r\n")
    code, out, _err = run(capsys, str(tmp_path / "GO.BAT"), "arg")
    assert out == "batch arg\nchild tail:[ arg]\nchild path:C:\\CHILD.COM\n"
    assert code == 42
