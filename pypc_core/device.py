"""What every emulated device (chipset chip or plugin card) looks like.

A device is told the emulated cycle it must catch up to; it never reads the
wall clock.  ``board.clock()`` returns the current CPU cycle while a port
handler runs, so a handler can catch up before it answers.

Declarations (``ports``, ``irqs``, ``dma_channels``, ``memory``) are plain data
so the machine can check them against every other device (motherboard
included) and show them in ``pypc plugins`` before anything runs.  They are
binding: a card's board (``pypc_core.board.Board``) refuses any claim outside
its declaration.

Capabilities are free-form words; the machine and the BIOS read these:

* ``video`` -- the card is the display (exactly one per machine) and follows
  :class:`VideoDevice`; with one of ``mda`` (monochrome), ``cga`` (80x25
  colour at power-on) or ``ega``/``vga`` (its own BIOS) for the equipment
  word's initial video mode;
* ``serial`` -- an 8250 serial port (one per declaration): counted in the
  equipment word, its base listed in the BIOS data area (COM1, COM2, ... in
  the order of the declared bases 3F8h, 2F8h, 3E8h, 2E8h);
* ``game-port`` -- the equipment word's game-adapter bit;
* ``parallel`` -- a printer port.
"""

from typing import Protocol, runtime_checkable

import attrs

CAP_VIDEO = "video"
CAP_SERIAL = "serial"
CAP_GAME_PORT = "game-port"
CAP_PARALLEL = "parallel"
VIDEO_KINDS = ("mda", "cga", "ega", "vga")


@attrs.define
class MemoryWindow:
    base: int
    size: int
    kind: str = "device"          # "device" (RAM-like, device renders it) or "rom"


@attrs.define
class DeviceDeclaration:
    """What a device claims.  ``ports`` is a list of ints."""
    name: str
    ports: list = attrs.Factory(list)
    irqs: list = attrs.Factory(list)
    dma_channels: list = attrs.Factory(list)
    memory: list = attrs.Factory(list)      # of MemoryWindow
    capabilities: list = attrs.Factory(list)

    def describe(self):
        parts = []
        if self.ports:
            parts.append("ports " + _ranges(self.ports))
        if self.irqs:
            parts.append("IRQ " + ",".join(str(i) for i in self.irqs))
        if self.dma_channels:
            parts.append("DMA " + ",".join(str(i) for i in self.dma_channels))
        for w in self.memory:
            parts.append(f"mem {w.base:05X}h-{w.base + w.size - 1:05X}h")
        return "; ".join(parts)


def _ranges(ports):
    ports = sorted(set(ports))
    out, start, prev = [], None, None
    for p in ports:
        if start is None:
            start = prev = p
        elif p == prev + 1:
            prev = p
        else:
            out.append((start, prev))
            start = prev = p
    if start is not None:
        out.append((start, prev))
    return ",".join(f"{a:X}h" if a == b else f"{a:X}h-{b:X}h" for a, b in out)


class Device:
    """Base class for devices.  Subclasses override what they need."""

    declaration = DeviceDeclaration(name="device")

    def attach(self, board):
        """Claim ports, memory windows, IRQ and DMA lines through ``board``
        (a :class:`pypc_core.board.Board`) and keep the handles.  (The
        motherboard's own chips get the machine instead.)"""

    def reset(self):
        """Power-on state."""

    def next_event(self):
        """Cycle at which this device next changes something the CPU can see
        (an IRQ edge, a retrace flip); ``None`` if nothing is scheduled."""
        return None

    def advance(self, cycle):
        """Catch up to emulated CPU cycle ``cycle``."""

    def get_state(self):
        """JSON-compatible dict that ``set_state`` restores exactly."""
        return {}

    def set_state(self, state):
        pass


@runtime_checkable
class VideoDevice(Protocol):
    """What the machine, the launcher (live view, ``--screenshot``,
    ``--until-text``) and the RPC methods use of the display card.  A device
    whose declaration has the ``video`` capability must provide all of it.

    ``adapter``
        a short name ("CGA", "VGA").
    ``text_rows() -> list[str]``
        the displayed text page as 25 (or more) strings, CP437 decoded,
        controls as spaces, right-trimmed; graphics modes give what the
        character cells would show (usually blanks).
    ``text_page(page=None, display_address=None) -> dict``
        the ``video.text`` record: adapter, columns, rows, page_size_bytes,
        page_count, page, active_page, is_active_page, display_address,
        mode, graphics_mode, text, cells (code, char, attribute, foreground,
        background, blink per cell).
    ``cursor() -> dict``
        address, start_scanline, end_scanline, enabled, visible,
        blink_phase, column, row.
    ``mode_name() -> str`` and ``is_graphics() -> bool``
        the current mode ("Text80", "G320", "Mode13h" ...).
    ``frame() -> numpy.uint8[H, W, 3]``
        the visible picture at the mode's native resolution.
    ``frame_number() -> int``
        emulated frames since power-on (blink phases follow it).
    ``frame_cycles() -> float`` and ``frame_rate_hz() -> float``
        emulated CPU cycles per frame and frames per emulated second with
        the card's current timing (recordings take one frame per frame).
    ``pixel_aspect() -> fractions.Fraction``
        width over height of one ``frame()`` pixel on the monitor
        (recordings put it in the container, not into the pixels).
    ``write_png(path, double=False) -> int``
        the frame as a PNG file (:mod:`pypc_core.video_frames`); returns
        its size in bytes.
    ``frame_key(frame=None) -> bytes`` (optional)
        what ``frame()`` depends on (video memory, the registers the
        renderer reads, the blink phases): equal keys, equal pictures;
        recordings skip rendering an unchanged frame with it.
    ``vram_bytes() -> bytes``
        the card's text-mode memory as the CPU sees it at the declaration's
        first memory window.
    ``contract_cells(rows) -> rows`` (optional)
        :meth:`text_page`'s cells as the RPC contract reads them, for a card
        whose contract reading differs from what its display shows (the
        CGA: bit 7 is always ``blink``); without it the cells go as they are.
    ``font_plane() -> numpy.uint8[N]`` (optional)
        a card whose font lives in its RAM (the VGA's plane 2): the video
        history journals it in text modes.
    ``snapshot_parts(graphics_mode) -> (components, fields)`` (optional)
        what ``video.snapshot`` keeps beyond the text memory: more
        components (bytes by name: the VGA's font and graphics memory) and
        result fields (their layout, the cursor).
    """

    adapter: str

    def text_rows(self): ...

    def text_page(self, page=None, display_address=None): ...

    def cursor(self): ...

    def mode_name(self): ...

    def is_graphics(self): ...

    def frame(self): ...

    def frame_number(self): ...

    def frame_cycles(self): ...

    def frame_rate_hz(self): ...

    def pixel_aspect(self): ...

    def write_png(self, path, double=False): ...

    def vram_bytes(self): ...
