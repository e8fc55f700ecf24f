"""Snapshot errors: every refusal says which check failed (``check``) and
what kind of failure it is (``kind``), so the RPC layer maps it to a
JSON-RPC code and ``error.data.reason`` without parsing the message."""

from ..errors import PypcError

#: kind -> (JSON-RPC code, error.data.reason)
RPC_CODES = {
    "invalid": (-32602, "INVALID_PARAMS"),        # a malformed bundle or request
    "limit": (-32602, "LIMIT_EXCEEDED"),          # a size limit of the format
    "guard": (-32602, "PRECONDITION_FAILED"),     # a hash, an existing path
    "config": (-32602, "PRECONDITION_FAILED"),    # another machine configuration
    "unsupported": (-32602, "UNSUPPORTED"),       # a version or layout this pypc cannot read
    "io": (-32603, "INTERNAL_ERROR"),             # a host file cannot be opened/read/written
}


class SnapshotError(PypcError):
    """A bundle cannot be written, read or installed; nothing was changed
    (except, for ``check == "disk_write"``, a partial new ``disk_root``)."""

    def __init__(self, message, check, kind="invalid"):
        super().__init__(message)
        if kind not in RPC_CODES:
            raise ValueError(f"unknown snapshot error kind {kind!r}")
        self.check = check
        self.kind = kind

    @property
    def rpc_code(self):
        return RPC_CODES[self.kind][0]

    @property
    def rpc_reason(self):
        return RPC_CODES[self.kind][1]
