"""Keys typed on a host terminal in raw mode (the live view, a telnet
viewer) as XT scan codes, and the live view's escape commands (Ctrl-] q
quits ...)."""

from . import scancodes

_ESCAPES = {"[A": "up", "[B": "down", "[C": "right", "[D": "left", "[H": "home",
            "[F": "end", "[5~": "pgup", "[6~": "pgdn", "[2~": "ins", "[3~": "del",
            "OP": "f1", "OQ": "f2", "OR": "f3", "OS": "f4", "[15~": "f5", "[17~": "f6",
            "[18~": "f7", "[19~": "f8", "[20~": "f9", "[21~": "f10"}


# Control bytes without a letter key (Ctrl-A .. Ctrl-Z come from scancodes)
_CTRL_PUNCT = {"\x00": 0x03, "\x1c": 0x2B, "\x1e": 0x07, "\x1f": 0x0C}   # @/2 \ 6 -

# The escape key of the live view (telnet's): Ctrl-] and then a command key.
ESCAPE_BYTE = "\x1d"
ESCAPE_NAME = "Ctrl-]"
_CTRL = scancodes.CTRL
_BRK = scancodes.BREAK


def _ctrl_with(code):
    return [_CTRL, code, code | _BRK, _CTRL | _BRK]


# command key after Ctrl-] -> (what it does, scan codes to send or None to quit)
ESCAPE_COMMANDS = {
    "q": ("quit pypc", None),
    "b": ("send Ctrl-Break", _ctrl_with(0x46)),                   # Ctrl + Scroll Lock
    "d": ("send Ctrl-Alt-Del", [_CTRL, scancodes.ALT, 0x53, 0x53 | _BRK,
                                scancodes.ALT | _BRK, _CTRL | _BRK]),
    "]": ("send Ctrl-] itself", _ctrl_with(0x1B)),
}
ESCAPE_COMMANDS[ESCAPE_BYTE] = ESCAPE_COMMANDS["]"]
ESCAPE_HELP = (f"{ESCAPE_NAME} q quits, {ESCAPE_NAME} b Ctrl-Break, "
               f"{ESCAPE_NAME} d Ctrl-Alt-Del, {ESCAPE_NAME} ] sends {ESCAPE_NAME}")


def keys_from_terminal(data):
    """Scan codes for bytes read from a terminal in raw mode: printable
    keys, Enter, Backspace, Tab, Esc, the cursor and function key sequences
    and every control byte (Ctrl-C is Ctrl + C for the guest, not a signal)."""
    codes = []
    i = 0
    while i < len(data):
        ch = data[i]
        if ch == "\x1b":
            for seq, name in _ESCAPES.items():
                if data.startswith(seq, i + 1):
                    code = scancodes.NAMED[name]
                    codes += [code, code | scancodes.BREAK]
                    i += 1 + len(seq)
                    break
            else:
                codes += [scancodes.ESC, scancodes.ESC | scancodes.BREAK]
                i += 1
            continue
        if ch == "\x7f":
            ch = "\b"
        if ch in _CTRL_PUNCT:
            codes += _ctrl_with(_CTRL_PUNCT[ch])
        else:
            try:
                codes += scancodes.char_to_strokes(ch)
            except ValueError:
                pass
        i += 1
    return codes


class KeyInput:
    """Terminal bytes -> scan codes, minus the escape commands: ``feed``
    returns (scan codes, quit?).  Ctrl-] starts a command; the next byte
    picks it (ESCAPE_COMMANDS); any other byte cancels it."""

    def __init__(self):
        self.escape = False

    def feed(self, data):
        codes = []
        plain = []
        for ch in data:
            if self.escape:
                self.escape = False
                command = ESCAPE_COMMANDS.get(ch.lower() if ch.isalpha() else ch)
                if command is None:
                    continue
                if command[1] is None:
                    codes += keys_from_terminal("".join(plain))
                    return codes, True
                codes += keys_from_terminal("".join(plain)) + command[1]
                plain = []
            elif ch == ESCAPE_BYTE:
                self.escape = True
            else:
                plain.append(ch)
        return codes + keys_from_terminal("".join(plain)), False
