"""``--type`` and ``--type-after``: the text's backslash escapes, its lines,
and when the guest is ready for the next one (emulated state only)."""

TYPE_AFTER_IDLE_FRAMES = 6          # built-in BIOS: frames in its keyboard wait
TYPE_AFTER_STILL_FRAMES = 60         # own keyboard driver or another BIOS: frames of an unchanged screen


def unescape(text):
    """``--type 'dir\\r'``: backslash escapes \\r \\n \\t \\e \\\\."""
    out = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            mapped = {"r": "\r", "n": "\r", "t": "\t", "e": "\x1b", "\\": "\\", "b": "\b"}.get(nxt)
            if mapped is not None:
                out.append(mapped)
                i += 2
                continue
        out.append(ch)
        i += 1
    return "".join(out)


def type_chunks(text):
    """``--type`` text split after each Enter: every line is typed when the
    guest waits for input again, so type-ahead never overflows the BIOS's
    15-key buffer while a command runs."""
    chunks, start = [], 0
    for i, ch in enumerate(text):
        if ch == "\r":
            chunks.append(text[start:i + 1])
            start = i + 1
    if start < len(text):
        chunks.append(text[start:])
    return chunks


class Typist:
    """Feeds ``--type`` chunks as the guest becomes ready for each."""

    def __init__(self, machine, text, after=None):
        self.machine = machine
        self.chunks = type_chunks(text) if text else []
        self.readiness = TypingReadiness(machine)
        self.after = after          # screen text that must appear first

    def frame(self):
        """Call once per emulated frame."""
        if self.after is not None:
            if not self.machine.screen_contains(self.after):
                return
            self.after = None
        ready = self.readiness.ready()
        if (self.chunks and ready
                and self.machine.keyboard.typing_pending() == 0):
            self.machine.type_text(self.chunks.pop(0))
            self.readiness.frames = 0


class TypingReadiness:
    """When ``--type`` may type (its next line).  Called once per emulated
    frame; depends on emulated state only.

    * The built-in BIOS handles the keyboard (INT 09h points into its ROM):
      once the guest has sat in the BIOS keyboard wait for a few frames
      (DOS kernels poll the keyboard while booting, and a key typed then
      would be eaten before the prompt).
    * Anything else -- a guest with its own keyboard driver (INT 09h points
      elsewhere, as in ELKS) or another BIOS, whose waits cannot be seen --
      once the text screen has not changed for a second of emulated time and
      the keyboard holds no byte the guest has not taken.

    Either way the keyboard's typist then hands over one byte at a time,
    each only after the guest has read and acknowledged the previous one."""

    def __init__(self, machine):
        self.machine = machine
        self.frames = 0
        self.last_screen = None

    def ready(self):
        m = self.machine
        if m.bios is not None and not guest_drives_keyboard(m):
            self.last_screen = None
            self.frames = self.frames + 1 if m.waiting_for_key() else 0
            return self.frames >= TYPE_AFTER_IDLE_FRAMES
        screen = m.screen_text()
        kb = m.keyboard
        still = screen == self.last_screen and not kb.pending() and not kb.full
        self.frames = self.frames + 1 if still else 0
        self.last_screen = screen
        return self.frames >= TYPE_AFTER_STILL_FRAMES


def guest_drives_keyboard(machine):
    """True when the INT 09h (IRQ 1) vector no longer points into the BIOS
    ROM (F0000h-FFFFFh): the guest reads the keyboard with its own driver."""
    offset = machine.memory.read_word(9 * 4)
    segment = machine.memory.read_word(9 * 4 + 2)
    return ((segment << 4) + offset) & 0xFFFFF < 0xF0000
