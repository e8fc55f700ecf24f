from pypc_core import hookimpl

from ._card import Card, declaration


@hookimpl
def pypc_device_declare():
    return declaration("broken_ready")


@hookimpl
def pypc_device_create():
    return Card("broken_ready")


@hookimpl
def pypc_machine_ready(machine):
    raise RuntimeError("ready-boom")
