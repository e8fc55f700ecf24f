"""What a gdb packet costs through the stub (``pypc run --gdb``).

    python benchmarks/benchmark_gdb_stub.py [--count N]

A bare machine with its controller and the stub on a free loopback port; a
raw RSP client (TCP_NODELAY, as gdb) attaches and times N round trips of a
``s`` (gdb's ``stepi``: one Tick on the machine thread and the stop reply),
a ``g`` (all registers) and an ``m0,10000`` (a 64 KiB read in one packet),
from sending the packet to holding the whole reply.  Prints the median and
90th percentile of each in microseconds; the last line is one JSON object
with the figures.
"""

import argparse
import json
import os
import socket
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from pypc_core.frontends.gdbstub import GdbServer, checksum, frame  # noqa: E402
from pypc_core.machine import Machine, MachineConfig  # noqa: E402
from pypc_core.rpc.controller import Controller  # noqa: E402

# 07C0:0000  inc ax / mov [0500h],ax / jmp 0
PROG = bytes.fromhex("40" "A30005" "EBFA")


def round_trip(sock, payload):
    sock.sendall(frame(payload))
    buf = b""
    while True:
        buf += sock.recv(1 << 20)
        end = buf.find(b"#", 2)
        if end >= 0 and len(buf) >= end + 3:
            assert buf[:2] == b"+$"
            assert int(buf[end + 1:end + 3], 16) == checksum(buf[2:end])
            sock.sendall(b"+")
            return buf[2:end]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=500)
    args = ap.parse_args()
    machine = Machine(MachineConfig(plugins=[], bare=True, loads=[(PROG, 0x7C00)],
                                    entry=(0x07C0, 0)))
    controller = Controller(machine)
    stop = threading.Event()
    thread = threading.Thread(target=controller.serve_forever, args=(stop,), daemon=True)
    thread.start()
    server = GdbServer(controller, port=0).start()
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=60)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    figures = {}
    try:
        round_trip(sock, b"?")
        for name, packet in (("stepi", b"s"), ("g", b"g"), ("m_64k", b"m0,10000")):
            round_trip(sock, packet)
            times = []
            for _ in range(args.count):
                t0 = time.perf_counter()
                reply = round_trip(sock, packet)
                times.append(time.perf_counter() - t0)
            if name == "m_64k":
                assert len(reply) == 0x20000
            times.sort()
            med = times[len(times) // 2] * 1e6
            p90 = times[int(len(times) * 0.9)] * 1e6
            figures[name] = {"median_us": round(med, 1), "p90_us": round(p90, 1)}
            print(f"{name:>6}: median {med:8.1f} us   p90 {p90:8.1f} us   ({args.count} round trips)")
    finally:
        sock.close()
        server.close()
        stop.set()
        thread.join(timeout=10)
        machine.close()
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
