"""What a breakpoint spec of the contract means -- the params of
``breakpoints.create`` and the predicate of ``execution.run_until`` -- turned
into a breakpoint of the machine's table (``Machine.breakpoints``).  Shared
by the method groups that take such specs; the gdb stub goes through the
methods themselves (``Controller.call``)."""

from ..debugger import BreakpointError
from ..symbols import SymbolError
from . import params as P
from .errors import invalid
from .stops import BreakpointMeta

KINDS = {"execution": "exec", "memory_read": "mem_read", "memory_write": "mem_write",
         "memory_access": "mem_access", "interrupt": "int"}
REGISTERS = ("ax", "bx", "cx", "dx", "sp", "bp", "si", "di", "cs", "ds", "es", "ss",
             "ip", "flags")
OPERATORS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def _condition(spec):
    register = spec["register"]
    if register not in REGISTERS:
        raise invalid(f"condition.register must be one of {', '.join(REGISTERS)}",
                      field="condition.register")
    operator = spec["operator"]
    if operator not in OPERATORS:
        raise invalid(f"condition.operator must be one of {', '.join(OPERATORS)}",
                      field="condition.operator")
    value = P.number(spec["value"], "condition.value", 0, 0xFFFF)
    return {"register": register, "operator": operator, "value": value}


def build(ctl, spec, rpc_id, predicate=False):
    """Validate ``spec`` (breakpoints.create params or a run_until
    predicate) and add it to the machine's table.  Returns (bp, meta);
    raises before anything is added."""
    kind = spec.get("kind", "execution")
    if kind not in KINDS:
        raise invalid(f"kind must be one of {', '.join(KINDS)}", field="kind")
    once = P.boolean(spec.get("once", False), "once")
    hf = spec.get("hit_filter", {})
    skip = P.number(hf.get("skip", 0), "hit_filter.skip", 0, (1 << 63) - 1)
    every = P.number(hf.get("every", 1), "hit_filter.every", 1, (1 << 63) - 1)
    condition = _condition(spec["condition"]) if "condition" in spec else None
    meta = BreakpointMeta(rpc_id=rpc_id, kind=kind, once=once, skip=skip, every=every,
                          condition=condition, predicate=predicate)
    args = {}
    cond_parts = []
    if kind == "interrupt":
        for key in ("address", "length"):
            if key in spec:
                raise invalid(f"an interrupt breakpoint takes event, not {key}", field=key)
        if "event" not in spec:
            raise invalid("an interrupt breakpoint needs event {type, number[, ah, al]}",
                          field="event")
        ev = spec["event"]
        if ev.get("type", "software_interrupt") != "software_interrupt":
            raise invalid("event.type must be software_interrupt", field="event.type")
        event = {"type": "software_interrupt",
                 "number": P.number(ev["number"], "event.number", 0, 0xFF)}
        for reg in ("ah", "al"):
            if ev.get(reg) is not None:
                event[reg] = P.number(ev[reg], f"event.{reg}", 0, 0xFF)
                args[reg] = event[reg]
        meta.event = event
        args["number"] = event["number"]
    else:
        if "event" in spec:
            raise invalid("event belongs to interrupt breakpoints", field="event")
        if "address" not in spec or not isinstance(spec["address"], dict):
            raise invalid("address must be an address object {space, offset[, segment]} "
                          "or {symbol}", field="address")
        linear, norm = P.address(resolve_address(ctl, spec["address"]))
        if kind == "execution":
            if "length" in spec and P.number(spec["length"], "length", 0, 1 << 20) != 1:
                raise invalid("an execution breakpoint has length 1", field="length")
            length = 1
        else:
            if norm["space"] == "physical":
                raise invalid("memory breakpoints take linear or segmented addresses",
                              field="address.space")
            if condition is not None:
                raise invalid("memory breakpoints take no condition", field="condition")
            length = P.number(spec.get("length", 1), "length", 1, 1 << 20)
            P.block(linear, length)
        if norm["space"] == "segmented" and kind == "execution":
            cond_parts.append(f"cs == {norm['segment']:#x} and ip == {norm['offset']:#x}")
        meta.address = norm
        meta.length = length
        args["address"] = linear
        args["length"] = length
    if condition is not None:
        cond_parts.append(f"{condition['register']} {OPERATORS[condition['operator']]} "
                          f"{condition['value']:#x}")
    try:
        bp = ctl.machine.breakpoints.add(
            KINDS[kind], condition=" and ".join(f"({c})" for c in cond_parts) or None,
            ignore=skip, every=every, oneshot=once or predicate, **args)
    except BreakpointError as exc:
        raise invalid(str(exc)) from None
    ctl.bp_meta[bp.id] = meta
    return bp, meta


def resolve_address(ctl, address, field="address"):
    """An address object ``{"symbol": "name+0x10"}`` as a segmented address
    object (other addresses unchanged); an unknown name is -32602."""
    if isinstance(address, dict) and "symbol" in address:
        if set(address) != {"symbol"} or not isinstance(address["symbol"], str):
            raise invalid(f"{field}: a symbol address is exactly {{\"symbol\": NAME}}",
                          field=field)
        try:
            seg, off = ctl.machine.symbols.resolve(address["symbol"])
        except SymbolError as exc:
            raise invalid(f"{field}: {exc}", field=f"{field}.symbol") from None
        return {"space": "segmented", "segment": int(seg), "offset": int(off)}
    return address
