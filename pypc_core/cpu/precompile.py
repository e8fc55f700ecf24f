"""A cold numba cache compiles the 8088 core on two host cores.

Compiling ``core.run`` from an empty cache takes some 34 s here, one core
busy: ``run``'s own body 12-14 s, and before it the opcode families it
calls (``op_misc`` 3.2-4.9 s, ``op_misc_common`` 4.0, ``op_string`` 2.8-3.3,
``op_segs`` 2.9, ``op_io`` 2.2-2.4, ...: AMD EPYC 25/17, 2026-12-06, each
with the helpers it is the first to need), each compiled and cached as a
function of its own.
The families do not depend on each other, so when the cache is cold and the
host has a second core, :func:`compile_cold` has a helper process
(``python -m pypc_core.cpu.precompile``) compile :data:`HELPER_SHARE` into
the same cache while this process compiles :data:`OWN_SHARE`; then ``run``
is compiled here, loading the helper's families from the cache (numba looks
in its cache before compiling a callee).  Cache files are written whole and
renamed into place by numba, so the two processes never see each other's
half-written files.

Nothing here changes what is compiled: the signatures are the ones ``run``
calls the families with (a test checks that ``run`` finds them in the cache
rather than compiling them again).  A warm cache, one core, numba's JIT
disabled or any failure of the helper leave the ordinary path: ``run``
compiles whatever it does not find.
"""

import os
import subprocess
import sys

from . import core

# the families the helper compiles (~11 s here, and ~1 s to start) and the
# ones compiled here (~11 s) while it does (each side's time includes the
# helpers its families call, compiled on both sides); ``run``'s own body
# follows here.  (With op_io here the halves were 14 s and 8.4 s.)
HELPER_SHARE = ("op_misc_common", "op_shift", "op_segs", "op_misc_regs", "op_io")
OWN_SHARE = ("op_misc", "op_group45", "op_group3", "op_string", "op_int")


def _signatures():
    from numba import types
    i = types.int64
    at = (i,)                     # ctl's address (the other arrays' are in it)
    return {
        # op, ip, csb, sov
        "op_misc_common": at + (i,) * 4,
        "op_segs": at + (i,) * 4,
        "op_misc_regs": at + (i,) * 4,
        "op_group45": at + (i,) * 4,
        "op_shift": at + (i,) * 4,
        # op, ip, csb, sov, rep, start_ip
        "op_group3": at + (i,) * 6,
        # op, ip, csb, sov, start_ip, now
        "op_misc": at + (i,) * 6,
        "op_int": at + (i,) * 6,
        "op_io": at + (i,) * 6,
        # op, ip, sov, rep, start_ip, last_prefix_ip, now, deadline, resumed
        "op_string": at + (i,) * 8 + (types.boolean,),
    }


def compile_families(names):
    """Compile (or load from the cache) each family of ``names`` for the
    signature ``run`` calls it with."""
    sigs = _signatures()
    for name in names:
        getattr(core, name).compile(sigs[name])


def cache_is_cold():
    """True when ``core.run`` has no cache index yet (numba's first compile
    of it in this cache folder).  A stale index (an edited core) counts as
    warm here: the ordinary path compiles it, only on one core."""
    try:
        return not os.path.exists(core.run._cache._cache_file._index_path)
    except AttributeError:           # numba without these internals, or JIT off
        return False


_looked = False


def compile_cold():
    """Once per process (the first ``Cpu``): if the cache is cold and the
    host has two cores, the families compiled in two processes at once,
    before ``run`` needs them.  Returns True when it did that."""
    global _looked
    if _looked:
        return False
    _looked = True
    if not cache_is_cold() or (os.cpu_count() or 1) < 2:
        return False
    helper = subprocess.Popen([sys.executable, "-m", "pypc_core.cpu.precompile"],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        compile_families(OWN_SHARE)
    finally:
        helper.wait()                # (its failure only means run compiles them)
    return True


if __name__ == "__main__":
    compile_families(HELPER_SHARE)
