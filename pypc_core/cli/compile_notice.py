"""The first run's word while the numba core compiles: a spinner on a
terminal, nothing on a pipe."""


COMPILE_NOTICE = "compiling the 8088 core (first run only)\u2026"


def core_cache_is_cold():
    """True when the numba core has neither been compiled in this process nor
    cached on disk (its cache index has no entry), so its first use compiles
    it (about 25 s).  False under NUMBA_DISABLE_JIT (nothing to compile)."""
    from ..cpu import core
    for dispatcher in (core.run, core.interrupt):
        cache = getattr(dispatcher, "_cache", None)
        if cache is None or dispatcher.signatures:
            continue
        try:
            if not cache._cache_file._load_index():
                return True
        except Exception:
            return False            # an unreadable index: let numba decide quietly
    return False


def compile_core(stream):
    """Compile (or load) the core before the machine is built; when it has
    to be compiled and ``stream`` is a terminal, say so with a spinner.  A
    pipe or a file gets no word."""
    if not core_cache_is_cold():
        return False
    isatty = getattr(stream, "isatty", None)
    if isatty is None or not isatty():
        return False                # compiled silently on first use
    from rich.console import Console
    from ..cpu import Cpu
    with Console(file=stream).status(COMPILE_NOTICE):
        cpu = Cpu()                 # the machine's arrays have the same types
        cpu.step()                  # compiles core.run ...
        cpu.interrupt(0)            # ... and core.interrupt
    return True
