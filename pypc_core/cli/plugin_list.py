"""``pypc plugins [NAME] [--json]``: the discovered plugins, what each card
claims on a scratch board, their hooks, a card's power-on state."""

import json
import sys


def cmd_plugins(args):
    from ..plugins import DEVICE_GROUP, RPC_GROUP, PluginManager, UnknownPluginError
    pm = PluginManager()
    name = getattr(args, "name", None)
    if name is not None:
        if name not in pm.available(DEVICE_GROUP) and name not in pm.available(RPC_GROUP):
            every = sorted(set(pm.available(DEVICE_GROUP)) | set(pm.available(RPC_GROUP)))
            import difflib
            close = difflib.get_close_matches(name, every, n=1)
            raise UnknownPluginError(
                f"no plugin {name!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
                + f"; installed: {', '.join(every)}")
        infos = pm.describe(names=[name], states=True)
    else:
        infos = pm.describe()
    if args.json:
        out = [dict(i.as_dict(), **(i.state_dict() if name else {})) for i in infos]
        print(json.dumps(out, indent=2))
    elif name is not None:
        _print_plugin_detail(infos)
    else:
        _print_plugin_table(infos)
    failed = [i for i in infos if i.error]
    for info in failed:
        sys.stderr.write(f"pypc plugins: {info.group}:{info.name}: {info.error}\n")
    return 1 if failed else 0



def _claim_lines(info):
    """What a card claimed on its scratch board (else what it declares),
    one claim a line, with spaces after commas so a narrow column wraps
    between port ranges."""
    parts = info.attached or [d.describe() or "-" for d in info.declarations]
    return [p.replace(",", ", ") for a in parts for p in a.split("; ")]


def _print_plugin_table(infos):
    """Two tables (device plugins, RPC method groups) that fit 80 columns:
    a device's claims, or in red why it failed to load or attach."""
    from rich import box
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table
    from ..plugins import DEVICE_GROUP

    console = Console()
    if not infos:
        console.print("no plugins found (entry-point groups pypc.devices, pypc.rpc_methods)")
        return
    for group, title, third in ((DEVICE_GROUP, "device plugins (pypc.devices)", "claims"),
                                (None, "RPC method groups (pypc.rpc_methods)", "methods")):
        rows = [i for i in infos if (i.group == DEVICE_GROUP) == (group is not None)]
        if not rows:
            continue
        table = Table(title=title, box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0),
                      pad_edge=False, title_justify="left")
        table.add_column("name", no_wrap=True)
        table.add_column("from", max_width=18)
        table.add_column(third, ratio=3, overflow="fold")
        table.add_column("hooks", ratio=2, overflow="fold")
        for info in rows:
            origin = f"{info.distribution} {info.version}"
            if group is not None:
                body = "\n".join(escape(line) for line in _claim_lines(info))
            else:
                body = ", ".join(info.methods)
            if info.attach_error and not info.error:
                body = (body + "\n" if body else "") + \
                    f"[red]attach failed: {escape(info.attach_error)}[/red]"
            if info.error:
                body = f"[red]error: {escape(info.error)}[/red]"
            hooks = ", ".join(h.removeprefix("pypc_") for h in info.hooks)
            table.add_row(escape(info.name), escape(origin), body or "-", hooks or "-")
        console.print(table)


def _short(value, limit=72):
    """A card's state for the terminal: long strings (a RAM image in
    base64) and long lists shortened, saying how long they are."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:24]}... ({len(value)} characters)"
    if isinstance(value, list) and len(value) > 16:
        return [_short(v) for v in value[:8]] + [f"... ({len(value)} items)"]
    if isinstance(value, list):
        return [_short(v) for v in value]
    if isinstance(value, dict):
        return {k: _short(v) for k, v in value.items()}
    return value


def _print_plugin_detail(infos):
    """``pypc plugins NAME``: one plugin, its claims, hooks, methods,
    errors and each card's state after ``reset()``."""
    from rich.console import Console
    from rich.markup import escape
    console = Console()
    for info in infos:
        console.print(f"[bold]{escape(info.name)}[/bold]  ({info.group}, {escape(info.module)}, "
                      f"from {escape(info.distribution)} {escape(info.version)})")
        if info.error:
            console.print(f"  [red]error: {escape(info.error)}[/red]")
        if info.declarations:
            console.print("  declares: " + escape("; ".join(
                d.describe() or "-" for d in info.declarations)))
        for line in info.attached:
            console.print(f"  claimed on a scratch board: {escape(line)}")
        if info.attach_error:
            console.print(f"  [red]attach failed: {escape(info.attach_error)}[/red]")
        if info.hooks:
            console.print("  hooks: " + ", ".join(info.hooks))
        if info.methods:
            console.print("  methods: " + ", ".join(info.methods))
        for device, state in info.states.items():
            console.print(f"  state of {escape(device)} after reset():")
            text = json.dumps(_short(state), indent=2, sort_keys=True)
            console.print("\n".join("    " + escape(line) for line in text.splitlines()),
                          soft_wrap=True)
        if info.state_error:
            console.print(f"  [red]state: {escape(info.state_error)}[/red]")
