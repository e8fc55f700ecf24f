"""DOS test programs (NASM sources and their assembled bytes, both
committed) and a helper that runs one under the built-in DOS in-process."""

import os
import shutil
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
# source name -> assembled file committed beside it
PROGRAMS = {
    "agent_fixture": "agent_fixture.com",
    "fileio": "fileio.com",
    "memtest": "memtest.exe",
    "parent": "parent.com",
    "child": "child.com",
    "conio": "conio.com",
    "sysfn": "sysfn.com",
    "stepover": "stepover.com",
    "dostrace": "dostrace.com",
    "guestdos": "guestdos.bin",
    "breakme": "breakme.com",
    "confine": "confine.com",
    "mcbkill": "mcbkill.com",
    "hold": "hold.com",
    "square": "square.com",
    "symtest": "symtest.exe",
    "crunch": "crunch.com",
}


def path(name):
    return os.path.join(HERE, PROGRAMS[name])


def program_bytes(name):
    with open(path(name), "rb") as fh:
        return fh.read()


def find_nasm():
    return shutil.which("nasm")


def assemble(name, out_path, nasm=None):
    """Assemble ``NAME.asm`` (includes from this folder) to ``out_path``."""
    subprocess.run([nasm or find_nasm(), "-f", "bin", "-I", HERE + os.sep, "-o", out_path,
                    os.path.join(HERE, name + ".asm")], check=True, capture_output=True)
    with open(out_path, "rb") as fh:
        return fh.read()


def install(folder, *names):
    """Copy programs into ``folder`` (a test's C: drive)."""
    for name in names:
        shutil.copy(path(name), os.path.join(folder, PROGRAMS[name].upper()))


def run(folder, program, args=(), max_seconds=20.0, plugins=("cga",), typed=None,
        cpu="interpret"):
    """Run ``program`` (a DOS path on C: = ``folder``) until it exits;
    ``typed`` text enters the keyboard (20 keys a second of emulated time)
    once the program first waits for a key.  Returns (console text, exit code or None, machine) --
    the caller closes the machine."""
    from pypc_core.dos import DosConfig
    from pypc_core.machine import CPU_HZ, Machine, MachineConfig
    m = Machine(MachineConfig(plugins=list(plugins), cpu=cpu,
                              dos=DosConfig(drives={"C": str(folder)}, program=program,
                                            args=list(args))))
    end = m.clock() + int(max_seconds * CPU_HZ)
    while not m.dos.exited and m.clock() < end:
        if typed and m.waiting_for_key():
            m.type_text(typed)
            typed = None
        m.run_for(CPU_HZ // 50)
    text = bytes(m.dos.console_out).decode("cp437").replace("\r\n", "\n")
    return text, m.dos.exit_code, m
