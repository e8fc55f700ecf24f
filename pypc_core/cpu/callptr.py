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
from numba import config as numba_config
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



def _array_at(dtype, ndim, columns=0):
    """An intrinsic ``(address, n) -> array``: the ``n`` items (rows of
    ``columns`` for 2-D) of ``dtype`` at ``address`` as a C-contiguous
    array with no owner (numba's ``carray`` needs its runtime, which the
    core runs without)."""
    aryty = types.Array(dtype, ndim, "C")

    @intrinsic
    def array_at(typingctx, address, n):
        if address != types.int64 or n != types.int64:
            return None
        sig = aryty(types.int64, types.int64)

        def codegen(context, builder, signature, args):
            from numba.np.arrayobj import populate_array
            address, n = args
            ary = context.make_array(aryty)(context, builder)
            item = context.get_data_type(dtype)
            itemsize = context.get_constant(types.intp, context.get_abi_sizeof(item))
            if ndim == 1:
                shape, strides = [n], [itemsize]
            else:
                cols = context.get_constant(types.intp, columns)
                shape, strides = [n, cols], [builder.mul(itemsize, cols), itemsize]
            populate_array(ary, data=builder.inttoptr(address, item.as_pointer()),
                           shape=cgutils.pack_array(builder, shape),
                           strides=cgutils.pack_array(builder, strides),
                           itemsize=itemsize, meminfo=None)
            return ary._getvalue()

        return sig, codegen

    return array_at


def _python_array_at(dtype, columns=0):
    """``_array_at`` as plain Python, for the core run with numba's JIT
    off (``NUMBA_DISABLE_JIT=1``, for debugging): a numpy view of the
    memory at the address."""
    import ctypes

    import numpy as np

    def array_at(address, n):
        count = int(n) * (columns or 1)
        raw = (ctypes.c_char * (count * np.dtype(dtype).itemsize)).from_address(int(address))
        view = np.frombuffer(raw, dtype=dtype)
        return view.reshape(int(n), columns) if columns else view

    return array_at


if numba_config.DISABLE_JIT:
    u8_at = _python_array_at("uint8")
    u16_at = _python_array_at("uint16")
    i64_at = _python_array_at("int64")
    i64_rows4_at = _python_array_at("int64", 4)
else:
    u8_at = _array_at(types.uint8, 1)
    u16_at = _array_at(types.uint16, 1)
    i64_at = _array_at(types.int64, 1)
    i64_rows4_at = _array_at(types.int64, 2, 4)
