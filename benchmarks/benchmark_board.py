"""Figures for the board's fast paths (issue 8): what a compiled handler call
costs against the inline path, that a game-port polling loop never leaves
the compiled loop, and how fast a polled guest moves bytes through the UART.

    python benchmarks/benchmark_board.py

Prints its figures; asserts nothing about speed.
"""

import os
import sys
import time

import numba
import numpy as np
from numba import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

from pypc_core.board import Backplane  # noqa: E402
from pypc_core.cpu import Cpu  # noqa: E402
from pypc_core.cpu import state as S  # noqa: E402
from pypc_core.device import DeviceDeclaration, MemoryWindow  # noqa: E402
from pypc_core.machine import Machine, MachineConfig  # noqa: E402

SIG = types.int64(types.voidptr, types.int64, types.int64, types.int64)


@numba.cfunc(SIG, nopython=True)
def ram_handler(ctx, address, value, op):
    data = numba.carray(ctx, 4096, np.uint8)
    if op & 1 == 0:
        return data[address & 0xFFF]
    data[address & 0xFFF] = value
    return 0


CODE = 0x10000
# mov ax,SEG / mov ds,ax / mov cx,N / l: mov al,[bx] / mov [bx+1],al / loop l / hlt
def access_loop(segment, count):
    return bytes([0xB8, segment & 0xFF, segment >> 8, 0x8E, 0xD8, 0xB9, count & 0xFF,
                  count >> 8, 0x8A, 0x07, 0x88, 0x47, 0x01, 0xE2, 0xF9, 0xF4])


# mov dx,PORT / mov cx,N / l: in al,dx / in al,dx / loop l / hlt
def in_loop(port, count):
    return bytes([0xBA, port & 0xFF, port >> 8, 0xB9, count & 0xFF, count >> 8,
                  0xEC, 0xEC, 0xE2, 0xFC, 0xF4])


def timed_run(bp, code, repeat=30):
    mem = bp.memory
    mem.write(CODE, code)
    cpu = Cpu(mem.mem, mem.page_table, mem.xflags, bp.ports.port_kind, bp.ports.port_io)
    best = None
    for _ in range(repeat):
        cpu.reset()
        cpu.r.cs, cpu.r.ip = CODE >> 4, 0
        t0 = time.perf_counter()
        reason = cpu.run(1 << 40)
        dt = time.perf_counter() - t0
        assert reason == S.EXIT_HALT, reason
        best = dt if best is None else min(best, dt)
    return best


def handler_cost():
    bp = Backplane()
    bp.memory.map_ram(0, 0x20000)
    decl = DeviceDeclaration(name="bench", ports=[0x300, 0x301],
                             memory=[MemoryWindow(0xD0000, 0x3000)])
    b = bp.board(decl)
    b.map_ram(0xD0000, 0x1000)
    store = np.zeros(4096, dtype=np.uint8)
    b.map_compiled(0xD1000, 0x1000, ram_handler, store)
    b.claim_ports([0x300], read=lambda p: 0, write=lambda p, v: None, peek=lambda p: 0x5A)
    b.claim_ports([0x301])
    b.compiled_port(0x301, ram_handler, store)
    n = 60000
    timed_run(bp, access_loop(0xD000, 100))          # compile / warm up
    ram = timed_run(bp, access_loop(0xD000, n))
    compiled = timed_run(bp, access_loop(0xD100, n))
    per_access = (compiled - ram) / (2 * n) * 1e9
    b.map_handler(0xD2000, 0x1000, read=lambda a: 0, write=lambda a, v: None)
    m = 5000
    python = timed_run(bp, access_loop(0xD200, m), repeat=5)
    ram_m = timed_run(bp, access_loop(0xD000, m), repeat=5)
    print(f"memory: read+write loop on RAM {ram / n * 1e9:6.1f} ns/iteration, on a compiled "
          f"window {compiled / n * 1e9:6.1f} ns/iteration")
    print(f"        a compiled handler call costs {per_access:.1f} ns more than the inline "
          f"access ({2 * n} accesses)")
    print(f"        a Python handler (ctypes callback, GIL taken) costs "
          f"{(python - ram_m) / (2 * m) * 1e6:.2f} us an access")
    # two INs a loop: a peeked port (a value the core keeps) against a
    # compiled port handler
    pv = timed_run(bp, in_loop(0x300, n))
    pc = timed_run(bp, in_loop(0x301, n))
    print(f"ports:  IN loop on a peeked (value) port {pv / n * 1e9:6.1f} ns/iteration, on a "
          f"compiled port {pc / n * 1e9:6.1f} ns/iteration "
          f"({(pc - pv) / (2 * n) * 1e9:.1f} ns a call)")


def gameport_polling():
    from pypc_plugins.gameport import axis_cycles
    code = open(os.path.join(HERE, "..", "tests", "guest", "joystick.bin"), "rb").read()
    with Machine(MachineConfig(plugins=["cga", "gameport"])) as m:
        m.run_seconds(0.3)
        m.memory.write(0x10000, code)
        m.cpu.r.cs, m.cpu.r.ip = 0x1000, 0
        m.cpu.ctl[S.C_HALTED] = 0
        exits = []
        service = m._service_exit

        def counting(reason):
            if reason in (S.EXIT_IO_IN, S.EXIT_IO_OUT):
                exits.append(int(m.cpu.ctl[S.C_EXIT_PORT]))
            return service(reason)
        m._service_exit = counting
        gp = m.devices["gameport"]
        gp.set_joystick(0, 1, 1, [False, False])
        gp.set_joystick(1, 1, 1, [False, False])
        rounds = 300
        for n in range(1, rounds + 1):
            m.memory.write(0x500, bytes([n & 0xFF]))
            while m.memory.read(0x501, 1)[0] != n & 0xFF:
                m.run_for(6000)
        print(f"game port: {rounds} joystick reads (OUT 201h, then about "
              f"{-(-axis_cycles(1) // 57)} INs of 201h each): exits on 201h: "
              f"{exits.count(0x201)}")


def uart_polled(size=1 << 18):
    from guest import run_to_phase
    from test_uart import pump, start_serial_program
    rng = np.random.default_rng(1)
    with Machine(MachineConfig(plugins=["cga", "uart"])) as m:
        uart = m.devices["uart"]
        start_serial_program(m)
        run_to_phase(m, 2, 5)
        data = rng.integers(0, 256, 8192, dtype=np.uint8).tobytes()
        t0 = time.perf_counter()
        echo, offset = pump(m, uart, data, 0, 30)
        dt_irq = time.perf_counter() - t0
        run_to_phase(m, 3, 5)
        data = rng.integers(0, 256, size, dtype=np.uint8).tobytes()
        c0, t0 = m.clock(), time.perf_counter()
        echo, offset = pump(m, uart, data, offset, 400)
        dt = time.perf_counter() - t0
        assert echo == data
        print(f"uart: interrupt-driven echo at 57600 baud {8192 / dt_irq / 1024:.0f} KiB/s "
              f"wall; polled echo {size / dt / 1024:.0f} KiB/s each way wall "
              f"({(m.clock() - c0) / 4_772_727 / dt:.0f}x real time)")


def main():
    handler_cost()
    gameport_polling()
    uart_polled()


if __name__ == "__main__":
    main()
