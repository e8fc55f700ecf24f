"""The pypc 8x8 CP437 font (pypc_core.font)."""

import unicodedata

import numpy as np
import pytest

from pypc_core import font
from pypc_core.font import FONT_8X8, font_bits, glyph, glyph_art
from pypc_core.font._box import BOX_ARMS


def test_size_and_halves():
    assert isinstance(FONT_8X8, bytes)
    assert len(FONT_8X8) == 2048
    assert font.ROM_FONT_LOW + font.FONT_HIGH == FONT_8X8
    assert len(font.ROM_FONT_LOW) == 1024
    assert glyph(0x41) == FONT_8X8[0x41 * 8:0x42 * 8]


def test_printable_ascii_non_empty_and_distinct():
    seen = {}
    for code in range(0x20, 0x7F):
        g = glyph(code)
        if code == 0x20:
            assert g == bytes(8)
            continue
        assert any(g), f"glyph {chr(code)!r} is empty"
        assert g not in seen, f"{chr(code)!r} looks like {chr(seen.get(g, 0))!r}"
        seen[g] = code


def test_every_visible_glyph_is_drawn():
    blank = {0x00, 0x20, 0xFF}
    for code in range(256):
        assert any(glyph(code)) == (code not in blank), hex(code)


def test_house_style_capitals_and_digits():
    # capitals and digits keep row 7 and column 7 dark, so cells never touch
    for ch in "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789":
        art = glyph_art(ord(ch))
        assert art[7] == "........", ch
        assert all(row[7] == "." for row in art), ch


def test_descenders_reach_row_7():
    for ch in "gjpqy":
        assert glyph(ord(ch))[7] != 0, ch
    for ch in "acemnorsuvwxz":
        assert glyph(ord(ch))[7] == 0, ch


def test_font_bits_matches_bytes():
    bits = font_bits()
    assert bits.shape == (256, 8, 8) and bits.dtype == bool
    assert not bits.flags.writeable
    for code in (0x41, 0xC9, 0xDB):
        for row in range(8):
            value = sum(1 << (7 - c) for c in range(8) if bits[code, row, c])
            assert value == FONT_8X8[code * 8 + row]


def _arms_from_unicode_name(code):
    """(up, down, left, right) weights read from the Unicode character name."""
    name = unicodedata.name(bytes([code]).decode("cp437"))
    assert name.startswith("BOX DRAWINGS ")
    parts = name[len("BOX DRAWINGS "):].split(" AND ")
    weights = {"LIGHT": 1, "SINGLE": 1, "DOUBLE": 2}
    dirs = {"UP": ("u",), "DOWN": ("d",), "LEFT": ("l",), "RIGHT": ("r",),
            "VERTICAL": ("u", "d"), "HORIZONTAL": ("l", "r")}
    default = weights.get(parts[0].split()[0])
    arms = dict(u=0, d=0, l=0, r=0)
    for part in parts:
        words = part.split()
        w = next((weights[x] for x in words if x in weights), default)
        for x in words:
            for d in dirs.get(x, ()):
                arms[d] = w
    return arms["u"], arms["d"], arms["l"], arms["r"]


@pytest.mark.parametrize("code", sorted(BOX_ARMS))
def test_box_drawing_arms_match_unicode(code):
    up, down, left, right = _arms_from_unicode_name(code)
    assert BOX_ARMS[code] == (up, down, left, right)
    bits = font_bits()[code]
    cols = {0: set(), 1: {3, 4}, 2: {1, 2, 5, 6}}
    rows = {0: set(), 1: {3}, 2: {2, 4}}
    assert set(np.nonzero(bits[0])[0]) == cols[up]
    assert set(np.nonzero(bits[7])[0]) == cols[down]
    assert set(np.nonzero(bits[:, 0])[0]) == rows[left]
    assert set(np.nonzero(bits[:, 7])[0]) == rows[right]


def test_double_frame_corners():
    assert glyph_art(0xC9) == [  # top-left of a double frame
        "........",
        "........",
        ".#######",
        ".##.....",
        ".##..###",
        ".##..##.",
        ".##..##.",
        ".##..##.",
    ]
    # a double line crossed by a single one: the single line stops at it
    assert glyph_art(0xB6)[3] == "###..##."   # ╢
    assert glyph_art(0xD1)[3] == "........"   # ╤


def test_blocks_and_shades():
    assert glyph(0xDB) == b"\xff" * 8
    assert glyph(0xDC) == bytes(4) + b"\xff" * 4
    assert glyph(0xDF) == b"\xff" * 4 + bytes(4)
    assert glyph(0xDD) == b"\xf0" * 8
    assert glyph(0xDE) == b"\x0f" * 8
    lit = [sum(bin(b).count("1") for b in glyph(c)) for c in (0xB0, 0xB1, 0xB2)]
    assert lit == [16, 32, 48]


def test_inverse_bullets():
    assert bytes(b ^ 0xFF for b in glyph(0x07)) == glyph(0x08)
    assert bytes(b ^ 0xFF for b in glyph(0x09)) == glyph(0x0A)


def test_accented_letters_keep_their_body():
    # é is e with a mark above; ü is u with a diaeresis
    assert glyph(0x82)[2:] == glyph(ord("e"))[2:]
    assert glyph(0x81)[2:] == glyph(ord("u"))[2:]
    assert glyph(0x82)[:2] != bytes(2)
