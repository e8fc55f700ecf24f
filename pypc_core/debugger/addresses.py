"""Numbers and addresses as the debugger takes them: ``123``, ``0x7B``,
``7Bh``, ``0b1111011``; a linear address, ``SSSS:OOOO`` or (segment,
offset)."""

import re

import numpy as np

from .errors import BreakpointError

MEM_TOP = 1 << 20


def parse_number(text):
    """``123``, ``0x7B``, ``7Bh``, ``0b1111011``, ``0o17`` -> int."""
    if isinstance(text, bool):
        raise BreakpointError(f"not a number: {text!r}")
    if isinstance(text, (int, np.integer)):
        return int(text)
    if not isinstance(text, str):
        raise BreakpointError(f"not a number: {text!r}")
    t = text.strip().lower().replace("_", "")
    try:
        if t.endswith("h") and re.fullmatch(r"[0-9a-f]+h", t):
            return int(t[:-1], 16)
        return int(t, 0)
    except ValueError:
        raise BreakpointError(f"not a number: {text!r}") from None


def parse_address(address, what="address"):
    """A linear address from an int, ``"SSSS:OOOO"`` (hex), ``(seg, off)``
    or a number string.  Returns (linear, segment or None, offset or None)."""
    seg = off = None
    if isinstance(address, (tuple, list)) and len(address) == 2:
        seg, off = (parse_number(x) for x in address)
    elif isinstance(address, str) and ":" in address:
        a, _, b = address.partition(":")
        try:
            seg, off = int(a.strip(), 16), int(b.strip().rstrip("hH"), 16)
        except ValueError:
            raise BreakpointError(f"bad {what} {address!r}: use SSSS:OOOO (hex)") from None
    else:
        linear = parse_number(address)
        if not 0 <= linear < MEM_TOP:
            raise BreakpointError(f"{what} {linear:#x} is beyond 1 MiB")
        return linear, None, None
    if not (0 <= seg <= 0xFFFF and 0 <= off <= 0xFFFF):
        raise BreakpointError(f"bad {what} {address!r}: segment and offset are 16-bit")
    return ((seg << 4) + off) & (MEM_TOP - 1), seg, off
