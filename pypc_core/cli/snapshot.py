"""``pypc run`` options for snapshots and input recordings:

``--load-snapshot FILE``      start from a bundle (disks go to ``--snapshot-disk-root``,
                              default ``FILE.disks``, a new directory; without drive
                              options the machine gets the bundle's drives)
``--save-snapshot FILE``      write a bundle when the run ends (a new file)
``--snapshot-disk-mode MODE`` how ``--save-snapshot`` keeps disks (auto, embed, reference,
                              reference-files)
``--record FILE``             record every host input with its emulated cycle
``--replay FILE``             replay a recording to its end (or --timeout emulated
                              seconds) instead of taking input; exit 0 when the
                              machine ends in the recorded state
"""

import os
import sys

from ..errors import PypcError
from ..snapshot.bundle import DISK_MODES


def add_arguments(parser):
    g = parser.add_argument_group("snapshots and recordings")
    g.add_argument("--load-snapshot", metavar="FILE",
                   help="start from this machine bundle (made by --save-snapshot or "
                        "machine.snapshot.export) instead of powering on; give the same "
                        "--plugins as the machine that saved it (and its drives, or none: "
                        "then the bundle's disks are the drives)")
    g.add_argument("--snapshot-disk-root", metavar="DIR",
                   help="new directory for the disks of --load-snapshot "
                        "(default: FILE.disks)")
    g.add_argument("--save-snapshot", metavar="FILE",
                   help="write the machine to this new bundle file when the run ends")
    g.add_argument("--snapshot-disk-mode", choices=DISK_MODES, default="auto",
                   help="how --save-snapshot keeps the disks (default: %(default)s)")
    g.add_argument("--record", metavar="FILE",
                   help="record every host input (keys, typed text, serial input, joystick "
                        "moves) with its emulated cycle into this new file")
    g.add_argument("--replay", metavar="FILE",
                   help="replay a --record file to its end (live input is ignored) and "
                        "check that the machine ends in the recorded state (exit 0) or "
                        "not (exit 1; also when --timeout emulated seconds end it "
                        "first); any --speed or --turbo")
    return parser


def _new_file(option, path):
    if os.path.lexists(path):
        raise PypcError(f"{option} {path!r} already exists (it is never overwritten)")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise PypcError(f"{option} {path!r}: no such directory {folder!r}")


def check(args):
    """Bad combinations and paths, before anything is opened."""
    load = getattr(args, "load_snapshot", None)
    if load is not None and not os.path.isfile(load):
        raise PypcError(f"--load-snapshot {load!r}: " + (
            "not a regular file" if os.path.exists(load) else "no such file"))
    if getattr(args, "snapshot_disk_root", None) and load is None:
        raise PypcError("--snapshot-disk-root goes with --load-snapshot")
    if getattr(args, "save_snapshot", None):
        _new_file("--save-snapshot", args.save_snapshot)
    if getattr(args, "record", None):
        _new_file("--record", args.record)
    replay = getattr(args, "replay", None)
    if replay is not None:
        if not os.path.isfile(replay):
            raise PypcError(f"--replay {replay!r}: " + (
                "not a regular file" if os.path.exists(replay) else "no such file"))
        from ..snapshot.replay import load_recording
        try:
            args.replay_recording = load_recording(replay)   # checked before a machine exists
        except PypcError as exc:
            raise PypcError(f"--replay {replay!r}: {exc}") from None
        for option, value in (("--record", getattr(args, "record", None)),
                              ("--type", getattr(args, "type", None)),
                              ("--until-text", getattr(args, "until_text", None))):
            if value:
                raise PypcError(f"--replay replays the recorded session to its end; "
                                f"{option} cannot be added to it")
    if load is not None and not (args.floppy or args.floppy_b or args.hdd):
        _prepare_drives(args)           # last: it writes the new disk directory


def _prepare_drives(args):
    """``--load-snapshot`` without drive options: check the bundle and write
    its disks now, so the machine is built with them (its drives are the
    bundle's, in the --readonly/--cow mode asked for)."""
    from ..snapshot import install as I
    from ..snapshot import open_bundle
    from ..snapshot.progress import terminal_progress
    path = args.load_snapshot
    bundle = open_bundle(path, progress=terminal_progress(os.path.getsize(path)))
    if not bundle.disks:
        args.snapshot_prepared = (bundle, {})
        return
    root = getattr(args, "snapshot_disk_root", None) or path + ".disks"
    progress = terminal_progress(sum(d["size"] for d in bundle.disks))
    refs = I.verify_references(bundle, {}, progress)
    cow = bool(getattr(args, "cow", False) or getattr(args, "cow_dir", None))
    check_new = not os.path.lexists(root)
    try:
        paths = I.materialize(bundle, root, refs, progress,
                              keep_overlay={d["index"] for d in bundle.disks} if cow else ())
    except BaseException:
        if check_new:
            _remove_written(root, [os.path.join(root, f"disk{d['index']}-{d['drive']}.img")
                                   for d in bundle.disks])
        raise
    args.snapshot_written = (root, sorted(paths.values()))
    for d in bundle.disks:
        attr = {"A": "floppy", "B": "floppy_b", "C": "hdd"}.get(d["drive"])
        if attr is None:
            raise PypcError(f"--load-snapshot: drive {d['drive']}: has no command-line "
                            f"option; give the drives yourself")
        setattr(args, attr, paths[d["index"]])
        if attr == "hdd":
            args.hdd_geometry = tuple(d["geometry"])
    args.snapshot_prepared = (bundle, paths)


def _remove_written(root, files):
    """Remove the disk files this run wrote into its new ``root``, then
    ``root`` itself if nothing else is in it."""
    for path in files:
        try:
            if os.path.isfile(path) and not os.path.islink(path):
                os.unlink(path)
        except OSError:
            pass
    try:
        os.rmdir(root)
    except OSError:
        pass


def discard_written(args):
    """The run failed before the bundle was installed: remove the disks
    ``--load-snapshot`` wrote for it (its new FILE.disks directory), so a
    refused bundle leaves nothing behind."""
    written = getattr(args, "snapshot_written", None)
    if written is not None:
        args.snapshot_written = None
        _remove_written(*written)


def before_run(machine, args):
    """Load the snapshot and start recording or replaying (after the
    machine is built, before it runs)."""
    load = getattr(args, "load_snapshot", None)
    prepared = getattr(args, "snapshot_prepared", None)
    if prepared is not None:
        from ..snapshot import install_bundle
        install_bundle(machine, *prepared)
        args.snapshot_written = None          # installed: the disks are the machine's now
    elif load is not None:
        root = getattr(args, "snapshot_disk_root", None) or load + ".disks"
        machine.load(load, disk_root=root if machine.disks else None)
    if getattr(args, "record", None):
        machine.start_recording()


def after_run(machine, args):
    """When the run ends: finish the recording, save the snapshot."""
    if getattr(args, "record", None) and getattr(machine, "_recorder", None) is not None:
        machine.stop_recording(args.record)
    if getattr(args, "save_snapshot", None):
        out = machine.save(args.save_snapshot, getattr(args, "snapshot_disk_mode", "auto"))
        sys.stderr.write(f"pypc: saved {out['path']} ({out['bytes']} bytes, "
                         f"sha256 {out['sha256']})\n")


def run_replay(machine, args):
    """``--replay``: run the recording to its end at the configured speed,
    print the screen, and report whether the end state is the recorded one."""
    from ..machine import CPU_HZ
    timeout = getattr(args, "timeout", None)
    result = machine.replay(getattr(args, "replay_recording", None) or args.replay,
                            max_cycles=int(timeout * CPU_HZ) if timeout else None)
    if machine.video is not None:
        print("\n".join(row.rstrip() for row in machine.screen_text()).rstrip("\n"))
    if result["timed_out"]:
        sys.stderr.write(f"pypc: replay stopped by --timeout {timeout:g} (emulated seconds) "
                         f"at cycle {result['clock']}, before the recording's end at cycle "
                         f"{result['end_clock']}\n")
        return 1
    if result["identical"]:
        sys.stderr.write(f"pypc: replay ended in the recorded state at cycle "
                         f"{result['clock']} (sha256 {result['state_sha256']})\n")
        return 0
    why = result["divergence"] or (f"state sha256 {result['state_sha256']}, recorded "
                                   f"{result['expected_sha256']}")
    sys.stderr.write(f"pypc: replay diverged: {why}\n")
    return 1
