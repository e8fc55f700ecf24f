"""The debugger's data: breakpoints, conditions, stops and the instruction
trace.  ``Machine`` owns one table of breakpoints and one trace
(``m.breakpoints``, ``m.trace``) and its run methods return a :class:`Stop`;
the JSON-RPC methods, the session API and the console are thin adapters over
this package.  It sits below the machine (the machine owns its breakpoints)
and above the CPU, whose flags it arms.

Its modules, each on the ones below it only (a contract in pyproject.toml):

* ``breakpoints`` -- :class:`Breakpoint` and :class:`BreakpointTable`: the
  kinds, their validation, hit filters and how they are armed in the core;
  ``stops`` -- :class:`Stop`, why a run returned; ``trace`` --
  :class:`Trace`, the instruction trace the core records;
* ``conditions`` -- breakpoint conditions: the parser and the evaluator;
* ``addresses`` -- numbers and addresses (``parse_number``,
  ``parse_address``);
* ``errors`` -- :class:`BreakpointError`.

Every public name is importable from here (``from pypc_core.debugger import
BreakpointError``), as the docs and callers do.
"""

from .errors import BreakpointError
from .addresses import MEM_TOP, parse_address, parse_number
from .conditions import CMP_OPS, OP_NAMES, REG8, REG16, condition_text, evaluate, parse_condition
from .breakpoints import KIND_ALIASES, KINDS, Breakpoint, BreakpointTable
from .stops import STOP_KINDS, Stop
from .trace import EFFECT_KINDS, MAX_TRACE, REG_ORDER, TRACE_KINDS, Trace

__all__ = [
    "BreakpointError",
    "MEM_TOP", "parse_address", "parse_number",
    "CMP_OPS", "OP_NAMES", "REG8", "REG16", "condition_text", "evaluate", "parse_condition",
    "KIND_ALIASES", "KINDS", "Breakpoint", "BreakpointTable",
    "STOP_KINDS", "Stop",
    "EFFECT_KINDS", "MAX_TRACE", "REG_ORDER", "TRACE_KINDS", "Trace",
]
