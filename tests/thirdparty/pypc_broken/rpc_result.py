from pypc_core import hookimpl


def result(ctl, params):
    return {"value": "not-an-int"}


result.rpc_schema = {
    "params": {"type": "object", "additionalProperties": False},
    "result": {"type": "object", "properties": {"value": {"type": "integer"}},
               "required": ["value"], "additionalProperties": False},
}


@hookimpl
def pypc_rpc_methods():
    return {"broken.result": result}
