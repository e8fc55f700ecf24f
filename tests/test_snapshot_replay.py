"""Recording host input and replaying it: a replayed session ends in the
identical state (whole-state hash, registers, memory, frame) in turbo and
at speed 1, whatever cycles the input came in at; live input during a replay
is dropped; a machine that is not where the recording starts is refused."""

import json
import os
import subprocess
import sys

import pytest

from pypc_core.machine import Machine, MachineConfig
from pypc_core.scheduler import CPU_HZ
from pypc_core.snapshot import SnapshotError
from pypc_core.snapshot.replay import state_sha256

import snapshot_support as T

HERE = os.path.dirname(os.path.abspath(__file__))


def plugin_available(name):
    import importlib.metadata as md
    return any(e.name == name for e in md.entry_points(group="pypc.devices"))


def typing_session(m, serial=False):
    """Input at frame ends and at odd cycles in between (about 0.6 s)."""
    m.start_recording()
    T.run_frames(m, 3)
    m.type_text("dir\r")
    m.run_for(12_345)
    m.press_keys([0x1E, 0x9E])             # 'a'
    if serial:
        m.devices["uart"].write_input(b"AT\r")
    T.run_frames(m, 12)
    m.run_for(777)
    m.type_text("ver\r")
    T.run_frames(m, 20)
    rec = m.stop_recording()
    return rec, T.fingerprint(m)


@pytest.mark.parametrize("speed", [0.0, 1.0])
def test_replay_ends_identical_in_turbo_and_at_speed_1(speed):
    rec, end = typing_session(T.start_guest(T.make_machine()))
    assert [e["kind"] for e in rec["events"]] == ["keys", "keys", "keys"]
    m = T.start_guest(T.make_machine())
    result = m.replay(rec, speed=speed)
    assert result["identical"], result
    assert result["divergence"] is None and result["clock"] == rec["end"]["clock"]
    assert T.fingerprint(m) == end
    assert bytes(m.memory.mem[T.LOAD + 0x42:T.LOAD + 0x4A]) == b"dir\raver"   # what the guest read
    m.close()


@pytest.mark.skipif(not plugin_available("uart"), reason="no UART card installed")
def test_serial_input_is_recorded_and_replayed():
    rec, end = typing_session(T.start_guest(T.make_machine(("cga", "uart"))), serial=True)
    assert any(e["kind"] == "serial" and e["device"] == "uart" for e in rec["events"])
    m = T.start_guest(T.make_machine(("cga", "uart")))
    result = m.replay(rec)
    assert result["identical"], result
    assert T.fingerprint(m) == end
    m.close()


@pytest.mark.skipif(not plugin_available("gameport"), reason="no game-port card installed")
def test_joystick_moves_are_recorded_and_replayed():
    def run(m):
        m.start_recording()
        T.run_frames(m, 2)
        m.devices["gameport"].set_joystick(0, 0.75, -0.5, [True, False])
        m.run_for(3333)
        m.devices["gameport"].set_joystick(0, -1.0, 1.0, [False, False])
        T.run_frames(m, 3)
        return m.stop_recording(), T.fingerprint(m)
    rec, end = run(T.start_guest(T.make_machine(("cga", "gameport"))))
    assert [e["kind"] for e in rec["events"]] == ["joystick", "joystick"]
    m = T.start_guest(T.make_machine(("cga", "gameport")))
    result = m.replay(rec, speed=2.0)
    assert result["identical"], result
    assert T.fingerprint(m) == end
    m.close()


def test_live_input_during_a_replay_is_dropped():
    rec, end = typing_session(T.start_guest(T.make_machine()))
    m = T.start_guest(T.make_machine())
    from pypc_core.snapshot.replay import Replayer
    rp = Replayer(m, rec)
    T.run_frames(m, 2)
    m.type_text("zzz")                    # a key from the terminal, say
    while m.clock() < rp.end:
        m.run_until_cycle(rp.end)
    result = rp.finish()
    assert result["identical"] and result["dropped_live_inputs"] == 1
    m.type_text("q")                       # after the replay, input works again
    assert m.keyboard.typing_pending()
    m.close()


def test_a_replay_must_start_where_the_recording_did(tmp_path):
    rec, _ = typing_session(T.start_guest(T.make_machine()))
    m = T.start_guest(T.make_machine())
    m.run_for(10)
    with pytest.raises(SnapshotError) as exc:
        m.replay(rec)
    assert exc.value.check == "replay_start"
    other = T.start_guest(T.make_machine(("vga",))) if plugin_available("vga") else None
    if other is not None:
        with pytest.raises(SnapshotError) as exc:
            other.replay(rec)
        assert exc.value.check == "configuration"
        other.close()
    bad = dict(rec, events=[dict(rec["events"][0], cycle=-5)])
    with pytest.raises(SnapshotError):
        m.replay(bad)
    m.close()


def test_a_recording_from_a_snapshot_replays_after_loading_it(tmp_path):
    m = T.start_guest(T.make_machine())
    T.run_frames(m, 4)
    snap = m.save(str(tmp_path / "start.zip"), progress=None)
    rec, end = typing_session(m)
    path = str(tmp_path / "session.json")
    with open(path, "w") as fh:
        json.dump(rec, fh)
    m2 = T.make_machine()                    # powered on elsewhere, then loaded
    m2.load(snap["path"], expected_sha256=snap["sha256"], progress=None)
    result = m2.replay(path)
    assert result["identical"], result
    assert T.fingerprint(m2) == end
    m.close()
    m2.close()


def test_built_in_dos_session_with_dir_type_and_a_program_replays(tmp_path):
    from pypc_core.dos import DosConfig
    folder = tmp_path / "c"
    folder.mkdir()
    (folder / "README.TXT").write_bytes(b"hello from the host\r\n")
    with open(os.path.join(HERE, "guest", "dos", "child.com"), "rb") as fh:
        (folder / "CHILD.COM").write_bytes(fh.read())   # a program to run

    def machine():
        return Machine(MachineConfig(plugins=["cga"], dos=DosConfig(drives={"C": str(folder)})))
    m = machine()
    assert m.run_until_text("C:\\>", timeout_s=20)
    m.start_recording()
    m.type_text("dir\r")
    m.run_seconds(1.5)
    m.type_text("type readme.txt\r")
    m.run_seconds(1.5)
    m.type_text("child xyzzy\r")
    m.run_seconds(1.5)
    rec = m.stop_recording()
    assert m.screen_contains("README") and m.screen_contains("hello from the host")
    assert m.screen_contains("xyzzy") and m.screen_contains("CHILD.COM")
    end = T.fingerprint(m)
    m.close()
    for speed in (0.0, 4.0):
        r = machine()
        assert r.run_until_text("C:\\>", timeout_s=20)
        # the recording started a little later: run to its first cycle first
        r.run_until_cycle(rec["start"]["clock"])
        result = r.replay(rec, speed=speed)
        assert result["identical"], result
        assert T.fingerprint(r) == end
        r.close()


def test_command_line_record_then_replay(tmp_path):
    rec = tmp_path / "keys.json"
    snap = tmp_path / "end.zip"
    base = [sys.executable, "-m", "pypc_core.cli", "run", "--no-rpc", "--no-viewers", "--headless", "--plugins",
            "cga"]
    first = subprocess.run(base + ["--turbo", "--timeout", "2", "--type", r"abc\r",
                                   "--record", str(rec), "--save-snapshot", str(snap)],
                           capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    recording = json.loads(rec.read_text())
    assert recording["events"] and recording["end"]["clock"] >= 2 * CPU_HZ
    assert "saved" in first.stderr and snap.exists()
    again = subprocess.run(base + ["--speed", "3", "--replay", str(rec)],
                           capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert "replay ended in the recorded state" in again.stderr
    assert again.stdout == first.stdout
    bad = subprocess.run(base + ["--replay", str(rec), "--type", "x"],
                         capture_output=True, text=True, timeout=600)
    assert bad.returncode == 2 and "--replay" in bad.stderr
    exists = subprocess.run(base + ["--turbo", "--timeout", "1", "--record", str(rec)],
                            capture_output=True, text=True, timeout=600)
    assert exists.returncode == 2 and "already exists" in exists.stderr
    # continue from the saved snapshot
    cont = subprocess.run(base + ["--turbo", "--timeout", "0.5", "--load-snapshot", str(snap)],
                          capture_output=True, text=True, timeout=600)
    assert cont.returncode == 0, cont.stderr
