"""Conversions between JSON values and the generated models (hand-written;
the generated ``models.py`` describes each class's fields with the type
specs this module reads).

A type spec is ``"int"``, ``"str"``, ``"bool"``, ``"float"``, ``"null"``,
``"any"`` (passed through), ``"bytes"`` (base64 text on the wire),
``("list", spec)``, ``("map", spec)``, ``("optional", spec)``,
``("union", (spec, ...))`` or ``("model", "ClassName")``.
"""

import base64
import binascii

MODELS = {}                 # class name -> class (filled by models.py)


class _Unset:
    """The default of a parameter whose schema admits null: leave it out."""

    def __repr__(self):
        return "UNSET"


UNSET = _Unset()


class DecodeError(ValueError):
    """A reply does not have the shape its schema promises."""


class Model:
    """Base of the generated result models.  ``_pypc_fields`` is a tuple of
    ``(json_name, attribute, spec, required)``; ``_pypc_consts`` maps a
    JSON name to the constant it must hold (used to tell union variants
    apart)."""

    _pypc_fields = ()
    _pypc_consts = {}

    @classmethod
    def from_json(cls, obj):
        return decode(obj, ("model", cls.__name__))

    def to_json(self):
        out = {}
        for json_name, attr, spec, required in self._pypc_fields:
            value = getattr(self, attr)
            if value is None and not required:
                continue
            out[json_name] = encode(value, spec)
        return out

    @classmethod
    def _pypc_matches(cls, obj):
        if not isinstance(obj, dict):
            return False
        names = {f[0] for f in cls._pypc_fields}
        if any(k not in names for k in obj):
            return False
        if any(f[3] and f[0] not in obj for f in cls._pypc_fields):
            return False
        return all(obj.get(k) == v for k, v in cls._pypc_consts.items())


_PRIMITIVE = {"int": int, "str": str, "bool": bool, "float": (int, float)}
_EXACT = {"int": (int,), "str": (str,), "bool": (bool,), "float": (int, float)}


def _matches(obj, spec):
    if isinstance(spec, str):
        if spec in ("any",):
            return True
        if spec == "null":
            return obj is None
        if spec == "bytes":
            return isinstance(obj, str)
        if spec in ("int", "float") and isinstance(obj, bool):
            return False
        return isinstance(obj, _PRIMITIVE[spec])
    kind = spec[0]
    if kind == "list":
        return isinstance(obj, list)
    if kind == "map":
        return isinstance(obj, dict)
    if kind == "optional":
        return obj is None or _matches(obj, spec[1])
    if kind == "union":
        return any(_matches(obj, s) for s in spec[1])
    if kind == "model":
        return MODELS[spec[1]]._pypc_matches(obj)
    raise AssertionError(spec)


def _where(where):
    """The readable path of a value: ``where`` is a string or a
    ``(parent, key)`` pair, formatted only when an error needs it."""
    parts = []
    while isinstance(where, tuple):
        where, key = where
        parts.append(f"[{key}]" if isinstance(key, int) else f".{key}")
    return str(where) + "".join(reversed(parts))


def decode(obj, spec, where="result"):
    """``obj`` (parsed JSON) as the Python value ``spec`` describes."""
    if isinstance(spec, str):
        if spec == "any":
            return obj
        if spec == "bytes":
            if not isinstance(obj, str):
                raise DecodeError(f"{_where(where)}: expected base64 text, got "
                                  f"{type(obj).__name__}")
            try:
                return base64.b64decode(obj, validate=True)
            except (binascii.Error, ValueError) as exc:
                raise DecodeError(f"{_where(where)}: not base64: {exc}") from None
        if not _matches(obj, spec):
            raise DecodeError(f"{_where(where)}: expected {spec}, got {type(obj).__name__}")
        return obj
    kind = spec[0]
    if kind == "list":
        if not isinstance(obj, list):
            raise DecodeError(f"{_where(where)}: expected a list, got {type(obj).__name__}")
        inner = spec[1]
        return [decode(v, inner, (where, i)) for i, v in enumerate(obj)]
    if kind == "map":
        if not isinstance(obj, dict):
            raise DecodeError(f"{_where(where)}: expected an object, got "
                              f"{type(obj).__name__}")
        return {k: decode(v, spec[1], (where, k)) for k, v in obj.items()}
    if kind == "optional":
        return None if obj is None else decode(obj, spec[1], where)
    if kind == "union":
        for option in spec[1]:
            if _matches(obj, option):
                return decode(obj, option, where)
        raise DecodeError(f"{_where(where)}: matches none of its schema's alternatives")
    if kind == "model":
        cls = MODELS[spec[1]]
        if not isinstance(obj, dict):
            raise DecodeError(f"{_where(where)}: expected an object for {cls.__name__}, "
                              f"got {type(obj).__name__}")
        kwargs = {}
        for json_name, attr, fspec, required in cls._pypc_fields:
            if json_name in obj:
                value = obj[json_name]
                if _EXACT.get(fspec, ()) and type(value) in _EXACT[fspec]:
                    kwargs[attr] = value        # the common case, without a call
                else:
                    kwargs[attr] = decode(value, fspec, (where, json_name))
            elif required:
                raise DecodeError(f"{_where(where)}: {cls.__name__} needs {json_name!r}")
        return cls(**kwargs)
    raise AssertionError(spec)


def encode(value, spec="any"):
    """A Python value (models, bytes, lists, dicts, plain JSON) as JSON."""
    if spec == "bytes" or isinstance(value, (bytes, bytearray, memoryview)):
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise TypeError(f"expected bytes, not {type(value).__name__}")
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, Model):
        return value.to_json()
    if isinstance(value, dict):
        inner = spec[1] if isinstance(spec, tuple) and spec[0] == "map" else "any"
        return {k: encode(v, inner) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        inner = spec[1] if isinstance(spec, tuple) and spec[0] == "list" else "any"
        return [encode(v, inner) for v in value]
    return value
