"""The telnet viewer: the guest's text screen in a terminal.

``telnet 127.0.0.1 2300`` shows the displayed text page in the 16 ANSI
colours (CGA order mapped to ANSI), with the guest's cursor, redrawing only
the cells that changed; a graphics mode shows a notice instead.  Keys typed
in the telnet client reach the guest as XT scan codes only when the machine
runs without the RPC server (``--no-rpc``); otherwise the viewer is
view-only, as the API contract says.

Negotiation: the server offers WILL ECHO and WILL SUPPRESS-GO-AHEAD (the
client goes to character mode and stops echoing) and binary transmission
both ways (UTF-8 box-drawing characters, 8-bit keys), and asks DO NAWS (RFC
1073) for the client's window size; it refuses every other option.

Window size: until the client reports one (and when it refuses NAWS or never
answers) the guest's screen is drawn at the top-left as it is.  A reported
window that holds the guest's screen (80x25 or 40x25; the viewer draws
nothing else) gets exactly that.  A smaller one is never written past its
right edge or last row, so it never wraps or scrolls: its last row is a
notice in reverse video ("window 60x20 < guest 80x25: rows 1-19, columns
1-60", shorter wordings in narrow windows) and the rows above show a
window-sized part of the guest's screen -- the top-left part, moved by as
little as needed to keep the guest's cursor in view while the cursor is on
(a DOS prompt on row 25 stays visible in an 80x24 terminal).  A size of 0
means that dimension is unknown and is taken as the guest's.  A new size
redraws everything, from the last picture if the machine stands still; the
graphics-mode notice is centred in the window and cut to fit.  The first
picture waits up to NAWS_WAIT_S for the client's answer, so a small window
never gets a full-size one first.

One thread per connection; a client that goes away at any moment only ends
its own thread.
"""

import re
import socket
import threading
import time

from .listener import ViewerServer

IAC, DONT, DO, WONT, WILL, SB, SE = 255, 254, 253, 252, 251, 250, 240
OPT_BINARY, OPT_ECHO, OPT_SGA, OPT_NAWS = 0, 1, 3, 31
OFFERED = (OPT_ECHO, OPT_SGA, OPT_BINARY)     # options the server does (WILL)
ACCEPTED = (OPT_SGA, OPT_BINARY, OPT_NAWS)    # options the client may do (DO)
SB_LIMIT = 64           # a longer sub-negotiation is read to its end and ignored
NAWS_WAIT_S = 1.0       # how long the first picture waits for the client's size

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


def graphics_notice(snapshot, cols=80, vnc_port=None, rows=None):
    """The screen a telnet viewer shows while the guest is in a graphics
    mode, centred in ``cols`` columns from row 11 (``rows``, the window's
    height when it is under 25: centred in it, lines that do not fit left
    out); a line is cut to ``cols - 1`` cells."""
    lines = [f"graphics mode ({snapshot.adapter} {snapshot.mode})",
             "the telnet viewer shows text modes only"]
    if vnc_port:
        lines.append(f"watch it with a VNC viewer on port {vnc_port}")
    if rows is None or rows >= 25:
        top = 11
    else:
        lines = lines[:rows]
        top = max(1, (rows - len(lines)) // 2 + 1)
    out = ["\x1b[0m\x1b[2J\x1b[?25l"]
    for i, line in enumerate(lines):
        shown = f" {line} "[:max(0, cols - 1)]
        if shown:
            col = max(1, min((cols - len(line)) // 2 + 1, cols - len(shown)))
            out.append(f"\x1b[{top + i};{col}H\x1b[7m{shown}\x1b[0m")
    return "".join(out)


def window_notice(window, guest, top, left, shown_rows, shown_cols):
    """The last row of a window smaller than the guest's screen: the window,
    the guest's size and which guest rows and columns are shown (1-based),
    in the longest wording that fits in ``window``'s width less one cell
    (the bottom-right cell stays blank)."""
    w, h = (str(n) if n else "?" for n in window)
    cols, rows = guest
    if shown_rows:
        rr = f"{top + 1}-{top + shown_rows}"
        cc = f"{left + 1}-{left + shown_cols}"
        wordings = (f"window {w}x{h} is smaller than the guest's {cols}x{rows} screen: "
                    f"rows {rr}, columns {cc} shown",
                    f"window {w}x{h} < guest {cols}x{rows}: rows {rr}, columns {cc}",
                    f"{w}x{h}<{cols}x{rows} rows {rr} cols {cc}",
                    f"rows {rr} cols {cc}",
                    f"r{top + 1} c{left + 1}")
    else:
        wordings = (f"window {w}x{h} is too small for the guest's {cols}x{rows} screen",
                    f"window {w}x{h} < guest {cols}x{rows}",
                    f"{w}x{h}<{cols}x{rows}")
    room = max(0, (int(window[0]) or cols) - 1)
    for text in wordings:
        if len(text) <= room:
            return text
    return wordings[-1][:room]


class ScreenView:
    """What one telnet client is shown: :meth:`render` turns each snapshot
    into the ANSI text that brings the client's screen up to date.

    ``window`` is the client's ``(columns, rows)`` (None: never reported;
    0: that dimension unknown, taken as the guest's).  A window that holds
    the guest's whole screen gets it at its top-left corner.  A smaller
    one is never written past: its last row holds :func:`window_notice`
    in reverse video, the rows above show a window-sized part of the
    guest's screen -- the top-left part, moved by as little as needed to
    keep the guest's cursor in view while the cursor is on.  A new window
    size, mode or display epoch redraws everything; otherwise only changed
    cells are sent."""

    def __init__(self, vnc_port=None):
        self.vnc_port = vnc_port
        self.window = None
        self.redraw_pending = True
        self.origin = (0, 0)            # guest (row, column) at the window's top-left
        self.last_mode = self.last_epoch = None
        self.last_codes = self.last_attrs = self.last_cursor = None
        self.last_notice = None

    def set_window(self, window):
        """A size from the client (``(columns, rows)``); a new one means a
        full redraw with the next :meth:`render`."""
        window = None if window is None else (int(window[0]), int(window[1]))
        if window != self.window:
            self.window = window
            self.redraw_pending = True

    def layout(self, rows, cols):
        """(clipped, shown rows, shown columns, window height) for a guest
        text screen of ``rows`` x ``cols``."""
        if self.window is None:
            return False, rows, cols, rows
        w = self.window[0] or cols
        h = self.window[1] or rows
        if w >= cols and h >= rows:
            return False, rows, cols, h
        return True, h - 1, min(w, cols), h

    def _follow(self, cursor, rows, cols, shown_rows, shown_cols):
        """Move the origin as little as needed to bring an enabled cursor
        into the shown part (and keep the part inside the guest's screen)."""
        top = min(self.origin[0], max(0, rows - shown_rows))
        left = min(self.origin[1], max(0, cols - shown_cols))
        self.origin = (top, left)
        row, col = cursor.get("row"), cursor.get("column")
        if not (cursor.get("enabled") and row is not None and col is not None
                and 0 <= row < rows and 0 <= col < cols):
            return
        if shown_rows:
            if row < top:
                top = row
            elif row >= top + shown_rows:
                top = row - shown_rows + 1
        if col < left:
            left = col
        elif col >= left + shown_cols:
            left = col - shown_cols + 1
        self.origin = (top, left)

    def render(self, snap):
        out = []
        redraw = (self.redraw_pending or snap.epoch != self.last_epoch
                  or snap.mode != self.last_mode)
        self.redraw_pending = False
        self.last_mode, self.last_epoch = snap.mode, snap.epoch
        if snap.graphics:
            if redraw:
                if self.window is None:
                    out.append(graphics_notice(snap, vnc_port=self.vnc_port))
                else:
                    w, h = self.window
                    out.append(graphics_notice(snap, cols=min(w or 80, 80),
                                               rows=h or None, vnc_port=self.vnc_port))
            self.last_codes = self.last_attrs = self.last_cursor = self.last_notice = None
            return "".join(out)
        rows, cols = snap.codes.shape
        clipped, shown_rows, shown_cols, height = self.layout(rows, cols)
        cur = snap.cursor or {}
        if redraw:
            out.append("\x1b[0m\x1b[2J")
            self.origin = (0, 0)
            self.last_codes = self.last_attrs = self.last_cursor = self.last_notice = None
        notice = ""
        if clipped:
            # a moved origin needs no full redraw: the diff against what
            # the window shows sends exactly the cells that differ
            self._follow(cur, rows, cols, shown_rows, shown_cols)
            top, left = self.origin
            text = window_notice(self.window, (cols, rows), top, left, shown_rows, shown_cols)
            if text != self.last_notice:
                notice = f"\x1b[{height};1H\x1b[0m\x1b[2K\x1b[7m{text}\x1b[0m"
                self.last_notice = text
        else:
            top = left = 0
            self.origin = (0, 0)
        codes = snap.codes[top:top + shown_rows, left:left + shown_cols]
        attrs = snap.attrs[top:top + shown_rows, left:left + shown_cols]
        body = render_rows(codes, attrs, snap.blink, self.last_codes, self.last_attrs)
        row, col = cur.get("row"), cur.get("column")
        shown = (bool(cur.get("enabled")) and row is not None and col is not None
                 and top <= row < top + shown_rows and left <= col < left + shown_cols)
        cursor = (shown, row - top, col - left) if shown else (False, row, col)
        if body or notice or cursor != self.last_cursor:
            out.append(body)
            out.append(notice)
            if shown:
                out.append(f"\x1b[0m\x1b[{row - top + 1};{col - left + 1}H\x1b[?25h")
            else:
                out.append("\x1b[0m\x1b[?25l")
        self.last_codes, self.last_attrs, self.last_cursor = codes, attrs, cursor
        return "".join(out)


class TelnetInput:
    """Bytes from a telnet client -> (replies to send, keyboard text).
    Strips IAC commands and sub-negotiations, answers option requests
    (refusing anything not in OFFERED/ACCEPTED, never answering a state
    that is already in force, so no negotiation loops), and turns the
    telnet newline conventions (CR LF, CR NUL) into one CR.

    The client's window size (NAWS, RFC 1073) ends up in ``window``: None
    until the client reports one, then ``(columns, rows)``, 0 standing for a
    dimension the client does not know; ``windows`` counts the reports.
    ``naws`` is None while the client has not answered DO NAWS, True once
    it agreed (or simply sent a size), False when it refused.  A report cut
    across packets is assembled; a malformed one (not four bytes, or longer
    than SB_LIMIT) is ignored and changes nothing."""

    def __init__(self):
        self.state = "data"
        self.verb = None
        self.mine = set(OFFERED)        # options enabled on the server side
        self.theirs = set()             # options enabled on the client side
        self.asked = set(ACCEPTED)      # our DO (sent in the opening) awaits an answer
        self.last_cr = False
        self.sb = bytearray()           # the sub-negotiation being read
        self.sb_overflow = False
        self.window = None
        self.windows = 0
        self.naws = None

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
                self._command(b, text)
            elif st == "option":
                replies += self._negotiate(self.verb, b)
                self.state = "data"
            elif st == "sb":
                if b == IAC:
                    self.state = "sb_iac"
                else:
                    self._sb_byte(b)
            elif st == "sb_iac":
                if b == IAC:                     # a doubled 255 is one data byte
                    self._sb_byte(IAC)
                    self.state = "sb"
                elif b == SE:
                    self._subnegotiation()
                    self.state = "data"
                else:
                    # a command inside a sub-negotiation: the client never
                    # ended it; what it sent is dropped and the command read
                    self.sb.clear()
                    self._command(b, text)
        return bytes(replies), "".join(text)

    def _command(self, b, text):
        """The byte after an IAC (outside a sub-negotiation)."""
        if b == IAC:
            self.state = "data"
            self._char(b, text)
        elif b in (DO, DONT, WILL, WONT):
            self.verb = b
            self.state = "option"
        elif b == SB:
            self.sb.clear()
            self.sb_overflow = False
            self.state = "sb"
        else:
            self.state = "data"          # NOP, AYT, GA, a stray SE ... ignored

    def _sb_byte(self, b):
        if len(self.sb) < SB_LIMIT:
            self.sb.append(b)
        else:
            self.sb_overflow = True

    def _subnegotiation(self):
        data = bytes(self.sb)
        self.sb.clear()
        if self.sb_overflow or not data or data[0] != OPT_NAWS or len(data) != 5:
            return
        self.window = ((data[1] << 8) | data[2], (data[3] << 8) | data[4])
        self.windows += 1
        self.naws = True

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
                if opt == OPT_NAWS:
                    self.naws = True
                if opt in self.theirs:
                    return b""
                self.theirs.add(opt)
                if opt in self.asked:           # the answer to our opening DO
                    self.asked.discard(opt)
                    return b""
                return bytes((IAC, DO, opt))
            return bytes((IAC, DONT, opt))
        # WONT: a refusal of our DO needs no answer; switching an enabled
        # option off is acknowledged
        if opt == OPT_NAWS:
            self.naws = False
        self.asked.discard(opt)
        if opt in self.theirs:
            self.theirs.discard(opt)
            return bytes((IAC, DONT, opt))
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
        self.window = None                  # the client's last (columns, rows)
        self._resized = threading.Event()   # reader -> writer: a new window size
        self._settled = threading.Event()   # the client answered DO NAWS (or sent a size)

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
        self._settled.set()
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
                if self.input.window != self.window:
                    self.window = self.input.window
                    self._resized.set()
                if self.input.window is not None or self.input.naws is False:
                    self._settled.set()
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
        from ..terminal_keys import keys_from_terminal
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
        view = ScreenView(vnc_port=self.server.vnc_port)
        seq = 0
        snap = None
        try:
            self.send(self.input.opening())
            self.send(SETUP)
            # a telnet client answers DO NAWS at once; the first picture waits
            # a moment for its size, so a small window never sees a full one
            self._settled.wait(NAWS_WAIT_S)
            first = True
            while not self.closed.is_set():
                new = display.wait(seq, text=True, timeout=0.1, urgent=first)
                if self._resized.is_set():
                    self._resized.clear()
                    view.set_window(self.window)
                if new is None:
                    if display.closed:
                        break
                    if not (view.redraw_pending and snap is not None):
                        continue
                    # a resize while no picture comes (a paused machine):
                    # the last picture again, drawn for the new window
                else:
                    first = False
                    snap = new
                    seq = snap.seq
                started = time.perf_counter()
                out = view.render(snap)
                if out:
                    self.send(out)
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
