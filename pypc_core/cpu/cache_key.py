"""Keep numba's on-disk cache of the core honest.

Numba re-validates a cached function against its own source file only.  The
core freezes constants from ``state.py`` (register and control-word indices,
flag bits) and the intrinsic of ``callptr.py`` into its machine code, so an
edit there, or a numba upgrade, must also throw the cached core away.  ``invalidate_if_stale()`` runs before the
core is compiled: it keys the cache on the contents of the core's modules and
the numba version and deletes the core's cache files when the key changed.
With ``NUMBA_CACHE_DIR`` set the cache is the user's to manage.
"""

import glob
import hashlib
import os

import numba

_HERE = os.path.dirname(os.path.abspath(__file__))
_KEYED = ("core.py", "state.py", "callptr.py")
_MARKER = "pypc-core-cache.key"


def cache_key():
    h = hashlib.sha256(numba.__version__.encode())
    for name in _KEYED:
        path = os.path.join(_HERE, name)
        h.update(name.encode())
        if os.path.exists(path):
            with open(path, "rb") as fh:
                h.update(fh.read())
    return h.hexdigest()


def invalidate_if_stale():
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    cache_dir = os.path.join(_HERE, "__pycache__")
    marker = os.path.join(cache_dir, _MARKER)
    try:
        key = cache_key()
        try:
            with open(marker) as fh:
                if fh.read().strip() == key:
                    return
        except OSError:
            pass
        for path in glob.glob(os.path.join(cache_dir, "core.*.nb[ic]")):
            os.remove(path)
        os.makedirs(cache_dir, exist_ok=True)
        with open(marker, "w") as fh:
            fh.write(key + "\n")
    except OSError:
        pass            # a read-only install: numba falls back as it would anyway
