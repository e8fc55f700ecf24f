"""Symbols from link maps (pypc_core.symbols, --symbols, the symbols.* RPC
group, PROG.MAP beside a built-in-DOS program, the gdb stub's monitor).

Where the maps come from:

* bin86 ``ld86 -M``: made by the real linker (as86 + ld86) when bin86 is
  installed (``.ci/run`` installs it best-effort); those tests skip without it.
* MS/IBM LINK ``/MAP``, Borland TLINK ``.MAP`` and Watcom WLINK maps: Debian
  ships none of these linkers, so the maps below are written by hand to each
  format's documented layout (the LINK segment table ``Start Stop Length Name
  Class`` and ``Address Publics by Name/Value``; TLINK's with its ``Detailed
  map of segments``, ``idle`` and ``Abs`` markers and line-number section;
  WLINK's boxed sections, its ``Memory Map`` with ``*``/``+`` markers after
  the address, and ``Entry point address``), for tests/guest/dos/symtest.exe:
  start 0000:0000, again 0000:0007, counter 0000:0015 and helper 0002:0000,
  relative to the load image.
* a plain ``NAME SEG:OFF`` / ``NAME LINEAR`` list (our own format).
"""

import re
import shutil
import subprocess
import sys

import pytest

from guest import dos as progs
from rpc_client import RpcFixture
from test_dos_rpc import DosRpcFixture
from test_gdbstub import Rsp

from pypc_core.dos_session import DosSession
from pypc_core.frontends.gdbstub import GdbServer
from pypc_core.machine import CPU_HZ, Machine, MachineConfig
from pypc_core.symbols import SymbolError, SymbolTable, parse_map, parse_spec, read_map

EXPECTED = {"start": (0, 0), "again": (0, 7), "counter": (0, 0x15), "helper": (2, 0)}

MS_LINK = """
 Start  Stop   Length Name                   Class
 00000H 0001FH 00020H _TEXT                  CODE
 00020H 0002FH 00010H HELPER_TEXT            CODE

 Origin   Group

  Address         Publics by Name

 0000:0007       again
 0000:0015       counter
 0002:0000       helper
 0000:0000       start
 0000:0200  Abs  STACKSIZE

  Address         Publics by Value

 0000:0000       start
 0000:0007       again
 0000:0015       counter
 0002:0000       helper
 0000:0200  Abs  STACKSIZE

Program entry point at 0000:0000
"""

TLINK = """
 Start  Stop   Length Name               Class

 00000H 0001FH 00020H _TEXT              CODE
 00020H 0002FH 00010H HELPER_TEXT        CODE

Detailed map of segments

 0000:0000 0020 C=CODE   S=_TEXT          G=(none)  M=SYMTEST.ASM ACBP=28
 0002:0000 0010 C=CODE   S=HELPER_TEXT    G=(none)  M=SYMTEST.ASM ACBP=28

  Address         Publics by Name

 0000:0007       again
 0000:0015 idle  counter
 0002:0000       helper
 0000:0000       start
 0000:0200  Abs  STACKSIZE

  Address         Publics by Value

 0000:0000       start
 0000:0007       again
 0000:0015 idle  counter
 0000:0200  Abs  STACKSIZE
 0002:0000       helper

Line numbers for symtest.obj(SYMTEST.ASM) segment _TEXT

    36 0000:0000    37 0000:0002    38 0000:0004    40 0000:0007

Program entry point at 0000:0000
"""

WLINK = """Open Watcom Linker Version 2.0 beta
Portions Copyright (c) 1985-2002 Sybase, Inc. All Rights Reserved.
Created on:       26/12/02 01:00:00
Executable Image: symtest.exe
creating a DOS executable


                        +------------+
                        |   Groups   |
                        +------------+

Group                           Address              Size
=====                           =======              ====

DGROUP                          0003:0000            00000000



                        +--------------+
                        |   Segments   |
                        +--------------+

Segment                Class          Group          Address         Size
=======                =====          =====          =======         ====

_TEXT                  CODE           AUTO           0000:0000       00000020
HELPER_TEXT            CODE           AUTO           0002:0000       00000010


                        +----------------+
                        |   Memory Map   |
                        +----------------+

* = unreferenced symbol
+ = symbol only referenced locally

Address        Symbol
=======        ======

Module: symtest.obj(symtest.asm)
0000:0000      start
0000:0007+     again
0000:0015*     counter
0002:0000      helper


                        +-----------------------+
                        |   Linker Statistics   |
                        +-----------------------+

Stack size:  0200 (512.)
Memory size:  0030 (48.)
Entry point address: 0000:0000
Link time: 00:00.00
"""

MAPS = {"ms-link": MS_LINK, "tlink": TLINK, "wlink": WLINK}

AS86_SOURCE = """\
.text
export _main
_main:
  mov cx,#3
export again
again:
  call helper
  loop again
  mov ax,#0x4c03
  int 0x21
export helper
helper:
  inc dx
  ret
"""

needs_bin86 = pytest.mark.skipif(not (shutil.which("as86") and shutil.which("ld86")),
                                 reason="bin86 (as86, ld86) is not installed")


def symtest_folder(tmp_path, map_text=None, map_name="SYMTEST.MAP"):
    shutil.copy(progs.path("symtest"), tmp_path / "SYMTEST.EXE")
    if map_text is not None:
        (tmp_path / map_name).write_text(map_text)
    return tmp_path


def as_dict(mapfile):
    return {name: (seg, off) for name, seg, off in mapfile.symbols}


# -- the formats --------------------------------------------------------------------

@pytest.mark.parametrize("fmt", sorted(MAPS))
def test_each_link_map_format_gives_the_programs_symbols(fmt, tmp_path):
    path = tmp_path / "symtest.map"
    path.write_text(MAPS[fmt])
    mapfile = read_map(str(path))
    assert mapfile.format == fmt and mapfile.relative
    assert as_dict(mapfile) == EXPECTED              # Abs constants are not addresses
    assert mapfile.extent == 0x30 and mapfile.entry == (0, 0)


def test_a_plain_list_is_absolute_and_takes_both_orders():
    m = parse_map("; comment\n# another\n\nboot 0000:7C00\n0xB8000 screen\nF000:FFF0 reset\n"
                  "bda 400h\n", "list.sym")
    assert m.format == "list" and not m.relative
    t = SymbolTable()
    t.add(m, 0)
    assert {s.name: s.linear for s in t.symbols()} == {
        "boot": 0x7C00, "screen": 0xB8000, "reset": 0xFFFF0, "bda": 0x400}
    assert t.resolve("reset") == (0xF000, 0xFFF0)


def build_with_bin86(folder, name):
    """as86 + ld86 -d -T0x100 -M (a .COM): returns the map ld86 printed.
    Run in ``folder`` with short names (as86 refuses long source paths)."""
    (folder / "p.s").write_text(AS86_SOURCE)
    subprocess.run(["as86", "-0", "-o", "p.o", "p.s"], cwd=folder, check=True,
                   capture_output=True)
    out = subprocess.run(["ld86", "-0", "-d", "-T0x100", "-M", "-o", name, "p.o"], cwd=folder,
                         check=True, capture_output=True, text=True)
    return out.stdout


@needs_bin86
def test_ld86_map_from_the_real_linker(tmp_path):
    mapfile = parse_map(build_with_bin86(tmp_path, "p.com"), "p.map")
    assert mapfile.format == "ld86"
    syms = as_dict(mapfile)
    assert set(syms) == {"_main", "again", "helper"}
    code = (tmp_path / "p.com").read_bytes()
    # the values are offsets in the .COM's segment (org 100h): what is there
    assert syms["_main"] == (0, 0x100) and code[0] == 0xB9             # mov cx,3
    assert code[syms["again"][1] - 0x100] == 0xE8                        # call helper
    assert code[syms["helper"][1] - 0x100:syms["helper"][1] - 0x100 + 2] == b"\x42\xc3"


@needs_bin86
def test_ld86_program_under_the_built_in_dos_stops_on_a_symbol(tmp_path):
    (tmp_path / "LDPROG.MAP").write_text(build_with_bin86(tmp_path, "LDPROG.COM"))
    with DosSession(str(tmp_path / "LDPROG.COM")) as s:
        s.start()
        m = s.machine
        psp = m.dos.current_psp
        assert m.symbol_at() == "_main"                    # CS:IP = PSP:0100
        m.breakpoints.add("exec", "helper")
        stop = m.run_for(CPU_HZ)
        assert stop.kind == "breakpoint" and (stop.cs, stop.ip) == m.symbols.resolve("helper")
        assert stop.cs == psp and m.symbol_at() == "helper" and int(m.cpu.regs[1]) == 3


# -- the built-in DOS: PROG.MAP and --symbols ----------------------------------------

def test_dos_loads_prog_map_beside_the_exe_and_stops_on_a_symbol(tmp_path):
    symtest_folder(tmp_path, MS_LINK)
    with DosSession(str(tmp_path / "SYMTEST.EXE")) as s:
        s.start()
        m = s.machine
        load = m.dos.current_psp + 0x10
        assert m.symbols.summary() == [{"path": "C:\\SYMTEST.MAP", "format": "ms-link",
                                        "base": load, "symbols": 4}]
        assert (int(m.cpu.regs[9]), m.symbol_at()) == (load, "start")   # CS, at the entry
        listing = m.disassemble(count=4)
        assert [i.symbol for i in listing] == ["start", "start+0x2", "start+0x4", "again"]
        assert listing[3].target_symbol == "helper"
        assert listing[3].symbolic_text.endswith("<helper>")
        m.breakpoints.add("exec", "helper")
        stop = m.run_for(CPU_HZ)
        assert stop.kind == "breakpoint" and (stop.cs, stop.ip) == (load + 2, 0)
        assert m.symbol_at() == "helper"
        stop = m.run_until(address="again+0x5")            # the LOOP after the call
        assert stop.kind == "until" and (stop.cs, stop.ip) == (load, 0xC)
        counter = (load << 4) + 0x15
        assert m.symbols.describe(counter) == "counter" and m.memory.read(counter, 1)[0] == 1
        # past the image (the segment table's end) no name is made up
        assert m.symbols.describe((load << 4) + 0x30) is None
        assert m.symbols.describe((load << 4) + 0x2F) == "helper+0xf"


def test_a_malformed_prog_map_is_a_note_and_the_program_runs(tmp_path):
    symtest_folder(tmp_path, MS_LINK.replace(" 0002:0000       helper",
                                             " 0002:00G0       helper", 1))
    with DosSession(str(tmp_path / "SYMTEST.EXE")) as s:
        s.start()
        assert not s.machine.symbols
        notes = [r["message"] for r in s.machine.diagnostics.records()
                 if r["level"] == "warning" and r["source"] == "dos"]
        assert len(notes) == 1 and notes[0].startswith("symbols not loaded: C:\\SYMTEST.MAP:")
        s.resume()
        assert s.exit_code == 3


@pytest.mark.parametrize("fmt", ["tlink", "wlink"])
def test_symbols_option_waits_for_the_program_and_relocates(fmt, tmp_path):
    from pypc_core.dos import DosConfig
    symtest_folder(tmp_path)
    path = tmp_path / "other.map"
    path.write_text(MAPS[fmt])
    cfg = DosConfig(drives={"C": str(tmp_path)}, program="C:\\SYMTEST.EXE", break_at_entry=True)
    with Machine(MachineConfig(plugins=["cga"], dos=cfg, symbols=[(str(path), None)])) as m:
        assert not m.symbols and len(m.symbols.pending) == 1     # not loaded yet
        stop = m.run_for(5 * CPU_HZ)
        load = m.dos.current_psp + 0x10
        assert stop.kind == "breakpoint" and m.symbols.resolve("helper") == (load + 2, 0)
    # the same map given with --symbols and beside the program: loaded once
    (tmp_path / "SYMTEST.MAP").write_text(MAPS[fmt])
    with Machine(MachineConfig(plugins=["cga"], dos=cfg, symbols=[(str(path), None)])) as m:
        m.run_for(5 * CPU_HZ)
        assert [g["path"] for g in m.symbols.summary()] == [str(path)]
    # @0: as the file says (absolute); @SEG: that base
    for base, seg in ((0, 2), (0x1234, 0x1236)):
        with Machine(MachineConfig(plugins=["cga"], dos=cfg, symbols=[(str(path), base)])) as m:
            assert m.symbols.resolve("helper") == (seg, 0)


def test_symbols_spec_syntax():
    assert parse_spec("a.map") == ("a.map", None)
    assert parse_spec("a.map@1234") == ("a.map", 0x1234)
    assert parse_spec("a.map@0") == ("a.map", 0)
    assert parse_spec("a.map@absolute") == ("a.map", 0)
    assert parse_spec("dir@x/a.map") == ("dir@x/a.map", None)
    with pytest.raises(SymbolError, match="not 16-bit"):
        parse_spec("a.map@12345")


# -- bad maps and names ---------------------------------------------------------------

BAD = {
    "ms-link": (MS_LINK.replace(" 0000:0015       counter", " 0000:00Z5       counter", 1),
                "not a public symbol line"),
    "tlink": (TLINK.replace(" 0002:0000       helper", " 0002:10000      helper", 1),
              "beyond 64 KiB"),
    "wlink": (WLINK.replace("0000:0015*     counter", "counter at 15", 1), "not a Memory Map line"),
    "list": ("boot 0000:7C00\nscreen B800:0000 extra\n", "expected NAME SSSS:OOOO"),
    "ld86": ("      p   _main  0  00000100  R\n      p   helper 0  0000zz09  R\n"
             "Total memory used: 00000010\n", "not an ld86 -M line"),
}


def bad_line(text, fmt):
    """The 1-based line the BAD replacement sits on."""
    good = {"ms-link": MS_LINK, "tlink": TLINK, "wlink": WLINK}.get(fmt)
    if good is None:
        return 2
    return next(i for i, (a, b) in enumerate(zip(good.splitlines(), text.splitlines()), 1)
                if a != b)


@pytest.mark.parametrize("fmt", sorted(BAD))
def test_a_malformed_map_names_its_line_and_loads_nothing(fmt, tmp_path):
    text, words = BAD[fmt]
    path = tmp_path / f"bad-{fmt}.map"
    path.write_text(text)
    t = SymbolTable()
    t.add(parse_map("keep 0000:0100\n", "keep.sym"), 0)
    before = t.symbols()
    with pytest.raises(SymbolError) as err:
        t.load(str(path))
    assert str(err.value).startswith(f"{path}:{bad_line(text, fmt)}: ") and words in str(err.value)
    assert "\n" not in str(err.value)
    assert t.symbols() == before and len(t.groups) == 1


def test_files_that_are_no_maps(tmp_path):
    for name, data, words in (("empty.map", b"", "no symbols"),
                              ("bin.map", b"MZ\0\0\x01", "a binary file"),
                              ("nosyms.map", MS_LINK.split("  Address")[0].encode(),
                               "no symbols")):
        (tmp_path / name).write_bytes(data)
        with pytest.raises(SymbolError, match=words):
            read_map(str(tmp_path / name))
    with pytest.raises(SymbolError, match="cannot read map"):
        read_map(str(tmp_path / "missing.map"))


def test_names_at_their_edges():
    t = SymbolTable()
    t.add(parse_map("main 1000:0010\nMixed 1000:0020\nhigh 1000:FFF0\n", "a.sym"), 0)
    assert t.resolve("main+0x10") == (0x1000, 0x20)
    assert t.resolve("main + 16") == (0x1000, 0x20)           # decimal
    assert t.resolve("main+10h") == (0x1000, 0x20)
    assert t.resolve("main-0x10") == (0x1000, 0)
    assert t.resolve("mixed") == (0x1000, 0x20)               # case-insensitive fallback
    for bad, words in (("nosuch", "unknown symbol"), ("main-0x11", "leaves the symbol's"),
                       ("high+0x10", "leaves the symbol's"), ("", "not a symbol")):
        with pytest.raises(SymbolError, match=words):
            t.resolve(bad)
    assert t.describe(0x10010) == "main" and t.describe(0x1001F) == "main+0xf"
    assert t.describe(0x1000F) is None                         # below every symbol
    assert t.describe(0x1FFF0 + 0xFFFF) == "high+0xffff"
    assert t.describe(0x1FFF0 + 0x10000) is None               # 64 KiB on: too far
    assert t.clear() == 3 and t.describe(0x10010) is None


def test_a_symbol_breakpoint_that_is_unknown_changes_nothing(tmp_path):
    (tmp_path / "a.sym").write_text("loop F000:0003\n")
    prog = bytes.fromhex("B83412EBFE")
    with Machine(MachineConfig(plugins=[], bare=True, loads=[(prog, 0xF0000)],
                               entry=(0xF000, 0), symbols=[(str(tmp_path / "a.sym"), None)])) as m:
        from pypc_core.debugger import BreakpointError
        with pytest.raises(BreakpointError, match="unknown symbol 'lop'"):
            m.breakpoints.add("exec", "lop")
        assert m.breakpoints.list() == []
        stop = m.run_until(address="loop")
        assert stop.kind == "until" and (stop.cs, stop.ip) == (0xF000, 3)


def test_cli_refuses_bad_maps_in_one_line(tmp_path):
    (tmp_path / "bad.map").write_text(BAD["list"][0])
    (tmp_path / "t.bin").write_bytes(b"\xf4")
    for spec, words in ((str(tmp_path / "bad.map"), f"{tmp_path / 'bad.map'}:2: expected"),
                        (str(tmp_path / "none.map"), "cannot read map"),
                        (str(tmp_path / "bad.map") + "@12345", "not 16-bit")):
        out = subprocess.run([sys.executable, "-m", "pypc_core.cli", "run", "--headless",
                              "--bare", "--load", f"{tmp_path / 't.bin'}@F000:0000",
                              "--entry", "F000:0000", "--symbols", spec, "--timeout", "0.01"],
                             capture_output=True, text=True, timeout=120)
        lines = out.stderr.strip().splitlines()
        assert out.returncode == 2 and len(lines) == 1, out.stderr
        assert lines[0].startswith("pypc: ") and "error" in lines[0] and words in lines[0]


# -- over JSON-RPC ---------------------------------------------------------------------

@pytest.fixture
def dos_rpc(tmp_path):
    symtest_folder(tmp_path, MS_LINK)
    f = DosRpcFixture(tmp_path, "C:\\SYMTEST.EXE")
    f.load = f.machine.dos.current_psp + 0x10
    f.folder = tmp_path
    yield f
    f.close()


def test_rpc_symbols_and_breakpoints_by_name(dos_rpc):
    f, load = dos_rpc, dos_rpc.load
    c = f.client()
    listed = c.call("symbols.list")
    assert [s["name"] for s in listed["symbols"]] == ["start", "again", "counter", "helper"]
    assert listed["files"] == [{"path": "C:\\SYMTEST.MAP", "format": "ms-link",
                                "base": load, "symbols": 4}] and listed["next_offset"] is None
    page = c.call("symbols.list", {"limit": 2, "offset": 1})
    assert [s["name"] for s in page["symbols"]] == ["again", "counter"] and page["next_offset"] == 3
    hit = c.call("symbols.lookup", {"name": "helper+2"})["results"][0]
    assert hit == {"address": {"space": "segmented", "segment": load + 2, "offset": 2},
                   "linear": ((load + 2) << 4) + 2, "symbol": "helper+0x2", "name": "helper",
                   "offset": 2}
    res = c.call("symbols.lookup", {"addresses": [
        {"space": "segmented", "segment": load, "offset": 9}, 0x400]})["results"]
    assert [r["symbol"] for r in res] == ["again+0x2", None]
    # an unknown name: -32602, nothing added
    err = c.error("breakpoints.create", {"address": {"symbol": "helpr"}})
    assert err["code"] == -32602 and "unknown symbol 'helpr'" in err["message"]
    assert c.call("breakpoints.list")["breakpoints"] == []
    assert c.error("symbols.lookup", {"name": "helpr"})["code"] == -32602
    assert c.error("breakpoints.create", {"address": {"symbol": "helper", "offset": 1}})[
        "code"] == -32602
    bp = c.call("breakpoints.create", {"address": {"symbol": "helper"}})
    assert bp["address"] == {"space": "segmented", "segment": load + 2, "offset": 0}
    c.call("trace.start", {"instruction_count": 16})
    op = c.call("execution.continue")["operation_id"]
    stop = c.call("execution.wait", {"operation_id": op, "timeout_ms": 20000})["stop_reason"]
    assert stop["kind"] == "breakpoint" and stop["symbol"] == "helper"
    events = c.call("trace.read", {"limit": 16})["events"]
    assert [e.get("symbol") for e in events[:4]] == ["start", "start+0x2", "start+0x4", "again"]
    c.call("trace.stop")
    c.call("breakpoints.delete", {"breakpoint_id": bp["breakpoint_id"]})
    op = c.call("execution.run_until", {"predicate": {"address": {"symbol": "again+5"}}})
    stop = c.call("execution.wait", {"operation_id": op["operation_id"],
                                     "timeout_ms": 20000})["stop_reason"]
    assert stop["kind"] == "run_until" and stop["symbol"] == "again+0x5"
    assert stop["address"] == {"space": "segmented", "segment": load, "offset": 0xC}


def test_rpc_load_and_clear(dos_rpc):
    f, load = dos_rpc, dos_rpc.load
    c = f.client()
    (f.folder / "bad.map").write_text(BAD["tlink"][0])
    err = c.error("symbols.load", {"path": str(f.folder / "bad.map")})
    assert err["code"] == -32602 and "bad.map:16: an offset beyond 64 KiB" in err["message"]
    (f.folder / "secret.txt").write_text("hunter2 is the password\n")
    err = c.error("symbols.load", {"path": str(f.folder / "secret.txt")})
    assert "secret.txt:1: expected NAME" in err["message"] and "hunter2" not in str(err)
    assert c.call("symbols.list")["total"] == 4                   # nothing changed
    (f.folder / "w.map").write_text(WLINK)
    out = c.call("symbols.load", {"path": str(f.folder / "w.map")})
    # a link map's default base: the DOS program's load segment
    assert (out["format"], out["base"], out["symbols"], out["total"]) == ("wlink", load, 4, 8)
    out = c.call("symbols.load", {"path": str(f.folder / "w.map"), "base": 0})
    assert out["base"] == 0 and out["total"] == 8                  # the same file: replaced
    (f.folder / "l.sym").write_text("bda 0040:0000\n")
    out = c.call("symbols.load", {"path": str(f.folder / "l.sym")})
    assert (out["format"], out["base"]) == ("list", 0)
    assert c.call("symbols.lookup", {"address": 0x417})["results"][0]["symbol"] == "bda+0x17"
    assert c.error("symbols.load", {"path": str(f.folder / "l.sym"), "format": "coff"})[
        "code"] == -32602
    assert c.error("symbols.lookup", {"name": "bda", "address": 0})["code"] == -32602
    assert c.call("symbols.clear")["cleared"] == 9
    assert c.call("symbols.list")["total"] == 0
    c.call("execution.step")
    stop = c.call("execution.wait", {"operation_id": "op-1", "timeout_ms": 20000})
    assert "symbol" not in stop["stop_reason"]


def test_session_start_loads_the_map_beside_its_program(tmp_path):
    symtest_folder(tmp_path, TLINK)
    f = RpcFixture(plugins=["cga"])
    try:
        c = f.client()
        c.call("session.start", {"target": {"command": "SYMTEST.EXE", "arguments": []},
                                 "mounts": [{"drive": "C", "host_path": str(tmp_path)}],
                                 "break_at": "entry"})
        status = c.call("session.status")
        assert status["last_stop"]["symbol"] == "start"
        files = c.call("symbols.list")["files"]
        assert [(x["path"], x["format"]) for x in files] == [("C:\\SYMTEST.MAP", "tlink")]
    finally:
        f.close_with_session()


# -- the gdb stub's monitor ------------------------------------------------------------

def test_gdb_monitor_names(tmp_path):
    (tmp_path / "bare.sym").write_text("entry 07C0:0000\nspin 07C0:0003\n")
    prog = bytes.fromhex("B83412EBFE")           # mov ax,1234h; jmp $
    f = RpcFixture(plugins=[], bare=True, loads=[(prog, 0x7C00)], entry=(0x07C0, 0),
                   symbols=[(str(tmp_path / "bare.sym"), None)])
    f.gdb = GdbServer(f.controller, port=0).start()
    g = Rsp(f.gdb.port)
    try:
        out, reply = g.monitor("sym spin")
        assert reply == "OK" and out == "spin = 07C0:0003 (linear 07C03)\n"
        out, reply = g.monitor("sym 07C0:0004")
        assert out == "07C0:0004 (linear 07C04) is spin+0x1\n"
        out, _ = g.monitor("disasm entry 2")
        assert out.splitlines() == ["entry:", "07C0:0000  b83412         mov ax,0x1234",
                                    "spin:", "07C0:0003  ebfe           jmp short 0x3 <spin>"]
        out, _ = g.monitor("syms")
        assert out.splitlines() == ["07C0:0000  07C00  entry", "07C0:0003  07C03  spin"]
        out, reply = g.monitor("break spin")
        assert reply == "OK" and out.startswith("bp-1: execution breakpoint at 07C0:0003")
        out, reply = g.monitor("sym nosuch")
        assert reply == "E01" and "neither SEG:OFF" in out
    finally:
        g.close()
        f.gdb.close()
        f.close()


# -- the console -----------------------------------------------------------------------

def test_console_shows_and_takes_names(dos_rpc):
    from pypc_core.console.session import CommandError, DebugSession
    load = dos_rpc.load
    s = DebugSession(port=dos_rpc.server.port)
    try:
        view = s.snapshot()
        texts = [line[3] for line in view.disasm[:5]]
        assert texts[0] == "mov ax,cs  ; start"
        assert texts[3] == f"call {load + 2:#x}:0x0 <helper>  ; again"
        assert texts[4] == "loop 0x7 <again>"
        assert s.command("bp helper").startswith("breakpoint bp-")
        assert s.command("g") == "running"
        stop = s.wait_stop(20000)
        assert stop.startswith("breakpoint") and stop.endswith("(helper)"), stop
        with pytest.raises(CommandError, match="unknown symbol 'nosuch'"):
            s.command("bp nosuch")
        s.command("bc *")
    finally:
        s.close()


@pytest.mark.skipif(shutil.which("gdb") is None, reason="gdb is not installed")
def test_real_gdb_uses_the_symbols_of_pypc_run(tmp_path):
    from test_gdb_real import PROG as GDB_PROG, gdb
    (tmp_path / "prog.bin").write_bytes(GDB_PROG)     # ... 0006 inc ax, 0007 mov [0500h],ax
    (tmp_path / "prog.sym").write_text("entry 07C0:0000\nbump 07C0:0006\nstore 07C0:0007\n")
    pypc = subprocess.Popen([sys.executable, "-m", "pypc_core.cli", "run", "--headless", "--bare",
                             "--turbo", "--load", f"{tmp_path / 'prog.bin'}@0:7C00",
                             "--entry", "07C0:0000", "--symbols", str(tmp_path / "prog.sym"),
                             "--gdb", "0"], stderr=subprocess.PIPE, text=True)
    try:
        m = re.search(r"gdb remote stub on 127\.0\.0\.1:(\d+)", pypc.stderr.readline())
        assert m
        p = gdb(m.group(1), "monitor sym store", "monitor break store", "continue",
                "print/x $pc", "monitor sym 07C0:0009", "monitor disasm bump 2", "kill")
        out = p.stdout + p.stderr              # gdb -batch prints monitor output on stderr
        assert p.returncode == 0, p.stderr
        assert "store = 07C0:0007 (linear 07C07)" in out
        assert "bp-1: execution breakpoint at 07C0:0007" in out
        assert "$1 = 0x7c07" in out
        assert "07C0:0009 (linear 07C09) is store+0x2" in out
        assert "bump:\n07C0:0006  40             inc ax\nstore:\n07C0:0007  a30005" in out
        assert pypc.wait(timeout=30) == 0
    finally:
        if pypc.poll() is None:
            pypc.kill()
            pypc.wait()
