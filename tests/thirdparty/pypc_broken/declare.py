from pypc_core import hookimpl


@hookimpl
def pypc_device_declare():
    raise KeyError("declare-boom")


@hookimpl
def pypc_device_create():
    return None
