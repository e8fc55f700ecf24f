from pypc_core import hookimpl

from ._card import Card, declaration


@hookimpl
def pypc_device_declare():
    return declaration("broken_options")


@hookimpl
def pypc_cli_add_options(parser):
    raise TypeError("options-boom")


@hookimpl
def pypc_device_create():
    return Card("broken_options")
