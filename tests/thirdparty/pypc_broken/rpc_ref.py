from pypc_core import hookimpl


def ref(ctl, params):
    return {}


ref.rpc_schema = {
    "params": {"type": "object", "properties": {"a": {"$ref": "defs.json#/$defs/nosuch"}}},
    "result": {"type": "object"},
}


@hookimpl
def pypc_rpc_methods():
    return {"broken.ref": ref}
