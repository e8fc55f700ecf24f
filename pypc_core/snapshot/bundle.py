"""The machine bundle format: names, limits, versions, the manifest and the
configuration a bundle belongs to.

A bundle is a ZIP archive:

``manifest.json``
    format, version, layout, the emulator's source hash, the machine's
    configuration, the disks, and ``members``: the size and SHA-256 of
    every other member.  At most :data:`MAX_JSON` bytes.
``state.json``
    the encoded machine state (:mod:`.codec`), the debugger's breakpoints
    and host-side input state.  At most :data:`MAX_JSON` bytes.
``payload/<sha256>.bin``
    arrays and byte strings of the state (RAM, CPU words, video planes...)
``disks/<n>.img``
    an embedded disk image (the image file itself)
``disks/<n>.overlay``
    the drive's copy-on-write sectors over its image (LBA table + sectors),
    when it has any

Nothing else may be in the archive: names are matched against
:data:`MEMBER_NAME`, so no path can leave the bundle.

Bundle versions follow the contract: version 1 is a machine without
optional cards; version 2 adds the DOS mailbox window (pypc has no
``--dos-mailbox``, so it never writes one and refuses one by name); version 3
holds a UART and its queues; version 4 holds a game port (with or without a
UART).  The *layout* number is pypc's own encoding of the state; a layout
this pypc does not know is refused by name.
"""

import hashlib
import os
import re

FORMAT = "pypc-machine-bundle"
LAYOUT = 1
VERSIONS = (1, 2, 3, 4)
MAX_TOTAL = 1 << 30                   # uncompressed bytes in a bundle
MAX_JSON = 4 << 20                    # bytes of manifest.json / state.json
MAX_ARCHIVE = MAX_TOTAL + (64 << 20)  # the archive file itself
AUTO_EMBED_LIMIT = 64 << 20           # disk_mode auto: embed up to this many disk bytes
DISK_MODES = ("auto", "embed", "reference", "reference-files")
MANIFEST = "manifest.json"
STATE = "state.json"
MEMBER_NAME = re.compile(r"^(manifest\.json|state\.json|payload/[0-9a-f]{64}\.bin|"
                         r"disks/[0-9]\.(img|overlay))$")
DRIVE_LETTERS = {0x00: "A", 0x01: "B", 0x80: "C", 0x81: "D"}
LETTER_DRIVES = {v: k for k, v in DRIVE_LETTERS.items()}


def payload_name(digest):
    return f"payload/{digest}.bin"


def disk_image_member(index):
    return f"disks/{index}.img"


def disk_overlay_member(index):
    return f"disks/{index}.overlay"


# -- the machine's configuration ---------------------------------------------------------

def is_uart(device):
    return type(device).__name__.lower().startswith("uart")


def is_game_port(device):
    name = type(device).__name__.lower()
    return "gameport" in name or "game_port" in name or "joystick" in name


def configuration(machine):
    """What a bundle must agree on with the machine it is imported into."""
    cfg = machine.config
    devices = {name: f"{type(dev).__module__}.{type(dev).__qualname__}"
               for name, dev in sorted(machine.devices.items())}
    video = machine.video
    return {
        "memory_kib": int(cfg.memory_kib),
        "devices": devices,
        "video_adapter": getattr(video, "adapter", None) if video is not None else None,
        "firmware": "built-in" if machine.bios is not None else "external",
        "built_in_dos": machine.dos is not None,
        "dos_mailbox": False,
        "uarts": sorted(name for name, dev in machine.devices.items() if is_uart(dev)),
        "game_port": any(is_game_port(dev) for dev in machine.devices.values()),
        "drives": [{"drive": DRIVE_LETTERS.get(d, f"{d:02X}"), "kind": machine.disks[d].kind}
                   for d in sorted(machine.disks)],
        "memory_map_sha256": memory_layout_sha256(machine.memory),
    }


def memory_layout_sha256(memory):
    """The fixed part of the memory map: which pages are RAM or ROM and
    whose (device windows that a card remaps with its mode are state, not
    configuration)."""
    layout = [f"{page}:{kind}:{memory.page_owner[page]}"
              for page, kind in enumerate(memory.page_kind) if kind in ("ram", "rom")]
    return hashlib.sha256("\n".join(layout).encode()).hexdigest()


def bundle_version(config):
    """The contract's bundle version for a machine configuration."""
    if config["game_port"]:
        return 4
    if config["uarts"]:
        return 3
    if config["dos_mailbox"]:
        return 2
    return 1


def mismatches(saved, live):
    """Human-readable differences between two configurations (empty: the
    bundle fits the machine)."""
    out = []
    labels = {
        "memory_kib": "memory (KiB)", "video_adapter": "video adapter",
        "firmware": "firmware", "built_in_dos": "built-in DOS",
        "dos_mailbox": "DOS mailbox", "uarts": "serial ports (UART)",
        "game_port": "game port", "drives": "disk drives",
        "memory_map_sha256": "memory map (RAM/ROM/option ROM layout)",
    }
    for key, label in labels.items():
        if saved.get(key) != live.get(key):
            out.append(f"{label}: bundle {_short(saved.get(key))}, "
                       f"machine {_short(live.get(key))}")
    if saved.get("devices") != live.get("devices"):
        a, b = saved.get("devices") or {}, live.get("devices") or {}
        diff = sorted(set(a.items()) ^ set(b.items()))
        out.append("devices differ: " + ", ".join(f"{k}={v}" for k, v in diff))
    return out


def _short(value):
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return "[" + " ".join(f"{d.get('drive')}:{d.get('kind')}" for d in value) + "]"
    if isinstance(value, str) and len(value) == 64:
        return value[:12] + "..."
    return repr(value)


# -- the emulator's source hash -----------------------------------------------------------

_SOURCE_DIRS = ("cpu", "chipset", "firmware", "bus", "storage", "dos")
_SOURCE_FILES = ("board.py", "device.py", "scheduler.py", "machine.py", "scancodes.py")


def source_files(machine=None):
    """The source files whose code defines the emulated machine and its
    state: the core's CPU, chipset, firmware, bus, storage and DOS, and the
    module folder of every device plugged into ``machine``."""
    core = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    files = [os.path.join(core, f) for f in _SOURCE_FILES]
    for sub in _SOURCE_DIRS:
        folder = os.path.join(core, sub)
        if os.path.isdir(folder):
            files += [os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".py")]
    if machine is not None:
        import sys
        folders = set()
        for dev in machine.devices.values():
            mod = sys.modules.get(type(dev).__module__)
            path = getattr(mod, "__file__", None)
            if path and not os.path.abspath(path).startswith(core + os.sep):
                folders.add(os.path.dirname(os.path.abspath(path)))
        for folder in sorted(folders):
            files += [os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".py")]
    return sorted(set(f for f in files if os.path.isfile(f)))


def source_sha256(machine=None):
    """SHA-256 over the names and contents of :func:`source_files` (a
    bundle imports only into the same emulator code, as the contract asks)."""
    h = hashlib.sha256()
    core_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for path in source_files(machine):
        rel = os.path.relpath(path, core_parent) if path.startswith(core_parent) else \
            os.path.basename(os.path.dirname(path)) + "/" + os.path.basename(path)
        with open(path, "rb") as fh:
            data = fh.read()
        h.update(rel.replace(os.sep, "/").encode() + b"\0" + len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


# -- manifest schema (checked before anything in the bundle is used) -----------------------

_SHA = {"type": "string", "pattern": "^[0-9a-f]{64}$"}
_UINT = {"type": "integer", "minimum": 0}

MANIFEST_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["format", "version", "layout", "emulator", "configuration", "disk_mode",
                 "disks", "members", "clock", "instructions"],
    "properties": {
        "format": {"const": FORMAT},
        "version": {"type": "integer"},
        "layout": {"type": "integer"},
        "created_by": {"type": "string", "maxLength": 200},
        "emulator": {"type": "object", "additionalProperties": False,
                     "required": ["source_sha256"],
                     "properties": {"source_sha256": _SHA,
                                    "pypc_version": {"type": "string", "maxLength": 100}}},
        "configuration": {
            "type": "object", "additionalProperties": False,
            "required": ["memory_kib", "devices", "video_adapter", "firmware", "built_in_dos",
                         "dos_mailbox", "uarts", "game_port", "drives", "memory_map_sha256"],
            "properties": {
                "memory_kib": _UINT,
                "devices": {"type": "object", "maxProperties": 64,
                            "additionalProperties": {"type": "string", "maxLength": 300}},
                "video_adapter": {"type": ["string", "null"], "maxLength": 40},
                "firmware": {"enum": ["built-in", "external"]},
                "built_in_dos": {"type": "boolean"},
                "dos_mailbox": {"type": "boolean"},
                "uarts": {"type": "array", "maxItems": 8,
                          "items": {"type": "string", "maxLength": 64}},
                "game_port": {"type": "boolean"},
                "drives": {"type": "array", "maxItems": 4, "items": {
                    "type": "object", "additionalProperties": False,
                    "required": ["drive", "kind"],
                    "properties": {"drive": {"enum": ["A", "B", "C", "D"]},
                                   "kind": {"enum": ["floppy", "hdd"]}}}},
                "memory_map_sha256": _SHA,
            }},
        "disk_mode": {"enum": list(DISK_MODES)},
        "disks": {"type": "array", "maxItems": 4, "items": {
            "type": "object", "additionalProperties": False,
            "required": ["index", "drive", "kind", "mode", "size", "geometry", "storage",
                         "sha256", "media_changed"],
            "properties": {
                "index": {"type": "integer", "minimum": 0, "maximum": 3},
                "drive": {"enum": ["A", "B", "C", "D"]},
                "kind": {"enum": ["floppy", "hdd"]},
                "mode": {"enum": ["rw", "readonly", "cow"]},
                "size": {"type": "integer", "minimum": 512, "maximum": MAX_TOTAL},
                "geometry": {"type": "array", "minItems": 3, "maxItems": 3,
                             "items": {"type": "integer", "minimum": 1, "maximum": 1024}},
                "storage": {"enum": ["embedded", "reference"]},
                "sha256": _SHA,
                "source_path": {"type": "string", "maxLength": 4096},
                "overlay_sectors": {"type": "integer", "minimum": 0},
                "media_changed": {"type": "boolean"},
            }}},
        "members": {"type": "object", "maxProperties": 100000,
                    "propertyNames": {"pattern": MEMBER_NAME.pattern},
                    "additionalProperties": {
                        "type": "object", "additionalProperties": False,
                        "required": ["size", "sha256"],
                        "properties": {"size": {"type": "integer", "minimum": 0,
                                                "maximum": MAX_TOTAL},
                                       "sha256": _SHA}}},
        "clock": _UINT,
        "instructions": _UINT,
    },
}

STATE_KEYS = ("machine", "breakpoints", "host")
