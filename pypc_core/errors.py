"""Errors a user can act on.

The CLI prints ``str(error)`` of a :class:`PypcError` as one line on stderr
and exits with status 2 (no traceback).  Raise a subclass for anything the
user caused (a bad option, a missing file, an unknown plugin); let genuine
bugs propagate as ordinary exceptions.
"""


class PypcError(Exception):
    """A user-facing error: one line, no traceback."""
