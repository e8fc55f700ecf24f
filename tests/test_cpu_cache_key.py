"""The core's numba cache is thrown away when state.py (whose constants the
core freezes into machine code) or numba changes, not only core.py."""

from pypc_core.cpu import cache_key


def test_a_changed_state_module_invalidates_the_cached_core(tmp_path, monkeypatch):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    (tmp_path / "core.py").write_text("# core\n")
    (tmp_path / "state.py").write_text("C_CYCLES = 0\n")
    cache = tmp_path / "__pycache__"
    cache.mkdir()
    monkeypatch.setattr(cache_key, "_HERE", str(tmp_path))
    stale = [cache / "core.run-1.py311.nbi", cache / "core.run-1.py311.1.nbc"]
    other = cache / "pit.cpython-311.pyc"
    for f in stale + [other]:
        f.write_bytes(b"x")

    cache_key.invalidate_if_stale()                 # no key yet: start clean
    assert not any(f.exists() for f in stale) and other.exists()
    for f in stale:
        f.write_bytes(b"x")                         # compiled again
    cache_key.invalidate_if_stale()                 # same sources: cache kept
    assert all(f.exists() for f in stale)

    (tmp_path / "state.py").write_text("C_CYCLES = 1\n")
    cache_key.invalidate_if_stale()                 # constants moved: recompile
    assert not any(f.exists() for f in stale) and other.exists()
