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
