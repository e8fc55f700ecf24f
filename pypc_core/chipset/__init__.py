"""The XT system board chips: 8259A PIC, 8253 PIT, 8255 PPI with the XT
keyboard, 8237A DMA with page registers, and the NMI mask register."""

from .pic import Pic8259
from .pit import Pit8253, PitChannel, PIT_HZ, CYCLES_PER_TICK
from .ppi import Ppi8255, switch_byte, switch2_byte
from .keyboard import XtKeyboard
from .dma import Dma8237
from .nmi import NmiMask

__all__ = [
    "Pic8259", "Pit8253", "PitChannel", "PIT_HZ", "CYCLES_PER_TICK",
    "Ppi8255", "switch_byte", "switch2_byte", "XtKeyboard", "Dma8237",
    "NmiMask",
]
