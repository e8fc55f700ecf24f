"""Hypothesis strategies generated from ``schemas/``: params that follow a
method's schema, and params bent out of it (wrong types, out-of-range and
malformed numbers, unknown keys, missing keys), plus broken framing.  Used by
tests/test_rpc_fuzz.py and benchmarks/fuzz_rpc_long.py."""

import json

from hypothesis import strategies as st

from pypc_core.rpc import schemas as rpc_schemas

NUMBER_TEXT = st.one_of(
    st.integers(-5, 0x1_0000_0000).map(str),
    st.integers(0, 0x20_0000).map(hex),
    st.integers(0, 0xFFFF).map(bin),
    st.sampled_from(["", " ", "0x", "12ab", "0x-1", "1e3", "١٢", "0o777", "1_000", "-0x10",
                     "99999999999999999999999999"]),
)
NUMBER = st.one_of(st.integers(-3, 70000), st.integers(-(2 ** 70), 2 ** 70), NUMBER_TEXT)
JUNK = st.one_of(st.none(), st.booleans(), st.floats(allow_nan=False, allow_infinity=False),
                 st.text(max_size=8), st.lists(st.integers(), max_size=3),
                 st.dictionaries(st.text(max_size=4), st.integers(), max_size=2))


class SchemaStrategies:
    def __init__(self):
        self.docs = rpc_schemas.load_method_schemas()
        self.defs = rpc_schemas.load_defs()["$defs"]

    def _resolve(self, schema):
        while "$ref" in schema:
            schema = self.defs[schema["$ref"].rsplit("/", 1)[-1]]
        return schema

    def value(self, schema, depth=0):
        """Values shaped by ``schema`` (with some junk mixed in)."""
        schema = self._resolve(schema)
        if depth > 6:
            return JUNK
        if "const" in schema:
            return st.just(schema["const"])
        if "enum" in schema:
            return st.sampled_from(schema["enum"])
        if "anyOf" in schema:
            return st.one_of([self.value(s, depth + 1) for s in schema["anyOf"]])
        t = schema.get("type")
        if isinstance(t, list):
            if set(t) == {"integer", "string"}:
                return NUMBER
            return st.one_of([self.value(dict(schema, type=x), depth + 1) for x in t])
        if t == "object":
            props = schema.get("properties", {})
            required = schema.get("required", [])
            extra = schema.get("additionalProperties", True)
            fixed = {k: self.value(props[k], depth + 1) for k in required if k in props}
            optional = {k: self.value(v, depth + 1) for k, v in props.items()
                        if k not in required}
            base = st.fixed_dictionaries(fixed, optional=optional)
            if isinstance(extra, dict):
                more = st.dictionaries(st.sampled_from(
                    ["ax", "bx", "cs", "ip", "flags", "eax", "zz"]), self.value(extra, depth + 1),
                    max_size=3)
                base = st.builds(lambda a, b: {**a, **b}, base, more)
            return base
        if t == "array":
            items = schema.get("items", {})
            return st.lists(self.value(items, depth + 1), max_size=4)
        if t == "integer":
            return st.integers(-2, 70000)
        if t == "number":
            return st.one_of(st.floats(-2, 2), st.integers(-2, 2))
        if t == "string":
            return st.one_of(st.text(max_size=12), st.sampled_from(
                ["op-1", "op-2", "snap-1", "SGk=", "AAAA", "0" * 64, "into", "over", "pypc"]))
        if t == "boolean":
            return st.booleans()
        if t == "null":
            return st.none()
        return JUNK

    def params(self, method):
        shaped = self.value(self.docs[method]["params"])
        bent = shaped.flatmap(lambda p: self._bend(p))
        return st.one_of(shaped, bent)

    def _bend(self, params):
        if not isinstance(params, dict) or not params:
            return st.one_of(st.just({"unexpected": 1}), JUNK)
        keys = sorted(params)
        return st.one_of(
            st.builds(lambda k, v: {**params, k: v}, st.sampled_from(keys), JUNK),
            st.builds(lambda k: {x: y for x, y in params.items() if x != k},
                      st.sampled_from(keys)),
            st.builds(lambda v: {**params, "bogus_key": v}, JUNK))

    def request(self, methods):
        """``(method, params)`` for one of ``methods``."""
        return st.sampled_from(sorted(methods)).flatmap(
            lambda m: st.tuples(st.just(m), self.params(m)))


def broken_lines():
    """Lines that are not valid requests (no LF inside)."""
    good = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "state.get"}).encode()
    return st.one_of(
        st.binary(min_size=1, max_size=64).filter(lambda b: b"\n" not in b and b.strip()),
        st.integers(1, len(good) - 1).map(lambda n: good[:n]),
        st.sampled_from([b"[]", b"{}", b"null", b"1", b'"x"', b'{"jsonrpc":"2.0"}',
                         b'{"jsonrpc":"2.0","id":{},"method":"state.get"}',
                         b'{"jsonrpc":"2.0","id":1,"method":"state.get","params":[]}',
                         b'{"jsonrpc":"2.0","id":1,"method":"nope.nope"}']),
    )
