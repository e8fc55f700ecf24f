"""The debugger's one error."""

from ..errors import PypcError


class BreakpointError(PypcError, ValueError):
    """A breakpoint (or condition, or address) that makes no sense; nothing
    was changed."""
