"""XT (scan code set 1) codes for the US keyboard layout, and text -> key
strokes for typing into the guest."""

# unshifted character -> make code
_PLAIN = {}
_SHIFTED = {}
_ROWS = [
    (0x02, "1234567890-=", "!@#$%^&*()_+"),
    (0x10, "qwertyuiop[]", "QWERTYUIOP{}"),
    (0x1E, "asdfghjkl;'`", 'ASDFGHJKL:"~'),
    (0x2B, "\\zxcvbnm,./", "|ZXCVBNM<>?"),
]
for start, plain, shifted in _ROWS:
    for i, (p, s) in enumerate(zip(plain, shifted)):
        _PLAIN[p] = start + i
        _SHIFTED[s] = start + i

LSHIFT = 0x2A
CTRL = 0x1D
ALT = 0x38
ENTER = 0x1C
BACKSPACE = 0x0E
TAB = 0x0F
ESC = 0x01
SPACE = 0x39
BREAK = 0x80

_SPECIAL = {"\r": ENTER, "\n": ENTER, "\b": BACKSPACE, "\t": TAB, "\x1b": ESC, " ": SPACE}

# named keys for the console / RPC: name -> make code
NAMED = {
    "esc": ESC, "enter": ENTER, "backspace": BACKSPACE, "tab": TAB, "space": SPACE,
    "lshift": LSHIFT, "rshift": 0x36, "ctrl": CTRL, "alt": ALT, "capslock": 0x3A,
    "numlock": 0x45, "scrolllock": 0x46,
    "f1": 0x3B, "f2": 0x3C, "f3": 0x3D, "f4": 0x3E, "f5": 0x3F, "f6": 0x40,
    "f7": 0x41, "f8": 0x42, "f9": 0x43, "f10": 0x44,
    "home": 0x47, "up": 0x48, "pgup": 0x49, "left": 0x4B, "right": 0x4D,
    "end": 0x4F, "down": 0x50, "pgdn": 0x51, "ins": 0x52, "del": 0x53,
}


def char_to_strokes(ch):
    """Scan codes (make and break) that type one character."""
    if ch in _SPECIAL:
        code = _SPECIAL[ch]
        return [code, code | BREAK]
    if ch in _PLAIN:
        code = _PLAIN[ch]
        return [code, code | BREAK]
    if ch in _SHIFTED:
        code = _SHIFTED[ch]
        return [LSHIFT, code, code | BREAK, LSHIFT | BREAK]
    if "\x01" <= ch <= "\x1a":           # Ctrl-A .. Ctrl-Z
        code = _PLAIN[chr(ord(ch) + 96)]
        return [CTRL, code, code | BREAK, CTRL | BREAK]
    raise ValueError(f"no key on the US keyboard types {ch!r}")


def text_to_scancodes(text):
    out = []
    for ch in text:
        out.extend(char_to_strokes(ch))
    return out
