"""The command line: everything that turns ``argv`` into a machine and a run.

* :mod:`.main`        -- the ``pypc`` command: subcommands, argv normalising, one-line errors
* :mod:`.errors`      -- which exceptions are user errors (one line, exit 2)
* :mod:`.options`     -- the options of ``pypc run`` and :func:`~.options.parse_run`
* :mod:`.plugin_list` -- ``pypc plugins``
* :mod:`.run`         -- ``pypc run``: checks, the MachineConfig, which run to start
* :mod:`.headless`    -- headless runs (the loop a ``pypc batch`` job shares)
* :mod:`.live`        -- the live view in the terminal
* :mod:`.typist`      -- ``--type`` / ``--type-after``
* :mod:`.signals`     -- SIGINT/SIGTERM/SIGHUP during a run
* :mod:`.compile_notice` -- the first run's word while the core compiles
* :mod:`.bare`        -- ``--bare``: no firmware, raw binaries, dumps
* :mod:`.dos`         -- PROGRAM and ``--drive``: the built-in DOS's options and runs
* :mod:`.snapshot`    -- ``--load/--save-snapshot``, ``--record``, ``--replay``
* :mod:`.rpc`         -- the JSON-RPC server's options, ``--serve``
* :mod:`.viewers`     -- the telnet/VNC/web viewers' and sound options
* :mod:`.gdb`         -- ``--gdb``: the gdb remote stub's option and start

``pypc batch`` has its command line in :mod:`pypc_core.batch.cli`.  Nothing
below this package imports it.  The entry points are ``pypc`` (the console
script), ``python -m pypc_core`` and ``python -m pypc_core.cli``, all
:func:`main`.
"""

from .main import _normalise_argv, build_parser, main
from .options import add_run_arguments, launch_plugins, parse_run

__all__ = ["main", "build_parser", "add_run_arguments", "parse_run", "launch_plugins",
           "_normalise_argv"]
