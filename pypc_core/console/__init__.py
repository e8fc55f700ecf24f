"""``pypc console``: a TUI debugger (Textual) attached to a pypc over JSON-RPC.

* :mod:`.session` -- what the panes show and the DEBUG-style commands, over
  the generated client (no UI)
* :mod:`.app`     -- the Textual application (docs/console.md)
"""
