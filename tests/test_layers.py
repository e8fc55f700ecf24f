"""The layering written as import-linter contracts ([tool.importlinter] in
pyproject.toml): the layers below the machine, the layers above it (machine
< rpc < clients < frontends, console, mcp < cli), method groups independent
of each other, plugins and method groups on the public API only.  A change
that breaks one fails here with import-linter's own report.  And no module
imports itself through others: no import cycle anywhere (grimp's graph, the
one import-linter checks, lazy imports inside functions included)."""

import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ("pypc_core", "pypc_plugins", "pypc_rpc_methods")


def test_the_import_contracts_hold():
    # the lint-imports beside this interpreter (its venv's), else one on PATH
    exe = os.path.join(os.path.dirname(sys.executable), "lint-imports")
    if not os.path.exists(exe):
        exe = shutil.which("lint-imports") or exe
    if not os.path.exists(exe):
        pytest.fail("lint-imports is not installed: pip install -e '.[test]'")
    proc = subprocess.run([exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


def import_cycles(imports):
    """The strongly connected components of more than one module of
    ``imports`` ({module: modules it imports}), each sorted (Tarjan's
    algorithm, iterative)."""
    index, low, on_stack, stack, cycles = {}, {}, set(), [], []
    for root in sorted(imports):
        if root in index:
            continue
        work = [(root, iter(sorted(imports[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(imports.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        cycles.append(sorted(component))
    return cycles


def test_the_cycle_finder_finds_cycles():
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == []
    assert sorted(import_cycles({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c", "a"}})) == [
        ["a", "b"], ["c", "d"]]


def test_no_import_cycle():
    import grimp            # import-linter's graph (it comes with import-linter)
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    imports = {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}
    assert import_cycles(imports) == []
