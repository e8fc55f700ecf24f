"""Translated regions' object code, kept for the next time the same region
is translated: in this process and in a folder on disk.

Compiling a region costs tens of milliseconds (LLVM's passes and its code
generator); the same guest code -- the BIOS, DOS, a program run again --
gives the same region again, in this machine, the next machine of a batch
worker, or the next run.  A region's LLVM IR (blockgen.py) holds everything
its machine code depends on that is not in the recipe (the code bytes, CS,
the instructions), and no address of this process, so its object code is
keyed by a SHA-256 of the IR and the recipe: the format of this module, the
LLVM version, the host CPU and its features, and the optimisation passes.
A hit costs the IR build, the hash and ORC's link of the object, about a
tenth of a compile.

On disk a region is one file ``KEY[:2]/KEY.o``: a magic word, the SHA-256
of the payload, the payload.  A file that fails either check is a miss (and
is removed), so a torn or foreign file is never linked.  Files are written
to a temporary name and renamed into place, so concurrent machines (a
batch's workers) share a folder safely.  The folder is kept under
``limit_bytes``: past it, the least recently used files go (a hit refreshes
its file's time).  A folder that cannot be made or written is not an error:
the translator compiles as it would without a cache (``errors`` counts it).

The folder is ``PYPC_TRANSLATION_CACHE`` when set (``off`` or an empty
value: no cache at all, every region compiled), else
``$XDG_CACHE_HOME/pypc/translations`` (by default
``~/.cache/pypc/translations``).
"""

import hashlib
import os
import tempfile
from collections import OrderedDict

FORMAT = 1
MAGIC = b"PYPCRGN1"
ENV = "PYPC_TRANSLATION_CACHE"
DISK_LIMIT = 64 << 20          # bytes of object files on disk
MEMORY_LIMIT = 16 << 20        # bytes of object code kept in this process


def default_directory():
    """The cache's folder (see the module docstring), or None: no cache."""
    value = os.environ.get(ENV)
    if value is not None:
        return None if value.strip().lower() in ("", "off", "0", "none") else value
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "pypc", "translations")


class RegionCache:
    """Object code by key, in memory (at most ``memory_limit`` bytes, least
    recently used out first) and, with a ``directory``, on disk."""

    def __init__(self, recipe, directory=None, limit_bytes=DISK_LIMIT,
                 memory_limit=MEMORY_LIMIT):
        self.recipe = ("pypc-region-cache %d\n%s\n" % (FORMAT, recipe)).encode()
        self.directory = directory
        self.limit_bytes = limit_bytes
        self.memory_limit = memory_limit
        self._memory = OrderedDict()
        self._memory_bytes = 0
        self._disk_bytes = None          # summed at the first write
        self.hits = 0
        self.disk_hits = 0
        self.misses = 0
        self.errors = 0

    def key(self, ir_text):
        h = hashlib.sha256(self.recipe)
        h.update(ir_text.encode())
        return h.hexdigest()

    # -- reading -------------------------------------------------------------
    def get(self, key):
        """The object code stored under ``key``, or None."""
        obj = self._memory.get(key)
        if obj is not None:
            self._memory.move_to_end(key)
            self.hits += 1
            return obj
        obj = self._read(key)
        if obj is None:
            self.misses += 1
            return None
        self.hits += 1
        self.disk_hits += 1
        self._remember(key, obj)
        return obj

    def _path(self, key):
        return os.path.join(self.directory, key[:2], key + ".o")

    def _read(self, key):
        if self.directory is None:
            return None
        path = self._path(key)
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError:
            return None
        head = len(MAGIC) + 32
        payload = data[head:]
        if data[:len(MAGIC)] != MAGIC or data[len(MAGIC):head] != hashlib.sha256(payload).digest() \
                or not payload:
            self.errors += 1
            self._remove(path)
            return None
        try:
            os.utime(path)               # recently used: the last to go
        except OSError:
            pass
        return payload

    # -- writing -------------------------------------------------------------
    def put(self, key, obj):
        """Keep ``obj`` under ``key`` (in memory, and on disk if there is a
        folder)."""
        obj = bytes(obj)
        self._remember(key, obj)
        if self.directory is not None:
            self._write(key, obj)

    def _remember(self, key, obj):
        if key in self._memory:
            return
        self._memory[key] = obj
        self._memory_bytes += len(obj)
        while self._memory_bytes > self.memory_limit and len(self._memory) > 1:
            _, old = self._memory.popitem(last=False)
            self._memory_bytes -= len(old)

    def _write(self, key, obj):
        path = self._path(key)
        data = MAGIC + hashlib.sha256(obj).digest() + obj
        try:
            folder = os.path.dirname(path)
            os.makedirs(folder, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".o")
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                os.replace(tmp, path)
            except BaseException:
                self._remove(tmp)
                raise
        except OSError:
            self.errors += 1
            return
        if self._disk_bytes is None:
            self._disk_bytes = sum(size for _, size, _ in self._files())
        else:
            self._disk_bytes += len(data)
        if self._disk_bytes > self.limit_bytes:
            self._trim()

    def _files(self):
        """(path, size, mtime) of every object file in the folder."""
        out = []
        try:
            subdirs = list(os.scandir(self.directory))
        except OSError:
            return out
        for sub in subdirs:
            if not sub.is_dir(follow_symlinks=False):
                continue
            try:
                for entry in os.scandir(sub.path):
                    if entry.name.endswith(".o") and not entry.name.startswith("."):
                        st = entry.stat(follow_symlinks=False)
                        out.append((entry.path, st.st_size, st.st_mtime))
            except OSError:
                continue
        return out

    def _trim(self):
        # the least recently used first, down to three quarters of the
        # limit (so that a full folder is not scanned at every write)
        files = sorted(self._files(), key=lambda f: f[2])
        total = sum(size for _, size, _ in files)
        target = self.limit_bytes * 3 // 4
        for path, size, _ in files:
            if total <= target:
                break
            if self._remove(path):
                total -= size
        self._disk_bytes = total

    @staticmethod
    def _remove(path):
        try:
            os.unlink(path)
            return True
        except OSError:
            return False

    def forget(self):
        """Empty the in-process part (the disk folder stays)."""
        self._memory.clear()
        self._memory_bytes = 0

    def stats(self):
        return {"hits": self.hits, "disk_hits": self.disk_hits, "misses": self.misses,
                "errors": self.errors, "directory": self.directory,
                "memory_bytes": self._memory_bytes}


_shared = {}


def shared(recipe, directory):
    """The process's one cache for ``recipe`` and ``directory`` (the
    translators of every machine in a process share what they compiled)."""
    key = (recipe, directory)
    cache = _shared.get(key)
    if cache is None:
        cache = _shared[key] = RegionCache(recipe, directory)
    return cache
