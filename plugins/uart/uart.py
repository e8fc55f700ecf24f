"""National 8250 / 16450 UART (an IBM asynchronous communications adapter).

Registers (base + n; DLAB is LCR bit 7)
    0  RBR (read) / THR (write); with DLAB: divisor latch low (DLL)
    1  IER: 0 received data, 1 THR empty, 2 line status, 3 modem status;
       with DLAB: divisor latch high (DLM)
    2  IIR (read): bit 0 clear while an interrupt is pending, bits 1-2 the
       highest one: 11 line status, 10 received data, 01 THR empty, 00 modem
       status (01h: none).  Writes (a 16550's FCR) are ignored.
    3  LCR: word length, stop bits, parity, break, DLAB
    4  MCR: DTR, RTS, OUT1, OUT2 (gates the IRQ on the PC), loopback
    5  LSR: 0 data ready, 1 overrun, 2 parity, 3 framing, 4 break, 5 THR
       empty, 6 transmitter empty; bits 1-4 clear when read
    6  MSR: 0-3 deltas of CTS, DSR, RI (trailing edge), DCD (clear when
       read); 4 CTS, 5 DSR, 6 RI, 7 DCD
    7  scratch

Time
    ``timing="flow"`` (the default; the contract's COM1): flow-controlled,
    no character time.  A byte written to THR is in the host's output ring
    (or, in loopback, in RBR) at once; a queued host byte moves into RBR as
    soon as RBR is free (the guest read the one before), whatever divisor
    and line control the guest set -- or did not set.  The divisor, LCR,
    MCR, interrupts and status bits are the 8250's.

    ``timing="wire"`` (``--serial-timing wire``): a character takes (1
    start + data + parity + stop) bits of 16 x divisor clocks of the 1.8432
    MHz crystal, converted to emulated CPU cycles (``char_cycles``).  THR
    hands its byte to the transmit shift register at once when that is
    idle; the byte leaves (to the host's output ring, or in loopback to the
    receiver) one character time later.  Received bytes come from the
    host's input queue one character time apart, and only as fast as the
    guest reads them: a byte that finds RBR still full waits in the shift
    register (flow control, never an overrun) and moves into RBR one bit
    time after the guest read it.

Host side (``SerialPort``-like API, 1:1 with the RPC ``serial.*`` methods)
    ``write_input(data)``: queue bytes for the guest (65,536 at most
    waiting; refused in loopback and when full); ``read_output(offset,
    max_bytes)``: the guest's output, retained for the last 65,536 bytes,
    at absolute offsets, reads never consume; ``status()``.

Compiled
    The state machine is ``fast.py``: registers, character events and both
    host queues live in one int64 array.  While no interrupt can reach the
    PIC (IER 0, OUT2 clear or loopback) the guest's accesses to the data,
    line and modem registers go to a compiled port handler inside the CPU
    loop and time is evaluated lazily, so a polled guest moves bytes with
    no exit at all.  With interrupts on, the registers whose accesses can
    change an enabled interrupt exit to the Python handlers (the same
    functions; the status registers are then answered in the CPU from
    peeked values) and the character events of enabled interrupts are
    scheduled, so the IRQ line follows at the right cycle.

Outside loopback the modem inputs read as a connected, ready terminal:
CTS, DSR and DCD set, RI clear.  In loopback (MCR bit 4) the outputs loop to
the inputs (RTS->CTS, DTR->DSR, OUT1->RI, OUT2->DCD), the transmitter feeds
the receiver, and -- as on the PC, where the OUT2 pin gates the IRQ driver
and loopback forces it inactive -- no interrupt reaches the PIC.
"""

import errno
import socket

import numpy as np

from pypc_core.device import Device, DeviceDeclaration
from pypc_core.errors import PypcError

from . import fast as F

QUEUE_SIZE = F.RING                       # host -> guest bytes waiting
RING_SIZE = F.RING                        # guest -> host bytes retained
HOST_POLL_CYCLES = 4773                   # TCP bridge: every ms of emulated time
COM_NAMES = {0x3F8: "COM1", 0x2F8: "COM2", 0x3E8: "COM3", 0x2E8: "COM4"}
# registers whose guest accesses may go to the compiled handler (IER and MCR
# always exit: they decide whether interrupts reach the PIC)
COMPILED_REGS = (F.RBR, F.IIR, F.LCR, F.LSR, F.MSR, F.SCR)
PEEKED_REGS = (F.IIR, F.LSR, F.MSR)
TIMINGS = ("flow", "wire")               # --serial-timing


class SerialError(PypcError):
    """A host-side request the serial port refuses (nothing changed)."""


class Uart8250(Device):
    """One serial port.  ``base``/``irq``: 3F8h/4 (COM1) or 2F8h/3 (COM2)."""

    def __init__(self, name="uart", base=0x3F8, irq=4, tcp_port=None, timing="flow"):
        if timing not in TIMINGS:
            raise ValueError(f"serial timing must be one of {', '.join(TIMINGS)}, "
                             f"not {timing!r}")
        self.timing = timing
        self.base = base
        self.irq_number = irq
        self.declaration = DeviceDeclaration(
            name=name, ports=list(range(base, base + 8)), irqs=[irq],
            capabilities=["serial", COM_NAMES.get(base, "serial").lower()])
        self.name = name
        self.clock = lambda: 0
        self._irq = None
        self._board = None
        self._compiled = []
        self._irq_mode = None
        self.bridge = None
        self.tcp_port = tcp_port
        self.host_poll_due = None
        self.st = F.new_state(flow=timing == "flow")

    # -- wiring ----------------------------------------------------------------------
    def attach(self, board):
        self._board = board
        self.clock = board.clock
        self._irq = board.irq(self.irq_number)
        base = self.base
        peeked = [base + r for r in PEEKED_REGS]
        board.claim_ports([p for p in range(base, base + 8) if p not in peeked],
                          read=self.port_read, write=self.port_write)
        board.claim_ports(peeked, read=self.port_read, write=self.port_write,
                          peek=self.port_peek)
        self._compiled = [board.compiled_port(base + r, F.port_handler, self.st)
                          for r in COMPILED_REGS]
        if self.tcp_port is not None:
            self.bridge = TcpBridge(self, self.tcp_port)
            self.host_poll_due = self.clock() + HOST_POLL_CYCLES
        self._irq_mode = None
        self._update()

    def close(self):
        if self.bridge is not None:
            self.bridge.close()
            self.bridge = None

    def reset(self):
        """Power-on (MR): registers cleared; the host queues are kept (they
        are the far end of the cable) and their next byte is on its way."""
        F.reset(self.st)
        if self.st[F.S_IN_COUNT]:
            self.st[F.S_RX_DUE] = self.clock() + self.st[F.S_CHAR]
        if self.bridge is not None:
            self.host_poll_due = self.clock() + HOST_POLL_CYCLES
        self._irq_mode = None
        self._update()

    # -- registers (read-only views) ---------------------------------------------------
    def _reg(self, word):
        return int(self.st[word])

    dll = property(lambda self: self._reg(F.S_DLL))
    dlm = property(lambda self: self._reg(F.S_DLM))
    ier = property(lambda self: self._reg(F.S_IER))
    lcr = property(lambda self: self._reg(F.S_LCR))
    mcr = property(lambda self: self._reg(F.S_MCR))
    lsr = property(lambda self: self._reg(F.S_LSR))
    scr = property(lambda self: self._reg(F.S_SCR))

    @property
    def divisor(self):
        return (self.dlm << 8) | self.dll

    @property
    def loopback(self):
        return bool(self.mcr & F.MCR_LOOP)

    def char_cycles(self):
        return self._reg(F.S_CHAR)

    def _interrupts_reach_pic(self):
        return self.ier != 0 and bool(self.mcr & F.MCR_OUT2) and not self.loopback

    def _update(self):
        """After any change: the IRQ line, and which path the guest's
        accesses take.  A register stays on the compiled path unless an
        access to it can change an interrupt that reaches the PIC: RBR/THR
        with received-data or THR-empty interrupts on, IIR with THR-empty,
        LSR with line status, MSR with modem status."""
        irq_mode = self._interrupts_reach_pic()
        key = (irq_mode, self.ier if irq_mode else 0)
        if key != self._irq_mode:
            self._irq_mode = key
            ier = key[1]
            python = set()
            if ier & (F.IER_RX | F.IER_THRE):
                python.add(F.RBR)
            if ier & F.IER_THRE:
                python.add(F.IIR)
            if ier & F.IER_LS:
                python.add(F.LSR)
            if ier & F.IER_MS:
                python.add(F.MSR)
            for r, prim in zip(COMPILED_REGS, self._compiled):
                if r in python:
                    prim.disable()
                else:
                    prim.enable()
            if self._board is not None:
                self._board.ports_changed()
                self._board.reschedule()
        if self._irq is not None:
            self._irq.set(bool(F.irq_level(self.st)))

    # -- ports (Python path) -------------------------------------------------------
    def port_peek(self, port):
        v = F.peek(self.st, port - self.base)
        return None if v < 0 else int(v)

    def port_read(self, port):
        v = int(F.access(self.st, port - self.base, 0, 0, self.clock()))
        self._update()
        return v

    def port_write(self, port, value):
        F.access(self.st, port - self.base, value, 1, self.clock())
        self._update()

    # -- time ------------------------------------------------------------------------
    def next_event(self):
        """Character events that change an interrupt reaching the PIC (the
        rest are evaluated when the guest or the host looks), and the TCP
        bridge's poll."""
        due = []
        if self._irq_mode and self._irq_mode[0]:
            ier = self._irq_mode[1]
            st = self.st
            if ier & (F.IER_RX | F.IER_LS) and st[F.S_RX_DUE] >= 0:
                due.append(int(st[F.S_RX_DUE]))
            if ier & F.IER_THRE and st[F.S_TX_DUE] >= 0:
                due.append(int(st[F.S_TX_DUE]))
        if self.host_poll_due is not None:
            due.append(self.host_poll_due)
        return min(due) if due else None

    def advance(self, cycle):
        F.settle(self.st, cycle)
        if self.host_poll_due is not None and self.host_poll_due <= cycle:
            self.host_poll_due = cycle + HOST_POLL_CYCLES
            if self.bridge is not None:
                self.bridge.poll()
        self._update()

    def _settle_now(self):
        F.settle(self.st, self.clock())
        self._update()

    # -- host side (the serial.* RPC methods map onto these) --------------------------
    @property
    def tx_next(self):
        return self._reg(F.S_OUT_NEXT)

    @property
    def tx_start(self):
        return max(0, self.tx_next - RING_SIZE)

    @property
    def input_waiting(self):
        """Host bytes queued that have not reached RBR yet."""
        return self._reg(F.S_IN_COUNT)

    @property
    def rx_pending(self):
        """Host bytes the guest has not read yet (queued, or in RBR)."""
        self._settle_now()
        dr = 1 if self.lsr & F.LSR_DR and not self.loopback else 0
        return self.input_waiting + dr

    def write_input(self, data):
        """Queue host bytes for the guest to receive.  Returns how many were
        accepted (as many as fit).  Refused, with nothing changed: no bytes,
        loopback mode, a full queue."""
        data = bytes(data)
        if not data:
            raise SerialError(f"{self.port_name}: no bytes to send")
        if self.loopback:
            raise SerialError(f"{self.port_name}: the UART is in loopback mode and "
                              "takes no input from the host")
        self._settle_now()
        st = self.st
        count = int(st[F.S_IN_COUNT])
        room = QUEUE_SIZE - count
        if room <= 0:
            raise SerialError(f"{self.port_name}: the input queue is full "
                              f"({QUEUE_SIZE} bytes wait for the guest)")
        accepted = np.frombuffer(data[:room], dtype=np.uint8)
        n = len(accepted)
        idx = (int(st[F.S_IN_HEAD]) + count + np.arange(n)) % F.RING
        st[F.IN_BASE + idx] = accepted
        st[F.S_IN_COUNT] = count + n
        if st[F.S_RX_DUE] < 0 and not st[F.S_RX_HELD]:
            st[F.S_RX_DUE] = self.clock() + st[F.S_CHAR]
        if self._board is not None:
            self._board.reschedule()
        return n

    def read_output(self, offset=0, max_bytes=RING_SIZE):
        """``(offset, next_offset, data)`` of the guest's output from absolute
        ``offset``; nothing is consumed.  An offset before ``tx_start`` (the
        bytes were overwritten) or after ``tx_next`` is refused."""
        if not 1 <= max_bytes <= RING_SIZE:
            raise SerialError(f"max_bytes must be 1..{RING_SIZE}, not {max_bytes}")
        self._settle_now()
        if offset < self.tx_start:
            raise SerialError(f"{self.port_name}: output offset {offset} is no longer "
                              f"retained (oldest is {self.tx_start})")
        if offset > self.tx_next:
            raise SerialError(f"{self.port_name}: output offset {offset} is beyond the "
                              f"output so far ({self.tx_next})")
        end = min(self.tx_next, offset + max_bytes)
        idx = np.arange(offset, end) % F.RING
        data = self.st[F.OUT_BASE + idx].astype(np.uint8).tobytes()
        return offset, end, data

    @property
    def port_name(self):
        return COM_NAMES.get(self.base, f"serial port {self.base:03X}h")

    def status(self):
        pending = self.rx_pending
        return {
            "port": self.port_name, "base": self.base, "irq": self.irq_number,
            "divisor": self.divisor, "lcr": self.lcr, "mcr": self.mcr,
            "rx_pending": pending, "tx_start": self.tx_start, "tx_next": self.tx_next,
            "transport": ("virtual" if self.bridge is None
                          else f"tcp:127.0.0.1:{self.bridge.port}"),
            "wire_timing": self.timing == "wire",
        }

    # -- snapshots -------------------------------------------------------------------
    def get_state(self):
        st = self.st
        head, count = int(st[F.S_IN_HEAD]), int(st[F.S_IN_COUNT])
        queue = st[F.IN_BASE + (head + np.arange(count)) % F.RING]
        out_start = self.tx_start
        out = st[F.OUT_BASE + np.arange(out_start, self.tx_next) % F.RING]
        return {"words": [int(x) for x in st[:F.S_WORDS]],
                "input": bytes(queue.astype(np.uint8)).hex(),
                "output": bytes(out.astype(np.uint8)).hex(),
                "host_poll_due": self.host_poll_due}

    def set_state(self, state):
        try:
            words = [int(x) for x in state["words"]]
            queue = bytes.fromhex(state["input"])
            out = bytes.fromhex(state["output"])
            poll = state["host_poll_due"]
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{self.name} state is malformed: {exc}") from None
        if len(words) != F.S_WORDS or len(queue) != words[F.S_IN_COUNT] \
                or len(queue) > QUEUE_SIZE or len(out) != min(words[F.S_OUT_NEXT], RING_SIZE):
            raise ValueError(f"{self.name} state does not fit this UART")
        st = self.st
        st[:F.S_WORDS] = words
        # the timing is this port's configuration, not saved state
        st[F.S_FLOW] = 1 if self.timing == "flow" else 0
        st[F.S_CHAR] = F.rate(st, st[F.S_LCR], (st[F.S_DLM] << 8) | st[F.S_DLL])
        st[F.IN_BASE + (words[F.S_IN_HEAD] + np.arange(len(queue))) % F.RING] = \
            np.frombuffer(queue, dtype=np.uint8)
        start = words[F.S_OUT_NEXT] - len(out)
        st[F.OUT_BASE + np.arange(start, words[F.S_OUT_NEXT]) % F.RING] = \
            np.frombuffer(out, dtype=np.uint8)
        self.host_poll_due = None if poll is None else int(poll)
        self._irq_mode = None
        self._update()


class TcpBridge:
    """COM1 as a raw TCP socket on 127.0.0.1: one client at a time; what the
    client sends enters the input queue as fast as it has room, the guest's
    output goes to the client.  Polled by the UART every millisecond of
    emulated time, on the machine's thread (no thread of its own)."""

    def __init__(self, uart, port):
        self.uart = uart
        self.port = port
        self.server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.server.bind(("127.0.0.1", port))
        except OSError as exc:
            self.server.close()
            raise PypcError(f"--serial-tcp {port}: cannot listen on 127.0.0.1:{port}: "
                            f"{exc.strerror or exc}") from None
        self.server.listen(1)
        self.server.setblocking(False)
        self.port = self.server.getsockname()[1]
        self.client = None
        self.sent = 0                 # output offset the client has been sent up to

    def poll(self):
        uart = self.uart
        if self.client is None:
            try:
                self.client, _ = self.server.accept()
            except BlockingIOError:
                return
            self.client.setblocking(False)
            self.sent = uart.tx_next              # a new client sees new output only
        room = QUEUE_SIZE - uart.input_waiting
        if room > 0 and not uart.loopback:
            try:
                data = self.client.recv(min(room, 4096))
            except BlockingIOError:
                data = None
            except OSError:
                data = b""
            if data == b"":
                self._drop()
                return
            if data:
                uart.write_input(data)
        if self.sent < uart.tx_start:
            self.sent = uart.tx_start
        if self.sent < uart.tx_next:
            _, _, out = uart.read_output(self.sent, RING_SIZE)
            try:
                self.sent += self.client.send(out)
            except BlockingIOError:
                pass
            except OSError as exc:
                if exc.errno in (errno.EPIPE, errno.ECONNRESET):
                    self._drop()

    def _drop(self):
        try:
            self.client.close()
        finally:
            self.client = None

    def close(self):
        if self.client is not None:
            self._drop()
        self.server.close()
