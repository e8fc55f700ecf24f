"""The VGA's planar memory model, byte-exact against results worked out by
hand from the VGA's documented data path (rotate -> mode -> function ->
bit mask -> map mask).  Registers are programmed through the ports."""

import numpy as np
import pytest

from pypc_plugins.vga import planar
from pypc_plugins.vga.vga import VGA

A0 = 0xA0000


def gc(v, index, value):
    v.port_write(0x3CE, index)
    v.port_write(0x3CF, value)


def seq(v, index, value):
    v.port_write(0x3C4, index)
    v.port_write(0x3C5, value)


@pytest.fixture
def card():
    """A card in a 16-colour planar set-up (like mode 12h) with the planes
    at offset 0 holding 0Fh, F0h, AAh, 55h and the latches loaded."""
    v = VGA()
    seq(v, 2, 0x0F)
    seq(v, 4, 0x06)            # no chain-4, no odd/even
    gc(v, 5, 0x00)
    gc(v, 6, 0x05)             # graphics, A0000h 64K
    v.planes[:, 0] = (0x0F, 0xF0, 0xAA, 0x55)
    assert v.mem_read(A0) == 0x0F          # read mode 0, map 0; latches loaded
    return v


def plane_bytes(v, off):
    return [int(x) for x in v.planes[:, off]]


def test_write_mode0_set_reset_and_bit_mask(card):
    gc(card, 0, 0b0101)        # set/reset
    gc(card, 1, 0b0011)        # enable set/reset on planes 0, 1
    gc(card, 8, 0x3C)
    card.mem_write(A0, 0x99)
    # p0: FF&3C | 0F&C3 = 3F;  p1: 00 | F0&C3 = C0;
    # p2: 99&3C | AA&C3 = 18|82 = 9A;  p3: 18 | 55&C3 = 18|41 = 59
    assert plane_bytes(card, 0) == [0x3F, 0xC0, 0x9A, 0x59]


def test_write_mode0_rotate_and_xor(card):
    gc(card, 3, (3 << 3) | 3)  # XOR, rotate right 3
    card.mem_write(A0, 0x81)   # ror 3 -> 30h
    assert plane_bytes(card, 0) == [0x30 ^ 0x0F, 0x30 ^ 0xF0, 0x30 ^ 0xAA, 0x30 ^ 0x55]


def test_write_mode0_and_or_functions(card):
    gc(card, 3, 1 << 3)        # AND
    card.mem_write(A0, 0x3C)
    assert plane_bytes(card, 0) == [0x0C, 0x30, 0x28, 0x14]
    card.mem_read(A0)          # reload latches from the new bytes
    gc(card, 3, 2 << 3)        # OR
    card.mem_write(A0, 0x81)
    assert plane_bytes(card, 0) == [0x8D, 0xB1, 0xA9, 0x95]


def test_write_mode1_copies_latches_under_map_mask(card):
    gc(card, 5, 0x01)
    gc(card, 8, 0x00)          # ignored by write mode 1
    seq(card, 2, 0b1010)
    card.planes[:, 1] = 0x11
    card.mem_write(A0 + 1, 0x77)           # the CPU byte is ignored
    assert plane_bytes(card, 1) == [0x11, 0xF0, 0x11, 0x55]


def test_write_mode2_colour_spread_or_and_mask(card):
    gc(card, 5, 0x02)
    gc(card, 3, 2 << 3)        # OR
    gc(card, 8, 0xF0)
    card.mem_write(A0, 0x0A)   # planes 1, 3 all ones; 0, 2 zeros
    # p0: 0F (00|0F, masked F0: 00|0F); p1: FF -> F0|00; p2: AA; p3: FF&F0 | 55&0F = F5
    assert plane_bytes(card, 0) == [0x0F, 0xF0, 0xAA, 0xF5]


def test_write_mode2_ignores_rotate(card):
    gc(card, 5, 0x02)
    gc(card, 3, 0x04)          # rotate 4 (must not move the colour bits)
    card.mem_write(A0, 0x03)
    assert plane_bytes(card, 0) == [0xFF, 0xFF, 0x00, 0x00]


def test_write_mode3_set_reset_masked_by_rotated_byte(card):
    gc(card, 5, 0x03)
    gc(card, 0, 0b1001)
    gc(card, 8, 0x0F)
    gc(card, 3, 0x01)          # rotate right 1
    card.mem_write(A0, 0xF0)   # ror 1 = 78h; mask = 0Fh & 78h = 08h
    # p0: FF&08 | 0F&F7 = 0F;  p1: F0&F7 = F0;  p2: AA&F7 = A2;  p3: 08 | 55 = 5D
    assert plane_bytes(card, 0) == [0x0F, 0xF0, 0xA2, 0x5D]


def test_read_mode1_colour_compare(card):
    gc(card, 5, 0x08)
    gc(card, 2, 0b0101)
    gc(card, 7, 0x0F)
    # p0=1 bits 0-3, p1=0 bits 0-3, p2=1 bits 1,3,5,7, p3=0 bits 1,3,5,7
    assert card.mem_read(A0) == 0x0A
    gc(card, 7, 0b0011)        # only planes 0 and 1 count
    assert card.mem_read(A0) == 0x0F
    gc(card, 7, 0x00)          # nothing counts: every pixel matches
    assert card.mem_read(A0) == 0xFF


def test_read_mode0_read_map_select(card):
    for plane, value in enumerate((0x0F, 0xF0, 0xAA, 0x55)):
        gc(card, 4, plane)
        assert card.mem_read(A0) == value


def test_map_mask_limits_planes(card):
    seq(card, 2, 0b0100)
    card.mem_write(A0 + 5, 0xE7)
    assert plane_bytes(card, 5) == [0, 0, 0xE7, 0]


def test_chain4_addressing():
    v = VGA()
    v.planes[:] = 0            # no power-on font in plane 2
    seq(v, 2, 0x0F)
    seq(v, 4, 0x0E)            # chain-4
    gc(v, 5, 0x40)
    gc(v, 6, 0x05)
    for i, value in enumerate((1, 2, 3, 4, 5)):
        v.mem_write(A0 + 0x100 + i, value)
    assert plane_bytes(v, 0x100) == [1, 2, 3, 4]
    assert plane_bytes(v, 0x104) == [5, 0, 0, 0]
    assert v.mem_read(A0 + 0x102) == 3


def test_odd_even_addressing_in_text_mode():
    v = VGA()                  # power-on: mode 3 registers, B8000h window
    v.mem_write(0xB8000 + 10, ord("Q"))
    v.mem_write(0xB8000 + 11, 0x4E)
    assert v.planes[0, 10] == ord("Q") and v.planes[1, 10] == 0x4E
    assert v.planes[0, 11] == 0 and v.planes[1, 11] == 0
    assert v.mem_read(0xB8000 + 11) == 0x4E
    assert v.mem_read(0xA0000) == 0xFF          # outside the B8000h window
    v.mem_write(0xA0000, 0x12)
    assert not v.planes[:, 0].any()


def test_memory_map_select_windows():
    v = VGA()
    for sel, base, size in ((0, 0xA0000, 0x20000), (1, 0xA0000, 0x10000),
                            (2, 0xB0000, 0x8000), (3, 0xB8000, 0x8000)):
        gc(v, 6, sel << 2)
        assert planar.window_offset(v.st, base) == 0
        assert planar.window_offset(v.st, base + size - 1) == size - 1
        assert planar.window_offset(v.st, base - 1) == -1
        assert planar.window_offset(v.st, base + size) == -1


def test_pure_functions_on_bare_arrays():
    planes = planar.new_planes()
    st = planar.new_state()
    planar.cpu_write(planes, st, 0xA0003, 0x5A)
    assert list(planes[:, 3]) == [0x5A] * 4
    assert planar.cpu_read(planes, st, 0xA0003) == 0x5A
    assert list(st[planar.ST_LATCH:planar.ST_LATCH + 4]) == [0x5A] * 4
    out = np.zeros(4, np.uint8)
    planar.read_block(planes, st, 0xA0002, out)
    assert list(out) == [0, 0x5A, 0, 0]


def test_compiled_port_handler_reads_writes_and_ignores_the_cycle_bits():
    """``op & 1`` is read (0) or write (1); the core puts the cycle above."""
    ctx, st, planes = planar.new_context()
    call = planar.port_handler().ctypes
    base = ctx.ctypes.data
    for cycle in (0, 12345):
        call(base, 0x3CE, 8, (cycle << 1) | 1)
        call(base, 0x3CF, 0x5A, (cycle << 1) | 1)
        assert st[planar.ST_BIT_MASK] == 0x5A and st[planar.ST_PLAIN] == 0
        assert call(base, 0x3CF, 0, cycle << 1) == 0x5A
        call(base, 0x3C8, 7, (cycle << 1) | 1)
        for c in (1, 2, 3):
            call(base, 0x3C9, c, (cycle << 1) | 1)
        call(base, 0x3C7, 7, (cycle << 1) | 1)
        assert [call(base, 0x3C9, 0, cycle << 1) for _ in range(3)] == [1, 2, 3]
        assert call(base, 0x3C7, 0, cycle << 1) == 3
        call(base, 0x3CF, 0xFF, (cycle << 1) | 1)
    # the same functions from Python
    planar.io_write(st, 0x3C4, 2)
    planar.io_write(st, 0x3C5, 0x05)
    assert st[planar.ST_MAP_MASK] == 0x05 and planar.io_read(st, 0x3C5) == 0x05
    assert planar.io_read(st, 0x3C5 - 1) == 2
    planar.io_write(st, 0x3C4, 7)
    assert planar.io_read(st, 0x3C5) == 0xFF           # no register 7


def test_window_handler_ignores_op_bits_above_the_first():
    ctx, st, planes = planar.new_context()
    call = planar.window_handler().ctypes
    base = ctx.ctypes.data
    call(base, 0xA0010, 0x66, (99 << 1) | 1)
    assert list(planes[:, 0x10]) == [0x66] * 4
    assert call(base, 0xA0010, 0, 99 << 1) == 0x66


# -- the journaled write: the same store as cpu_write, and exactly the changed
# text and font bytes (a reference written the long way: three planes before
# and after) --------------------------------------------------------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as hst  # noqa: E402

from pypc_core.bus.journal import FONT, TEXT, VIEW_BYTES, WriteLog  # noqa: E402


def _reference(planes, st, a, v):
    off = planar.window_offset(st, a)
    if off < 0:
        return []
    if st[planar.ST_CHAIN4]:
        addr = off & (planar.PLANE_MASK & ~3)
    elif st[planar.ST_OE_WRITE]:
        addr = off & (planar.PLANE_MASK & ~1)
    else:
        addr = off & planar.PLANE_MASK
    before = [int(planes[p, addr]) for p in range(3)]
    planar.cpu_write(planes, st, a, v)
    after = [int(planes[p, addr]) for p in range(3)]
    if st[planar.ST_GC + 6] & 1:
        return []
    out = []
    if addr < 0x8000 and addr % 2 == 0:
        out += [(TEXT, addr + p, before[p], after[p]) for p in (0, 1) if before[p] != after[p]]
    if before[2] != after[2]:
        out.append((FONT, addr, before[2], after[2]))
    return out


@settings(max_examples=300, deadline=None)
@given(seq4=hst.sampled_from([0x02, 0x06, 0x0E, 0x04]), map_mask=hst.integers(0, 15),
       gc5=hst.sampled_from([0x00, 0x10, 0x01, 0x02, 0x03, 0x18]),
       gc6=hst.sampled_from([0x0E, 0x0C, 0x05, 0x04, 0x02]),
       gc3=hst.sampled_from([0x00, 0x08, 0x03]), gc8=hst.sampled_from([0xFF, 0x0F]),
       plain=hst.booleans(),
       writes=hst.lists(hst.tuples(hst.integers(0, 0x1FFFF), hst.integers(0, 255)),
                        min_size=1, max_size=64),
       seed=hst.integers(0, 2**31))
def test_journaled_write_is_cpu_write_and_logs_every_changed_byte(
        seq4, map_mask, gc5, gc6, gc3, gc8, plain, writes, seed):
    if plain:                  # a text mode's plain stores (the journal's fast path)
        gc5, gc3, gc8 = gc5 & 0x10, 0, 0xFF
    writes = [(0xA0000 + a, b) for a, b in writes]
    cards = []
    for _ in range(2):
        v = VGA()
        seq(v, 4, seq4)
        seq(v, 2, map_mask)
        gc(v, 5, gc5)
        gc(v, 6, gc6)
        gc(v, 3, gc3)
        gc(v, 8, gc8)
        rng = np.random.default_rng(seed)
        v.planes[:, :] = rng.integers(0, 4, v.planes.shape, dtype=np.uint8)  # many equal bytes
        cards.append(v)
    ref, jv = cards
    log = WriteLog(256)
    want = []
    for i, (a, b) in enumerate(writes):
        want += [e + (i,) for e in _reference(ref.planes, ref.st, a, b)]
        planar.journaled_write(jv.planes, jv.st, a, b, log.words, i)
    entries, lost = log.drain()
    assert lost == 0
    assert [tuple(e) for e in entries.tolist()] == want
    # the log's views hold each logged byte's newest value, nothing else
    views = {TEXT: np.zeros(VIEW_BYTES, np.uint8), FONT: np.zeros(VIEW_BYTES, np.uint8)}
    for kind, offset, _old, new, _cycle in want:
        views[kind][offset] = new
    assert (log.views[TEXT] == views[TEXT]).all() and (log.views[FONT] == views[FONT]).all()
    assert (ref.planes == jv.planes).all()
    assert (ref.st == jv.st).all()
