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
return to Python per slice, nothing inside the loop.

What it may spend: compiling takes host time the interpreter would have
spent running the guest.  A region is compiled only when its estimated cost
(its size times the measured cost per instruction so far) keeps all compile
time within ``compile_share`` of the host time the CPU has run plus
``compile_per_emulated_s`` for each emulated second after the first, so a
cold machine's first emulated second loses at most that share.  The cache
holds at most ``max_regions`` regions; the least recently translated goes
first.  docs/translator.md has the whole story and the measurements.

Nothing here changes what the machine does: a region executes exactly the
instructions the interpreter would have, with the same cycles, so which code
is translated (it depends on host speed through the compile budget) never
shows in the machine's state.
"""

import itertools
import os
import time
from collections import OrderedDict

import numpy as np

from . import state as S
from . import blockgen
from .core import EXIT_SAMPLE, run_sliced as _run_sliced
from .state import C_CYCLES, CPU_HZ, CS, IP, XF_BLOCK

STALE = S.MEM_SIZE + 2      # table words after the entries (core.enter_region's)
LOOK = S.MEM_SIZE + 3

_engine = None
# JIT library names must never repeat in a process (ORC refuses a name it has
# seen, even after the library is gone): one counter for every translator
_library_serial = itertools.count(1)


def _llvm():
    """The process's LLVM: a target machine for this host and one ORC JIT
    (LLJIT) that every region's object code is linked into, each region in
    a library of its own so that evicting it frees its code."""
    global _engine
    if _engine is None:
        import llvmlite.binding as llvm
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        target = llvm.Target.from_default_triple()
        tm = target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                          features=llvm.get_host_cpu_features().flatten(),
                                          opt=2, codemodel="jitdefault")
        jit = llvm.create_lljit_compiler(tm)
        pto = llvm.create_pipeline_tuning_options(speed_level=2)
        _engine = (llvm, tm, jit, pto)
    return _engine


PIPELINE = "light"


def _optimise(llvm, tm, pto, mod):
    """LLVM passes over a region's module.  Not the O2 pipeline: a region is
    one function of straight-line code, branches and an entry switch, and
    these passes give the code O2 gives it at a fraction of the compile
    time (SROA puts the registers in SSA values, instcombine folds the
    flag words to the bits read, GVN shares the address arithmetic, the
    sinking pass moves what only an exit needs into the exit)."""
    pb = llvm.create_pass_builder(tm, pto)
    if PIPELINE == "O2":
        pb.getModulePassManager().run(mod, pb)
        return
    fpm = llvm.create_new_function_pass_manager()
    fpm.add_sroa_pass()
    fpm.add_instruction_combine_pass()
    fpm.add_simplify_cfg_pass()
    fpm.add_new_gvn_pass()
    fpm.add_instruction_combine_pass()
    fpm.add_sinking_pass()
    fpm.add_dead_code_elimination_pass()
    fpm.add_simplify_cfg_pass()
    for fn in mod.functions:
        if not fn.is_declaration:
            fpm.run(fn, pb)


class Region:
    """One translated region: where it is entered and the JIT library
    holding its code (closing the library frees the code)."""

    __slots__ = ("key", "pcs", "library", "instructions", "code_bytes")

    def __init__(self, key, pcs, library, instructions, code_bytes):
        self.key = key
        self.pcs = pcs
        self.library = library
        self.instructions = instructions
        self.code_bytes = code_bytes


class Translator:
    """Translates a CPU's hot code (see the module docstring)."""

    def __init__(self, cpu, threshold=2, slice_cycles=200_000, compile_share=0.05,
                 compile_per_emulated_s=0.005, max_regions=512,
                 max_insns=blockgen.MAX_REGION_INSNS, seconds_per_insn=0.002,
                 compile_budget=True, loops_only=True, explore_limit=0.06,
                 saved_per_insn=8e-9):
        if os.environ.get("NUMBA_DISABLE_JIT", "0") not in ("", "0"):
            raise RuntimeError("the block translator needs numba's JIT (NUMBA_DISABLE_JIT is set)")
        self.cpu = cpu
        self.threshold = threshold
        self.slice_cycles = slice_cycles
        self.compile_share = compile_share
        self.compile_per_emulated_s = compile_per_emulated_s
        self.seconds_per_insn = seconds_per_insn      # the first estimate
        self.compiled_insns = 0
        self.compile_budget = compile_budget      # False: translate whatever is sampled (tests)
        self.loops_only = loops_only              # sampled regions must hold a loop
        self.explore_limit = explore_limit
        self.saved_per_insn = saved_per_insn
        self.max_regions = max_regions
        self.max_insns = max_insns
        # the entry table, then what the core keeps for the translator:
        # instructions executed in regions, region calls that executed any,
        # regions found changed, and a flag "look" (a long run, a change)
        self.table = np.zeros(S.MEM_SIZE + 4, dtype=np.int64)
        self._core_args = (cpu.regs, cpu.mem, cpu.page_table, cpu.xflags, cpu.ctl,
                           cpu.effects, cpu.port_kind, cpu.port_io, self.table)
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
        self._serial = 0

    # -- the run loop ------------------------------------------------------------
    def run(self, until_cycle):
        """Run the CPU to ``until_cycle`` in sampling slices (Cpu.run's path
        with the translator on; the slicing is the core's ``run_sliced``, so
        a run that ends at an exit before its first slice does, as most do,
        costs one call)."""
        table = self.table
        while True:
            reason = _run_sliced(*self._core_args, until_cycle, self.slice_cycles)
            if reason != EXIT_SAMPLE:
                break
            self._sample()
        if table[LOOK]:
            table[LOOK] = 0
            if table[STALE] != self.stale:
                self.stale = int(table[STALE])
                self._drop_stale()
            self._sample()           # a long run the machine ended: a sample
        return reason

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
            return
        n = self._samples.get(key, 0) + 1
        if n < self.threshold:
            self._samples[key] = n
            return
        self._samples.pop(key, None)
        self._translate_within_budget(cs, ip)

    def _translate_within_budget(self, cs, ip):
        """Translate CS:IP if its estimated compile time fits the budget:
        ``compile_share`` of the host time run so far, plus
        ``compile_per_emulated_s`` for every emulated second after the first
        (a machine that has run longer has shown more of what repays)."""
        if self.compile_budget:
            budget = self.budget()
            # the size found last time (or a small region) before decoding
            # again: a refused sample must cost next to nothing
            size = self._sizes.get((cs, ip), 4)
            if self.compile_seconds + self.seconds_per_insn * size > budget:
                return None
        try:
            insns, _ = blockgen.discover(self._read, cs, ip, self.max_insns)
        except blockgen.Untranslatable:
            insns = {}
        if not insns or (self.loops_only and not blockgen.has_loop(insns)):
            # nothing to translate, or straight-line code that leaves at
            # once: entered once per pass it saves a few nanoseconds against
            # milliseconds of compiling (FreeDOS's idle loop is made of such)
            self._untranslatable.add((cs, ip))
            return None
        if self.compile_budget and \
                self.compile_seconds + self.seconds_per_insn * len(insns) > budget:
            if len(self._sizes) > 4096:
                self._sizes.clear()
            self._sizes[(cs, ip)] = len(insns)
            return None
        return self._compile(cs, ip, insns)

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

    def translate(self, cs, ip):
        """Translate the region entered at CS:IP now, whatever the budget;
        returns the Region or None when nothing there can be translated."""
        try:
            insns, _ = blockgen.discover(self._read, cs, ip, self.max_insns)
        except blockgen.Untranslatable:
            insns = {}
        if not insns:
            self._untranslatable.add((cs, ip))
            return None
        return self._compile(cs, ip, insns)

    def _compile(self, cs, ip, insns):
        t0 = time.perf_counter()
        csb = cs << 4
        code = blockgen.region_code_bytes(self._read, insns, csb)
        self._serial += 1
        name = "region_%d" % self._serial
        module = blockgen.RegionCompiler(name, cs, insns, code).compile()
        llvm, tm, jit, pto = _llvm()
        mod = llvm.parse_assembly(str(module))
        mod.verify()
        _optimise(llvm, tm, pto, mod)
        obj = tm.emit_object(mod)
        library = llvm.JITLibraryBuilder().add_object_img(obj).export_symbol(name) \
            .link(jit, "pypc_region_%d" % next(_library_serial))
        address = library[name]
        seconds = time.perf_counter() - t0
        self.compile_seconds += seconds
        self.compiled_insns += len(insns)
        # what the next estimate uses: this process's measured cost per
        # translated instruction so far
        self.seconds_per_insn = self.compile_seconds / self.compiled_insns
        pcs = [(csb + i) & 0xFFFFF for i in insns]
        region = Region((cs, ip), pcs, library, len(insns), len(code))
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
        return region

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

    def _drop_stale(self):
        # a region whose code changed was cut off where it was found
        # stale; drop every region with an entry the core cut off
        for region in list(self.regions.values()):
            if any(self.table[pc] == 0 and self._owner.get(pc) is region for pc in region.pcs):
                self._drop(region)

    def flush(self):
        """Drop every translation (the memory under them was replaced)."""
        for region in list(self.regions.values()):
            self._drop(region)
        self._samples.clear()
        self._untranslatable.clear()

    def stats(self):
        return {
            "regions": len(self.regions),
            "translated": self.translated,
            "evicted": self.evicted,
            "stale": self.stale,
            "instructions": sum(r.instructions for r in self.regions.values()),
            "code_bytes": sum(r.code_bytes for r in self.regions.values()),
            "translated_instructions": int(self.table[S.MEM_SIZE]),
            "region_calls": int(self.table[S.MEM_SIZE + 1]),
            "compile_seconds": round(self.compile_seconds, 6),
            "run_seconds": round(self.run_seconds, 6),
        }
