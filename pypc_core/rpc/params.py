"""Parsing the contract's parameter forms, after the schema has checked
their shape: numbers (a JSON integer or a string for ``int(s, 0)``) and
address objects.  Every function raises :class:`RpcError` (-32602,
``INVALID_PARAMS`` unless said otherwise) and has no side effects."""

from .errors import invalid, limit

MEMORY_SIZE = 1 << 20


def number(value, name, lo=0, hi=0xFFFF):
    """An integer in ``lo..hi`` from a JSON integer or a numeric string
    (``"123"``, ``"0x7B"``, ``"0b1111011"``); booleans and floats are refused."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise invalid(f"{name} must be an integer or a numeric string, not "
                      f"{_json_type(value)}", field=name)
    if isinstance(value, str):
        try:
            parsed = int(value.strip(), 0)
        except ValueError:
            raise invalid(f"{name}: {value!r} is not a number (decimal, 0x.., 0o.. or 0b..)",
                          field=name) from None
    else:
        parsed = value
    if not lo <= parsed <= hi:
        raise invalid(f"{name} must be {_fmt(lo)}..{_fmt(hi)}, not {_fmt(parsed)}",
                      field=name)
    return parsed


def optional_number(params, key, default, lo=0, hi=0xFFFF, name=None):
    if key not in params:
        return default
    return number(params[key], name or key, lo, hi)


def address(value, name="address"):
    """``(physical, description)`` of an address given as an integer, a
    numeric string or an address object ``{space, offset[, segment]}``.
    Physical and linear addresses are 0..FFFFFh; a segmented one is
    ``(segment * 16 + offset) & FFFFFh``."""
    if isinstance(value, dict):
        space = value.get("space", "physical")
        if space not in ("physical", "linear", "segmented"):
            raise invalid(f"{name}.space must be physical, linear or segmented, "
                          f"not {space!r}", field=f"{name}.space")
        if "offset" not in value:
            raise invalid(f"{name}.offset is required", field=f"{name}.offset")
        if space == "segmented":
            if "segment" not in value:
                raise invalid(f"{name}.segment is required for a segmented address",
                              field=f"{name}.segment")
            seg = number(value["segment"], f"{name}.segment", 0, 0xFFFF)
            off = number(value["offset"], f"{name}.offset", 0, 0xFFFF)
            return ((seg << 4) + off) & (MEMORY_SIZE - 1), {
                "space": "segmented", "segment": seg, "offset": off}
        if "segment" in value:
            raise invalid(f"{name}.segment is only for segmented addresses",
                          field=f"{name}.segment")
        off = number(value["offset"], f"{name}.offset", 0, MEMORY_SIZE - 1)
        return off, {"space": space, "offset": off}
    phys = number(value, name, 0, MEMORY_SIZE - 1)
    return phys, {"space": "physical", "offset": phys}


def block(start, length, name="address"):
    """Refuse a block that leaves the 1 MiB address space."""
    if start + length > MEMORY_SIZE:
        raise invalid(f"{name} {start:#07x} + {length} bytes runs past the 1 MiB "
                      f"address space (ends at {start + length:#x})", field=name)


def prefixed_cursor(cursor, prefix):
    """N from a cursor string ``<prefix>N`` (N a number as for ``number``)."""
    if not isinstance(cursor, str) or not cursor.startswith(prefix):
        raise invalid(f"cursor must be null or {prefix}N", field="cursor")
    return number(cursor[len(prefix):], "cursor", 0, 1 << 62)


def ring_cursor(cursor, prefix, first_available, next_sequence, lost="dropped"):
    """The sequence number a read of a ring of numbered events continues
    after: ``first_available - 1`` for a null cursor, else N of the cursor
    ``<prefix>N``.  A cursor past the last event (``next_sequence - 1``) is
    invalid; one before the retained events is ``CURSOR_EXPIRED`` (the
    events before ``first_available`` were ``lost``)."""
    if cursor is None:
        return first_available - 1
    after = prefixed_cursor(cursor, prefix)
    if after >= next_sequence:
        raise invalid(f"cursor {cursor} is beyond the last event "
                      f"({prefix}{next_sequence - 1})", field="cursor")
    if after < first_available - 1:
        raise invalid(f"cursor {cursor} has expired: events before "
                      f"{first_available} were {lost}", "CURSOR_EXPIRED",
                      first_available_sequence=first_available)
    return after


def length(value, name, hi, lo=1):
    """A count that must be ``lo..hi``; over ``hi`` is LIMIT_EXCEEDED."""
    n = number(value, name, 0, 1 << 64)
    if n < lo:
        raise invalid(f"{name} must be at least {lo}, not {n}", field=name)
    if n > hi:
        raise limit(f"{name} {n} is over the limit of {hi}", field=name, limit=hi)
    return n


def boolean(value, name):
    if not isinstance(value, bool):
        raise invalid(f"{name} must be true or false, not {_json_type(value)}", field=name)
    return value


def _fmt(n):
    return f"{n:#x}" if abs(n) > 9 else str(n)


def _json_type(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, float):
        return "a fractional number"
    if isinstance(value, (list, tuple)):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def resolve_block(value, length, name="address"):
    """The linear start of ``length`` bytes at address object ``value``,
    checked to lie inside the 1 MiB space."""
    start, _ = address(value, name)
    block(start, length, name)
    return start
