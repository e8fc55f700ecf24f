from pypc_core import hookimpl


def typo(ctl, params):
    return {}


typo.rpc_schema = {
    "params": {"type": "object", "properties": {"x": {"type": "integr"}}},
    "result": {"type": "object"},
}


@hookimpl
def pypc_rpc_methods():
    return {"broken.typo": typo}
