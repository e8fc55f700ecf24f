"""What the browser view (``--web``) costs the running guest, and how long a
guest's write to the screen takes to reach the page.

    python benchmarks/benchmark_web_view.py [--seconds S] [--rounds N] [--latency-samples K]

Cost: boots a guest from a floppy, runs it unpaced (turbo) for S emulated
seconds in slices of 1/60 s as the launcher does, and measures the host
time with no page and with one page connected.  The page is a WebSocket
client in a process of its own (the websockets library) that takes every
update as a browser page does -- reads it, splits it into its rectangles'
PNG files, acks it -- without drawing, so the figure is the server's cost
(publishing snapshots and the debugger's view on the machine thread,
diffing and PNG encoding on the page's writer thread, the server's event
loop), all sharing the interpreter with the machine.  Guests as in
benchmark_vnc.py: ``churn`` rewrites all 2,000 text cells in a loop (every
update is the whole screen), ``counter`` changes one character now and then
(one tile per update).  The slowdown is (host time with the page / without
- 1), the target at most 10 %; rounds interleave the settings and each keeps
its best round.

Latency: with the counter guest running paced (``--speed 1``, the live
view's pace) and a page connected, K times a character cell is written
into video memory between two slices (what a guest's write does) and the
time until the page process receives the update with that cell's tile is
taken (CLOCK_MONOTONIC is one clock for both processes).  The writes fall
at random between two publications, which are at least 1/30 s apart, so
the figure is about half of that on average plus the encoding and the
transfer.

With ``--browser`` the latency is also taken to the moment a real page
has drawn the update: headless Chromium (``/usr/bin/chromium`` through
``/usr/bin/chromedriver``, selenium) opens the view and records when it
drew each update (``window.pypcView.drawn``, the host's wall clock on both
sides).

Figures from a busy host are not comparable; the last line is one JSON
object.
"""

import argparse
import json
import os
import queue
import random
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pypc_core.cli import viewers as frontends  # noqa: E402
from pypc_core.cpu import state as S  # noqa: E402
from pypc_core.machine import CPU_HZ, Machine, MachineConfig  # noqa: E402

from _viewer_bench import (COUNTER, GUESTS, best_of_rounds, boot_to_guest, floppy,  # noqa: E402
                          report, timed)

LATENCY_CELL = (12, 40)                 # row, column: the tile at x 320, y 96


# -- the page: a process of its own ---------------------------------------------------------

def page_main(port):
    """``--page PORT``: take every update, print one JSON line per update
    (``t`` CLOCK_MONOTONIC, ``bytes``, ``rects``), ack it."""
    from websockets.sync.client import connect
    from pypc_core.frontends.web import parse_update
    with connect(f"ws://127.0.0.1:{port}/ws", max_size=None) as ws:
        for msg in ws:
            if isinstance(msg, str):
                continue
            t = time.monotonic()
            header, _blobs = parse_update(msg)
            ws.send(json.dumps({"type": "ack", "seq": header["seq"]}))
            sys.stdout.write(json.dumps({"t": t, "bytes": len(msg),
                                         "rects": [r[:4] for r in header["rects"]]}) + "\n")
            sys.stdout.flush()


class Page:
    """The page process and a thread that collects its lines."""

    def __init__(self, port):
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--page",
                                      str(port)], stdout=subprocess.PIPE, text=True)
        self.updates = queue.SimpleQueue()
        self.count = 0
        self.bytes = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            update = json.loads(line)
            self.count += 1
            self.bytes += update["bytes"]
            self.updates.put(update)

    def close(self):
        self.proc.kill()
        self.proc.wait()


def web_args(on):
    return argparse.Namespace(telnet_port=None, no_telnet=True, vnc_port=None, no_vnc=True,
                              web=0 if on else None, listen=None, audio=None, no_sound=True,
                              no_rpc=False, rpc_port=None, headless=True)


def first_update(m, page):
    deadline = time.monotonic() + 60
    while not page.count:
        if time.monotonic() > deadline:
            raise SystemExit("the page got no picture")
        m.run_for(CPU_HZ // 60)


def measure(image, setting, seconds):
    with Machine(MachineConfig(floppy_a=image)) as m:
        boot_to_guest(m)
        fe = frontends.start(m, web_args(setting == "web"), stream=open(os.devnull, "w"))
        page = None
        try:
            if setting == "web":
                page = Page(fe.web.port)
                first_update(m, page)
            count0 = page.count if page else 0
            dt, cpu = timed(m, seconds)
            pc = (int(m.cpu.regs[S.CS]) << 4) + int(m.cpu.regs[S.IP])
            if not 0x7C00 <= pc < 0x7E00:
                raise SystemExit(f"the guest is not running (CS:IP at {pc:05X}h)")
            updates = page.count - count0 if page else None
            sent = page.bytes if page else 0
        finally:
            if page is not None:
                page.close()
            if fe is not None:
                fe.close()
    return dt, cpu, updates, sent


def covers(rects, tile):
    return any(x <= tile[0] < x + w and y <= tile[1] < y + h for x, y, w, h in rects)


class BrowserPage:
    """Headless Chromium showing the view; :meth:`drawn` lists the updates
    it drew since the last call as (host wall-clock seconds, rects)."""

    def __init__(self, url):
        import shutil
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        self._shutil = shutil
        self.profile = tempfile.mkdtemp(prefix="pypc-chromium-")
        options = webdriver.ChromeOptions()
        options.binary_location = "/usr/bin/chromium"
        for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                     "--no-first-run", "--disable-background-networking",
                     "--disable-component-update", "--disable-sync",
                     f"--user-data-dir={self.profile}"):
            options.add_argument(flag)
        self.driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"),
                                       options=options)
        self.driver.get(url)
        self.seen = 0

    @property
    def count(self):
        return self.driver.execute_script("return window.pypcView.updates")

    def drawn(self):
        items = self.driver.execute_script(
            "return window.pypcView.drawn.filter((d) => d.seq > arguments[0])", self.seen)
        if items:
            self.seen = max(d["seq"] for d in items)
        return [(d["t"] / 1000, d["rects"]) for d in items]

    def close(self):
        self.driver.quit()
        self._shutil.rmtree(self.profile, ignore_errors=True)


def latency(image, samples, browser=False):
    """Milliseconds from a write into video memory to the page's receipt
    of the update that carries it (``browser``: to a Chromium page's
    drawing of it), ``samples`` times (paced, --speed 1)."""
    row, col = LATENCY_CELL
    tile = (col * 8 // 16 * 16, row * 8 // 16 * 16)
    out = []
    with Machine(MachineConfig(floppy_a=image, speed=1.0)) as m:
        boot_to_guest(m)
        fe = frontends.start(m, web_args(True), stream=open(os.devnull, "w"))
        page = BrowserPage(fe.web.url) if browser else Page(fe.web.port)
        clock = time.time if browser else time.monotonic

        def received():
            if browser:
                return page.drawn()
            got = []
            while not page.updates.empty():
                update = page.updates.get()
                got.append((update["t"], update["rects"]))
            return got
        try:
            first_update(m, page)
            rng = random.Random(1)
            for i in range(samples):
                # the guest runs on between samples, in short slices as the
                # launcher's loop does, so the write falls anywhere between
                # two publications
                end = m.clock() + CPU_HZ // 10 + rng.randrange(CPU_HZ // 30)
                while m.clock() < end:
                    m.run_for(min(CPU_HZ // 600, end - m.clock()))
                received()
                m.memory.write(0xB8000 + (row * 80 + col) * 2, bytes((0x30 + i % 10, 0x1F)))
                t0 = clock()
                deadline = time.monotonic() + 10
                got = None
                while got is None and time.monotonic() < deadline:
                    m.run_for(CPU_HZ // 600)             # the machine goes on meanwhile
                    for t, rects in received():
                        if got is None and covers(rects, tile):
                            got = t
                if got is None:
                    raise SystemExit("the page never got the written cell")
                out.append((got - t0) * 1000)
        finally:
            page.close()
            fe.close()
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0, help="emulated seconds per run")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--latency-samples", type=int, default=30)
    ap.add_argument("--browser", action="store_true",
                    help="also the latency to a headless Chromium page's drawing")
    ap.add_argument("--page", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.page is not None:
        return page_main(args.page)
    settings = ["none", "web"]
    figures = {}
    with tempfile.TemporaryDirectory() as folder:
        for guest, code in GUESTS.items():
            image = floppy(folder, code)
            best = best_of_rounds(measure, image, settings, args.seconds, args.rounds)
            rows = report(guest, best, settings, args.seconds, args.rounds)
            figures[guest] = rows
        lat = {}
        kinds = [("received", False)] + ([("drawn in Chromium", True)] if args.browser else [])
        for name, browser in kinds:
            ms = sorted(latency(floppy(folder, COUNTER), args.latency_samples, browser))
            median = ms[len(ms) // 2]
            print(f"latency guest write -> page {name}, paced, {len(ms)} samples: "
                  f"median {median:.1f} ms, min {ms[0]:.1f} ms, max {ms[-1]:.1f} ms")
            lat["browser_drawn" if browser else "received"] = {
                "median": round(median, 2), "min": round(ms[0], 2), "max": round(ms[-1], 2),
                "samples": len(ms)}
    print(json.dumps({"benchmark": "web_view", "emulated_seconds": args.seconds,
                      "figures": figures, "latency_ms": lat}))


if __name__ == "__main__":
    main()
