"""Intel 8255 PPI wired as on the IBM PC/XT (5160), ports 60h-63h.

Port A (60h, input)
    the keyboard shift register while port B bit 7 is clear; the
    configuration switch byte (SW1) while it is set (the 5150's wiring; the
    XT reads its switches through port C).
Port B (61h, output latch, reads back)
    bit 0  timer 2 gate              bit 4  RAM parity check disable
    bit 1  speaker data              bit 5  I/O channel check disable
    bit 2  (5150: SW2 nibble select) bit 6  keyboard clock released (0 = held low)
    bit 3  XT: switch nibble select  bit 7  keyboard clear / acknowledge
Port C (62h, input)
    bits 0-3  XT: SW1 switches 1-4 when port B bit 3 is 0, 5-8 when 1
              (5150 model: SW2 1-4 when port B bit 2 is 1, SW2 5 when 0)
    bit 4     spare / cassette in (0)
    bit 5     timer 2 output
    bits 6-7  I/O channel check, RAM parity error (never: 0)
63h
    control word (mode set resets the output latches; bit set/reset).

The switch byte uses the equipment-word layout: bit 0 floppy drives
present, bit 1 FPU, bits 2-3 planar RAM banks, bits 4-5 video (00 none/EGA,
01 CGA 40x25, 10 CGA 80x25, 11 MDA), bits 6-7 floppy drives - 1.
"""

from ..device import Device, DeviceDeclaration

PPI_PORTS = (0x60, 0x61, 0x62, 0x63)

VIDEO_SWITCH = {
    "none": 0, "ega": 0, "vga": 0,
    "cga40": 1,
    "cga": 2, "cga80": 2,
    "mda": 3, "mono": 3, "hercules": 3,
}


def switch_byte(floppy_drives=1, video="cga80", memory_kib=640, fpu=False,
                model="xt"):
    """SW1 as the BIOS reads it (equipment-word layout)."""
    if video not in VIDEO_SWITCH:
        raise ValueError(f"unknown video type {video!r} for the PPI switches; "
                         f"expected one of {', '.join(sorted(VIDEO_SWITCH))}")
    if not 0 <= floppy_drives <= 4:
        raise ValueError(f"floppy_drives must be 0-4, not {floppy_drives}")
    sw = 0
    if floppy_drives:
        sw |= 0x01 | ((floppy_drives - 1) & 3) << 6
    if fpu:
        sw |= 0x02
    if model == "pc":
        banks = min(max(memory_kib, 16), 64) // 16 - 1      # 16K-64K planar
    else:
        banks = min(max(memory_kib, 64), 256) // 64 - 1     # 64K-256K planar
    sw |= (banks & 3) << 2
    sw |= VIDEO_SWITCH[video] << 4
    return sw


def switch2_byte(memory_kib=640):
    """5150 SW2: expansion RAM above 64 KiB in 32 KiB units (switches 1-5)."""
    return max(0, (memory_kib - 64) // 32) & 0x1F


class Ppi8255(Device):
    declaration = DeviceDeclaration(name="ppi", ports=list(PPI_PORTS))

    def __init__(self, keyboard=None, pit=None, floppy_drives=1, video="cga80",
                 memory_kib=640, fpu=False, model="xt", clock=None,
                 on_speaker_change=None, name="ppi"):
        if model not in ("xt", "pc"):
            raise ValueError(f"PPI model must be 'xt' or 'pc', not {model!r}")
        self.keyboard = keyboard
        self.pit = pit
        self.clock = clock
        self.model = model
        self.on_speaker_change = on_speaker_change
        self.name = name
        self.sw1 = switch_byte(floppy_drives, video, memory_kib, fpu, model)
        self.sw2 = switch2_byte(memory_kib)
        self.reset()

    def attach(self, board):
        board.claim_ports(PPI_PORTS, read=self.port_read, write=self.port_write,
                          peek=self.peek)
        self.clock = board.clock

    def reset(self):
        self.control = 0x99         # A in, B out, C in (what the BIOS sets)
        self.port_b = 0
        self.port_c_out = 0         # port C output latch (unused on the XT)

    # -- ports -------------------------------------------------------------
    def peek(self, port):
        """Side-effect-free read for the CPU's fast path; port C follows the
        timer and is always read through port_read."""
        if port & 3 == 2:
            return None
        return self.port_read(port)

    def port_read(self, port):
        port &= 3
        if port == 0:
            if self.port_b & 0x80:
                return self.sw1
            return self.keyboard.read_data() if self.keyboard is not None else 0
        if port == 1:
            return self.port_b
        if port == 2:
            return self._port_c()
        return 0xFF                 # the control register cannot be read

    def _port_c(self):
        pb = self.port_b
        if self.model == "xt":
            nibble = (self.sw1 >> 4) if pb & 0x08 else (self.sw1 & 0x0F)
        else:
            nibble = (self.sw2 & 0x0F) if pb & 0x04 else (self.sw2 >> 4)
        value = nibble & 0x0F
        if self.pit is not None and self.pit.output2():
            value |= 0x20
        return value

    def port_write(self, port, value):
        port &= 3
        value &= 0xFF
        if port == 1:
            self._set_port_b(value)
        elif port == 3:
            if value & 0x80:        # mode set: output latches are cleared
                self.control = value
                self.port_c_out = 0
                self._set_port_b(0)
            else:                   # bit set/reset on port C
                bit = (value >> 1) & 7
                if value & 1:
                    self.port_c_out |= 1 << bit
                else:
                    self.port_c_out &= ~(1 << bit)
        elif port == 2:
            self.port_c_out = value
        # port A is an input on the XT: writes vanish

    def _set_port_b(self, value):
        old = self.port_b
        self.port_b = value
        changed = old ^ value
        if changed & 0x01 and self.pit is not None:
            self.pit.set_gate2(value & 1)
        kb = self.keyboard
        if kb is not None and (bool(value & 0x40) != kb.clock_high
                               or bool(value & 0x80) != kb.clear):
            kb.set_lines(clock_high=value & 0x40, clear=value & 0x80)
        if changed & 0x03 and self.on_speaker_change is not None:
            self.on_speaker_change(self.speaker_state())

    # -- speaker -------------------------------------------------------------
    def speaker_state(self):
        """Timer 2 gate, speaker data bit and timer 2 output (plus timer 2's
        programming, for a future sound back end)."""
        state = {
            "gate": bool(self.port_b & 1),
            "data": bool(self.port_b & 2),
            "out2": bool(self.pit.output2()) if self.pit is not None else False,
        }
        if self.pit is not None:
            info = self.pit.channel_info(2)
            state["mode"] = info["mode"]
            state["reload"] = info["reload"]
            state["frequency_hz"] = info["frequency_hz"]
        return state

    # -- snapshots ---------------------------------------------------------
    def get_state(self):
        return {"control": self.control, "port_b": self.port_b,
                "port_c_out": self.port_c_out, "sw1": self.sw1, "sw2": self.sw2,
                "model": self.model}

    def set_state(self, state):
        self.control = state["control"]
        self.port_b = state["port_b"]
        self.port_c_out = state["port_c_out"]
        self.sw1 = state["sw1"]
        self.sw2 = state["sw2"]
        self.model = state["model"]
