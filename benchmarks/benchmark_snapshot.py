"""Machine bundle figures: export and import time and bundle size for a
640 KiB machine with a 1.44 MB floppy and with a 10 MB hard disk, with the
disks embedded and referenced.

    python benchmarks/benchmark_snapshot.py [--repeat N]

The disk images are made here: half pseudo-random bytes (incompressible, like
a full disk of programs), half zeros (free space).  Export is
``Machine.save`` (state, disks, ZIP, fsync, hash, hard-link publication);
import is ``Machine.load`` into a freshly built machine of the same
configuration (read, every check, new disk files under a new disk_root,
install).  The machine has run its BIOS for half an emulated second first.
Figures are the median of ``--repeat`` runs.
"""

import argparse
import importlib.metadata
import os
import statistics
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from pypc_core.machine import Machine, MachineConfig  # noqa: E402
from pypc_core.scheduler import CPU_HZ  # noqa: E402


def make_image(path, size, seed):
    rng = np.random.default_rng(seed)
    data = np.zeros(size, dtype=np.uint8)
    data[:size // 2] = rng.integers(0, 256, size // 2, dtype=np.uint8)
    with open(path, "wb") as fh:
        fh.write(data.tobytes())


def plugins_for_floppy():
    names = {e.name for e in importlib.metadata.entry_points(group="pypc.devices")}
    return ["cga", "fdc"] if "fdc" in names else ["cga"]


def measure(label, config, folder, disk_mode, repeat):
    exports, imports, sizes = [], [], []
    for i in range(repeat):
        m = Machine(MachineConfig(**config))
        try:
            m.run_for(CPU_HZ // 2)
            path = os.path.join(folder, f"{label}-{disk_mode}-{i}.zip")
            t0 = time.perf_counter()
            out = m.save(path, disk_mode=disk_mode, progress=None)
            exports.append(time.perf_counter() - t0)
            sizes.append(out["bytes"])
        finally:
            m.close()
        m2 = Machine(MachineConfig(**config))
        try:
            t0 = time.perf_counter()
            m2.load(path, disk_root=os.path.join(folder, f"root-{label}-{disk_mode}-{i}"),
                    expected_sha256=out["sha256"], progress=None)
            imports.append(time.perf_counter() - t0)
        finally:
            m2.close()
    return statistics.median(exports), statistics.median(imports), statistics.median(sizes)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="pypc-snapbench-") as folder:
        floppy = os.path.join(folder, "floppy.img")
        hdd = os.path.join(folder, "hdd.img")
        make_image(floppy, 1_474_560, 1)
        make_image(hdd, 10 * 1024 * 1024, 2)
        cases = [
            ("640K + 1.44 MB floppy", "floppy",
             dict(plugins=plugins_for_floppy(), floppy_a=floppy, cow=True)),
            ("640K + 10 MB hard disk", "hdd", dict(plugins=["cga"], hdd=hdd, cow=True)),
        ]
        print(f"{'machine':24} {'disk mode':10} {'export':>9} {'import':>9} {'bundle':>12}")
        for title, label, config in cases:
            for mode in ("embed", "reference"):
                exp, imp, size = measure(label, config, folder, mode, args.repeat)
                print(f"{title:24} {mode:10} {exp * 1000:7.1f}ms {imp * 1000:7.1f}ms "
                      f"{size / 1024:9.1f} KiB")


if __name__ == "__main__":
    main()
