"""CPU state layout shared by the numba core and the Python side.

All CPU state lives in two small numpy arrays so that the jitted core can take
them as arguments (no module-level arrays: those make numba functions
uncacheable) and so that a snapshot is a plain copy of the arrays:

* ``regs``  -- ``np.uint16[16]``: the sixteen 16-bit registers, indexed by the
  constants below (general registers in 8086 encoding order, then segment
  registers in encoding order, then IP and FLAGS).  ``regs.view(np.uint8)``
  gives the 8-bit halves (AL is byte 0, AH byte 1, CL byte 2, ...).
* ``ctl``   -- ``np.int64[CTL_SIZE]``: counters, the interrupt interface and
  the exit mailbox between the core and Python, indexed by ``C_*``.
"""

import numpy as np

CPU_HZ = 4_772_727            # the 8088's clock: 14.31818 MHz / 3

# --- regs indices ---------------------------------------------------------
AX, CX, DX, BX, SP, BP, SI, DI = range(8)
ES, CS, SS, DS = 8, 9, 10, 11
IP = 12
FLAGS = 13
REGS_SIZE = 16

REG16_NAMES = ("ax", "cx", "dx", "bx", "sp", "bp", "si", "di")
SEG_NAMES = ("es", "cs", "ss", "ds")
REG_INDEX = {name: i for i, name in enumerate(REG16_NAMES)}
REG_INDEX.update({name: 8 + i for i, name in enumerate(SEG_NAMES)})
REG_INDEX["ip"] = IP
REG_INDEX["flags"] = FLAGS

# --- FLAGS bits -----------------------------------------------------------
F_CF = 0x0001
F_PF = 0x0004
F_AF = 0x0010
F_ZF = 0x0040
F_SF = 0x0080
F_TF = 0x0100
F_IF = 0x0200
F_DF = 0x0400
F_OF = 0x0800
# On the 8086/8088 bits 12-15 and bit 1 always read as 1, bits 3 and 5 as 0.
FLAGS_FIXED_ONES = 0xF002
FLAGS_WRITABLE = 0x0FD5

# --- ctl indices (unlisted ones are free) -----------------------------------
C_CYCLES = 0          # emulated CPU cycles since power-on (4.77 MHz clock)
C_INSTRUCTIONS = 1    # executed instructions plus hardware interrupt entries (IRQ, NMI)
C_DEADLINE = 2        # run() returns EXIT_BUDGET once C_CYCLES >= this
C_EXIT = 3            # exit reason of the last run() (EXIT_*)
C_EXIT_PORT = 4       # port of an EXIT_IO_IN / EXIT_IO_OUT
C_EXIT_VALUE = 5      # value written by EXIT_IO_OUT; trap number of EXIT_TRAP
C_EXIT_WIDTH = 6      # 1 or 2 (bytes) for port exits
C_IO_READY = 7        # Python sets 1 after answering EXIT_IO_IN ...
C_IO_VALUE = 8        # ... with this value; the core re-executes the IN
C_INTR = 9            # INTR line level (set by the interrupt controller)
C_NMI = 10            # NMI pending (edge latched by Python)
C_HALTED = 11         # 1 while the CPU sits in HLT
C_SKIP_BP = 12        # 1: ignore the execution breakpoint at CS:IP once (resume)
C_STEP = 13           # >0: stop after this many instructions (EXIT_STEP)
C_RECORD = 14         # 1: record memory/I/O effects into the effect buffer
C_EFFECTS = 15        # number of effects recorded in the current record window
C_HLT_WAITS = 16      # waits of a halted CPU (each a CPU Tick: the clock moved to a deadline)
C_WATCH_HIT = 17      # linear address of the access that hit a memory watch
C_WATCH_KIND = 18     # 1 read, 2 write
C_WATCH_VALUE = 19    # byte read or written
C_WATCH_OLD = 20      # byte before a write
C_TRAP_ENABLE = 22    # 1: firmware traps (exec flag bit 1) are honoured
C_WATCH_IP = 24       # IP (offset) of the instruction that hit the watch
C_WATCH_CS = 25       # CS of the instruction that hit the watch
C_BLOCK_INSNS = 26    # the block translator: instructions a translated region executed (0 after a run)
C_INHIBIT = 28        # 1: interrupts held off for one instruction (after MOV SS, POP SS, STI)
C_REP_RESUME = 29     # 1: the string instruction at CS:IP continues after a budget exit
C_NOW = 30            # the cycle the current instruction began at (a REP string's: its
                      # iteration's): the clock a PG_CLOCKED page's handler is given
# the debugger's words (see pypc_core/debugger/: breakpoints.py, trace.py)
C_TRACE = 32          # instruction trace: bit 0 on, bit 1 with registers, bit 2 with effects
C_TRACE_N = 33        # trace records written so far (the ring index is this mod capacity)
C_SKIP_INT = 34       # 1: let the INT at CS:IP through its breakpoint once (resume)
C_INT_MASK = 36       # 4 words: bit n set = stop before software INT n (EXIT_INT_BREAK)
C_IOW_N = 40          # number of watched port ranges below
C_IOW = 41            # 8 words: lo | hi << 16 | (1 read, 2 write) << 32: such ports exit
IOW_MAX = 8
# Where run() has the state arrays, for the out-of-line opcode families it
# calls with ctl's address alone (numba passes an array as all its fields:
# seven arrays were about 50 words pushed at every call).  run() writes them
# at its start; they mean nothing outside a run, so get_state leaves them out.
C_A_REGS = 52
C_A_MEM = 53
C_A_PF = 54
C_A_XF = 55
C_A_EFF = 56
C_N_EFF = 57            # the effect buffer's rows
C_A_PK = 58
C_A_PIO = 59
C_ADDRESSES = slice(C_A_REGS, C_A_PIO + 1)
C_SIZE = 64

# --- trace records (np.int64[capacity, TRACE_WORDS]): one per CPU Tick -------
TR_CYCLES = 0         # cycle the Tick started at
TR_CSIP = 1           # CS << 16 | IP
TR_BYTES = 2          # the 8 bytes at CS:IP (wrapping in CS), little-endian packed
TR_REGS = 3           # 4 words: AX..DI, ES..FLAGS as 16-bit fields (with registers)
TR_EFFECT = 7         # effect count (C_EFFECTS) before the Tick (with effects)
TR_KIND = 8           # TRK_* | irq << 8 | vector << 16 (an interrupt dispatch)
TRACE_WORDS = 9
TRK_INSTRUCTION = 0   # an opcode executed (software INT and TF trap included)
TRK_HLT = 1           # a halted CPU waited (the clock advanced to a device event)
TRK_DISPATCH = 2      # a PIC interrupt was entered (no opcode executed)

# --- exit reasons -----------------------------------------------------------
EXIT_NONE = 0
EXIT_BUDGET = 1       # C_CYCLES reached C_DEADLINE
EXIT_IO_IN = 2        # IN needs a value from Python (instruction not executed yet)
EXIT_IO_OUT = 3       # OUT executed; Python must deliver the value to the port
EXIT_BREAKPOINT = 4   # execution breakpoint at CS:IP (instruction not executed)
EXIT_TRAP = 5         # firmware trap at CS:IP (instruction not executed)
EXIT_STEP = 6         # C_STEP instructions executed
EXIT_HALT = 7         # HLT with interrupts disabled and nothing pending
EXIT_WATCH = 8        # memory watch hit (instruction completed)
EXIT_IRQ = 9          # INTR asserted with IF=1: Python must acknowledge and call interrupt()
EXIT_FAULT = 10       # an opcode the core failed to decode (a core bug; C_EXIT_VALUE = opcode)
EXIT_INT_BREAK = 11   # software INT n with bit n of C_INT_MASK (not executed; C_EXIT_VALUE = n)

EXIT_NAMES = {
    EXIT_NONE: "none", EXIT_BUDGET: "budget", EXIT_IO_IN: "io_in",
    EXIT_IO_OUT: "io_out", EXIT_BREAKPOINT: "breakpoint", EXIT_TRAP: "trap",
    EXIT_STEP: "step", EXIT_HALT: "halt", EXIT_WATCH: "watch", EXIT_IRQ: "irq", EXIT_FAULT: "fault",
    EXIT_INT_BREAK: "int_break",
}

# --- per-page flags (4 KiB pages, 256 of them) ------------------------------
PAGE_SHIFT = 12
PAGE_COUNT = 1 << (20 - PAGE_SHIFT)
PG_READONLY = 0x01    # ROM or unmapped: writes are ignored
PG_WATCH_R = 0x02     # a memory-read watch covers part of this page
PG_WATCH_W = 0x04     # a memory-write watch covers part of this page
PG_ALIAS = 0x10       # a write also lands in the page's alias ring (PT_TWIN)
PG_HANDLER = 0x20     # data reads and writes call the page's handler (PT_FN, PT_CTX)
PG_CLOCKED = 0x40     # ... and its writes carry their cycle (C_NOW) in op >> 1, as a port
                      # handler's do (a write journal); other handlers get op == HANDLER_WRITE
PG_JOURNAL = 0x80     # a RAM page (never PG_HANDLER) whose writes that change a byte are
                      # appended to a write journal's log (PT_JLOG, PT_JENTRY; layout below)

# The page table handed to the core: ``int64[PAGE_TABLE_SIZE]``.  The first
# PAGE_COUNT words are the PG_* flags of each page; then, per page, one word
# in each of these planes (``table[PT_TWIN + page]``...):
PT_TWIN = PAGE_COUNT          # PG_ALIAS: the next page of the ring of copies
PT_FN = 2 * PAGE_COUNT        # PG_HANDLER: address of the handler function
PT_CTX = 3 * PAGE_COUNT       # PG_HANDLER: the handler's context pointer
PT_JLOG = 4 * PAGE_COUNT      # PG_JOURNAL: address of the journal log's int64 words
PT_JENTRY = 5 * PAGE_COUNT    # PG_JOURNAL: the page's entry base (kind, its offset in the window)
PAGE_TABLE_SIZE = 6 * PAGE_COUNT

# A write journal's log (``int64`` words; the core appends for PG_JOURNAL pages,
# a card's compiled handler and Python may append too): a header, then a ring
# of rows of JE_WORDS words -- word 0 ``kind << JE_KIND | offset << JE_OFFSET |
# old << 8 | new`` (the byte before and after, the offset in the journaled
# window), word 1 the emulated cycle of the write.  The entry numbered n (from
# 0) is in row ``n & JL_MASK``: a ring of a power of two rows, the newest
# entries overwriting the oldest, so the log is a recorder's history itself
# (nothing copies entries out).  JL_VIEW is the address of a byte array the
# appender keeps current, ``view[offset] = new`` for each TEXT entry (and
# JL_FONT_VIEW for FONT entries): the window as the journal shows it, which a
# recorder compares with memory to find changes the journal did not see.  A
# page's PT_JENTRY is word 0 of its first byte with old and new zero: the
# core adds ``(a & 0xFFF) << JE_OFFSET``, old and new, so logging a byte is a
# few adds and four stores.
JL_COUNT = 0          # entries appended since the log was made (never wraps)
JL_MASK = 1           # rows - 1 (rows a power of two)
JL_VIEW = 2           # address of the TEXT view (uint8[JL_VIEW_BYTES])
JL_FONT_VIEW = 3      # address of the FONT view (uint8[JL_VIEW_BYTES])
JL_HEADER = 8         # the first row's word
JL_VIEW_BYTES = 1 << 16   # a view covers every offset an entry can name
JE_WORDS = 2
JE_OFFSET = 16        # offset bits 16..55
JE_KIND = 56          # kind bits 56..63
# A memory handler is a C function int64 handler(void *ctx, int64 address,
# int64 value, int64 op): op HANDLER_READ returns the byte at the linear
# address, op HANDLER_WRITE stores ``value`` (the result is ignored).  A
# port handler gets the same, the port as the address and, in the op's
# upper bits, the cycle of the access: read/write = op & 1, cycle = op >> 1.
HANDLER_READ = 0
HANDLER_WRITE = 1

# --- per-byte execution flags (1 MiB) ---------------------------------------
XF_BREAKPOINT = 0x01
XF_TRAP = 0x02
XF_WATCH_R = 0x04     # byte-precise memory watch (read)
XF_WATCH_W = 0x08     # byte-precise memory watch (write)
XF_BLOCK = 0x10       # a translated region can be entered here (see cpu/translator.py)

# --- effect records (np.int64[MAX_EFFECTS, 4]) ------------------------------
EFF_MEM_READ = 1      # (kind, linear address, value, 0)
EFF_MEM_WRITE = 2     # (kind, linear address, new value, old value)
EFF_IO_READ = 3       # (kind, port, value, width)
EFF_IO_WRITE = 4      # (kind, port, value, width)
MAX_EFFECTS = 4096

MEM_SIZE = 1 << 20

# --- ports answered inside the core -----------------------------------------
# ``port_kind`` (uint8[65536]) says how the core answers each port; ``port_io``
# (int64[PIO_SIZE]) holds, at ``port_io[port]``, the value of a PORT_VALUE
# port or, for the other fast kinds, the index of the port's parameter block
# in the pool ``port_io[PIO_POOL:]`` (blocks are handed out by the bus).
PORT_NONE = 0      # unclaimed: reads FFh, writes vanish
PORT_PY = 1        # a Python handler answers reads and writes (an exit)
PORT_VALUE = 2     # reads return port_io[port] (kept current by the device); writes exit
PORT_RASTER = 3    # reads compute raster status bits from the cycle; writes exit
PORT_COUNTER = 4   # reads of a down counter computed from the cycle; writes exit
PORT_STAMP = 5     # writes are counted and time-stamped in the core; reads FFh
# (the kinds from PORT_STAMP on are the ones whose writes the core completes:
# keep them last)
PORT_ONESHOT = 6   # reads: one-shot bits from the cycle; writes fire them (no exit)
PORT_CALL = 7      # reads and writes call a compiled handler (no exit)
PORT_TIMER = PORT_COUNTER          # the old name
PIO_POOL = 65536
PIO_POOL_SIZE = 8192
PIO_SIZE = PIO_POOL + PIO_POOL_SIZE

# raster block: dot = cycle * R_NUM // R_DEN - R_EPOCH, wrapped to a frame
R_EPOCH, R_LINE, R_HDISP, R_FRAME, R_VDISP, R_VS0, R_VS1, R_CONST, R_BLANK, \
    R_VSYNC, R_NUM, R_DEN = range(12)
RASTER_WORDS = 12

# counter block (an 8253-style down counter read a byte at a time)
T_KIND = 0         # 0 counting down by one, 1 stopped, 2 periodic (mode 2), 3 square (mode 3)
T_START = 1        # counter edge the segment starts at
T_CE = 2           # counting element at T_START (kinds 0 and 1)
T_OUT = 3          # kind 3: output level the segment started with
T_RELOAD = 4       # kinds 2/3: effective reload value
T_LIMIT = 5        # first edge the model is not valid for (a pending load)
T_ACCESS = 6       # 1 LSB, 2 MSB, 3 LSB then MSB
T_READ_MSB = 7     # read flip-flop (written by the core)
T_LATCHED = 8      # a latched count is waiting (written by the core)
T_LATCH = 9        # the latched count
T_READS = 10       # reads answered in the core since Python last looked
T_DIV = 11         # CPU cycles per counter edge
COUNTER_WORDS = 12

# stamp block: total count, cycle of the last write, first cycle of the
# current burst, writes in the current burst, last value, the gap (cycles)
# that ends a burst
STAMP_WORDS = 6

# one-shot block: constant bits, number of one-shots, fires, cycle of the
# last fire, then per one-shot (bit mask, duration in cycles, expiry cycle)
O_CONST, O_COUNT, O_FIRES, O_LAST = range(4)
O_FIRST = 4
ONESHOT_WORDS_EACH = 3

# call block: handler address, context pointer (the HANDLER_* protocol, the
# port number as the address)
K_FN, K_CTX = 0, 1
CALL_WORDS = 2


def new_regs():
    regs = np.zeros(REGS_SIZE, dtype=np.uint16)
    regs[FLAGS] = FLAGS_FIXED_ONES
    return regs


def new_ctl():
    return np.zeros(C_SIZE, dtype=np.int64)
