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


def test_a_module_is_recompiled_when_a_file_it_inlines_changes(tmp_path, monkeypatch):
    # a card's planar.py inlines bus/journal.py's log_append: an edit of
    # journal.py (not of planar.py, which numba checks) throws planar's cache away
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    mod = tmp_path / "planar.py"
    dep = tmp_path / "journal.py"
    mod.write_text("# planar\n")
    dep.write_text("ENTRY_WORDS = 5\n")
    cache = tmp_path / "__pycache__"
    cache.mkdir()
    stale = [cache / "planar.journaled_write-487.py311.nbi",
             cache / "planar.journaled_write-487.py311.1.nbc"]
    others = [cache / "journal.log_append-60.py311.nbi", cache / "core.run-1.py311.nbi"]

    def compiled():
        for f in stale + others:
            f.write_bytes(b"x")

    compiled()
    cache_key.invalidate_if_stale(str(mod), depends=(str(dep),))       # no key yet
    assert not any(f.exists() for f in stale) and all(f.exists() for f in others)
    compiled()
    cache_key.invalidate_if_stale(str(mod), depends=(str(dep),))       # unchanged: kept
    assert all(f.exists() for f in stale)
    dep.write_text("ENTRY_WORDS = 2\n")
    cache_key.invalidate_if_stale(str(mod), depends=(str(dep),))       # the layout moved
    assert not any(f.exists() for f in stale) and all(f.exists() for f in others)
