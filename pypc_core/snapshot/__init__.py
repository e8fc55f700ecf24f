"""Machine snapshots: bundles on disk, in-memory checkpoints, and the
recording and replay of host input.

* :func:`export_bundle` / :func:`import_bundle` -- a complete machine as a
  ZIP of JSON plus hashed binary payloads (format: :mod:`.bundle`; the RPC
  methods ``machine.snapshot.export`` / ``machine.snapshot.import`` and
  ``Machine.save`` / ``Machine.load`` use them)
* :mod:`.checkpoint` -- ``Machine.checkpoint()`` / ``Machine.restore(cp)``
* :mod:`.replay` -- ``--record`` / ``--replay`` of host input

Modules: :mod:`.codec` (state trees <-> JSON + payloads), :mod:`.writer`,
:mod:`.reader` (every check), :mod:`.install` (configuration checks, new
disks under ``disk_root``, installation with roll-back), :mod:`.disks`,
:mod:`.progress` (rich progress bar on a terminal).
"""

from .errors import SnapshotError
from .reader import Bundle, open_bundle
from .writer import export_bundle


def import_bundle(machine, path, disk_root=None, expected_sha256=None, references=None,
                  preserve_breakpoints=True, progress=None, check_source=True):
    """Restore the bundle at ``path`` into ``machine`` (which the caller's
    thread runs and which is not running now).

    Order: read and check the archive (``expected_sha256``: the digest the
    caller kept; None skips that guard, for in-process use), check that it
    fits the machine (configuration, emulator source, state shape), check
    the referenced images (``references``: ``{"0": path, ...}``; default the
    saved paths), then write the disks into the new directory ``disk_root``
    and install.  Any refusal before the disks are written leaves no trace;
    a failed disk write can leave a partial new ``disk_root``; the machine is
    changed only by a complete success.  Returns the :class:`Bundle`."""
    from . import install as I
    from .disks import check_new_directory
    if disk_root is not None:
        check_new_directory(disk_root)
    if not isinstance(preserve_breakpoints, bool):
        raise SnapshotError("preserve_breakpoints must be true or false", "preserve_breakpoints")
    bundle = open_bundle(path, expected_sha256, progress)
    I.check_fits(machine, bundle, check_source=check_source)
    refs = I.check_references(bundle, references)
    if bundle.disks and disk_root is None:
        raise SnapshotError("the bundle holds disks: give disk_root, a new directory for "
                            "them", "disk_root")
    ref_paths = I.verify_references(bundle, refs, progress)
    paths = I.materialize(bundle, disk_root, ref_paths, progress,
                          keep_overlay=I.cow_indices(machine, bundle))
    install_bundle(machine, bundle, paths, preserve_breakpoints, check=False)
    return bundle


def install_bundle(machine, bundle, paths, preserve_breakpoints=True, check=True,
                   check_source=True):
    """Install a checked :class:`Bundle` whose disks are already written at
    ``paths`` (``{index: path}``; ``pypc run --load-snapshot`` writes them
    before it builds the machine on them)."""
    from . import install as I
    if check:
        I.check_fits(machine, bundle, check_source=check_source)
    new_disks = I.open_disks(machine, bundle, paths)
    I.install(machine, bundle, new_disks)
    if not preserve_breakpoints:
        machine.breakpoints.clear()
    trace = getattr(machine, "trace", None)
    if trace is not None and trace.active:
        trace.stop()


__all__ = ["SnapshotError", "Bundle", "open_bundle", "export_bundle", "import_bundle",
           "install_bundle"]
