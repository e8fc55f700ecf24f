"""The VGA's renderer (mixed into :class:`pypc_plugins.vga.vga.VGA`): the
picture from the planes and the registers (not a mode number).

Rendering (``frame()``)
    Every scan line is generated from the CRTC (start address, offset,
    maximum scan line, double scan, line compare, byte/word/doubleword
    addressing, CGA-compatible row-scan substitution of address bits 13/14),
    the sequencer (8/9 dots, character maps), the graphics controller
    (graphics/text, shift register modes), the attribute controller
    (palette, mode control, colour plane enable, colour select) and the DAC.
    The picture is returned at the mode's own resolution: a line the CRTC
    repeats (double scan, or a graphics row of several identical scan lines)
    is given once, so mode 13h is 320x200, mode 12h 640x480 and mode 3
    720x400.  Horizontal pel panning (AC 13h, with the split-screen
    compatibility bit of AC 10h) and the preset row scan (CRTC 8) shift the
    picture as on the card.  Not modelled: cursor skew and the byte-panning
    bits of CRTC 8, monochrome attribute decoding (mode 7), the vertical retrace
    interrupt.
"""

import numpy as np

CURSOR_BLINK_FRAMES = 8         # cursor on 8 frames, off 8
CHAR_BLINK_FRAMES = 16          # blinking characters on 16 frames, off 16

_CGA_SHIFTS = np.array([6, 4, 2, 0], dtype=np.uint8)


class VgaRender:
    """CRTC addressing, scan lines, panning, the palette, text and graphics
    rendering, frames as DAC indices and RGB."""

    # -- addressing ---------------------------------------------------------------------
    def _mem_address(self, ma, ra):
        """Plane offsets for CRTC addresses ``ma`` at row scan ``ra``."""
        ma = np.asarray(ma, dtype=np.int64) & 0xFFFF
        r = self.crtc
        if r[0x14] & 0x40:                                  # doubleword
            addr = ((ma << 2) | ((ma >> 14) & 3)) & 0xFFFF
        elif not r[0x17] & 0x40:                            # word
            bit = (ma >> 15) & 1 if r[0x17] & 0x20 else (ma >> 13) & 1
            addr = ((ma << 1) | bit) & 0xFFFF
        else:                                               # byte
            addr = ma
        ra = np.asarray(ra, dtype=np.int64)
        if not r[0x17] & 0x01:
            addr = (addr & ~0x2000) | ((ra & 1) << 13)
        if not r[0x17] & 0x02:
            addr = (addr & ~0x4000) | (((ra >> 1) & 1) << 14)
        return addr

    def _scanlines(self):
        """Per displayed native line: (row start MA, row scan, below the
        split) arrays."""
        r = self.crtc
        t = self._timing()
        vde = t["vdisp_lines"]
        dbl = 2 if r[9] & 0x80 else 1
        msl = (r[9] & 0x1F) + 1
        lc = r[0x18] + ((r[7] & 0x10) << 4) + ((r[9] & 0x40) << 3)
        offset = r[0x13] * 2
        line = np.arange(vde, dtype=np.int64)
        split = line > lc
        rel = np.where(split, line - (lc + 1), line) // dbl
        rel = np.where(split, rel, rel + (r[8] & 0x1F))       # preset row scan
        row = rel // msl
        ra = rel % msl
        base = np.where(split, 0, self.start_address())
        ma = base + row * offset
        graphics = self.is_graphics()
        uses_ra = (not graphics) or (r[0x17] & 3) != 3
        step = dbl * (1 if uses_ra else msl)
        if lc < vde and step > 1:
            # a split screen may not fall on a step: keep every line
            step = 1 if (lc + 1) % step else step
        return ma[::step], ra[::step], split[::step]

    def _pan(self, split):
        """Per line, the horizontal pel panning in pixels (AC 13h); lines
        below a split are not panned when AC 10h bit 5 says so."""
        v = self.ac[0x13] & 0x0F
        if not self.is_graphics():
            pan = (v + 1) % 9 if not self.seq[1] & 1 else v & 7
        elif self.ac[0x10] & 0x40 or self.gc[5] & 0x40:
            pan = (v >> 1) & 3
        else:
            pan = v & 7
        lines = np.full(len(split), pan, dtype=np.int64)
        if self.ac[0x10] & 0x20:
            lines[split] = 0
        return lines

    @staticmethod
    def _panned(img, pan, width):
        """``img`` (lines, width + one character) shifted left by ``pan``."""
        if not pan.any():
            return img[:, :width]
        idx = pan[:, None] + np.arange(width)[None, :]
        return np.take_along_axis(img, idx, axis=1)

    def resolution(self):
        """(width, height) of ``frame()``."""
        ma, _, _ = self._scanlines()
        chars = self.crtc[1] + 1
        if not self.is_graphics():
            return chars * (8 if self.seq[1] & 1 else 9), len(ma)
        return chars * self._pixels_per_char(), len(ma)

    def _pixels_per_char(self):
        if self.ac[0x10] & 0x40 or self.gc[5] & 0x40:
            return 4
        return 8

    # -- palette -------------------------------------------------------------------------
    def dac_rgb(self):
        """The 256 DAC entries as 8-bit RGB (6-bit values scaled to 0-255)."""
        return ((self.dac.astype(np.uint16) * 255 + 31) // 63).astype(np.uint8)

    def attribute_lut(self):
        """DAC index for each 4-bit pixel value (colour plane enable,
        palette registers, P5-4 select and colour select applied)."""
        ac = self.ac
        values = np.arange(16) & (ac[0x12] & 0x0F)
        pal = np.array(ac[:16], dtype=np.int64)[values]
        select = ac[0x14]
        if ac[0x10] & 0x80:
            pal = (pal & 0x0F) | ((select & 3) << 4)
        pal = (pal & 0x3F) | ((select & 0x0C) << 4)
        return pal.astype(np.int64)

    def _to_rgb(self, dac_index):
        idx = np.asarray(dac_index, dtype=np.uint8)
        if self.pel_mask != 0xFF:
            idx = idx & np.uint8(self.pel_mask)
        return np.take(self.dac_rgb(), idx, axis=0)

    # -- rendering -----------------------------------------------------------------------
    def frame_indices(self, frame=None):
        """The picture as DAC indices, ``uint8[height, width]``."""
        w, h = self.resolution()
        if not self.ac_index & 0x20 or self.seq[1] & 0x20 or h == 0:
            return np.full((h, w), self._overscan_index(), dtype=np.uint8)
        if frame is None:
            frame = self.frame_number()
        if self.is_graphics():
            img = self._render_graphics()
        else:
            img = self._render_text(frame)
        return img.astype(np.uint8)

    def _overscan_index(self):
        return 0 if self.ac_index & 0x20 == 0 else self.ac[0x11]

    def frame_key(self, frame=None):
        """Bytes that determine ``frame(frame)`` exactly: the four planes,
        every register the renderer reads (sequencer, CRTC, graphics and
        attribute controllers, misc output, the attribute index's display
        bit, PEL mask), the DAC and the blink phases (equal keys, equal
        pictures; recordings skip rendering an unchanged frame)."""
        if frame is None:
            frame = self.frame_number()
        phases = (int(frame) // CURSOR_BLINK_FRAMES) % 4    # cursor 8, characters 16
        regs = (bytes(int(v) & 0xFF for v in self.seq) + bytes(int(v) & 0xFF for v in self.crtc)
                + bytes(int(v) & 0xFF for v in self.gc) + bytes(int(v) & 0xFF for v in self.ac)
                + bytes((self.misc & 0xFF, self.ac_index & 0xFF, self.pel_mask & 0xFF, phases)))
        return self.planes.tobytes() + self.dac.tobytes() + regs

    def frame(self, frame=None):
        """The picture as RGB, ``uint8[height, width, 3]`` at the mode's own
        resolution (see ``resolution()``)."""
        return self._to_rgb(self.frame_indices(frame))

    def frame_doubled(self, frame=None):
        """``frame()`` with its pixels doubled where the monitor shows them
        doubled: lines of 200-line modes, dots of 320/360-wide ones (so
        every mode comes out 640/720 x 350-480, about its shape on screen)."""
        img = self.frame(frame)
        if img.shape[0] and img.shape[0] < 300:
            img = np.repeat(img, 2, axis=0)
        if img.shape[1] and img.shape[1] <= 360:
            img = np.repeat(img, 2, axis=1)
        return img

    def _fetch(self, ma_rows, ra_rows, chars):
        """Plane bytes for every character clock: uint8[4, lines, chars]."""
        ma = ma_rows[:, None] + np.arange(chars)[None, :]
        addr = self._mem_address(ma, np.broadcast_to(ra_rows[:, None], ma.shape))
        return self.planes[:, addr]

    def _render_graphics(self):
        ma, ra, split = self._scanlines()
        shown = self.crtc[1] + 1
        pan = self._pan(split)
        chars = shown + (1 if pan.any() else 0)
        data = self._fetch(ma, ra, chars)            # 4, lines, chars
        lines = len(ma)
        ac10 = self.ac[0x10]
        gc5 = self.gc[5]
        if ac10 & 0x40 or gc5 & 0x40:
            # 256 colours: the four planes give four pixels of a character clock
            pix = np.transpose(data, (1, 2, 0)).reshape(lines, chars * 4)
            return self._panned(pix, pan, shown * 4)
        if gc5 & 0x20:
            # CGA-compatible interleave: plane 0 gives pixels 0-3, plane 1
            # pixels 4-7, 2 bits each (planes 2/3 likewise for bits 2-3)
            lo = np.concatenate([(data[0][:, :, None] >> _CGA_SHIFTS) & 3,
                                 (data[1][:, :, None] >> _CGA_SHIFTS) & 3], axis=2)
            hi = np.concatenate([(data[2][:, :, None] >> _CGA_SHIFTS) & 3,
                                 (data[3][:, :, None] >> _CGA_SHIFTS) & 3], axis=2)
            values = (lo | (hi << 2)).reshape(lines, chars * 8)
        else:
            b = [np.unpackbits(data[p], axis=1) for p in range(4)]   # lines, chars*8
            values = b[0] | (b[1] << 1) | (b[2] << 2) | (b[3] << 3)
        lut = self.attribute_lut().astype(np.uint8)
        return lut[self._panned(values, pan, shown * 8)]

    def font_offsets(self):
        """Plane-2 offsets of character maps A and B (sequencer 3)."""
        s3 = self.seq[3]
        a = ((s3 >> 5) & 1) << 2 | ((s3 >> 2) & 3)
        b = ((s3 >> 4) & 1) << 2 | (s3 & 3)

        def off(v):
            return (v & 3) * 0x4000 + (v >> 2) * 0x2000
        return off(a), off(b)

    def _render_text(self, frame):
        ma, ra, split = self._scanlines()
        shown = self.crtc[1] + 1
        pan = self._pan(split)
        chars = shown + (1 if pan.any() else 0)
        data = self._fetch(ma, ra * 0, chars)        # row scan does not move text
        ch = data[0]
        at = data[1]
        map_a, map_b = self.font_offsets()
        font_base = np.where(at & 0x08, map_b, map_a) if map_a != map_b else map_a
        glyph_addr = (font_base + ch.astype(np.int64) * 32 + ra[:, None]) & 0xFFFF
        glyph = self.planes[2][glyph_addr]                        # lines, chars
        nine = not self.seq[1] & 1
        width = 9 if nine else 8
        bits = np.unpackbits(glyph[:, :, None], axis=2)          # lines, chars, 8
        if nine:
            ninth = np.where(bool(self.ac[0x10] & 0x04) & (ch >= 0xC0) & (ch <= 0xDF),
                             bits[:, :, 7], 0).astype(np.uint8)
            bits = np.concatenate([bits, ninth[:, :, None]], axis=2)
        fg = at & 0x0F
        bg = at >> 4
        cursor_on, char_on = self.blink_phase(frame)
        if self.blink_enabled():
            bg = bg & 7
            if not char_on:
                fg = np.where(at & 0x80, bg, fg)
        # underline: attribute x000x001 on the underline location's line (the
        # BIOS puts that line below the cell in colour modes)
        under = ((at & 0x77) == 0x01) & (ra[:, None] == (self.crtc[0x14] & 0x1F))
        if under.any():
            bits = np.where(under[:, :, None], np.uint8(1), bits)
        # cursor
        r = self.crtc
        cstart, cend = r[0x0A] & 0x1F, r[0x0B] & 0x1F
        if not r[0x0A] & 0x20 and cstart <= cend and cursor_on:
            cpos = (r[0x0E] << 8) | r[0x0F]
            col = cpos - ma[:, None]
            hit = (col >= 0) & (col < shown) & (ra >= cstart)[:, None] & (ra <= cend)[:, None]
            lines_hit, = np.nonzero(hit.any(axis=1))
            if len(lines_hit):
                cols = col[lines_hit, 0] if col.ndim == 2 else col[lines_hit]
                bits[lines_hit, cols, :] = 1
        values = np.where(bits != 0, fg[:, :, None], bg[:, :, None])
        values = values.reshape(len(ma), chars * width)
        lut = self.attribute_lut().astype(np.uint8)
        return lut[self._panned(values, pan, shown * width)]
