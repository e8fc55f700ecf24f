"""RFB "VNC Authentication" (security type 2, RFC 6143 section 7.2.2): DES.

The server sends a random 16-byte challenge; the client encrypts it with DES
(ECB, two blocks) under a key made of the password's first 8 bytes (padded
with NULs), each byte with its bits in reverse order (the quirk every VNC
implementation shares); the server compares.

DES is written here from its standard (FIPS 46-3: the permutations, the
expansion, the eight S-boxes and the key schedule are its tables) rather
than taken from a library: the only well-kept Python implementation is
pyca/cryptography, which would be a large new dependency for 16 bytes per
connection and now keeps DES only in its "decrepit" module.  Speed does not
matter here; tests check it against the standard's published example and
against that library where it is installed.

DES is a weak cipher and VNC Authentication protects only against other
local users guessing their way in (the password never crosses the wire in
clear, the session after it is not encrypted): use it with the viewers on
127.0.0.1, as pypc does by default.
"""

import hmac
import secrets

IP = (58, 50, 42, 34, 26, 18, 10, 2, 60, 52, 44, 36, 28, 20, 12, 4,
      62, 54, 46, 38, 30, 22, 14, 6, 64, 56, 48, 40, 32, 24, 16, 8,
      57, 49, 41, 33, 25, 17, 9, 1, 59, 51, 43, 35, 27, 19, 11, 3,
      61, 53, 45, 37, 29, 21, 13, 5, 63, 55, 47, 39, 31, 23, 15, 7)
FP = tuple(IP.index(i) + 1 for i in range(1, 65))          # IP^-1
E = (32, 1, 2, 3, 4, 5, 4, 5, 6, 7, 8, 9, 8, 9, 10, 11, 12, 13, 12, 13, 14, 15, 16, 17,
     16, 17, 18, 19, 20, 21, 20, 21, 22, 23, 24, 25, 24, 25, 26, 27, 28, 29, 28, 29, 30, 31,
     32, 1)
P = (16, 7, 20, 21, 29, 12, 28, 17, 1, 15, 23, 26, 5, 18, 31, 10,
     2, 8, 24, 14, 32, 27, 3, 9, 19, 13, 30, 6, 22, 11, 4, 25)
PC1 = (57, 49, 41, 33, 25, 17, 9, 1, 58, 50, 42, 34, 26, 18,
       10, 2, 59, 51, 43, 35, 27, 19, 11, 3, 60, 52, 44, 36,
       63, 55, 47, 39, 31, 23, 15, 7, 62, 54, 46, 38, 30, 22,
       14, 6, 61, 53, 45, 37, 29, 21, 13, 5, 28, 20, 12, 4)
PC2 = (14, 17, 11, 24, 1, 5, 3, 28, 15, 6, 21, 10, 23, 19, 12, 4,
       26, 8, 16, 7, 27, 20, 13, 2, 41, 52, 31, 37, 47, 55, 30, 40,
       51, 45, 33, 48, 44, 49, 39, 56, 34, 53, 46, 42, 50, 36, 29, 32)
SHIFTS = (1, 1, 2, 2, 2, 2, 2, 2, 1, 2, 2, 2, 2, 2, 2, 1)
SBOXES = (
    (14, 4, 13, 1, 2, 15, 11, 8, 3, 10, 6, 12, 5, 9, 0, 7,
     0, 15, 7, 4, 14, 2, 13, 1, 10, 6, 12, 11, 9, 5, 3, 8,
     4, 1, 14, 8, 13, 6, 2, 11, 15, 12, 9, 7, 3, 10, 5, 0,
     15, 12, 8, 2, 4, 9, 1, 7, 5, 11, 3, 14, 10, 0, 6, 13),
    (15, 1, 8, 14, 6, 11, 3, 4, 9, 7, 2, 13, 12, 0, 5, 10,
     3, 13, 4, 7, 15, 2, 8, 14, 12, 0, 1, 10, 6, 9, 11, 5,
     0, 14, 7, 11, 10, 4, 13, 1, 5, 8, 12, 6, 9, 3, 2, 15,
     13, 8, 10, 1, 3, 15, 4, 2, 11, 6, 7, 12, 0, 5, 14, 9),
    (10, 0, 9, 14, 6, 3, 15, 5, 1, 13, 12, 7, 11, 4, 2, 8,
     13, 7, 0, 9, 3, 4, 6, 10, 2, 8, 5, 14, 12, 11, 15, 1,
     13, 6, 4, 9, 8, 15, 3, 0, 11, 1, 2, 12, 5, 10, 14, 7,
     1, 10, 13, 0, 6, 9, 8, 7, 4, 15, 14, 3, 11, 5, 2, 12),
    (7, 13, 14, 3, 0, 6, 9, 10, 1, 2, 8, 5, 11, 12, 4, 15,
     13, 8, 11, 5, 6, 15, 0, 3, 4, 7, 2, 12, 1, 10, 14, 9,
     10, 6, 9, 0, 12, 11, 7, 13, 15, 1, 3, 14, 5, 2, 8, 4,
     3, 15, 0, 6, 10, 1, 13, 8, 9, 4, 5, 11, 12, 7, 2, 14),
    (2, 12, 4, 1, 7, 10, 11, 6, 8, 5, 3, 15, 13, 0, 14, 9,
     14, 11, 2, 12, 4, 7, 13, 1, 5, 0, 15, 10, 3, 9, 8, 6,
     4, 2, 1, 11, 10, 13, 7, 8, 15, 9, 12, 5, 6, 3, 0, 14,
     11, 8, 12, 7, 1, 14, 2, 13, 6, 15, 0, 9, 10, 4, 5, 3),
    (12, 1, 10, 15, 9, 2, 6, 8, 0, 13, 3, 4, 14, 7, 5, 11,
     10, 15, 4, 2, 7, 12, 9, 5, 6, 1, 13, 14, 0, 11, 3, 8,
     9, 14, 15, 5, 2, 8, 12, 3, 7, 0, 4, 10, 1, 13, 11, 6,
     4, 3, 2, 12, 9, 5, 15, 10, 11, 14, 1, 7, 6, 0, 8, 13),
    (4, 11, 2, 14, 15, 0, 8, 13, 3, 12, 9, 7, 5, 10, 6, 1,
     13, 0, 11, 7, 4, 9, 1, 10, 14, 3, 5, 12, 2, 15, 8, 6,
     1, 4, 11, 13, 12, 3, 7, 14, 10, 15, 6, 8, 0, 5, 9, 2,
     6, 11, 13, 8, 1, 4, 10, 7, 9, 5, 0, 15, 14, 2, 3, 12),
    (13, 2, 8, 4, 6, 15, 11, 1, 10, 9, 3, 14, 5, 0, 12, 7,
     1, 15, 13, 8, 10, 3, 7, 4, 12, 5, 6, 11, 0, 14, 9, 2,
     7, 11, 4, 1, 9, 12, 14, 2, 0, 6, 10, 13, 15, 3, 5, 8,
     2, 1, 14, 7, 4, 10, 8, 13, 15, 12, 9, 0, 3, 5, 6, 11),
)
MASK28 = (1 << 28) - 1
CHALLENGE_SIZE = 16
MAX_PASSWORD = 8                 # VNC Authentication uses 8 bytes of the password


def _permute(value, table, width):
    """The bits of ``value`` (``width`` bits, bit 1 the most significant, as
    the standard numbers them) picked in the order ``table`` names them."""
    out = 0
    for pos in table:
        out = (out << 1) | ((value >> (width - pos)) & 1)
    return out


def _subkeys(key):
    cd = _permute(int.from_bytes(key, "big"), PC1, 64)
    c, d = cd >> 28, cd & MASK28
    keys = []
    for s in SHIFTS:
        c = ((c << s) | (c >> (28 - s))) & MASK28
        d = ((d << s) | (d >> (28 - s))) & MASK28
        keys.append(_permute((c << 28) | d, PC2, 56))
    return keys


def _f(r, k):
    x = _permute(r, E, 32) ^ k
    out = 0
    for i, box in enumerate(SBOXES):
        six = (x >> (42 - 6 * i)) & 0x3F
        row = ((six >> 4) & 2) | (six & 1)
        out = (out << 4) | box[row * 16 + ((six >> 1) & 0xF)]
    return _permute(out, P, 32)


def des_encrypt_block(key, block):
    """DES-encrypt one 8-byte ``block`` under the 8-byte ``key`` (parity
    bits ignored, as the standard says)."""
    if len(key) != 8 or len(block) != 8:
        raise ValueError("DES takes an 8-byte key and 8-byte blocks")
    x = _permute(int.from_bytes(block, "big"), IP, 64)
    left, right = x >> 32, x & 0xFFFFFFFF
    for k in _subkeys(key):
        left, right = right, left ^ _f(right, k)
    return _permute((right << 32) | left, FP, 64).to_bytes(8, "big")


def _reverse_bits(byte):
    return int(f"{byte:08b}"[::-1], 2)


def vnc_key(password):
    """The DES key VNC makes of ``password`` (bytes): 8 bytes, NUL-padded,
    each byte bit-reversed."""
    raw = bytes(password[:MAX_PASSWORD]).ljust(MAX_PASSWORD, b"\0")
    return bytes(_reverse_bits(b) for b in raw)


def vnc_response(password, challenge):
    """What a client answers to ``challenge`` (16 bytes) with ``password``."""
    key = vnc_key(password)
    return des_encrypt_block(key, challenge[:8]) + des_encrypt_block(key, challenge[8:16])


def new_challenge():
    return secrets.token_bytes(CHALLENGE_SIZE)


def check_response(password, challenge, response):
    return hmac.compare_digest(vnc_response(password, challenge), bytes(response))
