"""The pypc 8x8 CP437 font: 256 glyphs x 8 rows, most significant bit left.

Every glyph was drawn or generated for pypc (see ``_ascii``, ``_symbols`` and
``_box``); nothing is copied from a ROM or another emulator.  Users:

* the CGA renderer (``font_bits()``: a ``bool[256, 8, 8]`` lookup table);
* the built-in BIOS: the first 128 glyphs live at F000:FA6E (``ROM_FONT_LOW``),
  INT 1Fh may point at the upper 128 (``FONT_HIGH``).

``glyph_art(code)`` shows a glyph as eight ``#``/``.`` strings for debugging.
"""

from ._ascii import ASCII_ART
from ._box import generated_glyphs
from ._symbols import ACCENTS, COMPOSED, INVERTED, SYMBOL_ART

__all__ = ["FONT_8X8", "ROM_FONT_LOW", "FONT_HIGH", "GLYPH_BYTES", "glyph",
           "glyph_art", "font_bits", "BIOS_FONT_OFFSET"]

GLYPH_BYTES = 8
BIOS_FONT_OFFSET = 0xFA6E      # F000:FA6E, the IBM-compatible 8x8 font address


def _parse(art, where):
    rows = art.strip("\n").split("\n")
    if len(rows) != 8 or any(len(r) != 8 or set(r) - {"#", "."} for r in rows):
        raise ValueError(f"bad glyph art for {where!r}")
    return [[1 if ch == "#" else 0 for ch in r] for r in rows]


def _build():
    grids = {}
    for ch, art in ASCII_ART.items():
        grids[ord(ch)] = _parse(art, ch)
    for code, art in SYMBOL_ART.items():
        grids[code] = _parse(art, hex(code))
    for code, src in INVERTED.items():
        grids[code] = [[1 - b for b in row] for row in grids[src]]
    for code, (base, accent) in COMPOSED.items():
        body = [list(r) for r in grids[ord(base)]]
        if base == "i":           # dotless body: drop the dot in row 0
            body[0] = [0] * 8
        marks = ACCENTS[accent]
        grid = [_parse_row(marks[0]), _parse_row(marks[1])] + body[2:]
        grids[code] = grid
    grids.update(generated_glyphs())
    missing = [c for c in range(256) if c not in grids]
    if missing:
        raise ValueError(f"font has no glyph for {missing}")
    out = bytearray()
    for code in range(256):
        for row in grids[code]:
            value = 0
            for bit in row:
                value = (value << 1) | bit
            out.append(value)
    return bytes(out)


def _parse_row(text):
    return [1 if ch == "#" else 0 for ch in text]


FONT_8X8: bytes = _build()
ROM_FONT_LOW: bytes = FONT_8X8[:1024]     # characters 00h-7Fh (F000:FA6E)
FONT_HIGH: bytes = FONT_8X8[1024:]        # characters 80h-FFh (INT 1Fh table)


def glyph(code):
    """The 8 row bytes of character ``code``."""
    code &= 0xFF
    return FONT_8X8[code * 8:code * 8 + 8]


def glyph_art(code):
    """Eight strings of ``#``/``.`` showing character ``code``."""
    return ["".join("#" if b & (0x80 >> i) else "." for i in range(8))
            for b in glyph(code)]


_BITS = None


def font_bits():
    """``numpy.bool_[256, 8, 8]``: [code, row, column] lit (read-only)."""
    global _BITS
    if _BITS is None:
        import numpy as np
        arr = np.unpackbits(np.frombuffer(FONT_8X8, dtype=np.uint8)).astype(bool)
        arr = arr.reshape(256, 8, 8)
        arr.flags.writeable = False
        _BITS = arr
    return _BITS
