"""The browser view (``pypc run --web [PORT]``, pypc_core/frontends/web/):
headless Chromium (Debian's ``chromium`` and ``chromium-driver``, driven by
selenium; skipped with the reason when they are missing) loads the page; its
canvas equals the renderer's frame pixel for pixel in CGA text and graphics
and VGA 13h, 12h and text; keys typed in the page reach the built-in DOS's
prompt under ``--no-rpc`` and not with the RPC server on; the registers pane
follows a step made over JSON-RPC.  A WebSocket client (the websockets
library) checks the protocol: changed tiles only, the display epoch, the
view-only rule on the server side, origins and hosts; and the command
line's checks.

One browser for the module.  Every wall time is a ceiling that keeps a
broken run from hanging the suite, never an assertion.
"""

import base64
import contextlib
import io
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request

import numpy as np
import pytest
from PIL import Image

from guest import program_bytes
from test_launcher import pypc_command, pypc_env
from test_vnc import Rpc, _listening, one_line_error, pypc_run
from viewers_common import (CEILING_S, ECHO_BOOT, ECHO_PROMPT, VGA_MODES_BOOT, ViewerRig,
                            at_prompt, floppy, free_port, rig_fixture, wait_for)

from pypc_core import scancodes
from pypc_core.cli import viewers as frontends
from pypc_core.frontends import web
from pypc_core.machine import CPU_HZ

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]


class WebRig(ViewerRig):
    """A machine with the web view on a free port (``--web 0``) and its
    machine thread."""

    made = 0

    def __init__(self, tmp_path, code, video="cga", **args):
        from pypc_core.machine import Machine, MachineConfig
        from viewers_common import MachineThread, plugins_with, viewer_args
        WebRig.made += 1                # (an image each: a machine locks its image)
        image = floppy(tmp_path / f"boot{WebRig.made}.img", code)
        self.machine = Machine(MachineConfig(plugins=plugins_with(video), floppy_a=image))
        self.frontends = frontends.start(self.machine, viewer_args(web=0, **args),
                                         stream=io.StringIO())
        self.thread = MachineThread(self.machine, self.frontends)

    @property
    def port(self):
        return self.frontends.web.port


rig_factory = rig_fixture(WebRig)


# -- the browser ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def browser():
    """One headless Chromium for the module (a fresh profile), or a skip
    that says what is missing."""
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.access(p, os.X_OK)]
    if missing:
        pytest.skip(f"no {' and no '.join(missing)}: apt-get install chromium chromium-driver")
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service
    profile = tempfile.mkdtemp(prefix="pypc-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM          # never a browser a tool downloads
    for flag in CHROMIUM_FLAGS + [f"--user-data-dir={profile}"]:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_script_timeout(CEILING_S)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def page_state(driver):
    return driver.execute_script("return window.pypcView || null")


def open_page(driver, url):
    driver.get(url)
    assert wait_for(lambda: (page_state(driver) or {}).get("updates", 0) > 0
                    and page_state(driver)["debug"] is not None), page_state(driver)


CANVAS_PIXELS = """
const c = document.getElementById("screen");
const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
let s = "";
for (let i = 0; i < d.length; i += 0x8000) s += String.fromCharCode.apply(null, d.subarray(i, i + 0x8000));
return [c.width, c.height, btoa(s)];
"""


def canvas(driver):
    """The canvas's pixels as RGB ``uint8[H, W, 3]`` (getImageData)."""
    w, h, data = driver.execute_script(CANVAS_PIXELS)
    rgba = np.frombuffer(base64.b64decode(data), dtype=np.uint8).reshape(h, w, 4)
    assert (rgba[:, :, 3] == 255).all()
    return rgba[:, :, :3]


def assert_canvas_is_the_frame(driver, rig):
    """With the machine standing still, the canvas comes to equal the
    renderer's frame exactly (the page may still be drawing the update
    before)."""
    want = rig.frame()
    wait_for(lambda: canvas(driver).shape == want.shape
             and np.array_equal(canvas(driver), want))
    got = canvas(driver)
    assert got.shape == want.shape
    assert np.array_equal(got, want), f"{int((got != want).any(axis=2).sum())} pixels differ"
    return want


# -- the page in a browser ----------------------------------------------------------------

def test_canvas_is_the_renderers_frame_in_cga_text_and_graphics(browser, rig_factory):
    rig = rig_factory(ECHO_BOOT)
    assert rig.thread.run_until(at_prompt)
    open_page(browser, rig.frontends.web.url)
    want = assert_canvas_is_the_frame(browser, rig)
    assert want.shape == (200, 640, 3)
    assert browser.execute_script("return document.getElementById('screen').width") == 640
    # CSS shows the native pixels at 4:3
    w, h = browser.execute_script(
        "const r = document.getElementById('screen').getBoundingClientRect();"
        "return [r.width, r.height];")
    assert abs(w / h - 4 / 3) < 0.01
    assert "view-only" in browser.find_element("id", "status").text   # RPC on (the default)

    # tests/guest/video.asm: mode 4 drawn, phase 1 while it waits for a key
    rig = rig_factory(program_bytes("video"))
    assert rig.thread.run_until(lambda m: m.memory.read(0x602, 1)[0] == 1 and m.waiting_for_key())
    assert rig.thread.call(lambda m: m.video.mode_name()) == "G320"
    open_page(browser, rig.frontends.web.url)
    want = assert_canvas_is_the_frame(browser, rig)
    assert len(np.unique(want.reshape(-1, 3), axis=0)) >= 3      # something is drawn


def test_canvas_follows_vga_13h_12h_and_text_at_native_sizes(browser, rig_factory):
    rig = rig_factory(VGA_MODES_BOOT, video="vga", no_rpc=True)
    assert rig.thread.run_until(lambda m: m.video.mode_number() == 0x13 and m.waiting_for_key())
    open_page(browser, rig.frontends.web.url)
    want = assert_canvas_is_the_frame(browser, rig)
    assert want.shape == (200, 320, 3)
    assert len(np.unique(want.reshape(-1, 3), axis=0)) > 200    # the 256-colour fill

    rig.thread.call(lambda m: m.type_text(" "))
    assert rig.thread.run_until(lambda m: m.video.mode_number() == 0x12 and m.waiting_for_key())
    want = assert_canvas_is_the_frame(browser, rig)
    assert want.shape == (480, 640, 3)
    assert (want[100, 1:257] != 0).all()                         # the line INT 10h drew

    rig.thread.call(lambda m: m.type_text(" "))
    assert rig.thread.run_until(lambda m: not m.video.is_graphics() and m.screen_contains("A"))
    want = assert_canvas_is_the_frame(browser, rig)
    assert want.shape == (400, 720, 3)


def start_pypc(tmp_path, *args):
    """``pypc run --headless --speed 1 --web 0 ARGS --drive C=DIR``: the
    process and the page's address (from its stderr line)."""
    folder = tmp_path / "c"
    folder.mkdir(exist_ok=True)
    proc = subprocess.Popen(
        pypc_command() + ["run", "--headless", "--speed", "1", "--web", "0", *args,
                          "--drive", f"C={folder}", "--timeout", "600"],
        env=pypc_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    return proc


def read_line(proc, prefix):
    line = proc.stderr.readline()
    assert line.startswith(prefix), (line, proc.poll())
    return line[len(prefix):].strip()


def type_in_page(driver, text):
    from selenium.webdriver.common.keys import Keys
    driver.find_element("id", "screen").send_keys(text.replace("\r", Keys.ENTER))


def test_keys_typed_in_the_page_reach_the_dos_prompt_under_no_rpc(browser, tmp_path):
    """``pypc run --no-rpc --web 0 --drive C=DIR``: EXIT typed in the page
    reaches the built-in DOS's prompt and ends the run with status 0."""
    proc = start_pypc(tmp_path, "--no-rpc")
    try:
        url = read_line(proc, "pypc: web view on ")
        assert url.startswith("http://127.0.0.1:")
        open_page(browser, url)
        assert not page_state(browser)["viewOnly"]
        # (no RPC here to read the screen with: the pane's cycle count says
        # when two emulated seconds have passed, long after the prompt came)
        assert wait_for(lambda: page_state(browser)["debug"]["cycles"] > 2 * CPU_HZ
                        or proc.poll() is not None, timeout=CEILING_S * 2)
        assert proc.poll() is None, proc.communicate()
        type_in_page(browser, "exit\r")
        proc.wait(timeout=CEILING_S)
        assert proc.returncode == 0, proc.stderr.read()
        assert page_state(browser)["keysSent"] >= 10        # 4 letters and Enter, down and up
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def test_with_rpc_on_page_keys_do_not_reach_the_guest_and_the_pane_follows_rpc(browser,
                                                                               tmp_path):
    """``pypc run --rpc-port 0 --web 0 --drive C=DIR``: the page is
    view-only; EXIT typed in it never reaches the prompt (read over the
    RPC after a second of emulated time); a step made over JSON-RPC shows
    in the registers pane (CS:IP and the cycle the RPC reports)."""
    proc = start_pypc(tmp_path, "--rpc-port", "0")
    rpc = None
    try:
        url = read_line(proc, "pypc: web view on ")
        port = int(read_line(proc, "pypc: JSON-RPC on 127.0.0.1:"))
        rpc = Rpc(port)

        def prompt_rows():
            return [r for r in rpc("video.text")["text"] if r.startswith("C:\\>")]
        assert wait_for(lambda: prompt_rows() == ["C:\\>"], timeout=CEILING_S * 2), \
            rpc("video.text")["text"]
        open_page(browser, url)
        state = page_state(browser)
        assert state["viewOnly"]
        assert "view-only" in browser.find_element("id", "status").text
        type_in_page(browser, "exit\r")
        start = rpc("state.get_registers")["clock"]
        assert wait_for(lambda: rpc("state.get_registers")["clock"] > start + CPU_HZ)
        assert prompt_rows() == ["C:\\>"], rpc("video.text")["text"]
        assert proc.poll() is None
        assert page_state(browser)["keysSent"] == 0          # a view-only page sends none

        rpc("execution.pause")
        before = rpc("state.get_registers")
        rpc("execution.step")
        after = rpc("state.get_registers")
        assert after["clock"] > before["clock"]
        cs, ip = after["segments"]["cs"], after["ip"]

        def pane_shows_the_step():
            debug = page_state(browser)["debug"]
            return (debug["registers"]["cs"] == cs and debug["registers"]["ip"] == ip
                    and debug["cycles"] == after["clock"]
                    and (debug["last_stop"] or {}).get("kind") == "step")
        assert wait_for(pane_shows_the_step), (page_state(browser)["debug"], after)
        text = browser.find_element("id", "registers").text
        assert f"CS={cs:04X}" in text and f"IP={ip:04X}" in text
        assert f"cycle {after['clock']}" in text
        dis = browser.find_element("id", "disassembly").text.splitlines()
        assert dis[0].startswith(f"{cs:04X}:{ip:04X}")
        assert "step at" in browser.find_element("id", "last-stop").text

        # a breakpoint set over the RPC shows in its pane
        rpc("breakpoints.create", kind="execution",
            address={"space": "segmented", "segment": 0x1234, "offset": 0x0005})
        assert wait_for(lambda: "exec 12345h" in browser.find_element("id", "breakpoints").text)
    finally:
        if rpc is not None:
            rpc.close()
        proc.kill()
        proc.wait()


# -- the protocol, with a WebSocket client --------------------------------------------------

def ws_connect(port, stack, origin=None, host=None):
    from websockets.sync.client import connect
    headers = {}
    if host is not None:
        headers["Host"] = host
    return stack.enter_context(connect(f"ws://127.0.0.1:{port}/ws", origin=origin,
                                       additional_headers=headers or None,
                                       open_timeout=CEILING_S, max_size=None))


class Page:
    """A WebSocket client that draws updates into a numpy frame as the page
    does (and acks them)."""

    def __init__(self, port, **kw):
        self.stack = contextlib.ExitStack()
        self.ws = ws_connect(port, self.stack, **kw)
        self.hello = json.loads(self.ws.recv(timeout=CEILING_S))
        assert self.hello["type"] == "hello"
        self.frame = None
        self.headers = []
        self.debug = None

    def update(self, timeout=CEILING_S):
        """Read until the next screen update; draw and ack it; its header."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            msg = self.ws.recv(timeout=end - time.monotonic())
            if isinstance(msg, str):
                d = json.loads(msg)
                assert d["type"] == "debug"
                self.debug = d
                continue
            header, blobs = web.parse_update(msg)
            if self.frame is None or self.frame.shape[:2] != (header["height"], header["width"]):
                assert header["full"]
                self.frame = np.zeros((header["height"], header["width"], 3), dtype=np.uint8)
            for (x, y, w, h, _n), blob in zip(header["rects"], blobs):
                img = Image.open(io.BytesIO(blob))
                assert img.mode == "RGB" and img.size == (w, h)
                self.frame[y:y + h, x:x + w] = np.asarray(img)
            self.headers.append(header)
            self.ws.send(json.dumps({"type": "ack", "seq": header["seq"]}))
            return header
        raise AssertionError("no update")

    def until_debug(self, predicate, timeout=CEILING_S):
        """Read messages until the last debug message satisfies ``predicate``."""
        from websockets.exceptions import ConnectionClosed  # noqa: F401  (fails the test)
        end = time.monotonic() + timeout
        while not (self.debug is not None and predicate(self.debug)):
            remaining = end - time.monotonic()
            assert remaining > 0, self.debug
            try:
                self.update(timeout=min(remaining, 0.5))
            except (AssertionError, TimeoutError):
                pass                            # (no screen update: only debug messages)
        return self.debug

    def until_frame(self, want, timeout=CEILING_S):
        end = time.monotonic() + timeout
        while not (self.frame is not None and np.array_equal(self.frame, want)):
            self.update(timeout=end - time.monotonic())

    def key(self, code, down):
        self.ws.send(json.dumps({"type": "key", "code": code, "down": down}))

    def close(self):
        self.stack.close()


def test_updates_carry_only_the_changed_tiles_and_an_epoch_sends_all(rig_factory):
    rig = rig_factory(ECHO_BOOT)
    assert rig.thread.run_until(at_prompt)
    page = Page(rig.port)
    try:
        first = page.update()
        assert first["full"] and [r[:4] for r in first["rects"]] == [[0, 0, 640, 200]]
        page.until_frame(rig.frame())
        # one character cell changed (row 20, column 0: the tile at x 0, y 160)
        rig.thread.call(lambda m: m.memory.write(0xB8000 + 20 * 160, bytes((0x41, 0x1F))))
        want = rig.frame()
        while True:
            header = page.update()
            if np.array_equal(page.frame, want):
                break
        assert [r[:4] for r in header["rects"]] == [[0, 160, 16, 16]]
        assert not header["full"]
        # a restored state: a new display epoch, the whole frame again
        state = rig.thread.call(lambda m: m.get_state())
        rig.thread.call(lambda m: m.set_state(state))
        while not page.update()["full"]:
            pass
        assert np.array_equal(page.frame, rig.frame())
    finally:
        page.close()


@pytest.mark.parametrize("no_rpc", [False, True])
def test_keys_reach_the_guest_only_without_rpc(rig_factory, no_rpc):
    """The server applies the rule itself: a client that sends keys while
    RPC is on (hello says view-only) changes nothing in the guest."""
    rig = rig_factory(ECHO_BOOT, no_rpc=no_rpc)
    assert rig.thread.run_until(at_prompt)
    page = Page(rig.port)
    try:
        assert page.hello["view_only"] is (not no_rpc)
        page.update()
        for code in ("KeyQ", "Digit7"):
            page.key(code, True)
            page.key(code, False)
        page.key("F12", True)                   # no such key on the XT: ignored
        page.key(None, True)
        page.ws.send("not json")
        page.ws.send(json.dumps([1, 2]))
        time.sleep(0.3)                         # (host time for the server to read them)
        rig.thread.run_until(lambda m: False, max_seconds=0.5)
        row = [r for r in rig.thread.call(lambda m: m.screen_text()) if ECHO_PROMPT.strip() in r]
        assert row == [ECHO_PROMPT + "q7" if no_rpc else ECHO_PROMPT.strip()]
    finally:
        page.close()


def test_the_debug_message_follows_the_machine(rig_factory):
    rig = rig_factory(ECHO_BOOT)
    assert rig.thread.run_until(at_prompt)
    page = Page(rig.port)
    try:
        page.update()
        regs = rig.thread.call(lambda m: (m.cpu.r.cs, m.cpu.r.ip))
        page.until_debug(lambda d: (d["registers"]["cs"], d["registers"]["ip"]) == regs)
        assert page.debug["disassembly"][0]["ip"] == regs[1]
        assert page.debug["disassembly"][0]["cs"] == regs[0]
        assert page.debug["last_stop"] is None or page.debug["last_stop"]["kind"] != "budget"
        bp = rig.thread.call(lambda m: m.breakpoints.add("exec", 0x7C1C).id)
        stop = rig.thread.call(lambda m: m.run_for(CPU_HZ))
        assert stop.kind in ("breakpoint", "budget")
        rig.thread.call(lambda m: m.type_text("x"))
        assert rig.thread.call(lambda m: m.run_for(CPU_HZ).kind) == "breakpoint"
        page.until_debug(lambda d: (d["last_stop"] or {}).get("kind") == "breakpoint")
        assert page.debug["last_stop"]["breakpoint"] == bp
        assert page.debug["last_stop"]["ip"] == 0x7C1C
        assert [b["id"] for b in page.debug["breakpoints"]] == [bp]
    finally:
        page.close()


def test_other_origins_and_dns_names_are_refused(rig_factory):
    from websockets.exceptions import InvalidStatus, ConnectionClosed
    rig = rig_factory(ECHO_BOOT)
    port = rig.port
    own = Page(port, origin=f"http://127.0.0.1:{port}")
    own.close()
    for kw in ({"origin": "http://evil.example"}, {"origin": f"http://127.0.0.1:{port + 1}"},
               {"host": f"evil.example:{port}"}):
        with pytest.raises((InvalidStatus, ConnectionClosed)):
            page = Page(port, **kw)
            page.update(timeout=5)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=CEILING_S) as r:
        assert r.status == 200 and b"view.js" in r.read()
    with urllib.request.urlopen(f"http://localhost:{port}/view.js", timeout=CEILING_S) as r:
        assert r.headers["Content-Type"].startswith("text/javascript")
    req = urllib.request.Request(f"http://127.0.0.1:{port}/", headers={"Host": "evil.example"})
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=CEILING_S)
    assert err.value.code == 403
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/nothing", timeout=CEILING_S)
    assert err.value.code == 404
    assert rig.frontends.web.listener.getsockname()[0] == "127.0.0.1"


def test_a_page_that_vanishes_does_not_disturb_the_machine(rig_factory):
    rig = rig_factory(ECHO_BOOT, no_rpc=True)
    assert rig.thread.run_until(at_prompt)
    page = Page(rig.port)
    page.update()
    page.ws.socket.close()                      # no close handshake
    assert wait_for(lambda: rig.frontends.display.viewers == 0)
    rig.thread.call(lambda m: m.type_text("z"))
    assert rig.thread.run_until(lambda m: m.screen_contains(ECHO_PROMPT + "z"))
    page = Page(rig.port)                       # and the next page is served
    page.until_frame(rig.frame())
    page.close()


def test_nothing_is_published_without_a_page(rig_factory):
    """No page, no rendering (the debugger's view neither); a page that
    leaves stops it again."""
    rig = rig_factory(ECHO_BOOT)
    assert rig.thread.run_until(at_prompt)
    display = rig.frontends.display
    rig.thread.call(lambda m: m.run_for(CPU_HZ))
    assert display.published == 0
    page = Page(rig.port)
    page.update()
    assert display.published > 0
    page.close()
    assert wait_for(lambda: display.viewers == 0)
    # the page's writer thread ends once its last wait for a picture is over
    assert wait_for(lambda: not any(t.name == "web-writer" for t in threading.enumerate()))
    before = display.published
    rig.thread.call(lambda m: m.run_for(CPU_HZ))
    assert display.published == before


# -- pieces ------------------------------------------------------------------------------

def test_key_codes_are_the_xt_scan_codes():
    for ch in "abcdefghijklmnopqrstuvwxyz0123456789-=[];'`\\,./":
        code = ("Key" + ch.upper() if ch.isalpha() else "Digit" + ch if ch.isdigit() else
                {"-": "Minus", "=": "Equal", "[": "BracketLeft", "]": "BracketRight",
                 ";": "Semicolon", "'": "Quote", "`": "Backquote", "\\": "Backslash",
                 ",": "Comma", ".": "Period", "/": "Slash"}[ch])
        make = scancodes.char_to_strokes(ch)[0]
        assert web.key_to_scancode(code, True) == make
        assert web.key_to_scancode(code, False) == make | 0x80
    assert web.key_to_scancode("KeyA", True) == 0x1E
    assert web.key_to_scancode("Enter", True) == web.key_to_scancode("NumpadEnter", True) == 0x1C
    assert web.key_to_scancode("ArrowUp", True) == web.key_to_scancode("Numpad8", True) == 0x48
    assert web.key_to_scancode("F10", True) == 0x44 and web.key_to_scancode("Escape", True) == 1
    assert web.key_to_scancode("ShiftRight", False) == 0xB6
    for missing in ("F11", "F12", "MetaLeft", "ContextMenu", "", None, 5, "keya"):
        assert web.key_to_scancode(missing, True) is None
    assert len(set(web.KEY_CODES.values())) == 83        # every key of the XT keyboard


def test_plan_rects_and_the_update_message():
    a = np.zeros((200, 640, 3), dtype=np.uint8)
    assert web.plan_rects(None, a) == [(0, 0, 640, 200)]
    assert web.plan_rects(np.zeros((400, 720, 3), np.uint8), a) == [(0, 0, 640, 200)]
    assert web.plan_rects(a, a.copy()) == []
    b = a.copy()
    b[17, 33] = (1, 2, 3)
    b[199, 639] = (255, 255, 255)
    assert web.plan_rects(a, b) == [(32, 16, 16, 16), (624, 192, 16, 8)]
    sparse = a.copy()
    sparse[::32, ::32] = 9              # every other tile of every other tile row: 7 x 20 rects
    assert len(web.plan_rects(a, sparse)) == 140
    checkers = a.copy()                 # a chequerboard of 13 x 20 tiles: more than 256 rects
    for ty in range(13):
        checkers[ty * 16, (ty % 2) * 16::32] = 9
    assert web.plan_rects(a, checkers) == [(0, 0, 640, 200)]

    class Snap:
        seq, mode, adapter, clock, frame = 7, "Text80", "CGA", 123, b
    msg = web.update_message(Snap, web.plan_rects(a, b), False)
    header, blobs = web.parse_update(msg)
    assert header["seq"] == 7 and header["width"] == 640 and header["height"] == 200
    for (x, y, w, h, n), blob in zip(header["rects"], blobs):
        assert len(blob) == n and blob[:8] == b"\x89PNG\r\n\x1a\n"
        assert np.array_equal(np.asarray(Image.open(io.BytesIO(blob))), b[y:y + h, x:x + w])
    with pytest.raises(ValueError):
        web.parse_update(msg + b"x")


@pytest.mark.parametrize("host, ok", [
    ("127.0.0.1:8088", True), ("localhost:8088", True), ("LOCALHOST", True),
    ("[::1]:8088", True), ("10.1.2.3", True), ("evil.example:8088", False),
    ("127.0.0.1.nip.io:8088", False), ("", False), (None, False), ("[::1", False),
])
def test_hosts(host, ok):
    assert web.host_allowed(host) is ok


@pytest.mark.parametrize("origin, host, ok", [
    (None, "127.0.0.1:8088", True),
    ("http://127.0.0.1:8088", "127.0.0.1:8088", True),
    ("http://127.0.0.1:8089", "127.0.0.1:8088", False),
    ("https://127.0.0.1:8088", "127.0.0.1:8088", False),
    ("http://evil.example", "127.0.0.1:8088", False),
    ("null", "127.0.0.1:8088", False),
])
def test_origins(origin, host, ok):
    assert web.origin_allowed(origin, host) is ok


# -- the command line ----------------------------------------------------------------------

@pytest.mark.parametrize("args, words", [
    (["--web", "7010", "--vnc-port", "7010"], ["--vnc-port and --web are both 7010", "differ"]),
    (["--web", "70000"], ["outside 0-65535"]),
])
def test_bad_web_options_on_the_command_line(args, words):
    one_line_error(pypc_run(*args, "--timeout", "1", rpc=True), *words)


@pytest.mark.parametrize("args, words", [
    (["--web", "7011", "--telnet-port", "7011"], ["--telnet-port and --web", "differ"]),
    (["--web", "7012", "--rpc-port", "7012"], ["--web and --rpc-port are both 7012"]),
    (["--web", "7013", "--gdb", "7013"], ["--web and --gdb are both 7013"]),
    (["--web", "0", "--listen", "web.example"], ["--listen", "not an IP address"]),
])
def test_bad_web_options(args, words):
    """(In process: the parser and the checks the launcher runs first.)"""
    from pypc_core.cli import build_parser
    from pypc_core.errors import PypcError
    parser, _run = build_parser()
    parsed = parser.parse_args(["run", "--headless", *args])
    with pytest.raises(PypcError) as err:
        frontends.check_args(parsed)
    message = str(err.value)
    assert "\n" not in message
    for w in words:
        assert w in message, message


@pytest.mark.parametrize("value, words", [("-1", "outside 0-65535"), ("x", "not a port")])
def test_bad_web_ports(value, words, capsys):
    from pypc_core.cli import build_parser
    parser, _run = build_parser()
    with pytest.raises(SystemExit) as exit_:
        parser.parse_args(["run", f"--web={value}"])
    assert exit_.value.code == 2
    line, = capsys.readouterr().err.splitlines()
    assert line.startswith("pypc: error:") and words in line and "--web" in line


@pytest.mark.parametrize("port, words", [("2301", "--web and --rpc-port are both 2301"),
                                         ("5902", "--vnc-port and --web are both 5902"),
                                         ("2300", "--telnet-port and --web are both 2300")])
def test_the_web_port_counts_against_a_server_roles_defaults(port, words):
    from pypc_core.cli import build_parser
    from pypc_core.errors import PypcError
    parser, _run = build_parser()
    with pytest.raises(PypcError, match=words):
        frontends.check_args(parser.parse_args(["run", "--headless", "--serve", "--web", port]))


def test_bare_serves_no_web_view():
    one_line_error(pypc_run("--bare", "--web", "0", "--timeout", "1"), "--bare", "--web")


def test_a_busy_port_is_a_one_line_error(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        image = floppy(tmp_path / "e.img", ECHO_BOOT)
        before = open(image, "rb").read()
        proc = pypc_run("--web", port, "--timeout", "1", "--floppy", image)
    one_line_error(proc, f"--web {port}", "cannot listen", "leave --web out")
    assert open(image, "rb").read() == before


def test_options_in_process():
    from viewers_common import viewer_args
    args = viewer_args(web=0)
    frontends.check_args(args)                          # a job with only --web: fine
    frontends.check_args(viewer_args(web=0, listen="0.0.0.0"))  # --listen has a viewer
    assert frontends.DEFAULT_WEB_PORT == web.DEFAULT_WEB_PORT == 8088
    from pypc_core.cli import build_parser
    parser, _run = build_parser()
    assert parser.parse_args(["run", "--web"]).web == 8088
    assert parser.parse_args(["run", "--web", "0"]).web == 0
    assert parser.parse_args(["run"]).web is None


def test_a_job_with_web_0_prints_the_address_and_serves(tmp_path):
    """``pypc run --headless --web 0`` (a job): the address on stderr; the
    page is served there while the job runs."""
    proc = subprocess.Popen(
        pypc_command() + ["run", "--headless", "--no-rpc", "--web", "0",
                          "--floppy", floppy(tmp_path / "e.img", ECHO_BOOT), "--timeout", "600"],
        env=pypc_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        url = read_line(proc, "pypc: web view on ")
        assert url.startswith("http://127.0.0.1:") and url.endswith("/")
        port = int(url.rsplit(":", 1)[1].rstrip("/"))
        assert _listening(port)
        page = Page(port)
        assert page.hello["view_only"] is False
        page.update()
        page.close()
    finally:
        proc.kill()
        proc.wait()


def test_the_agent_servers_page_follows_session_start(tmp_path):
    """``pypc run --headless --serve --rpc-port 0 --web 0``: a page stays
    connected while session.start replaces the machine; it gets the new
    machine's whole frame and its debugger view (CS:IP at the program's
    entry, then after a step)."""
    from guest import dos as progs
    proc = subprocess.Popen(
        pypc_command() + ["run", "--headless", "--serve", "--rpc-port", "0", "--no-viewers",
                          "--web", "0", "--plugins", "cga"],
        env=pypc_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    rpc = page = None
    try:
        url = read_line(proc, "pypc: web view on ")
        port = int(read_line(proc, "pypc: JSON-RPC agent server on 127.0.0.1:").split()[0])
        rpc = Rpc(port)
        page = Page(int(url.rsplit(":", 1)[1].rstrip("/")))
        page.update()
        folder = tmp_path / "prog"
        folder.mkdir()
        shutil.copy(progs.path("agent_fixture"), folder / "AGENTFIX.COM")
        rpc("session.start", target={"command": "AGENTFIX.COM", "arguments": []},
            mounts=[{"drive": "C", "host_path": str(folder)}], break_at="entry")
        regs = rpc("state.get_registers")
        assert regs["ip"] == 0x0100
        cs = regs["segments"]["cs"]
        page.until_debug(lambda d: (d["registers"]["cs"], d["registers"]["ip"]) == (cs, 0x100))
        assert any(h["full"] for h in page.headers[1:]) or page.update()["full"]
        rpc("execution.step", mode="into")
        page.until_debug(lambda d: d["registers"]["ip"] == 0x103
                         and d["registers"]["ax"] == 0x1234)
    finally:
        for closer in (page, rpc):
            if closer is not None:
                closer.close()
        proc.kill()
        proc.wait()
