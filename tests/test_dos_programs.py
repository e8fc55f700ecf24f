"""Programs written here (tests/guest/dos/*.asm) run under the built-in DOS:
file I/O, directory search, memory allocation, exec of a child, exit codes.
Each program checks itself and prints "ok NAME" / "FAIL NAME"; its exit
code is the number of failures."""

import logging
import os

import pytest

from guest import dos as progs


def checks(text):
    lines = [line for line in text.splitlines() if line.startswith(("ok   ", "FAIL "))]
    assert lines, text
    return lines


def failures(text):
    return [line for line in checks(text) if line.startswith("FAIL")]


@pytest.mark.parametrize("name", sorted(progs.PROGRAMS))
def test_sources_assemble_to_the_committed_bytes(name, tmp_path):
    nasm = progs.find_nasm()
    if nasm is None:
        pytest.skip("nasm is not installed")
    out = tmp_path / progs.PROGRAMS[name]
    assert progs.assemble(name, str(out), nasm) == progs.program_bytes(name)


def test_file_io_and_directory_search(tmp_path):
    progs.install(tmp_path, "fileio")
    (tmp_path / "A.TXT").write_text("a")
    (tmp_path / "B.TXT").write_text("b")
    (tmp_path / "long name file.txt").write_text("long")
    outside = tmp_path.parent / (tmp_path.name + "-outside.txt")
    outside.write_text("secret")
    os.symlink(outside, tmp_path / "OUT.TXT")
    text, code, m = progs.run(tmp_path, "C:\\FILEIO.COM")
    m.close()
    assert failures(text) == []
    assert code == 0
    assert len(checks(text)) == 45
    found = {line[6:] for line in text.splitlines() if line.startswith("found ")}
    # OUT.TXT leads out of the mount: never listed
    assert found == {"A.TXT", "B.TXT", "RENAMED.TXT", "LONGNA~1.TXT"}
    assert "written through handle 1" in text
    assert (tmp_path / "RENAMED.TXT").read_bytes() == b"Hello file world\r\n"
    assert not (tmp_path / "TEST.TXT").exists()
    assert not (tmp_path / "SUB").exists()
    assert outside.read_text() == "secret"


def test_exe_loader_and_memory_allocation(tmp_path):
    progs.install(tmp_path, "memtest")
    text, code, m = progs.run(tmp_path, "C:\\MEMTEST.EXE")
    try:
        assert failures(text) == []
        assert code == 0
        assert len(checks(text)) == 28
        # the program and its environment were freed: one free block is left
        arena = m.dos.memory_map()
        assert [b["owner"] for b in arena] == [0]
    finally:
        m.close()


def test_exec_of_a_child_and_its_exit_code(tmp_path):
    progs.install(tmp_path, "parent", "child")
    # a corrupt MZ header: the header claims more bytes than the image has
    (tmp_path / "BAD.EXE").write_bytes(b"MZ\x10\x00\x02\x00\x00\x00\x40\x00" + bytes(40))
    text, code, m = progs.run(tmp_path, "C:\\PARENT.COM")
    try:
        assert failures(text) == []
        assert code == 0
        assert "child tail:[ hello world]\nchild path:C:\\CHILD.COM\n" in text
        assert "child tail:[ T]\n" in text
        # the TSR child keeps its 32 paragraphs (owned by its PSP) after exiting
        owners = {b["owner"]: b for b in m.dos.memory_map()}
        resident = [b for b in m.dos.memory_map() if b["name"] == "CHILD"]
        assert len(resident) == 1 and resident[0]["size"] == 0x20
        assert resident[0]["owner"] == resident[0]["segment"]
        assert 0 in owners
    finally:
        m.close()


def test_command_tail_and_exit_code_of_the_first_program(tmp_path):
    progs.install(tmp_path, "child")
    text, code, m = progs.run(tmp_path, "C:\\CHILD.COM", ["one", "two"])
    m.close()
    assert text == "child tail:[ one two]\nchild path:C:\\CHILD.COM\n"
    assert code == 42


def test_unsupported_function_fails_as_dos_does_and_is_logged_once(tmp_path, caplog):
    # mov ah,6Ch / int 21h / mov ah,6Ch / int 21h / mov ah,4Ch / int 21h:
    # an unknown handle-era function returns CF=1, AX=0001h, so the exit code is 1
    (tmp_path / "UNSUP.COM").write_bytes(bytes([0xB4, 0x6C, 0xCD, 0x21, 0xB4, 0x6C, 0xCD, 0x21,
                                                0xB4, 0x4C, 0xCD, 0x21]))
    with caplog.at_level(logging.WARNING, logger="pypc.dos"):
        text, code, m = progs.run(tmp_path, "C:\\UNSUP.COM")
    m.close()
    assert code == 1
    assert m.dos.unsupported == {0x6C}
    assert len([r for r in caplog.records if "6Ch" in r.getMessage()]) == 1


def test_c_program_built_with_bcc(tmp_path):
    """Optional: Debian's bcc (with elks-libc) builds DOS .COM programs."""
    import shutil
    import subprocess
    bcc = shutil.which("bcc")
    if bcc is None or not os.path.exists("/usr/lib/bcc/libdos.a"):
        pytest.skip("bcc and elks-libc (Debian packages) are not installed")
    subprocess.run([bcc, "-Md", "-ansi", "-o", str(tmp_path / "CPROG.COM"),
                    os.path.join(progs.HERE, "cprog.c")], check=True, capture_output=True)
    text, code, m = progs.run(tmp_path, "C:\\CPROG.COM", ["x", "y z"])
    m.close()
    # (its C runtime splits the tail at blanks; it ignores the quotes)
    assert text == ("cprog: 3 argument(s) [x] [\"y] [z\"]\n"
                    "read back: line 42\nall good\n")
    assert code == 7
    assert (tmp_path / "CDATA.TXT").read_bytes() == b"line 42\n"


def test_console_clock_and_system_services(tmp_path):
    progs.install(tmp_path, "conio")
    text, code, m = progs.run(tmp_path, "C:\\CONIO.COM", typed="hello\rxyabc\r")
    try:
        assert failures(text) == [] and "FAIL" not in text
        assert code == 0
        # INT 29h and CALL 5 output; AH=0Ah and AH=01h echo what they read
        # (AH=0Ah echoes the CR only), AH=08h does not; a CON read ends in CR LF
        assert "#!\n" in text
        assert "hello\rok   line length\n" in text
        assert "\nxok   read with echo\nok   read without echo\n" in text
        assert "\nabc\nok   read a line from handle 0\n" in text
        assert m.screen_contains("ok   read a line from handle 0")
    finally:
        m.close()


def test_parse_country_indos_handle_count_and_ctrl_c(tmp_path):
    progs.install(tmp_path, "sysfn")
    text, code, m = progs.run(tmp_path, "C:\\SYSFN.COM", typed="\x03k")
    m.close()
    assert failures(text) == [] and code == 0
    assert len(checks(text)) == 17
    assert "ok   10 more handles\n^C\nkok   the read goes on after Ctrl-C\n" in text


def test_ctrl_c_ends_a_program_without_a_handler(tmp_path):
    # mov ah,01h / int 21h / mov ax,4C05h / int 21h: Ctrl-C at the read ends it
    (tmp_path / "READ.COM").write_bytes(bytes([0xB4, 0x01, 0xCD, 0x21,
                                               0xB8, 0x05, 0x4C, 0xCD, 0x21]))
    text, code, m = progs.run(tmp_path, "C:\\READ.COM", typed="\x03")
    try:
        assert text == "^C\n"
        assert code == 0 and m.dos.return_code == 0x0100       # exit type 1: Ctrl-C
    finally:
        m.close()


def test_int_27h_stays_resident(tmp_path):
    # mov dx,0200h / int 27h: keep 200h bytes (20h paragraphs) of the PSP block
    (tmp_path / "TSR.COM").write_bytes(bytes([0xBA, 0x00, 0x02, 0xCD, 0x27]))
    text, code, m = progs.run(tmp_path, "C:\\TSR.COM")
    try:
        assert code == 0 and m.dos.return_code == 0x0300        # exit type 3: resident
        kept = [b for b in m.dos.memory_map() if b["name"] == "TSR"]
        assert len(kept) == 1 and kept[0]["size"] == 0x20
        assert kept[0]["owner"] == kept[0]["segment"]
        assert m.memory.read(kept[0]["segment"] << 4, 2) == b"\xcd\x20"
    finally:
        m.close()
