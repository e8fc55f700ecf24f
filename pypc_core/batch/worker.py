"""Run one checked batch job in this process: the machine ``pypc run``
would build from the job's command line, the headless loop ``pypc run``
uses (:func:`pypc_core.cli.headless.headless_loop`; for a bare job the
machine and the steps of ``pypc run --bare``, :func:`_bare_loop`), then
what the job asked to collect.  Every worker of every backend runs jobs with :func:`run_job`.

A job runs in a folder of its own (removed afterwards): its ``--drive``
folders are copies (so jobs never share host files and the originals are
never written), the disks of a ``load_snapshot`` bundle are written there
and used copy-on-write, its screenshot is drawn there.
"""

import base64
import hashlib
import os
import shutil
import tempfile
import time

from ..errors import PypcError

BLOB_FILES = "files"


def _sha(data):
    return hashlib.sha256(data).hexdigest()


def warm_up():
    """Compile (or load from numba's disk cache) the 8088 core and run one
    throw-away job (a two-byte program, INT 20h, under the built-in DOS),
    so the first real job pays no start-up.  numba starts lean
    (:mod:`pypc_core.cpu.numba_start`: no SciPy, its runtime loaded from
    a cached object file rather than compiled), the job is checked without
    the JSON Schema (the driver validates the real ones: a worker never
    imports jsonschema), and the heap the loading left free is handed
    back to the system (:func:`release_free_heap`)."""
    from ..cpu import numba_start
    from .jobs import check_job
    folder = tempfile.mkdtemp(prefix="pypc-warm-")
    try:
        with open(os.path.join(folder, "WARM.COM"), "wb") as fh:
            fh.write(b"\xcd\x20")
        with numba_start.without_scipy():
            numba_start.start_runtime()
            run_job(check_job({"program": "WARM.COM", "collect": {"screen": True}}, 0, folder,
                              validate=False))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    release_free_heap(freeze=True)


def release_free_heap(freeze=False):
    """Collect garbage and return the C heap's free pages to the system
    (glibc's ``malloc_trim``; elsewhere only the collection): loading the
    compiled core, and each job, free a few MB that would otherwise stay
    resident in every warm worker.  ``freeze`` (after the warm-up) moves
    what is alive then -- numba's and the core's objects, for the
    worker's life -- out of the collector's sight (``gc.freeze``), so the
    collection after each job looks at that job's objects only (well
    under a millisecond, against some 25 ms for a full one)."""
    import gc
    gc.collect()
    if freeze:
        gc.freeze()
    try:
        import ctypes
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return
    trim.argtypes = [ctypes.c_size_t]
    trim(0)


def _tree(root):
    """{relative path: sha256} of the regular files under ``root``."""
    out = {}
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(folder, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            with open(path, "rb") as fh:
                out[os.path.relpath(path, root)] = _sha(fh.read())
    return out


def _registers(machine):
    from ..cpu import state as S
    r = machine.cpu.regs
    return {name: int(r[S.REG_INDEX[name]])
            for name in S.REG16_NAMES + S.SEG_NAMES + ("ip", "flags")}


def _serial(machine):
    """Everything the guest sent on its first serial port (base64), or None."""
    ports = machine.devices_with("serial")
    if not ports:
        return None
    uart = next((d for _n, d in ports if "com1" in d.declaration.capabilities), ports[0][1])
    data = bytearray()
    offset = uart.tx_start
    while offset < uart.tx_next:
        _o, offset, chunk = uart.read_output(offset)
        data += chunk
    return base64.b64encode(bytes(data)).decode("ascii")


def exit_code_of(reason, machine, args):
    """The exit status ``pypc run`` would give for this stop."""
    if machine.dos is not None:
        if reason == "exit":
            return machine.dos.exit_code
        return 0 if reason == "until_text" else 124
    if args.until_text and reason != "until_text":
        return 1
    return 0


def run_job(spec, snapshot_path=None, work_root=None):
    """``(result, blobs)`` of one job: ``result`` the JSON-able result
    (without ``wall_s``, which the backend adds), ``blobs`` {name: bytes}
    of its screenshot and the files it wrote.  ``snapshot_path`` replaces
    the job's ``load_snapshot`` (the backend's local copy of a shared
    bundle).  The job's own folder is made in ``work_root`` (default: the
    temporary directory), so a backend that kills a worker can remove what
    the job left.  A job that cannot run is a result with reason ``error``."""
    result = {"id": spec["id"], "index": spec["index"]}
    blobs = {}
    work = tempfile.mkdtemp(prefix="pypc-job-", dir=work_root)
    try:
        _run(spec, snapshot_path, work, result, blobs)
    except Exception as exc:
        if not isinstance(exc, (PypcError, OSError)):
            from ..bus.memory import MemoryMapError
            from ..bus.ports import PortConflictError
            if not isinstance(exc, (MemoryMapError, PortConflictError)):
                exc = PypcError(f"{type(exc).__name__}: {exc}")
        from ..cli.errors import one_line as _one_line
        for key in list(result):
            if key not in ("id", "index"):
                del result[key]
        blobs.clear()
        result.update(reason="error", exit_code=None, error=_one_line(exc))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return result, blobs


def _run(spec, snapshot_path, work, result, blobs):
    from ..cli import headless, run as launcher
    from ..cli.options import parse_run
    from ..machine import CPU_HZ, Machine
    from ..cli import snapshot as snapshot_cli
    from .jobs import check_args, run_parser
    args = parse_run(["run", *spec["argv"]], run_parser())
    if snapshot_path is not None and spec.get("fanout"):
        args.load_snapshot = snapshot_path      # this worker's copy of the shared bundle
    if args.load_snapshot is not None:
        args.snapshot_disk_root = os.path.join(work, "snapshot-disks")
    check_args(args)
    bare_job = bool(getattr(args, "bare", False))
    drives = {}
    if args.dos_config is not None:
        # each job on its own copies of its --drive folders
        copies = {}
        for letter, root in sorted(args.dos_config.drives.items()):
            copy = os.path.join(work, "drive-" + letter)
            shutil.copytree(root, copy, symlinks=True)
            copies[letter] = copy
            drives[letter] = (copy, _tree(copy))
        args.dos_config.drives = copies
    snapshot_cli.check(args)            # --load-snapshot: its disks into the job's folder
    collect = spec["collect"]
    machine = recorder = None
    try:
        machine = Machine(_bare_config(args) if bare_job else launcher.config_from_args(args))
        machine.raise_device_faults = True
        if not bare_job:
            launcher.check_machine(machine, args)
            snapshot_cli.before_run(machine, args)
        if collect["video"]:
            if machine.video is None:
                raise PypcError("collect.video needs a video plugin (e.g. plugins cga)")
            from ..recording import Recorder
            recorder = Recorder.start(machine, os.path.join(work, "video." + collect["video"]))
        start = machine.clock()
        if bare_job:
            reason, exit_code, fault = _bare_loop(machine, args)
            if fault is not None:
                result["fault"] = fault
        elif getattr(args, "replay", None):
            timeout = args.timeout
            out = machine.replay(getattr(args, "replay_recording", None) or args.replay,
                                 max_cycles=int(timeout * CPU_HZ) if timeout else None)
            reason = ("timeout" if out["timed_out"] else
                      "replay_identical" if out["identical"] else "replay_diverged")
            exit_code = 0 if reason == "replay_identical" else 1
        else:
            reason = headless.headless_loop(machine, args)
            exit_code = exit_code_of(reason, machine, args)
        if recorder is not None:
            summary = recorder.stop()
            videos = []
            for path in summary["files"]:
                with open(path, "rb") as fh:
                    data = fh.read()
                name = "video/" + os.path.basename(path)
                blobs[name] = data
                videos.append({"blob": name, "bytes": len(data), "sha256": _sha(data)})
            result["video"] = {"files": videos, "frames": summary["frames"],
                               "frame_rate_hz": round(summary["frame_rate_hz"], 6),
                               "width": summary["width"], "height": summary["height"],
                               "audio": summary["audio"]}
        result.update(reason=reason, exit_code=exit_code, cycles=machine.clock(),
                      emulated_s=round(machine.clock() / CPU_HZ, 6),
                      run_cycles=machine.clock() - start)
        if bare_job:
            result["instructions"] = int(machine.cpu.instructions)
        if collect["console"] and machine.dos is not None:
            result["console"] = bytes(machine.dos.console_out).decode("cp437").replace(
                "\r\n", "\n")
        if collect["screen"]:
            result["screen"] = (None if machine.video is None else
                                "\n".join(r.rstrip() for r in machine.screen_text()).rstrip("\n"))
        if collect["registers"]:
            result["registers"] = _registers(machine)
        if collect["memory"]:
            result["memory"] = [
                {"address": a, "length": n, "base64": base64.b64encode(
                    bytes(machine.memory.read(a, min(n, 0x100000 - a)))).decode("ascii")}
                for a, n in collect["memory"]]
        if collect["serial"]:
            result["serial"] = _serial(machine)
        if collect["screenshot"]:
            if machine.video is None:
                raise PypcError("collect.screenshot needs a video plugin (e.g. plugins cga)")
            png = os.path.join(work, "screenshot.png")
            machine.video.write_png(png)
            with open(png, "rb") as fh:
                data = fh.read()
            blobs["screenshot.png"] = data
            result["screenshot"] = {"blob": "screenshot.png", "bytes": len(data),
                                    "sha256": _sha(data)}
        if args.save_snapshot:
            out = machine.save(args.save_snapshot, args.snapshot_disk_mode, progress=None)
            result["snapshot"] = {"bytes": out["bytes"], "sha256": out["sha256"]}
        if getattr(args, "record", None) and getattr(machine, "_recorder", None) is not None:
            machine.stop_recording(args.record)
    finally:
        if recorder is not None and recorder.active:
            try:
                recorder.stop()         # (the job failed: its files are dropped with its folder)
            except Exception:
                pass
        if machine is not None:
            machine.close()             # a --drive's files are final now
        snapshot_cli.discard_written(args)
    if collect["files"]:
        files = []
        for letter, (copy, before) in sorted(drives.items()):
            for rel, sha in sorted(_tree(copy).items()):
                if before.get(rel) == sha:
                    continue
                with open(os.path.join(copy, rel), "rb") as fh:
                    data = fh.read()
                name = f"{BLOB_FILES}/{letter}/{rel}"
                blobs[name] = data
                files.append({"path": f"{letter}:\\" + rel.replace(os.sep, "\\").upper(),
                              "bytes": len(data), "sha256": _sha(data), "blob": name})
        result["files"] = files


def _bare_config(args):
    """The MachineConfig ``pypc run --bare`` builds (pypc_core.cli.bare.run):
    no firmware, RAM zeroed, the job's ``load`` files placed, CS:IP at
    ``entry`` or FFFF:0000, no cards but the job's ``plugins``."""
    from ..cli import bare
    from ..argtypes import speed_from_args
    from ..machine import MachineConfig
    speed = speed_from_args(args)
    return MachineConfig(plugins=[p for p in args.plugins.split(",") if p], bare=True,
                         loads=bare.read_loads(args.load), entry=args.entry, speed=speed,
                         plugin_manager=args.plugin_manager, options=args,
                         cpu=getattr(args, "cpu", "interpret"),
                         debug_port=getattr(args, "debug_port", None),
                         symbols=list(getattr(args, "symbols", None) or []))


def _bare_loop(machine, args):
    """``(reason, exit_code, fault message or None)`` of a bare run, in the
    steps ``pypc run --bare`` takes (a 60th of an emulated second at a
    time): ``halt`` (HLT with interrupts off), ``fault`` or ``timeout``
    (``timeout`` emulated seconds, default 60); the exit status is
    ``pypc run --bare``'s (with ``until_halt``: 0 for a halt, 1 otherwise;
    without: 1 for a fault)."""
    from ..cli import bare
    from ..machine import CPU_HZ
    end = machine.clock() + int((args.timeout or bare.DEFAULT_TIMEOUT_S) * CPU_HZ)
    stop = None
    while machine.clock() < end:
        stop = machine.run_until_cycle(min(end, machine.clock() + CPU_HZ // 60))
        if stop.kind in ("halt", "fault"):
            break
    kind = stop.kind if stop is not None and stop.kind in ("halt", "fault") else "timeout"
    fault = stop.detail.get("message") if kind == "fault" else None
    if args.until_halt:
        return kind, 0 if kind == "halt" else 1, fault
    return kind, 1 if kind == "fault" else 0, fault


def run_timed(spec, snapshot_path=None, work_root=None):
    """:func:`run_job` with ``wall_s``, the wall-clock seconds it took; then
    the garbage it left is collected and the free heap handed back
    (:func:`release_free_heap`: fast in a warmed-up worker)."""
    t0 = time.perf_counter()
    result, blobs = run_job(spec, snapshot_path, work_root)
    result["wall_s"] = round(time.perf_counter() - t0, 4)
    release_free_heap()             # the job's machine is gone: its memory too
    return result, blobs
