"""The test run's own translation cache: translated regions (the block
translator's region cache, pypc_core/cpu/region_cache.py) go to a folder of
this run, not the user's ~/.cache, and every process the tests start (they
inherit the environment) shares it."""

import atexit
import os
import shutil
import tempfile

import pytest

if "PYPC_TRANSLATION_CACHE" not in os.environ:
    _folder = tempfile.mkdtemp(prefix="pypc-test-translations-")
    os.environ["PYPC_TRANSLATION_CACHE"] = _folder
    atexit.register(shutil.rmtree, _folder, ignore_errors=True)


# pytest-xdist (the README's test command runs two workers) sends each test
# file to one worker whole, in its order: some files' tests build on the one
# before them (tests/test_rpc_fuzz.py counts what its fuzzer sent) and share
# module fixtures.  The files whose runs may listen on the contract's fixed
# ports (JSON-RPC 2301, telnet 2300, VNC 5902), the web view's 8088 or the
# gdb stub's 1234, or that check those ports are free, are one group: they
# run in one worker, one after another, so two of them never meet on a port.
FIXED_PORT_FILES = frozenset({
    "test_batch.py", "test_console.py", "test_gdb_real.py", "test_gdbstub.py",
    "test_job_listeners.py", "test_launcher.py", "test_live_terminal.py",
    "test_mcp.py", "test_plugin_errors.py", "test_rpc_access.py",
    "test_rpc_launcher.py", "test_rpc_serve.py", "test_storage.py",
    "test_symbols.py", "test_viewer_defaults.py", "test_vnc.py",
    "test_web_view.py",
})


def pytest_configure(config):
    # pytest-xdist registers it; without xdist the marks are inert
    config.addinivalue_line("markers", "xdist_group(name): tests of one xdist worker")


@pytest.hookimpl(tryfirst=True)      # before xdist's own hook reads the groups
def pytest_collection_modifyitems(config, items):
    for item in items:
        name = item.path.name
        group = "fixed_ports" if name in FIXED_PORT_FILES else name
        item.add_marker(pytest.mark.xdist_group(group))
