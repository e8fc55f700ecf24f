"""Generated glyphs for CP437 B0h-DFh: shades, box drawing and blocks.

Box-drawing characters are described by the weight of their four arms
(0 none, 1 single, 2 double) and drawn from a few rules, so that every
frame piece joins its neighbours exactly:

* single vertical line: columns 3-4 (two cells wide, like the letters);
  double vertical lines: columns 1-2 and 5-6;
* single horizontal line: row 3; double horizontal lines: rows 2 and 4;
* arms reach the cell edge (row 0/7, column 0/7), so pieces connect across
  cells; lines meeting at a corner or tee join at the outer/inner line as a
  draughtsman would draw a double frame.
"""

# code -> (up, down, left, right)
BOX_ARMS = {
    0xB3: (1, 1, 0, 0), 0xB4: (1, 1, 1, 0), 0xB5: (1, 1, 2, 0), 0xB6: (2, 2, 1, 0),
    0xB7: (0, 2, 1, 0), 0xB8: (0, 1, 2, 0), 0xB9: (2, 2, 2, 0), 0xBA: (2, 2, 0, 0),
    0xBB: (0, 2, 2, 0), 0xBC: (2, 0, 2, 0), 0xBD: (2, 0, 1, 0), 0xBE: (1, 0, 2, 0),
    0xBF: (0, 1, 1, 0), 0xC0: (1, 0, 0, 1), 0xC1: (1, 0, 1, 1), 0xC2: (0, 1, 1, 1),
    0xC3: (1, 1, 0, 1), 0xC4: (0, 0, 1, 1), 0xC5: (1, 1, 1, 1), 0xC6: (1, 1, 0, 2),
    0xC7: (2, 2, 0, 1), 0xC8: (2, 0, 0, 2), 0xC9: (0, 2, 0, 2), 0xCA: (2, 0, 2, 2),
    0xCB: (0, 2, 2, 2), 0xCC: (2, 2, 0, 2), 0xCD: (0, 0, 2, 2), 0xCE: (2, 2, 2, 2),
    0xCF: (1, 0, 2, 2), 0xD0: (2, 0, 1, 1), 0xD1: (0, 1, 2, 2), 0xD2: (0, 2, 1, 1),
    0xD3: (2, 0, 0, 1), 0xD4: (1, 0, 0, 2), 0xD5: (0, 1, 0, 2), 0xD6: (0, 2, 0, 1),
    0xD7: (2, 2, 1, 1), 0xD8: (1, 1, 2, 2), 0xD9: (1, 0, 1, 0), 0xDA: (0, 1, 0, 1),
}

V_SINGLE = (3, 4)            # columns of the single vertical line
V_DOUBLE = ((1, 2), (5, 6))  # columns of the left and right double lines
H_SINGLE = 3                 # row of the single horizontal line
H_DOUBLE = (2, 4)            # rows of the top and bottom double lines


def box_glyph(up, down, left, right):
    """8x8 list of lists of 0/1 for a box-drawing piece."""
    g = [[0] * 8 for _ in range(8)]

    def vline(cols, r0, r1):
        for r in range(r0, r1 + 1):
            for c in cols:
                g[r][c] = 1

    def hline(row, c0, c1):
        for c in range(c0, c1 + 1):
            g[row][c] = 1

    v = max(up, down)     # weight of the vertical structure
    h = max(left, right)  # weight of the horizontal structure

    # -- vertical ---------------------------------------------------------
    if v == 1:
        if up:
            top = 0
        elif h == 2:
            # a stem hanging below a double line that runs straight through
            # joins only the lower line; at a corner it reaches the far one
            top = H_DOUBLE[1] if (left == 2 and right == 2) else H_DOUBLE[0]
        else:
            top = H_SINGLE
        if down:
            bottom = 7
        elif h == 2:
            bottom = H_DOUBLE[0] if (left == 2 and right == 2) else H_DOUBLE[1]
        else:
            bottom = H_SINGLE
        vline(V_SINGLE, top, bottom)
    elif v == 2:
        for side, cols in (("left", V_DOUBLE[0]), ("right", V_DOUBLE[1])):
            arm = left if side == "left" else right
            if up and down:
                if arm == 2:   # the double arm on this side breaks the line
                    vline(cols, 0, H_DOUBLE[0])
                    vline(cols, H_DOUBLE[1], 7)
                else:
                    vline(cols, 0, 7)
                continue
            if h == 2:
                # outer line (no arm on its side) reaches the far horizontal
                # line; inner line stops at the near one
                if up:
                    top, bottom = 0, (H_DOUBLE[0] if arm else H_DOUBLE[1])
                else:
                    top, bottom = (H_DOUBLE[1] if arm else H_DOUBLE[0]), 7
            else:
                top, bottom = (0, H_SINGLE) if up else (H_SINGLE, 7)
            vline(cols, top, bottom)

    # -- horizontal -------------------------------------------------------
    if h == 1:
        if left:
            c0 = 0
        elif v == 2:
            c0 = V_DOUBLE[1][0] if (up == 2 and down == 2) else V_DOUBLE[0][0]
        else:
            c0 = V_SINGLE[0]
        if right:
            c1 = 7
        elif v == 2:
            c1 = V_DOUBLE[0][1] if (up == 2 and down == 2) else V_DOUBLE[1][1]
        else:
            c1 = V_SINGLE[1]
        hline(H_SINGLE, c0, c1)
    elif h == 2:
        for side, row in (("top", H_DOUBLE[0]), ("bottom", H_DOUBLE[1])):
            arm = up if side == "top" else down
            if left and right:
                if arm == 2:
                    hline(row, 0, V_DOUBLE[0][1])
                    hline(row, V_DOUBLE[1][0], 7)
                else:
                    hline(row, 0, 7)
                continue
            if v == 2:
                if left:
                    c0, c1 = 0, (V_DOUBLE[0][1] if arm else V_DOUBLE[1][1])
                else:
                    c0, c1 = (V_DOUBLE[1][0] if arm else V_DOUBLE[0][0]), 7
            elif v == 1:
                c0, c1 = (0, V_SINGLE[1]) if left else (V_SINGLE[0], 7)
            else:
                c0, c1 = 0, 7
            hline(row, c0, c1)
    return g


def shade_glyph(level):
    """Shades B0h-B2h: level 1 = 25 %, 2 = 50 %, 3 = 75 % lit."""
    g = [[0] * 8 for _ in range(8)]
    for r in range(8):
        for c in range(8):
            if level == 1:
                on = (c + 2 * (r & 1)) % 4 == 0
            elif level == 2:
                on = (r + c) % 2 == 0
            else:
                on = (c + 2 * (r & 1)) % 4 != 2
            g[r][c] = int(on)
    return g


def block_glyph(code):
    """Blocks DBh-DFh: full, lower half, left half, right half, upper half."""
    rows = {0xDB: range(8), 0xDC: range(4, 8), 0xDD: range(8), 0xDE: range(8),
            0xDF: range(0, 4)}[code]
    cols = {0xDD: range(0, 4), 0xDE: range(4, 8)}.get(code, range(8))
    g = [[0] * 8 for _ in range(8)]
    for r in rows:
        for c in cols:
            g[r][c] = 1
    return g


def generated_glyphs():
    """{code: 8x8 0/1 grid} for B0h-DFh."""
    out = {}
    for level, code in enumerate((0xB0, 0xB1, 0xB2), start=1):
        out[code] = shade_glyph(level)
    for code, arms in BOX_ARMS.items():
        out[code] = box_glyph(*arms)
    for code in range(0xDB, 0xE0):
        out[code] = block_glyph(code)
    return out
