"""The CPU trace has one event per CPU Tick, as the contract says:
``instruction``, ``hlt`` (a halted CPU waiting) and ``interrupt_dispatch``
(a PIC interrupt entered), over the real RPC server.

The guest (loaded through memory.write) makes the PIT fire IRQ 0 every
1,024 PIT clocks and halts in a loop::

    1000:0000  FA        cli
    1000:0001  B0 34     mov al, 34h      ; channel 0, lo/hi, mode 2
    1000:0003  E6 43     out 43h, al
    1000:0005  B0 00     mov al, 0
    1000:0007  E6 40     out 40h, al
    1000:0009  B0 04     mov al, 4        ; divisor 0400h
    1000:000B  E6 40     out 40h, al
    1000:000D  FB        sti
    1000:000E  F4        hlt              <- waits here
    1000:000F  EB FD     jmp 000Eh
"""

import base64

import pytest

from rpc_client import RpcFixture

SEG = 0x1000
STACK_SEG, STACK_TOP = 0x2000, 0x1000
GUEST = bytes.fromhex("FA B034 E643 B000 E640 B004 E640 FB F4 EBFD")
AFTER_HLT = 0x0F
COUNT = 400


def seg(off):
    return {"space": "segmented", "segment": SEG, "offset": off}


def load_guest(c):
    """GUEST at SEG:0000, CS:IP there and SS:SP on a stack of its own."""
    c.call("memory.write", {"address": seg(0),
                            "data_base64": base64.b64encode(GUEST).decode()})
    r = c.call("state.get")
    c.call("state.set_registers", {
        "expected_state_revision": r["state_revision"],
        "expected": {"cs": r["segments"]["cs"], "ip": r["ip"],
                     "ss": r["segments"]["ss"], "sp": r["general"]["sp"]},
        "set": {"cs": SEG, "ip": 0, "ss": STACK_SEG, "sp": STACK_TOP}})


@pytest.fixture(scope="module")
def trace():
    """The events of one trace of COUNT Ticks from the guest's first
    instruction, and the IRQ 0 handler address from the vector table."""
    fx = RpcFixture()
    try:
        c = fx.client()
        c.call("execution.pause")
        # three emulated seconds: the BIOS has set up the PIC, the PIT and
        # the vector table and waits for a key ("No bootable disk")
        op = c.call("execution.run_until", {
            "predicate": {"kind": "execution", "address": seg(0x30)},   # never reached
            "max_emulated_ns": 3_000_000_000})["operation_id"]
        stop = c.call("execution.wait", {"operation_id": op, "timeout_ms": 60000})
        assert stop["stop_reason"]["kind"] == "emulated_time_limit", stop
        load_guest(c)
        vector = base64.b64decode(c.call("memory.read", {"address": 0x20,
                                                         "length": 4})["data_base64"])
        handler = (int.from_bytes(vector[2:], "little"), int.from_bytes(vector[:2], "little"))
        revision = c.call("state.get")["state_revision"]
        assert c.call("trace.start", {"detail": "long", "instruction_count": COUNT})["active"]
        op = c.call("execution.run_until", {
            "predicate": {"kind": "execution", "address": seg(0x30)},   # never reached
            "max_emulated_ns": 50_000_000})["operation_id"]
        done = c.call("execution.wait", {"operation_id": op, "timeout_ms": 60000})
        assert done["state"] == "stopped", done
        events, cursor = [], None
        while True:
            page = c.call("trace.read", {"cursor": cursor, "limit": 256})
            events += page["events"]
            cursor = page.get("next_cursor")
            if cursor is None:
                break
        assert page["active"] is False and page["event_count"] == COUNT
        ticks = c.call("state.get")["state_revision"] - revision
        yield events, handler, ticks
    finally:
        fx.close()


def test_every_tick_is_one_event_of_the_three_kinds(trace):
    events, _, _ = trace
    assert [e["sequence"] for e in events] == list(range(COUNT))
    kinds = {e["kind"] for e in events}
    assert kinds == {"instruction", "hlt", "interrupt_dispatch"}
    for a, b in zip(events, events[1:]):        # the clock runs on without a gap
        assert a["clock_after"] == b["clock_before"]
        assert a["clock_delta"] == a["clock_after"] - a["clock_before"]
        assert a["registers_after"]["ip"] == b["registers_before"]["ip"]
        assert a["registers_after"]["segments"] == b["registers_before"]["segments"]


def test_the_run_took_at_least_the_traced_ticks(trace):
    events, _, ticks = trace
    # state_revision rises once per Tick and the trace ended inside the run,
    # so the run took at least the trace's Ticks (a bound only: the exact
    # count is test_the_revision_rises_once_per_traced_tick)
    assert ticks >= COUNT


def test_a_hlt_event_is_the_waiting_context_and_only_time(trace):
    events, _, _ = trace
    waits = [e for e in events if e["kind"] == "hlt"]
    assert waits
    for e in waits:
        assert e["address"] == {"space": "segmented", "segment": SEG, "offset": AFTER_HLT}
        assert e["physical"] == (SEG << 4) + AFTER_HLT
        assert e["opcode_hex"].startswith("ebfd")
        assert e["clock_delta"] > 0
        assert e["effects"] == []
        before, after = dict(e["registers_before"]), dict(e["registers_after"])
        before.pop("clock"), after.pop("clock")
        # a wait is a Tick: the revision rises by one, nothing else changes
        assert after.pop("state_revision") == before.pop("state_revision") + 1
        assert before == after and before["in_hlt"] is True
    # each wait follows the HLT instruction or another wait
    for i, e in enumerate(events):
        if e["kind"] == "hlt":
            prev = events[i - 1] if i else None
            assert prev is None or prev["kind"] == "hlt" or (
                prev["kind"] == "instruction" and prev["opcode_hex"].startswith("f4"))


def test_an_interrupt_dispatch_event(trace):
    events, handler, _ = trace
    dispatches = [i for i, e in enumerate(events) if e["kind"] == "interrupt_dispatch"]
    assert len(dispatches) >= 2
    for i in dispatches:
        e = events[i]
        assert e["interrupt"] == {"source": "pic", "irq": 0, "vector": 8}
        # the interrupted context: the halted loop, after its HLT
        assert e["address"]["offset"] == AFTER_HLT and e["address"]["segment"] == SEG
        assert e["registers_before"]["ip"] == AFTER_HLT
        assert e["clock_delta"] == 71                        # the 8088's interrupt entry
        sp = e["registers_before"]["general"]["sp"]
        stack = (STACK_SEG << 4) + sp
        writes = [x for x in e["effects"] if x["kind"] == "memory_write"]
        reads = [x for x in e["effects"] if x["kind"] == "memory_read"]
        assert [x["kind"] for x in e["effects"]] == ["memory_write"] * 6 + ["memory_read"] * 4
        assert sorted(x["address"]["offset"] for x in writes) == list(range(stack - 6, stack))
        assert [x["address"]["offset"] for x in reads] == [0x20, 0x21, 0x22, 0x23]
        pushed = {x["address"]["offset"]: base64.b64decode(x["after_base64"])[0] for x in writes}
        ip = pushed[stack - 6] | pushed[stack - 5] << 8
        cs = pushed[stack - 4] | pushed[stack - 3] << 8
        assert (cs, ip) == (SEG, AFTER_HLT)                  # the return address
        after = e["registers_after"]
        assert (after["segments"]["cs"], after["ip"]) == handler
        assert not after["flags"] & 0x0200                   # IF cleared on entry
        assert after["general"]["sp"] == sp - 6
        nxt = events[i + 1]
        assert nxt["kind"] == "instruction"
        assert (nxt["address"]["segment"], nxt["address"]["offset"]) == handler


def test_the_revision_rises_once_per_traced_tick():
    """Property: state_revision rises by one per CPU Tick (COMPAT Common)
    and the trace records one event per Tick, so over a run the trace does
    not fill, the two counts are equal -- HLT waits and interrupt entries
    included."""
    fx = RpcFixture()
    try:
        c = fx.client()
        c.call("execution.pause")
        op = c.call("execution.run_until", {"max_emulated_ns": 3_000_000_000})["operation_id"]
        c.call("execution.wait", {"operation_id": op, "timeout_ms": 60000})
        load_guest(c)
        before = c.call("state.get")["state_revision"]
        c.call("trace.start", {"detail": "csip", "instruction_count": 65536})
        op = c.call("execution.run_until", {"max_emulated_ns": 20_000_000})["operation_id"]
        c.call("execution.wait", {"operation_id": op, "timeout_ms": 60000})
        events = c.call("trace.stop")["event_count"]
        after = c.call("state.get")["state_revision"]
        assert 100 < events < 65536             # waits, entries and instructions, not full
        assert after - before == events
    finally:
        fx.close()
