"""Putting a checked bundle into a live machine.

:func:`check_fits` refuses a bundle of another configuration or emulator,
and a state whose shape differs from the live machine's (every section,
device and field, each value of the type the live machine holds, every
array of the same dtype and shape).  :func:`verify_references` checks the
referenced images.  Only then does :func:`materialize` create ``disk_root``
and write the new disks, and :func:`install` swap them in and restore the
state; if a device still refuses its state, the machine's previous state and
disks are put back before the error is raised.
"""

import base64
import collections
import hashlib
import os

import numpy as np

from . import bundle as B
from .disks import CHUNK, check_new_directory, hash_file, new_file, write_all
from .errors import SnapshotError

#: sections of ``Machine.get_state()`` whose keys must match exactly, and
#: how deep (0: the section's own keys, 1: also each entry's keys)
_EXACT_DEPTH = {"cpu": 0, "devices": 1, "bios": 0, "dos": 0}


def check_fits(machine, bundle, check_source=True):
    """Refuse a bundle that does not belong to ``machine``."""
    live = B.configuration(machine)
    diffs = B.mismatches(bundle.configuration, live)
    if diffs:
        raise SnapshotError("the bundle is of another machine configuration: "
                            + "; ".join(diffs), "configuration", "config")
    if check_source:
        mine = B.source_sha256(machine)
        theirs = bundle.manifest["emulator"]["source_sha256"]
        if mine != theirs:
            raise SnapshotError(f"the bundle was made by other emulator code (source SHA-256 "
                                f"{theirs[:12]}..., this pypc {mine[:12]}...)",
                                "emulator_source", "config")
    template = machine.get_state()
    template.pop("disks")
    check_shape(bundle.state, template)
    check_dos(machine, bundle.state.get("dos"))


def check_dos(machine, dos_state):
    """A bundle's built-in DOS state goes only into a machine running the
    built-in DOS, and only when its drives, folders and open files are
    found again (by drive and DOS path) in this machine's mounts."""
    if (dos_state is None) != (machine.dos is None):
        raise SnapshotError("the bundle " + ("holds built-in DOS state; this machine runs no "
                                             "built-in DOS" if machine.dos is None else
                                             "has no built-in DOS state; this machine runs "
                                             "the built-in DOS"), "configuration", "config")
    if machine.dos is None:
        return
    from ..dos.errors import DosStateError
    try:
        machine.dos.discard_prepared(machine.dos.prepare_state(dos_state))
    except DosStateError as exc:
        raise SnapshotError(f"the bundle's built-in DOS does not fit this machine: {exc}; "
                            f"nothing was restored", "dos_state", "guard") from None


def _kind(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, np.ndarray):
        return "array"
    if isinstance(v, (bytes, bytearray)):
        return "bytes"
    if isinstance(v, dict):
        return "object"
    if isinstance(v, list):
        return "list"
    if isinstance(v, tuple):
        return "tuple"
    if isinstance(v, collections.deque):
        return "deque"
    if isinstance(v, (set, frozenset)):
        return "set"
    return type(v).__name__


def _compatible(value, like):
    a, b = _kind(value), _kind(like)
    if b == "null" or a == "null":
        return True                 # optional fields (a latch, a pending edge)
    if b == "number":
        return a in ("number", "integer")
    return a == b


def check_shape(value, like, path="state", exact=None, depth=0):
    """``value`` (from a bundle) must look like ``like`` (the live state)."""
    if not _compatible(value, like):
        raise SnapshotError(f"{path}: a {_kind(value)} where the machine holds a "
                            f"{_kind(like)}", "state_type")
    if value is None or like is None:
        return
    if _kind(value) == "integer" and not -(1 << 63) <= value < (1 << 64):
        raise SnapshotError(f"{path}: {value} is out of any register's range", "state_range")
    if isinstance(like, np.ndarray):
        if value.dtype != like.dtype or value.shape != like.shape:
            raise SnapshotError(f"{path}: an array of {value.dtype}{list(value.shape)} where "
                                f"the machine holds {like.dtype}{list(like.shape)}",
                                "state_type")
        return
    if isinstance(like, dict):
        if exact is None and depth == 0:
            if set(value) != set(like):
                raise SnapshotError(f"{path}: sections {sorted(map(str, value))}, the machine "
                                    f"has {sorted(map(str, like))}", "state_shape")
            for k in like:
                check_shape(value[k], like[k], f"{path}.{k}", _EXACT_DEPTH.get(k), depth + 1)
            return
        if exact is not None and exact >= 0:
            if set(value) != set(like):
                missing = sorted(map(str, set(like) - set(value)))
                extra = sorted(map(str, set(value) - set(like)))
                raise SnapshotError(f"{path}: fields differ (missing {missing}, unknown "
                                    f"{extra})", "state_shape")
        for k, v in value.items():
            if k in like:
                check_shape(v, like[k], f"{path}.{k}",
                            None if exact is None or exact <= 0 else exact - 1, depth + 1)
        return
    if _kind(like) in ("list", "tuple", "deque") and len(like):
        for i, v in enumerate(value):
            check_shape(v, like[min(i, len(like) - 1)], f"{path}[{i}]", None, depth + 1)


def check_references(bundle, references):
    """``{index: path}`` of the images the referenced disks come from
    (``references`` maps ``"0"``/``"1"``... to paths; others default to
    the saved source path).  Checked: known index, regular file, size and
    SHA-256 as saved."""
    references = references or {}
    if not isinstance(references, dict):
        raise SnapshotError("references must map disk indices to image paths", "references")
    by_index = {str(d["index"]): d for d in bundle.disks}
    for key, value in references.items():
        if key not in by_index:
            raise SnapshotError(f"references[{key!r}]: the bundle has no disk {key} "
                                f"(it has {sorted(by_index) or 'none'})", "references")
        if by_index[key]["storage"] != "reference":
            raise SnapshotError(f"references[{key!r}]: disk {key} is embedded, not referenced",
                                "references")
        if not isinstance(value, str) or not value or "\0" in value:
            raise SnapshotError(f"references[{key!r}] must be a file name", "references")
    return {int(k): v for k, v in references.items()}


def verify_references(bundle, references, progress=None):
    paths = {}
    refs = [d for d in bundle.disks if d["storage"] == "reference"]
    if progress is not None and refs:
        progress.start(sum(d["size"] for d in refs), "checking referenced disks")
    try:
        for d in refs:
            path = references.get(d["index"], d["source_path"])
            size, digest = hash_file(path, f"disk {d['index']} reference", progress)
            if size != d["size"] or digest != d["sha256"]:
                raise SnapshotError(f"disk {d['index']} reference {path!r} does not match the "
                                    f"saved image (size {size} vs {d['size']}, SHA-256 "
                                    f"{digest[:12]}... vs {d['sha256'][:12]}...)",
                                    "reference_sha256", "guard")
            paths[d["index"]] = path
    finally:
        if progress is not None and refs:
            progress.finish()
    return paths


def materialize(bundle, disk_root, ref_paths, progress=None, keep_overlay=()):
    """Create ``disk_root`` and write every disk there; returns ``{index:
    path}``.  A drive's copy-on-write sectors are written into its new image
    unless its index is in ``keep_overlay`` (a live copy-on-write drive gets
    them back as its overlay).  A failure here can leave a partial new
    directory (never a changed machine or a changed existing file)."""
    if not bundle.disks:
        return {}
    check_new_directory(disk_root)
    try:
        os.mkdir(disk_root, 0o755)
    except OSError as exc:
        raise SnapshotError(f"disk_root {disk_root!r}: cannot create: {exc.strerror or exc}",
                            "disk_write", "io") from None
    out = {}
    if progress is not None:
        progress.start(sum(d["size"] for d in bundle.disks), "writing disks")
    try:
        for d in bundle.disks:
            i = d["index"]
            path = os.path.join(disk_root, f"disk{i}-{d['drive']}.img")
            fd = new_file(path)
            try:
                if d["storage"] == "embedded":
                    data = bundle.disk_data[i]
                    for off in range(0, len(data), CHUNK):
                        write_all(fd, data[off:off + CHUNK], path)
                        if progress is not None:
                            progress.advance(min(CHUNK, len(data) - off))
                else:
                    _copy_reference(fd, path, ref_paths[i], d, progress)
                if i not in keep_overlay:
                    for lba, sec in sorted(bundle.overlays.get(i, {}).items()):
                        try:
                            os.pwrite(fd, sec, lba * 512)
                        except OSError as exc:
                            raise SnapshotError(f"{path}: write failed: "
                                                f"{exc.strerror or exc}", "disk_write",
                                                "io") from None
                os.fsync(fd)
            finally:
                os.close(fd)
            out[i] = path
    finally:
        if progress is not None:
            progress.finish()
    return out


def _copy_reference(fd, path, source, d, progress):
    """Copy the referenced image, hashing it again: an image changed since
    it was verified is refused (the new file stays in the new directory)."""
    from .disks import open_regular
    src, size = open_regular(source, f"disk {d['index']} reference")
    h = hashlib.sha256()
    try:
        while True:
            try:
                block = os.read(src, CHUNK)
            except OSError as exc:
                raise SnapshotError(f"{source!r}: read failed: {exc.strerror or exc}",
                                    "host_io", "io") from None
            if not block:
                break
            h.update(block)
            write_all(fd, block, path)
            if progress is not None:
                progress.advance(len(block))
    finally:
        os.close(src)
    if h.hexdigest() != d["sha256"]:
        raise SnapshotError(f"disk {d['index']} reference {source!r} changed while it was "
                            f"copied", "reference_sha256", "guard")


def open_disks(machine, bundle, paths):
    """New DiskImages on the materialized files, in the live drives' modes
    (a copy-on-write drive keeps its overlay in memory only: nothing is
    written outside ``disk_root``)."""
    from ..storage import DiskImage, DiskImageError
    new = {}
    try:
        for d in bundle.disks:
            drive = B.LETTER_DRIVES[d["drive"]]
            live = machine.disks[drive]
            if live.path is not None and os.path.abspath(live.path) == \
                    os.path.abspath(paths[d["index"]]):
                new[drive] = live       # built on the restored file already (pypc run)
                continue
            geometry = tuple(d["geometry"]) if d["kind"] == "hdd" else None
            new[drive] = DiskImage(paths[d["index"]], kind=d["kind"], mode=live.mode,
                                   geometry=geometry)
            if list(new[drive].geometry) != d["geometry"]:
                raise SnapshotError(f"disk {d['index']}: the restored image has geometry "
                                    f"{new[drive].geometry}, the bundle says {d['geometry']}",
                                    "geometry")
    except DiskImageError as exc:
        _close_new(machine, new)
        raise SnapshotError(f"a restored disk cannot be opened: {exc}", "disk_open",
                            "io") from None
    except BaseException:
        _close_new(machine, new)
        raise
    return new


def _close_new(machine, disks, old=None):
    live = list((old if old is not None else machine.disks).values())
    for disk in disks.values():
        if not any(disk is o for o in live):
            disk.close()


def install(machine, bundle, new_disks):
    """Swap in ``new_disks`` and restore the bundle's state; on any failure
    the machine gets its previous state and disks back."""
    backup = machine.get_state()
    old_disks = dict(machine.disks)
    state = dict(bundle.state)
    state["disks"] = {}
    for d in bundle.disks:
        drive = B.LETTER_DRIVES[d["drive"]]
        overlay = bundle.overlays.get(d["index"], {}) if new_disks[drive].mode == "cow" else {}
        state["disks"][drive] = {
            "media_changed": d["media_changed"],
            "overlay": {str(lba): base64.b64encode(sec).decode("ascii")
                        for lba, sec in sorted(overlay.items())}}
    host_words = keep_host_words(machine)
    try:
        machine.disks.clear()
        machine.disks.update(new_disks)
        machine.set_state(state)
        put_host_words(machine, host_words)
    except BaseException as exc:
        machine.disks.clear()
        machine.disks.update(old_disks)
        machine.set_state(backup)
        _close_new(machine, new_disks, old_disks)
        if isinstance(exc, SnapshotError):
            raise
        if isinstance(exc, Exception):
            raise SnapshotError(f"the machine refused the bundle's state ({exc}); it is "
                                f"unchanged", "state") from None
        raise
    for disk in old_disks.values():
        if any(disk is n for n in new_disks.values()):
            continue
        try:
            disk.close()
        except Exception:
            pass
    _update_config_paths(machine, new_disks)
    machine.scheduler.reset()
    machine.last_stop = None
    machine.note("info", f"state restored from a snapshot bundle (cycle {machine.clock()})")


def _host_indices():
    from ..cpu import state as S
    return ([S.C_RECORD, S.C_EFFECTS, S.C_TRACE, S.C_TRACE_N, S.C_STEP, S.C_TRAP_ENABLE,
             S.C_IOW_N] + list(range(S.C_INT_MASK, S.C_INT_MASK + 4))
            + list(range(S.C_IOW, S.C_IOW + 8)))


def keep_host_words(machine):
    """The CPU control words that belong to this host session, not to the
    guest: trace and effect recording, breakpoint masks, port watches, the
    firmware-trap switch.  A restored state keeps the live ones."""
    ctl = machine.cpu.ctl
    return {i: int(ctl[i]) for i in _host_indices()}


def put_host_words(machine, words):
    from ..cpu import state as S
    ctl = machine.cpu.ctl
    for i, v in words.items():
        ctl[i] = v
    ctl[S.C_SKIP_BP] = 0
    ctl[S.C_SKIP_INT] = 0
    machine.breakpoints.rearm()


def _update_config_paths(machine, new_disks):
    cfg = machine.config
    for drive, attr in ((0x00, "floppy_a"), (0x01, "floppy_b"), (0x80, "hdd")):
        if drive in new_disks:
            try:
                setattr(cfg, attr, new_disks[drive].path)
            except Exception:
                pass


def cow_indices(machine, bundle):
    """Indices of the bundle's disks whose live drive is copy-on-write."""
    return {d["index"] for d in bundle.disks
            if machine.disks[B.LETTER_DRIVES[d["drive"]]].mode == "cow"}
