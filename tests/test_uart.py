"""The 8250 UART plugin (COM1/COM2): registers through ports, character
timing, loopback and interrupts, the flow-controlled host side, INT 14h,
the TCP bridge, and the guest program tests/guest/serial.asm moving 1 MiB
each way."""

import argparse
import socket
import sys
from pathlib import Path

import numpy as np
import pytest

from pypc_core.board import Backplane
from pypc_core.chipset import Pic8259
from pypc_core.cpu import state as S
from pypc_core.machine import Machine, MachineConfig
from pypc_plugins.uart import SerialError, Uart8250, char_cycles, com1, com2
from pypc_plugins.uart import fast as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from guest import program_bytes, run_to_phase, slots  # noqa: E402

COM = 0x3F8
CODE = 0x10000
OUT = 0x20000
WIRE = argparse.Namespace(serial_timing="wire")     # --serial-timing wire


class Bench:
    """A UART on a bare board with a real 8259 and a settable clock; wire
    timing unless ``timing`` says otherwise (most tests here time characters)."""

    def __init__(self, base=COM, irq=4, timing="wire"):
        self.cycle = 0
        self.pic = Pic8259()
        self.bp = Backplane(clock=lambda: self.cycle, pic=self.pic)
        self.uart = Uart8250("uart", base, irq, timing=timing)
        self.uart.attach(self.bp.board(self.uart.declaration))
        self.ports = self.bp.ports
        # PIC: edge triggered, vectors 08h, all IRQs unmasked
        for port, value in ((0x20, 0x13), (0x21, 0x08), (0x21, 0x09), (0x21, 0x00)):
            self.pic.port_write(port, value)

    def out(self, reg, value):
        self.ports.write(COM + reg, value)

    def inp(self, reg):
        return self.ports.read(COM + reg)

    def at(self, cycle):
        self.cycle = cycle
        self.uart.advance(cycle)

    def setup(self, divisor=1, lcr=0x03):
        self.out(3, 0x80)
        self.out(0, divisor & 0xFF)
        self.out(1, divisor >> 8)
        self.out(3, lcr)


# -- timing -------------------------------------------------------------------------------

def test_character_time_follows_divisor_and_line_control():
    assert char_cycles(0x03, 1) == 414            # 10 bits at 115200 baud
    assert char_cycles(0x03, 12) == 4972          # 9600 baud
    assert char_cycles(0x1B, 12) == 5469          # 8E1: 11 bits
    assert char_cycles(0x07, 1) == 456            # 8N2: 11 bits
    assert char_cycles(0x04, 1) == 311            # 5 data bits, 1.5 stop bits: 7.5 bits
    assert char_cycles(0x03, 0) > char_cycles(0x03, 65535)   # divisor 0 is 65536


def test_transmit_takes_one_character_time_and_thr_buffers_one():
    b = Bench()
    b.setup(divisor=12)                           # 9600 8N1: 4972 cycles a byte
    b.out(0, 0x41)                                # the shift register takes it
    assert b.inp(5) & 0x60 == 0x20                # THR empty, transmitter busy
    b.out(0, 0x42)                                # waits in THR
    assert b.inp(5) & 0x60 == 0x00
    b.at(4971)
    assert b.uart.read_output(0, 10) == (0, 0, b"")
    b.at(4972)
    assert b.uart.read_output(0, 10) == (0, 1, b"A")
    assert b.inp(5) & 0x60 == 0x20                # B moved to the shift register
    b.at(2 * 4972)
    assert b.uart.read_output(0, 10)[2] == b"AB"
    assert b.inp(5) & 0x60 == 0x60


def test_receive_is_flow_controlled_by_the_guest_reading_rbr():
    b = Bench()
    b.setup(divisor=1)
    assert b.uart.write_input(b"xyz") == 3
    assert b.uart.status()["rx_pending"] == 3
    b.at(413)
    assert not b.inp(5) & 1
    b.at(414)
    assert b.inp(5) & 1
    b.at(100_000)                                 # the guest is slow: nothing lost
    assert b.inp(5) & 0x1F == 0x01                # no overrun
    assert b.inp(0) == ord("x")
    assert not b.inp(5) & 1                       # y comes a bit time after the read
    b.at(100_000 + 41)
    assert b.inp(5) & 1 and b.inp(0) == ord("y")
    b.at(100_041 + 414)
    assert b.inp(0) == ord("z")
    assert b.uart.status()["rx_pending"] == 0


def test_a_byte_queued_before_the_divisor_is_set_arrives_at_the_guests_rate():
    """After reset the divisor latch is 0 (65536: about 5.7 s a character).
    A byte the host queues then is in flight at that rate; when the guest
    sets 9600 baud its remaining bits take the new rate, so it arrives one
    9600-baud character after the setup (not seconds later), and the next
    one follows at 9600 baud.  The same holds for a byte the guest sends."""
    b = Bench()
    assert b.uart.write_input(b"AB") == 2
    b.out(0, 0x54)                                # sent at the reset rate
    b.at(1000)
    b.setup(divisor=12)                           # 9600 8N1: 4972 cycles a byte
    b.at(1000 + 4972 - 8)
    assert not b.inp(5) & 1
    assert b.uart.read_output(0, 10)[2] == b""
    b.at(1000 + 4972 + 8)
    assert b.inp(5) & 1 and b.inp(0) == ord("A")
    assert b.uart.read_output(0, 10)[2] == b"T"
    b.at(1000 + 4972 + 8 + 41 + 4972)
    assert b.inp(5) & 1 and b.inp(0) == ord("B")
    assert b.uart.status()["rx_pending"] == 0


def test_a_rate_change_mid_character_rescales_what_is_left():
    b = Bench()
    b.setup(divisor=12)                           # 4972 cycles a byte
    b.uart.write_input(b"x")
    b.at(2486)                                    # half of it has arrived
    b.setup(divisor=24)                           # 4800 baud: the other half takes 4972
    b.at(2486 + 4972 - 4)
    assert not b.inp(5) & 1
    b.at(2486 + 4972 + 4)
    assert b.inp(5) & 1 and b.inp(0) == ord("x")


# -- registers, loopback, interrupts -------------------------------------------------------

def test_scratch_divisor_and_register_read_back():
    b = Bench()
    b.setup(divisor=0x0180, lcr=0x1B)
    b.out(7, 0xA5)
    assert b.inp(7) == 0xA5
    assert b.inp(3) == 0x1B
    b.out(3, 0x9B)
    assert (b.inp(0), b.inp(1)) == (0x80, 0x01)
    b.out(3, 0x1B)
    b.out(1, 0xFF)
    assert b.inp(1) == 0x0F                        # IER has four bits
    b.out(4, 0xFF)
    assert b.inp(4) == 0x1F
    assert b.uart.divisor == 0x0180


def test_loopback_echoes_modem_lines_and_data_but_never_interrupts():
    b = Bench()
    b.setup(divisor=1)
    b.out(1, 0x0F)                                 # every interrupt enabled
    b.out(4, 0x1B)                                 # loop, OUT2, RTS, DTR
    assert b.inp(6) == 0xB0                        # CTS, DSR, DCD; RI (OUT1) off
    b.out(4, 0x1F)                                 # OUT1 on -> RI
    assert b.inp(6) == 0xF0
    b.out(4, 0x1B)                                 # RI falls: trailing edge delta
    assert b.inp(6) == 0xB4 and b.inp(6) == 0xB0
    b.inp(2)                                       # clear the THR-empty latch
    b.out(0, 0x55)
    b.at(414)
    assert b.inp(5) & 1
    assert b.inp(2) == 0x04                        # received data pending inside...
    assert not b.pic.irr & 0x10                    # ...but OUT2 never reaches the bus
    assert b.inp(0) == 0x55
    assert b.uart.read_output(0, 10)[2] == b""     # nothing went to the host
    with pytest.raises(SerialError, match="loopback"):
        b.uart.write_input(b"no")
    assert b.uart.status()["rx_pending"] == 0      # refused, nothing queued


def test_interrupt_priorities_and_out2_gate():
    b = Bench()
    b.setup(divisor=1)
    b.out(4, 0x03)                                 # OUT2 clear
    b.out(1, 0x07)                                 # line status, data, THR empty
    assert F.interrupt_id(b.uart.st) == 0x02       # THR empty (enabled while empty)
    assert not b.pic.irr & 0x10                    # gated by OUT2
    b.out(4, 0x0B)
    assert b.pic.irr & 0x10                        # now on IRQ 4
    assert b.inp(2) == 0x02
    b.uart.write_input(b"q")
    b.at(414)
    assert b.inp(2) == 0x04                        # data ranks above THR empty
    # an overrun in loopback ranks above data
    b.out(4, 0x1B)
    b.out(0, 1)
    b.out(0, 2)
    b.at(10_000)
    assert b.inp(2) == 0x06
    assert b.inp(5) & 0x02 and not b.inp(5) & 0x02   # LSR read clears it
    assert b.inp(2) == 0x04


def test_iir_read_clears_thr_empty_interrupt_and_lowers_irq():
    b = Bench()
    b.setup(divisor=1)
    b.out(4, 0x0B)
    b.out(1, 0x02)
    assert b.pic.irr & 0x10
    assert b.inp(2) == 0x02
    assert b.inp(2) == 0x01
    assert not b.uart._irq.level


# -- flow-controlled (the default) -----------------------------------------------------------

def test_flow_control_moves_bytes_at_once_and_keeps_interrupts_real():
    b = Bench(timing="flow")
    assert b.uart.status()["wire_timing"] is False
    assert b.uart.divisor == 0                      # never set: no matter
    b.uart.write_input(b"R\r")
    assert b.inp(5) & 0x01 and b.inp(0) == 0x52     # at once, no character time
    assert b.inp(5) & 0x01 and b.inp(0) == 0x0D     # the next one as RBR was read
    assert not b.inp(5) & 0x01
    b.out(0, 0x41)                                  # THR: out at once
    assert b.uart.read_output(0, 16) == (0, 1, b"A")
    assert b.inp(5) & 0x60 == 0x60
    # received-data interrupts are the 8250's: IER bit 0 and OUT2
    b.out(4, 0x08)
    b.out(1, 0x01)
    assert not b.pic.irr & 0x10
    b.uart.write_input(b"x")
    b.at(1)
    assert b.pic.irr & 0x10 and b.inp(2) == 0x04
    assert b.inp(0) == ord("x") and b.inp(2) == 0x01
    assert not b.uart._irq.level


def test_flow_control_state_round_trip_keeps_each_ports_timing():
    wire, flow = Bench(), Bench(timing="flow")
    wire.setup(divisor=12)
    wire.uart.write_input(b"ab")
    state = wire.uart.get_state()
    flow.uart.set_state(state)                      # the timing is configuration
    assert flow.uart.status()["wire_timing"] is False and flow.uart.char_cycles() == 0
    flow.at(5000)                                   # the byte in flight arrives as it was due
    assert flow.inp(5) & 0x01 and flow.inp(0) == ord("a")
    assert flow.inp(5) & 0x01 and flow.inp(0) == ord("b")   # the rest at once
    back = Bench()
    back.uart.set_state(flow.uart.get_state())
    assert back.uart.char_cycles() == 4972          # 9600 baud again


def test_unknown_serial_timing_is_refused():
    with pytest.raises(ValueError, match="serial timing"):
        Uart8250("uart", COM, 4, timing="fast")


# -- host side ------------------------------------------------------------------------------

def test_host_queue_limits_and_output_offsets():
    b = Bench()
    b.setup(divisor=1)
    with pytest.raises(SerialError, match="no bytes"):
        b.uart.write_input(b"")
    assert b.uart.write_input(bytes(70_000)) == 65536   # as many as fit
    with pytest.raises(SerialError, match="full"):
        b.uart.write_input(b"x")
    # 70,000 bytes out: the oldest 4,464 are gone
    cycle = 0
    for i in range(70_000):
        b.out(0, i & 0xFF)
        cycle += 414
        b.at(cycle)
    st = b.uart.status()
    assert (st["tx_start"], st["tx_next"]) == (70_000 - 65536, 70_000)
    with pytest.raises(SerialError, match="no longer retained"):
        b.uart.read_output(0, 16)
    with pytest.raises(SerialError, match="beyond"):
        b.uart.read_output(70_001, 16)
    assert b.uart.read_output(69_998, 16) == (69_998, 70_000, bytes([69_998 & 0xFF,
                                                                     69_999 & 0xFF]))
    assert b.uart.read_output(70_000, 1) == (70_000, 70_000, b"")
    with pytest.raises(SerialError, match="max_bytes"):
        b.uart.read_output(70_000, 0)


def test_state_round_trip_continues_identically():
    b = Bench()
    b.setup(divisor=3)
    b.out(4, 0x0B)
    b.out(1, 0x01)
    b.uart.write_input(b"hello")
    b.out(0, 0x21)
    b.at(1500)
    state = b.uart.get_state()
    import json
    state = json.loads(json.dumps(state))
    other = Bench()
    other.cycle = 1500
    other.uart.set_state(state)
    assert other.uart.get_state() == b.uart.get_state()
    for t in range(1500, 20_000, 97):
        b.at(t)
        other.at(t)
        assert b.inp(5) == other.inp(5)
        if b.inp(5) & 1:
            assert b.inp(0) == other.inp(0)
    assert b.uart.status() == other.uart.status()
    with pytest.raises(ValueError):
        other.uart.set_state({"words": [0]})


def test_com1_and_com2_are_two_instances_of_one_plugin():
    d1, d2 = com1.pypc_device_declare(), com2.pypc_device_declare()
    assert (d1.name, d1.ports[0], d1.irqs) == ("uart", 0x3F8, [4])
    assert (d2.name, d2.ports[0], d2.irqs) == ("uart2", 0x2F8, [3])
    with Machine(MachineConfig(plugins=["cga", "uart", "uart2"])) as m:
        m.run_seconds(0.3)
        assert m.memory.read(0x400, 4) == bytes([0xF8, 0x03, 0xF8, 0x02])
        assert (m.memory.read_word(0x410) >> 9) & 7 == 2   # two serial ports
        assert m.devices["uart2"].status()["port"] == "COM2"


# -- guest programs -------------------------------------------------------------------------

def start_serial_program(m):
    """serial.asm runs from memory (it needs no disk): its loader is skipped
    and execution starts at ``main`` (the first CLI; MOV [0030h],...)."""
    code = program_bytes("serial")
    main = code.index(bytes([0xFA, 0xC7, 0x06, 0x30, 0x00]))
    m.run_seconds(0.3)
    m.memory.write(0x7C00, code)
    r = m.cpu.r
    r.cs, r.ip, r.ds, r.es, r.ss, r.sp = 0, 0x7C00 + main, 0, 0, 0, 0x7C00
    m.cpu.ctl[S.C_HALTED] = 0


def pump(m, uart, data, offset, limit_s):
    """Feed ``data`` as the queue has room; collect the echo."""
    sent, got = 0, bytearray()
    end = m.clock() + int(limit_s * 4_772_727)
    while len(got) < len(data) and m.clock() < end:
        if sent < len(data) and uart.input_waiting < 65536:
            sent += uart.write_input(data[sent:sent + 4096])
        m.run_for(200_000)
        _, offset, chunk = uart.read_output(offset, 65536)
        got += chunk
    return bytes(got), offset


PHASE1 = [0xB0, 0xB0, 0x41, None, 0x63, 0x61, 0x43, 0x04, 0, 0x02, 0x01, 0, 1, 0x5A,
          0x02, 0x00, 0x03]


def check_phase1(values):
    for i, (want, got) in enumerate(zip(PHASE1, values)):
        if want is not None:
            assert got == want, (i, hex(got))
    # polls until a loopback byte arrived: 828 cycles at 57600 baud over a
    # 28-cycle IN/TEST/JZ/INC loop
    assert abs(values[3] - 828 / 28) <= 2


def test_serial_program_moves_1_mib_each_way():
    rng = np.random.default_rng(8250)
    with Machine(MachineConfig(plugins=["cga", "uart"], options=WIRE)) as m:
        uart = m.devices["uart"]
        start_serial_program(m)
        assert run_to_phase(m, 2, 5)
        check_phase1(slots(m, 17))
        # phase 2: interrupt driven, 8 KiB
        data = rng.integers(0, 256, 8192, dtype=np.uint8).tobytes()
        echo, offset = pump(m, uart, data, 0, 30)
        assert echo == data
        values = slots(m, 28)
        assert values[17] | values[18] << 16 == 8192 and values[26] == sum(data) & 0xFFFF
        assert values[27] == 0
        # phase 3: polled, 1 MiB each way, no byte lost or duplicated
        assert run_to_phase(m, 3, 5)
        data = rng.integers(0, 256, 1 << 20, dtype=np.uint8).tobytes()
        echo, offset = pump(m, uart, data, offset, 400)
        assert len(echo) == len(data) and echo == data
        m.run_for(100_000)
        values = slots(m, 28)
        assert values[21] | values[22] << 16 == 1 << 20          # received
        assert values[24] | values[25] << 16 == 1 << 20          # sent
        assert values[23] == sum(data) & 0xFFFF
        assert uart.status()["tx_next"] == 8192 + (1 << 20)


def test_serial_phase1_same_with_fast_paths_off():
    """The compiled handler and the Python handlers are one state machine:
    the register checks give the same values and cycles either way."""
    results = []
    for fast in (True, False):
        with Machine(MachineConfig(plugins=["cga", "uart"], options=WIRE)) as m:
            start_serial_program(m)
            m.ports.set_fast_reads(fast)
            assert run_to_phase(m, 2, 5)
            results.append((slots(m, 17), m.clock()))
    assert results[0] == results[1]
    check_phase1(results[0][0])


INT14 = bytes([184, 0, 32, 142, 192, 49, 255, 252, 49, 210, 184, 227, 0, 205, 20, 171, 176,
               72, 180, 1, 205, 20, 171, 176, 105, 180, 1, 205, 20, 171, 176, 33, 180, 1, 205,
               20, 171, 180, 2, 205, 20, 171, 180, 2, 205, 20, 171, 244])
# mov ax,2000h / mov es,ax / xor di,di / cld / xor dx,dx / mov ax,00E3h / int 14h /
# stosw / (mov al,'H' / mov ah,1 / int 14h / stosw) for 'H','i','!' /
# (mov ah,2 / int 14h / stosw) twice / hlt


def test_bios_int14_sends_and_receives_through_the_uart():
    with Machine(MachineConfig(plugins=["cga", "uart"])) as m:
        uart = m.devices["uart"]
        m.run_seconds(0.3)
        m.memory.write(CODE, INT14)
        m.cpu.r.cs, m.cpu.r.ip = CODE >> 4, 0
        m.cpu.ctl[S.C_HALTED] = 0
        start = m.clock()
        while uart.divisor != 12:                  # AH=00h: 9600 baud
            m.step()
        uart.write_input(b"K")                     # sent at the new rate
        for _ in range(200):
            m.run_for(20_000)
            if m.cpu.r.cs == CODE >> 4 and m.cpu.r.ip == len(INT14):
                break
        assert m.cpu.r.ip == len(INT14)
        words = np.frombuffer(m.memory.read(OUT, 12), dtype="<u2").tolist()
        assert uart.divisor == 12 and uart.lcr == 0x03              # 9600 8N1
        assert words[0] >> 8 == 0x60                                # THR and TSR empty
        assert all(w >> 8 & 0x80 == 0 for w in words[1:4])          # three sends waited
        assert uart.read_output(0, 16)[2] == b"Hi!"
        assert words[4] == 0x0000 | ord("K")                        # the host's byte
        assert words[5] >> 8 & 0x80                                 # then a timeout
        # the third send waited for the first two characters (~5,000 cycles each)
        assert m.clock() - start > 2 * 4972


def test_serial_tcp_bridge_carries_bytes_both_ways():
    options = argparse.Namespace(serial_tcp=None)
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    options.serial_tcp = port
    with Machine(MachineConfig(plugins=["cga", "uart"], options=options)) as m:
        uart = m.devices["uart"]
        assert uart.status()["transport"] == f"tcp:127.0.0.1:{port}"
        start_serial_program(m)
        assert run_to_phase(m, 2, 5)
        client = socket.create_connection(("127.0.0.1", port), timeout=5)
        try:
            m.run_for(10_000)                      # the bridge accepts on its next poll
            client.sendall(b"over tcp")
            got = b""
            client.settimeout(0.05)
            for _ in range(400):
                m.run_for(20_000)
                try:
                    got += client.recv(100)
                except socket.timeout:
                    pass
                if len(got) >= 8:
                    break
            assert got == b"over tcp"
        finally:
            client.close()
    with pytest.raises(OSError):                   # the listener closed with the machine
        socket.create_connection(("127.0.0.1", port), timeout=1)


def test_serial_tcp_port_in_use_is_a_clear_error():
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    port = holder.getsockname()[1]
    try:
        with pytest.raises(Exception, match=f"--serial-tcp {port}: cannot listen"):
            Machine(MachineConfig(plugins=["cga", "uart"],
                                  options=argparse.Namespace(serial_tcp=port)))
    finally:
        holder.close()


def test_compiled_state_words_fit_the_layout():
    assert F.S_LAST_IN < F.S_WORDS and F.STATE_SIZE == F.S_WORDS + 2 * 65536


def test_serial_program_reassembles(tmp_path):
    from guest import assemble, find_nasm
    if find_nasm() is None:
        pytest.skip("nasm is not installed")
    assert assemble("serial", str(tmp_path / "serial.bin")) == program_bytes("serial")


def test_machine_state_with_bytes_in_flight_continues_identically():
    """A machine snapshot taken mid-echo (queue, RBR, shift register, ring
    all busy) continues in a second machine exactly as in the first."""
    data = bytes(range(256)) * 8
    with Machine(MachineConfig(plugins=["cga", "uart", "gameport"])) as m:
        uart = m.devices["uart"]
        start_serial_program(m)
        assert run_to_phase(m, 2, 5)
        echo, offset = pump(m, uart, bytes(8192), 0, 30)      # phase 2's 8 KiB
        assert run_to_phase(m, 3, 5)
        uart.write_input(data)
        m.run_for(300_000)
        state = m.get_state()
        with Machine(MachineConfig(plugins=["cga", "uart", "gameport"])) as other:
            other.set_state(state)
            for machine in (m, other):
                machine.run_for(1_000_000)
            a, b = m.devices["uart"], other.devices["uart"]
            assert a.status() == b.status() and m.clock() == other.clock()
            assert a.read_output(a.tx_start, 65536) == b.read_output(b.tx_start, 65536)
            assert a.get_state() == b.get_state()
