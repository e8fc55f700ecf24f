"""The plugin manager: entry-point discovery, ``--plugins`` selection, tracing.

Every plugin -- the built-in ``cga`` as much as a third party's -- is a module
named by an entry point of an installed distribution:

* group ``pypc.devices``: device plugins.  Only the ones selected with
  ``--plugins a,b`` (:meth:`PluginManager.select`) are imported and
  registered; the rest are merely listed.
* group ``pypc.rpc_methods``: JSON-RPC method groups.  All of them are
  registered by :meth:`PluginManager.register_rpc_methods`, except those
  turned off with :meth:`PluginManager.disable_rpc_methods`
  (``pypc run --rpc-methods -NAME``).

A selection is either a list (``"cga,vga"``: exactly these) or changes to
the defaults (``"+postcard,-uart"``: the defaults plus ``postcard``, without
``uart``): :func:`resolve_names`.

A plugin that raises in a hook is named: the exception becomes a
:class:`PluginHookError` (``plugin 'x' failed in hook pypc_device_create:
ValueError: ...``) chained to the original, whose traceback ``PYPC_DEBUG=1``
prints.

Nothing is special-cased: a name that is not an entry point does not exist.

Typical use by the machine::

    pm = PluginManager()                       # discovers entry points
    pm.select(resolve_names("+mydev", DEFAULT_DEVICES))   # UnknownPluginError if unknown
    pm.add_cli_options(parser)                 # pypc_cli_add_options
    for name, device in pm.create_devices(machine):   # pypc_device_create
        device.attach(machine.backplane.board(device.declaration))
    pm.machine_ready(machine)                  # pypc_machine_ready

``PYPC_TRACE_PLUGINS=1`` in the environment writes every registration and
hook call (with its arguments and results) to stderr, using pluggy's
hook-call monitoring.
"""

import difflib
import importlib.metadata
import inspect
import os
import sys

import attrs
import pluggy

from . import hookspecs
from .device import Device, DeviceDeclaration
from .errors import PypcError

DEVICE_GROUP = "pypc.devices"
#: the device plugins of a default machine (``pypc run`` without --plugins)
DEFAULT_DEVICES = ("cga", "fdc", "uart")
RPC_GROUP = "pypc.rpc_methods"
GROUPS = (DEVICE_GROUP, RPC_GROUP)
TRACE_ENV = "PYPC_TRACE_PLUGINS"

_HOOK_PREFIX = "pypc_"


class PluginError(PypcError):
    """A plugin could not be found, loaded or used."""


class UnknownPluginError(PluginError):
    """``--plugins`` named a plugin that no installed distribution provides."""


class PluginLoadError(PluginError):
    """A plugin's module failed to import, or its hooks are malformed."""


class PluginHookError(PluginError):
    """A plugin raised in one of its hooks (or in ``Device.attach``).

    ``plugin`` is its entry-point name, ``group`` its entry-point group,
    ``hook`` the hook (``pypc_device_create``...) or ``Device.attach``; the
    original exception is ``__cause__`` (``PYPC_DEBUG=1`` prints its
    traceback)."""

    def __init__(self, plugin, group, hook, exc, where=""):
        self.plugin, self.group, self.hook = plugin, group, hook
        hint = ""
        if group == RPC_GROUP:
            hint = f" (turn the group off with --rpc-methods -{plugin})"
        super().__init__(f"plugin {plugin!r} failed in {_hook_words(hook)}{where}: "
                         f"{type(exc).__name__}: {exc}{hint}")


def _hook_words(hook):
    return hook if not hook.startswith(_HOOK_PREFIX) else f"hook {hook}"


@attrs.define
class PluginSource:
    """One discovered entry point (nothing imported yet)."""
    name: str
    group: str
    value: str                      # "module" or "module:attr"
    distribution: str
    version: str
    entry_point: object = attrs.field(repr=False, eq=False)
    shadowed: list = attrs.Factory(list)   # other distributions using the name

    @property
    def key(self):
        """The name the plugin is registered under in pluggy."""
        return f"{self.group}:{self.name}"


@attrs.define
class PluginInfo:
    """What ``pypc plugins`` shows about one plugin."""
    name: str
    group: str
    module: str
    distribution: str
    version: str
    declarations: list = attrs.Factory(list)   # of DeviceDeclaration
    hooks: list = attrs.Factory(list)          # implemented pypc_* hook names
    error: str = None
    attached: list = attrs.Factory(list)       # what each device claimed on a board
    attach_error: str = None                   # why it could not be attached alone
    methods: list = attrs.Factory(list)        # RPC methods (pypc_rpc_methods)
    states: dict = attrs.Factory(dict)         # device name -> get_state() after reset()
    state_error: str = None                    # why reset() or get_state() failed

    def state_dict(self):
        """``{"states": {device: state}, "state_error": ...}`` (``pypc
        plugins NAME --json``)."""
        return {"states": dict(self.states), "state_error": self.state_error}

    def claims(self):
        return " | ".join(d.describe() or "-" for d in self.declarations)

    def as_dict(self):
        return {
            "name": self.name, "group": self.group, "module": self.module,
            "distribution": self.distribution, "version": self.version,
            "claims": [
                {"name": d.name, "ports": sorted(d.ports), "irqs": list(d.irqs),
                 "dma_channels": list(d.dma_channels),
                 "memory": [{"base": w.base, "size": w.size, "kind": w.kind}
                            for w in d.memory],
                 "capabilities": list(d.capabilities)}
                for d in self.declarations],
            "attached": list(self.attached),
            "attach_error": self.attach_error,
            "methods": list(self.methods),
            "hooks": list(self.hooks),
            "error": self.error,
        }


class _PluggyManager(pluggy.PluginManager):
    """pluggy's manager, also accepting unmarked ``pypc_*`` functions as hook
    implementations (as pytest does for ``pytest_*``), so a forgotten
    ``@hookimpl`` is never a silently ignored hook."""

    def parse_hookimpl_opts(self, plugin, name):
        opts = super().parse_hookimpl_opts(plugin, name)
        if opts is None and name.startswith(_HOOK_PREFIX):
            method = getattr(plugin, name, None)
            if inspect.isroutine(method):
                opts = {"wrapper": False, "hookwrapper": False,
                        "optionalhook": False, "tryfirst": False,
                        "trylast": False, "specname": None}
        return opts


def _new_pluggy():
    pm = _PluggyManager(hookspecs.PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    return pm


def discover(groups=GROUPS):
    """Read the entry points of ``groups`` from the installed distributions.

    :return: ``{group: {name: PluginSource}}``.  When two distributions use
        one name, the first on ``sys.path`` wins and the others are listed in
        ``PluginSource.shadowed`` (selecting that name is then an error).
    """
    found = {group: {} for group in groups}
    everything = importlib.metadata.entry_points()      # one scan of the installed distributions
    described = {}      # id(dist) -> (name, version): each reads and parses its METADATA
    for group in groups:
        for ep in everything.select(group=group):
            dist = getattr(ep, "dist", None)
            if dist is None:
                dist_name = version = "?"
            else:
                if id(dist) not in described:
                    described[id(dist)] = (dist.name, dist.version)
                dist_name, version = described[id(dist)]
            known = found[group].get(ep.name)
            if known is not None:
                if known.distribution != dist_name:
                    known.shadowed.append(dist_name)
                continue
            found[group][ep.name] = PluginSource(
                name=ep.name, group=group, value=ep.value,
                distribution=dist_name, version=version, entry_point=ep)
    return found


def resolve_names(spec, defaults, kind="device plugin", available=None):
    """The plugin names a selection ``spec`` stands for.

    ``spec`` is a list of names (``"cga,vga"``: exactly these) or a list of
    changes to ``defaults``, every item signed: ``+NAME`` adds a plugin,
    ``-NAME`` removes one (``"+postcard,-uart"``).  A list or tuple of
    names is taken the same way.  Nonsense is a :class:`PluginError` with
    one line: a list mixing names and changes, ``+NAME`` of a default,
    ``-NAME`` of a plugin that is not a default, an empty name, a name given
    twice.  ``available`` (the installed names, optional) makes ``-NAME`` of
    an unknown plugin an :class:`UnknownPluginError` suggesting the closest.

    :return: the list of names, defaults first in their order.
    """
    items = parse_names(spec)
    signed = [i for i in items if i[:1] in "+-"]
    if not signed:
        return items
    shown = spec if isinstance(spec, str) else ",".join(spec)
    if len(signed) != len(items):
        raise PluginError(
            f"{kind}s {shown!r}: give either the plugins (e.g. cga,fdc) or changes "
            f"to the defaults ({','.join(defaults) or 'none'}), each signed "
            f"(e.g. +postcard,-uart), not both")
    out = list(defaults)
    seen = set()
    for item in items:
        sign, name = item[0], item[1:].strip()
        if not name:
            raise PluginError(f"{kind}s {shown!r}: {item!r} names no plugin")
        if name in seen:
            raise PluginError(f"{kind}s {shown!r}: {name!r} is named twice")
        seen.add(name)
        if sign == "+":
            if name in defaults:
                raise PluginError(f"{kind}s {shown!r}: {name!r} is already a default "
                                  f"({','.join(defaults)})")
            out.append(name)
        else:
            if name not in defaults:
                if available is not None and name not in available:
                    group = RPC_GROUP if kind.startswith("RPC") else DEVICE_GROUP
                    raise UnknownPluginError(_unknown_message(name, group, available))
                raise PluginError(f"{kind}s {shown!r}: cannot remove {name!r}: it is not "
                                  f"a default ({','.join(defaults) or 'there are none'})")
            out.remove(name)
    return out


def parse_names(names):
    """``"a, b,,c"`` or ``["a", "b"]`` -> ``["a", "b", ...]`` (order kept,
    empty names skipped).  A name given twice is a :class:`PluginError`."""
    if names is None:
        return []
    given = names
    if isinstance(names, str):
        names = names.split(",")
    out = []
    for name in names:
        name = name.strip()
        if name in out:
            raise PluginError(f"plugin {name!r} is named twice in {given!r}; "
                              f"select each plugin once")
        if name:
            out.append(name)
    return out


class PluginManager:
    """pypc's plugin manager (a thin layer over ``pluggy.PluginManager``).

    :param trace: log hook calls to stderr; default from ``PYPC_TRACE_PLUGINS``.
    """

    def __init__(self, trace=None):
        self.pm = _new_pluggy()
        self.hook = self.pm.hook
        self.sources = discover()
        self.selected = []            # device plugin names, in selection order
        self.disabled_rpc = []        # RPC method groups turned off by name
        self.rpc_method_owners = {}   # method -> plugin key, from rpc_methods()
        self._rpc_table = None        # (plugin keys, rpc_methods()) once computed
        self._modules = {}            # PluginSource.key -> module
        if trace is None:
            trace = os.environ.get(TRACE_ENV, "") not in ("", "0")
        self.tracing = bool(trace)
        if self.tracing:
            self.pm.trace.root.setwriter(_stderr_writer)
            self.pm.enable_tracing()

    # -- discovery -----------------------------------------------------------
    def available(self, group=DEVICE_GROUP):
        """Sorted names of the discovered plugins of ``group``."""
        return sorted(self.sources[group])

    def source(self, name, group=DEVICE_GROUP):
        try:
            return self.sources[group][name]
        except KeyError:
            raise UnknownPluginError(_unknown_message(
                name, group, self.available(group))) from None

    def load(self, name, group=DEVICE_GROUP):
        """Import the plugin's module (or object) named by its entry point."""
        src = self.source(name, group)
        if src.shadowed:
            raise PluginError(
                f"{_KIND[group]} plugin {name!r} is provided by more than one "
                f"distribution: {', '.join([src.distribution] + src.shadowed)}; "
                f"uninstall one of them")
        module = self._modules.get(src.key)
        if module is None:
            try:
                module = src.entry_point.load()
            except Exception as exc:   # any import-time failure of a plugin
                hint = (f" (turn the group off with --rpc-methods -{name})"
                        if group == RPC_GROUP else "")
                raise PluginLoadError(
                    f"{_KIND[group]} plugin {name!r} ({src.value}, from "
                    f"{src.distribution} {src.version}) failed to load: "
                    f"{type(exc).__name__}: {exc}{hint}") from exc
            self._modules[src.key] = module
        return module

    # -- registration ----------------------------------------------------------
    def _register(self, src, module):
        if self.pm.get_plugin(src.key) is not None or self.pm.is_registered(module):
            return
        try:
            self.pm.register(module, name=src.key)
            self.pm.check_pending()
        except pluggy.PluginValidationError as exc:
            if self.pm.get_plugin(src.key) is not None:
                self.pm.unregister(name=src.key)
            raise PluginLoadError(
                f"{_KIND[src.group]} plugin {src.name!r} ({src.value}): {exc}") from exc
        if self.tracing:
            self.pm.trace.root.get("register")(
                f"{src.key} = {src.value} ({src.distribution} {src.version})")

    def select(self, names):
        """Register the device plugins ``names`` (``"a,b"`` or a list).

        Every name is checked before anything is imported: an unknown one
        raises :class:`UnknownPluginError` listing the available plugins.
        Then each plugin is imported and registered, and the declarations
        of all selected plugins are checked against each other (two plugins
        declaring one I/O port raise ``ClaimError`` naming both; so do a device and the motherboard).

        Selecting is cumulative and idempotent.

        :return: the list of selected device plugin names.
        """
        names = parse_names(names)
        for name in names:
            self.source(name, DEVICE_GROUP)
        for name in names:
            src = self.sources[DEVICE_GROUP][name]
            module = self.load(name, DEVICE_GROUP)
            self._register(src, module)
            if not any(self.pm.get_name(impl.plugin) == src.key for impl in
                       self.hook.pypc_device_create.get_hookimpls()):
                self.pm.unregister(name=src.key)
                raise PluginLoadError(
                    f"device plugin {name!r} ({src.value}, from {src.distribution} "
                    f"{src.version}) does not implement pypc_device_create")
            if name not in self.selected:
                self.selected.append(name)
        self.check_declarations()
        return list(self.selected)

    def declares(self, name, capability):
        """True if device plugin ``name`` declares ``capability`` (its module
        is imported and asked in a scratch manager; nothing is registered).
        An unknown name raises :class:`UnknownPluginError`."""
        src = self.source(name, DEVICE_GROUP)
        module = self.load(name, DEVICE_GROUP)
        scratch = _new_pluggy()
        scratch.register(module, name=src.key)
        try:
            results = scratch.hook.pypc_device_declare()
        except PypcError:
            raise
        except Exception as exc:
            raise PluginHookError(name, DEVICE_GROUP, "pypc_device_declare", exc) from exc
        for result in results:
            if any(capability in d.capabilities for d in _as_list(result)):
                return True
        return False

    def disable_rpc_methods(self, spec):
        """Turn RPC method groups off (or keep only some): ``spec`` as in
        :func:`resolve_names`, the defaults being every installed group --
        ``"-video_history,-dos_trace"`` drops those two, ``"agent,memory"``
        keeps only those.  Unknown names raise :class:`UnknownPluginError`;
        a group already registered cannot be turned off.

        :return: the names of the groups that stay on.
        """
        installed = self.available(RPC_GROUP)
        keep = resolve_names(spec, installed, kind="RPC method group",
                             available=installed)
        for name in keep:
            self.source(name, RPC_GROUP)
        off = [n for n in installed if n not in keep]
        for name in off:
            if self.pm.get_plugin(self.sources[RPC_GROUP][name].key) is not None:
                raise PluginError(f"RPC method group {name!r} is already registered; "
                                  f"turn groups off before the server starts")
        self.disabled_rpc = off
        return keep

    def register_rpc_methods(self):
        """Register every plugin of the ``pypc.rpc_methods`` group but the
        ones turned off (:meth:`disable_rpc_methods`).

        :return: their names.
        """
        names = [n for n in self.available(RPC_GROUP) if n not in self.disabled_rpc]
        for name in names:
            self._register(self.sources[RPC_GROUP][name], self.load(name, RPC_GROUP))
        return names

    # -- calling hooks ---------------------------------------------------------
    def _call_each(self, hook_name, keys, **kwargs):
        """Call ``hook_name`` on each registered plugin in ``keys`` alone.

        :return: ``[(key, result)]`` for the plugins that implement it.
        """
        out = []
        for key in keys:
            plugin = self.pm.get_plugin(key)
            if plugin is None:
                continue
            others = [p for p in self.pm.get_plugins() if p is not plugin]
            caller = self.pm.subset_hook_caller(hook_name, remove_plugins=others)
            if not caller.get_hookimpls():
                continue
            try:
                results = caller(**kwargs)
            except PypcError:
                raise                   # a user error the plugin words itself
            except Exception as exc:    # a plugin's bug: name it
                raise self.hook_error(key, hook_name, exc) from exc
            for result in results:
                out.append((key, result))
        return out

    def hook_error(self, key, hook_name, exc):
        """The :class:`PluginHookError` for plugin ``key`` (a registration
        name, ``group:name``) failing in ``hook_name`` with ``exc``."""
        group, _, name = key.rpartition(":")
        return PluginHookError(name, group, hook_name, exc)

    def _all_keys(self):
        return [self.pm.get_name(p) for p in self.pm.get_plugins()]

    def _device_keys(self):
        return [self.sources[DEVICE_GROUP][n].key for n in self.selected]

    def _collect(self, hook_name, expected, **kwargs):
        """``[(plugin_name, item)]`` from ``hook_name`` of every selected
        device plugin, each result checked to be an ``expected``."""
        out = []
        for key, result in self._call_each(hook_name, self._device_keys(), **kwargs):
            name = key.split(":", 1)[1]
            for item in _as_list(result):
                if not isinstance(item, expected):
                    raise PluginError(
                        f"device plugin {name!r}: {hook_name} returned {item!r}, "
                        f"expected a {expected.__module__}.{expected.__name__}")
                out.append((name, item))
        return out

    def declarations(self):
        """``[(plugin_name, DeviceDeclaration)]`` of the selected devices."""
        return self._collect("pypc_device_declare", DeviceDeclaration)

    def check_declarations(self):
        """Raise ``pypc_core.board.ClaimError`` if two selected devices, or a
        device and the motherboard (its chips, RAM and BIOS ROM as a default
        machine has them), declare one I/O port, IRQ, DMA channel or memory
        byte.  The machine checks again with its real configuration."""
        from .board import ClaimError, Resources, motherboard_declarations
        from .device import CAP_VIDEO
        declared = self.declarations()
        videos = [name for name, decl in declared if CAP_VIDEO in decl.capabilities]
        if len(videos) > 1:
            raise ClaimError(f"two video cards: {' and '.join(videos)}; a machine has "
                             "one display (choose one, e.g. --video cga)")
        ledger = Resources()
        for owner, decl in motherboard_declarations():
            ledger.add(owner, decl)
        for name, decl in declared:
            owner = decl.name if decl.name == name else f"{decl.name} (plugin {name})"
            ledger.add(owner, decl)

    def create_devices(self, machine):
        """Build the selected devices (``pypc_device_create``), in selection
        order.  The caller attaches them (``device.attach(machine)``).

        :return: ``[(plugin_name, Device)]``.
        """
        return self._collect("pypc_device_create", Device, machine=machine,
                             options=getattr(machine, "options", None))

    def add_cli_options(self, parser):
        """Let the registered plugins add their options (``pypc_cli_add_options``),
        each plugin in turn, so one that fails is named."""
        self._call_each("pypc_cli_add_options", sorted(self._all_keys()), parser=parser)

    def machine_ready(self, machine):
        """``pypc_machine_ready`` of every registered plugin, in turn (one
        that raises is a :class:`PluginHookError` naming it)."""
        self._call_each("pypc_machine_ready", sorted(self._all_keys()), machine=machine)

    def machine_shutdown(self, machine):
        """``pypc_machine_shutdown`` of every registered plugin; all of them
        run even if one fails.

        :return: the error of each plugin that raised (a
            :class:`PluginHookError`, or the plugin's own ``PypcError``).
        """
        errors = []
        for key in sorted(self._all_keys()):
            try:
                self._call_each("pypc_machine_shutdown", [key], machine=machine)
            except PypcError as exc:
                errors.append(exc)
        return errors

    def rpc_methods(self):
        """Merge ``pypc_rpc_methods`` of every registered plugin (computed
        once for a set of registered plugins: later calls return that table,
        so the hook runs once even though ``pypc run`` checks the methods
        before the server starts).

        :return: ``{method_name: callable}``; a method offered by two plugins
            raises :class:`PluginError` naming both.  :attr:`rpc_method_owners`
            maps each method to the plugin (``group:name``) that offers it.
        """
        keys = sorted(self._all_keys())
        if self._rpc_table is not None and self._rpc_table[0] == keys:
            return dict(self._rpc_table[1])
        methods, owners = {}, {}
        for key, result in self._call_each("pypc_rpc_methods", keys):
            if result is not None and not isinstance(result, dict):
                raise PluginError(f"plugin {key.rpartition(':')[2]!r}: pypc_rpc_methods "
                                  f"returned {type(result).__name__}, not a dict "
                                  f"{{method: callable}}")
            for method, fn in (result or {}).items():
                if method in methods:
                    raise PluginError(
                        f"RPC method {method!r} is provided by both "
                        f"{owners[method]} and {key}")
                if not callable(fn):
                    raise PluginError(f"{key}: RPC method {method!r} is not callable")
                methods[method], owners[method] = fn, key
        self._rpc_table, self.rpc_method_owners = (keys, methods), owners
        return dict(methods)

    def owner_of(self, method):
        """The plugin offering RPC ``method``, as ``(kind, name)`` --
        e.g. ``("RPC method group", "video")`` -- or None if unknown."""
        key = self.rpc_method_owners.get(method)
        if key is None:
            return None
        group, _, name = key.rpartition(":")
        return _KIND.get(group, "plugin"), name

    # -- introspection (``pypc plugins``) --------------------------------------
    def describe(self, names=None, states=False):
        """Information on every discovered plugin of every group (or only
        those called ``names``).

        Imports each plugin module and asks device plugins for their
        declarations, in a scratch pluggy manager: nothing is registered
        here and no machine is built.  Each device plugin's devices are
        built and attached to a scratch board (``PluginInfo.attached``, or
        ``attach_error``); with ``states`` each is also reset and its
        ``get_state()`` kept (``PluginInfo.states``).  A plugin implementing
        ``pypc_rpc_methods`` lists its methods.  A plugin that fails to load
        or raises in a hook is reported in ``PluginInfo.error`` instead of
        raising.
        """
        infos = []
        for group in GROUPS:
            for name in self.available(group):
                if names is not None and name not in names:
                    continue
                src = self.sources[group][name]
                info = PluginInfo(name=name, group=group, module=src.value,
                                  distribution=src.distribution, version=src.version)
                infos.append(info)
                try:
                    module = self.load(name, group)
                    scratch = _new_pluggy()
                    scratch.register(module, name=src.key)
                    scratch.check_pending()
                    info.hooks = sorted(
                        h.name for h in scratch.get_hookcallers(module) or [])
                    if group == DEVICE_GROUP:
                        try:
                            results = scratch.hook.pypc_device_declare()
                        except Exception as exc:
                            raise PluginHookError(name, group, "pypc_device_declare",
                                                  exc) from exc
                        for result in results:
                            info.declarations.extend(_as_list(result))
                        if "pypc_device_create" not in info.hooks:
                            info.error = "does not implement pypc_device_create"
                        else:
                            _attach_alone(scratch, info, states)
                    if "pypc_rpc_methods" in info.hooks:
                        try:
                            tables = scratch.hook.pypc_rpc_methods()
                        except Exception as exc:
                            raise PluginHookError(name, group, "pypc_rpc_methods",
                                                  exc) from exc
                        info.methods = sorted(m for t in tables for m in (t or {}))
                except Exception as exc:
                    info.error = str(exc) if isinstance(exc, PluginError) else (
                        f"{type(exc).__name__}: {exc}")
        return infos


_KIND = {DEVICE_GROUP: "device", RPC_GROUP: "RPC method group"}


def _attach_alone(scratch, info, states=False):
    """Build the plugin's devices without a machine (``machine=None``,
    default options) and attach each to a board of a scratch backplane, to
    show what it really claims (ports, memory windows and their kinds, the
    core's fast paths, IRQ and DMA lines it took)."""
    from .board import Backplane
    from .bus import MemoryMap
    from .chipset import Dma8237, Pic8259
    memory = MemoryMap()
    bp = Backplane(memory=memory, pic=Pic8259(), dma=Dma8237(memory=memory))
    try:
        results = scratch.hook.pypc_device_create(machine=None, options=None)
    except Exception as exc:
        info.attach_error = f"pypc_device_create: {type(exc).__name__}: {exc}"
        return
    for result in results:
        for device in _as_list(result):
            try:
                board = bp.board(device.declaration)
                device.attach(board)
            except Exception as exc:   # a device that needs a whole machine to attach
                info.attach_error = f"{type(exc).__name__}: {exc}"
                return
            info.attached.append(f"{board.name}: {board.describe_claims() or '-'}")
            if not states:
                continue
            try:
                device.reset()
                info.states[board.name] = device.get_state()
            except Exception as exc:
                info.state_error = f"reset/get_state: {type(exc).__name__}: {exc}"


def _as_list(result):
    if result is None:
        return []
    if isinstance(result, (list, tuple)):
        return [r for r in result if r is not None]
    return [result]


def _unknown_message(name, group, available):
    msg = f"unknown {_KIND[group]} plugin {name!r}"
    close = difflib.get_close_matches(name, available, n=1)
    if close:
        msg += f" (did you mean {close[0]!r}?)"
    if available:
        msg += f"; available: {', '.join(available)}"
    else:
        msg += f"; no {_KIND[group]} plugins are installed (entry-point group {group})"
    return msg


def _stderr_writer(text):
    sys.stderr.write(text)
    sys.stderr.flush()
