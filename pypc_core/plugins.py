"""The plugin manager: entry-point discovery, ``--plugins`` selection, tracing.

Every plugin -- the built-in ``cga`` as much as a third party's -- is a module
named by an entry point of an installed distribution:

* group ``pypc.devices``: device plugins.  Only the ones selected with
  ``--plugins a,b`` (:meth:`PluginManager.select`) are imported and
  registered; the rest are merely listed.
* group ``pypc.rpc_methods``: JSON-RPC method groups.  All of them are
  registered by :meth:`PluginManager.register_rpc_methods`.

Nothing is special-cased: a name that is not an entry point does not exist.

Typical use by the machine::

    pm = PluginManager()                       # discovers entry points
    pm.select("cga,mydev")                     # UnknownPluginError if unknown
    pm.add_cli_options(parser)                 # pypc_cli_add_options
    for name, device in pm.create_devices(machine):   # pypc_device_create
        device.attach(machine)
    pm.hook.pypc_machine_ready(machine=machine)

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
    for group in groups:
        for ep in importlib.metadata.entry_points(group=group):
            dist = getattr(ep, "dist", None)
            dist_name = dist.name if dist is not None else "?"
            version = dist.version if dist is not None else "?"
            known = found[group].get(ep.name)
            if known is not None:
                if known.distribution != dist_name:
                    known.shadowed.append(dist_name)
                continue
            found[group][ep.name] = PluginSource(
                name=ep.name, group=group, value=ep.value,
                distribution=dist_name, version=version, entry_point=ep)
    return found


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
                raise PluginLoadError(
                    f"{_KIND[group]} plugin {name!r} ({src.value}, from "
                    f"{src.distribution} {src.version}) failed to load: "
                    f"{type(exc).__name__}: {exc}") from exc
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
        for result in scratch.hook.pypc_device_declare():
            if any(capability in d.capabilities for d in _as_list(result)):
                return True
        return False

    def register_rpc_methods(self):
        """Register every plugin of the ``pypc.rpc_methods`` group.

        :return: their names.
        """
        names = self.available(RPC_GROUP)
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
            for result in caller(**kwargs):
                out.append((key, result))
        return out

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
        """Let the registered plugins add their options (``pypc_cli_add_options``)."""
        self.hook.pypc_cli_add_options(parser=parser)

    def rpc_methods(self):
        """Merge ``pypc_rpc_methods`` of every registered plugin.

        :return: ``{method_name: callable}``; a method offered by two plugins
            raises :class:`PluginError` naming both.
        """
        methods, owners = {}, {}
        keys = [self.pm.get_name(p) for p in self.pm.get_plugins()]
        for key, result in self._call_each("pypc_rpc_methods", sorted(keys)):
            for method, fn in (result or {}).items():
                if method in methods:
                    raise PluginError(
                        f"RPC method {method!r} is provided by both "
                        f"{owners[method]} and {key}")
                if not callable(fn):
                    raise PluginError(f"{key}: RPC method {method!r} is not callable")
                methods[method], owners[method] = fn, key
        return methods

    # -- introspection (``pypc plugins``) --------------------------------------
    def describe(self):
        """Information on every discovered plugin of every group.

        Imports each plugin module and asks device plugins for their
        declarations, in a scratch pluggy manager: nothing is registered
        here and no machine is built.  A plugin that fails to load is
        reported in ``PluginInfo.error`` instead of raising.
        """
        infos = []
        for group in GROUPS:
            for name in self.available(group):
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
                        for result in scratch.hook.pypc_device_declare():
                            info.declarations.extend(_as_list(result))
                        if "pypc_device_create" not in info.hooks:
                            info.error = "does not implement pypc_device_create"
                        else:
                            _attach_alone(scratch, info)
                except Exception as exc:
                    info.error = str(exc) if isinstance(exc, PluginError) else (
                        f"{type(exc).__name__}: {exc}")
        return infos


_KIND = {DEVICE_GROUP: "device", RPC_GROUP: "RPC method group"}


def _attach_alone(scratch, info):
    """Build the plugin's devices without a machine (``machine=None``,
    default options) and attach each to a board of a scratch backplane, to
    show what it really claims (ports, memory windows and their kinds, the
    core's fast paths, IRQ and DMA lines it took)."""
    from .board import Backplane
    from .bus import MemoryMap
    from .chipset import Dma8237, Pic8259
    try:
        memory = MemoryMap()
        bp = Backplane(memory=memory, pic=Pic8259(), dma=Dma8237(memory=memory))
        for result in scratch.hook.pypc_device_create(machine=None, options=None):
            for device in _as_list(result):
                board = bp.board(device.declaration)
                device.attach(board)
                info.attached.append(f"{board.name}: {board.describe_claims() or '-'}")
    except Exception as exc:      # a device that needs a whole machine to attach
        info.attach_error = f"{type(exc).__name__}: {exc}"


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
