"""The interpreter's multiply and divide (core.multiply, core.divide) as C
functions a translated region calls: MUL/IMUL/DIV/IDIV through the block
translator give exactly the interpreter's results, flags included (the
8088's microcode arithmetic, officially undefined flags and all), from one
implementation.

A region's IR names them (``declare i64 @pypc_multiply(...)``), and the
translator binds the names to these functions' addresses when it links the
region (ORC's ``import_symbol``), so the object code holds no address of
this process and the region cache can keep it.  Results come packed in one
int64 (a C function returns one value):

* ``pypc_multiply(a, b, mode, flags)`` -> ``high | low << 16 | flags << 32``
* ``pypc_divide(high, low, divisor, mode, flags)`` -> ``ok | quotient << 1 |
  remainder << 17 | flags << 33`` (ok 0: a divide error, which the region
  leaves to the interpreter)

``mode`` is ``w | signed << 1``.  (blockgen.CALLS_ABI names this packing in
the region cache's recipe: change it with the packing.)  No REP prefix reaches them (a prefixed
instruction is interpreted), so the microcode's F1 flag is 0.
"""

import numpy as np
from numba import cfunc, types

from .core import divide, multiply

MULTIPLY = "pypc_multiply"
DIVIDE = "pypc_divide"


@cfunc(types.int64(types.int64, types.int64, types.int64, types.int64),
       nopython=True, cache=True, error_model="numpy")
def multiply_call(a, b, mode, fl):
    hi, lo, f = multiply(a, b, mode & 1, (mode >> 1) & 1 == 1, 0, fl)
    return np.int64(hi) | (np.int64(lo) << 16) | (np.int64(f) << 32)


@cfunc(types.int64(types.int64, types.int64, types.int64, types.int64, types.int64),
       nopython=True, cache=True, error_model="numpy")
def divide_call(hi, lo, d, mode, fl):
    ok, q, r, f = divide(hi, lo, d, mode & 1, (mode >> 1) & 1 == 1, 0, fl)
    if not ok:
        return np.int64(f) << 33
    return np.int64(1) | (np.int64(q) << 1) | (np.int64(r) << 17) | (np.int64(f) << 33)


SYMBOLS = {MULTIPLY: multiply_call, DIVIDE: divide_call}
