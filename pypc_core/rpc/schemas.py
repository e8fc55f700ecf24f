"""JSON Schemas of the RPC methods: loading, validation, OpenRPC.

``schemas/<method>.json`` (at the top of the source tree, the one source)
describes one method.  The folder is also the data package ``pypc_schemas``
(``[tool.setuptools.package-dir]``), so a wheel carries the files and they
are read with :mod:`importlib.resources`, from wherever pypc is installed::

    {"method": "memory.read", "summary": "...",
     "params": {JSON Schema of the params object},
     "result": {JSON Schema of the result}}

Shared pieces live in ``schemas/defs.json`` under ``$defs`` and are referenced
as ``{"$ref": "defs.json#/$defs/name"}``.  A third-party method group ships
its schema on the callable instead: ``fn.rpc_schema = {"params": ...,
"result": ...}`` (the same shape, ``method`` omitted).
"""

import copy
import importlib.resources
import json
from pathlib import Path

# jsonschema and referencing are imported where a schema is checked or a
# validator built: a process that serves no RPC (a batch worker) never loads them

from ..errors import PypcError

DEFS_NAME = "defs.json"
OPENRPC_VERSION = "1.2.6"
SCHEMA_PACKAGE = "pypc_schemas"


class SchemaError(PypcError):
    """A schema file is missing, malformed, or does not match a method.
    ``methods`` (when known) lists the methods it is about."""

    methods = ()


def schema_dir():
    """The installed schema folder (an :mod:`importlib.resources`
    Traversable: a folder of the source tree in an editable install, of
    site-packages in a regular one)."""
    try:
        return importlib.resources.files(SCHEMA_PACKAGE)
    except ModuleNotFoundError:
        raise SchemaError(f"the RPC schema package {SCHEMA_PACKAGE} is not installed "
                          f"(reinstall pypc)") from None


def _folder(folder):
    return schema_dir() if folder is None else Path(folder)


def load_defs(folder=None):
    path = _folder(folder) / DEFS_NAME
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SchemaError(f"{path}: cannot load the shared RPC schema definitions: "
                          f"{exc}") from exc


def load_method_schemas(folder=None):
    """``{method: document}`` for every ``schemas/<method>.json``."""
    folder = _folder(folder)
    if not folder.is_dir():
        raise SchemaError(f"{folder}: the RPC schema folder is missing")
    out = {}
    for path in sorted(folder.iterdir(), key=lambda p: p.name):
        name = path.name
        if not name.endswith(".json") or name == DEFS_NAME:
            continue
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise SchemaError(f"{path}: not JSON: {exc}") from exc
        method = doc.get("method")
        if method + ".json" != name:
            raise SchemaError(f"{path}: 'method' is {method!r}; the file must be "
                              f"named after its method")
        check_document(doc, str(path))
        out[method] = doc
    return out


def check_document(doc, where):
    """Raise :class:`SchemaError` (one line starting with ``where``) unless
    ``doc`` has a ``params`` and a ``result`` that are valid JSON Schemas
    (draft 2020-12) whose ``$ref`` are ``defs.json#/$defs/NAME`` or local
    ``#/...`` pointers that resolve."""
    for key in ("params", "result"):
        if not isinstance(doc.get(key), dict):
            raise SchemaError(f"{where}: '{key}' must be a JSON Schema object")
    import jsonschema
    for key in ("params", "result"):
        try:
            jsonschema.Draft202012Validator.check_schema(doc[key])
        except jsonschema.exceptions.SchemaError as exc:
            at = "/".join(str(p) for p in exc.absolute_path) or "(top)"
            raise SchemaError(f"{where}: its {key} schema is not a valid JSON Schema at "
                              f"{at}: {' '.join(exc.message.split())}") from exc
        _check_refs(doc[key], doc[key], where, key)


def _check_refs(node, root, where, key):
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and not ref.startswith(DEFS_NAME + "#/$defs/"):
            if not ref.startswith("#"):
                raise SchemaError(f"{where}: its {key} schema has $ref {ref!r}; refer to "
                                  f"shared pieces as {DEFS_NAME}#/$defs/NAME")
            target = root
            for part in [p for p in ref[1:].split("/") if p]:
                part = part.replace("~1", "/").replace("~0", "~")
                if isinstance(target, dict) and part in target:
                    target = target[part]
                elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
                    target = target[int(part)]
                else:
                    raise SchemaError(f"{where}: its {key} schema has $ref {ref!r}, "
                                      f"which points at nothing")
        for value in node.values():
            _check_refs(value, root, where, key)
    elif isinstance(node, list):
        for value in node:
            _check_refs(value, root, where, key)


class SchemaSet:
    """Validators for a set of methods (built once, used from any thread:
    jsonschema validators are read-only after construction)."""

    def __init__(self, documents, defs=None, owners=None):
        import jsonschema
        import referencing
        from referencing.jsonschema import DRAFT202012
        self.documents = documents
        self.defs = defs if defs is not None else load_defs()
        resource = DRAFT202012.create_resource(self.defs)
        self.registry = referencing.Registry().with_resource(DEFS_NAME, resource)
        self._params = {}
        self._result = {}
        for method, doc in documents.items():
            # shared definitions are inlined once here: resolving a $ref per
            # array item made a video.text result take 0.35 s to check
            try:
                params, result = self.inline(doc["params"]), self.inline(doc["result"])
            except SchemaError as exc:
                raise SchemaError(f"{_where(method, owners)}: {exc}") from exc
            self._params[method] = jsonschema.Draft202012Validator(
                params, registry=self.registry)
            self._result[method] = jsonschema.Draft202012Validator(
                result, registry=self.registry)

    def inline(self, schema):
        """``schema`` with every ``defs.json#/$defs/X`` reference replaced
        by the definition itself."""
        defs = self.defs.get("$defs", {})
        prefix = DEFS_NAME + "#/$defs/"

        def walk(node, depth):
            if depth > 64:
                raise SchemaError("schema definitions refer to each other in a loop")
            if isinstance(node, dict):
                ref = node.get("$ref")
                if isinstance(ref, str) and ref.startswith(prefix) and len(node) == 1:
                    name = ref[len(prefix):]
                    if name not in defs:
                        raise SchemaError(f"unknown schema definition {ref!r}")
                    return walk(defs[name], depth + 1)
                return {k: walk(v, depth) for k, v in node.items()}
            if isinstance(node, list):
                return [walk(v, depth) for v in node]
            return node
        return walk(schema, 0)

    def param_errors(self, method, params):
        """Sorted list of ``"path: message"`` strings (empty when valid)."""
        return _errors(self._params[method], params)

    def result_errors(self, method, result):
        return _errors(self._result[method], result)

    def openrpc(self, title="pypc", version="0"):
        """An OpenRPC document of these methods (``rpc.discover``)."""
        methods = []
        for name in sorted(self.documents):
            doc = self.documents[name]
            params = doc["params"]
            props = params.get("properties", {})
            required = set(params.get("required", []))
            entry = {
                "name": name,
                "summary": doc.get("summary", ""),
                "paramStructure": "by-name",
                "params": [
                    {"name": key, "required": key in required,
                     "schema": _openrpc_refs(schema)}
                    for key, schema in props.items()],
                "result": {"name": "result", "schema": _openrpc_refs(doc["result"])},
                "x-params-schema": _openrpc_refs(params),
            }
            if doc.get("description"):
                entry["description"] = doc["description"]
            methods.append(entry)
        return {
            "openrpc": OPENRPC_VERSION,
            "info": {"title": f"{title} JSON-RPC agent API", "version": version},
            "methods": methods,
            "components": {"schemas": _openrpc_refs(self.defs.get("$defs", {}))},
        }


def _errors(validator, instance):
    out = []
    for err in sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path)):
        path = "/".join(str(p) for p in err.absolute_path) or "params"
        out.append(f"{path}: {err.message}")
    return out


def _openrpc_refs(schema):
    """Copy of ``schema`` with ``defs.json#/$defs/X`` refs rewritten to
    ``#/components/schemas/X``."""
    def walk(node):
        if isinstance(node, dict):
            out = {}
            for k, v in node.items():
                if k == "$ref" and isinstance(v, str) and v.startswith(DEFS_NAME + "#/$defs/"):
                    out[k] = "#/components/schemas/" + v.split("/")[-1]
                else:
                    out[k] = walk(v)
            return out
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node
    return walk(copy.deepcopy(schema))


def _where(method, owners, fn=None):
    """``RPC method 'x.y' of plugin 'z'`` (the entry-point name from
    ``owners``, else the module of ``fn``)."""
    owner = (owners or {}).get(method)
    if owner is not None:
        return f"RPC method {method!r} of plugin {owner!r}"
    module = getattr(fn, "__module__", None)
    return f"RPC method {method!r}" + (f" (module {module})" if module else "")


def check_methods(methods, folder=None, owners=None):
    """What :func:`build_schema_set` refuses, checked cheaply before a
    machine is built (``pypc run`` does, so a bad method group stops it at
    once): every method has a schema file or an ``rpc_schema``, and every
    ``rpc_schema`` is valid with ``$ref`` only to definitions ``defs.json``
    has.  The schema files themselves (pypc's own) are not re-checked.
    Raises :class:`SchemaError` naming the method and, with ``owners``, its
    plugin."""
    folder = _folder(folder)
    try:
        files = {p.name[:-5] for p in folder.iterdir() if p.name.endswith(".json")}
    except OSError as exc:
        raise SchemaError(f"{folder}: the RPC schema folder is missing") from exc
    inline = {name: fn for name, fn in methods.items()
              if getattr(fn, "rpc_schema", None) is not None}
    missing = sorted(set(methods) - set(inline) - files)
    if missing:
        exc = SchemaError("RPC methods without a schema: " + ", ".join(
            _where(m, owners, methods[m]).removeprefix("RPC method ") for m in missing))
        exc.methods = missing
        raise exc
    scratch = SchemaSet({}, load_defs(folder))
    for name, fn in inline.items():
        try:
            doc = _inline_document(name, fn, owners)
            try:
                scratch.inline(doc["params"]), scratch.inline(doc["result"])
            except SchemaError as exc:
                raise SchemaError(f"{_where(name, owners, fn)}: {exc}") from exc
        except SchemaError as exc:
            exc.methods = [name]
            raise


def _inline_document(name, fn, owners):
    inline = fn.rpc_schema
    where = f"{_where(name, owners, fn)}: rpc_schema"
    if not isinstance(inline, dict):
        raise SchemaError(f"{where} must be a dict with 'params' and 'result', "
                          f"not {type(inline).__name__}")
    doc = dict(inline, method=name)
    check_document(doc, where)
    return doc


def build_schema_set(methods, folder=None, strict=False, owners=None):
    """A :class:`SchemaSet` for ``methods`` (``{name: callable}``): every
    method must have a schema (its file, or ``fn.rpc_schema``), else
    :class:`SchemaError` names them.  With ``strict`` (the test suite) every
    schema file must also have a method; the server itself only ignores a
    schema whose method group is not installed.  ``owners`` (``{method:
    plugin name}``, :attr:`PluginManager.rpc_method_owners`) lets an error
    name the plugin, not only the method: a schema that is no valid JSON
    Schema, or a ``$ref`` to a definition ``defs.json`` does not have."""
    files = load_method_schemas(folder)
    docs = {}
    missing = []
    for name, fn in methods.items():
        inline = getattr(fn, "rpc_schema", None)
        if inline is not None:
            docs[name] = _inline_document(name, fn, owners)
        elif name in files:
            docs[name] = files[name]
        else:
            missing.append(name)
    orphans = sorted(set(files) - set(methods))
    if missing:
        raise SchemaError("RPC methods without a schema: " + ", ".join(
            _where(m, owners, methods[m]).removeprefix("RPC method ")
            for m in sorted(missing)))
    if orphans and strict:
        raise SchemaError("schemas without an RPC method: " + ", ".join(orphans))
    return SchemaSet(docs, load_defs(folder), owners=owners)
