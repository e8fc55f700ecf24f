"""Speed figures that unit tests used to assert (issue 6: tests assert
behaviour, benchmarks report speed):

* the CGA renders one 80x25 text frame of random characters (the live view
  and screenshots draw frames like this; once it was checked against 50 ms);
* the PIT answers a counter latch after jumps of up to 10^12 cycles in
  constant time (once checked against 0.5 s for the whole sequence).

    python benchmarks/benchmark_units.py

Prints its figures (the last line is JSON); asserts nothing about speed.
"""

import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

from pypc_core.machine import Machine, MachineConfig  # noqa: E402
from test_chipset_pit import latch_read, make, out  # noqa: E402

VRAM = 0xB8000


def cga_text_frame_ms(frames=20):
    with Machine(MachineConfig(plugins=["cga"])) as m:
        m.run_seconds(0.5)                  # the BIOS sets 80x25 text
        rng = np.random.default_rng(1)
        m.memory.write(VRAM, bytes(rng.integers(0, 256, 4000, dtype=np.uint8)))
        m.video.frame()                     # warm (compiles anything lazy)
        t = time.perf_counter()
        for _ in range(frames):
            m.video.frame()
        return (time.perf_counter() - t) / frames * 1e3


def pit_far_jumps_ms():
    m, pit = make()
    out(m, 0x43, 0x36)
    out(m, 0x40, 0x00, 0x00)
    t = time.perf_counter()
    for c in (10**9, 10**10, 10**12, 10**12 + 4 * 40000):
        m.now = c
        pit.advance(c)
        latch_read(m, 0)
        pit.next_event()
    return (time.perf_counter() - t) * 1e3


def main():
    figures = {"cga_text_frame_ms": round(cga_text_frame_ms(), 3),
               "pit_four_far_jumps_ms": round(pit_far_jumps_ms(), 3)}
    print(f"CGA 80x25 text frame: {figures['cga_text_frame_ms']:.2f} ms")
    print(f"PIT: four jumps to 10^9..10^12 cycles with a latch read each: "
          f"{figures['pit_four_far_jumps_ms']:.3f} ms")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
