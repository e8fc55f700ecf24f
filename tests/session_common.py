"""What the session tests over TCP (test_rpc_session.py,
test_rpc_session_stop.py, test_dos_trace.py) share: a real server whose
session's built-in DOS is closed at the end, a fresh folder of guest
programs for drive C:, and session.start of a program in it."""

import shutil

import pytest

from guest import dos as progs
from rpc_client import RpcFixture


@pytest.fixture
def srv():
    """A real server on a CGA machine (``rpc_client.RpcFixture``)."""
    f = RpcFixture(plugins=["cga"])
    yield f
    f.close_with_session()


def runtime_folder(tmp_path, programs):
    """tmp_path/runtime holding each of tests/guest/dos's ``programs``
    (name -> the file name it gets there); its path."""
    folder = tmp_path / "runtime"
    folder.mkdir()
    for name, file_name in programs.items():
        shutil.copy(progs.path(name), folder / file_name)
    return folder


def start_session(c, folder, command, arguments=(), **params):
    """session.start of ``command`` with ``arguments``, ``folder`` mounted
    as drive C:, and the other session.start ``params``; its result."""
    return c.call("session.start", {"target": {"command": command,
                                               "arguments": list(arguments)},
                                    "mounts": [{"drive": "C", "host_path": str(folder)}],
                                    **params})
