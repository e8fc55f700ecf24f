"""Ports answered inside the CPU (PIT counters, PIC/PPI reads, CGA status)
must give exactly what the Python handlers give: a guest that polls them
produces the same values, cycle for cycle, with the fast paths on or off."""

import numpy as np
import pytest

from pypc_core.cpu import state as S
from pypc_core.cpu import core
from pypc_core.machine import Machine, MachineConfig

CODE = 0x10000          # 1000:0000
OUT = 0x20000           # 2000:0000, results


def poll_program(word_port=0x20):
    """Programs the PIT and polls counters, PIC, PPI and CGA status.

    Every value read is stored with STOSB at 2000:DI.  Assembly:

        cli
        mov ax,2000h / mov es,ax / xor di,di / cld
        ; channel 0: mode 2, reload 1000 (binary)
        mov al,34h / out 43h,al / mov ax,1000 / out 40h,al / mov al,ah / out 40h,al
        ; channel 2: mode 3, reload 333 (odd), gate on through 61h bit 0
        mov al,0B6h / out 43h,al / mov ax,333 / out 42h,al / mov al,ah / out 42h,al
        in al,61h / or al,1 / out 61h,al
        ; channel 1: mode 0 (one-shot), LSB only, count 200
        mov al,50h / out 43h,al / mov al,200 / out 41h,al
        mov cx,300
    loop:
        mov al,0 / out 43h,al            ; latch channel 0
        in al,40h / stosb / in al,40h / stosb
        in al,42h / stosb / in al,42h / stosb      ; live reads, flip-flop
        in al,41h / stosb                ; LSB-only live read
        in al,21h / stosb                ; PIC IMR
        in al,20h / stosb                ; PIC IRR
        in al,61h / stosb                ; PPI port B
        in al,62h / stosb                ; PPI port C (timer 2 output bit 5)
        mov dx,3DAh / in al,dx / stosb   ; CGA status
        in ax,20h / stosw                ; word read: PIC IRR and IMR
        loop loop
        hlt
    """
    a = []
    a += [0xFA]
    a += [0xB8, 0x00, 0x20, 0x8E, 0xC0, 0x31, 0xFF, 0xFC]
    a += [0xB0, 0x34, 0xE6, 0x43, 0xB8, 0xE8, 0x03, 0xE6, 0x40, 0x88, 0xE0, 0xE6, 0x40]
    a += [0xB0, 0xB6, 0xE6, 0x43, 0xB8, 0x4D, 0x01, 0xE6, 0x42, 0x88, 0xE0, 0xE6, 0x42]
    a += [0xE4, 0x61, 0x0C, 0x01, 0xE6, 0x61]
    a += [0xB0, 0x50, 0xE6, 0x43, 0xB0, 0xC8, 0xE6, 0x41]
    a += [0xB9, 0x2C, 0x01]
    loop = len(a)
    a += [0xB0, 0x00, 0xE6, 0x43]
    a += [0xE4, 0x40, 0xAA, 0xE4, 0x40, 0xAA]
    a += [0xE4, 0x42, 0xAA, 0xE4, 0x42, 0xAA]
    a += [0xE4, 0x41, 0xAA]
    a += [0xE4, 0x21, 0xAA]
    a += [0xE4, 0x20, 0xAA]
    a += [0xE4, 0x61, 0xAA]
    a += [0xE4, 0x62, 0xAA]
    a += [0xBA, 0xDA, 0x03, 0xEC, 0xAA]
    a += [0xE5, word_port, 0xAB]
    a += [0xE2, (loop - (len(a) + 2)) & 0xFF]
    a += [0xF4]
    return bytes(a)


def run_poller(fast, word_port=0x20):
    with Machine(MachineConfig(plugins=["cga"])) as m:
        m.run_seconds(0.5)                       # POST, then the no-boot screen
        m.ports.set_fast_reads(fast)
        code = poll_program(word_port)
        m.memory.write(CODE, code)
        m.cpu.r.cs = CODE >> 4
        m.cpu.r.ip = 0
        m.cpu.ctl[S.C_HALTED] = 0                # it sat in the BIOS's key wait
        kinds = m.ports.port_kind[[0x40, 0x41, 0x42, 0x20, 0x21, 0x60, 0x61, 0x3DA]].tolist()
        for _ in range(1000):
            m.run_for(10_000)
            if m.cpu.ctl[S.C_HALTED] and m.cpu.r.ip == len(code):
                break
        assert m.cpu.r.cs == CODE >> 4 and m.cpu.r.ip == len(code), "the poller did not reach its HLT"
        return (m.memory.read(OUT, 300 * 12), m.clock(), m.cpu.instructions, kinds)


@pytest.mark.parametrize("word_port", [0x20, 0x40])
def test_fast_and_python_port_reads_agree(word_port):
    # word_port 40h: IN AX,40h reads counter 0 and counter 1 in one
    # instruction, leaving counter 0's flip-flop mid-word for the next latch
    fast_data, fast_cycles, fast_insns, kinds = run_poller(True, word_port)
    slow_data, slow_cycles, slow_insns, slow_kinds = run_poller(False, word_port)
    # the fast run really answered inside the CPU, the slow one never did
    assert core.PORT_TIMER in kinds and core.PORT_RASTER in kinds and core.PORT_VALUE in kinds
    assert all(k == core.PORT_PY for k in slow_kinds)
    assert fast_cycles == slow_cycles and fast_insns == slow_insns
    assert fast_data == slow_data


def test_polled_values_are_live():
    data, _, _, _ = run_poller(True)
    rows = np.frombuffer(data, dtype=np.uint8).reshape(300, 12)
    latched0 = rows[:, 0].astype(int) | (rows[:, 1].astype(int) << 8)
    assert len(set(latched0.tolist())) > 50          # channel 0 counts
    assert latched0.max() <= 1000
    ch2 = rows[:, 2].astype(int) | (rows[:, 3].astype(int) << 8)
    assert all(v % 2 == 0 for v in ch2.tolist())      # mode 3 counts by two (odd reload: even values)
    assert len(set(rows[:, 9].tolist())) > 1          # CGA status changes with time
    assert set((rows[:, 8] & 0x20).tolist()) == {0, 0x20}   # timer 2 output toggles on 62h


def test_cga_video_ram_answers_at_b8000_and_bc000():
    """MOV [BC00:0000],AX shows at B800:0000 and the other way round."""
    with Machine(MachineConfig(plugins=["cga"])) as m:
        m.run_seconds(0.3)
        # mov ax,0BC00h / mov ds,ax / mov word [0],4F41h / mov ax,0B800h /
        # mov ds,ax / mov byte [2],42h / hlt
        code = bytes([0xB8, 0x00, 0xBC, 0x8E, 0xD8, 0xC7, 0x06, 0x00, 0x00, 0x41, 0x4F,
                      0xB8, 0x00, 0xB8, 0x8E, 0xD8, 0xC6, 0x06, 0x02, 0x00, 0x42, 0xF4])
        m.memory.write(CODE, code)
        m.cpu.r.cs, m.cpu.r.ip = CODE >> 4, 0
        m.cpu.r.flags = 0xF002
        m.cpu.ctl[S.C_HALTED] = 0
        m.run_for(2000)
        assert m.memory.read(0xB8000, 3) == b"A\x4fB"
        assert m.memory.read(0xBC000, 3) == b"A\x4fB"
        assert m.screen_text()[0].startswith("AB")
