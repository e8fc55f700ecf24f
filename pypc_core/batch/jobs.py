"""Batch jobs: a ``pypc run`` configuration written as data.

A job is a JSON object whose fields are the ``pypc run`` options by their
Python names (``floppy``, ``floppy_b``, ``program``, ``args``, ``drive``,
``type``, ``type_after``, ``until_text``, ``timeout``, ``load_snapshot``,
``save_snapshot``, ``plugins``, ``bare``, ``load``, ``entry``,
``until_halt`` ...), plus the batch's own ``id``,
``collect`` and ``wall_timeout`` (``job.schema.json``).  :func:`check_job`
turns it into the command line ``pypc run`` would get and parses that with
the ``pypc run`` parser itself (:func:`pypc_core.cli.parse_run`), then runs
the checks ``pypc run`` makes before a machine exists, so a job obeys
exactly the rules of the command line.
"""

import argparse
import functools
import json
import os
import re
from importlib import resources

from ..errors import PypcError

# Options a batch job cannot take: the batch runs every job headless, with
# no listener, and collects the screen itself.
FORBIDDEN = {
    "help": "is not a job option",
    "headless": "is always on in a batch",
    "no_rpc": "is always on in a batch", "no_viewers": "is always on in a batch",
    "no_telnet": "is always on in a batch", "no_vnc": "is always on in a batch",
    "serve": "serves an agent; a batch job runs headless with no listener",
    "rpc_port": "opens a listener; a batch job has none",
    "rpc_socket": "opens a listener; a batch job has none",
    "rpc_token_file": "goes with a listener; a batch job has none",
    "rpc_methods": "goes with a listener; a batch job has none",
    "telnet_port": "opens a listener; a batch job has none",
    "vnc_port": "opens a listener; a batch job has none",
    "vnc_password_file": "goes with a listener; a batch job has none",
    "listen": "goes with a listener; a batch job has none",
    "gdb": "opens a listener; a batch job has none",
    "web": "opens a listener; a batch job has none",
    "screenshot": "is collected by the batch: use \"collect\": {\"screenshot\": true}",
    "snapshot_disk_root": "is chosen by the batch (each job gets its own)",
    "dump_registers": "is collected by the batch: use \"collect\": {\"registers\": true}",
    "dump_memory": "is collected by the batch: use \"collect\": {\"memory\": "
                   "[[ADDRESS, LENGTH]]}",
    "audio": "writes a host file every job would share",
    "video_out": "is collected by the batch: use \"collect\": {\"video\": \"mp4\"} (or mkv, webm, gif, apng)",
    "program_args": "is written \"args\" in a job",
}
# The run options a bare job (``"bare": true``, ``pypc run --bare``: no
# firmware, no DOS) uses; it refuses the others (the options of the plugins
# it selects are its own).  pypc_core.cli.bare.check refuses firmware and DOS.
BARE_FIELDS = {"bare", "load", "entry", "until_halt", "plugins", "video", "timeout", "speed",
               "turbo", "cpu", "cow", "symbols", "debug_port", "id", "collect", "wall_timeout"}
PATH_FIELDS = ("floppy", "floppy_b", "hdd", "host_dir", "bios", "cow_dir", "load_snapshot",
               "save_snapshot", "record", "replay")
COLLECT_KEYS = ("console", "screen", "screenshot", "registers", "serial", "files", "memory",
                "video")


class JobError(PypcError):
    """A bad job: ``where`` (the line and id), ``field`` and the message."""

    def __init__(self, where, field, message):
        self.where = where
        self.field = field
        self.reason_text = message
        text = f"{where}: field {field!r}: {message}" if field else f"{where}: {message}"
        super().__init__(text)


class _RaisingParser(argparse.ArgumentParser):
    """The ``pypc run`` parser for jobs: an error raises instead of exiting."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message):
        raise _ParseError(message)

    def exit(self, status=0, message=None):
        raise _ParseError(message or "the option parser ended the run")


class _ParseError(Exception):
    pass


@functools.lru_cache(maxsize=1)
def schema():
    """The job's JSON Schema (``pypc_core/batch/job.schema.json``)."""
    text = resources.files(__package__).joinpath("job.schema.json").read_text("utf-8")
    return json.loads(text)


@functools.lru_cache(maxsize=1)
def _validator():
    import jsonschema
    return jsonschema.Draft202012Validator(schema())


def run_parser():
    """A fresh ``pypc run`` parser (the run subparser's options,
    :func:`pypc_core.cli.add_run_arguments`) whose errors raise."""
    from ..cli.options import add_run_arguments
    return add_run_arguments(_RaisingParser(prog="pypc run"))


def _actions(parser):
    """{dest: action} of a run parser's options and positionals."""
    return {a.dest: a for a in parser._actions}


def _flag(action):
    return max(action.option_strings, key=len)


def _absolute(path, base_dir):
    return path if os.path.isabs(path) else os.path.normpath(os.path.join(base_dir, path))


def _argv(job, actions, base_dir, where):
    """The ``pypc run`` argv of a job (without the forced options), and the
    fields no option of ``actions`` takes."""
    argv, unknown = [], []
    program = None
    for field, value in job.items():
        if field in ("id", "collect", "wall_timeout", "args"):
            continue
        if field in FORBIDDEN:
            raise JobError(where, field, FORBIDDEN[field])
        action = actions.get(field)
        if action is None:
            unknown.append(field)
            continue
        if field == "program":
            if not isinstance(value, str):
                raise JobError(where, field, "is a path (a string)")
            program = value if re.match(r"^[A-Za-z]:", value) else _absolute(value, base_dir)
            continue
        flag = _flag(action)
        if isinstance(action, argparse._StoreTrueAction):
            if not isinstance(value, bool):
                raise JobError(where, field, f"is true or false, not {json.dumps(value)}")
            if value:
                argv.append(flag)
            continue
        if field == "drive":
            items = (sorted(f"{k}={v}" for k, v in value.items()) if isinstance(value, dict)
                     else list(value))
            for item in items:
                letter, eq, folder = str(item).partition("=")
                argv.append(f"{flag}={letter}{eq}{_absolute(folder, base_dir) if folder else ''}")
            continue
        if isinstance(action, argparse._AppendAction):
            values = value if isinstance(value, list) else [value]
            for item in values:
                if not isinstance(item, (str, int, float)) or isinstance(item, bool):
                    raise JobError(where, field, f"{json.dumps(item)} is not a value")
                item = str(item)
                if field in ("option_rom", "symbols", "load"):    # FILE@SEG[:OFF]
                    path, at, seg = item.rpartition("@")
                    item = (f"{_absolute(path, base_dir)}@{seg}" if at and path
                            else _absolute(item, base_dir))
                argv.append(f"{flag}={item}")
            continue
        if action.nargs == "?" and isinstance(value, bool):
            if value:
                argv.append(flag)       # the option's default value (--debug-port: E9h)
            continue
        if field in ("plugins", "rpc_methods") and isinstance(value, list) and all(
                isinstance(v, str) for v in value):
            value = ",".join(value)         # ["cga", "fdc"] is --plugins cga,fdc
        if isinstance(value, (list, dict)) or isinstance(value, bool):
            raise JobError(where, field, f"takes one value, not {json.dumps(value)}")
        if isinstance(value, float) and value == int(value):
            value = repr(value)
        value = str(value)
        if field in PATH_FIELDS:
            value = _absolute(value, base_dir)
        argv.append(f"{flag}={value}")
    if program is not None:
        argv.append(program)
        argv += [str(a) for a in job.get("args", [])]
    elif job.get("args"):
        raise JobError(where, "args", "goes with \"program\"")
    return argv, unknown


def _field_of(message, actions):
    """The job field an argparse message names (``argument --timeout: ...``)."""
    m = re.match(r"argument ([-\w/]+)", message)
    if m:
        names = m.group(1).split("/")
        for dest, action in actions.items():
            if any(n in action.option_strings for n in names) or dest in names:
                return dest
    return None


def where_of(index, job_id):
    return f"job {index}" + (f" (id {json.dumps(job_id)})" if job_id is not None else "")


def check_job(job, index, base_dir=".", where=None, from_snapshot=None, validate=True):
    """A checked job: a dict with ``index`` (its 1-based number), ``id``,
    ``argv`` (the ``pypc run`` command line it is, every path absolute),
    ``collect``, ``wall_timeout`` and ``dos`` (a built-in DOS job) -- or a
    :class:`JobError` naming the job and the field.  Relative paths are
    taken from ``base_dir``; ``from_snapshot`` (a bundle file) is the start
    of every job that names no ``load_snapshot``.  Nothing is opened for
    writing.  ``validate=False`` skips the JSON Schema (for a job this
    package wrote itself: a worker's warm-up job, which so never imports
    jsonschema)."""
    job_id = job.get("id") if isinstance(job, dict) else None
    where = where or where_of(index, job_id)
    if not isinstance(job, dict):
        raise JobError(where, None, "a job is a JSON object")
    errors = sorted(_validator().iter_errors(job), key=lambda e: list(e.path)) \
        if validate else []
    if errors:
        err = errors[0]
        field = ".".join(str(p) for p in err.absolute_path) or None
        raise JobError(where, field, err.message)
    base_dir = os.path.abspath(base_dir)
    job = dict(job)
    job_id = job.get("id", index)
    bare = job.get("bare") is True
    if bare:
        _check_bare_fields(job, where, from_snapshot)
    if "turbo" not in job and "speed" not in job:
        job["turbo"] = True          # unpaced unless the job asks for a speed
    if not any(k in job for k in ("cow", "readonly", "cow_dir")):
        job["cow"] = True            # jobs never write a shared disk image
    fanout = from_snapshot is not None and "load_snapshot" not in job
    if fanout:
        job["load_snapshot"] = from_snapshot
    parser = run_parser()
    actions = _actions(parser)
    argv, unknown = _argv(job, actions, base_dir, where)
    forced = ["--headless", "--no-rpc", "--no-viewers"]
    try:
        from ..cli.options import parse_run
        if unknown:
            # plugin options exist once the job's plugins are selected
            probe = run_parser()
            parse_run(["run", *forced, *argv], probe)
            actions = _actions(probe)
            argv, unknown = _argv(job, actions, base_dir, where)
            if unknown:
                raise JobError(where, unknown[0], "is not a pypc run option (see "
                                                   "'pypc run --help'; options are written "
                                                   "with underscores: floppy_b, until_text)")
            parser = run_parser()
        args = parse_run(["run", *forced, *argv], parser)
        actions = _actions(parser)
        check_args(args)
    except _ParseError as exc:
        message = str(exc)
        field = _field_of(message, actions)
        message = re.sub(r"^argument [-\w/]+: ", "", message)
        raise JobError(where, field, message) from None
    except JobError:
        raise
    except PypcError as exc:
        message = " ".join(str(exc).split())
        field = _field_in(message, actions)
        program = job.get("program")
        if field is None and isinstance(program, str) and (
                message.startswith(program) or message.startswith(_absolute(program, base_dir))):
            field = "program"
        raise JobError(where, field, message) from None
    collect = dict(job.get("collect", {}))
    dos = args.dos_config is not None
    if bare and collect.get("console"):
        raise JobError(where, "collect.console", "is the built-in DOS's console; a bare job "
                                                 "runs no DOS")
    collect.setdefault("console", dos)
    collect.setdefault("screen", not dos and not bare)
    for key in COLLECT_KEYS:
        collect.setdefault(key, [] if key == "memory" else None if key == "video" else False)
    collect["memory"] = [[_address(a, where), n] for a, n in collect["memory"]]
    return {"index": index, "id": job_id, "argv": [*forced, *argv], "collect": collect,
            "wall_timeout": job.get("wall_timeout"), "dos": dos, "bare": bare,
            "fanout": fanout,
            "save_snapshot": args.save_snapshot, "record": args.record}


def _check_bare_fields(job, where, from_snapshot):
    """A bare job takes the options of :data:`BARE_FIELDS` and those of its
    plugins only, and does not start from the batch's snapshot."""
    own = _actions(run_parser())
    for field in job:
        if field in own and field not in BARE_FIELDS and field not in FORBIDDEN:
            raise JobError(where, field, "cannot be used in a bare job (no firmware, no DOS: "
                                         "a bare job takes load, entry, until_halt, plugins, "
                                         "video, timeout, speed, turbo, cpu, symbols, "
                                         "debug_port)")
    if "args" in job:
        raise JobError(where, "args", "cannot be used in a bare job (it runs no DOS program)")
    if from_snapshot is not None:
        raise JobError(where, "bare", "a bare job cannot start from the batch's "
                                      "--from-snapshot (it starts from reset, with no firmware)")


def _address(value, where):
    if isinstance(value, int):
        address = value
    else:
        try:
            address = int(value, 0) if not value.lower().endswith("h") else int(value[:-1], 16)
        except ValueError:
            raise JobError(where, "collect.memory", f"{value!r} is not an address "
                                                    f"(0x400, 400h or decimal)") from None
    if not 0 <= address <= 0xFFFFF:
        raise JobError(where, "collect.memory", f"address {value!r} is outside 00000h-FFFFFh")
    return address


def _field_in(message, actions):
    """The field a ``pypc run`` check's message names (``--floppy ...``)."""
    m = re.search(r"(--[a-z][-a-z0-9]*)", message)
    if m:
        for dest, action in actions.items():
            if m.group(1) in action.option_strings:
                return dest
    return None


def check_args(args):
    """The checks ``pypc run`` makes before a machine exists (the launcher's,
    the built-in DOS's, the snapshot options'), writing nothing: a job's
    ``load_snapshot`` bundle is only opened and checked here; the worker
    writes its disks into the job's own folder."""
    from ..cli import run as launcher
    from ..cli import dos as dos_launch
    from ..cli import snapshot as snapshot_cli
    launcher.check_args(args)
    for option, path in (("--floppy", args.floppy), ("--floppy-b", args.floppy_b),
                         ("--hdd", args.hdd), ("--bios", args.bios),
                         *(("--option-rom", p) for p, _seg in args.option_rom or ())):
        if path is not None and not os.path.isfile(path):
            raise PypcError(f"{option} {path!r}: " + (
                "not a regular file" if os.path.exists(path) else "no such file"))
    if args.host_dir is not None and not os.path.isdir(args.host_dir):
        raise PypcError(f"--host-dir {args.host_dir!r}: no such folder")
    load = args.load_snapshot
    probe = argparse.Namespace(**vars(args))
    probe.load_snapshot = probe.snapshot_disk_root = None
    snapshot_cli.check(probe)
    if probe.replay is not None:
        args.replay_recording = probe.replay_recording
    if load is not None:
        if not os.path.isfile(load):
            raise PypcError(f"--load-snapshot {load!r}: " + (
                "not a regular file" if os.path.exists(load) else "no such file"))
        _check_bundle(load, os.path.getsize(load), os.path.getmtime(load))
    dos_launch.prepare(args)
    if getattr(args, "bare", False):
        from ..cli import bare
        bare.read_loads(args.load)      # every --load readable, fitting, not overlapping


@functools.lru_cache(maxsize=8)
def _check_bundle(path, size, mtime):
    from ..snapshot import open_bundle
    try:
        open_bundle(path, progress=None)
    except PypcError as exc:
        raise PypcError(f"--load-snapshot {path!r}: {exc}") from None
    return True


def read_jobs(path):
    """``[(index, job or None, error or None)]`` of a JOBS.jsonl file: one
    JSON object a line (blank lines and lines starting with # are skipped,
    keeping the line numbers)."""
    out = []
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except UnicodeDecodeError:
        raise PypcError(f"{path}: not a UTF-8 text file") from None
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            job = json.loads(line)
        except json.JSONDecodeError as exc:
            raise JobError(f"{path}: line {number}", None, f"not JSON ({exc.msg} at "
                                                          f"column {exc.colno})") from None
        out.append((number, job))
    return out


def check_all(jobs, base_dir=".", from_snapshot=None, source=None):
    """Check every job of ``[(line number, job)]`` before any runs: the
    checked jobs, or the first :class:`JobError` (line and id in it).  Ids
    must be unique, and no two jobs may write the same snapshot or
    recording file."""
    checked, ids, outputs = [], {}, {}
    for n, (line, job) in enumerate(jobs, 1):
        job_id = job.get("id", n) if isinstance(job, dict) else n
        where = (f"{source}: line {line}" if source else f"job {n}") + (
            f" (id {json.dumps(job_id)})" if isinstance(job, dict) and "id" in job else "")
        spec = check_job(job, n, base_dir, where, from_snapshot)
        key = json.dumps(spec["id"])
        if key in ids:
            raise JobError(where, "id", f"{key} is also the id of job {ids[key]}")
        ids[key] = n
        for field in ("save_snapshot", "record"):
            path = spec[field]
            if path is None:
                continue
            if path in outputs:
                raise JobError(where, field, f"{path!r} is also written by job {outputs[path]}")
            outputs[path] = n
        checked.append(spec)
    return checked
