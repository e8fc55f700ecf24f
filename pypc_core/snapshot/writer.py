"""Writing a bundle: the machine's state, its disks by the chosen disk
mode, published atomically (a hard link from a completed temporary file in
the destination's directory, so a failed export leaves no archive and an
existing file is never replaced)."""

import hashlib
import json
import os
import stat
import tempfile
import zipfile

from ..version import __version__
from . import bundle as B
from . import codec
from .disks import base_chunks, encode_overlay, is_host_mount, overlay_of
from .errors import SnapshotError


def _info(name):
    """A member header: a regular file, fixed time (equal machines give
    equal bundles), deflated."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    info._compresslevel = 1         # fast: RAM and disks are mostly zeros or incompressible
    if hasattr(info, "compress_level"):
        info.compress_level = 1
    info.external_attr = (stat.S_IFREG | 0o644) << 16
    return info


def check_destination(path):
    if not isinstance(path, str) or not path:
        raise SnapshotError("path must be a non-empty file name", "path")
    if "\0" in path:
        raise SnapshotError("path contains a NUL character", "path")
    if os.path.lexists(path):
        raise SnapshotError(f"{path!r} already exists; a snapshot is always written to a "
                            f"new file", "path_exists", "guard")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise SnapshotError(f"{path!r}: the directory {parent!r} does not exist", "path")
    return parent


def plan_disks(machine, disk_mode):
    """``[(index, drive, disk, storage)]`` for ``disk_mode``; refusals
    before anything is read."""
    if disk_mode not in B.DISK_MODES:
        raise SnapshotError(f"disk_mode must be one of {', '.join(B.DISK_MODES)}, not "
                            f"{disk_mode!r}", "disk_mode")
    drives = sorted(machine.disks)
    if disk_mode == "reference" and machine.dos is not None and machine.dos.config.drives:
        raise SnapshotError("disk_mode reference refuses host mounts: the built-in DOS "
                            "serves host folders (use embed or reference-files)",
                            "host_mount", "unsupported")
    for drive in drives:
        if is_host_mount(machine.disks[drive]):
            letter = B.DRIVE_LETTERS.get(drive, f"{drive:02X}")
            raise SnapshotError(f"drive {letter}: is a host directory presented as a disk; "
                                f"machine bundles do not capture host-directory disks (their "
                                f"files and write-back state)", "host_mount", "unsupported")
    total = sum(machine.disks[d].size for d in drives)
    plan = []
    for index, drive in enumerate(drives):
        disk = machine.disks[drive]
        letter = B.DRIVE_LETTERS.get(drive, f"{drive:02X}")
        if disk_mode == "embed":
            storage = "embedded"
        elif disk_mode == "auto":
            storage = "embedded" if total <= B.AUTO_EMBED_LIMIT or disk.path is None \
                else "reference"
        else:
            if disk.path is None:
                if disk_mode == "reference":
                    raise SnapshotError(f"drive {letter}: is an in-memory image with no file "
                                        f"to reference (use embed)", "reference", "unsupported")
                storage = "embedded"
            else:
                storage = "reference"
        plan.append((index, drive, disk, storage))
    embedded = sum(d.size for _, _, d, s in plan if s == "embedded")
    if embedded > B.MAX_TOTAL:
        raise SnapshotError(f"the embedded disks need {embedded} bytes; a bundle holds at "
                            f"most {B.MAX_TOTAL} (use disk_mode reference)", "size", "limit")
    return plan


def breakpoint_list(machine):
    out = []
    for bp in machine.breakpoints.list():
        try:
            out.append(bp.to_dict())
        except Exception:           # an exotic breakpoint: record its kind at least
            out.append({"id": bp.id, "kind": bp.kind})
    return out


def export_bundle(machine, path, disk_mode="auto", *, host=None, progress=None):
    """Write ``machine`` (paused: the caller's thread runs it) to the new
    file ``path``.  Returns ``{"path", "bytes", "sha256"}``.

    ``host``: host-side input state to keep with the machine (the RPC's
    held keys).  ``progress``: an object with ``start(total, what)``,
    ``advance(n)`` and ``finish()`` (see :mod:`.progress`)."""
    parent = check_destination(path)
    plan = plan_disks(machine, disk_mode)
    state = machine.get_state()
    disk_states = state.pop("disks")
    try:
        tree, payloads = codec.encode({"machine": state, "breakpoints": breakpoint_list(machine),
                                       "host": host or {}})
    except codec.EncodeError as exc:
        raise SnapshotError(f"the machine state cannot be saved: {exc}", "state") from None
    state_json = json.dumps(tree, separators=(",", ":"), allow_nan=False).encode()
    if len(state_json) > B.MAX_JSON:
        raise SnapshotError(f"state.json would be {len(state_json)} bytes; the limit is "
                            f"{B.MAX_JSON}", "json_size", "limit")
    payload_bytes = sum(len(p) for p in payloads.values())
    embedded = sum(d.size for _, _, d, s in plan if s == "embedded")
    if payload_bytes + embedded + len(state_json) > B.MAX_TOTAL:
        raise SnapshotError("the bundle would hold more than 1 GiB", "size", "limit")

    config = B.configuration(machine)
    manifest = {
        "format": B.FORMAT, "version": B.bundle_version(config), "layout": B.LAYOUT,
        "created_by": f"pypc {__version__}",
        "emulator": {"source_sha256": B.source_sha256(machine), "pypc_version": __version__},
        "configuration": config, "disk_mode": disk_mode, "disks": [], "members": {},
        "clock": machine.clock(), "instructions": int(machine.cpu.instructions),
    }
    total = payload_bytes + sum(d.size for _, _, d, _ in plan)
    if progress is not None:
        progress.start(total, f"saving {os.path.basename(path)}")
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".partial",
                               dir=parent)
    try:
        with os.fdopen(fd, "w+b") as fh:
            with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_DEFLATED,
                                 compresslevel=1, allowZip64=True) as zf:
                members = manifest["members"]
                for digest, data in sorted(payloads.items()):
                    name = B.payload_name(digest)
                    zf.writestr(_info(name), data)
                    members[name] = {"size": len(data), "sha256": digest}
                    if progress is not None:
                        progress.advance(len(data))
                for index, drive, disk, storage in plan:
                    manifest["disks"].append(
                        _write_disk(zf, index, drive, disk, storage, disk_states[drive],
                                    members, progress))
                zf.writestr(_info(B.STATE), state_json)
                members[B.STATE] = {"size": len(state_json),
                                    "sha256": hashlib.sha256(state_json).hexdigest()}
                manifest_json = json.dumps(manifest, indent=1, allow_nan=False).encode()
                zf.writestr(_info(B.MANIFEST), manifest_json)
            fh.flush()
            os.fsync(fh.fileno())
            fh.seek(0)
            h = hashlib.sha256()
            size = 0
            while True:
                block = fh.read(1 << 20)
                if not block:
                    break
                h.update(block)
                size += len(block)
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise SnapshotError(f"{path!r} appeared while the snapshot was written; "
                                f"nothing was replaced", "path_exists", "guard") from None
        except OSError as exc:
            raise SnapshotError(f"{path!r}: cannot publish the snapshot (the destination "
                                f"must support hard links): {exc.strerror or exc}",
                                "host_io", "io") from None
    except OSError as exc:
        raise SnapshotError(f"{path!r}: writing the snapshot failed: {exc.strerror or exc}",
                            "host_io", "io") from None
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if progress is not None:
            progress.finish()
    return {"path": path, "bytes": size, "sha256": h.hexdigest()}


def _write_disk(zf, index, drive, disk, storage, disk_state, members, progress):
    """The image (embedded, or size and SHA-256 of its file) and, apart,
    the copy-on-write overlay: a restored drive gets both back as they were."""
    overlay = overlay_of(disk)
    entry = {"index": index, "drive": B.DRIVE_LETTERS.get(drive, f"{drive:02X}"),
             "kind": disk.kind, "mode": disk.mode, "size": disk.size,
             "geometry": list(disk.geometry), "storage": storage,
             "media_changed": bool(disk_state.get("media_changed", False)),
             "overlay_sectors": len(overlay)}
    h = hashlib.sha256()
    if storage == "embedded":
        name = B.disk_image_member(index)
        with zf.open(_info(name), "w", force_zip64=True) as out:
            for chunk in base_chunks(disk):
                out.write(chunk)
                h.update(chunk)
                if progress is not None:
                    progress.advance(len(chunk))
        entry["sha256"] = h.hexdigest()
        members[name] = {"size": disk.size, "sha256": entry["sha256"]}
    else:
        for chunk in base_chunks(disk):
            h.update(chunk)
            if progress is not None:
                progress.advance(len(chunk))
        entry["sha256"] = h.hexdigest()
        entry["source_path"] = os.path.abspath(disk.path)
    if overlay:
        name = B.disk_overlay_member(index)
        data = encode_overlay(overlay)
        zf.writestr(_info(name), data)
        members[name] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    return entry
