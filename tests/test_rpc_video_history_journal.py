"""video.history journals video memory write by write (issue 22 point 1,
C323-C327), over a real server and socket with the raw JSON-lines client
of ``rpc_client`` (no pypc client code): two writes to one byte between
polls are two events in order, capacity edges, unchanged bytes, guest REP
STOSW within one slice on a CGA and a VGA, VGA font-plane writes, a mode
change between writes, and a history across a snapshot import."""

import base64

import pytest

from pypc_rpc_methods.video_history import History
from rpc_client import RpcFixture

CODE = 0x1000
TEXT = 0xB8000


@pytest.fixture(scope="module")
def cga():
    f = RpcFixture(plugins=["cga"])
    yield f
    f.close()


@pytest.fixture(scope="module")
def vga():
    f = RpcFixture(plugins=["vga"])
    yield f
    f.close()


def client(fx):
    c = fx.client()
    c.call("execution.pause")
    old = fx.controller.parts.get(History)
    if old is not None and old.active:
        c.call("video.history.stop")
    return c


@pytest.fixture
def c(cga):
    cl = client(cga)
    yield cl
    cl.close()
    cga.clients.remove(cl)


@pytest.fixture
def v(vga):
    cl = client(vga)
    yield cl
    cl.close()
    vga.clients.remove(cl)


def b64(data):
    return base64.b64encode(bytes(data)).decode("ascii")


def write(c, address, data):
    c.call("memory.write", {"address": address, "data_base64": b64(data)})


def set_csip(c, cs, ip):
    r = c.call("state.get")
    guard = {"cs": r["segments"]["cs"], "ip": r["ip"], "ss": r["segments"]["ss"],
             "sp": r["general"]["sp"], "flags": r["flags"]}
    c.call("state.set_registers", {"expected_state_revision": r["state_revision"],
                                   "expected": guard,
                                   "set": {"cs": cs, "ip": ip, "ss": 0x3000, "sp": 0xFFF0,
                                           "flags": 0x0002}})


def run_code(c, code):
    """Run ``code`` (ending in ``jmp $``) at 1000:0000 until the jump."""
    assert code[-2:] == b"\xEB\xFE"
    write(c, CODE << 4, code)
    set_csip(c, CODE, 0)
    bp = c.call("breakpoints.create", {"address": {
        "space": "segmented", "segment": CODE, "offset": len(code) - 2}})
    op = c.call("execution.continue")["operation_id"]
    done = c.call("execution.wait", {"operation_id": op, "timeout_ms": 30000})
    c.call("breakpoints.delete", {"breakpoint_id": bp["breakpoint_id"]})
    assert done["state"] == "stopped" and done["stop_reason"]["kind"] == "breakpoint", done


def parked(c):
    """Paused at a ``jmp $`` (interrupts off)."""
    run_code(c, bytes.fromhex("EBFE"))


def events(c, cursor=None, limit=4096):
    return c.call("video.history.read", {"cursor": cursor, "limit": limit})


def triples(evs, kinds=("text",)):
    return [(e["address"], e["old"], e["new"]) for e in evs if e["kind"] in kinds]


def cga_text(c):
    c.call("io.write", {"port": 0x3D8, "value": 0x29})


# -- RPC writes between polls ---------------------------------------------------------

def test_two_writes_to_one_byte_are_two_events_in_order(c):
    cga_text(c)
    parked(c)
    write(c, TEXT, b"\x70")
    clock = c.call("state.get")["clock"]
    h = c.call("video.history.start", {"capacity": 16})
    write(c, TEXT, b"\x41")
    write(c, TEXT, b"\x42")
    page = events(c)
    assert [(e["kind"], e["address"], e["old"], e["new"]) for e in page["events"]] == \
        [("text", 0, 0x70, 0x41), ("text", 0, 0x41, 0x42)]
    assert [e["sequence"] for e in page["events"]] == [h["first_sequence"],
                                                       h["first_sequence"] + 1]
    assert all(e["clock"] == clock for e in page["events"])   # paused: the clock then
    assert page["lost_events"] == 0 and page["next_cursor"] is None
    assert c.call("video.history.stop") == {"history_id": h["history_id"], "events": 2,
                                            "lost_events": 0}


def test_a_write_that_does_not_change_the_byte_is_no_event(c):
    cga_text(c)
    parked(c)
    write(c, TEXT + 2, b"\x33")
    c.call("video.history.start", {"capacity": 16})
    write(c, TEXT + 2, b"\x33")
    write(c, TEXT + 0x4002, b"\x33")         # the alias at BC000h: the same byte
    assert events(c)["events"] == []
    write(c, TEXT + 0x4002, b"\x34")         # a change through the alias
    assert triples(events(c)["events"]) == [(2, 0x33, 0x34)]
    assert base64.b64decode(c.call("memory.read", {"address": TEXT + 2, "length": 1})[
        "data_base64"]) == b"\x34"
    c.call("video.history.stop")


def test_capacity_two_keeps_the_last_two_of_three(c):
    cga_text(c)
    parked(c)
    write(c, TEXT, b"\x70")
    c.call("video.history.start", {"capacity": 2})
    for b in (0x41, 0x42, 0x43):
        write(c, TEXT, bytes([b]))
    page = events(c)
    assert [e["sequence"] for e in page["events"]] == [2, 3]
    assert triples(page["events"]) == [(0, 0x41, 0x42), (0, 0x42, 0x43)]
    assert page["first_available_sequence"] == 2 and page["lost_events"] == 1
    err = c.error("video.history.read", {"cursor": 0})
    assert err["code"] == -32602 and err["data"]["reason"] == "CURSOR_EXPIRED"
    out = c.call("video.history.stop")
    assert (out["events"], out["lost_events"]) == (3, 1)


def test_capacity_three_keeps_three_though_its_ring_has_four_rows(c):
    # the ring underneath holds a power of two rows (4 for a capacity of 3):
    # what is kept and lost still follows the capacity asked for
    cga_text(c)
    parked(c)
    write(c, TEXT, b"\x70")
    c.call("video.history.start", {"capacity": 3})
    for b in (0x41, 0x42, 0x43, 0x44, 0x45):
        write(c, TEXT, bytes([b]))
    page = events(c)
    assert [e["sequence"] for e in page["events"]] == [3, 4, 5]
    assert triples(page["events"]) == [(0, 0x42, 0x43), (0, 0x43, 0x44), (0, 0x44, 0x45)]
    assert page["first_available_sequence"] == 3 and page["lost_events"] == 2
    err = c.error("video.history.read", {"cursor": 1})
    assert err["code"] == -32602 and err["data"]["reason"] == "CURSOR_EXPIRED"
    assert [e["sequence"] for e in events(c, cursor=3)["events"]] == [4, 5]
    out = c.call("video.history.stop")
    assert (out["events"], out["lost_events"]) == (5, 2)


def test_capacity_one(c):
    cga_text(c)
    parked(c)
    write(c, TEXT, b"\x70")
    c.call("video.history.start", {"capacity": 1})
    write(c, TEXT, b"\x41\x42")               # two bytes: two events, one kept
    page = events(c)
    assert [(e["sequence"], e["address"], e["new"]) for e in page["events"]] == [(2, 1, 0x42)]
    assert page["lost_events"] == 1
    assert c.call("video.history.stop")["events"] == 2


# -- guest writes within one slice -------------------------------------------------

# mov ax,B800h / mov es,ax / mov byte [es:0],41h / mov byte [es:0],42h /
# xor di,di / mov ax,0743h / mov cx,3 / rep stosw / mov byte [es:1],1Eh / jmp $
GUEST = bytes.fromhex("B800B8 8EC0 26C606000041 26C606000042 31FF B84307 B90300 F3AB "
                      "26C60601001E EBFE")


def guest_expectations(first0, first1):
    return [(0, first0, 0x41), (0, 0x41, 0x42), (0, 0x42, 0x43), (1, first1, 0x07),
            (2, 0x20, 0x43), (3, 0x07, 0x07), (4, 0x20, 0x43), (5, 0x07, 0x07),
            (1, 0x07, 0x1E)]


def test_guest_writes_are_journaled_write_by_write_on_a_cga(c):
    cga_text(c)
    parked(c)
    write(c, TEXT, bytes([0x70, 0x17, 0x20, 0x07, 0x20, 0x07]))
    c.call("video.history.start")
    run_code(c, GUEST)
    page = events(c)
    want = [t for t in guest_expectations(0x70, 0x17) if t[1] != t[2]]
    assert triples(page["events"]) == want
    clocks = [e["clock"] for e in page["events"] if e["kind"] == "text"]
    assert clocks == sorted(clocks) and clocks[-1] <= c.call("state.get")["clock"]
    assert page["lost_events"] == 0
    c.call("video.history.stop")


def test_no_history_no_journal_and_the_window_is_plain_ram_again(cga, c):
    # the core journals the CGA's RAM itself (PG_JOURNAL pages: no handler
    # call per write), and stopping gives back the page table exactly
    from pypc_core.cpu.state import PG_HANDLER, PG_JOURNAL
    mm = cga.machine.memory
    pf = mm.page_flags
    before = mm.page_table.copy()
    assert not any(pf[p] & (PG_HANDLER | PG_JOURNAL) for p in range(0xB8, 0xC0))
    c.call("video.history.start")
    assert all(pf[p] & PG_JOURNAL for p in range(0xB8, 0xC0))
    assert not any(pf[p] & PG_HANDLER for p in range(0xB8, 0xC0))
    c.call("video.history.stop")
    assert (mm.page_table == before).all()


def test_a_mode_change_between_writes(c):
    # graphics memory is not journaled: a write in a graphics mode is an
    # event only when the card is back in a text mode, after the mode event
    cga_text(c)
    parked(c)
    write(c, TEXT, b"\x70")
    c.call("video.history.start")
    write(c, TEXT, b"\x41")
    c.call("io.write", {"port": 0x3D8, "value": 0x2A})      # 320x200 graphics
    write(c, TEXT, b"\x42")
    write(c, TEXT, b"\x43")
    assert triples(events(c)["events"]) == [(0, 0x70, 0x41)]
    c.call("io.write", {"port": 0x3D8, "value": 0x29})      # text again
    evs = events(c)["events"]
    assert [(e["kind"], e["address"], e["old"], e["new"]) for e in evs
            if e["kind"] != "port"] == [
        ("text", 0, 0x70, 0x41), ("mode", 0x2A, 40, 0), ("mode", 0x29, 80, 0),
        ("text", 0, 0x41, 0x43)]
    write(c, TEXT, b"\x44")
    assert triples(events(c)["events"])[-1] == (0, 0x43, 0x44)
    c.call("video.history.stop")


def test_wide_port_and_mode_fields_come_back_whole(c):
    # a word OUT's value and a display address above FFh do not fit the
    # byte fields of a logged memory write: they come back as written
    cga_text(c)
    parked(c)
    c.call("io.write", {"port": 0x3D4, "value": 0x0D})                  # start low 0
    c.call("io.write", {"port": 0x3D5, "value": 0x00})
    write(c, TEXT + 0x3FFF, b"\x00")
    write(c, TEXT + 4, b"\x20")
    c.call("video.history.start")
    write(c, TEXT + 0x3FFF, b"\x5A")
    # mov dx,3D4h / mov ax,170Ch / out dx,ax (start high 17h) / jmp $
    run_code(c, bytes.fromhex("BAD403 B80C17 EF EBFE"))
    write(c, TEXT + 4, b"\x61")
    evs = events(c)["events"]
    assert [(e["kind"], e["address"], e["old"], e["new"]) for e in evs] == [
        ("text", 0x3FFF, 0, 0x5A), ("port", 0x3D4, 2, 0x170C),
        ("mode", 0x29, 80, 0x2E00), ("text", 4, 0x20, 0x61)]
    c.call("io.write", {"port": 0x3D4, "value": 0x0C})
    c.call("io.write", {"port": 0x3D5, "value": 0x00})
    c.call("video.history.stop")


def test_vga_text_guest_writes_and_font_plane_writes(v):
    run_code(v, bytes([0xB8, 0x03, 0x00, 0xCD, 0x10, 0xEB, 0xFE]))   # mode 3
    write(v, TEXT, bytes([0x70, 0x17, 0x20, 0x07, 0x20, 0x07]))
    h = v.call("video.history.start")
    run_code(v, GUEST)
    page = events(v)
    want = [t for t in guest_expectations(0x70, 0x17) if t[1] != t[2]]
    assert triples(page["events"]) == want
    font = base64.b64decode(h["font_base64"])
    # plane 2 alone (sequencer map mask 4, odd/even off, GC read map 2 /
    # mode 0 / misc A0000h), then two writes to one font byte, then text again
    fontcode = bytes.fromhex(
        "BAC403 B80204 EF B80406 EF"          # seq 2 = 04h, seq 4 = 06h
        "BACE03 B80402 EF B80500 EF B80604 EF"  # gc 4 = 02h, gc 5 = 00h, gc 6 = 04h
        "B800A0 8EC0 26C606200055 26C6062000AA"  # [A000:0020] = 55h then AAh
        "BAC403 B80203 EF B80402 EF"          # seq 2 = 03h, seq 4 = 02h
        "BACE03 B80410 EF B8060E EF"          # gc 5 = 10h, gc 6 = 0Eh
        "EBFE")
    mark = page["next_sequence"] - 1
    run_code(v, fontcode)
    later = events(v, mark)["events"]
    want = [(0x20, font[0x20], 0x55), (0x20, 0x55, 0xAA)]
    assert triples(later, ("font",)) == [t for t in want if t[1] != t[2]]
    assert triples(later) == []
    v.call("video.history.stop")


def test_vga_firmware_writes_are_journaled_in_order(v):
    # INT 10h AH=09h writes the character through the card's firmware (Python)
    run_code(v, bytes([0xB8, 0x03, 0x00, 0xCD, 0x10, 0xEB, 0xFE]))
    v.call("video.history.start")
    # mov byte [es:0],41h (CPU) / mov ax,0942h / mov bx,0007h / mov cx,1 / int 10h (firmware
    # writes 'B' at the cursor, 0:0) / mov byte [es:0],43h / jmp $
    run_code(v, bytes.fromhex("B800B8 8EC0 26C606000041 B84209 BB0700 B90100 CD10 "
                              "26C606000043 EBFE"))
    evs = events(v)["events"]
    assert [(a, n) for a, o, n in triples(evs) if a == 0] == [(0, 0x41), (0, 0x42), (0, 0x43)]
    v.call("video.history.stop")


def test_a_history_across_a_snapshot_import(cga, c, tmp_path):
    cga_text(c)
    parked(c)
    write(c, TEXT, b"\x70")
    rev = c.call("session.status")["state_revision"]
    out = c.call("machine.snapshot.export", {"path": str(tmp_path / "m.zip"),
                                             "expected_state_revision": rev})
    h = c.call("video.history.start")
    write(c, TEXT, b"\x41")
    rev = c.call("session.status")["state_revision"]
    c.call("machine.snapshot.import", {"path": out["path"], "disk_root": str(tmp_path / "d"),
                                       "expected_sha256": out["sha256"],
                                       "expected_state_revision": rev})
    err = c.error("video.history.read", {"history_id": h["history_id"]})
    assert err["code"] == -32602
    # the restored machine records nothing until a new start, then write by write
    from pypc_core.cpu.state import PG_HANDLER
    assert not any(cga.machine.memory.page_flags[p] & PG_HANDLER for p in range(0xB8, 0xC0))
    h2 = c.call("video.history.start", {"capacity": 4})
    assert base64.b64decode(h2["vram_base64"])[0] == 0x70
    write(c, TEXT, b"\x42")
    write(c, TEXT, b"\x43")
    assert triples(events(c)["events"]) == [(0, 0x70, 0x42), (0, 0x42, 0x43)]
    c.call("video.history.stop")


def test_the_vga_window_gets_its_own_handler_back(vga, v):
    from pypc_core.cpu.state import PAGE_COUNT, PT_CTX, PT_FN
    table = vga.machine.memory.page_table
    pages = range(0xA0, 0xC0)
    before = [(int(table[p]), int(table[PT_FN + p]), int(table[PT_CTX + p])) for p in pages]
    v.call("video.history.start")
    assert all(int(table[PT_FN + p]) != before[i][1] for i, p in enumerate(pages))
    v.call("video.history.stop")
    after = [(int(table[p]), int(table[PT_FN + p]), int(table[PT_CTX + p])) for p in pages]
    assert after == before and PAGE_COUNT == 256


# -- exact clocks ----------------------------------------------------------------------

def boundary_clocks(c, code, count):
    """The clock at each of the first ``count`` instruction boundaries of
    ``code`` at 1000:0000, stepped one instruction at a time (a REP string
    is one step), relative to the first."""
    write(c, CODE << 4, code)
    set_csip(c, CODE, 0)
    clocks = []
    for _ in range(count):
        clocks.append(c.call("state.get")["clock"])
        op = c.call("execution.step")["operation_id"]
        assert c.call("execution.wait", {"operation_id": op})["stop_reason"]["kind"] == "step"
    return [k - clocks[0] for k in clocks]


def run_from(c, code):
    """``run_code``, returning the clock it started at."""
    write(c, CODE << 4, code)
    set_csip(c, CODE, 0)
    start = c.call("state.get")["clock"]
    bp = c.call("breakpoints.create", {"address": {
        "space": "segmented", "segment": CODE, "offset": len(code) - 2}})
    op = c.call("execution.continue")["operation_id"]
    done = c.call("execution.wait", {"operation_id": op, "timeout_ms": 30000})
    c.call("breakpoints.delete", {"breakpoint_id": bp["breakpoint_id"]})
    assert done["stop_reason"]["kind"] == "breakpoint", done
    return start


@pytest.mark.parametrize("card", ["cga", "vga"])
def test_a_guest_writes_clock_is_the_cycle_its_instruction_began_at(card, request):
    # GUEST's writes: instructions 2 and 3 (MOV byte), 7 (REP STOSW, three
    # iterations) and 8 (MOV byte); the events come from one continue, so
    # their clocks can only be right if each write carries its own cycle
    x = request.getfixturevalue("c" if card == "cga" else "v")
    if card == "cga":
        cga_text(x)
    else:
        run_code(x, bytes([0xB8, 0x03, 0x00, 0xCD, 0x10, 0xEB, 0xFE]))   # mode 3
    parked(x)
    screen = bytes([0x70, 0x17, 0x20, 0x07, 0x20, 0x07])
    write(x, TEXT, screen)
    b = boundary_clocks(x, GUEST, 10)
    write(x, TEXT, screen)
    x.call("video.history.start")
    start = run_from(x, GUEST)
    evs = [e for e in events(x)["events"] if e["kind"] == "text"]
    x.call("video.history.stop")
    rel = [(e["address"], e["old"], e["new"], e["clock"] - start) for e in evs]
    assert rel[0] == (0, 0x70, 0x41, b[2])
    assert rel[1] == (0, 0x41, 0x42, b[3])
    assert rel[-1] == (1, 0x07, 0x1E, b[8])
    # REP STOSW: each iteration's bytes share the iteration's cycle; the
    # iterations are equally spaced inside the instruction
    rep = rel[2:-1]
    assert [(a, o, n) for a, o, n, _ in rep] == [
        t for t in guest_expectations(0x70, 0x17)[2:-1] if t[1] != t[2]]
    per_iteration = {}
    for a, _, _, clock in rep:
        per_iteration.setdefault(a // 2, set()).add(clock)
    assert all(len(v) == 1 for v in per_iteration.values())
    it = [per_iteration[k].pop() for k in sorted(per_iteration)]
    assert sorted(per_iteration) == [0, 1, 2]
    assert b[7] < it[0] < it[1] < it[2] < b[8]
    assert it[1] - it[0] == it[2] - it[1]


def test_a_write_early_in_a_long_run_is_stamped_with_its_own_cycle(c):
    # a write near the start of a long run: its clock is its instruction's,
    # not the clock at the end of the run or of a slice
    cga_text(c)
    parked(c)
    write(c, TEXT, b"\x70")
    # mov ax,B800h / mov es,ax / mov byte [es:0],41h / mov cx,4000h / loop $ / jmp $
    code = bytes.fromhex("B800B8 8EC0 26C606000041 B90040 E2FE EBFE")
    b = boundary_clocks(c, code, 3)
    write(c, TEXT, b"\x70")
    c.call("video.history.start")
    start = run_from(c, code)
    end = c.call("state.get")["clock"]
    (e,) = [e for e in events(c)["events"] if e["kind"] == "text"]
    c.call("video.history.stop")
    assert (e["old"], e["new"], e["clock"] - start) == (0x70, 0x41, b[2])
    assert end - start > 16 * 0x4000               # the loop ran long after it
