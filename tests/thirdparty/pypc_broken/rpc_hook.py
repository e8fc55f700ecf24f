from pypc_core import hookimpl


@hookimpl
def pypc_rpc_methods():
    raise AttributeError("rpc-hook-boom")
