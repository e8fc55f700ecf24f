"""The VNC viewer: an RFB 3.8 server (RFC 6143) showing the card's frame.

* Versions 3.3, 3.7 and 3.8; security type None (the server listens on
  127.0.0.1 unless ``--listen`` says otherwise).
* The framebuffer is the video card's ``frame()`` at the mode's native
  resolution (CGA 640x200 in every mode, VGA 720x400 text, 640x480 mode 12h,
  320x200 mode 13h ...).  A change of size is sent with the DesktopSize
  pseudo-encoding (-223) to clients that announce it; others keep the size
  they were given (the picture is cut or padded with black).
* Encodings: Raw (0) and ZRLE (16), whichever the client prefers; any
  true-colour pixel format the client sets (8, 16, 24 or 32 bits, either
  byte order).
* Incremental updates carry only the 16x16 tiles that changed since what
  this client was last sent, merged into rectangles.  A new display epoch
  (``machine.display_epoch``: a snapshot was restored) sends the whole frame.
* Keys (X keysyms) reach the guest as XT scan codes only without the RPC
  server (``--no-rpc``); pointer events and cut text are read and ignored.

Each client has a reader thread (client messages) and a writer thread
(updates); both only talk to :class:`~pypc_core.frontends.display.Display`,
so a client that vanishes mid-frame ends its own threads and nothing else.
"""

import socket
import struct
import threading
import time
import zlib

import numpy as np

from .. import scancodes
from .display import Snapshot
from .listener import ViewerServer

ENC_RAW = 0
ENC_ZRLE = 16
ENC_DESKTOP_SIZE = -223
TILE = 16                       # dirty-tracking granularity (pixels)
ZRLE_TILE = 64
MAX_RECTS = 256                 # more changed rectangles than this: one bounding box

# the server's own pixel format: 32 bpp, depth 24, little endian, true colour,
# red at bit 16, green at 8, blue at 0 (bytes B, G, R, 0 in memory)
SERVER_FORMAT = (32, 24, 0, 1, 255, 255, 255, 16, 8, 0)


class PixelFormat:
    def __init__(self, bpp, depth, big_endian, true_colour, rmax, gmax, bmax,
                 rshift, gshift, bshift):
        self.bpp, self.depth = bpp, depth
        self.big_endian, self.true_colour = bool(big_endian), bool(true_colour)
        self.max = (rmax, gmax, bmax)
        self.shift = (rshift, gshift, bshift)

    @classmethod
    def parse(cls, data):
        fields = struct.unpack("!BBBBHHHBBB3x", data)
        return cls(*fields)

    def pack(self):
        return struct.pack("!BBBBHHHBBB3x", self.bpp, self.depth, self.big_endian,
                           self.true_colour, *self.max, *self.shift)

    def check(self):
        """A reason this format cannot be served, or None."""
        if not self.true_colour:
            return "colour-map pixel formats are not supported"
        if self.bpp not in (8, 16, 32):
            return f"{self.bpp} bits per pixel is not a valid RFB pixel size"
        for m, s in zip(self.max, self.shift):
            if m == 0 or (m & (m + 1)) or s + m.bit_length() > self.bpp:
                return "colour maxima/shifts do not fit the pixel"
        return None

    @property
    def bytes(self):
        return self.bpp // 8

    def values(self, rgb):
        """Pixel values (uint32[h, w]) of an RGB array."""
        out = np.zeros(rgb.shape[:2], dtype=np.uint32)
        for ch in range(3):
            m, s = self.max[ch], self.shift[ch]
            if m == 255:
                v = rgb[:, :, ch].astype(np.uint32)
            else:
                v = (rgb[:, :, ch].astype(np.uint32) * m + 127) // 255
            out |= v << np.uint32(s)
        return out

    def encode(self, rgb):
        """PIXEL bytes ``uint8[h, w, bytes]`` of an RGB array."""
        h, w = rgb.shape[:2]
        if (self.bpp == 32 and self.max == (255, 255, 255)
                and not self.big_endian and self.shift == (16, 8, 0)):
            out = np.zeros((h, w, 4), dtype=np.uint8)
            out[:, :, 0] = rgb[:, :, 2]
            out[:, :, 1] = rgb[:, :, 1]
            out[:, :, 2] = rgb[:, :, 0]
            return out
        v = self.values(rgb)
        dtype = {8: np.uint8, 16: np.uint16, 32: np.uint32}[self.bpp]
        order = ">" if self.big_endian else "<"
        arr = v.astype(np.dtype(dtype).newbyteorder(order))
        return arr.view(np.uint8).reshape(h, w, self.bytes)

    def cpixel_slice(self):
        """ZRLE's CPIXEL: the byte slice of a PIXEL it keeps."""
        if self.bpp != 32 or self.depth > 24:
            return slice(0, self.bytes)
        mask = 0
        for m, s in zip(self.max, self.shift):
            mask |= m << s
        if mask < (1 << 24):            # the 3 least significant bytes
            return slice(1, 4) if self.big_endian else slice(0, 3)
        if not mask & 0xFF:             # the 3 most significant bytes
            return slice(0, 3) if self.big_endian else slice(1, 4)
        return slice(0, 4)


def changed_rects(old, new, tile=TILE):
    """Rectangles ``(x, y, w, h)`` covering every pixel where ``new``
    differs from ``old`` (same shape), on a ``tile`` grid: runs of changed
    tiles in a tile row, stacked while the next row has the same run."""
    h, w = new.shape[:2]
    tiles = _changed_tiles(old, new, tile)
    th, tw = tiles.shape
    runs_by_row = []
    for ty in range(th):
        edges = np.diff(np.concatenate(([0], tiles[ty].astype(np.int8), [0])))
        starts = np.flatnonzero(edges == 1)
        ends = np.flatnonzero(edges == -1)
        runs_by_row.append([(int(a), int(b)) for a, b in zip(starts, ends)])
    rects = []
    open_rects = {}                  # (start, end) -> [ty0, ty1]
    for ty, runs in enumerate(runs_by_row + [[]]):
        current = set(runs)
        for key in list(open_rects):
            if key not in current:
                ty0, ty1 = open_rects.pop(key)
                rects.append((key[0], ty0, key[1], ty1))
        for key in runs:
            if key in open_rects:
                open_rects[key][1] = ty + 1
            else:
                open_rects[key] = [ty, ty + 1]
    out = []
    for tx0, ty0, tx1, ty1 in sorted(rects, key=lambda r: (r[1], r[0])):
        x, y = tx0 * tile, ty0 * tile
        out.append((x, y, min(w, tx1 * tile) - x, min(h, ty1 * tile) - y))
    return out


def _changed_tiles(old, new, tile):
    """bool[tile rows, tile columns]: where the two RGB frames differ.
    Compared 8 bytes at a time (rows of a width divisible by 8 are whole
    uint64s), then OR-reduced over each tile's rows and columns."""
    h, w = new.shape[:2]
    a = np.ascontiguousarray(old).reshape(h, w * 3)
    b = np.ascontiguousarray(new).reshape(h, w * 3)
    if w % 8 == 0 and tile % 8 == 0:
        a, b = a.view(np.uint64), b.view(np.uint64)
        step = tile * 3 // 8
    else:
        step = tile * 3
    diff = a != b
    rows = np.logical_or.reduceat(diff, np.arange(0, h, tile), axis=0)
    return np.logical_or.reduceat(rows, np.arange(0, diff.shape[1], step), axis=1)


def zrle_tiles(pixels, cslice):
    """The (uncompressed) ZRLE tile stream of a rectangle of PIXEL bytes
    ``uint8[h, w, bpp/8]``: each 64x64 tile solid (one colour), packed
    palette (2-16 colours, rows padded to a byte) or raw."""
    h, w = pixels.shape[:2]
    cpix = np.ascontiguousarray(pixels[:, :, cslice])
    nbytes = cpix.shape[2]
    key_src = np.zeros((h, w, 4), dtype=np.uint8)
    key_src[:, :, :nbytes] = cpix
    keys = key_src.view(np.uint32)[:, :, 0]
    out = bytearray()
    for ty in range(0, h, ZRLE_TILE):
        for tx in range(0, w, ZRLE_TILE):
            k = keys[ty:ty + ZRLE_TILE, tx:tx + ZRLE_TILE]
            tile = cpix[ty:ty + ZRLE_TILE, tx:tx + ZRLE_TILE]
            th, tw = k.shape
            flat = tile.reshape(-1, nbytes)
            if (k == k[0, 0]).all():
                out.append(1)
                out += flat[0].tobytes()
                continue
            uniq, first, inverse = np.unique(k.ravel(), return_index=True,
                                             return_inverse=True)
            n = len(uniq)
            if n <= 16:
                out.append(n)
                out += flat[first].tobytes()
                idx = inverse.reshape(th, tw).astype(np.uint8)
                bits = 1 if n == 2 else (2 if n <= 4 else 4)
                per = 8 // bits
                width = -(-tw // per) * per
                padded = np.zeros((th, width), dtype=np.uint8)
                padded[:, :tw] = idx
                groups = padded.reshape(th, width // per, per)
                packed = np.zeros((th, width // per), dtype=np.uint8)
                for j in range(per):
                    packed |= groups[:, :, j] << np.uint8(8 - bits * (j + 1))
                out += packed.tobytes()
            else:
                out.append(0)
                out += tile.tobytes()
    return bytes(out)


# -- keys ---------------------------------------------------------------------------

_KEYSYMS = {
    0xFF08: scancodes.BACKSPACE, 0xFF09: scancodes.TAB, 0xFF0D: scancodes.ENTER,
    0xFF1B: scancodes.ESC, 0xFF8D: scancodes.ENTER,
    0xFFE1: scancodes.LSHIFT, 0xFFE2: 0x36, 0xFFE3: scancodes.CTRL, 0xFFE4: scancodes.CTRL,
    0xFFE9: scancodes.ALT, 0xFFEA: scancodes.ALT, 0xFFE7: scancodes.ALT, 0xFFE8: scancodes.ALT,
    0xFFE5: 0x3A, 0xFF7F: 0x45, 0xFF14: 0x46,
    0xFF50: 0x47, 0xFF51: 0x4B, 0xFF52: 0x48, 0xFF53: 0x4D, 0xFF54: 0x50,
    0xFF55: 0x49, 0xFF56: 0x51, 0xFF57: 0x4F, 0xFF63: 0x52, 0xFFFF: 0x53,
    0xFF95: 0x47, 0xFF96: 0x4B, 0xFF97: 0x48, 0xFF98: 0x4D, 0xFF99: 0x50,
    0xFF9A: 0x49, 0xFF9B: 0x51, 0xFF9C: 0x4F, 0xFF9E: 0x52, 0xFF9F: 0x53,
    0xFFAA: 0x37, 0xFFAD: 0x4A, 0xFFAB: 0x4E,
}
for _n in range(10):
    _KEYSYMS[0xFFBE + _n] = 0x3B + _n                  # F1-F10
_KEYSYMS[0xFFB0] = 0x52                                # keypad 0-9
for _n, _code in enumerate((0x4F, 0x50, 0x51, 0x4B, 0x4C, 0x4D, 0x47, 0x48, 0x49), 1):
    _KEYSYMS[0xFFB0 + _n] = _code


def keysym_to_scancode(keysym):
    """The XT make code of the key that produces an X keysym, or None.
    Printable ASCII maps to its key whatever the shift state (the client
    sends Shift itself)."""
    code = _KEYSYMS.get(keysym)
    if code is not None:
        return code
    if 0x20 <= keysym <= 0x7E:
        try:
            strokes = scancodes.char_to_strokes(chr(keysym))
        except ValueError:
            return None
        makes = [s for s in strokes if s < 0x80 and s not in (scancodes.LSHIFT, scancodes.CTRL)]
        return makes[0] if makes else None
    return None


# -- the protocol -------------------------------------------------------------------

class ClientGone(Exception):
    pass


class VncSession:
    def __init__(self, server, sock, peer):
        self.server = server
        self.sock = sock
        self.peer = peer
        self.format = PixelFormat(*SERVER_FORMAT)
        self.encodings = [ENC_RAW]
        self.desktop_size = False
        self.closed = threading.Event()
        self._cond = threading.Condition()
        self._request = None             # (incremental, x, y, w, h) pending
        self._format_changed = False
        self.sent = None                 # the picture this client has (RGB)
        self.size = None                 # (w, h) the client knows
        self.epoch = None
        self.zlib = zlib.compressobj(6)
        self.updates = 0
        self.rects_sent = []             # rectangles of the last update (tests, debugging)

    # -- io ---------------------------------------------------------------
    def _recv(self, n):
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ClientGone()
            buf += chunk
        return bytes(buf)

    def _send(self, data):
        self.sock.sendall(data)

    def close(self):
        if self.closed.is_set():
            return
        self.closed.set()
        with self._cond:
            self._cond.notify_all()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        self.server._forget(self)

    def start(self):
        threading.Thread(target=self._run, daemon=True, name=f"vnc-{self.peer}").start()

    # -- handshake (reader thread) -----------------------------------------
    def _handshake(self, snap):
        self._send(b"RFB 003.008\n")
        version = self._recv(12)
        if not (version.startswith(b"RFB 003.") and version.endswith(b"\n")):
            raise ClientGone()
        try:
            minor = int(version[8:11])
        except ValueError:
            raise ClientGone() from None
        if minor >= 7:
            self._send(b"\x01\x01")              # one security type: None
            if self._recv(1) != b"\x01":
                if minor >= 8:
                    reason = b"only security type None (1) is offered"
                    self._send(struct.pack("!I", 1) + struct.pack("!I", len(reason)) + reason)
                raise ClientGone()
            if minor >= 8:
                self._send(struct.pack("!I", 0))
        else:
            self._send(struct.pack("!I", 1))     # 3.3: the server picks None
        self._recv(1)                            # ClientInit (shared flag)
        h, w = snap.frame.shape[:2]
        self.size = (w, h)
        name = f"pypc ({snap.adapter})".encode()
        self._send(struct.pack("!HH", w, h) + self.format.pack()
                   + struct.pack("!I", len(name)) + name)

    def _run(self):
        display = self.server.display
        try:
            snap = display.wait(0, frame=True, timeout=2.0, urgent=True) or display.latest()
            if snap is None or snap.frame is None:       # the machine loop is not serving
                snap = Snapshot(seq=0, epoch=None, adapter="none", mode="none",
                                frame=np.zeros((200, 640, 3), dtype=np.uint8))
            self._handshake(snap)
            threading.Thread(target=self._writer, daemon=True,
                             name=f"vnc-out-{self.peer}").start()
            self._reader()
        except (ClientGone, OSError, struct.error):
            pass
        finally:
            self.close()

    def _reader(self):
        while not self.closed.is_set():
            kind = self._recv(1)[0]
            if kind == 0:                        # SetPixelFormat
                fmt = PixelFormat.parse(self._recv(19)[3:])
                problem = fmt.check()
                if problem is not None:
                    raise ClientGone()
                with self._cond:
                    self.format = fmt
                    self._format_changed = True
            elif kind == 2:                      # SetEncodings
                count = struct.unpack("!xH", self._recv(3))[0]
                encs = list(struct.unpack(f"!{count}i", self._recv(4 * count))) if count else []
                with self._cond:
                    self.encodings = encs
                    self.desktop_size = ENC_DESKTOP_SIZE in encs
            elif kind == 3:                      # FramebufferUpdateRequest
                incremental, x, y, w, h = struct.unpack("!BHHHH", self._recv(9))
                with self._cond:
                    self._request = (bool(incremental), x, y, w, h)
                    self._cond.notify_all()
            elif kind == 4:                      # KeyEvent
                down, key = struct.unpack("!B2xI", self._recv(7))
                code = keysym_to_scancode(key)
                if code is not None:
                    self.server.display.send_keys([code if down else code | scancodes.BREAK])
            elif kind == 5:                      # PointerEvent: no mouse on this XT
                self._recv(5)
            elif kind == 6:                      # ClientCutText: ignored
                length = struct.unpack("!3xI", self._recv(7))[0]
                while length:
                    length -= len(self._recv(min(length, 65536)))
            else:
                raise ClientGone()               # unknown message: cannot resync

    # -- updates (writer thread) -------------------------------------------
    def _writer(self):
        display = self.server.display
        seq = 0
        try:
            while not self.closed.is_set():
                with self._cond:
                    while self._request is None and not self.closed.is_set():
                        self._cond.wait(0.5)
                    request = self._request
                if request is None:
                    break
                incremental = request[0]
                # a full request is answered with a picture taken after it came
                after = seq if incremental else max(seq, display.seq)
                snap = display.wait(after, frame=True, timeout=0.5, urgent=not incremental)
                if snap is None:
                    if display.closed:
                        break
                    if incremental:
                        continue
                    snap = display.latest()
                    if snap is None or snap.frame is None:
                        continue
                seq = snap.seq
                with self._cond:
                    if self._request is not request and self._request is not None:
                        request = self._request       # a newer request replaced it
                    fmt = self.format
                    encodings = list(self.encodings)
                    desktop = self.desktop_size
                    if self._format_changed:
                        self._format_changed = False
                        self.sent = None              # resend everything in the new format
                started = time.perf_counter()
                rects, pseudo = self._plan(snap, request, desktop)
                if not rects and not pseudo:
                    display.pace(started, time.perf_counter() - started)
                    continue                          # nothing changed: keep waiting
                with self._cond:
                    if self._request is request:
                        self._request = None
                data = self._encode_update(rects, pseudo, fmt, encodings)
                cost = time.perf_counter() - started
                self._send(data)
                display.pace(started, cost)
        except (OSError, ClientGone):
            pass
        finally:
            self.close()

    def _plan(self, snap, request, desktop):
        """The rectangles (and DesktopSize pseudo-rectangle) this update
        sends, and what this client will have afterwards (``self.sent``)."""
        incremental, rx, ry, rw, rh = request
        frame = snap.frame
        h, w = frame.shape[:2]
        cw, ch = self.size
        pseudo = None
        if (w, h) != (cw, ch):
            if desktop:
                pseudo = (w, h)
                self.size = (w, h)
                cw, ch = w, h
                self.sent = None
            else:
                fitted = np.zeros((ch, cw, 3), dtype=np.uint8)
                fitted[:min(h, ch), :min(w, cw)] = frame[:ch, :cw]
                frame = fitted
                h, w = ch, cw
        self._frame = frame
        if self.sent is None or self.sent.shape != frame.shape or snap.epoch != self.epoch:
            self.epoch = snap.epoch
            self.sent = frame.copy()
            return [(0, 0, w, h)], pseudo
        if not incremental:
            x0, y0 = min(rx, w), min(ry, h)
            x1, y1 = min(w, rx + rw), min(h, ry + rh)
            if not (x1 > x0 and y1 > y0):
                x0, y0, x1, y1 = 0, 0, w, h
            self.sent[y0:y1, x0:x1] = frame[y0:y1, x0:x1]
            return [(x0, y0, x1 - x0, y1 - y0)], pseudo
        rects = changed_rects(self.sent, frame)
        if len(rects) > MAX_RECTS:
            xs = [r[0] for r in rects] + [r[0] + r[2] for r in rects]
            ys = [r[1] for r in rects] + [r[1] + r[3] for r in rects]
            rects = [(min(xs), min(ys), max(xs) - min(xs), max(ys) - min(ys))]
        if rects:
            self.sent = frame.copy()
        return rects, pseudo

    def _encode_update(self, rects, pseudo, fmt, encodings):
        frame = self._frame
        encoding = ENC_RAW
        for e in encodings:
            if e in (ENC_RAW, ENC_ZRLE):
                encoding = e
                break
        parts = []
        count = len(rects) + (1 if pseudo else 0)
        parts.append(struct.pack("!BxH", 0, count))
        if pseudo:
            parts.append(struct.pack("!HHHHi", 0, 0, pseudo[0], pseudo[1], ENC_DESKTOP_SIZE))
        for x, y, w, h in rects:
            pixels = fmt.encode(frame[y:y + h, x:x + w])
            parts.append(struct.pack("!HHHHi", x, y, w, h, encoding))
            if encoding == ENC_ZRLE:
                raw = zrle_tiles(pixels, fmt.cpixel_slice())
                data = self.zlib.compress(raw) + self.zlib.flush(zlib.Z_SYNC_FLUSH)
                parts.append(struct.pack("!I", len(data)))
                parts.append(data)
            else:
                parts.append(pixels.tobytes())
        self.rects_sent = list(rects)
        self.updates += 1
        return b"".join(parts)


class VncServer(ViewerServer):
    """Listens on ``host:port``; one :class:`VncSession` per client."""

    session_class = VncSession
    option = "--vnc-port"
