"""Bytes a bare machine starts with (``pypc run --bare --load FILE@SEG:OFF``)
put into the memory map: RAM below the top of RAM, ROM pages above it."""

from ..cpu import state as S
from ..errors import PypcError

PAGE = 1 << S.PAGE_SHIFT


class LoadPlacementError(PypcError):
    """A --load that cannot be placed (it straddles the end of RAM, or its
    ROM pages collide with another window)."""


def place_loads(memory, loads, ram_top):
    """Put each (bytes, linear) into memory: RAM contents below ``ram_top``,
    ROM pages (FFh where no load says otherwise) above it."""
    rom_pages = {}
    for data, linear in loads:
        end = linear + len(data)
        if linear < ram_top < end:
            raise LoadPlacementError(f"a --load at {linear:05X}h straddles the end of RAM ({ram_top:05X}h)")
        if end <= ram_top:
            memory.write(linear, data, force=True)
            continue
        for page in range(linear // PAGE, (end - 1) // PAGE + 1):
            buf = rom_pages.setdefault(page, bytearray(b"\xFF" * PAGE))
            lo = max(linear, page * PAGE)
            hi = min(end, (page + 1) * PAGE)
            buf[lo - page * PAGE:hi - page * PAGE] = data[lo - linear:hi - linear]
    pages = sorted(rom_pages)
    i = 0
    while i < len(pages):
        j = i
        while j + 1 < len(pages) and pages[j + 1] == pages[j] + 1:
            j += 1
        image = b"".join(bytes(rom_pages[p]) for p in pages[i:j + 1])
        try:
            memory.map_rom(pages[i] * PAGE, image, owner="--load")
        except Exception as exc:
            raise LoadPlacementError(f"--load at {pages[i] * PAGE:05X}h: {exc}") from None
        i = j + 1
