"""Calling a compiled handler whose address is data (and the words of a
write journal's log, whose address is data too).

A device may give the core a C function (a numba ``cfunc``, or a ctypes
callback into Python) for a port or a memory window.  The core keeps only its
address, an integer in an array, so the core's own machine code never
changes and its numba cache stays valid; ``call_handler`` is the numba
intrinsic that calls such an address::

    int64 handler(void *ctx, int64 address, int64 value, int64 op)

(``ctx`` is passed as a 64-bit integer, which the C calling convention of
the 64-bit targets numba supports passes exactly like a pointer.)
"""

from llvmlite import ir
from numba import types
from numba.core import cgutils  # noqa: F401  (numba's codegen helpers load with it)
from numba.extending import intrinsic


@intrinsic
def call_handler(typingctx, fn, ctx, address, value, op):
    """``fn(ctx, address, value, op)`` for int64 arguments; returns int64."""
    for t in (fn, ctx, address, value, op):
        if t != types.int64:
            return None
    sig = types.int64(types.int64, types.int64, types.int64, types.int64, types.int64)

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        fnty = ir.FunctionType(i64, [i64, i64, i64, i64])
        target = builder.inttoptr(args[0], fnty.as_pointer())
        return builder.call(target, list(args[1:]))

    return sig, codegen


@intrinsic
def call_region(typingctx, fn, regs, mem, pf, xf, ctl, cycles, deadline, entry):
    """``fn(regs, mem, pf, xf, ctl, cycles, deadline, entry)`` for int64
    arguments (the block translator's regions, see cpu/blockgen.py)."""
    args = (regs, mem, pf, xf, ctl, cycles, deadline, entry)
    for t in (fn,) + args:
        if t != types.int64:
            return None
    sig = types.int64(*([types.int64] * 9))

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        fnty = ir.FunctionType(i64, [i64] * 8)
        target = builder.inttoptr(args[0], fnty.as_pointer())
        return builder.call(target, list(args[1:]))

    return sig, codegen


@intrinsic
def load_word(typingctx, address):
    """The int64 at ``address`` (a write journal's log, whose address is data
    in the page table as a handler's is)."""
    if address != types.int64:
        return None
    sig = types.int64(types.int64)

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        return builder.load(builder.inttoptr(args[0], i64.as_pointer()))

    return sig, codegen


@intrinsic
def store_word(typingctx, address, value):
    """Store the int64 ``value`` at ``address``."""
    if address != types.int64 or value != types.int64:
        return None
    sig = types.void(types.int64, types.int64)

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        builder.store(args[1], builder.inttoptr(args[0], i64.as_pointer()))
        return context.get_dummy_value()

    return sig, codegen
