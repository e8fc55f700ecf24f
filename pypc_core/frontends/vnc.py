"""The VNC viewer: an RFB 3.8 server (RFC 6143) showing the card's frame.

* Versions 3.3, 3.7 and 3.8; security type None (the server listens on
  127.0.0.1 unless ``--listen`` says otherwise), or with
  ``--vnc-password-file`` only VNC Authentication (type 2, a DES
  challenge: :mod:`.rfbauth`); a wrong answer gets SecurityResult "failed"
  (and, in 3.8, the reason) and the connection is closed.
* The framebuffer is the video card's ``frame()`` at the mode's native
  resolution (CGA 640x200 in every mode, VGA 720x400 text, 640x480 mode 12h,
  320x200 mode 13h ...).  A change of size is sent with the DesktopSize
  pseudo-encoding (-223) to clients that announce it; others keep the size
  they were given (the picture is cut or padded with black).
* Encodings: Raw (0) and ZRLE (16), whichever the client prefers; any
  true-colour pixel format the client sets (8, 16 or 32 bits, either byte
  order).
* Colour-map pixel formats (true-colour flag 0; 8, 16 or 32 bits, a map of
  2^depth entries, at most 65,536): each client has its own
  :class:`ColourMap`, filled with the colours it is sent in the order they
  appear; the entries an update adds go out in SetColourMapEntries just
  before it, and when they do not fit the map is built again from the
  frame, sent whole, and the whole frame follows.  Pixels are map indices
  (ZRLE's CPIXEL is then the whole PIXEL).  A format that is still invalid
  (another pixel size, maxima or shifts that do not fit, a colour-map depth
  outside 1..bpp) closes the connection, since RFB cannot say why after the
  handshake; the reason is kept in ``VncServer.refusals`` and noted in
  the machine's diagnostics ring (warning, source ``vnc``).
* Incremental updates carry only the 16x16 tiles that changed since what
  this client was last sent, merged into rectangles.  A new display epoch
  (``machine.display_epoch``: a snapshot was restored) sends the whole frame.
* Keys (X keysyms) reach the guest as XT scan codes only without the RPC
  server (``--no-rpc``); pointer events and cut text are read and ignored.

Each client has a reader thread (client messages) and a writer thread
(updates); both only talk to :class:`~pypc_core.frontends.display.Display`
(and, for a refused format, to the machine's diagnostics ring, which is
safe from any thread), so a client that vanishes mid-frame ends its own
threads and nothing else.
"""

import collections
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

MAP_SIZE_MAX = 1 << 16          # colour-map entries SetColourMapEntries can number
MAP_MESSAGE_MAX = 0xFFFF        # colours one SetColourMapEntries can carry

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
        if self.bpp not in (8, 16, 32):
            return f"{self.bpp} bits per pixel is not a valid RFB pixel size"
        if not self.true_colour:
            # a colour map: the pixel is an index of ``depth`` useful bits
            # (the maxima and shifts mean nothing)
            if not 1 <= self.depth <= self.bpp:
                return (f"depth {self.depth} does not fit a {self.bpp}-bit "
                        "colour-map pixel")
            return None
        for m, s in zip(self.max, self.shift):
            if m == 0 or (m & (m + 1)) or s + m.bit_length() > self.bpp:
                return "colour maxima/shifts do not fit the pixel"
        return None

    @property
    def bytes(self):
        return self.bpp // 8

    @property
    def map_size(self):
        """Colour-map formats: the entries the client's map has, 2^depth,
        at most 65,536 (SetColourMapEntries numbers them with 16 bits)."""
        return min(1 << self.depth, MAP_SIZE_MAX)

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
        return self.pack_values(self.values(rgb))

    def pack_values(self, values):
        """PIXEL bytes ``uint8[h, w, bytes]`` of pixel values ``[h, w]``
        (true-colour values, or colour-map indices)."""
        h, w = values.shape
        dtype = {8: np.uint8, 16: np.uint16, 32: np.uint32}[self.bpp]
        order = ">" if self.big_endian else "<"
        arr = values.astype(np.dtype(dtype).newbyteorder(order))
        return arr.view(np.uint8).reshape(h, w, self.bytes)

    def cpixel_slice(self):
        """ZRLE's CPIXEL: the byte slice of a PIXEL it keeps (the whole
        PIXEL except for true colour in 32 bits with depth 24 or less, whose
        colour bits fit the 3 low or the 3 high bytes; RFC 6143 7.7.6)."""
        if not self.true_colour or self.bpp != 32 or self.depth > 24:
            return slice(0, self.bytes)
        mask = 0
        for m, s in zip(self.max, self.shift):
            mask |= m << s
        if mask < (1 << 24):            # the 3 least significant bytes
            return slice(1, 4) if self.big_endian else slice(0, 3)
        if not mask & 0xFF:             # the 3 most significant bytes
            return slice(0, 3) if self.big_endian else slice(1, 4)
        return slice(0, 4)


def colour_keys(rgb):
    """``uint32[h, w]``: each pixel's colour as one number, R<<16 | G<<8 | B."""
    c = rgb.astype(np.uint32)
    return (c[:, :, 0] << np.uint32(16)) | (c[:, :, 1] << np.uint32(8)) | c[:, :, 2]


def key_colours(keys):
    """``uint8[n, 3]``: the RGB colours of colour keys ``[n]``."""
    keys = np.asarray(keys, dtype=np.uint32)
    return np.stack([(keys >> np.uint32(s)) & np.uint32(0xFF) for s in (16, 8, 0)],
                    axis=1).astype(np.uint8)


class ColourMap:
    """What a client in a colour-map pixel format has in its map: an index
    for every colour it was sent, new colours taking the next free indices
    (writer thread only).

    :meth:`update` gives the new colours of the pixels about to be sent
    free indices, or, when they do not fit in ``size`` entries, builds the
    map again from the whole frame (the caller then sends the whole
    frame).  Indices are exact whenever the frame's colours fit the map; a
    frame with more colours than the map has entries (a client with a
    small ``depth``) keeps its most frequent colours and draws the others
    with the nearest entry."""

    def __init__(self, size):
        self.size = size
        self.keys = np.zeros(0, dtype=np.uint32)      # sorted colour keys in the map
        self.index = np.zeros(0, dtype=np.uint32)     # their indices, same order
        self.count = 0                                # entries in use: 0 .. count-1
        self.approximate = False                      # built from a frame that did not fit

    def missing(self, keys):
        """The colour keys of ``keys`` (``[n]``) that are not in the map."""
        if not self.count:
            return keys
        pos = np.minimum(np.searchsorted(self.keys, keys), self.count - 1)
        return keys[self.keys[pos] != keys]

    def update(self, seen, frame_keys):
        """Make room for the colours ``seen`` (the colour keys ``[n]`` of
        the pixels to send); ``frame_keys`` (a callable) gives the whole
        frame's keys if the map must be rebuilt.  Returns ``(entries,
        rebuilt)``: the ``(first, keys)`` runs the client must be sent in
        SetColourMapEntries, and whether the map was rebuilt."""
        new = np.unique(self.missing(seen))          # (sorting only what is new)
        if not len(new):
            return [], False
        if self.count + len(new) <= self.size:
            first = self.count
            self._add(new, np.arange(first, first + len(new), dtype=np.uint32))
            return [(first, new)], False
        colours, counts = np.unique(frame_keys(), return_counts=True)
        if len(colours) > self.size:
            if self.approximate and self.count == self.size:
                return [], False        # still too many: new colours take nearest entries
            colours = colours[np.argsort(-counts, kind="stable")[:self.size]]
            colours.sort()
        self.keys = np.zeros(0, dtype=np.uint32)
        self.index = np.zeros(0, dtype=np.uint32)
        self.count = 0
        self.approximate = len(colours) < len(counts)
        self._add(colours, np.arange(len(colours), dtype=np.uint32))
        return [(0, colours)], True

    def _add(self, keys, indices):
        keys = np.concatenate([self.keys, keys])
        indices = np.concatenate([self.index, indices])
        order = np.argsort(keys, kind="stable")
        self.keys, self.index = keys[order], indices[order]
        self.count = len(self.keys)

    def indices(self, keys):
        """Map indices (``uint32``, the shape of ``keys``) of colour keys."""
        flat = keys.ravel()
        pos = np.minimum(np.searchsorted(self.keys, flat), self.count - 1)
        out = self.index[pos]
        miss = self.keys[pos] != flat
        if miss.any():                              # only in an approximate map
            lost, where = np.unique(flat[miss], return_inverse=True)
            b = key_colours(self.keys).astype(np.int32)[None, :, :]
            nearest = np.zeros(len(lost), dtype=np.intp)
            step = max(1, (1 << 20) // len(self.keys))          # a few MB at a time
            for i in range(0, len(lost), step):
                a = key_colours(lost[i:i + step]).astype(np.int32)[:, None, :]
                nearest[i:i + step] = ((a - b) ** 2).sum(axis=2).argmin(axis=1)
            out[miss] = self.index[nearest][where.ravel()]
        return out.reshape(keys.shape)


def colour_map_message(first, keys):
    """SetColourMapEntries messages (server type 1) for the colours ``keys``
    at indices ``first`` on, each component 0..65535 (c * 257)."""
    parts = []
    rgb = (key_colours(keys).astype(np.uint32) * 257).astype(">u2")
    for start in range(0, len(keys), MAP_MESSAGE_MAX):
        chunk = rgb[start:start + MAP_MESSAGE_MAX]
        parts.append(struct.pack("!BxHH", 1, first + start, len(chunk)))
        parts.append(chunk.tobytes())
    return b"".join(parts)


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
        self.colour_map = None           # a ColourMap while the format has a colour map
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
        password = self.server.password
        offered = 2 if password is not None else 1       # VNC Authentication, or None
        if minor >= 7:
            self._send(bytes((1, offered)))              # one security type
            if self._recv(1) != bytes((offered,)):
                if minor >= 8:
                    reason = (b"only VNC Authentication (2) is offered" if password is not None
                              else b"only security type None (1) is offered")
                    self._send(struct.pack("!I", 1) + struct.pack("!I", len(reason)) + reason)
                raise ClientGone()
        else:
            self._send(struct.pack("!I", offered))       # 3.3: the server picks
        if password is not None:
            from .rfbauth import check_response, new_challenge
            challenge = new_challenge()
            self._send(challenge)
            if not check_response(password, challenge, self._recv(16)):
                self.server.auth_failed(self)
                reason = b"authentication failed"
                self._send(struct.pack("!I", 1) + (struct.pack("!I", len(reason)) + reason
                                                   if minor >= 8 else b""))
                raise ClientGone()
            self._send(struct.pack("!I", 0))
        elif minor >= 8:
            self._send(struct.pack("!I", 0))             # SecurityResult OK (3.8 sends it
                                                         # for None too)
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
                    self.server.refuse(self, problem)
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
                        # and after SetPixelFormat the client's colour map is
                        # undefined (RFC 6143 7.5.1): a new one, filled as we go
                        self.colour_map = None if fmt.true_colour else ColourMap(fmt.map_size)
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
        keys = None
        if not fmt.true_colour:
            message, rects, keys = self._map_colours(rects)
            parts.append(message)                 # the new entries before the pixels
        count = len(rects) + (1 if pseudo else 0)
        parts.append(struct.pack("!BxH", 0, count))
        if pseudo:
            parts.append(struct.pack("!HHHHi", 0, 0, pseudo[0], pseudo[1], ENC_DESKTOP_SIZE))
        for i, (x, y, w, h) in enumerate(rects):
            if keys is None:
                pixels = fmt.encode(frame[y:y + h, x:x + w])
            else:
                pixels = fmt.pack_values(self.colour_map.indices(keys[i]))
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

    def _map_colours(self, rects):
        """Colour-map formats: (SetColourMapEntries for the colours of
        ``rects`` the client's map lacks, the rectangles to send -- the
        whole frame when the map had to be rebuilt --, their colour keys)."""
        frame = self._frame
        keys = [colour_keys(frame[y:y + h, x:x + w]) for x, y, w, h in rects]
        if not keys:
            return b"", rects, keys
        whole = []

        def frame_keys():
            if not whole:
                whole.append(colour_keys(frame))
            return whole[0]
        seen = np.concatenate([k.ravel() for k in keys])
        entries, rebuilt = self.colour_map.update(seen, frame_keys)
        if rebuilt:
            h, w = frame.shape[:2]
            rects, keys = [(0, 0, w, h)], [frame_keys()]
            self.sent = frame.copy()
        return b"".join(colour_map_message(f, k) for f, k in entries), rects, keys


class VncServer(ViewerServer):
    """Listens on ``host:port``; one :class:`VncSession` per client."""

    session_class = VncSession
    option = "--vnc-port"

    def __init__(self, *args, password=None, **kw):
        super().__init__(*args, **kw)
        self.password = password        # bytes: VNC Authentication only (--vnc-password-file)
        self.refusals = collections.deque(maxlen=32)    # (peer, reason), newest last

    def auth_failed(self, session):
        """A client's answer to the VNC Authentication challenge was wrong:
        noted in :attr:`refusals` and the diagnostics ring (it is told
        "authentication failed" and closed)."""
        reason = "VNC Authentication failed (wrong password)"
        self.refusals.append((session.peer, reason))
        ring = getattr(self.display.machine, "diagnostics", None)
        if ring is not None:
            ring.add("warning", f"VNC viewer {session.peer}: {reason}", "vnc")

    def refuse(self, session, reason):
        """A client's SetPixelFormat cannot be served.  RFB has no message
        that says so after the handshake, so its connection is closed; the
        reason is kept in :attr:`refusals` and written to the machine's
        diagnostics ring (``Machine.diagnostics``: level warning, source
        ``vnc``; the ring is host-side and safe from any thread).  Nothing
        is printed: the live view may own the terminal."""
        self.refusals.append((session.peer, reason))
        ring = getattr(self.display.machine, "diagnostics", None)
        if ring is not None:
            ring.add("warning", f"VNC viewer {session.peer}: {reason}; connection "
                     "closed (RFB cannot tell the viewer why)", "vnc")
