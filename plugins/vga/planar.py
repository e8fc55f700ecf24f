"""The VGA's CPU memory interface: four 64 KiB planes seen through the
A0000h-BFFFFh window, as numba-compilable pure functions.

State is two arrays so the functions can run inside the compiled CPU loop
(through the board's compiled memory window) or from Python alike:

* ``planes`` -- ``uint8[4, 65536]``: display memory, plane-major;
* ``st``     -- ``int64[ST_SIZE]``: the register fields the access path needs,
  decoded from the sequencer and graphics controller by ``VGA`` whenever a
  register changes (``ST_*`` below), plus the four latches.

What an access does (IBM VGA Technical Reference, sequencer and graphics
controller chapters):

* window: GC 6 bits 2-3 select A0000h/128K, A0000h/64K, B0000h/32K or
  B8000h/32K; an address outside the selected window is not the card's
  (reads float high, writes go nowhere);
* addressing: chain-4 (sequencer 4 bit 3) takes the plane from address bits
  0-1 and keeps the address (bits 0-1 cleared) inside the plane; odd/even
  (sequencer 4 bit 2 clear for writes, GC 5 bit 4 for reads) takes the plane
  from bit 0 (plane 0/2 even, 1/3 odd) and clears bit 0; otherwise every plane
  answers the same address;
* reads load the four latches, then read mode 0 returns the plane the read
  map select names (in chain-4/odd-even the addressed plane), read mode 1
  returns 1 bits where every plane that colour don't care includes matches
  colour compare;
* writes: rotate (GC 3 bits 0-2), then write mode 0 (set/reset where enable
  set/reset says, else the rotated byte), 1 (the latches), 2 (byte bits 0-3
  spread to whole planes), 3 (set/reset as data, rotated byte ANDed with the
  bit mask); then the logical function with the latches (GC 3 bits 3-4:
  replace, AND, OR, XOR), the bit mask (bits not in it keep the latch), and
  the map mask (planes not in it are left alone).  Write mode 1 ignores the
  function and the bit mask.
"""

import numpy as np
from numba import njit

from pypc_core.bus.journal import (
    FONT, TEXT, log_append, recompile_with_the_log_layout, voidptr,
)

# the journaled writes below inline the log's layout: a change there must
# recompile them, not reuse numba's cached copies
recompile_with_the_log_layout(__file__)

PLANE_SIZE = 0x10000
PLANE_MASK = PLANE_SIZE - 1
FLOAT = 0xFF                     # a read nobody answers

# -- st[] layout ------------------------------------------------------------------
ST_WIN_BASE = 0      # linear address of the selected window
ST_WIN_SIZE = 1      # its length (0x20000, 0x10000 or 0x8000)
ST_MAP_MASK = 2      # sequencer 2, bits 0-3
ST_CHAIN4 = 3        # sequencer 4 bit 3
ST_OE_WRITE = 4      # odd/even writes (sequencer 4 bit 2 clear)
ST_OE_READ = 5       # odd/even reads (GC 5 bit 4)
ST_SET_RESET = 6     # GC 0
ST_ENABLE_SR = 7     # GC 1
ST_COLOR_CMP = 8     # GC 2
ST_ROTATE = 9        # GC 3 bits 0-2
ST_FUNC = 10         # GC 3 bits 3-4
ST_READ_MAP = 11     # GC 4 bits 0-1
ST_WRITE_MODE = 12   # GC 5 bits 0-1
ST_READ_MODE = 13    # GC 5 bit 3
ST_DONT_CARE = 14    # GC 7
ST_BIT_MASK = 15     # GC 8
ST_PLAIN = 16        # 1: a write is a plain store (mode 0, no rotate/SR/function, mask FFh)
ST_LATCH = 20        # four latches, st[20..23]
ST_WRITES = 24       # count of CPU writes that reached the planes (statistics)
ST_READS = 25        # count of CPU reads the card answered
# the sequencer and graphics controller register files themselves (the
# fields above are decoded from them by ``derive``): their ports are
# answered by ``io_read``/``io_write``, from Python or inside the core
ST_SEQ_INDEX = 26
ST_GC_INDEX = 27
ST_SEQ = 28          # sequencer 0-4: st[28..32]
ST_GC = 33           # graphics controller 0-8: st[33..41]
SEQ_COUNT = 5
GC_COUNT = 9
# the DAC (3C6h-3C9h), answered the same way
ST_PEL_MASK = 42
ST_DAC_WRITE = 43    # write index (3C8h)
ST_DAC_READ = 44     # read index (3C7h)
ST_DAC_COMPONENT = 45  # 0-2: red, green, blue of the entry in progress
ST_DAC_STATE = 46    # 3C7h read: 0 after a write index, 3 after a read index
ST_DAC_PENDING = 47  # three 6-bit components of a write in progress: st[47..49]
ST_DAC = 50          # 256 entries x (red, green, blue), 6 bits each: st[50..817]
ST_SIZE = ST_DAC + 768

FUNC_REPLACE, FUNC_AND, FUNC_OR, FUNC_XOR = 0, 1, 2, 3

JIT = dict(cache=True, nogil=True, _nrt=False, error_model="numpy")


def new_state():
    """Power-on ``st``: window A0000h/128K, all planes, plain writes."""
    st = np.zeros(ST_SIZE, dtype=np.int64)
    st[ST_SEQ:ST_SEQ + SEQ_COUNT] = (0x03, 0x00, 0x0F, 0x00, 0x06)
    st[ST_GC:ST_GC + GC_COUNT] = (0, 0, 0, 0, 0, 0, 0, 0x0F, 0xFF)
    st[ST_PEL_MASK] = 0xFF
    derive(st)
    return st


def new_planes():
    return np.zeros((4, PLANE_SIZE), dtype=np.uint8)


# -- one buffer for both: the compiled window handler's context ------------------------
ST_BYTES = ST_SIZE * 8
CONTEXT_BYTES = ST_BYTES + 4 * PLANE_SIZE


def new_context():
    """(ctx, st, planes): one contiguous ``uint8`` buffer and the two views
    into it the functions below take.  The board hands ``ctx`` to the
    compiled handler (``window_handler()``) as its context pointer."""
    ctx = np.zeros(CONTEXT_BYTES, dtype=np.uint8)
    st = ctx[:ST_BYTES].view(np.int64)
    st[:] = new_state()
    planes = ctx[ST_BYTES:].reshape(4, PLANE_SIZE)
    return ctx, st, planes


@njit(**JIT)
def derive(st):
    """Decode the register files into the fields the memory path uses."""
    seq2 = st[ST_SEQ + 2]
    seq4 = st[ST_SEQ + 4]
    gc3 = st[ST_GC + 3]
    gc5 = st[ST_GC + 5]
    sel = (st[ST_GC + 6] >> 2) & 3
    if sel == 0:
        st[ST_WIN_BASE] = 0xA0000
        st[ST_WIN_SIZE] = 0x20000
    elif sel == 1:
        st[ST_WIN_BASE] = 0xA0000
        st[ST_WIN_SIZE] = 0x10000
    elif sel == 2:
        st[ST_WIN_BASE] = 0xB0000
        st[ST_WIN_SIZE] = 0x8000
    else:
        st[ST_WIN_BASE] = 0xB8000
        st[ST_WIN_SIZE] = 0x8000
    st[ST_MAP_MASK] = seq2 & 0x0F
    st[ST_CHAIN4] = 1 if seq4 & 0x08 else 0
    st[ST_OE_WRITE] = 0 if seq4 & 0x04 else 1
    st[ST_OE_READ] = 1 if gc5 & 0x10 else 0
    st[ST_SET_RESET] = st[ST_GC] & 0x0F
    st[ST_ENABLE_SR] = st[ST_GC + 1] & 0x0F
    st[ST_COLOR_CMP] = st[ST_GC + 2] & 0x0F
    st[ST_ROTATE] = gc3 & 7
    st[ST_FUNC] = (gc3 >> 3) & 3
    st[ST_READ_MAP] = st[ST_GC + 4] & 3
    st[ST_WRITE_MODE] = gc5 & 3
    st[ST_READ_MODE] = (gc5 >> 3) & 1
    st[ST_DONT_CARE] = st[ST_GC + 7] & 0x0F
    st[ST_BIT_MASK] = st[ST_GC + 8] & 0xFF
    plain = (gc5 & 3) == 0 and (st[ST_GC + 1] & 0x0F) == 0 and (gc3 & 0x1F) == 0 \
        and (st[ST_GC + 8] & 0xFF) == 0xFF
    st[ST_PLAIN] = 1 if plain else 0


@njit(**JIT)
def io_write(st, port, v):
    """A write to 3C4h/3C5h (sequencer), 3C6h-3C9h (DAC) or 3CEh/3CFh
    (graphics controller)."""
    v &= 0xFF
    if port == 0x3C9:
        c = st[ST_DAC_COMPONENT]
        st[ST_DAC_PENDING + c] = v & 0x3F
        if c == 2:
            e = ST_DAC + 3 * st[ST_DAC_WRITE]
            st[e] = st[ST_DAC_PENDING]
            st[e + 1] = st[ST_DAC_PENDING + 1]
            st[e + 2] = st[ST_DAC_PENDING + 2]
            st[ST_DAC_WRITE] = (st[ST_DAC_WRITE] + 1) & 0xFF
            st[ST_DAC_COMPONENT] = 0
        else:
            st[ST_DAC_COMPONENT] = c + 1
    elif port == 0x3C8:
        st[ST_DAC_WRITE] = v
        st[ST_DAC_COMPONENT] = 0
        st[ST_DAC_STATE] = 0
    elif port == 0x3C7:
        st[ST_DAC_READ] = v
        st[ST_DAC_COMPONENT] = 0
        st[ST_DAC_STATE] = 3
    elif port == 0x3C6:
        st[ST_PEL_MASK] = v
    elif port == 0x3C4:
        st[ST_SEQ_INDEX] = v & 0x07
    elif port == 0x3C5:
        i = st[ST_SEQ_INDEX]
        if i < SEQ_COUNT:
            st[ST_SEQ + i] = v
            derive(st)
    elif port == 0x3CE:
        st[ST_GC_INDEX] = v & 0x0F
    elif port == 0x3CF:
        i = st[ST_GC_INDEX]
        if i < GC_COUNT:
            st[ST_GC + i] = v
            derive(st)


@njit(**JIT)
def io_read(st, port):
    """A read of 3C4h-3C9h/3CEh/3CFh (indexes and registers read back; a
    3C9h read steps through the DAC entry)."""
    if port == 0x3C9:
        c = st[ST_DAC_COMPONENT]
        v = st[ST_DAC + 3 * st[ST_DAC_READ] + c]
        if c == 2:
            st[ST_DAC_READ] = (st[ST_DAC_READ] + 1) & 0xFF
            st[ST_DAC_COMPONENT] = 0
        else:
            st[ST_DAC_COMPONENT] = c + 1
        return v
    if port == 0x3C8:
        return st[ST_DAC_WRITE]
    if port == 0x3C7:
        return st[ST_DAC_STATE]
    if port == 0x3C6:
        return st[ST_PEL_MASK]
    if port == 0x3C4:
        return st[ST_SEQ_INDEX]
    if port == 0x3C5:
        i = st[ST_SEQ_INDEX]
        return st[ST_SEQ + i] if i < SEQ_COUNT else 0xFF
    if port == 0x3CE:
        return st[ST_GC_INDEX]
    if port == 0x3CF:
        i = st[ST_GC_INDEX]
        return st[ST_GC + i] if i < GC_COUNT else 0xFF
    return 0xFF


@njit(**JIT)
def window_offset(st, a):
    """Offset of linear address ``a`` in the selected window, or -1."""
    off = a - st[ST_WIN_BASE]
    if off < 0 or off >= st[ST_WIN_SIZE]:
        return -1
    return off


@njit(**JIT)
def read_offset(planes, st, off):
    """CPU read at window offset ``off`` (>= 0): loads the latches."""
    if st[ST_CHAIN4] != 0:
        plane = off & 3
        addr = off & (PLANE_MASK & ~3)
    elif st[ST_OE_READ] != 0:
        plane = (st[ST_READ_MAP] & 2) | (off & 1)
        addr = off & (PLANE_MASK & ~1)
    else:
        plane = st[ST_READ_MAP]
        addr = off & PLANE_MASK
    l0 = np.int64(planes[0, addr])
    l1 = np.int64(planes[1, addr])
    l2 = np.int64(planes[2, addr])
    l3 = np.int64(planes[3, addr])
    st[ST_LATCH] = l0
    st[ST_LATCH + 1] = l1
    st[ST_LATCH + 2] = l2
    st[ST_LATCH + 3] = l3
    st[ST_READS] += 1
    if st[ST_READ_MODE] == 0:
        if plane == 0:
            return l0
        if plane == 1:
            return l1
        if plane == 2:
            return l2
        return l3
    # read mode 1: colour compare
    cc = st[ST_COLOR_CMP]
    dc = st[ST_DONT_CARE]
    diff = 0
    if dc & 1:
        diff |= l0 ^ (0xFF if cc & 1 else 0)
    if dc & 2:
        diff |= l1 ^ (0xFF if cc & 2 else 0)
    if dc & 4:
        diff |= l2 ^ (0xFF if cc & 4 else 0)
    if dc & 8:
        diff |= l3 ^ (0xFF if cc & 8 else 0)
    return (~diff) & 0xFF


@njit(**JIT)
def write_offset(planes, st, off, v):
    """CPU write of byte ``v`` at window offset ``off`` (>= 0)."""
    mm = st[ST_MAP_MASK]
    if st[ST_CHAIN4] != 0:
        mm &= 1 << (off & 3)
        addr = off & (PLANE_MASK & ~3)
    elif st[ST_OE_WRITE] != 0:
        mm &= 5 << (off & 1)
        addr = off & (PLANE_MASK & ~1)
    else:
        addr = off & PLANE_MASK
    st[ST_WRITES] += 1
    if mm == 0:
        return
    v &= 0xFF
    if st[ST_PLAIN] != 0:
        for p in range(4):
            if mm & (1 << p):
                planes[p, addr] = v
        return
    mode = st[ST_WRITE_MODE]
    if mode == 1:
        for p in range(4):
            if mm & (1 << p):
                planes[p, addr] = st[ST_LATCH + p]
        return
    cpu = v
    rot = st[ST_ROTATE]
    if rot:
        v = ((v >> rot) | (v << (8 - rot))) & 0xFF
    mask = st[ST_BIT_MASK]
    sr = st[ST_SET_RESET]
    esr = st[ST_ENABLE_SR]
    func = st[ST_FUNC]
    if mode == 3:
        mask &= v
    for p in range(4):
        bit = 1 << p
        if not mm & bit:
            continue
        if mode == 0:
            if esr & bit:
                d = 0xFF if sr & bit else 0
            else:
                d = v
        elif mode == 2:
            d = 0xFF if cpu & bit else 0     # mode 2: the CPU byte unrotated
        else:
            d = 0xFF if sr & bit else 0
        latch = st[ST_LATCH + p]
        if func == FUNC_AND:
            d &= latch
        elif func == FUNC_OR:
            d |= latch
        elif func == FUNC_XOR:
            d ^= latch
        planes[p, addr] = ((d & mask) | (latch & ~mask)) & 0xFF


@njit(**JIT)
def cpu_read(planes, st, a):
    """CPU read of linear address ``a`` (A0000h-BFFFFh)."""
    off = window_offset(st, a)
    if off < 0:
        return FLOAT
    return read_offset(planes, st, off)


@njit(**JIT)
def cpu_write(planes, st, a, v):
    """CPU write of byte ``v`` at linear address ``a``."""
    off = window_offset(st, a)
    if off >= 0:
        write_offset(planes, st, off, v)


@njit(**JIT)
def fill(planes, st, a, count, v):
    """``count`` CPU writes of ``v`` at ``a``, ``a + 1``, ... (REP STOSB)."""
    for i in range(count):
        cpu_write(planes, st, (a + i) & 0xFFFFF, v)


@njit(**JIT)
def fill_words(planes, st, a, count, w):
    """``count`` CPU word writes of ``w`` (REP STOSW), low byte first."""
    for i in range(count):
        cpu_write(planes, st, (a + 2 * i) & 0xFFFFF, w & 0xFF)
        cpu_write(planes, st, (a + 2 * i + 1) & 0xFFFFF, (w >> 8) & 0xFF)


@njit(**JIT)
def copy(planes, st, dst, src, count):
    """``count`` CPU read/write pairs, ascending (REP MOVSB inside the window)."""
    for i in range(count):
        v = cpu_read(planes, st, (src + i) & 0xFFFFF)
        cpu_write(planes, st, (dst + i) & 0xFFFFF, v)


@njit(**JIT)
def read_block(planes, st, a, out):
    for i in range(out.shape[0]):
        out[i] = cpu_read(planes, st, (a + i) & 0xFFFFF)


@njit(**JIT)
def write_block(planes, st, a, data):
    for i in range(data.shape[0]):
        cpu_write(planes, st, (a + i) & 0xFFFFF, data[i])


_HANDLER = None


def _ptr_add():
    """A numba intrinsic: ``voidptr + int64`` (numba has no pointer
    arithmetic of its own)."""
    from llvmlite import ir
    from numba import types
    from numba.extending import intrinsic

    @intrinsic
    def ptr_add(typingctx, ptr, off):
        if ptr != types.voidptr or off != types.int64:
            return None
        sig = types.voidptr(types.voidptr, types.int64)

        def codegen(context, builder, signature, args):
            p = builder.bitcast(args[0], ir.IntType(8).as_pointer())
            q = builder.gep(p, [args[1]])
            return builder.bitcast(q, context.get_value_type(types.voidptr))

        return sig, codegen

    return ptr_add


def window_handler():
    """The numba ``cfunc`` ``int64(void *ctx, int64 address, int64 value,
    int64 op)`` the core calls for every data access to the window (``op &
    1``: 0 read, 1 write); ``ctx`` is the buffer of ``new_context()``, seen as the
    ``st`` words followed by the planes.  Compiled on first use (and cached
    on disk by numba); about 10 ns a call from the core."""
    global _HANDLER
    if _HANDLER is None:
        from numba import carray, cfunc, types
        sig = types.int64(types.voidptr, types.int64, types.int64, types.int64)
        ptr_add = _ptr_add()
        st_size = ST_SIZE
        st_bytes = ST_BYTES

        @cfunc(sig, nopython=True, cache=True, error_model="numpy")
        def handler(ctx, a, v, op):
            st = carray(ctx, (st_size,), np.int64)
            planes = carray(ptr_add(ctx, st_bytes), (4, PLANE_SIZE), np.uint8)
            if (op & 1) == 0:
                return cpu_read(planes, st, a)
            cpu_write(planes, st, a, v)
            return 0

        _HANDLER = handler
    return _HANDLER


_PORT_HANDLER = None


def port_handler():
    """The numba ``cfunc`` for the ports 3C4h-3C9h/3CEh/3CFh inside the
    core (``int64(void *ctx, int64 port, int64 value, int64 op)``, ``op &
    1``: 0 read, 1 write; the bits above carry the cycle, unused here), on the same context as ``window_handler``: planar
    drawing code that sets the map mask or the bit mask for every byte, and
    palette fades through the DAC, never leave the compiled loop."""
    global _PORT_HANDLER
    if _PORT_HANDLER is None:
        from numba import carray, cfunc, types
        sig = types.int64(types.voidptr, types.int64, types.int64, types.int64)
        st_size = ST_SIZE

        @cfunc(sig, nopython=True, cache=True, error_model="numpy")
        def handler(ctx, port, v, op):
            st = carray(ctx, (st_size,), np.int64)
            if (op & 1) == 0:               # the bits above are the cycle
                return io_read(st, port)
            io_write(st, port, v)
            return 0

        _PORT_HANDLER = handler
    return _PORT_HANDLER


# -- write journal (video.history): the same writes, and each changed text or font byte --
# logged into a ``pypc_core.bus.journal.WriteLog`` (its ``words``): kind TEXT with the
# offset in the text view (``VGA.text_view``: plane 0 and 1 bytes at even plane
# addresses below 8000h, offset = address + plane), kind FONT with the plane 2 address;
# nothing while the graphics controller selects a graphics mode (GC 6 bit 0: graphics
# memory is not journaled)

@njit(**dict(JIT, inline="always"))
def journaled_write(planes, st, a, v, log, cycle):
    off = window_offset(st, a)
    if off < 0:
        return
    if st[ST_CHAIN4] != 0:
        addr = off & (PLANE_MASK & ~3)
    elif st[ST_OE_WRITE] != 0:
        addr = off & (PLANE_MASK & ~1)
    else:
        addr = off & PLANE_MASK
    if st[ST_PLAIN] != 0 and st[ST_CHAIN4] == 0:
        # a plain store (a text mode's every write): write_offset's plain
        # path, comparing only the planes it writes
        mm = st[ST_MAP_MASK]
        if st[ST_OE_WRITE] != 0:
            mm &= 5 << (off & 1)
        st[ST_WRITES] += 1
        v &= 0xFF
        logging = (st[ST_GC + 6] & 1) == 0
        text = addr < 0x8000 and (addr & 1) == 0
        for p in range(4):
            if mm & (1 << p):
                b = np.int64(planes[p, addr])
                planes[p, addr] = v
                if b != v and logging:
                    if p < 2:
                        if text:
                            log_append(log, TEXT, addr + p, b, v, cycle)
                    elif p == 2:
                        log_append(log, FONT, addr, b, v, cycle)
        return
    b0 = np.int64(planes[0, addr])
    b1 = np.int64(planes[1, addr])
    b2 = np.int64(planes[2, addr])
    write_offset(planes, st, off, v)
    if st[ST_GC + 6] & 1:
        return
    if addr < 0x8000 and (addr & 1) == 0:
        n0 = np.int64(planes[0, addr])
        if n0 != b0:
            log_append(log, TEXT, addr, b0, n0, cycle)
        n1 = np.int64(planes[1, addr])
        if n1 != b1:
            log_append(log, TEXT, addr + 1, b1, n1, cycle)
    n2 = np.int64(planes[2, addr])
    if n2 != b2:
        log_append(log, FONT, addr, b2, n2, cycle)


@njit(**JIT)
def journaled_fill(planes, st, a, count, v, log, cycle):
    for i in range(count):
        journaled_write(planes, st, (a + i) & 0xFFFFF, v, log, cycle)


@njit(**JIT)
def journaled_fill_words(planes, st, a, count, w, log, cycle):
    for i in range(count):
        journaled_write(planes, st, (a + 2 * i) & 0xFFFFF, w & 0xFF, log, cycle)
        journaled_write(planes, st, (a + 2 * i + 1) & 0xFFFFF, (w >> 8) & 0xFF, log, cycle)


@njit(**JIT)
def journaled_copy(planes, st, dst, src, count, log, cycle):
    for i in range(count):
        v = cpu_read(planes, st, (src + i) & 0xFFFFF)
        journaled_write(planes, st, (dst + i) & 0xFFFFF, v, log, cycle)


@njit(**JIT)
def journaled_block(planes, st, a, data, log, cycle):
    for i in range(data.shape[0]):
        journaled_write(planes, st, (a + i) & 0xFFFFF, data[i], log, cycle)


_JOURNAL_HANDLER = None
J_PLANAR = 0         # journal handler context: address of the planar context
J_LOG = 1            # address of the WriteLog's words
J_LOG_WORDS = 2      # their length
J_WORDS = 4


def journal_handler():
    """The window handler while a journal records: ``window_handler``'s
    reads and writes, each write through ``journaled_write``.  Its context
    is ``int64[J_WORDS]`` (the planar context's and the log's addresses)."""
    global _JOURNAL_HANDLER
    if _JOURNAL_HANDLER is None:
        from numba import carray, cfunc, types
        sig = types.int64(types.voidptr, types.int64, types.int64, types.int64)
        ptr_add = _ptr_add()
        st_size = ST_SIZE
        st_bytes = ST_BYTES

        @cfunc(sig, nopython=True, cache=True, error_model="numpy")
        def handler(ctx, a, v, op):
            c = carray(ctx, (J_WORDS,), np.int64)
            base = voidptr(c[J_PLANAR])
            st = carray(base, (st_size,), np.int64)
            planes = carray(ptr_add(base, st_bytes), (4, PLANE_SIZE), np.uint8)
            if (op & 1) == 0:
                return cpu_read(planes, st, a)
            log = carray(voidptr(c[J_LOG]), (c[J_LOG_WORDS],), np.int64)
            journaled_write(planes, st, a, v, log, op >> 1)     # op >> 1: the cycle
            return 0

        _JOURNAL_HANDLER = handler
    return _JOURNAL_HANDLER
