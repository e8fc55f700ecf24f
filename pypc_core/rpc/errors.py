"""The RPC error model: JSON-RPC codes plus a machine-readable reason.

Every failure a method can report is an :class:`RpcError` carrying one of the
contract's JSON-RPC codes and ``data.reason`` (one of :data:`REASONS`), so a
client branches on ``error.data.reason`` and never parses ``message``.
A handler raises before it changes anything: a rejected request leaves the
machine, the revision, the queues and the breakpoints as they were.
"""

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

#: reason -> what it means (docs/rpc.md lists the same table)
REASONS = {
    "PARSE_ERROR": "the line is not JSON (or not UTF-8)",
    "INVALID_REQUEST": "not a JSON-RPC 2.0 request object, or a line over 1 MiB",
    "METHOD_NOT_FOUND": "no such method",
    "INVALID_PARAMS": "params do not match the method's schema or a range",
    "LIMIT_EXCEEDED": "a length, count or capacity is over the contract's limit",
    "TARGET_NOT_PAUSED": "the method needs a paused machine and it is running",
    "TARGET_RUNNING": "an execution operation is still active",
    "REVISION_MISMATCH": "expected_state_revision is not the current revision",
    "PRECONDITION_FAILED": "a guard (register value, sha256, trace state) does not hold",
    "NOT_FOUND": "no breakpoint, operation, snapshot or history with that id",
    "CURSOR_EXPIRED": "the cursor points before the retained events",
    "DEVICE_ABSENT": "the card the method needs is not plugged in",
    "UNSUPPORTED": "a mode the contract lists as unsupported (step over), or memory "
                   "state.observe does not copy (a device's handler window)",
    "INTERNAL_ERROR": "the handler failed (a bug: please report it)",
    "SESSION_BUSY": "session.start while a started program has not exited",
    "SESSION_NOT_FOUND": "no session with that session_id (not pypc, not the current one), "
                         "or session.stop without a started program",
    "TARGET_EXITED": "the session's program has exited (registers, memory and "
                     "execution are gone; session.start runs another)",
    "REQUEST_ID_CONFLICT": "a request_id seen before with another method or params",
    "PROGRAM_NOT_FOUND": "session.start: no such program (or a folder) on the mount",
    "NOT_EXECUTABLE": "session.start: the file is not a .COM, .EXE or .BAT program",
    "BAD_EXECUTABLE": "session.start: the program's header is corrupt or it is too big",
    "PATH_OUTSIDE_MOUNT": "session.start: the path (or a link on it) leaves the mounted "
                          "folder",
    "START_FAILED": "session.start: the program did not reach its first instruction",
    "UNAUTHENTICATED": "the server has --rpc-token-file and this connection has not sent "
                       "auth with its token (or the token was wrong); nothing ran",
}


class RpcError(Exception):
    """A JSON-RPC error reply.  ``data`` always holds ``reason``."""

    def __init__(self, code, message, reason, **data):
        super().__init__(message)
        if reason not in REASONS:
            raise ValueError(f"unknown RPC error reason {reason!r}")
        self.code = code
        self.message = message
        self.data = {"reason": reason, **data}

    @property
    def reason(self):
        return self.data["reason"]

    def to_json(self):
        return {"code": self.code, "message": self.message, "data": self.data}


def invalid(message, reason="INVALID_PARAMS", **data):
    """-32602 with ``reason`` (the contract reports every guard as -32602)."""
    return RpcError(INVALID_PARAMS, message, reason, **data)


def not_paused(method):
    return invalid(f"{method} needs a paused machine (call execution.pause first)",
                   "TARGET_NOT_PAUSED", state="running")


def revision_mismatch(expected, current):
    return invalid(f"expected_state_revision {expected} is not the current revision "
                   f"{current}", "REVISION_MISMATCH", expected_state_revision=expected,
                   state_revision=current)


def limit(message, **data):
    return invalid(message, "LIMIT_EXCEEDED", **data)


def not_found(message, **data):
    return invalid(message, "NOT_FOUND", **data)


def device_absent(message, **data):
    return invalid(message, "DEVICE_ABSENT", **data)
