"""What the machine raises: a configuration it cannot build, a device that
failed during a guest IN or OUT."""

from .errors import PypcError


class MachineError(PypcError):
    """The machine cannot be built as configured (bad image, bad ROM...)."""


class DeviceFault(MachineError):
    """A device's port handler raised during a guest IN or OUT.

    The run stops with ``Stop("fault")`` whose ``detail`` holds ``message``
    (this error's text), ``device``, ``plugin``, ``port``, ``direction``
    (``in``/``out``), ``width`` and the guest's ``cs``/``ip`` of the
    instruction; the diagnostics ring gets the message as an ``error``
    record (and with ``PYPC_DEBUG=1`` stderr the traceback).  A machine with
    :attr:`Machine.raise_device_faults` raises this instead of returning
    the stop (the ``pypc`` command does: one line, exit 2); the original
    exception is ``__cause__``."""

    def __init__(self, message, **detail):
        super().__init__(message)
        self.detail = dict(detail, message=message)
