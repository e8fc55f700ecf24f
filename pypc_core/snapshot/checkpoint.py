"""In-memory checkpoints: ``Machine.checkpoint()`` / ``Machine.restore(cp)``.

A checkpoint is ``Machine.get_state()`` (CPU, memory, devices, copy-on-write
overlays, firmware) plus, for every drive written in place (``rw``) and every
writable disk held in memory (a host directory's FAT image), a copy of the
image, so restoring also takes back what the guest wrote to a disk since.  Restoring keeps the host session's debugger words (breakpoints,
traces), like a bundle import."""

import copy

import numpy as np

from . import bundle as B
from .disks import guest_chunks
from .errors import SnapshotError
from .install import keep_host_words, put_host_words


class Checkpoint:
    __slots__ = ("state", "disk_images", "configuration", "clock")

    def __init__(self, state, disk_images, configuration, clock):
        self.state = state
        self.disk_images = disk_images
        self.configuration = configuration
        self.clock = clock

    def __repr__(self):
        return f"<Checkpoint at cycle {self.clock}>"


def _copied(disk):
    """Drives whose bytes a checkpoint copies: those written in place, and
    disks held in memory (a host directory's FAT image) unless read-only."""
    return disk.mode == "rw" or (not hasattr(disk, "_raw_read") and disk.mode != "readonly")


def take(machine):
    images = {}
    for drive, disk in machine.disks.items():
        if _copied(disk):
            images[drive] = b"".join(guest_chunks(disk))
    return Checkpoint(machine.get_state(), images, B.configuration(machine), machine.clock())


def restore(machine, cp):
    if not isinstance(cp, Checkpoint):
        raise SnapshotError(f"restore needs a Checkpoint from Machine.checkpoint(), not "
                            f"{type(cp).__name__}", "checkpoint")
    diffs = B.mismatches(cp.configuration, B.configuration(machine))
    if diffs:
        raise SnapshotError("the checkpoint is of another machine configuration: "
                            + "; ".join(diffs), "configuration", "config")
    for drive, data in cp.disk_images.items():
        disk = machine.disks[drive]
        if not _copied(disk) or disk.size != len(data):
            raise SnapshotError(f"drive {drive:#04x} is not the disk the checkpoint saw",
                                "configuration", "config")
    words = keep_host_words(machine)
    machine.set_state(copy.deepcopy(cp.state))     # the checkpoint stays reusable
    put_host_words(machine, words)
    for drive, data in cp.disk_images.items():
        disk = machine.disks[drive]
        off = 0
        for chunk in guest_chunks(disk):
            want = data[off:off + len(chunk)]
            if chunk != want:
                a = np.frombuffer(chunk, dtype=np.uint8).reshape(-1, 512)
                b = np.frombuffer(want, dtype=np.uint8).reshape(-1, 512)
                for i in np.nonzero((a != b).any(axis=1))[0]:
                    lba = off // 512 + int(i)
                    disk.write_sectors(lba, bytes(b[i]))
            off += len(chunk)
    machine.scheduler.reset()
    machine.note("info", f"state restored from a checkpoint taken at cycle {cp.clock}")
