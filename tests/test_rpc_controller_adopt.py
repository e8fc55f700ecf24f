"""A machine the controller adopts while its loop is running (a session's
program machine, made by a request) runs at full speed at once: the loop
carries the cycles it still had to go over to the new machine's clock.

It compared the old machine's clock with a target on that clock, so a run
started on the new machine within the same loop call went one cycle a
slice, for ever (a whole-suite run of test_rpc_session_stop.py hung so)."""

from pypc_core.machine import Machine, MachineConfig
from pypc_core.rpc.controller import Controller
from pypc_core.rpc.server import collect_methods
from rpc_client import Client, served, warm_up_core

CPU_NS = 1_000_000_000


def test_a_run_started_on_an_adopted_machine_inside_the_loop_finishes(tmp_path):
    warm_up_core()
    first = Machine(MachineConfig(plugins=["cga"]))
    second = Machine(MachineConfig(plugins=["cga"]))
    second.run_seconds(2)                    # its clock far ahead of the first's
    ctl = Controller(first)

    def adopt_and_run(controller, params):
        # one request: the adoption and a run on the new machine, so both
        # happen inside the loop call that began on the first machine
        controller.adopt(second)
        return controller.call("execution.run_until", {"max_emulated_ns": CPU_NS})
    adopt_and_run.rpc_schema = {"params": {"type": "object"}, "result": {"type": "object"}}
    methods = collect_methods(first.plugin_manager)
    methods["test.adopt_and_run"] = adopt_and_run
    with served(ctl, methods) as srv:
        cl = Client(srv.port)
        try:
            clock = second.clock()
            op = cl.call("test.adopt_and_run", {})["operation_id"]
            # one emulated second in turbo: well under a host second; one
            # cycle a slice would take minutes
            out = cl.call("execution.wait", {"operation_id": op, "timeout_ms": 20000})
            assert out["state"] == "stopped", out
            assert out["stop_reason"]["kind"] == "emulated_time_limit"
            assert second.clock() >= clock + 4_000_000
        finally:
            cl.close()
    first.close()
    second.close()
