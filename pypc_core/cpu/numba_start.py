"""How a pypc process starts numba without paying for what it never uses.

A process running pypc mostly only *loads* the 8088 core from numba's disk
cache; it compiles nothing (unless the block translator runs or the cache
is cold).  Two things numba does on its first load cost start-up time and
memory for nothing (a batch worker, a fresh ``pypc run``), and this module
avoids them; :func:`lean_start` does both, once per process, when the first
:class:`~pypc_core.cpu.Cpu` is made (``PYPC_LEAN_NUMBA=0``: numba's own
start):

* :func:`without_scipy`: numba's NumPy support imports SciPy's BLAS (to
  learn whether ``np.dot`` may use it), which brings SciPy's linear algebra,
  ``numpy.f2py``, ``unittest`` and more: some 17 MB of a worker (where
  SciPy is installed).
* :func:`start_runtime`: numba's runtime (NRT: reference counts, the
  meminfo helpers) is a small LLVM module that numba compiles -- runs
  LLVM's optimiser and code generator on -- in every process, the first
  time any function is loaded.  That is the only use a warm worker makes of
  those parts of libllvmlite.so, and faulting their code in is some 19 MB
  of the worker's RSS (file-backed pages, shared with other processes that
  use them).  Here the runtime's machine code is kept in a file beside the
  core's numba cache and loaded as numba loads a cached function; the file
  is keyed on the module's LLVM IR, the target (triple, CPU, features), the
  optimisation level and the numba, llvmlite and LLVM versions, so a change
  in any of them compiles (and saves) it again, and carries a SHA-256 of its
  contents, so a damaged file is never linked.  Anything unexpected (no
  cache directory, an unreadable or damaged file, a numba without these
  internals) falls back to numba's own compile.
"""

import contextlib
import hashlib
import os
import sys

MAGIC = b"pypc-nrt-object 2\n"


@contextlib.contextmanager
def without_scipy():
    """Inside this block SciPy's linear algebra (and, if it is not loaded
    yet, SciPy itself) cannot be imported, so numba, loading its NumPy
    support there, notes "no BLAS" (the only effect: ``np.correlate`` and
    ``np.convolve`` in code numba compiles in this process use a plain loop
    instead of BLAS's dot product); afterwards SciPy imports as usual
    (numba's ``np.linalg`` imports it when it is first compiled).  Does
    nothing when numba's NumPy support or SciPy's linear algebra is loaded
    already."""
    if "numba.np.arraymath" in sys.modules or "scipy.linalg" in sys.modules:
        yield
        return
    # None in sys.modules is the import system's "not importable"; numba's
    # import itself only checks SciPy's version when it can import it
    blocked = [name for name in ("scipy", "scipy.linalg") if name not in sys.modules]
    for name in blocked:
        sys.modules[name] = None
    try:
        yield
    finally:
        for name in blocked:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]


def core_cache_dir():
    """The folder numba keeps the 8088 core's cache in (``NUMBA_CACHE_DIR``,
    or the one numba chose beside the core or in the user's cache), or
    None."""
    try:
        from . import core
        return core.run._cache._cache_path
    except Exception:
        return None


def runtime_key(ctx, ir_module):
    """What the runtime's machine code depends on, as a hex digest."""
    import llvmlite
    import numba
    from llvmlite import binding as ll
    from numba.core import config
    h = hashlib.sha256()
    for part in (numba.__version__, llvmlite.__version__, ll.llvm_version_info,
                 ctx.codegen().magic_tuple(), config.OPT, str(ir_module)):
        h.update(repr(part).encode() + b"\0")
    return h.hexdigest()


def _read(path, key):
    """(object code, linking bitcode) from ``path`` if it holds ``key``'s."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    head = MAGIC + key.encode() + b"\n"
    if not data.startswith(head) or len(data) < len(head) + 40:
        return None
    digest, body = data[len(head):len(head) + 32], data[len(head) + 32:]
    if hashlib.sha256(body).digest() != digest:
        return None                     # damaged: never link machine code from it
    n = int.from_bytes(body[:8], "little")
    if len(body) < 8 + n:
        return None
    return body[8:8 + n], body[8 + n:]


def _write(path, key, object_code, bitcode):
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        body = len(object_code).to_bytes(8, "little") + object_code + bitcode
        with open(tmp, "wb") as fh:
            fh.write(MAGIC + key.encode() + b"\n" + hashlib.sha256(body).digest() + body)
        os.replace(tmp, path)           # whole, or not at all
    except OSError:
        with contextlib.suppress(OSError):
            os.remove(tmp)


def start_runtime(cache_dir=None):
    """Initialise numba's runtime now, from the object file in ``cache_dir``
    (default: :func:`core_cache_dir`) if it holds this runtime's code, else
    by numba's compile, saving the result there for the next process.
    Returns ``"loaded"``, ``"compiled"`` (also when this numba lacks the
    internals used here: it compiles the runtime itself on its first load)
    or ``"started"`` (numba's runtime was initialised already, or the JIT
    is disabled: nothing done)."""
    from numba.core import config
    from numba.core.registry import cpu_target
    try:
        from numba.core.runtime import nrt, nrtdynmod
        started = nrt.rtsys._init
        original = nrtdynmod.compile_nrt_functions
    except (ImportError, AttributeError):   # not the numba this was written for:
        return "compiled"                   # numba compiles it on its first load
    if started or config.DISABLE_JIT:
        return "started"
    if cache_dir is None:
        cache_dir = core_cache_dir()
    how = []

    def load_or_compile(ctx):
        try:
            ir_module, library = nrtdynmod.create_nrt_module(ctx)
            key = runtime_key(ctx, ir_module)
        except Exception:               # not the numba this was written for
            how.append("compiled")
            return original(ctx)
        path = None if cache_dir is None else os.path.join(cache_dir,
                                                            f"pypc-nrt-{key[:24]}.bin")
        cached = None if path is None else _read(path, key)
        if cached is not None:
            try:
                loaded = ctx.codegen().unserialize_library(("nrt", "object", cached))
                how.append("loaded")
                return loaded
            except Exception:
                pass                    # compiled below, as numba always does
        if path is not None:
            library.enable_object_caching()
        library.add_ir_module(ir_module)
        library.finalize()
        how.append("compiled")
        if path is not None:
            try:
                _name, _kind, (object_code, bitcode) = library.serialize_using_object_code()
            except Exception:
                return library
            _write(path, key, object_code, bitcode)
        return library

    nrtdynmod.compile_nrt_functions = load_or_compile
    try:
        nrt.rtsys.initialize(cpu_target.target_context)
    finally:
        nrtdynmod.compile_nrt_functions = original
    return how[0] if how else "started"


_lean_started = False


def lean_start():
    """Once per process: numba's target loaded without SciPy's linear algebra
    and its runtime from the object file (:func:`without_scipy`,
    :func:`start_runtime`), before anything of pypc's is loaded from the
    cache.  Nothing when numba's JIT is disabled, when ``PYPC_LEAN_NUMBA``
    is ``0``, or when numba was started already (its NumPy support loaded:
    ``without_scipy`` does nothing then, and the runtime is left as it is)."""
    global _lean_started
    if _lean_started:
        return
    _lean_started = True
    if os.environ.get("PYPC_LEAN_NUMBA", "1").strip() == "0":
        return
    from numba.core import config
    if config.DISABLE_JIT:
        return
    from numba.core.registry import cpu_target
    with without_scipy():
        start_runtime()
        # numba's implementations (its NumPy support, which probes SciPy's
        # BLAS, among them) load at the target's first refresh: here, inside
        cpu_target.target_context.refresh()
