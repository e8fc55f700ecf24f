"""Result pieces several method groups share."""

import base64
import binascii
import hashlib
import re

from .errors import invalid

_SHA256 = re.compile(r"^[0-9a-fA-F]{64}$")


def data_fields(data):
    """``byte_count``, ``data_base64``, ``data_hex`` and ``sha256`` of ``data``."""
    return {"byte_count": len(data),
            "data_base64": base64.b64encode(data).decode("ascii"),
            "data_hex": data.hex(),
            "sha256": hashlib.sha256(data).hexdigest()}


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def decode_base64(text, name="data_base64"):
    """Strict RFC 4648 base64 (no stray characters, correct padding)."""
    if not isinstance(text, str):
        raise invalid(f"{name} must be a base64 string", field=name)
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError) as exc:
        raise invalid(f"{name} is not valid base64: {exc}", field=name) from None


def check_sha256(text, name):
    if not isinstance(text, str) or not _SHA256.match(text):
        raise invalid(f"{name} must be 64 hexadecimal characters", field=name)
    return text.lower()
