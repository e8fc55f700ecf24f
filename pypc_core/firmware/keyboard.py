"""INT 09h (keyboard IRQ) and INT 16h (keyboard services) for the US layout.

INT 09h reads the scan code from port 60h, acknowledges it by pulsing port
61h bit 7 (the XT's "clear keyboard"), translates it with the shift state at
0040:0017/0018 and stores ``scan << 8 | ascii`` words in the ring buffer at
0040:001E (head 001Ah, tail 001Ch; the bounds at 0040:0080/0082 are honoured
when they are sane).  The ROM stub sends the EOI.

Translation follows the IBM PC/XT BIOS conventions (83-key keyboard):
letters with Shift xor Caps Lock; Ctrl-letters give 01h-1Ah; Alt-letters and
Alt-digits give 00h + an extended code; F1-F10 with Shift/Ctrl/Alt give
54h-5Dh / 5Eh-67h / 68h-71h; the keypad gives digits when Num Lock xor Shift,
cursor codes otherwise; Alt + keypad digits enters a character code, stored
when Alt is released.  Special keys: Ctrl-Break (Ctrl + Scroll Lock) flushes
the buffer, sets 0040:0071 bit 7, calls INT 1Bh and stores 0000h;
Ctrl-Num Lock pauses until the next key; Shift-PrtSc calls INT 05h;
Ctrl-Alt-Del sets 0040:0072 = 1234h and jumps to the POST.  A full buffer
drops the key (no beep: the speaker cannot sound in zero emulated time).

Codes from enhanced keyboards are accepted too: E0h-prefixed gray keys act
as their keypad twins in cursor mode, E0 2Ah/36h (fake shifts) are ignored,
right Ctrl/Alt act as Ctrl/Alt, E0 37h is Print Screen, E0 46h is
Ctrl-Break, E1 1D 45 is Pause; keys the XT does not have (F11, F12, ...)
are ignored, as the XT BIOS does.
"""

from .memio import (
    Service,
    BDA, BDA_BREAK_FLAG, BDA_KB_ALT_INPUT, BDA_KB_BUF_END, BDA_KB_BUF_START,
    BDA_KB_BUFFER, BDA_KB_BUFFER_END, BDA_KB_FLAGS, BDA_KB_FLAGS1, BDA_KB_FLAGS3,
    BDA_KB_HEAD, BDA_KB_TAIL, BDA_RESET_FLAG,
)

# shift flags (0040:0017)
KF_RSHIFT = 0x01
KF_LSHIFT = 0x02
KF_CTRL = 0x04
KF_ALT = 0x08
KF_SCROLL = 0x10
KF_NUM = 0x20
KF_CAPS = 0x40
KF_INSERT = 0x80
# key-down flags (0040:0018)
KF1_HOLD = 0x08
KF1_SCROLL_DOWN = 0x10
KF1_NUM_DOWN = 0x20
KF1_CAPS_DOWN = 0x40
KF1_INSERT_DOWN = 0x80
# 0040:0096
KF3_E0 = 0x02

MODIFIERS = {0x36: KF_RSHIFT, 0x2A: KF_LSHIFT, 0x1D: KF_CTRL, 0x38: KF_ALT}
TOGGLES = {0x3A: (KF_CAPS, KF1_CAPS_DOWN), 0x45: (KF_NUM, KF1_NUM_DOWN),
           0x46: (KF_SCROLL, KF1_SCROLL_DOWN)}

# scan code -> (ascii, ascii with Shift) for the main block (US layout)
MAIN = {}


def _row(first_scan, normal, shifted):
    for i, (n, s) in enumerate(zip(normal, shifted)):
        MAIN[first_scan + i] = (ord(n), ord(s))


_row(0x02, "1234567890-=", "!@#$%^&*()_+")
_row(0x10, "qwertyuiop[]", "QWERTYUIOP{}")
_row(0x1E, "asdfghjkl;'`", "ASDFGHJKL:\"~")
_row(0x2B, "\\zxcvbnm,./", "|ZXCVBNM<>?")
MAIN.update({
    0x01: (0x1B, 0x1B),      # Esc
    0x0E: (0x08, 0x08),      # Backspace
    0x0F: (0x09, 0x00),      # Tab, Shift-Tab = 0F00h
    0x1C: (0x0D, 0x0D),      # Enter
    0x37: (0x2A, 0x2A),      # keypad * (Shift: PrtSc, handled apart)
    0x39: (0x20, 0x20),      # space
    0x4A: (0x2D, 0x2D),      # keypad -
    0x4E: (0x2B, 0x2B),      # keypad +
})
LETTERS = {scan for scan, (n, _s) in MAIN.items() if ord("a") <= n <= ord("z")}

KEYPAD_DIGITS = {0x47: "7", 0x48: "8", 0x49: "9", 0x4B: "4", 0x4C: "5", 0x4D: "6",
                 0x4F: "1", 0x50: "2", 0x51: "3", 0x52: "0", 0x53: "."}
ALT_KEYPAD = {scan: int(d) for scan, d in KEYPAD_DIGITS.items() if d != "."}
FKEYS = range(0x3B, 0x45)

CTRL_CODES = {scan: (scan << 8) | (n - 0x60) for scan, (n, _s) in MAIN.items() if scan in LETTERS}
CTRL_CODES.update({
    0x01: 0x011B, 0x03: 0x0300, 0x07: 0x071E, 0x0C: 0x0C1F, 0x0E: 0x0E7F,
    0x1A: 0x1A1B, 0x1B: 0x1B1D, 0x1C: 0x1C0A, 0x2B: 0x2B1C, 0x39: 0x3920,
    0x37: 0x7200,                                  # Ctrl-PrtSc
    0x47: 0x7700, 0x49: 0x8400, 0x4B: 0x7300, 0x4D: 0x7400, 0x4F: 0x7500,
    0x51: 0x7600,
})
CTRL_CODES.update({scan: (0x5E + scan - 0x3B) << 8 for scan in FKEYS})

ALT_CODES = {scan: scan << 8 for scan in LETTERS}
ALT_CODES.update({scan: (0x76 + scan) << 8 for scan in range(0x02, 0x0E)})  # 1..0 - =
ALT_CODES.update({scan: (0x68 + scan - 0x3B) << 8 for scan in FKEYS})
ALT_CODES[0x39] = 0x3920

# exits of the INT 09h stub (labels in the ROM)
DONE = "kb_done"
BREAK = "kb_break"
PRTSC = "kb_prtsc"
PAUSE = "kb_pause"
REBOOT = "kb_reboot"


class KeyboardService(Service):
    def __init__(self, bios):
        super().__init__(bios)
        self.e1_pending = 0          # codes still to swallow after E1h
        self.waiting = False         # the guest waits for a key (INT 16h, see int16)
        self.empty_polls = 0         # INT 16h AH=00h/01h calls that found no key

    # -- the ring buffer ------------------------------------------------------------
    def _bounds(self):
        start = self.mem.rw(BDA_KB_BUF_START)
        end = self.mem.rw(BDA_KB_BUF_END)
        if not (0 < start < end <= 0x10000 - BDA and (end - start) % 2 == 0
                and end - start >= 4 and start % 2 == 0):
            return BDA_KB_BUFFER - BDA, BDA_KB_BUFFER_END - BDA
        return start, end

    def push(self, word):
        """Store a key word; False (key dropped) if the buffer is full."""
        start, end = self._bounds()
        tail = self.mem.rw(BDA_KB_TAIL)
        nxt = tail + 2
        if nxt >= end:
            nxt = start
        if nxt == self.mem.rw(BDA_KB_HEAD):
            return False
        self.mem.ww(BDA + tail, word)
        self.mem.ww(BDA_KB_TAIL, nxt)
        return True

    def peek(self):
        head = self.mem.rw(BDA_KB_HEAD)
        if head == self.mem.rw(BDA_KB_TAIL):
            return None
        return self.mem.rw(BDA + head)

    def pop(self):
        word = self.peek()
        if word is None:
            return None
        start, end = self._bounds()
        head = self.mem.rw(BDA_KB_HEAD) + 2
        if head >= end:
            head = start
        self.mem.ww(BDA_KB_HEAD, head)
        return word

    def flush(self):
        start, _end = self._bounds()
        self.mem.ww(BDA_KB_HEAD, start)
        self.mem.ww(BDA_KB_TAIL, start)

    # -- INT 09h ----------------------------------------------------------------------
    def irq(self):
        """Read, acknowledge and translate one scan code; returns the stub exit."""
        ports = self.bios.machine.ports
        code = ports.read(0x60)
        pb = ports.read(0x61)
        ports.write(0x61, pb | 0x80)
        ports.write(0x61, pb)
        return self.process(code)

    def process(self, code):
        mem = self.mem
        if self.e1_pending:
            self.e1_pending -= 1
            if self.e1_pending == 0 and code == 0x45:
                return self._pause()
            return DONE
        if code == 0xE1:
            self.e1_pending = 2
            return DONE
        if code == 0xE0:
            mem.wb(BDA_KB_FLAGS3, mem.rb(BDA_KB_FLAGS3) | KF3_E0)
            return DONE
        if code in (0x00, 0xFF):            # keyboard error / overrun
            return DONE
        flags3 = mem.rb(BDA_KB_FLAGS3)
        ext = bool(flags3 & KF3_E0)
        if ext:
            mem.wb(BDA_KB_FLAGS3, flags3 & ~KF3_E0)
        make = not code & 0x80
        key = code & 0x7F
        flags = mem.rb(BDA_KB_FLAGS)
        flags1 = mem.rb(BDA_KB_FLAGS1)

        if ext and key in (0x2A, 0x36):      # fake shifts around gray keys
            return DONE

        bit = MODIFIERS.get(key)
        if bit is not None:
            if make:
                if bit == KF_ALT and not flags & KF_ALT:
                    mem.wb(BDA_KB_ALT_INPUT, 0)
                flags |= bit
            else:
                flags &= ~bit
                if bit == KF_ALT:
                    value = mem.rb(BDA_KB_ALT_INPUT)
                    mem.wb(BDA_KB_ALT_INPUT, 0)
                    if value:
                        self.push(value)
            mem.wb(BDA_KB_FLAGS, flags)
            return DONE

        if ext and key == 0x46:              # Ctrl-Break key of enhanced keyboards
            return self._break() if make else DONE
        if ext and key == 0x37:              # Print Screen key of enhanced keyboards
            return PRTSC if make else DONE

        if not make:
            if key in TOGGLES:
                mem.wb(BDA_KB_FLAGS1, flags1 & ~TOGGLES[key][1])
            elif key == 0x52:
                mem.wb(BDA_KB_FLAGS1, flags1 & ~KF1_INSERT_DOWN)
            return DONE

        if flags1 & KF1_HOLD:                # any key ends the pause and is dropped
            if key == 0x45 and flags & KF_CTRL:
                return DONE
            mem.wb(BDA_KB_FLAGS1, flags1 & ~KF1_HOLD)
            return DONE

        if key in TOGGLES and not ext:
            if flags & KF_CTRL and key == 0x45:
                return self._pause()
            if flags & KF_CTRL and key == 0x46:
                return self._break()
            tbit, down = TOGGLES[key]
            if flags1 & down:                # typematic repeat: no toggle
                return DONE
            mem.wb(BDA_KB_FLAGS1, flags1 | down)
            mem.wb(BDA_KB_FLAGS, flags ^ tbit)
            return DONE

        shift = bool(flags & (KF_LSHIFT | KF_RSHIFT))

        if flags & KF_ALT:
            if flags & KF_CTRL and key == 0x53:
                mem.ww(BDA_RESET_FLAG, 0x1234)
                return REBOOT
            if key in ALT_KEYPAD and not ext:
                mem.wb(BDA_KB_ALT_INPUT, (mem.rb(BDA_KB_ALT_INPUT) * 10 + ALT_KEYPAD[key]) & 0xFF)
                return DONE
            word = None if ext else ALT_CODES.get(key)
            if word is not None:
                self.push(word)
            return DONE

        if flags & KF_CTRL:
            if ext and key not in (0x1C, 0x47, 0x49, 0x4B, 0x4D, 0x4F, 0x51):
                return DONE
            word = CTRL_CODES.get(key)
            if word is not None:
                self.push(word)
            return DONE

        if key in KEYPAD_DIGITS:
            numeric = not ext and (bool(flags & KF_NUM) != shift)
            if numeric:
                self.push((key << 8) | ord(KEYPAD_DIGITS[key]))
            elif key == 0x52:                # Insert toggles the insert state
                if not flags1 & KF1_INSERT_DOWN:
                    mem.wb(BDA_KB_FLAGS1, flags1 | KF1_INSERT_DOWN)
                    mem.wb(BDA_KB_FLAGS, flags ^ KF_INSERT)
                    self.push(0x5200)
            elif key != 0x4C:
                self.push(key << 8)
            return DONE

        if key == 0x37 and shift and not ext:
            return PRTSC

        if key in FKEYS:
            self.push(((0x54 + key - 0x3B) if shift else key) << 8)
            return DONE

        pair = MAIN.get(key)
        if pair is None:
            return DONE                      # keys an XT does not have
        if ext and key == 0x35:              # keypad /
            ascii_ = ord("/")
        elif ext and key == 0x1C:            # keypad Enter
            ascii_ = 0x0D
        elif key in LETTERS:
            ascii_ = pair[1] if shift != bool(flags & KF_CAPS) else pair[0]
        else:
            ascii_ = pair[1] if shift else pair[0]
        self.push((key << 8) | ascii_)
        return DONE

    def _pause(self):
        mem = self.mem
        mem.wb(BDA_KB_FLAGS1, mem.rb(BDA_KB_FLAGS1) | KF1_HOLD)
        return PAUSE

    def _break(self):
        self.flush()
        self.mem.wb(BDA_BREAK_FLAG, 0x80)
        return BREAK

    def break_done(self):
        """After INT 1Bh: store the 0000h that tells DOS about the break."""
        self.push(0x0000)

    def paused(self):
        return bool(self.mem.rb(BDA_KB_FLAGS1) & KF1_HOLD)

    # -- INT 16h ------------------------------------------------------------------------
    def int16(self, r):
        """Returns True when AH=00h must wait for a key.

        ``waiting`` becomes True when AH=00h waits or AH=01h polls an empty
        buffer (DOS shells poll), False when AH=00h returns a key."""
        ah = r.ah
        if ah == 0x00:
            word = self.pop()
            if word is None:
                self.waiting = True
                self.empty_polls += 1
                return True
            self.waiting = False
            r.ax = word
        elif ah == 0x01:
            word = self.peek()
            if word is None:
                self.waiting = True
                self.empty_polls += 1
                r.zf = True
            else:
                r.zf = False
                r.ax = word
        elif ah == 0x02:
            r.al = self.mem.rb(BDA_KB_FLAGS)
        # AH=03h and up (AT and enhanced functions) do not exist on an XT
        return False

    def get_state(self):
        return {"e1_pending": self.e1_pending, "waiting": self.waiting,
                "empty_polls": self.empty_polls}

    def set_state(self, state):
        self.e1_pending = int(state.get("e1_pending", 0))
        self.waiting = bool(state.get("waiting", False))
        self.empty_polls = int(state.get("empty_polls", 0))
