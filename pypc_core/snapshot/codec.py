"""State trees to JSON plus binary payloads, and back.

``Machine.get_state()`` is a tree of dicts, lists, numbers, strings, numpy
arrays and a few other Python containers.  :func:`encode` turns it into a
JSON-compatible tree in which every bulky or non-JSON value is a one-key
*tag* object, and the bytes of arrays, byte strings and long strings go to
content-addressed payloads (``{sha256: bytes}``):

==========================  ==============================================
``{"$a": {dtype, shape, sha256, size}}``  a numpy array (C order)
``{"$b": {sha256, size}}``                ``bytes``
``{"$ba": {sha256, size}}``               ``bytearray``
``{"$s": {sha256, size}}``                a ``str`` over 64 KiB (UTF-8)
``{"$t": [...]}``                         a tuple
``{"$dq": [...]}``                        a ``collections.deque``
``{"$set": [...]}``                       a set (sorted when it can be)
``{"$map": [[key, value], ...]}``         a dict whose keys are not all
                                          plain strings (or start with ``$``)
==========================  ==============================================

A plain dict is a JSON object; numpy scalars become Python numbers.  Any
other type is an :class:`EncodeError` naming its path (a device whose state
cannot be saved is reported, never silently dropped).  :func:`decode` is the
exact inverse and checks every tag, dtype, shape and payload length; it
never evaluates anything from the bundle.
"""

import collections
import hashlib
import math

import numpy as np

LONG_STRING = 64 * 1024
#: dtypes an array payload may have (anything else in a bundle is refused)
DTYPES = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
          "uint64", "float32", "float64")
MAX_DEPTH = 64
TAGS = ("$a", "$b", "$ba", "$s", "$t", "$dq", "$set", "$map")


class EncodeError(ValueError):
    """A state value that has no bundle form."""


class DecodeError(ValueError):
    """A bundle's state tree is malformed (``path`` says where)."""

    def __init__(self, message, path=""):
        super().__init__(f"{path or 'state'}: {message}")
        self.path = path


def sha256(data):
    return hashlib.sha256(data).hexdigest()


class Encoder:
    def __init__(self):
        self.payloads = {}          # sha256 -> bytes

    def _payload(self, data):
        data = bytes(data)
        digest = sha256(data)
        self.payloads[digest] = data
        return {"sha256": digest, "size": len(data)}

    def encode(self, value, path="state", depth=0):
        if depth > MAX_DEPTH:
            raise EncodeError(f"{path}: nested deeper than {MAX_DEPTH} levels")
        if value is None or isinstance(value, (bool, str)):
            if isinstance(value, str) and len(value) > LONG_STRING:
                return {"$s": self._payload(value.encode("utf-8"))}
            return value
        if isinstance(value, int):
            return int(value)
        if isinstance(value, float):
            if not math.isfinite(value):
                raise EncodeError(f"{path}: {value!r} has no JSON form")
            return value
        if isinstance(value, np.ndarray):
            if value.dtype.name not in DTYPES:
                raise EncodeError(f"{path}: arrays of {value.dtype} cannot be saved")
            ref = self._payload(np.ascontiguousarray(value).tobytes())
            ref.update(dtype=value.dtype.name, shape=list(value.shape))
            return {"$a": ref}
        if isinstance(value, np.generic):
            return self.encode(value.item(), path, depth)
        if isinstance(value, bytes):
            return {"$b": self._payload(value)}
        if isinstance(value, bytearray):
            return {"$ba": self._payload(value)}
        if isinstance(value, list):
            return [self.encode(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(value)]
        if isinstance(value, tuple):
            return {"$t": [self.encode(v, f"{path}[{i}]", depth + 1)
                           for i, v in enumerate(value)]}
        if isinstance(value, collections.deque):
            return {"$dq": [self.encode(v, f"{path}[{i}]", depth + 1)
                            for i, v in enumerate(value)]}
        if isinstance(value, (set, frozenset)):
            items = list(value)
            try:
                items.sort()
            except TypeError:
                pass
            return {"$set": [self.encode(v, f"{path}{{}}", depth + 1) for v in items]}
        if isinstance(value, dict):
            if all(isinstance(k, str) and not k.startswith("$") for k in value):
                return {k: self.encode(v, f"{path}.{k}", depth + 1) for k, v in value.items()}
            return {"$map": [[self.encode(k, f"{path}<key>", depth + 1),
                              self.encode(v, f"{path}[{k!r}]", depth + 1)]
                             for k, v in value.items()]}
        raise EncodeError(f"{path}: a {type(value).__name__} cannot be saved in a snapshot")


def encode(state):
    """``(tree, payloads)`` of a state tree."""
    enc = Encoder()
    return enc.encode(state), enc.payloads


def _ref(node, path, need_shape=False):
    if not isinstance(node, dict):
        raise DecodeError("a payload reference must be an object", path)
    keys = {"sha256", "size"} | ({"dtype", "shape"} if need_shape else set())
    if set(node) != keys:
        raise DecodeError(f"a payload reference has the keys {sorted(keys)}, "
                          f"not {sorted(node)}", path)
    digest, size = node["sha256"], node["size"]
    if not (isinstance(digest, str) and len(digest) == 64
            and all(c in "0123456789abcdef" for c in digest)):
        raise DecodeError("sha256 must be 64 lower-case hexadecimal characters", path)
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise DecodeError("size must be a non-negative integer", path)
    return digest, size


class Decoder:
    """Decodes a tree against ``payloads`` (``sha256 -> bytes``, already
    hash-checked by the reader); ``used`` collects the digests it took."""

    def __init__(self, payloads):
        self.payloads = payloads
        self.used = set()

    def _bytes(self, node, path, need_shape=False):
        digest, size = _ref(node, path, need_shape)
        data = self.payloads.get(digest)
        if data is None:
            raise DecodeError(f"payload {digest} is not in the bundle", path)
        if len(data) != size:
            raise DecodeError(f"payload {digest} is {len(data)} bytes, not {size}", path)
        self.used.add(digest)
        return data

    def decode(self, node, path="state", depth=0):
        if depth > MAX_DEPTH:
            raise DecodeError(f"nested deeper than {MAX_DEPTH} levels", path)
        if node is None or isinstance(node, (bool, int, str)):
            return node
        if isinstance(node, float):
            if not math.isfinite(node):
                raise DecodeError("numbers must be finite", path)
            return node
        if isinstance(node, list):
            return [self.decode(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(node)]
        if not isinstance(node, dict):
            raise DecodeError(f"unexpected {type(node).__name__}", path)
        if len(node) == 1:
            (tag, body), = node.items()
            if tag.startswith("$"):
                return self._tagged(tag, body, path, depth)
        for key in node:
            if key.startswith("$"):
                raise DecodeError(f"key {key!r} is reserved for tags", path)
        return {k: self.decode(v, f"{path}.{k}", depth + 1) for k, v in node.items()}

    def _list(self, body, path, depth):
        if not isinstance(body, list):
            raise DecodeError("a tagged sequence must hold an array", path)
        return [self.decode(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(body)]

    def _tagged(self, tag, body, path, depth):
        if tag == "$a":
            data = self._bytes(body, path, need_shape=True)
            dtype, shape = body["dtype"], body["shape"]
            if dtype not in DTYPES:
                raise DecodeError(f"array dtype {dtype!r} is not one of {', '.join(DTYPES)}",
                                  path)
            if (not isinstance(shape, list) or len(shape) > 4
                    or any(isinstance(n, bool) or not isinstance(n, int) or n < 0
                           for n in shape)):
                raise DecodeError("array shape must be a list of at most 4 sizes", path)
            dt = np.dtype(dtype)
            if math.prod(shape) * dt.itemsize != len(data):
                raise DecodeError(f"array of {dtype}{shape} needs "
                                  f"{math.prod(shape) * dt.itemsize} bytes, the payload "
                                  f"has {len(data)}", path)
            return np.frombuffer(data, dtype=dt).reshape(shape).copy()
        if tag == "$b":
            return bytes(self._bytes(body, path))
        if tag == "$ba":
            return bytearray(self._bytes(body, path))
        if tag == "$s":
            try:
                return self._bytes(body, path).decode("utf-8")
            except UnicodeDecodeError:
                raise DecodeError("a long string payload is not UTF-8", path) from None
        if tag == "$t":
            return tuple(self._list(body, path, depth))
        if tag == "$dq":
            return collections.deque(self._list(body, path, depth))
        if tag == "$set":
            items = self._list(body, path, depth)
            try:
                return set(items)
            except TypeError:
                raise DecodeError("a set holds unhashable values", path) from None
        if tag == "$map":
            if not isinstance(body, list):
                raise DecodeError("a $map must hold an array of [key, value] pairs", path)
            out = {}
            for i, pair in enumerate(body):
                if not isinstance(pair, list) or len(pair) != 2:
                    raise DecodeError("a $map entry must be a [key, value] pair",
                                      f"{path}[{i}]")
                key = self.decode(pair[0], f"{path}[{i}]<key>", depth + 1)
                try:
                    hash(key)
                except TypeError:
                    raise DecodeError("a $map key must be hashable", f"{path}[{i}]") from None
                if key in out:
                    raise DecodeError(f"duplicate key {key!r}", path)
                out[key] = self.decode(pair[1], f"{path}[{key!r}]", depth + 1)
            return out
        raise DecodeError(f"unknown tag {tag!r} (known: {', '.join(TAGS)})", path)


def decode(tree, payloads):
    """The state tree of ``tree``; raises :class:`DecodeError`."""
    return Decoder(payloads).decode(tree)
