"""docs/debugging.md: every Python block runs, in order, in one namespace."""

import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
DOC = os.path.join(os.path.dirname(HERE), "docs", "debugging.md")


def test_every_example_in_the_debugging_guide_runs(capsys):
    with open(DOC) as fh:
        text = fh.read()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 6
    namespace = {}
    for i, block in enumerate(blocks):
        exec(compile(block, f"{DOC} block {i + 1}", "exec"), namespace)
    out = capsys.readouterr().out
    assert "0100  b90500     mov cx,0x5" in out
    assert "refused:" in out and "instructions traced" in out
    assert "main+0x3   call 0x10a <bump>" in out
    assert "breakpoint main+0x8 count+0x1" in out
