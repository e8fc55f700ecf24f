"""Packaging: import names, the README's commands and .ci/run agree."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ci_runs_exactly_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    first_block = re.match(r"```\w*\n(.*?)\n```", readme, re.S)
    assert first_block, "README.md must open with the newcomer's commands"
    commands = [line.split("#")[0].strip() for line in first_block.group(1).splitlines()]
    assert len(commands) == 2
    ci = (ROOT / ".ci" / "run").read_text()
    ci_command = re.search(r'^TEST_COMMAND="(.*)"$', ci, re.M).group(1)
    assert ci_command == commands[1]


def test_import_names_from_another_directory(tmp_path):
    """The installed packages import from anywhere; no generic `plugins` name."""
    code = ("import importlib.util as u, pypc_core, pypc_plugins, pypc_rpc_methods;"
            "print(u.find_spec('plugins') is None, u.find_spec('rpc_methods') is None)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "True"]


def test_the_schemas_are_a_data_package_of_the_one_folder():
    """schemas/ at the top stays the one source: installed as pypc_schemas
    (in a wheel too: .ci/wheel_check), read through importlib.resources."""
    import importlib.resources
    from pypc_core.rpc import schemas
    folder = importlib.resources.files("pypc_schemas")
    assert Path(str(folder)).resolve() == ROOT / "schemas"
    assert Path(str(schemas.schema_dir())).resolve() == ROOT / "schemas"
    assert "memory.read" in schemas.load_method_schemas()


def test_ci_checks_the_wheel_before_the_test_command():
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert "bash .ci/wheel_check" in ci
    assert ci.index("bash .ci/wheel_check") < ci.index('bash -c "$TEST_COMMAND"')
