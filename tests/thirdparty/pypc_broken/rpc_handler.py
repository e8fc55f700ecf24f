from pypc_core import hookimpl


def divide(ctl, params):
    return {"value": 1 // int(params.get("by", 0))}


divide.rpc_schema = {
    "summary": "Divide 1 by 'by' (0 by default: a handler that raises).",
    "params": {"type": "object", "properties": {"by": {"type": "integer"}},
               "additionalProperties": False},
    "result": {"type": "object", "properties": {"value": {"type": "integer"}},
               "required": ["value"], "additionalProperties": False},
}


@hookimpl
def pypc_rpc_methods():
    return {"broken.divide": divide}
