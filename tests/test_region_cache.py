"""The region cache (pypc_core/cpu/region_cache.py): a region translated
again -- by another machine in this process or by another process -- links
the object code kept the first time instead of compiling, ends in exactly the
interpreter's machine, and a damaged, foreign or unwritable cache is never
more than a miss."""

import hashlib
import os
import subprocess
import sys
import textwrap

import pytest

from pypc_core.cpu import region_cache, translator
from pypc_core.cpu import state as S

from test_translator import EAGER, assert_same, machine_state, make_cpu

# the standard loop (see test_translator): an outer loop of 3 over 16 rounds
LOOP = bytes.fromhex(
    "BB1000BA3412BD0300B91000BE02008B0401D0355A5A8940022A5401889400014681FE0003"
    "7503BE0002E2E34D75DAF4")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_loop(cache, seed=7):
    cpu = make_cpu(LOOP, seed, dict(EAGER, slice_cycles=2000, cache=cache))
    assert cpu.run(1 << 40) == S.EXIT_HALT
    return cpu


def interpreted(seed=7):
    cpu = make_cpu(LOOP, seed)
    assert cpu.run(1 << 40) == S.EXIT_HALT
    return machine_state(cpu)


def object_files(folder):
    return sorted(os.path.join(d, f) for d, _, files in os.walk(folder)
                  for f in files if f.endswith(".o"))


def test_a_second_machine_links_what_the_first_compiled(tmp_path):
    cache = region_cache.RegionCache(translator.recipe(), str(tmp_path))
    first = run_loop(cache)
    stats = first.translator.stats()
    assert stats["cache_hits"] == 0 and cache.misses == stats["translated"] >= 1
    assert len(object_files(tmp_path)) == cache.misses
    second = run_loop(cache)
    assert second.translator.stats()["cache_hits"] == second.translator.stats()["translated"]
    assert second.translator.stats()["translated_instructions"] > 0
    assert_same(machine_state(second), interpreted())
    assert (second.instructions, second.cycles) == (first.instructions, first.cycles)


def test_another_process_finds_the_regions_on_disk(tmp_path):
    run_loop(region_cache.RegionCache(translator.recipe(), str(tmp_path)))
    script = textwrap.dedent(f"""
        import sys, json
        sys.path[:0] = [{ROOT!r}, {os.path.join(ROOT, 'tests')!r}]
        from test_region_cache import run_loop
        cpu = run_loop({str(tmp_path)!r})
        st = cpu.translator.stats()
        print(json.dumps([st["cache_hits"], st["translated"], st["translated_instructions"],
                          list(map(int, cpu.regs)), cpu.cycles]))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=300, env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    import json
    hits, translated, executed, regs, cycles = json.loads(out.stdout.splitlines()[-1])
    assert hits == translated >= 1 and executed > 0
    here = make_cpu(LOOP, 7)
    here.run(1 << 40)
    assert regs == list(map(int, here.regs)) and cycles == here.cycles


def test_the_same_loop_sampled_anywhere_is_one_region(tmp_path):
    # blockgen's IR is canonical: entered at the loop's lowest IP, value
    # names counted per function, so each sample point finds the same key
    code = bytes.fromhex("B90010" "40" "43" "01D8" "E2FA" "F4")  # mov cx; L: inc ax; inc bx; add ax,bx; loop L; hlt
    cache = region_cache.RegionCache(translator.recipe(), str(tmp_path))
    for ip in (0x103, 0x104, 0x105, 0x107):
        cpu = make_cpu(code, 3, dict(EAGER, cache=cache))
        region = cpu.translator.translate(0x1000, ip)
        assert region.key == (0x1000, 0x103)
    assert cache.misses == 1 and cache.hits == 3
    assert len(object_files(tmp_path)) == 1


def test_a_damaged_or_foreign_file_is_a_miss_and_goes(tmp_path):
    run_loop(region_cache.RegionCache(translator.recipe(), str(tmp_path)))
    files = object_files(tmp_path)
    assert files
    with open(files[0], "r+b") as fh:          # one byte of the payload flipped
        fh.seek(60)
        b = fh.read(1)
        fh.seek(60)
        fh.write(bytes([b[0] ^ 0xFF]))
    for path in files[1:]:
        with open(path, "wb") as fh:              # a torn write
            fh.write(region_cache.MAGIC)
    fresh = region_cache.RegionCache(translator.recipe(), str(tmp_path))
    cpu = run_loop(fresh)
    assert fresh.errors == len(files) and fresh.disk_hits == 0
    assert cpu.translator.stats()["cache_hits"] == 0
    assert_same(machine_state(cpu), interpreted())
    # compiled again and written whole
    again = region_cache.RegionCache(translator.recipe(), str(tmp_path))
    run_loop(again)
    assert again.errors == 0 and again.disk_hits >= 1


def test_an_unwritable_folder_only_costs_the_cache(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    cache = region_cache.RegionCache(translator.recipe(), str(blocker / "cache"))
    cpu = run_loop(cache)
    assert cache.errors >= 1
    assert cpu.translator.stats()["translated_instructions"] > 0
    assert_same(machine_state(cpu), interpreted())
    assert blocker.read_text() == "not a folder"


def test_another_recipe_is_another_key():
    a = region_cache.RegionCache("recipe A")
    b = region_cache.RegionCache("recipe B")
    assert a.key("define void @f()") != b.key("define void @f()")
    assert a.key("x") != a.key("y")


def test_the_folder_stays_under_its_limit_and_keeps_the_recent(tmp_path):
    cache = region_cache.RegionCache("r", str(tmp_path), limit_bytes=10_000)
    keys = [hashlib.sha256(b"%d" % i).hexdigest() for i in range(30)]
    for i, key in enumerate(keys):
        cache.put(key, bytes([i]) * 1000)
        os.utime(cache._path(key), (1_000_000 + i, 1_000_000 + i))   # written in order
    total = sum(os.path.getsize(p) for p in object_files(tmp_path))
    assert total <= 10_000
    fresh = region_cache.RegionCache("r", str(tmp_path))
    assert fresh.get(keys[-1]) == bytes([29]) * 1000       # the newest stays
    assert fresh.get(keys[0]) is None                       # the oldest went


def test_memory_keeps_at_most_its_limit():
    cache = region_cache.RegionCache("r", None, memory_limit=3000)
    for i in range(10):
        cache.put(str(i), bytes(1000))
    assert cache.stats()["memory_bytes"] <= 3000
    assert cache.get("9") is not None and cache.get("0") is None


@pytest.mark.parametrize("value", ["off", "", "OFF", "0"])
def test_the_environment_turns_the_cache_off(monkeypatch, value):
    monkeypatch.setenv(region_cache.ENV, value)
    assert region_cache.default_directory() is None
    cpu = make_cpu(LOOP, 7, dict(EAGER))
    assert cpu.translator.cache is None


def test_the_default_folder_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv(region_cache.ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert region_cache.default_directory() == str(tmp_path / "pypc" / "translations")


def test_a_bad_cache_option_is_refused():
    with pytest.raises(ValueError, match="translator cache"):
        make_cpu(LOOP, 7, dict(EAGER, cache=42))
