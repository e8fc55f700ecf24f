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
from numba.core import cgutils
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


@intrinsic
def store_u8(typingctx, address, value):
    """Store the low byte of the int64 ``value`` at ``address`` (a write
    journal's view, whose address is in the log's header)."""
    if address != types.int64 or value != types.int64:
        return None
    sig = types.void(types.int64, types.int64)

    def codegen(context, builder, signature, args):
        i8 = ir.IntType(8)
        builder.store(builder.trunc(args[1], i8), builder.inttoptr(args[0], i8.as_pointer()))
        return context.get_dummy_value()

    return sig, codegen


def _make_array(context, builder, dtype, address, n, columns=0):
    """The C-contiguous array of ``n`` items (rows of ``columns``) of
    ``dtype`` at the int64 ``address``, with no owner (numba's ``carray``
    needs its runtime, which the core runs without)."""
    from numba.np.arrayobj import populate_array
    aryty = types.Array(dtype, 2 if columns else 1, "C")
    ary = context.make_array(aryty)(context, builder)
    item = context.get_data_type(dtype)
    itemsize = context.get_constant(types.intp, context.get_abi_sizeof(item))
    if columns:
        cols = context.get_constant(types.intp, columns)
        shape, strides = [n, cols], [builder.mul(itemsize, cols), itemsize]
    else:
        shape, strides = [n], [itemsize]
    populate_array(ary, data=builder.inttoptr(address, item.as_pointer()),
                   shape=cgutils.pack_array(builder, shape),
                   strides=cgutils.pack_array(builder, strides),
                   itemsize=itemsize, meminfo=None)
    return ary._getvalue()


def _array_at(dtype, ndim, columns=0):
    """An intrinsic ``(address, n) -> array`` (see ``_make_array``)."""
    aryty = types.Array(dtype, ndim, "C")

    @intrinsic
    def array_at(typingctx, address, n):
        if address != types.int64 or n != types.int64:
            return None
        sig = aryty(types.int64, types.int64)

        def codegen(context, builder, signature, args):
            return _make_array(context, builder, dtype, args[0], args[1], columns)

        return sig, codegen

    return array_at


def _state_views_intrinsic():
    """``state_views(a_ctl) -> (ctl, regs, r8, mem, pf, xf, eff)``: the CPU's
    state arrays of a run in progress, from ctl's address and the addresses
    ``core.run`` left in ctl (``state.C_A_*``): what an out-of-line opcode
    family, given ctl's address alone, starts with."""
    from . import state as S
    u8, u16, i64 = types.uint8, types.uint16, types.int64
    tupty = types.Tuple((types.Array(i64, 1, "C"), types.Array(u16, 1, "C"),
                         types.Array(u8, 1, "C"), types.Array(u8, 1, "C"),
                         types.Array(i64, 1, "C"), types.Array(u8, 1, "C"),
                         types.Array(i64, 2, "C")))

    @intrinsic
    def state_views(typingctx, a_ctl):
        if a_ctl != types.int64:
            return None
        sig = tupty(types.int64)

        def codegen(context, builder, signature, args):
            i64t = ir.IntType(64)
            words = builder.inttoptr(args[0], i64t.as_pointer())

            def word(index):
                return builder.load(builder.gep(words, [ir.Constant(i64t, index)]))

            def const(v):
                return ir.Constant(i64t, v)

            regs = word(S.C_A_REGS)
            values = [
                _make_array(context, builder, i64, args[0], const(S.C_SIZE)),
                _make_array(context, builder, u16, regs, const(S.REGS_SIZE)),
                _make_array(context, builder, u8, regs, const(2 * S.REGS_SIZE)),
                _make_array(context, builder, u8, word(S.C_A_MEM), const(S.MEM_SIZE)),
                _make_array(context, builder, i64, word(S.C_A_PF), const(S.PAGE_TABLE_SIZE)),
                _make_array(context, builder, u8, word(S.C_A_XF), const(S.MEM_SIZE)),
                _make_array(context, builder, i64, word(S.C_A_EFF), word(S.C_N_EFF), 4),
            ]
            return context.make_tuple(builder, tupty, values)

        return sig, codegen

    return state_views


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


def _python_state_views(a_ctl):
    """``state_views`` as plain Python (``NUMBA_DISABLE_JIT=1``)."""
    from . import state as S
    ctl = i64_at(a_ctl, S.C_SIZE)
    return (ctl, u16_at(ctl[S.C_A_REGS], S.REGS_SIZE), u8_at(ctl[S.C_A_REGS], 2 * S.REGS_SIZE),
            u8_at(ctl[S.C_A_MEM], S.MEM_SIZE), i64_at(ctl[S.C_A_PF], S.PAGE_TABLE_SIZE),
            u8_at(ctl[S.C_A_XF], S.MEM_SIZE), i64_rows4_at(ctl[S.C_A_EFF], ctl[S.C_N_EFF]))


if numba_config.DISABLE_JIT:
    u8_at = _python_array_at("uint8")
    u16_at = _python_array_at("uint16")
    i64_at = _python_array_at("int64")
    i64_rows4_at = _python_array_at("int64", 4)
    state_views = _python_state_views
else:
    u8_at = _array_at(types.uint8, 1)
    u16_at = _array_at(types.uint16, 1)
    i64_at = _array_at(types.int64, 1)
    i64_rows4_at = _array_at(types.int64, 2, 4)
    state_views = _state_views_intrinsic()
