"""What a connected VNC viewer (and a telnet viewer) costs the running guest.

    python benchmarks/benchmark_vnc.py [--seconds S] [--rounds N]

Boots a guest from a floppy, runs it unpaced (turbo) for S emulated seconds
in slices of 1/60 s as the launcher does, and measures the host time with
no viewer, with one VNC viewer asking for incremental updates as fast as
the server gives them (Raw and ZRLE), and with one telnet viewer.  The
viewer is a minimal RFB client here that reads the updates without decoding
them, so the figure is the server's cost (publishing snapshots on the
machine thread, diffing and encoding on the viewer thread, both sharing the
interpreter with the machine).

Two guests:

* ``churn``: rewrites all 2,000 text cells (character and attribute) in a
  loop -- every update is the whole screen (the worst case);
* ``counter``: a CPU-bound loop that increments one character on the screen
  every 1,000 iterations -- one changed tile per update (a typical program).

The slowdown is (host time with viewer / host time without - 1), the
target at most 10 %; the CPU figure (process time, every thread) is the
viewer's whole cost, which a busy host's load does not blur as much.  Rounds interleave the settings and each keeps its best round, so a
busy host shifts every figure alike.  The last line is one JSON object.
"""

import argparse
import json
import os
import socket
import struct
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pypc_core.cli import viewers as frontends  # noqa: E402
from pypc_core.cpu import state as S  # noqa: E402
from pypc_core.machine import CPU_HZ, Machine, MachineConfig  # noqa: E402

from _viewer_bench import GUESTS, best_of_rounds, boot_to_guest, floppy, report, timed  # noqa: E402

class Viewer(threading.Thread):
    """A VNC client that keeps one incremental request pending and reads
    every update (without decoding it)."""

    def __init__(self, port, encoding):
        super().__init__(daemon=True)
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.encoding = encoding
        self.updates = 0
        self.bytes = 0
        self.stop = False
        self._handshake()

    def _recv(self, n):
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(min(1 << 20, n - len(buf)))
            if not chunk:
                raise ConnectionError
            buf += chunk
        self.bytes += n
        return bytes(buf)

    def _handshake(self):
        self._recv(12)
        self.sock.sendall(b"RFB 003.008\n")
        n = self._recv(1)[0]
        self._recv(n)
        self.sock.sendall(b"\x01")
        self._recv(4)
        self.sock.sendall(b"\x01")
        self.width, self.height = struct.unpack("!HH", self._recv(4))
        self._recv(16)
        self._recv(struct.unpack("!I", self._recv(4))[0])
        self.sock.sendall(struct.pack("!BxHi", 2, 1, self.encoding))

    def request(self, incremental):
        self.sock.sendall(struct.pack("!BBHHHH", 3, incremental, 0, 0, self.width, self.height))

    def run(self):
        try:
            self.request(False)
            while not self.stop:
                kind, count = struct.unpack("!BxH", self._recv(4))
                for _ in range(count):
                    x, y, w, h, enc = struct.unpack("!HHHHi", self._recv(12))
                    if enc == 16:
                        self._recv(struct.unpack("!I", self._recv(4))[0])
                    elif enc == 0:
                        self._recv(w * h * 4)
                self.updates += 1
                self.request(True)
        except (ConnectionError, OSError):
            pass

    def close(self):
        self.stop = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


class TelnetViewer(threading.Thread):
    """A telnet client that reads everything; it refuses to report its
    window size (IAC WONT NAWS), so the server draws at once rather than
    waiting up to a second for the size."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.sendall(bytes((255, 252, 31)))
        self.bytes = 0
        self.stop = False

    def run(self):
        try:
            while not self.stop:
                data = self.sock.recv(65536)
                if not data:
                    return
                self.bytes += len(data)
        except OSError:
            pass

    def close(self):
        self.stop = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


def measure(image, setting, seconds):
    with Machine(MachineConfig(floppy_a=image)) as m:
        boot_to_guest(m)
        telnet, vnc = setting == "telnet", setting.startswith("vnc")
        args = argparse.Namespace(telnet_port=0 if telnet else None, no_telnet=not telnet,
                                  vnc_port=0 if vnc else None, no_vnc=not vnc,
                                  listen=None, audio=None, no_sound=True, no_rpc=False,
                                  rpc_port=None, headless=True)
        fe = frontends.start(m, args)
        viewer = None
        try:
            if setting.startswith("vnc"):
                viewer = Viewer(fe.vnc.port, 16 if setting == "vnc-zrle" else 0)
            elif setting == "telnet":
                viewer = TelnetViewer(fe.telnet.port)
            if viewer is not None:
                viewer.start()
                deadline = time.monotonic() + 30
                # (a telnet picture is the 2,000 cells: far more than the
                # option negotiation before it)
                while (getattr(viewer, "updates", None) == 0 or viewer.bytes < 2000) \
                        and time.monotonic() < deadline:
                    m.run_for(CPU_HZ // 60)              # until the first picture is there
            dt, cpu = timed(m, seconds)
            pc = (int(m.cpu.regs[S.CS]) << 4) + int(m.cpu.regs[S.IP])
            if not 0x7C00 <= pc < 0x7E00:
                raise SystemExit(f"the guest is not running (CS:IP at {pc:05X}h)")
            updates = getattr(viewer, "updates", None)
            sent = getattr(viewer, "bytes", 0)
        finally:
            if viewer is not None:
                viewer.close()
            if fe is not None:
                fe.close()
    return dt, cpu, updates, sent


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0, help="emulated seconds per run")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    settings = ["none", "vnc-raw", "vnc-zrle", "telnet"]
    figures = {}
    with tempfile.TemporaryDirectory() as folder:
        for guest, code in GUESTS.items():
            image = floppy(folder, code)
            best = best_of_rounds(measure, image, settings, args.seconds, args.rounds)
            rows = report(guest, best, settings, args.seconds, args.rounds, width=9)
            figures[guest] = rows
    print(json.dumps({"benchmark": "vnc", "emulated_seconds": args.seconds,
                      "figures": figures}))


if __name__ == "__main__":
    main()
