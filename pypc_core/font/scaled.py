"""The 8x14 and 8x16 fonts of the VGA, derived from the pypc 8x8 font.

Nothing here is drawn from another font: every glyph is the pypc 8x8 glyph
(``FONT_8X8``) stretched vertically.  Row ``y`` of a glyph ``h`` rows high
shows row ``y * 8 // h`` of the 8x8 glyph, so 8x16 doubles every row and
8x14 doubles six of the eight (rows 3 and 7 stay single).  Box-drawing and
block characters keep touching their neighbours because their first and last
rows are stretched like the others.
"""

from . import FONT_8X8

__all__ = ["FONT_8X14", "FONT_8X16", "scaled_font", "row_map"]


def row_map(height):
    """For each row of an ``height``-row glyph, the 8x8 row it shows."""
    if not 8 <= height <= 32:
        raise ValueError(f"glyph height must be 8..32, not {height}")
    return [y * 8 // height for y in range(height)]


def scaled_font(height):
    """256 glyphs of ``height`` rows (bytes, glyph after glyph)."""
    rows = row_map(height)
    out = bytearray()
    for code in range(256):
        glyph = FONT_8X8[code * 8:code * 8 + 8]
        out += bytes(glyph[r] for r in rows)
    return bytes(out)


FONT_8X14: bytes = scaled_font(14)
FONT_8X16: bytes = scaled_font(16)
