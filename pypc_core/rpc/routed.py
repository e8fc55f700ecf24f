"""A JSON-RPC server for a machine whose own runs go through the controller
(:meth:`~pypc_core.machine.Machine.route_runs`): a loop that holds the
machine (a DOS program's, ``--bare --gdb``'s) serves requests between
slices and holds the guest while a client has it paused.  ``pypc run``
starts one (:func:`pypc_core.cli.rpc.start`); the gdb stub routes its runs
the same way (:func:`routed_runner`)."""

from ..debugger import Stop
from .controller import Controller, PAUSED_POLL_S
from .server import RpcServer, collect_methods


def routed_runner(controller):
    """A runner for ``Machine.route_runs``: the machine's runs go through
    ``controller``, which serves requests between slices; a run that a
    request paused reports a pause stop."""
    machine = controller.machine

    def run_until_cycle(target):
        controller.run_until_cycle(target, wall_timeout=PAUSED_POLL_S)
        return Stop("budget" if controller.running else "pause", machine.clock())
    return run_until_cycle


class RoutedServer:
    """The running server of a machine whose runs route through its
    controller; :meth:`close` stops it and gives the machine its own run
    loop back."""

    def __init__(self, machine, port, socket_path=None, token=None):
        self.machine = machine
        self.controller = Controller(machine)
        self.server = RpcServer(self.controller, collect_methods(machine.plugin_manager),
                                port, socket_path=socket_path, token=token)
        self.server.start()
        machine.route_runs(routed_runner(self.controller))

    @property
    def port(self):
        return self.server.port

    def close(self):
        self.machine.route_runs(None)
        self.server.close()
