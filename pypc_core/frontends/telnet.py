"""The telnet viewer: the guest's text screen in a terminal.

``telnet 127.0.0.1 2300`` shows the displayed text page in the 16 ANSI
colours (CGA order mapped to ANSI), with the guest's cursor, redrawing only
the cells that changed; a graphics mode shows a notice instead.  Keys typed
in the telnet client reach the guest as XT scan codes only when the machine
runs without the RPC server (``--no-rpc``); otherwise the viewer is
view-only, as the API contract says.

Negotiation: the server offers WILL ECHO and WILL SUPPRESS-GO-AHEAD (the
client goes to character mode and stops echoing) and binary transmission
both ways (UTF-8 box-drawing characters, 8-bit keys); it refuses every other
option.  One thread per connection; a client that goes away at any moment
only ends its own thread.
"""

import re
import socket
import threading
import time

from .listener import ViewerServer

IAC, DONT, DO, WONT, WILL, SB, SE = 255, 254, 253, 252, 251, 250, 240
OPT_BINARY, OPT_ECHO, OPT_SGA = 0, 1, 3
OFFERED = (OPT_ECHO, OPT_SGA, OPT_BINARY)     # options the server does (WILL)
ACCEPTED = (OPT_SGA, OPT_BINARY)              # options the client may do (DO)

# CGA colour number -> ANSI colour number (0-7); bright colours add 60 (90-97)
CGA_TO_ANSI = (0, 4, 2, 6, 1, 5, 3, 7)

# CP437 as Unicode, with the graphic characters of 01h-1Fh and 7Fh
_LOW = (" \u263a\u263b\u2665\u2666\u2663\u2660\u2022\u25d8\u25cb\u25d9\u2642\u2640\u266a"
        "\u266b\u263c\u25ba\u25c4\u2195\u203c\u00b6\u00a7\u25ac\u21a8\u2191\u2193\u2192"
        "\u2190\u221f\u2194\u25b2\u25bc")
CP437 = [(_LOW[i] if i < 32 else bytes([i]).decode("cp437")) for i in range(256)]
CP437[0x7F] = "\u2302"
CP437[0xFF] = " "

SETUP = "\x1b[0m\x1b[?7l\x1b[2J\x1b[H"      # no autowrap, clear
FAREWELL = "\x1b[0m\x1b[?7h\x1b[?25h\r\n"
_PARTIAL_ESCAPE = re.compile(r"\x1b(\[[0-9;]*|O)?$")


def sgr(attr, blink_enabled):
    """The SGR sequence for a text attribute byte."""
    fg = attr & 0x0F
    bg = (attr >> 4) & (0x07 if blink_enabled else 0x0F)
    parts = ["0"]
    parts.append(str((90 if fg & 8 else 30) + CGA_TO_ANSI[fg & 7]))
    parts.append(str((100 if bg & 8 else 40) + CGA_TO_ANSI[bg & 7]))
    if blink_enabled and attr & 0x80:
        parts.append("5")
    return "\x1b[" + ";".join(parts) + "m"


def render_rows(codes, attrs, blink, old_codes=None, old_attrs=None):
    """ANSI text that draws the cells that differ from ``old_*`` (all cells
    when those are None): for each changed row, the span from its first to
    its last changed cell, with the SGR switched only where the attribute
    changes."""
    out = []
    rows, cols = codes.shape
    if old_codes is None or old_codes.shape != codes.shape:
        changed = None
    else:
        changed = (codes != old_codes) | (attrs != old_attrs)
    for r in range(rows):
        if changed is None:
            first, last = 0, cols - 1
        else:
            cols_changed = changed[r].nonzero()[0]
            if not len(cols_changed):
                continue
            first, last = int(cols_changed[0]), int(cols_changed[-1])
        out.append(f"\x1b[{r + 1};{first + 1}H")
        crow = codes[r].tolist()
        arow = attrs[r].tolist()
        current = None
        for c in range(first, last + 1):
            a = arow[c]
            if a != current:
                out.append(sgr(a, blink))
                current = a
            out.append(CP437[crow[c]])
    return "".join(out)


def graphics_notice(snapshot, cols=80, vnc_port=None):
    """The screen a telnet viewer shows while the guest is in a graphics mode."""
    lines = [f"graphics mode ({snapshot.adapter} {snapshot.mode})",
             "the telnet viewer shows text modes only"]
    if vnc_port:
        lines.append(f"watch it with a VNC viewer on port {vnc_port}")
    out = ["\x1b[0m\x1b[2J\x1b[?25l"]
    for i, line in enumerate(lines):
        out.append(f"\x1b[{11 + i};{max(1, (cols - len(line)) // 2 + 1)}H\x1b[7m {line} \x1b[0m")
    return "".join(out)


class TelnetInput:
    """Bytes from a telnet client -> (replies to send, keyboard text).
    Strips IAC commands and sub-negotiations, answers option requests
    (refusing anything not in OFFERED/ACCEPTED, never answering a state
    that is already in force, so no negotiation loops), and turns the
    telnet newline conventions (CR LF, CR NUL) into one CR."""

    def __init__(self):
        self.state = "data"
        self.verb = None
        self.mine = set(OFFERED)        # options enabled on the server side
        self.theirs = set()             # options enabled on the client side
        self.last_cr = False

    def opening(self):
        out = bytearray()
        for opt in OFFERED:
            out += bytes((IAC, WILL, opt))
        for opt in ACCEPTED:
            out += bytes((IAC, DO, opt))
        return bytes(out)

    def feed(self, data):
        replies = bytearray()
        text = []
        for b in data:
            st = self.state
            if st == "data":
                if b == IAC:
                    self.state = "iac"
                    continue
                self._char(b, text)
            elif st == "iac":
                if b == IAC:
                    self.state = "data"
                    self._char(b, text)
                elif b in (DO, DONT, WILL, WONT):
                    self.verb = b
                    self.state = "option"
                elif b == SB:
                    self.state = "sb"
                else:
                    self.state = "data"          # NOP, AYT, GA, ... ignored
            elif st == "option":
                replies += self._negotiate(self.verb, b)
                self.state = "data"
            elif st == "sb":
                if b == IAC:
                    self.state = "sb_iac"
            elif st == "sb_iac":
                self.state = "data" if b == SE else "sb"
        return bytes(replies), "".join(text)

    def _char(self, b, text):
        if self.last_cr:
            self.last_cr = False
            if b in (0x00, 0x0A):
                return                          # CR NUL / CR LF: one Enter
        if b == 0x0D:
            self.last_cr = True
        elif b == 0x0A:
            b = 0x0D                            # a bare LF is Enter too
        elif b == 0x00:
            return
        text.append(chr(b))

    def _negotiate(self, verb, opt):
        if verb == DO:
            if opt in OFFERED:
                if opt not in self.mine:
                    self.mine.add(opt)
                    return bytes((IAC, WILL, opt))
                return b""
            return bytes((IAC, WONT, opt))
        if verb == DONT:
            if opt in self.mine:
                self.mine.discard(opt)
                return bytes((IAC, WONT, opt))
            return b""
        if verb == WILL:
            if opt in ACCEPTED:
                if opt not in self.theirs:
                    self.theirs.add(opt)
                    # our DO was sent in the opening; a WILL answering it
                    # needs no reply
                return b""
            return bytes((IAC, DONT, opt))
        # WONT
        self.theirs.discard(opt)
        return b""


class TelnetSession:
    def __init__(self, server, sock, peer):
        self.server = server
        self.sock = sock
        self.peer = peer
        self.input = TelnetInput()
        self.closed = threading.Event()
        self._send_lock = threading.Lock()
        self._kbd_tail = ""

    def start(self):
        threading.Thread(target=self._reader, daemon=True,
                         name=f"telnet-in-{self.peer}").start()
        threading.Thread(target=self._writer, daemon=True,
                         name=f"telnet-out-{self.peer}").start()

    def send(self, data):
        if isinstance(data, str):
            data = data.encode("utf-8").replace(b"\xff", b"\xff\xff")
        with self._send_lock:
            self.sock.sendall(data)

    def close(self):
        if self.closed.is_set():
            return
        self.closed.set()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        self.server._forget(self)

    def _reader(self):
        try:
            while not self.closed.is_set():
                data = self.sock.recv(4096)
                if not data:
                    break
                replies, text = self.input.feed(data)
                if text:
                    self._keys(text)            # before the replies: a reply to
                if replies:                     # a later option means the keys
                    self.send(replies)          # before it are queued
        except OSError:
            pass
        finally:
            self.close()

    def _keys(self, text):
        """Keyboard text -> scan codes for the machine (dropped by the
        display unless --no-rpc).  An escape sequence cut by a packet
        boundary is kept for the next packet."""
        from ..launcher import keys_from_terminal
        text = self._kbd_tail + text
        self._kbd_tail = ""
        cut = _PARTIAL_ESCAPE.search(text)
        if cut is not None and len(cut.group(0)) > 1:     # a lone ESC is the Esc key
            self._kbd_tail = cut.group(0)
            text = text[:cut.start()]
        codes = keys_from_terminal(text)
        if codes:
            self.server.display.send_keys(codes)

    def _writer(self):
        display = self.server.display
        seq = 0
        last_codes = last_attrs = None
        last_mode = last_epoch = last_cursor = None
        try:
            self.send(self.input.opening())
            self.send(SETUP)
            first = True
            while not self.closed.is_set():
                snap = display.wait(seq, text=True, timeout=0.5, urgent=first)
                if snap is None:
                    if display.closed:
                        break
                    continue
                first = False
                seq = snap.seq
                started = time.perf_counter()
                out = []
                redraw = snap.epoch != last_epoch or snap.mode != last_mode
                if snap.graphics:
                    if redraw:
                        out.append(graphics_notice(snap, vnc_port=self.server.vnc_port))
                    last_codes = last_attrs = last_cursor = None
                else:
                    if redraw:
                        out.append("\x1b[0m\x1b[2J")
                        last_codes = last_attrs = None
                    body = render_rows(snap.codes, snap.attrs, snap.blink,
                                       last_codes, last_attrs)
                    cur = snap.cursor or {}
                    rows, cols = snap.codes.shape
                    row, col = cur.get("row"), cur.get("column")
                    shown = bool(cur.get("enabled")) and row is not None and col is not None \
                        and row < rows and col < cols
                    cursor = (shown, row, col)
                    if body or cursor != last_cursor:
                        out.append(body)
                        if shown:
                            out.append(f"\x1b[0m\x1b[{row + 1};{col + 1}H\x1b[?25h")
                        else:
                            out.append("\x1b[0m\x1b[?25l")
                    last_codes, last_attrs, last_cursor = snap.codes, snap.attrs, cursor
                last_mode, last_epoch = snap.mode, snap.epoch
                if out:
                    self.send("".join(out))
                display.pace(started, time.perf_counter() - started)
        except OSError:
            pass
        finally:
            self.close()


class TelnetServer(ViewerServer):
    """Listens on ``host:port``; one :class:`TelnetSession` per client."""

    session_class = TelnetSession
    option = "--telnet-port"

    def __init__(self, display, host, port, vnc_port=None):
        super().__init__(display, host, port)
        self.vnc_port = vnc_port

    def farewell(self, session):
        try:
            session.send(FAREWELL)
        except OSError:
            pass
