"""The board a card plugs into: binding declarations, conflicts with every
device (motherboard included), memory windows with handlers and aliases,
and the fast-path primitives, used by a third-party test card
(tests/thirdparty/pypc_testcard) that knows only the plugin interface."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pypc_core.board import Backplane, ClaimError, Equipment, Resources, \
    motherboard_declarations
from pypc_core.cpu import Cpu
from pypc_core.cpu import state as S
from pypc_core.device import DeviceDeclaration, MemoryWindow
from pypc_core.machine import Machine, MachineConfig

from port_exits import ExitCounter

HERE = Path(__file__).resolve().parent
THIRDPARTY = HERE / "thirdparty"
CODE = 0x10000
OUT = 0x20000


# -- the declaration is binding --------------------------------------------------

DECL = DeviceDeclaration(name="card", ports=[0x300, 0x301], irqs=[5], dma_channels=[1],
                         memory=[MemoryWindow(0xD0000, 0x2000, "device")])


def board():
    return Backplane().board(DECL)


def test_claims_outside_the_declaration_are_refused():
    b = board()
    with pytest.raises(ClaimError, match="card: port 0302h is not in its declaration"):
        b.claim_ports([0x301, 0x302])
    with pytest.raises(ClaimError, match="card: IRQ 3 is not in its declaration"):
        b.irq(3)
    with pytest.raises(ClaimError, match="card: DMA channel 2 is not in its declaration"):
        b.dma(2)
    with pytest.raises(ClaimError, match="card: memory D2000h-D2FFFh is not in its"):
        b.map_ram(0xD2000, 0x1000)
    with pytest.raises(ClaimError, match="not in its"):
        b.map_alias(0xD1000, 0x1000, 0xE0000)          # alias of undeclared memory
    with pytest.raises(ClaimError, match="must be claimed"):
        b.oneshot(0x300, [1])                           # a fast path needs the claim
    assert b.claimed_ports == [] and b.claimed_memory == []   # nothing half-done


def test_conflicts_with_the_motherboard_name_both():
    ledger = Resources()
    for owner, decl in motherboard_declarations():
        ledger.add(owner, decl)
    from pypc_plugins.fdc import Fdc765
    ledger.add("fdc", Fdc765.declaration)             # the diskette adapter card
    cases = [
        (DeviceDeclaration(name="x", irqs=[0]), "IRQ 0 claimed by both pit and x"),
        (DeviceDeclaration(name="x", irqs=[1]), "IRQ 1 claimed by both keyboard and x"),
        (DeviceDeclaration(name="x", dma_channels=[2]),
         "DMA channel 2 claimed by both fdc and x"),
        (DeviceDeclaration(name="x", irqs=[6]), "IRQ 6 claimed by both fdc and x"),
        (DeviceDeclaration(name="x", dma_channels=[0]), "DMA channel 0 claimed by both dma"),
        (DeviceDeclaration(name="x", ports=[0x61]), "I/O port 0061h claimed by both ppi and x"),
        (DeviceDeclaration(name="x", memory=[MemoryWindow(0xF8000, 0x1000)]),
         "memory at F8000h claimed by both bios and x"),
        (DeviceDeclaration(name="x", memory=[MemoryWindow(0x9F000, 0x2000)]),
         "memory at 9F000h claimed by both ram and x"),
    ]
    for decl, message in cases:
        with pytest.raises(ClaimError, match=message):
            ledger.add("x", decl)
    ledger.add("card", DECL)
    with pytest.raises(ClaimError, match="IRQ 5 claimed by both card and other"):
        ledger.add("other", DeviceDeclaration(name="other", irqs=[5]))


def test_bad_declarations_are_refused():
    ledger = Resources()
    for decl, message in [(DeviceDeclaration(name="x", irqs=[9]), "not 0-7"),
                          (DeviceDeclaration(name="x", dma_channels=[4]), "not 0-3"),
                          (DeviceDeclaration(name="x", ports=[0x10000]), "0000h-FFFFh"),
                          (DeviceDeclaration(name="x", memory=[MemoryWindow(0xFF000, 0x2000)]),
                           "inside 1 MiB")]:
        with pytest.raises(ClaimError, match=message):
            ledger.add("x", decl)


def test_equipment_follows_capabilities_not_names():
    decls = [DeviceDeclaration(name="a", ports=list(range(0x2F8, 0x300)),
                               capabilities=["serial"]),
             DeviceDeclaration(name="b", ports=list(range(0x3F8, 0x400)),
                               capabilities=["serial"]),
             DeviceDeclaration(name="c", ports=[0x201], capabilities=["game-port"]),
             DeviceDeclaration(name="d", capabilities=["video", "vga"]),
             DeviceDeclaration(name="e", capabilities=["floppy-controller"])]
    eq = Equipment.from_declarations(decls, floppy_drives=2)
    assert eq.serial_ports == [0x3F8, 0x2F8] and eq.game_port and eq.video == "vga"
    word = eq.word()
    assert (word >> 9) & 7 == 2 and word & 0x1000 and (word >> 4) & 3 == 0
    assert word & 0xC1 == 0x41                      # two floppy drives
    no_fdc = Equipment.from_declarations(decls[:-1], floppy_drives=2)
    assert no_fdc.floppy_drives == 0 and no_fdc.word() & 0xC1 == 0   # no controller, no drives
    mono = Equipment.from_declarations([DeviceDeclaration(name="m",
                                                          capabilities=["video", "mda"])])
    assert (mono.word() >> 4) & 3 == 3 and mono.word() & 0x1000 == 0


# -- memory windows in the core ---------------------------------------------------------

def test_alias_ring_of_three_copies_in_the_core():
    bp = Backplane()
    decl = DeviceDeclaration(name="mda", memory=[MemoryWindow(0xB0000, 0x3000)])
    b = bp.board(decl)
    b.map_ram(0xB0000, 0x1000)
    b.map_alias(0xB1000, 0x1000, 0xB0000)
    b.map_alias(0xB2000, 0x1000, 0xB1000)            # joins the same ring
    mem = bp.memory
    mem.map_ram(0, 0x20000)
    # mov ax,B200h / mov ds,ax / mov byte [7],42h / mov ax,B000h / mov ds,ax /
    # mov byte [9],43h / hlt
    code = bytes([0xB8, 0x00, 0xB2, 0x8E, 0xD8, 0xC6, 0x06, 0x07, 0x00, 0x42,
                  0xB8, 0x00, 0xB0, 0x8E, 0xD8, 0xC6, 0x06, 0x09, 0x00, 0x43, 0xF4])
    mem.write(CODE, code)
    cpu = Cpu(mem.mem, mem.page_table, mem.xflags, bp.ports.port_kind, bp.ports.port_io)
    cpu.r.cs, cpu.r.ip = CODE >> 4, 0
    assert cpu.run(1 << 20) == S.EXIT_HALT
    for base in (0xB0000, 0xB1000, 0xB2000):
        assert mem.read(base + 7, 3) == b"\x42\x00\x43"
    mem.write(0xB1000 + 0x10, b"Z")                   # the bus writes every copy too
    assert {mem.read(base + 0x10, 1) for base in (0xB0000, 0xB1000, 0xB2000)} == {b"Z"}


def test_python_handler_error_stops_the_machine():
    with Machine(MachineConfig(plugins=["cga"])) as m:
        decl = DeviceDeclaration(name="faulty", memory=[MemoryWindow(0xD0000, 0x1000)])
        b = m.backplane.board(decl)

        def boom(address):
            raise RuntimeError(f"no byte at {address:05X}h")
        b.map_handler(0xD0000, 0x1000, read=boom)
        m.run_seconds(0.2)
        # mov ax,D000h / mov ds,ax / mov al,[3] / hlt
        m.memory.write(CODE, bytes([0xB8, 0x00, 0xD0, 0x8E, 0xD8, 0xA0, 0x03, 0x00, 0xF4]))
        m.cpu.r.cs, m.cpu.r.ip = CODE >> 4, 0
        m.cpu.ctl[S.C_HALTED] = 0
        with pytest.raises(RuntimeError, match="no byte at D0003h"):
            m.run_for(100_000)


# -- raster status bits: as many as devices ask for ------------------------------------

def test_two_raster_ports_each_with_its_own_timing():
    bp = Backplane()
    decl = DeviceDeclaration(name="two", ports=[0x3BA, 0x3DA])
    b = bp.board(decl)
    b.claim_ports([0x3BA, 0x3DA])
    mono, colour = b.raster(0x3BA), b.raster(0x3DA)
    mono.set(0, 882, 720, 882 * 370, 350, 354, 370, 0xF0, 0x01, 0x80, num=18, den=5)
    colour.set(5, 912, 640, 912 * 262, 200, 224, 240, 0xF0, 0x01, 0x08, num=3, den=1)
    bp.memory.map_ram(0, 0x30000)
    # cld / mov ax,2000h / mov es,ax / xor di,di / mov cx,400 /
    # l: mov dx,3BAh / in al,dx / stosb / mov dx,3DAh / in al,dx / stosb / loop l / hlt
    code = bytes([0xFC, 0xB8, 0x00, 0x20, 0x8E, 0xC0, 0x31, 0xFF, 0xB9, 0x90, 0x01,
                  0xBA, 0xBA, 0x03, 0xEC, 0xAA, 0xBA, 0xDA, 0x03, 0xEC, 0xAA,
                  0xE2, 0xF4, 0xF4])
    bp.memory.write(CODE, code)
    cpu = Cpu(bp.memory.mem, bp.memory.page_table, bp.memory.xflags,
              bp.ports.port_kind, bp.ports.port_io)
    cpu.r.cs, cpu.r.ip = CODE >> 4, 0
    cpu.ctl[S.C_CYCLES] = 123_456
    assert cpu.run(1 << 30) == S.EXIT_HALT       # no exit: both answered in the core
    data = bp.memory.read(OUT, 800)
    # replay the cycle of every IN (8 + 4 cycles apart as executed) in Python
    assert len(set(data[0::2])) > 1 and len(set(data[1::2])) > 1
    assert all(v & 0xF0 == 0xF0 for v in data)
    assert set(data[0::2]) != set(data[1::2])      # two different timings


# -- the third-party card, installed through an entry point -------------------------

@pytest.fixture
def testcard(tmp_path, monkeypatch):
    info = tmp_path / "pypc_testcard-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pypc-testcard\n"
                                   "Version: 1.0\n")
    (info / "entry_points.txt").write_text("[pypc.devices]\ntestcard = pypc_testcard\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(THIRDPARTY))
    yield tmp_path
    sys.modules.pop("pypc_testcard", None)


def run_testcard_program(m):
    exits = []
    m.ports.add_observer(ExitCounter(exits), exits_only=True)
    m.run_seconds(0.3)
    m.memory.write(CODE, (THIRDPARTY / "testcard.bin").read_bytes())
    m.cpu.r.cs, m.cpu.r.ip = CODE >> 4, 0
    m.cpu.ctl[S.C_HALTED] = 0
    m.ports.write(0x21, 0xFF)                      # no interrupts in between
    for _ in range(100):
        m.run_for(20_000)
        if m.cpu.r.cs == CODE >> 4 and m.cpu.ctl[S.C_HALTED]:
            break
    return m.memory.read(OUT, 9), exits


def test_third_party_card_uses_windows_and_fast_paths(testcard):
    with Machine(MachineConfig(plugins=["cga", "testcard"])) as m:
        card = m.devices["testcard"]
        data, exits = run_testcard_program(m)
        assert m.cpu.r.ip == len((THIRDPARTY / "testcard.bin").read_bytes())
        assert data[0] == 0xA5                                   # compiled window
        assert data[1] | data[2] << 8 == 0x1234 ^ 0xFFFF
        assert card.store[0x10] == 0x5A
        assert card.python_writes == [(0xD1033, 7)]              # Python window
        assert data[3] == (0x33 + 1) & 0xFF
        assert data[4] == 0x77                                   # the alias
        polls = data[5] | data[6] << 8
        # the one-shots fire as the OUT completes; XOR CX,CX 3 cycles, then
        # IN AL,DX 8 + INC CX 2 + TEST AL,1 4 + JNZ 16 = 30 cycles a poll:
        # the reads before 1000 cycles see the bit, one more sees it clear
        assert polls == -(-(1000 - 3) // 30) + 1, polls
        assert data[7] == 0xF2                 # one-shot 1 still runs, constant F0h
        assert data[8] == 3 and card.writes[0] == 3              # compiled port
        assert 0x300 not in exits and 0x301 not in exits         # all in the core
        assert card.oneshot.fires == 1
        # the bus's own accesses go through the same handlers
        assert m.memory.read(0xD0010, 1) == b"\xA5"
        m.memory.write(0xD0011, b"\x0F")
        assert card.store[0x11] == 0x0F
        assert m.ports.read(0x301) == 3
        # its IRQ line reaches the PIC
        m.ports.write(0x21, 0xFF & ~0x20)
        card.raise_irq()
        assert m.pic.irr & 0x20


def test_pypc_plugins_shows_what_the_card_really_claims(testcard):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(testcard), str(THIRDPARTY), os.environ.get("PYTHONPATH", "")])}
    exe = shutil.which("pypc", path=os.path.dirname(sys.executable)) or "pypc"
    proc = subprocess.run([exe, "plugins", "--json"], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    infos = {i["name"]: i for i in json.loads(proc.stdout)}
    attached = infos["testcard"]["attached"][0]
    for part in ("ports 300h-301h", "compiled D0000h-D0FFFh", "handler D1000h-D1FFFh",
                 "ram D2000h-D2FFFh", "alias D3000h-D3FFFh", "one-shot 300h",
                 "compiled 301h"):
        assert part in attached, attached
    cga = infos["cga"]["attached"][0]
    assert "alias BC000h-BFFFFh" in cga and "raster 3DAh" in cga


def test_testcard_program_reassembles(tmp_path):
    nasm = shutil.which("nasm")
    if nasm is None:
        pytest.skip("nasm is not installed")
    out = tmp_path / "testcard.bin"
    subprocess.run([nasm, "-f", "bin", "-o", str(out), str(THIRDPARTY / "testcard.asm")],
                   capture_output=True, check=True)
    assert out.read_bytes() == (THIRDPARTY / "testcard.bin").read_bytes()


def test_two_video_cards_are_a_start_up_error(tmp_path, monkeypatch):
    info = tmp_path / "pypc_vidcard-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pypc-vidcard\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pypc.devices]\nmono = pypc_vidcard\n")
    (tmp_path / "pypc_vidcard.py").write_text(
        "from pypc_core import hookimpl\n"
        "from pypc_core.device import Device, DeviceDeclaration\n"
        "class Mono(Device):\n"
        "    declaration = DeviceDeclaration(name='mono', ports=[0x3B8],\n"
        "                                    capabilities=['video', 'mda'])\n"
        "@hookimpl\n"
        "def pypc_device_declare():\n"
        "    return Mono.declaration\n"
        "@hookimpl\n"
        "def pypc_device_create():\n"
        "    return Mono()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        # refused when the plugins are selected, before any machine exists
        with pytest.raises(ClaimError, match="two video cards: cga and mono"):
            Machine(MachineConfig(plugins=["cga", "mono"]))
    finally:
        sys.modules.pop("pypc_vidcard", None)


def test_ram_window_view_is_the_cpu_memory():
    bp = Backplane()
    b = bp.board(DECL)
    view = b.map_ram(0xD0000, 0x1000)
    bp.memory.write(0xD0004, b"\x99")
    assert view[4] == 0x99 and isinstance(view, np.ndarray)


def test_the_video_cards_follow_the_video_device_protocol():
    from pypc_core.device import VideoDevice
    from pypc_plugins.cga import CGA
    from pypc_plugins.gameport import GamePort
    from pypc_plugins.vga import pypc_device_create as make_vga
    assert isinstance(CGA(), VideoDevice)
    assert isinstance(make_vga(), VideoDevice)
    assert not isinstance(GamePort(), VideoDevice)


def test_a_card_moves_data_on_its_dma_channel():
    from pypc_core.chipset import Dma8237
    bp = Backplane()
    bp.memory.map_ram(0, 0x20000)
    dma = Dma8237(memory=bp.memory)
    dma.attach(bp.board(dma.declaration))   # the chip claims its ports on its own board
    bp.dma = dma
    b = bp.board(DECL)
    with pytest.raises(ClaimError, match="DMA channel 3"):
        b.dma(3)
    chan = b.dma(1)
    out = bp.ports.write
    out(0x0B, 0x45)                   # channel 1: single, increment, write to memory
    out(0x0C, 0)                      # clear the flip-flop
    out(0x02, 0x00)
    out(0x02, 0x40)                   # address 4000h
    out(0x83, 0x01)                   # page 1: 14000h
    out(0x03, 2)
    out(0x03, 0)                      # count 2: three bytes
    out(0x0A, 0x01)                   # unmask channel 1
    chan.request()
    assert chan.transfer(b"xyzw") == 3 and chan.terminal_count
    assert bp.memory.read(0x14000, 4) == b"xyz\x00"
