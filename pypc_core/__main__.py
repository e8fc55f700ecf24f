"""``python -m pypc_core``: the ``pypc`` command."""

import sys

from .cli.main import main

sys.exit(main())
