"""Peak memory of ``--host-dir`` on a folder holding one huge file.

    python benchmarks/benchmark_hostdir_rss.py [--size-mib N] [--small-files N]

Builds a folder with one sparse file of ``--size-mib`` MiB (no disk space
used) and ``--small-files`` small ones, then, in a fresh Python process
each, (1) imports pypc's host-directory disk only, and (2) presents the
folder with ``HostDirDisk`` (refused: the file does not fit in any disk it
builds).  Prints each process's peak RSS (``VmHWM``) and the
difference, which is what presenting the folder cost.  Before issue 19 the
file was read whole before its size was checked (a 768 MiB file: 950 MiB
peak); now its size is checked first.
"""

import argparse
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PROBE = """
import resource, sys
sys.path.insert(0, %r)
from pypc_core.storage.hostdir import HostDirDisk, HostDirError
outcome = "imported"
if len(sys.argv) > 1:
    try:
        HostDirDisk(sys.argv[1])
        outcome = "built"
    except HostDirError as exc:
        outcome = "refused: " + str(exc)
print(outcome)
def peak_kib():
    # VmHWM: this process image's own peak (ru_maxrss would carry the
    # parent's over fork and exec on Linux)
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(peak_kib())
""" % ROOT


def probe(*args):
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True,
                          text=True, check=True)
    lines = done.stdout.strip().splitlines()
    return lines[0], int(lines[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mib", type=int, default=768)
    ap.add_argument("--small-files", type=int, default=20)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for i in range(args.small_files):
            with open(os.path.join(folder, f"F{i}.TXT"), "wb") as fh:
                fh.write(b"x" * 1000)
        with open(os.path.join(folder, "HUGE.BIN"), "wb") as fh:
            fh.truncate(args.size_mib << 20)
        _, base = probe()
        outcome, peak = probe(folder)
    print(f"folder: one sparse {args.size_mib} MiB file and {args.small_files} small files")
    print(f"outcome: {outcome}")
    print(f"peak RSS, import only:     {base / 1024:8.1f} MiB")
    print(f"peak RSS, --host-dir:      {peak / 1024:8.1f} MiB")
    print(f"cost of presenting it:     {(peak - base) / 1024:8.1f} MiB")


if __name__ == "__main__":
    main()
