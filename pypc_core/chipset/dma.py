"""Intel 8237A DMA controller with the XT page registers.

Ports 00h-07h: channel 0-3 address / count (through the byte flip-flop);
08h command (write; only bit 2, controller disable, has an effect) / status
(read: TC bits 0-3, cleared by the read, and request bits 4-7); 09h request
(shown in the status; it starts no transfer by itself); 0Ah single mask bit;
0Bh mode; 0Ch clear the flip-flop; 0Dh master clear (write) / temporary
register (read: 00h, as memory-to-memory transfers, the only ones that fill
it, are not emulated); 0Eh clear all mask bits; 0Fh write all mask bits; the
other reads return FFh.  Page registers: 87h channel 0, 83h channel 1, 81h
channel 2, 82h channel 3 (address bits 16-19).

Devices (the floppy controller) move data with ``transfer`` when they are
ready, whatever the mode's demand/single/block bits (6-7) say: the direction
comes from the channel's mode, exactly as on the bus.  Addresses advance (or
go down, mode bit 5) inside the 64 KiB page set by the page register; they
wrap within the page as on the real chip.  At terminal count the status bit
is set and the channel either auto-initialises (mode bit 4) or masks itself.
Channel 0 is the XT's DRAM refresh: with ``attach_refresh(pit, clock)`` each
rising edge of PIT counter 1's output (modes 2 and 3, the BIOS's 15 us
period) is a DREQ0, and an unmasked channel 0 makes one transfer per edge
(counted, no memory touched: the refresh reads nothing anyone sees).  So its
current address and count move, terminal count sets status bit 0 and an
auto-initialising channel reloads, exactly where a POST test looks.  The
transfers are counted lazily from the cycle counter when the DMA ports are
accessed, never per edge; the count starts at the first DMA port access after
counter 1 runs periodically (or changes its period), and edges while channel
0 is masked are dropped, as the masked channel ignores them.
"""

from ..device import Device, DeviceDeclaration

DMA_PORTS = tuple(range(0x00, 0x10))
PAGE_PORTS = {0x87: 0, 0x83: 1, 0x81: 2, 0x82: 3}

VERIFY, WRITE, READ = 0, 1, 2       # mode bits 2-3 (WRITE = into memory)


class Dma8237(Device):
    declaration = DeviceDeclaration(
        name="dma", ports=list(DMA_PORTS) + sorted(PAGE_PORTS))

    def __init__(self, memory=None, name="dma"):
        self.memory = memory
        self.name = name
        self._refresh_pit = None
        self._refresh_clock = None
        self.reset()

    def attach_refresh(self, pit, clock):
        """Drive DREQ0 from PIT counter 1's output (DRAM refresh)."""
        self._refresh_pit = pit
        self._refresh_clock = clock
        self.refresh_mark = None

    def _refresh_period(self):
        """CPU cycles between DREQ0 edges, or None when counter 1 does not
        run periodically."""
        pit = self._refresh_pit
        if pit is None:
            return None
        ch = pit.channels[1]
        if ch.mode not in (2, 3) or not ch.cr_valid or not ch.gate:
            return None
        return ch.reload_value() * 4

    def refresh(self):
        """Count the refresh transfers due since the last call."""
        if self._refresh_clock is None:
            return
        now = int(self._refresh_clock())
        period = self._refresh_period()
        mark = self.refresh_mark
        if period is None:
            self.refresh_mark = None
            return
        if mark is None or mark[1] != period:
            self.refresh_mark = [now, period]
            return
        edges = (now - mark[0]) // period
        if edges <= 0:
            return
        mark[0] += edges * period
        if not self.enabled(0):
            return
        if self.auto_init(0):
            cycle = self.base_count[0] + 1
            if edges > cycle:
                edges = cycle + (edges - cycle) % cycle
        self._run(0, edges, lambda *a: None)

    def attach(self, board):
        board.claim_ports(DMA_PORTS, read=self.port_read, write=self.port_write)
        board.claim_ports(sorted(PAGE_PORTS), read=self.page_read, write=self.page_write)

    def reset(self):
        self.base_addr = [0, 0, 0, 0]
        self.base_count = [0, 0, 0, 0]
        self.cur_addr = [0, 0, 0, 0]
        self.cur_count = [0, 0, 0, 0]
        self.mode = [0, 0, 0, 0]
        self.page = [0, 0, 0, 0]
        self.last_tc = [False, False, False, False]
        self.dreq = 0               # request lines from devices (bits 0-3)
        self.refresh_mark = None    # [cycle of the last counted edge, period]
        self.master_clear()

    def master_clear(self):
        self.command = 0
        self.status_tc = 0
        self.request = 0
        self.temp = 0
        self.flipflop = False
        self.mask = 0x0F

    # -- ports -------------------------------------------------------------
    def port_read(self, port):
        self.refresh()
        port &= 0x0F
        if port < 8:
            ch = port >> 1
            value = self.cur_count[ch] if port & 1 else self.cur_addr[ch]
            byte = value >> 8 if self.flipflop else value & 0xFF
            self.flipflop = not self.flipflop
            return byte & 0xFF
        if port == 0x08:
            status = self.status_tc | ((self.request | self.dreq) & 0x0F) << 4
            self.status_tc = 0
            return status
        if port == 0x0D:
            return self.temp
        return 0xFF

    def port_write(self, port, value):
        self.refresh()
        port &= 0x0F
        value &= 0xFF
        if port < 8:
            ch = port >> 1
            regs = (self.base_count, self.cur_count) if port & 1 else (
                self.base_addr, self.cur_addr)
            old = regs[0][ch]
            if self.flipflop:
                new = (old & 0x00FF) | value << 8
            else:
                new = (old & 0xFF00) | value
            regs[0][ch] = new
            regs[1][ch] = new
            self.flipflop = not self.flipflop
        elif port == 0x08:
            self.command = value
        elif port == 0x09:
            bit = 1 << (value & 3)
            self.request = self.request | bit if value & 4 else self.request & ~bit
        elif port == 0x0A:
            bit = 1 << (value & 3)
            self.mask = self.mask | bit if value & 4 else self.mask & ~bit
        elif port == 0x0B:
            self.mode[value & 3] = value & 0xFC
        elif port == 0x0C:
            self.flipflop = False
        elif port == 0x0D:
            self.master_clear()
        elif port == 0x0E:
            self.mask = 0
        elif port == 0x0F:
            self.mask = value & 0x0F

    def page_read(self, port):
        return self.page[PAGE_PORTS[port]]

    def page_write(self, port, value):
        self.page[PAGE_PORTS[port]] = value & 0xFF

    # -- channel queries -----------------------------------------------------
    def transfer_type(self, ch):
        """VERIFY (0), WRITE (1, device -> memory), READ (2, memory -> device)."""
        return (self.mode[ch] >> 2) & 3

    def auto_init(self, ch):
        return bool(self.mode[ch] & 0x10)

    def decrement(self, ch):
        return bool(self.mode[ch] & 0x20)

    def enabled(self, ch):
        """Unmasked and the controller enabled (command bit 2 clear)."""
        return not (self.command & 0x04) and not (self.mask >> ch & 1)

    def remaining(self, ch):
        """Bytes left before terminal count."""
        return self.cur_count[ch] + 1

    def address(self, ch):
        """Current 20-bit physical address of the channel."""
        return (self.page[ch] & 0x0F) << 16 | self.cur_addr[ch]

    def set_dreq(self, ch, level):
        bit = 1 << ch
        self.dreq = self.dreq | bit if level else self.dreq & ~bit

    # -- moving data ---------------------------------------------------------
    def _run(self, ch, length, move):
        """Advance channel ``ch`` by up to ``length`` bytes, calling
        ``move(physical, run, done, descending)`` for each contiguous run.
        Returns the number of bytes moved."""
        self.last_tc[ch] = False
        if length <= 0 or not self.enabled(ch):
            return 0
        done = 0
        while done < length:
            addr = self.cur_addr[ch]
            left = self.cur_count[ch] + 1
            desc = self.decrement(ch)
            room = addr + 1 if desc else 0x10000 - addr
            run = min(length - done, left, room)
            base = (self.page[ch] & 0x0F) << 16
            if desc:
                move(base | (addr - run + 1), run, done, True)
                self.cur_addr[ch] = (addr - run) & 0xFFFF
            else:
                move(base | addr, run, done, False)
                self.cur_addr[ch] = (addr + run) & 0xFFFF
            self.cur_count[ch] = (self.cur_count[ch] - run) & 0xFFFF
            done += run
            if run == left:                 # terminal count
                self.status_tc |= 1 << ch
                self.last_tc[ch] = True
                self.request &= ~(1 << ch)
                if self.auto_init(ch):
                    self.cur_addr[ch] = self.base_addr[ch]
                    self.cur_count[ch] = self.base_count[ch]
                else:
                    self.mask |= 1 << ch
                    break
        return done

    def write_to_memory(self, ch, data, memory=None):
        """Device -> memory (a disk read).  Returns the bytes accepted."""
        memory = memory if memory is not None else self.memory
        data = bytes(data)

        def move(phys, run, done, desc):
            chunk = data[done:done + run]
            memory.write(phys, chunk[::-1] if desc else chunk)
        return self._run(ch, len(data), move)

    def read_from_memory(self, ch, length, memory=None):
        """Memory -> device (a disk write).  Returns the bytes read."""
        memory = memory if memory is not None else self.memory
        out = []

        def move(phys, run, done, desc):
            chunk = memory.read(phys, run)
            out.append(chunk[::-1] if desc else chunk)
        self._run(ch, length, move)
        return b"".join(out)

    def verify(self, ch, length):
        """A verify cycle: counters advance, memory is not touched."""
        return self._run(ch, length, lambda *a: None)

    def transfer(self, ch, data_or_length, memory=None):
        """Move data on channel ``ch`` in the direction its mode says.

        * write mode (device -> memory): ``data_or_length`` is the bytes the
          device delivers; returns how many were taken (stops at terminal
          count unless auto-init);
        * read mode (memory -> device): ``data_or_length`` is a length (or
          bytes, whose length is used); returns the bytes read from memory;
        * verify mode: returns the number of bytes counted.

        ``last_tc[ch]`` tells whether terminal count was reached.  A masked
        channel or a disabled controller moves nothing.
        """
        kind = self.transfer_type(ch)
        if isinstance(data_or_length, int):
            data, length = None, data_or_length
        else:
            data = bytes(data_or_length)
            length = len(data)
        if kind == WRITE:
            if data is None:
                raise TypeError(
                    f"DMA channel {ch} is programmed to write memory: "
                    "transfer() needs the bytes, not a length")
            return self.write_to_memory(ch, data, memory)
        if kind == READ:
            return self.read_from_memory(ch, length, memory)
        return self.verify(ch, length)

    # -- snapshots ---------------------------------------------------------
    _LISTS = ("base_addr", "base_count", "cur_addr", "cur_count", "mode",
              "page", "last_tc")
    _SCALARS = ("dreq", "command", "status_tc", "request", "temp", "flipflop",
                "mask", "refresh_mark")

    def get_state(self):
        state = {f: list(getattr(self, f)) for f in self._LISTS}
        state.update({f: getattr(self, f) for f in self._SCALARS})
        return state

    def set_state(self, state):
        for f in self._LISTS:
            setattr(self, f, list(state[f]))
        for f in self._SCALARS:
            setattr(self, f, state.get(f))
        if self.refresh_mark is not None:
            self.refresh_mark = list(self.refresh_mark)
