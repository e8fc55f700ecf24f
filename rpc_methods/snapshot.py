"""Method group ``snapshot``: ``machine.snapshot.export`` and
``machine.snapshot.import`` (thin adapters over :mod:`pypc_core.snapshot`).

Both need a paused machine and ``expected_state_revision`` equal to the
current revision; every request field is checked before the archive is read
or written.  Export writes a new file (atomic hard-link publication) and
does not change the revision.  Import checks the whole bundle and the
referenced images before it writes the new ``disk_root`` and installs the
state; it then forgets every operation (their ids are unknown after it),
clears traces and retained video
snapshots, keeps (or, with ``preserve_breakpoints: false``, clears) the
breakpoints, advances the revision by one from where it was (revisions are
never rewound) and stays paused with the stop ``machine_snapshot_restored``.
"""

from pypc_core import hookimpl
from pypc_core.rpc import params as P
from pypc_core.rpc.errors import RpcError, invalid
from pypc_core.rpc.shapes import check_sha256
from pypc_core.snapshot import SnapshotError, export_bundle, import_bundle
from pypc_core.snapshot.bundle import DISK_MODES

from pypc_core.rpc.parts import STATE_IMPORTED


def _rpc_error(exc):
    return RpcError(exc.rpc_code, str(exc), exc.rpc_reason, check=exc.check)


def _path(params, key):
    value = params[key]
    if not isinstance(value, str) or not value or "\0" in value:
        raise invalid(f"{key} must be a non-empty host path", field=key)
    return value


def export(ctl, params):
    ctl.require_paused("machine.snapshot.export")
    ctl.check_revision(params)
    path = _path(params, "path")
    mode = params.get("disk_mode", "auto")
    if mode not in DISK_MODES:
        raise invalid(f"disk_mode must be one of {', '.join(DISK_MODES)}, not {mode!r}",
                      field="disk_mode")
    host = {"pressed_scancodes": sorted(int(c) for c in ctl.pressed)}
    try:
        out = export_bundle(ctl.machine, path, mode, host=host)
    except SnapshotError as exc:
        raise _rpc_error(exc) from None
    return {"path": out["path"], "bytes": out["bytes"], "sha256": out["sha256"],
            "state_revision": ctl.revision}


def import_(ctl, params):
    ctl.require_paused("machine.snapshot.import")
    ctl.check_revision(params)
    path = _path(params, "path")
    disk_root = _path(params, "disk_root")
    if ("sha256" in params) == ("expected_sha256" in params):
        raise invalid("give exactly one archive digest: expected_sha256 (or the legacy "
                      "sha256), not " + ("both" if "sha256" in params else "neither"),
                      field="expected_sha256")
    key = "expected_sha256" if "expected_sha256" in params else "sha256"
    digest = check_sha256(params[key], key)
    preserve = P.boolean(params.get("preserve_breakpoints", True), "preserve_breakpoints")
    references = params.get("references", {})
    for k, v in references.items():
        if not k.isdigit() or len(k) > 1:
            raise invalid(f"references keys are disk indices ('0', '1', ...), not {k!r}",
                          field="references")
        if not isinstance(v, str) or not v or "\0" in v:
            raise invalid(f"references[{k!r}] must be a host path", field="references")
    if ctl.busy():
        raise invalid("an execution operation is still active", "TARGET_RUNNING")
    before = ctl.revision
    try:
        bundle = import_bundle(ctl.machine, path, disk_root, digest, references, preserve)
    except SnapshotError as exc:
        raise _rpc_error(exc) from None
    # revisions are host-session identities: one more than before the import
    ctl.extra_revision = before + 1 - ctl.cpu.ticks
    ctl.parts.event(STATE_IMPORTED, ctl)    # the traces of the state it replaced go
    # transient predicates (run_until) go with their operations; the
    # permanent breakpoints stay unless preserve_breakpoints is false
    table = ctl.machine.breakpoints
    for bp in table.all():
        if bp.internal:
            table.remove(bp.id)
    meta = getattr(ctl, "bp_meta", None)
    if isinstance(meta, dict):
        live = {bp.id for bp in table.all()}
        for key in [k for k in meta if k not in live]:
            del meta[key]
    ctl.pending_step = None
    ctl.active = None
    # operations from before the import are unknown after it (their ids are
    # not reused: the counter goes on)
    ctl.operations.clear()
    held = bundle.host.get("pressed_scancodes", [])
    ctl.pressed = {int(c) for c in held if isinstance(c, int) and 0 <= c < 0x80}
    stop = ctl.make_stop("machine_snapshot_restored")
    ctl.running = False
    ctl.last_stop = stop
    return {"state_revision": ctl.revision, "stop_reason": stop}


@hookimpl
def pypc_rpc_methods():
    return {"machine.snapshot.export": export, "machine.snapshot.import": import_}
