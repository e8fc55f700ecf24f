"""``python -m pypc_plugins.vga.bench``: VGA drawing speed in turbo.

Two guests (tests/guest/vga_bench.asm, assembled; the bytes are below and a
test checks them against the source):

* mode 13h fill -- REP STOSW over the 64,000-byte mode 13h screen, chain-4
  addressing, a new colour each fill;
* mode 12h planar -- REP STOSB over the 38,400 bytes of mode 12h in write
  mode 2 (every byte writes all four planes through the bit mask and the
  latches), a new colour each fill;
* mode 12h pixels -- the same screen painted pixel by pixel as EGA/VGA
  drawing code does it: for every pixel an OUT of the bit mask (answered
  inside the core), a read that loads the latches, a write of the set/reset
  colour.

Each runs unpaced on a VGA machine for ``--seconds`` emulated seconds (after
one emulated second of start-up); the figures are the multiple of a real
4.77 MHz XT (emulated time over host time), screen fills per host second and
the planar handler's bytes per host second.  The last line is one JSON
object.
"""

import argparse
import json
import os
import tempfile
import time

from pypc_core.machine import CPU_HZ, Machine, MachineConfig

from .planar import ST_WRITES

GUEST_13H = bytes.fromhex("fa31c08ed88ed0bc007cfbfcc70600050000b81300cd10b800a08ec031db31ff88d888dcb9007df3abfec3ff060005ebed")
GUEST_12H_PIXELS = bytes.fromhex("fa31c08ed88ed0bc007cfbfcc70600050000b81200cd10bace03b8010fefb800a08ec031db88dc30c0ef31ffb480b008ef268a05268805d0ec75f34781ff009675eafec3ff060005ebdb")
GUEST_12H = bytes.fromhex("fa31c08ed88ed0bc007cfbfcc70600050000b81200cd10bace03b80502efb800a08ec031db31ff88d8b90096f3aafec3ff060005ebef")
FILLS = 0x0500           # the guests count finished screen fills here


def boot_sector(code):
    return code + bytes(510 - len(code)) + b"\x55\xaa"


def measure(code, seconds, warmup=1.0):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bench.img")
        with open(path, "wb") as fh:
            fh.write(boot_sector(code))
            fh.write(bytes(368640 - 512))
        m = Machine(MachineConfig(floppy_a=path, plugins=["vga", "fdc"], readonly=True))
        try:
            m.run_seconds(warmup)
            card = m.video
            c0 = m.clock()
            f0 = m.memory.read_word(FILLS)
            w0 = int(card.st[ST_WRITES])
            t0 = time.perf_counter()
            m.run_seconds(seconds)
            wall = time.perf_counter() - t0
            cycles = m.clock() - c0
            fills = (m.memory.read_word(FILLS) - f0) & 0xFFFF
            writes = int(card.st[ST_WRITES]) - w0
        finally:
            m.close()
    return {
        "x_real_xt": round(cycles / CPU_HZ / wall, 1),
        "fills_per_s": round(fills / wall, 1),
        "planar_writes_per_s": round(writes / wall),
        "ns_per_write": round(wall * 1e9 / writes, 1) if writes else None,
        "emulated_s": seconds, "host_s": round(wall, 3),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m pypc_plugins.vga.bench")
    ap.add_argument("--seconds", type=float, default=10.0,
                    help="emulated seconds per figure (default 10)")
    args = ap.parse_args(argv)
    out = {}
    for name, code in (("mode13h_fill", GUEST_13H), ("mode12h_planar", GUEST_12H),
                       ("mode12h_pixels", GUEST_12H_PIXELS)):
        fig = measure(code, args.seconds)
        out[name] = fig
        print(f"{name:15} {fig['x_real_xt']:7.1f}x a real XT   "
              f"{fig['fills_per_s']:8.1f} screens/s   "
              f"{fig['planar_writes_per_s'] / 1e6:7.1f} M planar writes/s "
              f"({fig['ns_per_write']} ns each, host time)")
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
