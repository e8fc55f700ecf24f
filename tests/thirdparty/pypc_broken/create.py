from pypc_core import hookimpl

from ._card import declaration


@hookimpl
def pypc_device_declare():
    return declaration("broken_create")


@hookimpl
def pypc_device_create(options):
    raise ValueError("create-boom")
