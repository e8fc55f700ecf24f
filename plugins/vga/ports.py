"""The VGA's register file and its I/O ports (mixed into
:class:`pypc_plugins.vga.vga.VGA`).

Ports
    3C0h  attribute controller index/data (a flip-flop; reading 3DAh/3BAh
          resets it to "index"); 3C1h reads the indexed register
    3C2h  write: miscellaneous output; read: input status 0 (bit 4: switch
          sense, a colour monitor)
    3C3h  video subsystem enable (bit 0), read back
    3C4h/3C5h  sequencer index/data (registers 0-4)
    3C6h  DAC pixel mask; 3C7h write: DAC read index, read: DAC state;
    3C8h  DAC write index; 3C9h  DAC data (R, G, B, auto-increment)
    3CAh  feature control (read); 3CCh miscellaneous output (read)
    3CEh/3CFh  graphics controller index/data (registers 0-8)
    3D4h/3D5h  CRTC index/data (3B4h/3B5h while misc output bit 0 is clear)
    3DAh  input status 1 (3BAh in mono): bit 0 display disabled (blanking),
          bit 3 vertical retrace; writes go to feature control

    The CRTC's write protect (register 11h bit 7) guards registers 0-7
    (except the line-compare bit of register 7).  The sequencer, DAC and
    graphics controller ports (3C4h-3C9h, 3CEh/3CFh) are answered inside the
    CPU core (``planar.port_handler``, registers kept in ``st``), the status
    port by the board's raster primitive while the attribute flip-flop is at
    "index"; everything else is a Python handler here.

The register values of the BIOS modes are tables in :mod:`.regs`.
"""

from . import planar
from .regs import AC_COUNT, CRTC_COUNT

# answered inside the core by planar.port_handler (sequencer, DAC, graphics controller)
COMPILED_PORTS = (0x3C4, 0x3C5, 0x3C6, 0x3C7, 0x3C8, 0x3C9, 0x3CE, 0x3CF)
PORTS = ([0x3B4, 0x3B5, 0x3BA] + list(range(0x3C0, 0x3D0))
         + [0x3D4, 0x3D5, 0x3DA])

# registers CRTC 11h bit 7 write-protects
_CRTC_PROTECTED = range(0, 8)


class VgaPorts:
    """The sequencer, graphics controller and DAC registers (kept in
    ``st``, which the compiled port and memory handlers share), the CRTC and
    attribute controller, and the Python port handlers."""

    # -- the sequencer, graphics controller and DAC live in ``st`` ----------------------
    # (their ports are answered inside the core by ``planar.port_handler``)
    @property
    def seq(self):
        """Sequencer registers 0-4 (a view of ``st``)."""
        return self.st[planar.ST_SEQ:planar.ST_SEQ + planar.SEQ_COUNT]

    @seq.setter
    def seq(self, values):
        self.st[planar.ST_SEQ:planar.ST_SEQ + planar.SEQ_COUNT] = [int(v) & 0xFF for v in values]
        planar.derive(self.st)

    @property
    def gc(self):
        """Graphics controller registers 0-8 (a view of ``st``)."""
        return self.st[planar.ST_GC:planar.ST_GC + planar.GC_COUNT]

    @gc.setter
    def gc(self, values):
        self.st[planar.ST_GC:planar.ST_GC + planar.GC_COUNT] = [int(v) & 0xFF for v in values]
        planar.derive(self.st)

    @property
    def seq_index(self):
        return int(self.st[planar.ST_SEQ_INDEX])

    @seq_index.setter
    def seq_index(self, value):
        self.st[planar.ST_SEQ_INDEX] = int(value) & 0x07

    @property
    def gc_index(self):
        return int(self.st[planar.ST_GC_INDEX])

    @gc_index.setter
    def gc_index(self, value):
        self.st[planar.ST_GC_INDEX] = int(value) & 0x0F

    @property
    def dac(self):
        """The 256 DAC entries, ``int64[256, 3]`` of 6-bit values (a view of ``st``)."""
        return self.st[planar.ST_DAC:planar.ST_DAC + 768].reshape(256, 3)

    def _st_scalar(name, index, mask):
        def get(self):
            return int(self.st[index])

        def put(self, value):
            self.st[index] = int(value) & mask
        return property(get, put, doc=f"{name} (kept in ``st`` for the compiled ports)")

    pel_mask = _st_scalar("DAC pixel mask (3C6h)", planar.ST_PEL_MASK, 0xFF)
    dac_write_index = _st_scalar("DAC write index (3C8h)", planar.ST_DAC_WRITE, 0xFF)
    dac_read_index = _st_scalar("DAC read index (3C7h)", planar.ST_DAC_READ, 0xFF)
    dac_component = _st_scalar("DAC component in progress", planar.ST_DAC_COMPONENT, 3)
    dac_state = _st_scalar("DAC state (3C7h read)", planar.ST_DAC_STATE, 3)
    del _st_scalar

    @property
    def dac_pending(self):
        return [int(v) for v in self.st[planar.ST_DAC_PENDING:planar.ST_DAC_PENDING + 3]]

    @dac_pending.setter
    def dac_pending(self, values):
        self.st[planar.ST_DAC_PENDING:planar.ST_DAC_PENDING + 3] = [int(v) & 0x3F
                                                                    for v in values]

    # -- ports -----------------------------------------------------------------------
    @property
    def mono(self):
        return not self.misc & 1

    def port_read(self, port):
        self._check_timing()
        if port in (0x3B4, 0x3B5, 0x3BA) and not self.mono:
            return 0xFF
        if port in (0x3D4, 0x3D5, 0x3DA) and self.mono:
            return 0xFF
        if port in (0x3B4, 0x3D4):
            return self.crtc_index
        if port in (0x3B5, 0x3D5):
            i = self.crtc_index
            return self.crtc[i] if i < CRTC_COUNT else 0xFF
        if port in (0x3BA, 0x3DA):
            if self.ac_flipflop:
                self.ac_flipflop = 0
                self._publish()
            return self.status()
        if port == 0x3C0:
            return self.ac_index
        if port == 0x3C1:
            i = self.ac_index & 0x1F
            return self.ac[i] if i < AC_COUNT else 0
        if port == 0x3C2:
            return 0x10                          # switch sense: a colour monitor
        if port == 0x3C3:
            return self.subsystem
        if port in (0x3C4, 0x3C5, 0x3C6, 0x3C7, 0x3C8, 0x3C9, 0x3CE, 0x3CF):
            return int(planar.io_read(self.st, port))
        if port == 0x3CA:
            return self.feature
        if port == 0x3CC:
            return self.misc
        return 0xFF

    def port_write(self, port, value):
        value &= 0xFF
        self._check_timing()
        if port in (0x3B4, 0x3B5, 0x3BA) and not self.mono:
            return
        if port in (0x3D4, 0x3D5, 0x3DA) and self.mono:
            return
        if port in (0x3B4, 0x3D4):
            self.crtc_index = value & 0x3F
        elif port in (0x3B5, 0x3D5):
            self.crtc_write(self.crtc_index, value)
        elif port in (0x3BA, 0x3DA):
            self.feature = value
        elif port == 0x3C0:
            if self.ac_flipflop == 0:
                self.ac_index = value & 0x3F
            else:
                i = self.ac_index & 0x1F
                if i < AC_COUNT:
                    self.ac[i] = value & (0x3F if i < 16 else 0xFF)
            self.ac_flipflop ^= 1
            self._publish()
        elif port == 0x3C2:
            self._retime(lambda: setattr(self, "misc", value))
            self._publish()
        elif port == 0x3C3:
            self.subsystem = value & 1
        elif port in (0x3C4, 0x3C5, 0x3C6, 0x3C7, 0x3C8, 0x3C9, 0x3CE, 0x3CF):
            planar.io_write(self.st, port, value)
            if port == 0x3C5 and self.seq_index == 1:
                self._check_timing()

    def crtc_write(self, i, value):
        if i >= CRTC_COUNT:
            return
        if self.crtc[0x11] & 0x80 and i in _CRTC_PROTECTED:
            if i != 7:
                return
            value = (self.crtc[7] & ~0x10) | (value & 0x10)
        if i in (0, 1, 6, 7, 9, 0x10, 0x11, 0x12) and value != self.crtc[i]:
            self._retime(lambda: self.crtc.__setitem__(i, value))
            self._publish()
        else:
            self.crtc[i] = value
