"""What the viewer benchmarks share (benchmark_vnc.py, benchmark_web_view.py):
the two guests, their boot floppy, the timed turbo run, and the best-of
rounds with its report.  Not a benchmark itself."""

import os
import time

from pypc_core.cpu import state as S
from pypc_core.machine import CPU_HZ

# mov ax,0B800h / mov es,ax / cld / l: xor di,di / mov cx,2000 / inc ax /
# rep stosw / jmp l
CHURN = bytes.fromhex("B800B8 8EC0 FC 31FF B9D007 40 F3AB EBF6")
# mov ax,0B800h / mov es,ax / l: inc byte [es:0] / mov cx,1000 / m: loop m / jmp l
COUNTER = bytes.fromhex("B800B8 8EC0 26FE060000 B9E803 E2FE EBF4")
GUESTS = {"churn": CHURN, "counter": COUNTER}


def floppy(folder, code):
    """A 360K floppy in ``folder`` whose boot sector is ``code``."""
    image = bytearray(368640)
    image[:len(code)] = code
    image[510:512] = b"\x55\xaa"
    path = os.path.join(folder, "guest.img")
    with open(path, "wb") as fh:
        fh.write(image)
    return path


def boot_to_guest(m):
    """Run until the CPU is in the boot sector."""
    while not 0x7C00 <= (int(m.cpu.regs[S.CS]) << 4) + int(m.cpu.regs[S.IP]) < 0x7E00:
        m.run_for(CPU_HZ // 60)
        if m.clock() > 30 * CPU_HZ:
            raise SystemExit("the guest did not start")


def timed(machine, seconds):
    """(host seconds, CPU seconds of the whole process -- viewer threads
    included) to run ``seconds`` of emulated time in slices of 1/60 s."""
    frame = CPU_HZ // 60
    end = machine.clock() + int(seconds * CPU_HZ)
    c0 = time.process_time()
    t0 = time.perf_counter()
    while machine.clock() < end:
        machine.run_for(min(frame, end - machine.clock()))
    return time.perf_counter() - t0, time.process_time() - c0


def best_of_rounds(measure, image, settings, seconds, rounds):
    """``{setting: (host s, CPU s, updates, bytes sent)}``: the rounds
    interleave the settings; each keeps its best host time and its least
    CPU time, so a busy host shifts every figure alike."""
    measure(image, settings[0], 0.2)                    # compile / warm up
    best = {}
    for _ in range(rounds):
        for setting in settings:
            dt, cpu, updates, sent = measure(image, setting, seconds)
            if setting not in best:
                best[setting] = (dt, cpu, updates, sent)
            elif dt < best[setting][0]:
                best[setting] = (dt, min(cpu, best[setting][1]), updates, sent)
            else:
                best[setting] = best[setting][:1] + (min(cpu, best[setting][1]),) \
                    + best[setting][2:]
    return best


def report(guest, best, settings, seconds, rounds, width=5):
    """Print one guest's rows against the first setting (no viewer) and
    return them as figures."""
    base, base_cpu = best[settings[0]][:2]
    print(f"{guest}: {seconds:g} emulated s turbo, best of {rounds}")
    rows = {}
    for setting in settings:
        dt, cpu, updates, sent = best[setting]
        slowdown = dt / base - 1
        extra_cpu = cpu / base_cpu - 1
        rate = f"{updates / dt:5.1f} updates/s" if updates is not None else " " * 16
        print(f"  {setting:{width}s} host {dt:6.3f} s ({slowdown * 100:+6.1f} %)  "
              f"CPU {cpu:6.3f} s ({extra_cpu * 100:+6.1f} %)  "
              f"{seconds / dt:6.1f}x real time  {rate}  {sent / dt / 1e3:8.1f} kB/s")
        rows[setting] = {"host_s": round(dt, 4), "slowdown": round(slowdown, 4),
                         "cpu_s": round(cpu, 4), "extra_cpu": round(extra_cpu, 4),
                         "updates_per_s": None if updates is None
                         else round(updates / dt, 1),
                         "bytes_per_s": round(sent / dt)}
    return rows
