"""The 8250's state machine, compiled: one int64 array holds the registers,
the pending character events, the host's input queue and the retained
output ring, and every function here works on that array at an emulated
cycle.  The same functions serve the Python port handlers and a numba
``cfunc`` the CPU core calls for the card's ports (``Board.compiled_port``),
so a polled guest moves bytes without leaving the compiled loop.

Time is evaluated lazily: ``settle(st, cycle)`` applies every character
event due by ``cycle`` (a byte leaving the shift register, a byte arriving
from the host) before an access is answered.  A flow-controlled port
(``S_FLOW``, the default) has no character time: those events are due at
the cycle they are scheduled, so a byte written to THR is out at once and a
queued byte is in RBR as soon as RBR is free.
"""

import numba
import numpy as np
from numba import njit, types

# registers (offsets from the base port)
RBR, IER, IIR, LCR, MCR, LSR, MSR, SCR = range(8)

IER_RX, IER_THRE, IER_LS, IER_MS = 1, 2, 4, 8
LCR_DLAB = 0x80
MCR_DTR, MCR_RTS, MCR_OUT1, MCR_OUT2, MCR_LOOP = 1, 2, 4, 8, 16
LSR_DR, LSR_OE, LSR_PE, LSR_FE, LSR_BI, LSR_THRE, LSR_TEMT = 1, 2, 4, 8, 16, 32, 64
LSR_ERRORS = LSR_OE | LSR_PE | LSR_FE | LSR_BI
MSR_DCTS, MSR_DDSR, MSR_TERI, MSR_DDCD = 1, 2, 4, 8
MSR_CTS, MSR_DSR, MSR_RI, MSR_DCD = 16, 32, 64, 128
MSR_CONNECTED = MSR_CTS | MSR_DSR | MSR_DCD
IIR_NONE, IIR_MS, IIR_THRE, IIR_RX, IIR_LS = 0x01, 0x00, 0x02, 0x04, 0x06

# state words
S_DLL, S_DLM, S_IER, S_LCR, S_MCR, S_LSR, S_MSRD, S_SCR = range(8)
S_RBR = 8
S_THR = 9
S_THR_FULL = 10
S_TSR = 11
S_TX_DUE = 12          # cycle the shift register's byte is out (-1: idle)
S_RX_DUE = 13          # cycle the next host byte is complete (-1: none coming)
S_RX_HELD = 14         # a complete byte waits in the shift register for RBR
S_THRE_PEND = 15       # THR-empty interrupt latch
S_CHAR = 16            # cycles per character (from LCR and the divisor)
S_IN_HEAD = 17         # input queue: index of its first byte in the ring
S_IN_COUNT = 18        # input queue: bytes waiting
S_OUT_NEXT = 19        # absolute offset of the next output byte
S_LAST_IN = 20         # modem inputs at the last look (for the deltas)
S_FLOW = 21            # 1: flow-controlled (no character time); 0: wire timing
S_WORDS = 32
RING = 65536
IN_BASE = S_WORDS
OUT_BASE = S_WORDS + RING
STATE_SIZE = S_WORDS + 2 * RING

CRYSTAL_HZ = 1_843_200
CPU_NUM, CPU_DEN = 14_318_180, 3          # CPU clock = 14.31818 MHz / 3

JIT = dict(cache=True, nogil=True)


@njit(**JIT)
def char_cycles(lcr, divisor):
    """CPU cycles one character takes (start, data, parity, stop bits of
    16 x divisor crystal clocks); divisor 0 means 65536."""
    if divisor == 0:
        divisor = 65536
    data = 5 + (lcr & 3)
    if lcr & 4:
        half_stop = 3 if data == 5 else 4
    else:
        half_stop = 2
    half_bits = 2 * (1 + data + (1 if lcr & 8 else 0)) + half_stop
    num = half_bits * 16 * divisor * CPU_NUM
    den = 2 * CRYSTAL_HZ * CPU_DEN
    v = (num + den // 2) // den
    return v if v > 0 else 1


@njit(**JIT)
def rate(st, lcr, divisor):
    """The character time the port uses: none when flow-controlled (a byte
    moves as soon as the other side has room), else ``char_cycles``."""
    if st[S_FLOW] != 0:
        return 0
    return char_cycles(lcr, divisor)


@njit(**JIT)
def modem_inputs(st):
    m = st[S_MCR]
    if m & MCR_LOOP:
        v = 0
        if m & MCR_RTS:
            v |= MSR_CTS
        if m & MCR_DTR:
            v |= MSR_DSR
        if m & MCR_OUT1:
            v |= MSR_RI
        if m & MCR_OUT2:
            v |= MSR_DCD
        return v
    return MSR_CONNECTED


@njit(**JIT)
def interrupt_id(st):
    ier = st[S_IER]
    lsr = st[S_LSR]
    if ier & IER_LS and lsr & LSR_ERRORS:
        return IIR_LS
    if ier & IER_RX and lsr & LSR_DR:
        return IIR_RX
    if ier & IER_THRE and st[S_THRE_PEND]:
        return IIR_THRE
    if ier & IER_MS and st[S_MSRD]:
        return IIR_MS
    return IIR_NONE


@njit(**JIT)
def irq_level(st):
    """The level on the bus's IRQ line: a pending interrupt, OUT2 set, not
    in loopback (the PC's OUT2 gates the IRQ driver; loopback forces the
    pin inactive)."""
    m = st[S_MCR]
    return interrupt_id(st) != IIR_NONE and (m & MCR_OUT2) != 0 and (m & MCR_LOOP) == 0


@njit(**JIT)
def _deliver(st, byte):
    if st[S_LSR] & LSR_DR:
        st[S_LSR] |= LSR_OE                 # the unread byte is lost
    st[S_RBR] = byte
    st[S_LSR] |= LSR_DR


@njit(**JIT)
def _pop_input(st):
    b = st[IN_BASE + st[S_IN_HEAD]]
    st[S_IN_HEAD] = (st[S_IN_HEAD] + 1) % RING
    st[S_IN_COUNT] -= 1
    return b


@njit(**JIT)
def _transmitted(st, t):
    byte = st[S_TSR]
    if st[S_MCR] & MCR_LOOP:
        _deliver(st, byte)
    else:
        st[OUT_BASE + st[S_OUT_NEXT] % RING] = byte
        st[S_OUT_NEXT] += 1
    if st[S_THR_FULL]:
        st[S_TSR] = st[S_THR]
        st[S_THR_FULL] = 0
        st[S_TX_DUE] = t + st[S_CHAR]
        st[S_LSR] |= LSR_THRE
        st[S_THRE_PEND] = 1
    else:
        st[S_TX_DUE] = -1
        st[S_LSR] |= LSR_TEMT


@njit(**JIT)
def _received(st, t):
    st[S_RX_DUE] = -1
    if st[S_MCR] & MCR_LOOP or st[S_IN_COUNT] == 0:
        return
    if st[S_LSR] & LSR_DR:
        st[S_RX_HELD] = 1                   # flow control: wait for RBR
        return
    _deliver(st, _pop_input(st))
    if st[S_IN_COUNT]:
        st[S_RX_DUE] = t + st[S_CHAR]


@njit(**JIT)
def next_due(st):
    tx = st[S_TX_DUE]
    rx = st[S_RX_DUE]
    if tx < 0:
        return rx
    if rx < 0:
        return tx
    return tx if tx < rx else rx


@njit(**JIT)
def settle(st, cycle):
    """Apply every character event due by ``cycle``, in time order."""
    for _ in range(1 << 20):
        tx = st[S_TX_DUE]
        rx = st[S_RX_DUE]
        if tx >= 0 and tx <= cycle and (rx < 0 or tx <= rx):
            _transmitted(st, tx)
        elif rx >= 0 and rx <= cycle:
            _received(st, rx)
        else:
            return


@njit(**JIT)
def _modem_changed(st):
    new = modem_inputs(st)
    old = st[S_LAST_IN]
    changed = old ^ new
    if changed & MSR_CTS:
        st[S_MSRD] |= MSR_DCTS
    if changed & MSR_DSR:
        st[S_MSRD] |= MSR_DDSR
    if changed & MSR_DCD:
        st[S_MSRD] |= MSR_DDCD
    if old & MSR_RI and not new & MSR_RI:
        st[S_MSRD] |= MSR_TERI
    st[S_LAST_IN] = new


@njit(**JIT)
def peek(st, r):
    """A read without side effects, or -1 when the read has some."""
    if r == LSR:
        return -1 if st[S_LSR] & LSR_ERRORS else st[S_LSR]
    if r == MSR:
        return -1 if st[S_MSRD] else modem_inputs(st)
    if r == IIR:
        iid = interrupt_id(st)
        return -1 if iid == IIR_THRE else iid
    return -1


@njit(**JIT)
def _set_rate(st, cycle, char):
    """A new character time (a divisor or line-control write): a character
    in flight either way finishes its remaining bits at the new rate (a
    byte the host queued while the divisor was still unset -- 65536, about
    5.7 s a character -- then arrives at the rate the guest chose)."""
    old = st[S_CHAR]
    st[S_CHAR] = char
    if old == char or old <= 0:
        return
    for due in (S_RX_DUE, S_TX_DUE):
        left = st[due] - cycle
        if st[due] >= 0 and left > 0:
            rest = (left * char + old - 1) // old
            st[due] = cycle + (rest if rest > 0 else 1)


@njit(**JIT)
def access(st, r, value, write, cycle):
    """A guest read (``write`` 0; returns the byte) or write of register
    ``r`` at ``cycle``."""
    settle(st, cycle)
    dlab = st[S_LCR] & LCR_DLAB
    if not write:
        if r == RBR:
            if dlab:
                return st[S_DLL]
            v = st[S_RBR]
            if st[S_LSR] & LSR_DR:
                st[S_LSR] &= ~LSR_DR
                if st[S_RX_HELD]:
                    # the held byte moves in one bit time later (a new edge)
                    st[S_RX_HELD] = 0
                    if st[S_FLOW] != 0:
                        st[S_RX_DUE] = cycle          # flow-controlled: at once
                    else:
                        bit = st[S_CHAR] // 10
                        st[S_RX_DUE] = cycle + (bit if bit > 0 else 1)
            return v
        if r == IER:
            return st[S_DLM] if dlab else st[S_IER]
        if r == IIR:
            iid = interrupt_id(st)
            if iid == IIR_THRE:
                st[S_THRE_PEND] = 0
            return iid
        if r == LCR:
            return st[S_LCR]
        if r == MCR:
            return st[S_MCR]
        if r == LSR:
            v = st[S_LSR]
            st[S_LSR] &= ~LSR_ERRORS
            return v
        if r == MSR:
            v = modem_inputs(st) | st[S_MSRD]
            st[S_MSRD] = 0
            return v
        return st[S_SCR]
    value &= 0xFF
    if r == RBR:
        if dlab:
            st[S_DLL] = value
            _set_rate(st, cycle, rate(st, st[S_LCR], (st[S_DLM] << 8) | value))
        else:
            st[S_THRE_PEND] = 0
            if st[S_TX_DUE] < 0:                 # shift register idle: takes it
                st[S_TSR] = value
                st[S_TX_DUE] = cycle + st[S_CHAR]
                st[S_LSR] = (st[S_LSR] | LSR_THRE) & ~LSR_TEMT
                st[S_THRE_PEND] = 1               # THR is empty again at once
            else:
                st[S_THR] = value
                st[S_THR_FULL] = 1
                st[S_LSR] &= ~(LSR_THRE | LSR_TEMT)
    elif r == IER:
        if dlab:
            st[S_DLM] = value
            _set_rate(st, cycle, rate(st, st[S_LCR], (value << 8) | st[S_DLL]))
        else:
            if value & IER_THRE and not st[S_IER] & IER_THRE and st[S_LSR] & LSR_THRE:
                st[S_THRE_PEND] = 1               # enabled with THR empty
            st[S_IER] = value & 0x0F
    elif r == LCR:
        st[S_LCR] = value
        _set_rate(st, cycle, rate(st, value, (st[S_DLM] << 8) | st[S_DLL]))
    elif r == MCR:
        was_loop = st[S_MCR] & MCR_LOOP
        st[S_MCR] = value & 0x1F
        _modem_changed(st)
        if was_loop and not value & MCR_LOOP and st[S_IN_COUNT] \
                and st[S_RX_DUE] < 0 and not st[S_RX_HELD]:
            st[S_RX_DUE] = cycle + st[S_CHAR]    # the cable is back
    elif r == SCR:
        st[S_SCR] = value
    return 0


SIG = types.int64(types.voidptr, types.int64, types.int64, types.int64)


@numba.cfunc(SIG, nopython=True, cache=True)
def port_handler(ctx, port, value, op):
    """The compiled port handler: ``op & 1`` write, ``op >> 1`` the cycle."""
    st = numba.carray(ctx, STATE_SIZE, np.int64)
    return access(st, port & 7, value, op & 1, op >> 1)


def new_state(flow=True):
    """A powered-on port: flow-controlled (``flow``) or wire-timed."""
    st = np.zeros(STATE_SIZE, dtype=np.int64)
    st[S_FLOW] = 1 if flow else 0
    reset(st)
    return st


def reset(st):
    """Master reset: registers cleared; the host queues are kept (they are
    the far end of the cable)."""
    st[:S_IN_HEAD] = 0
    st[S_LSR] = LSR_THRE | LSR_TEMT
    st[S_TX_DUE] = -1
    st[S_RX_DUE] = -1
    st[S_CHAR] = 0 if st[S_FLOW] else char_cycles(0, 0)
    st[S_LAST_IN] = MSR_CONNECTED
