"""User errors: which exceptions end a command with one ``pypc: error:``
line and exit status 2, and that line."""

from ..errors import PypcError


def is_user_error(exc):
    from ..bus.memory import MemoryMapError
    from ..bus.ports import PortConflictError
    return isinstance(exc, (PypcError, PortConflictError, MemoryMapError, OSError))


def one_line(exc):
    text = str(exc) or type(exc).__name__
    if isinstance(exc, OSError) and exc.filename and exc.strerror:
        text = f"{exc.filename}: {exc.strerror}"
    return " ".join(text.split())
