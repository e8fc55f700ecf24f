"""Reading a bundle: every check before anything is used.

:func:`open_bundle` reads the archive into memory (it is at most
:data:`~.bundle.MAX_ARCHIVE` bytes), checks its SHA-256 against the digest
the caller kept, and then checks the ZIP structure (member names against
the whitelist, no duplicates, no symlinks or directories, no encryption,
declared sizes within the limits), reads every member through a bounded
reader (a member that inflates past its declared size is a zip bomb and is
refused at that byte), checks every member's SHA-256 against the manifest,
validates the manifest, and decodes the state.  The result is a
:class:`Bundle` that has touched nothing outside its own memory.
"""

import functools
import hashlib
import io
import json
import os
import stat
import zipfile
import zlib


from . import bundle as B
from . import codec
from .disks import CHUNK, decode_overlay, open_regular
from .errors import SnapshotError


class Bundle:
    """A validated bundle: ``manifest``, ``state`` (the decoded machine
    state without disks), ``breakpoints``, ``host``, ``disks`` (manifest
    entries) and the embedded ``disk_data`` / ``overlays`` by index."""

    def __init__(self, path, sha256, manifest, state, breakpoints, host, disk_data, overlays):
        self.path = path
        self.sha256 = sha256
        self.manifest = manifest
        self.state = state
        self.breakpoints = breakpoints
        self.host = host
        self.disks = manifest["disks"]
        self.disk_data = disk_data
        self.overlays = overlays

    @property
    def version(self):
        return self.manifest["version"]

    @property
    def configuration(self):
        return self.manifest["configuration"]


def _reject_constant(name):
    raise ValueError(f"{name} is not JSON")


def _load_json(data, name):
    try:
        obj = json.loads(data.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise SnapshotError(f"{name} is not JSON: {exc}", "json") from None
    except RecursionError:
        raise SnapshotError(f"{name} is nested too deeply", "json") from None
    if not isinstance(obj, dict):
        raise SnapshotError(f"{name} must hold a JSON object", "json")
    return obj


def read_archive(path, expected_sha256=None, progress=None):
    """The archive's bytes and SHA-256; with ``expected_sha256`` a
    mismatch is refused."""
    if not isinstance(path, str) or not path or "\0" in path:
        raise SnapshotError("path must be a non-empty file name", "path")
    fd, size = open_regular(path, "snapshot")
    try:
        if size > B.MAX_ARCHIVE:
            raise SnapshotError(f"{path!r} is {size} bytes; a bundle is at most "
                                f"{B.MAX_ARCHIVE}", "size", "limit")
        if progress is not None:
            progress.start(size, f"reading {os.path.basename(path)}")
        parts, got = [], 0
        while True:
            try:
                block = os.read(fd, CHUNK)
            except OSError as exc:
                raise SnapshotError(f"{path!r}: read failed: {exc.strerror or exc}",
                                    "host_io", "io") from None
            if not block:
                break
            got += len(block)
            if got > B.MAX_ARCHIVE:
                raise SnapshotError(f"{path!r} grew past {B.MAX_ARCHIVE} bytes while read",
                                    "size", "limit")
            parts.append(block)
            if progress is not None:
                progress.advance(len(block))
    finally:
        os.close(fd)
        if progress is not None:
            progress.finish()
    data = b"".join(parts)
    digest = hashlib.sha256(data).hexdigest()
    if expected_sha256 is not None and digest != expected_sha256:
        raise SnapshotError(f"{path!r} has SHA-256 {digest}, not the expected "
                            f"{expected_sha256}; nothing was restored", "archive_sha256", "guard")
    return data, digest


def _members(zf):
    infos = zf.infolist()
    seen = set()
    total = 0
    for info in infos:
        name = info.filename
        if name in seen:
            raise SnapshotError(f"the bundle holds {name!r} twice", "duplicate_member")
        seen.add(name)
        if not B.MEMBER_NAME.match(name):
            raise SnapshotError(f"the bundle holds {name!r}, which is not a bundle member "
                                f"(absolute paths, '..' and other names are refused)",
                                "member_name")
        mode = info.external_attr >> 16
        if stat.S_IFMT(mode) not in (0, stat.S_IFREG):
            kind = "a symlink" if stat.S_ISLNK(mode) else "not a regular file"
            raise SnapshotError(f"bundle member {name!r} is {kind}", "member_type")
        if info.is_dir():
            raise SnapshotError(f"bundle member {name!r} is a directory", "member_type")
        if info.flag_bits & 0x1:
            raise SnapshotError(f"bundle member {name!r} is encrypted", "member_type")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise SnapshotError(f"bundle member {name!r} uses compression method "
                                f"{info.compress_type} (only stored and deflated)",
                                "member_type")
        if name in (B.MANIFEST, B.STATE) and info.file_size > B.MAX_JSON:
            raise SnapshotError(f"{name} is {info.file_size} bytes; the limit is {B.MAX_JSON}",
                                "json_size", "limit")
        total += info.file_size
        if total > B.MAX_TOTAL:
            raise SnapshotError(f"the bundle's members hold more than {B.MAX_TOTAL} bytes",
                                "size", "limit")
    for need in (B.MANIFEST, B.STATE):
        if need not in seen:
            raise SnapshotError(f"the bundle has no {need}", "missing_member")
    return {info.filename: info for info in infos}


def _read_member(zf, info, limit):
    """A member's bytes, never more than ``limit`` (and its declared size)."""
    cap = min(limit, info.file_size)
    out = bytearray()
    try:
        with zf.open(info) as fh:
            while True:
                block = fh.read(min(CHUNK, cap + 1 - len(out)) or 1)
                if not block:
                    break
                out += block
                if len(out) > cap:
                    raise SnapshotError(
                        f"bundle member {info.filename!r} inflates past its declared "
                        f"{info.file_size} bytes (a zip bomb?)", "member_size", "limit")
    except SnapshotError:
        raise
    except (zipfile.BadZipFile, EOFError, zlib.error, ValueError, OSError) as exc:
        raise SnapshotError(f"bundle member {info.filename!r} is truncated or corrupt: "
                            f"{exc}", "member_corrupt") from None
    if len(out) != info.file_size:
        raise SnapshotError(f"bundle member {info.filename!r} holds {len(out)} bytes, its "
                            f"header says {info.file_size}", "member_corrupt")
    return bytes(out)


@functools.lru_cache(maxsize=1)
def _manifest_validator():
    """The manifest's validator, built when a bundle is first read (so a
    process that reads none, a batch worker, never imports jsonschema)."""
    import jsonschema
    return jsonschema.Draft202012Validator(B.MANIFEST_SCHEMA)


def _check_manifest(manifest):
    errors = sorted(_manifest_validator().iter_errors(manifest), key=lambda e: list(e.path))
    if errors:
        err = errors[0]
        where = "/".join(str(p) for p in err.absolute_path) or "manifest"
        raise SnapshotError(f"manifest.json: {where}: {err.message}", "manifest")
    version, layout = manifest["version"], manifest["layout"]
    if version not in B.VERSIONS:
        raise SnapshotError(f"bundle version {version} is not supported (this pypc reads "
                            f"versions {B.VERSIONS[0]}-{B.VERSIONS[-1]})", "version",
                            "unsupported")
    if layout != B.LAYOUT:
        raise SnapshotError(f"bundle layout {layout} is not supported (this pypc reads "
                            f"layout {B.LAYOUT})", "layout", "unsupported")
    config = manifest["configuration"]
    if version == 2 or config["dos_mailbox"]:
        raise SnapshotError("bundle version 2 holds a DOS mailbox window; this pypc has "
                            "no --dos-mailbox", "version", "unsupported")
    want = B.bundle_version(config)
    if version != want:
        raise SnapshotError(f"bundle version {version} does not match its configuration "
                            f"(which makes it version {want})", "version")
    indexes = [d["index"] for d in manifest["disks"]]
    if indexes != list(range(len(indexes))):
        raise SnapshotError("manifest disks must be numbered 0, 1, ... in order", "manifest")
    drives = [{"drive": d["drive"], "kind": d["kind"]} for d in manifest["disks"]]
    if drives != config["drives"]:
        raise SnapshotError("manifest disks do not match the configuration's drives",
                            "manifest")
    for d in manifest["disks"]:
        if d["size"] % 512:
            raise SnapshotError(f"disk {d['index']}: size {d['size']} is not whole sectors",
                                "manifest")
        if d["storage"] == "reference" and "source_path" not in d:
            raise SnapshotError(f"disk {d['index']}: a reference needs source_path", "manifest")


def open_bundle(path, expected_sha256=None, progress=None):
    """Read and check the bundle at ``path``; returns a :class:`Bundle`."""
    data, digest = read_archive(path, expected_sha256, progress)
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError) as exc:
        raise SnapshotError(f"{path!r} is not a ZIP bundle: {exc}", "archive") from None
    with zf:
        infos = _members(zf)
        manifest = _load_json(_read_member(zf, infos[B.MANIFEST], B.MAX_JSON), B.MANIFEST)
        _check_manifest(manifest)
        listed = manifest["members"]
        present = set(infos) - {B.MANIFEST}
        if set(listed) != present:
            extra = sorted(present - set(listed))
            missing = sorted(set(listed) - present)
            raise SnapshotError("the manifest and the archive disagree: "
                                + (f"unlisted members {extra} " if extra else "")
                                + (f"missing members {missing}" if missing else ""),
                                "missing_member")
        if progress is not None:
            progress.start(sum(v["size"] for v in listed.values()), "checking the bundle")
        blobs = {}
        try:
            for name in sorted(listed):
                info = infos[name]
                want = listed[name]
                if info.file_size != want["size"]:
                    raise SnapshotError(f"bundle member {name!r} is {info.file_size} bytes, "
                                        f"the manifest says {want['size']}", "member_size")
                limit = B.MAX_JSON if name == B.STATE else B.MAX_TOTAL
                blob = _read_member(zf, info, limit)
                got = hashlib.sha256(blob).hexdigest()
                if got != want["sha256"]:
                    raise SnapshotError(f"bundle member {name!r} has SHA-256 {got}, the "
                                        f"manifest says {want['sha256']}", "member_sha256")
                if name.startswith("payload/") and name != B.payload_name(got):
                    raise SnapshotError(f"payload {name!r} is not named by its hash",
                                        "member_sha256")
                blobs[name] = blob
                if progress is not None:
                    progress.advance(len(blob))
        finally:
            if progress is not None:
                progress.finish()
    tree = _load_json(blobs.pop(B.STATE), B.STATE)
    if set(tree) != set(B.STATE_KEYS):
        raise SnapshotError(f"state.json must hold exactly {list(B.STATE_KEYS)}", "state")
    payloads = {name[len("payload/"):-len(".bin")]: blob
                for name, blob in blobs.items() if name.startswith("payload/")}
    decoder = codec.Decoder(payloads)
    try:
        decoded = decoder.decode(tree)
    except codec.DecodeError as exc:
        raise SnapshotError(f"state.json: {exc}", "state") from None
    if set(payloads) - decoder.used:
        raise SnapshotError("the bundle holds payloads its state does not use", "state")
    state = decoded["machine"]
    if not isinstance(state, dict):
        raise SnapshotError("state.json: machine must be an object", "state")
    if not isinstance(decoded["breakpoints"], list) or not isinstance(decoded["host"], dict):
        raise SnapshotError("state.json: breakpoints must be a list and host an object",
                            "state")
    disk_data, overlays = {}, {}
    for d in manifest["disks"]:
        i = d["index"]
        img, ovl = B.disk_image_member(i), B.disk_overlay_member(i)
        if d["storage"] == "embedded":
            if img not in blobs:
                raise SnapshotError(f"disk {i}: an embedded disk needs {img}", "missing_member")
            if len(blobs[img]) != d["size"] or \
                    hashlib.sha256(blobs[img]).hexdigest() != d["sha256"]:
                raise SnapshotError(f"disk {i}: {img} does not match the manifest's size and "
                                    f"SHA-256", "member_sha256")
            disk_data[i] = blobs.pop(img)
        elif img in blobs:
            raise SnapshotError(f"disk {i}: a referenced disk has no {img}", "manifest")
        if d.get("overlay_sectors", 0):
            if ovl not in blobs:
                raise SnapshotError(f"disk {i}: {ovl} is missing", "missing_member")
            overlays[i] = decode_overlay(blobs.pop(ovl), d["size"] // 512, ovl)
            if len(overlays[i]) != d["overlay_sectors"]:
                raise SnapshotError(f"disk {i}: the overlay holds {len(overlays[i])} "
                                    f"sectors, the manifest says {d['overlay_sectors']}",
                                    "overlay")
        elif ovl in blobs:
            raise SnapshotError(f"disk {i}: unexpected {ovl}", "manifest")
    leftovers = [n for n in blobs if not n.startswith("payload/")]
    if leftovers:
        raise SnapshotError(f"members {leftovers} belong to no disk", "manifest")
    return Bundle(path, digest, manifest, state, decoded["breakpoints"], decoded["host"],
                  disk_data, overlays)
