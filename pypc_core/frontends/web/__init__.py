"""The browser view (``pypc run --web [PORT]``): one page with the live
screen in a canvas, the guest's keyboard under the viewers' rule, and
read-only debugger panes.

* HTTP: ``GET /`` is the page (``index.html``), ``GET /view.js`` its
  script, both package data of this folder, the project's own, with no build
  step.  Served with starlette on uvicorn, in a thread of its own with its
  own asyncio loop, on 127.0.0.1 unless ``--listen`` (default port
  :data:`DEFAULT_WEB_PORT`; 0: any free port, printed on stderr).
* ``/ws``: one WebSocket per page.  The server sends a ``hello`` (text,
  JSON: ``view_only``, the tile size), then screen updates (binary, below)
  and, whenever the debugger's view changed, a ``debug`` message (text,
  JSON: registers, disassembly at CS:IP, the last stop, breakpoints, the
  cycle count; while the CPU runs, that is once per published picture, at
  most 30 a second).  The
  page answers each update with ``{"type": "ack", "seq": N}`` once it has
  drawn it; the server sends the next update only after that ack, so a
  slow page gets fewer updates, never a backlog.  Keys are
  ``{"type": "key", "code": KeyboardEvent.code, "down": bool}``.
* A screen update is ``u32 little-endian header length``, the header
  (UTF-8 JSON: ``seq``, ``width``, ``height``, ``mode``, ``adapter``,
  ``full``, ``rects`` = ``[[x, y, w, h, png_bytes], ...]``), then the
  rectangles' PNG files one after the other.  The rectangles are the
  16x16 tiles that differ from the last frame sent to this page, merged
  (:func:`pypc_core.frontends.vnc.changed_rects`); the first update, a new
  size and a new display epoch send the whole frame.  PNG (Pillow,
  compression level 1) keeps a text screen's update to a few kilobytes and
  decodes natively in the browser, pixel for pixel.
* The picture, the debugger's view and the keys go through
  :class:`~pypc_core.frontends.display.Display`, as the telnet and VNC
  viewers' do: each page has a writer thread that waits for the snapshots
  the machine thread publishes, diffs and encodes there, and is paced by
  the display's budget; keys reach the guest only under ``--no-rpc``
  (the display drops them otherwise, and the page says it is view-only).
* Only same-origin pages may open ``/ws`` (a WebSocket is not bound by the
  browser's same-origin policy, so another site open in the same browser
  could otherwise watch the screen or type), and the ``Host`` header must
  be an IP address or ``localhost`` (no DNS rebinding): open the view as
  ``http://127.0.0.1:PORT/``.
"""

import asyncio
import importlib.resources
import io
import ipaddress
import json
import logging
import struct
import threading
import time
from urllib.parse import urlsplit

import numpy as np

from ... import scancodes
from ...errors import PypcError
from ...listening import close_listener, listen_socket
from ..vnc import changed_rects

DEFAULT_WEB_PORT = 8088
TILE = 16
MAX_RECTS = 256                 # more changed rectangles than this: the whole frame
PNG_LEVEL = 1                   # zlib level: fast; a text screen is small anyway
SEND_TIMEOUT_S = 10.0           # a page that takes longer to receive an update is dropped
START_TIMEOUT_S = 30.0          # uvicorn's startup, a ceiling only


# -- keys: KeyboardEvent.code -> XT scan code (set 1) ---------------------------------

def _key_table():
    table = {}
    for ch in "abcdefghijklmnopqrstuvwxyz":
        table["Key" + ch.upper()] = scancodes.char_to_strokes(ch)[0]
    for ch in "0123456789":
        table["Digit" + ch] = scancodes.char_to_strokes(ch)[0]
    for code, ch in (("Minus", "-"), ("Equal", "="), ("BracketLeft", "["),
                     ("BracketRight", "]"), ("Semicolon", ";"), ("Quote", "'"),
                     ("Backquote", "`"), ("Backslash", "\\"), ("Comma", ","),
                     ("Period", "."), ("Slash", "/")):
        table[code] = scancodes.char_to_strokes(ch)[0]
    named = scancodes.NAMED
    for code, name in (("Escape", "esc"), ("Enter", "enter"), ("Backspace", "backspace"),
                       ("Tab", "tab"), ("Space", "space"), ("ShiftLeft", "lshift"),
                       ("ShiftRight", "rshift"), ("ControlLeft", "ctrl"),
                       ("AltLeft", "alt"), ("CapsLock", "capslock"),
                       ("NumLock", "numlock"), ("ScrollLock", "scrolllock"),
                       # the XT's keypad keys, and the keys a newer keyboard
                       # has beside it for the same purpose
                       ("Numpad7", "home"), ("Numpad8", "up"), ("Numpad9", "pgup"),
                       ("Numpad4", "left"), ("Numpad6", "right"), ("Numpad1", "end"),
                       ("Numpad2", "down"), ("Numpad3", "pgdn"), ("Numpad0", "ins"),
                       ("NumpadDecimal", "del"), ("Home", "home"), ("ArrowUp", "up"),
                       ("PageUp", "pgup"), ("ArrowLeft", "left"), ("ArrowRight", "right"),
                       ("End", "end"), ("ArrowDown", "down"), ("PageDown", "pgdn"),
                       ("Insert", "ins"), ("Delete", "del"), ("ControlRight", "ctrl"),
                       ("AltRight", "alt"), ("NumpadEnter", "enter")):
        table[code] = named[name]
    for n in range(1, 11):
        table[f"F{n}"] = named[f"f{n}"]
    table["Numpad5"] = 0x4C
    table["NumpadSubtract"] = 0x4A
    table["NumpadAdd"] = 0x4E
    table["NumpadMultiply"] = 0x37
    table["NumpadDivide"] = scancodes.char_to_strokes("/")[0]
    return table


KEY_CODES = _key_table()


def key_to_scancode(code, down):
    """The XT scan code of a browser key event (``KeyboardEvent.code``,
    pressed or released), or None for a key the XT keyboard does not have
    (F11, F12, the Windows keys ...)."""
    make = KEY_CODES.get(code) if isinstance(code, str) else None
    if make is None:
        return None
    return make if down else make | scancodes.BREAK


# -- screen updates ---------------------------------------------------------------------

def encode_png(rgb):
    """PNG bytes of an RGB ``uint8[h, w, 3]`` array (no colour profile, no
    gamma chunk: the browser draws the bytes as they are)."""
    from PIL import Image
    out = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(rgb), "RGB").save(out, "PNG",
                                                           compress_level=PNG_LEVEL)
    return out.getvalue()


def plan_rects(old, new, tile=TILE):
    """The rectangles of ``new`` to send to a page that shows ``old`` (None:
    it shows nothing yet, or another size): the whole frame, or the changed
    tiles merged (empty: nothing changed)."""
    h, w = new.shape[:2]
    if old is None or old.shape != new.shape:
        return [(0, 0, w, h)]
    rects = changed_rects(old, new, tile)
    if len(rects) > MAX_RECTS:
        return [(0, 0, w, h)]
    return rects


def update_message(snap, rects, full):
    """The binary message of one screen update of ``snap``'s frame."""
    frame = snap.frame
    h, w = frame.shape[:2]
    blobs = [encode_png(frame[y:y + rh, x:x + rw]) for x, y, rw, rh in rects]
    header = json.dumps({"seq": snap.seq, "width": w, "height": h, "mode": snap.mode,
                         "adapter": snap.adapter, "full": full, "clock": snap.clock,
                         "rects": [[x, y, rw, rh, len(b)]
                                   for (x, y, rw, rh), b in zip(rects, blobs)]},
                        separators=(",", ":")).encode("utf-8")
    return b"".join([struct.pack("<I", len(header)), header, *blobs])


def parse_update(data):
    """(header dict, [png bytes]) of an update message (for clients and tests)."""
    (n,) = struct.unpack_from("<I", data)
    header = json.loads(data[4:4 + n])
    blobs, pos = [], 4 + n
    for rect in header["rects"]:
        blobs.append(bytes(data[pos:pos + rect[4]]))
        pos += rect[4]
    if pos != len(data):
        raise ValueError(f"update of {len(data)} bytes, its rectangles end at {pos}")
    return header, blobs


# -- who may connect --------------------------------------------------------------------

def _host_name(netloc):
    """The host of a ``host[:port]`` (IPv6 in brackets), lower case."""
    try:
        return (urlsplit("//" + netloc).hostname or "").lower()
    except ValueError:
        return ""


def host_allowed(host_header):
    """A Host header naming an IP address or localhost (never a DNS name,
    which a rebinding attack would use)."""
    name = _host_name(host_header or "")
    if name == "localhost":
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def origin_allowed(origin, host_header):
    """A WebSocket's Origin must be this server's own (``http://`` + the Host
    header); a client that sends none (not a browser page) is let in."""
    if origin is None:
        return True
    parts = urlsplit(origin)
    return parts.scheme == "http" and parts.netloc.lower() == (host_header or "").lower()


# -- the server ---------------------------------------------------------------------------

def asset(name):
    return importlib.resources.files(__name__).joinpath(name).read_bytes()


class PageGone(Exception):
    """The page closed its WebSocket (or did not take an update in time)."""


class WebSession:
    """One page's WebSocket: its reader runs on the server's event loop,
    its writer on a thread of its own."""

    def __init__(self, server, ws, loop):
        self.server = server
        self.ws = ws
        self.loop = loop
        self.closed = threading.Event()
        self.acked = threading.Event()
        self.acked.set()
        self.sent_seq = 0               # the last update sent
        self.frame = None               # the frame the page shows
        self.epoch = None
        self.debug = None               # the debugger view the page shows
        self.keys = 0                   # key events handed to the display

    # -- event loop -------------------------------------------------------
    async def read(self):
        from starlette.websockets import WebSocketDisconnect
        try:
            while not self.closed.is_set():
                text = await self.ws.receive_text()
                self.handle(text)
        except (WebSocketDisconnect, RuntimeError, KeyError):
            pass
        finally:
            self.closed.set()
            self.acked.set()

    def handle(self, text):
        try:
            msg = json.loads(text)
        except ValueError:
            return                      # not JSON: ignored, as VNC ignores what it cannot use
        if not isinstance(msg, dict):
            return
        kind = msg.get("type")
        if kind == "ack":
            if msg.get("seq") == self.sent_seq:
                self.acked.set()
        elif kind == "key":
            code = key_to_scancode(msg.get("code"), bool(msg.get("down")))
            if code is not None and self.server.display.send_keys([code]):
                self.keys += 1

    # -- writer thread ----------------------------------------------------
    def _send(self, coro):
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            future.result(SEND_TIMEOUT_S)
        except Exception:
            future.cancel()
            raise PageGone() from None

    def write(self):
        display = self.server.display
        seq = 0
        try:
            self._send(self.ws.send_text(json.dumps(self.server.hello())))
            while not self.closed.is_set() and not display.closed:
                if not self.acked.wait(0.5):
                    continue
                if self.closed.is_set():
                    break
                snap = display.wait(seq, frame=True, debug=True, timeout=0.5,
                                    urgent=self.frame is None)
                if snap is None:
                    continue
                seq = snap.seq
                started = time.perf_counter()
                full = self.frame is None or snap.epoch != self.epoch
                rects = plan_rects(None if full else self.frame, snap.frame)
                if rects:
                    message = update_message(snap, rects, full)
                    self.acked.clear()
                    self.sent_seq = snap.seq
                    self._send(self.ws.send_bytes(message))
                    self.frame, self.epoch = snap.frame, snap.epoch
                if snap.debug is not None and self._debug_changed(snap.debug):
                    self._send(self.ws.send_text(json.dumps(
                        {"type": "debug", **snap.debug}, default=str)))
                    self.debug = snap.debug
                display.pace(started, time.perf_counter() - started)
        except PageGone:
            pass
        finally:
            self.closed.set()
            if not self.loop.is_closed():
                asyncio.run_coroutine_threadsafe(self._close(), self.loop)

    def _debug_changed(self, debug):
        return self.debug is None or self.debug != debug

    async def _close(self):
        try:
            await self.ws.close()
        except Exception:
            pass


class WebServer:
    """The browser view's HTTP and WebSocket server for ``display``."""

    option = "--web"

    def __init__(self, display, host, port):
        self.display = display
        self.host = host
        self.requested_port = port
        self.listener = None
        self.sessions = set()
        self._lock = threading.Lock()
        self._server = None
        self._thread = None
        self._started = threading.Event()
        self._error = None

    @property
    def port(self):
        return self.listener.getsockname()[1]

    @property
    def url(self):
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    def hello(self):
        view_only = not self.display.keyboard
        return {"type": "hello", "tile": TILE, "view_only": view_only,
                "input": ("view-only: the JSON-RPC server is on (run with --no-rpc "
                          "to type into the guest)") if view_only else
                         "keys go to the guest"}

    def app(self):
        from starlette.applications import Starlette
        from starlette.responses import PlainTextResponse, Response
        from starlette.routing import Route, WebSocketRoute

        page, script = asset("index.html"), asset("view.js")

        def checked(handler):
            async def wrapped(request):
                if not host_allowed(request.headers.get("host")):
                    return PlainTextResponse("pypc: the web view answers only to an IP "
                                             "address or localhost in the Host header\n",
                                             status_code=403)
                return await handler(request)
            return wrapped

        async def index(request):
            return Response(page, media_type="text/html; charset=utf-8",
                            headers={"Cache-Control": "no-store"})

        async def view_js(request):
            return Response(script, media_type="text/javascript; charset=utf-8",
                            headers={"Cache-Control": "no-store"})

        async def ws(websocket):
            host = websocket.headers.get("host")
            if not (host_allowed(host) and origin_allowed(websocket.headers.get("origin"),
                                                          host)):
                await websocket.close(code=1008)
                return
            await websocket.accept()
            session = WebSession(self, websocket, asyncio.get_running_loop())
            with self._lock:
                self.sessions.add(session)
                self.display.viewers += 1
            writer = threading.Thread(target=session.write, daemon=True, name="web-writer")
            writer.start()
            try:
                await session.read()
            finally:
                with self._lock:
                    self.sessions.discard(session)
                    self.display.viewers -= 1

        return Starlette(routes=[Route("/", checked(index)),
                                 Route("/view.js", checked(view_js)),
                                 WebSocketRoute("/ws", ws)])

    def start(self):
        import uvicorn
        self.listener = listen_socket(self.host, self.requested_port, self.option,
                                      advice="pick another --web PORT or leave --web out")
        try:
            config = uvicorn.Config(self.app(), log_config=None, log_level=logging.CRITICAL,
                                    access_log=False, lifespan="off", ws="websockets-sansio",
                                    ws_per_message_deflate=False,
                                    timeout_graceful_shutdown=1)
            self._server = uvicorn.Server(config)
            self._thread = threading.Thread(target=self._serve, daemon=True, name="web")
            self._thread.start()
            if not self._started.wait(START_TIMEOUT_S) or not self._server.started:
                raise PypcError(f"--web {self.requested_port}: the web view did not start "
                                f"({self._error or 'uvicorn did not start serving'})")
        except BaseException:
            self.close()
            raise
        return self

    def _serve(self):
        async def serve():
            task = asyncio.create_task(self._server.serve(sockets=[self.listener]))
            while not self._server.started and not task.done():
                await asyncio.sleep(0.01)
            if task.done() and not task.cancelled():
                self._error = task.exception()
            self._started.set()
            await task
        try:
            asyncio.run(serve())
        except BaseException as exc:            # reported by start(), or after close
            self._error = exc
        finally:
            self._started.set()

    def close(self):
        with self._lock:
            sessions = list(self.sessions)
        for s in sessions:
            s.closed.set()
            s.acked.set()
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        close_listener(self.listener)
