"""A numba function's compiled entry point, for the calls made at every exit."""

import numba


def compiled_entry(dispatcher, *args):
    """The compiled entry point of numba ``dispatcher`` for the types of
    ``args`` (compiled now if it is not yet): calling it skips the
    dispatcher's resolution of the argument types, about 170 ns of the
    1.6 µs an exit to a Python port handler costs (``bench system``'s
    machine exit).  It stays right while the arguments keep those types,
    which the CPU's state arrays do: each is made once, with a fixed dtype
    and layout, and a replacement (a larger effect buffer for a trace) is
    made the same way.  With numba's JIT off (``NUMBA_DISABLE_JIT=1``) it
    is the Python function itself."""
    if not hasattr(dispatcher, "overloads"):
        return dispatcher            # NUMBA_DISABLE_JIT: the plain Python function
    sig = tuple(numba.typeof(a) for a in args)
    compiled = dispatcher.overloads.get(sig)
    if compiled is None:
        dispatcher.compile(sig)
        compiled = dispatcher.overloads[sig]
    return compiled.entry_point
