"""The test run's own translation cache: translated regions (the block
translator's region cache, pypc_core/cpu/region_cache.py) go to a folder of
this run, not the user's ~/.cache, and every process the tests start (they
inherit the environment) shares it."""

import atexit
import os
import shutil
import tempfile

if "PYPC_TRANSLATION_CACHE" not in os.environ:
    _folder = tempfile.mkdtemp(prefix="pypc-test-translations-")
    os.environ["PYPC_TRANSLATION_CACHE"] = _folder
    atexit.register(shutil.rmtree, _folder, ignore_errors=True)
