"""Run single-instruction test vectors through the compiled core.

    python -m pypc_core.cpu.conformance DIR [--opcode OP] [--no-flag-mask] [--record]
                                            [--translate [--in-block]]

DIR holds ``*.jsonl.gz`` files (format: shared/cpu-tests/README.md) and
optionally ``metadata.json`` with per-opcode flag masks.  Prints one line per
file, the first failing test of each file, and last ``N passed, M failed``.
Exits 1 if anything failed, 2 on unusable input.

``--translate`` runs each vector's instruction through the block translator
as a region of its own; with ``--in-block`` as one instruction of a longer
region instead: two neighbours before it (NOP, MOV AX,AX) and one after it,
at the vector's final CS:IP (NOP, then a HLT that ends the run), all
translated together, so the instruction's code is generated inside a region
with registers and flags live across it.  A vector whose RAM or code
overlaps where the neighbours would go runs as a region of its own (the
count is printed).
"""

import argparse
import gzip
import json
import os
import sys

from . import state as S
from .cpu import Cpu

REG_ORDER = ("ax", "bx", "cx", "dx", "cs", "ss", "ds", "es", "sp", "bp", "si", "di", "ip", "flags")
# --in-block: what comes before and after the vector's instruction (neither
# changes anything but IP and the cycle count)
BEFORE = bytes([0x90, 0x89, 0xC0])       # nop ; mov ax, ax
BEFORE_INSNS = 2
AFTER = bytes([0x90, 0xF4])              # nop ; hlt
BLOCK_INSNS = BEFORE_INSNS + 2           # the region: two before, the instruction, one after


class VectorError(Exception):
    """A test file or line that cannot be used."""


def load_masks(directory):
    """{file stem: flags mask} from metadata.json (missing file: no masks)."""
    path = os.path.join(directory, "metadata.json")
    if not os.path.exists(path):
        return {}
    try:
        with open(path) as fh:
            meta = json.load(fh)
    except (OSError, ValueError) as exc:
        raise VectorError(f"{path}: cannot read metadata: {exc}") from exc
    masks = {}
    for op, info in meta.get("opcodes", {}).items():
        if "flags-mask" in info:
            masks[op] = info["flags-mask"]
        for reg, sub in info.get("reg", {}).items():
            if "flags-mask" in sub:
                masks[f"{op}.{reg}"] = sub["flags-mask"]
    return masks


def iter_tests(path):
    """Yield (line number, test dict); raises VectorError naming the line."""
    try:
        fh = gzip.open(path, "rt")
        with fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    test = json.loads(line)
                    test["initial"]["regs"]
                    test["final"]
                except (ValueError, KeyError, TypeError) as exc:
                    raise VectorError(f"{path}:{lineno}: malformed test line: {exc}") from exc
                yield lineno, test
    except (OSError, EOFError) as exc:
        raise VectorError(f"{path}: cannot read: {exc}") from exc


class Runner:
    """Runs vectors on one CPU.  With ``translate`` each vector's instruction
    goes through the block translator instead of the interpreter: it is
    translated as a region of its own (``region_insns`` 1) and entered from
    the core's loop; an instruction the translator leaves to the interpreter
    runs there, as it would in a translated machine."""

    def __init__(self, record=False, translate=False, region_insns=1, in_block=False):
        self.cpu = Cpu()
        self.record = record
        self.in_block = in_block
        if in_block:
            region_insns = BLOCK_INSNS
        # no region cache: every vector's region is new code
        self.translator = self.cpu.translate(max_insns=region_insns, cache=None) \
            if translate else None
        self.translated = 0
        self.translated_in_block = 0      # vectors whose instruction ran inside a longer region
        self.block_skipped = 0            # vectors with no room for the neighbours

    def run_test(self, test, mask):
        """Returns None on success, else a description of the differences."""
        cpu = self.cpu
        mem = cpu.mem
        init = test["initial"]
        final = test["final"]
        for name in REG_ORDER:
            cpu.regs[S.REG_INDEX[name]] = init["regs"][name]
        for addr, value in init["ram"]:
            mem[addr] = value
        cpu.ctl[S.C_HALTED] = 0
        cpu.ctl[S.C_INTR] = 0
        placed = []
        ip_after = 0                 # bytes the run went past the final IP
        try:
            if self.translator is None:
                cpu.step(record=self.record)
            elif self.in_block:
                block = self._place_neighbours(test)
                if block is not None:
                    placed, final_linear, with_after = block
                    self._run_in_block(init["regs"], final_linear, with_after)
                    ip_after = len(AFTER) if with_after else 0
                else:
                    self.block_skipped += 1
                    self._step_translated(init["regs"])
            else:
                self._step_translated(init["regs"])
            diffs = []
            for name in REG_ORDER:
                want = final["regs"].get(name, init["regs"][name])
                if name == "ip":
                    want = (want + ip_after) & 0xFFFF
                got = int(cpu.regs[S.REG_INDEX[name]])
                if name == "flags":
                    if (want & mask) != (got & mask):
                        diffs.append(f"flags want {want:04X} got {got:04X} (mask {mask:04X})")
                elif want != got:
                    diffs.append(f"{name} want {want:04X} got {got:04X}")
            for addr, value in final["ram"]:
                if mem[addr] != value:
                    diffs.append(f"[{addr:05X}] want {value:02X} got {int(mem[addr]):02X}")
            if self.record:
                wanted = {a for a, _ in final["ram"]}
                for addr in cpu.recorded_writes():
                    if addr not in wanted:
                        diffs.append(f"stray write to [{addr:05X}]")
        finally:
            for addr, _ in init["ram"]:
                mem[addr] = 0
            for addr, _ in final["ram"]:
                mem[addr] = 0
            for addr in placed:
                mem[addr] = 0
            cpu.ctl[S.C_HALTED] = 0
        return "; ".join(diffs) or None

    def _place_neighbours(self, test):
        """Write BEFORE in front of the vector's instruction and, where there
        is room, AFTER at its final CS:IP.  Returns (addresses written, the
        final linear address, AFTER placed), or None (nothing written) where
        the neighbours would touch the vector's RAM, its code or each other.
        Without room for AFTER (the bytes after an instruction are in its RAM
        as the prefetch queue's), the run stops at an execution breakpoint
        on the final CS:IP instead, with the region ending at the
        instruction."""
        init, final = test["initial"], test["final"]
        cs, ip = init["regs"]["cs"], init["regs"]["ip"]
        fcs = final["regs"].get("cs", cs)
        fip = final["regs"].get("ip", ip)

        def linear(seg, off):
            return ((seg << 4) + (off & 0xFFFF)) & 0xFFFFF

        before = [linear(cs, ip - len(BEFORE) + k) for k in range(len(BEFORE))]
        after = [linear(fcs, fip + k) for k in range(len(AFTER))]
        code = {linear(cs, ip + k) for k in range(len(test.get("bytes", ())) or 1)}
        ram = {a for a, _ in init["ram"]} | {a for a, _ in final["ram"]}
        if (ram | code) & set(before) or after[0] in code or after[0] in before:
            return None
        with_after = not (ram | code | set(before)) & set(after) and len(set(after)) == len(after)
        wanted = before + after if with_after else before
        mem = self.cpu.mem
        for addr, value in zip(wanted, BEFORE + AFTER):
            mem[addr] = value
        return wanted, after[0], with_after

    def _run_in_block(self, regs, final_linear, with_after):
        cpu, tr = self.cpu, self.translator
        start = (regs["ip"] - len(BEFORE)) & 0xFFFF
        cpu.regs[S.IP] = start
        done0 = int(tr.table[S.MEM_SIZE])
        tr.max_insns = BLOCK_INSNS if with_after else BLOCK_INSNS - 1
        region = tr.translate(regs["cs"], start)
        if not with_after:
            cpu.xflags[final_linear] |= S.XF_BREAKPOINT
        stop = S.EXIT_HALT if with_after else S.EXIT_BREAKPOINT
        try:
            for _ in range(16):        # a REP string's slices, an IN's answer
                reason = cpu._run(cpu.cycles + (1 << 26))
                if reason == stop:
                    break
            else:
                raise RuntimeError(f"the block did not reach its end (exit {reason})")
        finally:
            tr.flush()
            cpu.xflags[final_linear] &= ~S.XF_BREAKPOINT & 0xFF
        if region is not None:
            self.translated += 1
            if int(tr.table[S.MEM_SIZE]) - done0 > BEFORE_INSNS:
                self.translated_in_block += 1

    def _step_translated(self, regs):
        # one instruction: the deadline check before a second one stops it
        cpu, tr = self.cpu, self.translator
        if tr.translate(regs["cs"], regs["ip"]) is None:
            cpu.step()                  # the interpreter's, as in a translated machine
            return
        self.translated += 1
        try:
            cpu._run(cpu.cycles + 1)
        finally:
            tr.flush()


def run_directory(directory, opcode=None, flag_mask=True, record=False, out=None,
                  translate=False, in_block=False):
    """Returns (passed, failed).  Raises VectorError for unusable input."""
    out = sys.stdout if out is None else out
    if not os.path.isdir(directory):
        raise VectorError(f"{directory}: not a directory")
    masks = load_masks(directory) if flag_mask else {}
    files = sorted(f for f in os.listdir(directory) if f.endswith(".jsonl.gz"))
    if opcode:
        want = opcode.upper()
        files = [f for f in files if f[:-len(".jsonl.gz")].upper() in (want,)
                 or f[:-len(".jsonl.gz")].upper().split(".")[0] == want]
    if not files:
        raise VectorError(f"{directory}: no *.jsonl.gz test files"
                          + (f" for opcode {opcode}" if opcode else ""))
    runner = Runner(record=record, translate=translate, in_block=in_block)
    total_pass = total_fail = 0
    for name in files:
        stem = name[:-len(".jsonl.gz")]
        mask = masks.get(stem, masks.get(stem.split(".")[0], 0xFFFF)) if flag_mask else 0xFFFF
        passed = failed = 0
        first = None
        path = os.path.join(directory, name)
        lineno = 0
        try:
            for lineno, test in iter_tests(path):
                try:
                    diff = runner.run_test(test, mask)
                except Exception as exc:  # report which test, never die silently
                    diff = f"crashed: {type(exc).__name__}: {exc}"
                if diff is None:
                    passed += 1
                else:
                    failed += 1
                    if first is None:
                        first = (test.get("hash", "?"), test.get("name", "?"), diff)
        except VectorError as exc:
            failed += 1
            print(f"{stem}: error: {exc}", file=out)
        print(f"{stem}: {passed} passed, {failed} failed", file=out)
        if first is not None:
            print(f"  first failure: {first[0]} {first[1]!r}: {first[2]}", file=out)
        total_pass += passed
        total_fail += failed
    if translate:
        print(f"{runner.translated} vectors ran translated", file=out)
    if in_block:
        print(f"{runner.translated_in_block} vectors' instructions ran inside a longer region; "
              f"{runner.block_skipped} had no room for the neighbours (a region of their own)",
              file=out)
    print(f"{total_pass} passed, {total_fail} failed", file=out)
    return total_pass, total_fail


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m pypc_core.cpu.conformance",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("directory")
    ap.add_argument("--opcode", help="only this opcode file, e.g. 00, F6 or F6.7")
    ap.add_argument("--no-flag-mask", action="store_true",
                    help="compare officially undefined flags too")
    ap.add_argument("--record", action="store_true",
                    help="run with effect recording on (the debugger's slow path) "
                         "and report stray writes")
    ap.add_argument("--translate", action="store_true",
                    help="run each instruction through the block translator "
                         "(a one-instruction region) where it translates")
    ap.add_argument("--in-block", action="store_true",
                    help="with --translate: each instruction inside a longer region, "
                         "between translated neighbours")
    args = ap.parse_args(argv)
    if args.in_block and not args.translate:
        print("error: --in-block goes with --translate", file=sys.stderr)
        return 2
    if args.translate and args.record:
        print("error: --translate and --record do not go together (recording sends "
              "every access to the interpreter)", file=sys.stderr)
        return 2
    try:
        _, failed = run_directory(args.directory, args.opcode, not args.no_flag_mask,
                                  args.record, translate=args.translate,
                                  in_block=args.in_block)
    except VectorError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
