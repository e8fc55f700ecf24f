"""The block translator: hot guest code compiled to native code.

``Translator`` watches where a CPU spends its time, compiles the regions
(blockgen.py) around the hottest places with LLVM (llvmlite, which numba
already brings) and enters them from the core's loop: ``core.run`` looks up
``table[pc]`` where ``xflags`` carries XF_BLOCK and calls the region through
``callptr.call_region``, so the core's own compiled code never changes with
what is translated.

Where is hot: the CPU runs in slices of ``slice_cycles`` while the translator
is on; the CS:IP each slice ends at is a sample, and a place sampled
``threshold`` times is translated (a region is entered at any of its
instructions, so a sample anywhere in a loop finds it).  Sampling costs one
return to Python per slice, nothing inside the loop.  While the samples
find only code already judged (translated, or untranslatable) the slices
double, up to ``slice_backoff`` times ``slice_cycles``, and a sample of
anything else brings them back: an idle DOS, sampled at the first rate,
lost 5 % to the samples alone.

What it may spend: compiling takes host time the interpreter would have
spent running the guest.  A region is compiled only when its estimated cost
(its size times the measured cost per instruction so far) keeps all compile
time within ``compile_share`` of the host time the CPU has run plus
``compile_per_emulated_s`` for each emulated second after the first, so a
cold machine's first emulated second loses at most that share.  The cache
holds at most ``max_regions`` regions; the least recently translated goes
first.

What it keeps: a region's object code goes into the region cache
(region_cache.py: this process and a folder on disk), so the same code
translated again -- by the next machine, the next run -- costs its IR and
a lookup, about a tenth of a compile; the budget charges a lookup first and
the compile only on a miss.  docs/translator.md has the whole story and the
measurements.

Nothing here changes what the machine does: a region executes exactly the
instructions the interpreter would have, with the same cycles, so which code
is translated (it depends on host speed through the compile budget) never
shows in the machine's state.
"""

import itertools
import mmap
import os
import time
from collections import OrderedDict

import numpy as np

from . import state as S
from numba.core.compiler_lock import global_compiler_lock

from . import blockgen, region_cache
from .compiled_entry import compiled_entry
from .core import EXIT_LOOK, EXIT_SAMPLE, run_sliced as _run_sliced
from .state import C_CYCLES, CPU_HZ, CS, IP, XF_BLOCK

STALE = S.MEM_SIZE + 2      # table words after the entries (core.enter_region's)
LOOK = S.MEM_SIZE + 3

# JIT library names must never repeat in a process (ORC refuses a name it has
# seen, even after the library is gone): one counter for every translator
_library_serial = itertools.count(1)
_host = None


def _llvm():
    """llvmlite's binding with this host's target initialised (once)."""
    global _host
    if _host is None:
        import llvmlite.binding as llvm
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        _host = llvm
    return _host


class Engine:
    """A translator's LLVM: a target machine for this host and an ORC JIT
    (LLJIT) its regions' object code is linked into, each region in a
    library of its own so that evicting it frees its code.  Each translator
    has its own (a third of a millisecond and a quarter of a MB to make),
    so one machine's regions are never relinked or freed under another
    machine's thread, and it can be renewed (see ``Translator._renew``)."""

    def __init__(self):
        llvm = self.llvm = _llvm()
        target = llvm.Target.from_default_triple()
        self.tm = target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                               features=llvm.get_host_cpu_features().flatten(),
                                               opt=CODEGEN_OPT, codemodel="jitdefault")
        self.jit = llvm.create_lljit_compiler(self.tm)
        self.pto = llvm.create_pipeline_tuning_options(speed_level=2)
        self.fpm = llvm.create_new_function_pass_manager()
        for name in LIGHT_PASSES:
            getattr(self.fpm, "add_%s_pass" % name)()

    def link(self, obj, imports):
        """Link object code (``imports``: {symbol: address} it calls);
        returns (library, the region function's address)."""
        builder = self.llvm.JITLibraryBuilder().add_object_img(obj).export_symbol(SYMBOL)
        for name, address in imports.items():
            builder.import_symbol(name, address)
        library = builder.link(self.jit, "pypc_region_%d" % next(_library_serial))
        return library, library[SYMBOL]


PIPELINE = "light"
# the light pipeline's function passes, in order
LIGHT_PASSES = ("sroa", "instruction_combine", "simplify_cfg", "new_gvn",
                "instruction_combine", "sinking", "dead_code_elimination", "simplify_cfg")
CODEGEN_OPT = 2
SYMBOL = "region"      # every region's function (each has a JIT library of its own)


def recipe():
    """What a region's object code depends on besides its IR (the region
    cache's key has both): LLVM, the host CPU, the passes."""
    llvm = _llvm()
    import llvmlite
    return "\n".join([
        "llvmlite %s llvm %s" % (llvmlite.__version__, ".".join(map(str, llvm.llvm_version_info))),
        "cpu %s features %s" % (llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()),
        "pipeline %s %s codegen-opt %d" % (PIPELINE, ",".join(LIGHT_PASSES), CODEGEN_OPT),
        "calls abi %d" % blockgen.CALLS_ABI,
    ])


def _optimise(engine, mod):
    """LLVM passes over a region's module.  Not the O2 pipeline: a region is
    one function of straight-line code, branches and an entry switch, and
    these passes give the code O2 gives it at a fraction of the compile
    time (SROA puts the registers in SSA values, instcombine folds the
    flag words to the bits read, GVN shares the address arithmetic, the
    sinking pass moves what only an exit needs into the exit).  The pass
    manager is the engine's, made once (llvmlite keeps some 10 KB of every
    one made); the pass builder, which holds the analyses of the functions
    it saw, is made for each module."""
    pb = engine.llvm.create_pass_builder(engine.tm, engine.pto)
    if PIPELINE == "O2":
        pb.getModulePassManager().run(mod, pb)
        return
    for fn in mod.functions:
        if not fn.is_declaration:
            engine.fpm.run(fn, pb)


class Region:
    """One translated region: where it is entered and the JIT library
    holding its code (closing the library frees the code)."""

    __slots__ = ("key", "pcs", "library", "instructions", "code_bytes", "obj", "imports")

    def __init__(self, key, pcs, library, instructions, code_bytes, obj, imports):
        self.key = key
        self.pcs = pcs
        self.library = library
        self.instructions = instructions
        self.code_bytes = code_bytes
        self.obj = obj                  # its object code and what it calls: to link it
        self.imports = imports          # again into a renewed engine


class Translator:
    """Translates a CPU's hot code (see the module docstring)."""

    def __init__(self, cpu, threshold=2, slice_cycles=200_000, compile_share=0.05,
                 compile_per_emulated_s=0.005, max_regions=512,
                 max_insns=blockgen.MAX_REGION_INSNS, seconds_per_insn=0.002,
                 compile_budget=True, loops_only=True, explore_limit=0.06,
                 saved_per_insn=8e-9, cache="default", lookup_per_insn=0.00015,
                 renew_after=1024, slice_backoff=16):
        if os.environ.get("NUMBA_DISABLE_JIT", "0") not in ("", "0"):
            raise RuntimeError("the block translator needs numba's JIT (NUMBA_DISABLE_JIT is set)")
        self.cpu = cpu
        self.threshold = threshold
        self.slice_cycles = slice_cycles          # the sampling rate while samples find news
        self.max_slice_cycles = slice_cycles * slice_backoff
        self._slice = slice_cycles                # this slice's length
        self.compile_share = compile_share
        self.compile_per_emulated_s = compile_per_emulated_s
        self.seconds_per_insn = seconds_per_insn      # LLVM's compile: the first estimate
        self.compiled_insns = 0
        self.llvm_seconds = 0.0
        # the region's IR and the cache lookup (first estimate: measured on
        # the standard loop's region)
        self.lookup_per_insn = lookup_per_insn
        self.lookup_seconds = 0.0
        self.lookup_insns = 0
        self._known_misses = set()
        self.compile_budget = compile_budget      # False: translate whatever is sampled (tests)
        self.loops_only = loops_only              # sampled regions must hold a loop
        self.explore_limit = explore_limit
        self.saved_per_insn = saved_per_insn
        self.max_regions = max_regions
        self.max_insns = max_insns
        # the region cache, made at the first translation (its recipe needs
        # LLVM, which a machine that never translates must not start)
        if not (cache is None or cache == "default" or isinstance(cache, (str, os.PathLike))
                or isinstance(cache, region_cache.RegionCache)):
            raise ValueError(f"translator cache: \"default\", a folder, a RegionCache or None, "
                             f"not {cache!r}")
        self._cache_option = cache
        self._cache = None
        self._cache_made = False
        self._cache_wanted = cache is not None and (
            cache != "default" or region_cache.default_directory() is not None)
        self.cache_hits = 0              # regions whose object code came from the cache
        self.engine = None               # its LLVM (an Engine), made at the first translation
        self.renew_after = renew_after
        self.closed_libraries = 0        # since the engine was made
        self.renewals = 0
        # the entry table, then what the core keeps for the translator:
        # instructions executed in regions, region calls that executed any,
        # regions found changed, and a flag "look" (a long run, a change)
        # anonymous memory, zero until touched: np.zeros hands 8 MiB to the
        # kernel's huge pages, zeroed at once (about 1 ms of every machine's start)
        self.table = np.frombuffer(mmap.mmap(-1, (S.MEM_SIZE + 4) * 8), dtype=np.int64)
        self._core_args = (cpu.regs, cpu.mem, cpu.page_table, cpu.xflags, cpu.ctl,
                           cpu.effects, cpu.port_kind, cpu.port_io, self.table)
        self._run_sliced = None          # run_sliced's compiled entry (see Cpu.run)
        self.regions = OrderedDict()     # key (cs, ip) -> Region
        self._owner = {}                 # pc -> Region entered there
        self._samples = {}
        self._untranslatable = set()
        self._sizes = {}                 # (cs, ip) -> instructions of a region refused for its cost
        self._started = time.perf_counter()
        self.compile_seconds = 0.0
        self.translated = 0
        self.evicted = 0
        self.stale = 0

    # -- the run loop ------------------------------------------------------------
    def run(self, until_cycle):
        """Run the CPU to ``until_cycle`` in sampling slices (Cpu.run's path
        with the translator on; the slicing, and the choices for a halted
        CPU and a step, are the core's ``run_sliced``, so a run that ends at
        an exit before its first slice does, as most do, costs one call)."""
        run_sliced = self._run_sliced
        if run_sliced is None:
            run_sliced = self._run_sliced = compiled_entry(
                _run_sliced, *self._core_args, np.int64(until_cycle), np.int64(self._slice))
        while True:
            reason = run_sliced(*self._core_args, until_cycle, self._slice)
            if reason < EXIT_SAMPLE:
                return reason
            if reason & EXIT_LOOK:
                # the core asks Python to look: a long run, a region changed
                reason &= ~EXIT_LOOK
                self._look()
            self._sample()           # a slice's end, or a long run's: a sample
            if reason != EXIT_SAMPLE:
                return reason

    @property
    def current_slice(self):
        """The cycles of the next sampling slice (see ``slice_backoff``)."""
        return self._slice

    def _look(self):
        table = self.table
        table[LOOK] = 0
        if table[STALE] != self.stale:
            self.stale = int(table[STALE])
            self._drop_stale()
            self._slice = self.slice_cycles       # code changed: look again at the first rate

    @property
    def run_seconds(self):
        """Host seconds the machine has run since the translator started,
        its compiling left out (what the 5 % share is of; read when a
        sample is taken, so the run loop itself reads no clock)."""
        return time.perf_counter() - self._started - self.compile_seconds

    def _sample(self):
        regs = self.cpu.regs
        cs, ip = int(regs[CS]), int(regs[IP])
        key = (cs, ip)
        if self.cpu.xflags[((cs << 4) + ip) & 0xFFFFF] & XF_BLOCK or key in self._untranslatable:
            # nothing new here: sample less often
            self._slice = min(self._slice * 2, self.max_slice_cycles)
            return
        self._slice = self.slice_cycles
        n = self._samples.get(key, 0) + 1
        if n < self.threshold:
            self._samples[key] = n
            return
        self._samples.pop(key, None)
        self._translate_within_budget(cs, ip)

    def _translate_within_budget(self, cs, ip):
        """Translate CS:IP if its estimated cost fits the budget (see
        ``budget``).  With a region cache the cost comes in two steps: the
        region's IR and the cache lookup (a tenth of a compile), then, on a
        miss, LLVM's compile; each is paid only when the budget has room
        for it, so a machine that finds its regions cached translates them
        at once, young or not."""
        budget = None
        if self.compile_budget:
            budget = self.budget()
            # the size found last time (or a small region) before decoding
            # again: a refused sample must cost next to nothing
            size = self._sizes.get((cs, ip), 4)
            if self.compile_seconds + self._first_cost(cs, ip, size) > budget:
                return None
        if self.loops_only and self._leads_only_to_judged(cs, ip):
            self._untranslatable.add((cs, ip))
            return None
        insns = self._discover(cs, ip)
        if not insns or (self.loops_only and not blockgen.has_loop(insns)):
            # nothing to translate, or straight-line code that leaves at
            # once: entered once per pass it saves a few nanoseconds against
            # milliseconds of compiling (FreeDOS's idle loop is made of such).
            # Every instruction of it is judged so: code reachable from a
            # later one is reachable from here, so a sample landing there
            # would only decode the same answer again
            self._untranslatable.add((cs, ip))
            self._untranslatable.update((cs, i) for i in insns)
            return None
        if budget is not None and \
                self.compile_seconds + self._first_cost(cs, ip, len(insns)) > budget:
            self._refused(cs, ip, len(insns))
            return None
        region = self._compile(cs, next(iter(insns)), insns, budget)
        if region is None:
            # a miss the budget cannot compile yet: a sample anywhere in it
            # is now judged by the compile's cost before anything is built
            for i in insns:
                self._refused(cs, i, len(insns), miss=True)
        return region

    def _leads_only_to_judged(self, cs, ip):
        """Whether every way on from the instruction at CS:IP is code already
        judged untranslatable (no loop reachable from it): then none is
        reachable from CS:IP either, as a loop through CS:IP would run
        through one of them.  One decode instead of a region's: samples
        landing in straight-line code walk back through it an instruction
        at a time (FreeDOS's idle path decoded 27 regions so in its first
        10 emulated seconds at the prompt)."""
        try:
            ins = blockgen.decode(self._read, cs << 4, ip)
        except blockgen.Untranslatable:
            return False
        return bool(ins.succ) and all((cs, s) in self._untranslatable for s in ins.succ)

    def _first_cost(self, cs, ip, size):
        # without a cache, or where the cache missed before: the compile;
        # else the IR and the lookup
        if not self._cache_wanted or (cs, ip) in self._known_misses:
            return (self.lookup_per_insn + self.seconds_per_insn) * size
        return self.lookup_per_insn * size

    def _refused(self, cs, ip, size, miss=False):
        if len(self._sizes) > 4096:
            self._sizes.clear()
            self._known_misses.clear()
        self._sizes[(cs, ip)] = size
        if miss:
            self._known_misses.add((cs, ip))

    # -- translating -------------------------------------------------------------
    def budget(self):
        """Compile seconds allowed so far: ``compile_share`` of the host time
        run, what the translated code has saved (``saved_per_insn`` for each
        instruction it executed), and an exploration allowance of
        ``compile_per_emulated_s`` for each emulated second after the first,
        at most ``explore_limit`` in all: a machine that has run long enough
        may try its hottest loops, and goes on translating only as far as
        the translations repay."""
        emulated_s = int(self.cpu.ctl[C_CYCLES]) / CPU_HZ
        explore = min(self.explore_limit,
                      self.compile_per_emulated_s * max(0.0, emulated_s - 1.0))
        earned = self.saved_per_insn * int(self.table[S.MEM_SIZE])
        return self.compile_share * self.run_seconds + earned + explore

    def _read(self, a):
        return int(self.cpu.mem[a])

    @property
    def cache(self):
        """The region cache (a region_cache.RegionCache), or None."""
        if not self._cache_made:
            self._cache = self._region_cache(self._cache_option)
            self._cache_made = True
        return self._cache

    @staticmethod
    def _region_cache(cache):
        """The region cache (region_cache.py) for the ``cache`` option:
        "default" (this process's, with the default folder; none when
        PYPC_TRANSLATION_CACHE is ``off``), a folder, a RegionCache, or
        None (compile every region)."""
        if cache is None or isinstance(cache, region_cache.RegionCache):
            return cache
        if cache == "default":
            directory = region_cache.default_directory()
            return None if directory is None else region_cache.shared(recipe(), directory)
        return region_cache.shared(recipe(), os.fspath(cache))

    def translate(self, cs, ip):
        """Translate the region entered at CS:IP now, whatever the budget;
        returns the Region or None when nothing there can be translated."""
        insns = self._discover(cs, ip)
        if not insns:
            self._untranslatable.add((cs, ip))
            return None
        return self._compile(cs, next(iter(insns)), insns)

    def _discover(self, cs, ip):
        """The region sampled at CS:IP (blockgen.discover), in a canonical
        form: entered at its lowest IP when that finds the same
        instructions (as it does anywhere in a loop), the rest in IP order.
        The same code then gives the same IR wherever it was sampled, so
        the region cache finds it again."""
        try:
            insns, _ = blockgen.discover(self._read, cs, ip, self.max_insns)
        except blockgen.Untranslatable:
            return {}
        if not insns:
            return insns
        low = min(insns)
        if low != ip:
            try:
                other, _ = blockgen.discover(self._read, cs, low, self.max_insns)
            except blockgen.Untranslatable:
                other = {}
            if other.keys() == insns.keys():
                ip = low
        out = {ip: insns[ip]}
        out.update((k, insns[k]) for k in sorted(insns) if k != ip)
        return out

    def _compile(self, cs, ip, insns, budget=None):
        """The region's code, linked and entered from now on: from the
        region cache, or compiled (then kept there).  With a ``budget``, a
        miss whose compile does not fit it is not compiled: None."""
        t0 = time.perf_counter()
        csb = cs << 4
        code = blockgen.region_code_bytes(self._read, insns, csb)
        text = str(blockgen.RegionCompiler(SYMBOL, cs, insns, code).compile())
        engine = self._engine()
        key = obj = None
        if self.cache is not None:
            key = self.cache.key(text)
            obj = self.cache.get(key)
        t1 = time.perf_counter()
        self.compile_seconds += t1 - t0
        self.lookup_insns += len(insns)
        self.lookup_seconds += t1 - t0
        self.lookup_per_insn = self.lookup_seconds / self.lookup_insns
        if obj is None:
            if budget is not None and \
                    self.compile_seconds + self.seconds_per_insn * len(insns) > budget:
                return None
            # LLVM's global context is not for two threads at once: numba's
            # compiles and other machines' translators take the same lock
            with global_compiler_lock:
                # a context of its own, freed with the module: LLVM's global
                # context would keep every region's types and constants
                context = engine.llvm.create_context()
                mod = engine.llvm.parse_assembly(text, context=context)
                mod.verify()
                _optimise(engine, mod)
                obj = engine.tm.emit_object(mod)
                del mod, context
            if key is not None:
                self.cache.put(key, obj)
            t2 = time.perf_counter()
            self.compile_seconds += t2 - t1
            self.llvm_seconds += t2 - t1
            self.compiled_insns += len(insns)
            # what the next estimate uses: this process's measured cost
            # per compiled instruction so far
            self.seconds_per_insn = self.llvm_seconds / self.compiled_insns
        else:
            self.cache_hits += 1
        t2 = time.perf_counter()
        imports = {}
        if "@pypc_" in text:
            # MUL/DIV call the interpreter's arithmetic, bound here by name
            from . import arith_calls
            imports = {name: fn.address for name, fn in arith_calls.SYMBOLS.items()
                       if "@" + name + "(" in text}
        library, address = engine.link(obj, imports)
        self.compile_seconds += time.perf_counter() - t2
        pcs = [(csb + i) & 0xFFFFF for i in insns]
        region = Region((cs, ip), pcs, library, len(insns), len(code), bytes(obj), imports)
        if region.key in self.regions:
            self._drop(self.regions[region.key])      # replaced, not evicted
        while len(self.regions) >= self.max_regions:
            self._drop(next(iter(self.regions.values())))
            self.evicted += 1
        self.regions[region.key] = region
        for pc in pcs:
            self.table[pc] = address
            self._owner[pc] = region
            self.cpu.xflags[pc] |= XF_BLOCK
        self.translated += 1
        self._renew_if_due()
        return region

    def _engine(self):
        if self.engine is None:
            self.engine = Engine()
        return self.engine

    def _renew_if_due(self):
        """ORC keeps about 9 KB of every library linked into an LLJIT, closed
        or not, until the LLJIT itself goes: after ``renew_after`` closed
        libraries the translator moves its live regions into a new engine
        and lets the old one go, so a guest that keeps making new hot code
        holds a bounded amount of LLVM's memory."""
        if self.closed_libraries < self.renew_after or self.engine is None:
            return
        old, self.engine = self.engine, Engine()
        for region in self.regions.values():
            library, address = self.engine.link(region.obj, region.imports)
            for pc in region.pcs:
                if self._owner.get(pc) is region:
                    self.table[pc] = address
            region.library.close()
            region.library = library
        del old
        self.closed_libraries = 0
        self.renewals += 1

    def _drop(self, region):
        self.regions.pop(region.key, None)
        xf = self.cpu.xflags
        for pc in region.pcs:
            if self._owner.get(pc) is region:
                del self._owner[pc]
                self.table[pc] = 0
                xf[pc] &= ~np.uint8(XF_BLOCK)
        # nothing enters it any more: its library (the code) can go
        region.library.close()
        region.library = None
        self.closed_libraries += 1

    def _drop_stale(self):
        # a region whose code changed was cut off where it was found
        # stale; drop every region with an entry the core cut off
        for region in list(self.regions.values()):
            if any(self.table[pc] == 0 and self._owner.get(pc) is region for pc in region.pcs):
                self._drop(region)
        self._renew_if_due()

    def flush(self):
        """Drop every translation (the memory under them was replaced)."""
        for region in list(self.regions.values()):
            self._drop(region)
        self._samples.clear()
        self._untranslatable.clear()
        self._slice = self.slice_cycles
        self._renew_if_due()

    def stats(self):
        return {
            "regions": len(self.regions),
            "translated": self.translated,
            "cache_hits": self.cache_hits,
            "renewals": self.renewals,
            "evicted": self.evicted,
            "stale": self.stale,
            "instructions": sum(r.instructions for r in self.regions.values()),
            "code_bytes": sum(r.code_bytes for r in self.regions.values()),
            "translated_instructions": int(self.table[S.MEM_SIZE]),
            "region_calls": int(self.table[S.MEM_SIZE + 1]),
            "compile_seconds": round(self.compile_seconds, 6),
            "run_seconds": round(self.run_seconds, 6),
        }
