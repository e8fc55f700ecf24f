"""What the viewer tests (test_vnc.py, test_vnc_colour_map.py, test_telnet.py,
test_telnet_window.py, test_audio.py) share: guest boot sectors written
here, a machine thread that runs a machine in the background the way the
launcher does, the rig of a machine with its viewers and thread, a telnet
client that strips the protocol from what it reads, and free TCP ports.

Every wall time here is a generous ceiling that only keeps a broken run
from hanging the suite; nothing asserts how fast anything is.
"""

import argparse
import queue
import socket
import threading
import time

import numpy as np
import pytest

from pypc_core.cli import viewers as frontends
from pypc_core.frontends.telnet import DO, DONT, IAC, WILL, WONT
from pypc_core.machine import CPU_HZ, Machine, MachineConfig

CEILING_S = 60.0
FLOPPY_360K = 368640

# Mode 13h (320x200x256) filled with colour = low byte of the offset, wait for
# a key; mode 12h (640x480x16) with a yellow line x=1..256 at y=100 drawn by
# INT 10h AH=0Ch, wait for a key; mode 3 (VGA text, 720x400) with an 'A'
# teletyped; halt with interrupts on.
#
#   7C00  B8 13 00     mov  ax, 0013h
#   7C03  CD 10        int  10h
#   7C05  B8 00 A0     mov  ax, 0A000h
#   7C08  8E C0        mov  es, ax
#   7C0A  31 FF        xor  di, di
#   7C0C  B9 00 FA     mov  cx, 64000
#   7C0F  89 F8   l:   mov  ax, di
#   7C11  AA           stosb
#   7C12  E2 FB        loop l
#   7C14  31 C0        xor  ax, ax            ; wait for a key
#   7C16  CD 16        int  16h
#   7C18  B8 12 00     mov  ax, 0012h
#   7C1B  CD 10        int  10h
#   7C1D  B9 00 01     mov  cx, 256           ; x (and the count)
#   7C20  BA 64 00     mov  dx, 100           ; y
#   7C23  B8 0E 0C p:  mov  ax, 0C0Eh         ; write pixel, yellow
#   7C26  31 DB        xor  bx, bx
#   7C28  CD 10        int  10h
#   7C2A  E2 F7        loop p
#   7C2C  31 C0        xor  ax, ax            ; wait for a key
#   7C2E  CD 16        int  16h
#   7C30  B8 03 00     mov  ax, 0003h
#   7C33  CD 10        int  10h
#   7C35  B8 41 0E     mov  ax, 0E41h         ; teletype 'A'
#   7C38  31 DB        xor  bx, bx
#   7C3A  CD 10        int  10h
#   7C3C  FB     h:    sti
#   7C3D  F4           hlt
#   7C3E  EB FC        jmp  h
VGA_MODES_BOOT = bytes.fromhex(
    "B81300 CD10 B800A0 8EC0 31FF B900FA 89F8 AA E2FB 31C0 CD16"
    "B81200 CD10 B90001 BA6400 B80E0C 31DB CD10 E2F7 31C0 CD16"
    "B80300 CD10 B8410E 31DB CD10 FB F4 EBFC")
assert len(VGA_MODES_BOOT) == 0x40

# Prints a line with INT 10h teletype, then echoes every key it reads (INT 16h
# AH=00h) with teletype, forever.
#
#   7C00  FA           cli
#   7C01  31 C0        xor  ax, ax
#   7C03  8E D8        mov  ds, ax
#   7C05  8E D0        mov  ss, ax
#   7C07  BC 00 7C     mov  sp, 7C00h
#   7C0A  FB           sti
#   7C0B  FC           cld
#   7C0C  BE 28 7C     mov  si, msg              ; msg = 7C28h
#   7C0F  AC    print: lodsb
#   7C10  08 C0        or   al, al
#   7C12  74 08        jz   key                  ; -> 7C1C
#   7C14  B4 0E        mov  ah, 0Eh
#   7C16  31 DB        xor  bx, bx
#   7C18  CD 10        int  10h
#   7C1A  EB F3        jmp  print
#   7C1C  31 C0   key: xor  ax, ax               ; AH=00h: wait for a key
#   7C1E  CD 16        int  16h
#   7C20  B4 0E        mov  ah, 0Eh              ; echo it
#   7C22  31 DB        xor  bx, bx
#   7C24  CD 10        int  10h
#   7C26  EB F4        jmp  key
#   7C28        msg:   db "TYPE HERE> ", 0
ECHO_PROMPT = "TYPE HERE> "
ECHO_BOOT = bytes.fromhex(
    "FA 31C0 8ED8 8ED0 BC007C FB FC BE287C"
    "AC 08C0 7408 B40E 31DB CD10 EBF3"
    "31C0 CD16 B40E 31DB CD10 EBF4") + ECHO_PROMPT.encode("ascii") + b"\0"
assert ECHO_BOOT.index(ECHO_PROMPT.encode()) == 0x28


def beep_boot(divisor, cycles_on=None):
    """Counter 2 in mode 3 with ``divisor`` and the speaker on (port 61h
    bits 0 and 1), then HLT forever with interrupts on (the timer keeps
    ticking).

    ::

        B0 B6        mov  al, 0B6h      ; counter 2, LSB then MSB, mode 3, binary
        E6 43        out  43h, al
        B8 lo hi     mov  ax, divisor
        E6 42        out  42h, al
        88 E0        mov  al, ah
        E6 42        out  42h, al
        E4 61        in   al, 61h
        0C 03        or   al, 3
        E6 61        out  61h, al
        FB     h:    sti
        F4           hlt
        EB FC        jmp  h
    """
    return (bytes.fromhex("B0B6 E643 B8") + divisor.to_bytes(2, "little")
            + bytes.fromhex("E642 88E0 E642 E461 0C03 E661 FB F4 EBFC"))


def floppy(path, code):
    image = bytearray(FLOPPY_360K)
    image[:len(code)] = code
    image[510:512] = b"\x55\xaa"
    path.write_bytes(bytes(image))
    return str(path)


def plugins_with(video):
    """The default plugin list with ``video`` as the display card."""
    return [video if p in ("cga", "vga") else p for p in MachineConfig().plugins]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def recv_exactly(sock, n):
    """``n`` bytes from ``sock`` (fails if the server closes the connection
    first)."""
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        assert chunk, "the server closed the connection"
        buf += chunk
    return buf


def decode_zrle(data, out, cpixel_bytes, cpixels_at):
    """The (inflated) ZRLE data of a rectangle, as RFC 6143 7.7.6 gives
    it, decoded into ``out`` (height x width [x components]): raw, solid
    and packed-palette tiles (the server sends no RLE tiles, so those fail).
    ``cpixels_at(data, pos, n)``: the ``n`` CPIXELs of ``cpixel_bytes``
    each at ``data[pos:]`` as an array of ``n`` pixels.  Returns ``out``."""
    height, width = out.shape[:2]
    pos = 0

    def cpixels(n):
        nonlocal pos
        px = cpixels_at(data, pos, n)
        pos += cpixel_bytes * n
        return px
    for ty in range(0, height, 64):
        for tx in range(0, width, 64):
            th, tw = min(64, height - ty), min(64, width - tx)
            sub = data[pos]
            pos += 1
            if sub == 0:
                out[ty:ty + th, tx:tx + tw] = cpixels(tw * th).reshape((th, tw) + out.shape[2:])
            elif sub == 1:
                out[ty:ty + th, tx:tx + tw] = cpixels(1)[0]
            else:
                assert 2 <= sub <= 16, f"sub-encoding {sub} not expected"
                pal = cpixels(sub)
                bits = 1 if sub == 2 else 2 if sub <= 4 else 4
                row_bytes = (tw * bits + 7) // 8
                rows = np.frombuffer(data, dtype=np.uint8, count=th * row_bytes,
                                     offset=pos).reshape(th, row_bytes)
                pos += th * row_bytes
                b = np.unpackbits(rows, axis=1).reshape(th, row_bytes * 8 // bits, bits)
                v = (b * (1 << np.arange(bits - 1, -1, -1))).sum(axis=2)[:, :tw]
                out[ty:ty + th, tx:tx + tw] = pal[v]
    assert pos == len(data)
    return out


def viewer_args(**kw):
    """An argparse namespace as ``pypc run`` makes it, for frontends.start;
    a viewer whose port ``kw`` does not give is left out (as by --no-telnet /
    --no-vnc) unless ``kw`` says otherwise: tests never take the default
    ports."""
    fields = dict(telnet_port=None, vnc_port=None, listen=None, audio=None,
                  no_sound=True, no_rpc=False, rpc_port=None, headless=True,
                  no_viewers=False)
    fields.update(kw)
    for port, off in (("telnet_port", "no_telnet"), ("vnc_port", "no_vnc")):
        fields.setdefault(off, fields[port] is None)
    return argparse.Namespace(**fields)


class MachineThread:
    """Runs ``machine`` on its own thread in slices of emulated time (as the
    launcher's loop does) while ``running``; otherwise it sits still and
    serves the viewers (``frontends.service``).  ``call(fn)`` runs ``fn(m)``
    on that thread between slices and returns its result, so the tests
    touch the machine only where the machine thread would."""

    SLICE = CPU_HZ // 60

    def __init__(self, machine, frontends=None):
        self.machine = machine
        self.frontends = frontends
        self.running = False
        self._calls = queue.SimpleQueue()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="test-machine")
        self._thread.start()

    def _loop(self):
        while not self._stop.is_set():
            try:
                fn, box, done = self._calls.get_nowait()
            except queue.Empty:
                fn = None
            if fn is not None:
                try:
                    box.append(fn(self.machine))
                except BaseException as exc:        # handed to the caller
                    box.append(exc)
                    box.append("raised")
                done.set()
                continue
            if self.running:
                self.machine.run_for(self.SLICE)
            else:
                if self.frontends is not None:
                    self.frontends.service()
                time.sleep(0.005)

    def call(self, fn, timeout=CEILING_S):
        box, done = [], threading.Event()
        self._calls.put((fn, box, done))
        assert done.wait(timeout), "the machine thread did not answer"
        if len(box) == 2 and box[1] == "raised":
            raise box[0]
        return box[0]

    def run_until(self, predicate, max_seconds=120.0):
        """Run the machine (on its thread) until ``predicate(m)`` holds,
        at most ``max_seconds`` of emulated time; returns whether it held."""
        def go(m):
            end = m.clock() + int(max_seconds * CPU_HZ)
            while m.clock() < end:
                if predicate(m):
                    return True
                m.run_for(self.SLICE)
            return predicate(m)
        return self.call(go, timeout=CEILING_S * 4)

    def close(self):
        self._stop.set()
        self._thread.join(timeout=CEILING_S)


def wait_for(predicate, timeout=CEILING_S, step=0.02):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


def at_prompt(m):
    """The echo guest (ECHO_BOOT) shows its prompt and waits for a key."""
    return m.screen_contains(ECHO_PROMPT.strip()) and m.waiting_for_key()


class ViewerRig:
    """A machine booting ``code`` from a floppy with ``video`` as its
    display card, its viewers as ``pypc run`` starts them (``args``:
    viewer_args's fields) and its machine thread.  ``VIEWER`` ("vnc" or
    "telnet") is the viewer always started, on a free port: ``port``."""

    VIEWER = "vnc"

    def __init__(self, tmp_path, code, video="cga", **args):
        self.machine = Machine(MachineConfig(plugins=plugins_with(video),
                                             floppy_a=floppy(tmp_path / "boot.img", code)))
        self.frontends = frontends.start(self.machine, viewer_args(
            **{self.VIEWER + "_port": 0}, **args))
        self.thread = MachineThread(self.machine, self.frontends)

    @property
    def port(self):
        return getattr(self.frontends, self.VIEWER).port

    def frame(self):
        return self.thread.call(lambda m: m.video.frame().copy())

    def close(self):
        self.thread.close()
        self.frontends.close()
        self.machine.close()


class TelnetRig(ViewerRig):
    VIEWER = "telnet"


def rig_fixture(rig_class):
    """A ``rig_factory`` fixture: ``rig_factory(...)`` makes a
    ``rig_class(tmp_path, ...)``; every rig it made is closed at the end."""
    @pytest.fixture
    def rig_factory(tmp_path):
        rigs = []

        def make(*args, **kw):
            rig = rig_class(tmp_path, *args, **kw)
            rigs.append(rig)
            return rig
        yield make
        for rig in rigs:
            rig.close()
    return rig_factory


class TelnetClient:
    """A telnet client that agrees to what the server offers and hands
    everything else to a pyte stream.  Each option verb the server sends
    goes to ``_option`` (which records it in ``options``)."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=CEILING_S)
        self.sock.settimeout(0.2)
        self.options = []            # (verb, option) received
        self.raw = bytearray()       # the data bytes (IAC stripped) received
        self._pending = b""

    def send(self, data):
        self.sock.sendall(data)

    def _option(self, verb, opt):
        self.options.append((verb, opt))

    def _strip(self, data):
        data = self._pending + data
        self._pending = b""
        out = bytearray()
        i = 0
        while i < len(data):
            b = data[i]
            if b != IAC:
                out.append(b)
                i += 1
                continue
            if i + 1 >= len(data):
                self._pending = data[i:]
                break
            verb = data[i + 1]
            if verb == IAC:
                out.append(IAC)
                i += 2
            elif verb in (DO, DONT, WILL, WONT):
                if i + 2 >= len(data):
                    self._pending = data[i:]
                    break
                self._option(verb, data[i + 2])
                i += 3
            else:
                i += 2
        return bytes(out)

    def read(self, stream=None, seconds=0.2):
        """What arrives within ``seconds`` (data bytes, fed to ``stream``)."""
        return self._receive(stream, seconds)

    def _receive(self, stream, seconds):
        got = bytearray()
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                continue
            if not chunk:
                break
            data = self._strip(chunk)
            got += data
            if stream is not None:
                stream.feed(data)
        self.raw += got
        return bytes(got)

    def read_until(self, stream, predicate, timeout=CEILING_S):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if predicate():
                return True
            self._receive(stream, 0.05)
        return predicate()

    def close(self):
        self.sock.close()
