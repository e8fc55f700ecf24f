"""INT 16h AH=01h runs in 8088 code in the BIOS ROM (no trap), marks empty
polls on the BIOS's stamp port, and the machine tells a prompt's tight
polling loop from DOS's occasional Ctrl-C checks."""

from pypc_core.firmware.rom import IDLE_STAMP_PORT
from pypc_core.cpu import state as S
from pypc_core.firmware import rom
from pypc_core.machine import Machine, MachineConfig

CODE = 0x10000


def start(m, code):
    m.memory.write(CODE, bytes(code))
    m.cpu.r.cs, m.cpu.r.ip = CODE >> 4, 0
    m.cpu.r.ss, m.cpu.r.sp = 0x2000, 0x1000
    m.cpu.r.ds = 0
    m.cpu.r.flags = 0xF202                 # IF set
    m.cpu.ctl[S.C_HALTED] = 0


# poll: mov ah,1 / int 16h / jz poll / mov ah,0 / int 16h / mov [0600h],ax / hlt
POLL_LOOP = [0xB4, 0x01, 0xCD, 0x16, 0x74, 0xFA, 0xB4, 0x00, 0xCD, 0x16,
             0xA3, 0x00, 0x06, 0xFA, 0xF4]


def test_ah01_answers_in_rom_code_and_stamps_empty_polls():
    with Machine(MachineConfig()) as m:
        m.run_seconds(0.3)
        traps_before = m.cpu.instructions
        start(m, POLL_LOOP)
        count0 = m.ports.fast(IDLE_STAMP_PORT).values()[0]
        m.run_seconds(0.2)
        polls = m.ports.fast(IDLE_STAMP_PORT).values()[0] - count0
        assert polls > 1000                    # a tight loop, counted inside the CPU
        assert m.ports.port_kind[rom.IDLE_STAMP_PORT] != 0
        assert m.waiting_for_key()
        m.type_text("q")
        m.run_seconds(0.3)
        assert m.memory.read_word(0x600) == 0x1071       # scan code 10h, 'q'
        assert m.cpu.instructions > traps_before


def test_slow_polling_is_not_a_prompt():
    # one poll, then a busy delay of ~60,000 instructions, then again: DOS
    # checking for Ctrl-C while it works, not a guest waiting for a key
    #   poll: mov ah,1 / int 16h / mov cx,0 / spin: loop spin / jmp poll
    code = [0xB4, 0x01, 0xCD, 0x16, 0xB9, 0x00, 0x00, 0xE2, 0xFE, 0xEB, 0xF5]
    with Machine(MachineConfig()) as m:
        m.run_seconds(0.3)
        start(m, code)
        m.run_seconds(0.1)                       # the no-boot screen's wait is over
        seen = []
        for _ in range(20):
            m.run_seconds(1 / 60)
            seen.append(m.waiting_for_key())
        assert not any(seen)
        assert m.ports.fast(IDLE_STAMP_PORT).values()[0] > 0            # it did poll


def test_ah01_with_a_key_leaves_it_in_the_buffer():
    with Machine(MachineConfig()) as m:
        m.run_seconds(0.3)
        # wait: mov cx,0 / l: loop l / dec byte [0700h] / jnz wait   (the key
        # arrives meanwhile; [0700h] starts at 4: ~0.9 s), then
        # mov ah,1 / int 16h / mov [0600h],ax / pushf / pop ax / mov [0602h],ax /
        # mov ah,1 / int 16h / mov [0604h],ax / cli / hlt
        m.memory.write(0x700, b"\x04")
        start(m, [0xB9, 0x00, 0x00, 0xE2, 0xFE, 0xFE, 0x0E, 0x00, 0x07, 0x75, 0xF5,
                  0xB4, 0x01, 0xCD, 0x16, 0xA3, 0x00, 0x06, 0x9C, 0x58, 0xA3, 0x02, 0x06,
                  0xB4, 0x01, 0xCD, 0x16, 0xA3, 0x04, 0x06, 0xFA, 0xF4])
        m.type_text("z")
        m.run_seconds(1.5)
        assert m.memory.read_word(0x600) == 0x2C7A          # 'z'
        assert not m.memory.read_word(0x602) & 0x40         # ZF clear: a key waits
        assert m.memory.read_word(0x604) == 0x2C7A          # still there
