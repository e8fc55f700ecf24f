"""Keep numba's on-disk cache of the core honest.

Numba re-validates a cached function against its own source file only.  The
core freezes constants from ``state.py`` (register and control-word indices,
flag bits), the intrinsics of ``callptr.py`` and ``opcodes.py``'s prefix set
(``OP_CLASS``) into its machine code, so an edit there, or a numba upgrade,
must also throw the cached core away.  ``invalidate_if_stale()`` runs before
the core is compiled: it keys the cache on the contents of the core's modules and
the numba version and deletes the core's cache files when the key changed.
Any other module whose cached functions freeze another file's code (a card
inlining ``bus/journal.py``'s ``log_append``) calls
``invalidate_if_stale(__file__, depends=...)`` the same way.
With ``NUMBA_CACHE_DIR`` set the cache is the user's to manage.
"""

import glob
import hashlib
import os

import numba

_HERE = os.path.dirname(os.path.abspath(__file__))
_KEYED = ("core.py", "state.py", "callptr.py", "opcodes.py")
_MARKER = "pypc-core-cache.key"


def cache_key(paths=None):
    """A key over numba's version and the contents of ``paths`` (the core's
    modules by default)."""
    if paths is None:
        paths = [os.path.join(_HERE, name) for name in _KEYED]
    h = hashlib.sha256(numba.__version__.encode())
    for path in paths:
        h.update(os.path.basename(path).encode())
        if os.path.exists(path):
            with open(path, "rb") as fh:
                h.update(fh.read())
    return h.hexdigest()


def invalidate_if_stale(module=None, depends=()):
    """Delete the numba cache files of ``module`` (a source path; the core
    by default) when it, a file of ``depends`` (modules whose compiled
    functions or constants it freezes into its own machine code) or numba
    changed since they were written.  Call it before the module's first
    compile."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    if module is None:
        here, stem, marker_name = _HERE, "core", _MARKER
        paths = None
    else:
        here = os.path.dirname(os.path.abspath(module))
        stem = os.path.splitext(os.path.basename(module))[0]
        marker_name = f"{stem}.pypc-cache.key"
        paths = [os.path.abspath(module)] + [os.path.abspath(d) for d in depends]
    cache_dir = os.path.join(here, "__pycache__")
    marker = os.path.join(cache_dir, marker_name)
    try:
        key = cache_key(paths)
        try:
            with open(marker) as fh:
                if fh.read().strip() == key:
                    return
        except OSError:
            pass
        for path in glob.glob(os.path.join(cache_dir, f"{stem}.*.nb[ic]")):
            os.remove(path)
        os.makedirs(cache_dir, exist_ok=True)
        with open(marker, "w") as fh:
            fh.write(key + "\n")
    except OSError:
        pass            # a read-only install: numba falls back as it would anyway
