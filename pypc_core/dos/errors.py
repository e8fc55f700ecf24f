"""DOS error codes (as INT 21h returns them in AX with CF=1) and the
Python exceptions of the built-in DOS."""

from ..errors import PypcError

E_INVALID_FUNCTION = 0x01
E_FILE_NOT_FOUND = 0x02
E_PATH_NOT_FOUND = 0x03
E_TOO_MANY_FILES = 0x04
E_ACCESS_DENIED = 0x05
E_INVALID_HANDLE = 0x06
E_MCB_DESTROYED = 0x07
E_NO_MEMORY = 0x08
E_INVALID_BLOCK = 0x09
E_BAD_ENVIRONMENT = 0x0A
E_BAD_FORMAT = 0x0B
E_INVALID_ACCESS = 0x0C
E_INVALID_DRIVE = 0x0F
E_CURRENT_DIRECTORY = 0x10
E_NOT_SAME_DEVICE = 0x11
E_NO_MORE_FILES = 0x12
E_GENERAL_FAILURE = 0x1F
E_FILE_EXISTS = 0x50

# (class, suggested action, locus) for INT 21h AH=59h
ERROR_CLASS = {
    E_FILE_NOT_FOUND: (0x08, 0x03, 0x02),
    E_PATH_NOT_FOUND: (0x08, 0x03, 0x02),
    E_TOO_MANY_FILES: (0x01, 0x04, 0x01),
    E_ACCESS_DENIED: (0x03, 0x03, 0x02),
    E_INVALID_HANDLE: (0x07, 0x04, 0x01),
    E_MCB_DESTROYED: (0x07, 0x05, 0x05),
    E_NO_MEMORY: (0x01, 0x04, 0x05),
    E_INVALID_BLOCK: (0x07, 0x04, 0x05),
    E_NO_MORE_FILES: (0x08, 0x03, 0x02),
    E_GENERAL_FAILURE: (0x0D, 0x04, 0x01),
    E_FILE_EXISTS: (0x0C, 0x03, 0x02),
}


class DosError(Exception):
    """A DOS call fails with ``code`` (CF=1, AX=code)."""

    def __init__(self, code):
        super().__init__(f"DOS error {code:02X}h")
        self.code = code


class DosConfigError(PypcError):
    """The built-in DOS cannot start as configured (a drive that is not a
    folder, a program outside every drive)."""


class DosStateError(PypcError):
    """A saved DOS state does not fit this DOS (its drives, folders or open
    files are not in the current mounts, or it is malformed)."""


class LoadError(PypcError):
    """A program cannot be loaded: not an executable, a corrupt MZ header,
    too big.  ``code`` is the DOS error EXEC returns."""

    def __init__(self, message, code=E_BAD_FORMAT):
        super().__init__(message)
        self.code = code
