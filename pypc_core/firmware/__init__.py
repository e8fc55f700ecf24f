"""The built-in BIOS (Python services behind ROM entry stubs).

Machine integration, in order:

1. ``bios = Bios(machine)`` -- ``machine`` provides ``memory`` (MemoryMap),
   ``ports`` (PortMap), ``cpu.regs`` / ``cpu.ctl`` (numpy arrays),
   ``disks`` ({0: A:, 1: B:, 0x80: C:, 0x81: D:} of ``DiskImage``),
   ``equipment`` (a ``pypc_core.board.Equipment``: floppy drives, RAM,
   serial and parallel port bases, game port, video kind -- what the
   equipment word and the BIOS data area report) and ``initial_ticks``
   (tick count at POST; the machine gives 0 = midnight, so that runs are
   deterministic).
2. ``bios.install()`` maps the ROM at F0000h and sets ``XF_TRAP`` bits.
3. Reset the CPU to FFFF:0000 and set ``ctl[C_TRAP_ENABLE] = 1``.
4. On ``EXIT_TRAP`` call ``bios.on_trap(int(ctl[C_EXIT_VALUE]))`` (the
   linear address of CS:IP) and resume.  A service that waits sets
   ``ctl[C_HALTED] = 1`` with IF=1 and leaves IP on the trap; the next
   interrupt's IRET returns to the trap and the service runs again.
   (As for any exit: do not enter an interrupt while an ``EXIT_IO_IN``
   answer is pending, i.e. while ``ctl[C_IO_READY]`` is 1.)

``bios.waiting_for_key`` tells a launcher that the guest waits for a key
(INT 16h AH=00h on an empty buffer, or AH=01h polling an empty one).

Entry points (segment F000h; each stub is STI, the trap NOP, then the
return): INT 08h FEA5 (trap FEA7, then INT 1Ch, EOI, IRET), INT 09h E987
(trap E989; exits kb_done/kb_break/kb_prtsc/kb_pause/kb_reboot), INT 0Eh
EF57, INT 10h F065, INT 11h F84D, INT 12h F841, INT 13h EC59 (RETF 2),
INT 14h E739, INT 15h F859 (RETF 2), INT 16h E82E (RETF 2), INT 17h EFD2,
INT 18h E2D0, INT 19h E6F2, INT 1Ah FE6E (RETF 2), INT 05h FF54, NMI E2C3,
dummy IRET FF53, POST E05B (traps post, romscan, post_done), reset vector
FFF0.  Tables: diskette parameters EFC7 (INT 1Eh; per drive type F500h +
16 * (type - 1)), video parameters F0A4 (INT 1Dh), fixed-disk parameters
F540/F550 (INT 41h/46h), font FA6E (00h-7Fh) and F100 (80h-FFh, INT 1Fh),
baud divisors E729, date FFF5, model byte FFFE.  ``bios.trap_addresses``
lists every trap byte.
"""

from .bios import Bios, JUMPED, WAIT
from .rom import BIOS_BASE, BIOS_SEGMENT, ROM_SIZE, build_rom

__all__ = ["Bios", "build_rom", "BIOS_BASE", "BIOS_SEGMENT", "ROM_SIZE", "WAIT", "JUMPED"]
