"""Hook specifications: every ``pypc_*`` hook a plugin can implement.

Modelled on pytest's ``hookspec.py``.  A plugin is a module (found through an
entry point, see ``pypc_core.plugins`` and ``docs/plugins.md``) whose
functions carry the ``@hookimpl`` marker and are named after a hook below::

    from pypc_core import hookimpl

    @hookimpl
    def pypc_device_declare():
        return DeviceDeclaration(name="mydev", ports=[0x300])

Naming: ``pypc_<phase>_<verb>``.  The phases, in the order they happen:

* ``device`` -- what a device plugin claims, and building its device;
* ``cli``    -- command-line options;
* ``machine`` -- machine life-cycle notifications;
* ``rpc``    -- JSON-RPC method groups.

Hooks wire things up.  None of them runs per instruction or per port access:
port and memory traffic goes straight to the handlers a device registered on
the bus in ``Device.attach``.

An implementation may accept any subset of a hook's arguments, by name (this
is how new arguments can be added to a hook without breaking plugins).

An implementation that raises (anything but a ``pypc_core.errors.PypcError``,
which is a user error it words itself) stops start-up with one line naming
it -- ``pypc: error: plugin 'x' failed in hook pypc_device_create:
ValueError: ...``; ``PYPC_DEBUG=1`` prints the traceback first.
"""

import pluggy

PROJECT_NAME = "pypc"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


# -------------------------------------------------------------------------
# device: declaring and building devices (group ``pypc.devices``)
# -------------------------------------------------------------------------


@hookspec
def pypc_device_declare():
    """Describe the device(s) this plugin provides, without building them.

    The declaration is binding: the board refuses claims outside it.

    Called by ``pypc plugins`` (to show what each plugin claims) and by the
    machine before it builds anything (to find conflicts early).  It must be
    cheap and side-effect free: no machine exists yet.

    :return: a :class:`pypc_core.device.DeviceDeclaration` (ports, IRQs, DMA
        channels, memory windows, capabilities), or a list of them if the
        plugin provides several devices (e.g. two serial ports).
    """


@hookspec
def pypc_device_create(machine, options):
    """Build this plugin's device(s).

    Called once per machine, for selected device plugins only, after the
    bus, the CPU and the chipset exist and before any guest code runs; also
    by ``pypc plugins`` (with ``machine=None``) to show what the card really
    claims.  The plugin only *constructs* the device; the machine then
    calls ``device.attach(board)`` with a :class:`pypc_core.board.Board`
    bound to the device's declaration, through which the device claims its
    ports, memory windows, IRQ and DMA lines (anything outside the
    declaration is refused; collisions are start-up errors naming both).

    :param machine: the ``pypc_core.Machine`` being built, or None -- for
        tools only: a card needs nothing but ``options`` here and its board
        at attach (``board.drives``, ``board.open_disk``, ``board.options``
        ...); none of the built-in cards takes it.
    :param options: the parsed command line (an ``argparse.Namespace``
        with the options of :func:`pypc_cli_add_options`), or None.
    :return: a :class:`pypc_core.device.Device` instance, or a list of them.
        ``None`` means "nothing to add" (e.g. disabled by an option).
    """


# -------------------------------------------------------------------------
# cli: command-line options
# -------------------------------------------------------------------------


@hookspec
def pypc_cli_add_options(parser):
    """Add command-line options for this plugin to ``pypc run``.

    Called while the command line is parsed, for the device plugins selected
    with ``--plugins`` (and every RPC method group the run serves: none
    with ``--no-rpc`` or ``--bare``), before the final parse:
    ``pypc run --plugins myplug --help`` shows them.  Use a prefix unique to
    the plugin (``--myplug-base``) so options never collide.

    :param parser: an ``argparse`` argument group (``add_argument`` works).
    :return: nothing.
    """


# -------------------------------------------------------------------------
# machine: life-cycle notifications
# -------------------------------------------------------------------------


@hookspec
def pypc_machine_ready(machine):
    """The machine is fully built: every device is attached and reset,
    firmware and disks are loaded, and no guest instruction has run yet.

    A place for plugins to look at the assembled machine (e.g. to start a
    viewer).  Must not run the CPU.  An exception here stops start-up
    naming the plugin.

    :param machine: the ``pypc_core.Machine``.
    :return: nothing.
    """


@hookspec
def pypc_machine_shutdown(machine):
    """The machine is being torn down (normal exit, error or Ctrl-C).

    Release host resources (files, sockets, threads) here.  Called at most
    once per machine, after the CPU has stopped.  Every plugin's
    implementation runs even if another raises; a failure becomes an
    ``error`` record in the machine's diagnostics ring naming the plugin.

    :param machine: the ``pypc_core.Machine``.
    :return: nothing.
    """


# -------------------------------------------------------------------------
# rpc: JSON-RPC method groups (group ``pypc.rpc_methods``)
# -------------------------------------------------------------------------


@hookspec
def pypc_rpc_methods():
    """Return the JSON-RPC methods this method group provides.

    Called once per plugin manager (``pypc run`` calls it before it builds
    the machine, to check every method's schema, and the RPC server reuses
    that table).  Every plugin of the ``pypc.rpc_methods`` group is
    registered unless turned off by name (``pypc run --rpc-methods -NAME``);
    so are device plugins that implement this hook, for device-specific
    methods.  The methods are thin adapters over the ``Machine`` API: the
    dispatcher validates params against the method's schema
    (``schemas/<method>.json`` or ``fn.rpc_schema``) before calling, runs
    the call on the machine thread at an instruction boundary, and replies
    with what it returns.  It validates that result against the schema
    only when ``PYPC_VALIDATE_RESULTS=1`` or ``PYPC_DEBUG=1`` is set (a
    mismatch is then an ``INTERNAL_ERROR`` naming the method and its
    plugin); the test suite's client checks every result it receives.  A
    handler that raises is an ``INTERNAL_ERROR`` naming the method and its
    plugin; its traceback goes to the diagnostics ring (``debug.output.read``,
    source ``rpc``) and, with ``PYPC_DEBUG=1``, to stderr.

    :return: a dict ``{"group.method": callable}``.  Two plugins returning
        the same method name is a start-up error naming both.
    """
