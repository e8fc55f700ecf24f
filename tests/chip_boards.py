"""Boards for motherboard chips attached outside a Machine: the chip tests'
stand-in machines (a port map, a clock) give each chip a board of its own,
as the Machine does (``Machine._build_chipset``)."""

from pypc_core.board import Backplane


def board_for(m, chip):
    """A board on ``m``'s port map, clock (and memory, if it has one) for
    ``chip``, checked against the chip's declaration."""
    bp = Backplane(memory=getattr(m, "memory", None), ports=m.ports, clock=m.clock)
    return bp.board(chip.declaration, check=False)
