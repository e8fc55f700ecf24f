from pypc_core import hookimpl

from ._card import Card, declaration


class AttachFails(Card):
    def attach(self, board):
        open("/nonexistent-pypc-broken/device.cfg")     # OSError


@hookimpl
def pypc_device_declare():
    return declaration("broken_attach")


@hookimpl
def pypc_device_create():
    return AttachFails("broken_attach")
