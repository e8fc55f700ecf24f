"""``python -m pypc_core.cli``: the ``pypc`` command."""

import sys

from .main import main

sys.exit(main())
