"""The Machine: an IBM PC/XT built from the bus, the 8088 core, the chipset,
the firmware, the disks and the selected device plugins.

Everything a debugger or an agent does goes through this class (the RPC
methods are thin adapters over it)::

    m = Machine(MachineConfig(floppy_a="dos.img"))
    m.run_until_text("A:\\\\>", timeout_s=30)
    m.type_text("dir\\r")
    print("\\n".join(m.screen_text()))

Time is emulated CPU cycles (4.77 MHz); the scheduler runs the CPU exactly to
the next device event, so the guest sees the same thing at any host speed.
"""

import contextlib
import os

import attrs

from .board import Backplane, Equipment, Resources, motherboard_declarations
from .bus import MemoryMap, PortMap
from .chipset import Dma8237, NmiMask, Pic8259, Pit8253, Ppi8255, XtKeyboard
from .chipset.ppi import switch_byte
from .cpu import Cpu
from .cpu import state as S
from .debugger import BreakpointError, BreakpointTable, Trace
from .diagnostics import Diagnostics
from .device import CAP_VIDEO, Device
from .errors import PypcError
from .storage.image import count_bytes
from .symbols import SymbolTable, annotate, read_map
from .scancodes import text_to_scancodes
from .scheduler import CPU_HZ, Scheduler


from .machine_errors import DeviceFault, MachineError  # noqa: F401  (their home for users)
from .exits import ExitHandling


# how the CPU executes: the interpreter alone, or with the block translator
# (pypc_core/cpu/translator.py); the machine's state is the same either way
CPU_ENGINES = ("interpret", "translate")


@attrs.define
class MachineConfig:
    plugins: list = attrs.Factory(lambda: ["cga", "fdc", "uart"])
    floppy_a: str = None
    floppy_b: str = None
    hdd: str = None
    hdd_geometry: tuple = None
    host_dir: str = None                   # a host directory as a FAT disk (storage.hostdir)
    readonly: bool = False
    cow: bool = False
    cow_dir: str = None                    # with cow: keep the overlays in DIR/NAME.cow
    bios: str = None                       # a third-party BIOS image instead of ours
    option_roms: list = attrs.Factory(list)   # [(path, segment)]
    dos: object = None                     # a dos.DosConfig: boot the built-in DOS
    bare: bool = False                     # no firmware at all (see pypc_core/bare.py)
    loads: list = attrs.Factory(list)      # [(bytes, linear)]: raw binaries placed at power-on
    entry: tuple = None                    # (segment, offset) instead of the reset vector
    memory_kib: int = 640
    speed: float = 0.0                     # 0: unpaced (turbo); 1.0: a real XT
    cpu: str = "interpret"                 # "translate": hot code through the block translator
    plugin_manager: object = None          # an already-selected PluginManager
    options: object = None                 # argparse namespace for plugin options
    debug_port: int = None                 # the guest debug console's port (pypc_core.debugcon)
    symbols: list = attrs.Factory(list)    # [(map path, base segment or None)] (pypc_core.symbols)


class Machine(ExitHandling):
    def __init__(self, config=None, **kwargs):
        self.config = config or MachineConfig(**kwargs)
        cfg = self.config
        self.options = cfg.options
        # names for addresses (host-side, not machine state); the maps are
        # read before anything is built, so a bad one changes nothing
        self.symbols = self._read_symbols(cfg)
        self.memory = MemoryMap()
        self.ports = PortMap()
        if not 16 <= cfg.memory_kib <= 640 or cfg.memory_kib % 16:
            raise MachineError(f"memory must be 16..640 KiB in 16 KiB steps, not {cfg.memory_kib}")
        self.memory.map_ram(0, cfg.memory_kib * 1024, owner="ram")
        self.ports.clock = self.clock
        self.memory.clock = self.clock
        if cfg.cpu not in CPU_ENGINES:
            raise MachineError(f"cpu must be one of {', '.join(CPU_ENGINES)}, not {cfg.cpu!r}")
        self.cpu = Cpu(self.memory.mem, self.memory.page_table, self.memory.xflags,
                       self.ports.port_kind, self.ports.port_io)
        if cfg.cpu == "translate":
            self.cpu.translate()
        self.breakpoints = BreakpointTable(self.cpu, self.memory, resolve=self.symbols.resolve)
        # what the machine, its cards and the guest have to say (host-side,
        # not machine state: pypc_core.diagnostics)
        self.diagnostics = Diagnostics(self.clock)
        self.trace = Trace(self.cpu)
        # a plain flag (assigning a bool is atomic): another thread sets it,
        # the run loop reads it once a slice
        self._pause_requested = False
        self._resume_pc = None      # where the last breakpoint stop (exec or INT) left us
        self.last_stop = None
        # a device's port handler that raises stops the run (Stop("fault"),
        # a diagnostics record); True: raise the DeviceFault instead
        self.raise_device_faults = False
        self.device_fault = None        # the last DeviceFault, if any
        self.devices = {}          # name -> Device (chipset and plugins)
        self.scheduler = Scheduler(self.clock, self.ports, cfg.speed)
        self.disks = {}
        self._card_disks = []           # images cards opened through their board
        self.video = None
        self.bios = None
        self.dos = None                 # the built-in DOS (MachineConfig.dos)
        self.interrupts_taken = 0       # hardware interrupts dispatched (IRQs)
        # viewers (pypc_core.frontends): functions called on the machine thread
        # after every run or step, and the display epoch, which a restored
        # state advances so that every viewer redraws the whole picture
        self.run_hooks = []
        self.display_epoch = 0
        self._closed = False
        try:
            self._build_chipset()
            self._open_disks()
            self._build_plugins()
            self._load_firmware()
            self.reset()
            self.plugin_manager.machine_ready(self)
        except BaseException:
            self.close()            # release the image locks at once
            raise

    # ------------------------------------------------------------------
    # construction
    # ------------------------------------------------------------------
    @staticmethod
    def _read_symbols(cfg):
        """The SymbolTable of ``cfg.symbols``: a link map without a base is
        relocated to the load segment of the built-in DOS's program when
        there is one (when the DOS loads it), else taken as absolute."""
        table = SymbolTable()
        dos_program = cfg.dos is not None and getattr(cfg.dos, "program", None)
        for path, base in cfg.symbols:
            mapfile = read_map(path)
            if base is None and mapfile.relative and dos_program:
                table.defer(mapfile)
            else:
                table.add(mapfile, base or 0)
        return table

    def clock(self):
        """The current emulated CPU cycle."""
        return self.cpu.ctl.item(S.C_CYCLES)

    def note(self, level, message, source="machine"):
        """Put a diagnostic record in :attr:`diagnostics` (level ``debug``,
        ``info``, ``warning`` or ``error``; ``source`` ``machine``, ``bios``,
        ``dos``...): the one way the machine reports what it refused, faulted
        on or decided for the user."""
        return self.diagnostics.add(level, message, source)

    def _add(self, name, device, timed=False, feeds_timed=False, board=None, plugin=None):
        """Attach ``device`` to its ``board`` (a card's, or a motherboard
        chip's; the debug console's).  ``timed``: it has events (``next_event``);
        ``feeds_timed``: its ports drive a timed device (the PPI gates the
        PIT and clocks the keyboard).  Accesses to the ports of either kind
        make the scheduler look at the deadlines again."""
        owners = set(self.ports.claims())
        self.devices[name] = device
        if plugin is None:
            device.attach(board)
        else:
            self._attach_card(plugin, device, board)
        mine = set(self.ports.claims()) - owners
        if timed or feeds_timed:
            for owner in mine:
                self.ports.mark_timing(owner)
        if timed:
            self.scheduler.add(device, port_owners=sorted(mine))

    def _attach_card(self, plugin, device, board):
        """A plugin's ``device.attach(board)``: a claim outside the
        declaration or a collision stays the board's one-line error; any
        other exception is the plugin's, named."""
        from .bus.memory import MemoryMapError
        from .bus.ports import PortConflictError
        from .plugins import DEVICE_GROUP, PluginHookError
        try:
            device.attach(board)
        except (PypcError, PortConflictError, MemoryMapError):
            raise
        except Exception as exc:
            raise PluginHookError(plugin, DEVICE_GROUP, "Device.attach", exc,
                                  where=f" ({type(device).__name__})") from exc

    def _set_intr(self, level):
        self.cpu.ctl[S.C_INTR] = 1 if level else 0

    def _build_chipset(self):
        """The motherboard's chips, the ledger of every declaration (the
        motherboard's first: two owners of a port, IRQ, DMA channel or
        memory byte stop start-up) and the backplane; each chip attaches to
        a board of its own, as a card does."""
        cfg = self.config
        self.pic = Pic8259(on_intr_change=self._set_intr)
        self.pit = Pit8253(pic=self.pic, clock=self.clock)
        self.keyboard = XtKeyboard(pic=self.pic, clock=self.clock)
        # what the BIOS reads from the machine (equipment word, memory size)
        self.floppy_drives = 2 if cfg.floppy_b else 1
        self.ram_kb = cfg.memory_kib
        self.initial_ticks = 0          # the guest clock starts at midnight, never host time
        self.ppi = Ppi8255(keyboard=self.keyboard, pit=self.pit,
                           floppy_drives=self.floppy_drives, video="cga80",
                           memory_kib=cfg.memory_kib)
        self.dma = Dma8237(memory=self.memory)
        self.dma.attach_refresh(self.pit, self.clock)     # DREQ0 from PIT counter 1
        self.nmi_mask = NmiMask()
        self.resources = Resources()
        bios_size = 0 if cfg.bare else 0x10000
        if cfg.bios and os.path.isfile(cfg.bios):
            size = os.path.getsize(cfg.bios)
            if size in (8192, 16384, 32768, 65536):
                bios_size = size
        from .firmware.rom import IDLE_STAMP_PORT
        declarations = {}
        for owner, decl in motherboard_declarations(
                cfg.memory_kib, bios_size, None if cfg.bios or cfg.bare else IDLE_STAMP_PORT):
            if owner == "bios" and cfg.bare:
                continue                # no firmware at all
            self.resources.add(owner, decl)
            declarations[owner] = decl
        self.backplane = Backplane(self.memory, self.ports, self.clock, self.pic, self.dma,
                                   reschedule=self.scheduler.invalidate,
                                   options=self.options, resources=self.resources,
                                   diagnostics=self.diagnostics, storage=_Storage(self),
                                   clock_returns_int=True)
        for name, chip, how in (("pic", self.pic, {}), ("pit", self.pit, {"timed": True}),
                                ("keyboard", self.keyboard, {"timed": True}),
                                ("ppi", self.ppi, {"feeds_timed": True}),
                                ("dma", self.dma, {}), ("nmi", self.nmi_mask, {})):
            board = self.backplane.board(declarations[name], owner=name, check=False)
            self._add(name, chip, board=board, **how)

    def _open_disks(self):
        from .storage import DiskImage, DiskImageError
        cfg = self.config
        mode = "cow" if cfg.cow else ("readonly" if cfg.readonly else "rw")
        if mode == "rw":
            _check_distinct_images([("A:", cfg.floppy_a), ("B:", cfg.floppy_b),
                                    ("C:", cfg.hdd)])
        if cfg.cow_dir is not None and not os.path.isdir(cfg.cow_dir):
            problem = "is not a directory" if os.path.exists(cfg.cow_dir) else "does not exist"
            raise MachineError(f"{cfg.cow_dir}: the copy-on-write directory {problem}")

        def side_file(path):
            if cfg.cow_dir is None or mode != "cow":
                return None
            return os.path.join(cfg.cow_dir, os.path.basename(path) + ".cow")

        try:
            if cfg.floppy_a:
                self.disks[0x00] = DiskImage(cfg.floppy_a, kind="floppy", mode=mode,
                                             cow_file=side_file(cfg.floppy_a))
            if cfg.floppy_b:
                self.disks[0x01] = DiskImage(cfg.floppy_b, kind="floppy", mode=mode,
                                             cow_file=side_file(cfg.floppy_b))
            if cfg.hdd:
                self.disks[0x80] = DiskImage(cfg.hdd, kind="hdd", mode=mode,
                                             geometry=cfg.hdd_geometry,
                                             cow_file=side_file(cfg.hdd))
            if cfg.host_dir:
                self._open_host_dir(mode)
        except DiskImageError as exc:
            raise MachineError(str(exc)) from exc
        for disk in self.disks.values():
            if getattr(disk, "readonly_reason", None):
                self.note("warning", disk.readonly_reason)

    def _disk_mode(self):
        cfg = self.config
        return "cow" if cfg.cow else ("readonly" if cfg.readonly else "rw")

    def open_card_disk(self, path, kind, owner, option=None):
        """An image a card opens through its board (``Board.open_disk``):
        the machine's mode, copy-on-write folder and geometry; an image that
        is already a writable drive of this machine is refused."""
        from .storage import DiskImage, DiskImageError
        cfg = self.config
        mode = self._disk_mode()
        given = option or f"{owner}'s image"
        if mode == "rw" and os.path.exists(path):
            for unit, disk in self.disks.items():
                other = getattr(disk, "path", None)
                if other and os.path.exists(other) and os.path.samefile(path, other):
                    name = {0x00: "A: (--floppy)", 0x01: "B: (--floppy-b)",
                            0x80: "C: (--hdd)"}.get(unit, f"drive {unit:02X}h")
                    raise MachineError(f"{path!r} is both drive {name} and the {given}; "
                                       f"give the card its own image (or use --readonly "
                                       f"or --cow)")
        cow_file = None
        if mode == "cow" and cfg.cow_dir:
            cow_file = os.path.join(cfg.cow_dir, os.path.basename(path) + ".cow")
        try:
            disk = DiskImage(path, kind=kind, mode=mode,
                             geometry=cfg.hdd_geometry if kind == "hdd" else None,
                             cow_file=cow_file)
        except DiskImageError as exc:
            raise MachineError(f"{given}: {exc}") from exc
        self._card_disks.append(disk)
        return disk

    def _open_host_dir(self, mode):
        from .storage.hostdir import HostDirDisk
        disk = HostDirDisk(self.config.host_dir, mode=mode)
        slots = (0x00, 0x01) if disk.is_floppy else (0x80,)
        free = [d for d in slots if d not in self.disks]
        if not free:
            disk.close()
            raise MachineError(f"--host-dir {self.config.host_dir}: no free drive for it "
                               f"({'A: and B:' if disk.is_floppy else 'C:'} are taken)")
        self.disks[free[0]] = disk
        if free[0] == 0x01:
            self.floppy_drives = 2

    def _build_plugins(self):
        pm = self.config.plugin_manager
        if pm is None:
            from .plugins import DEFAULT_DEVICES, PluginManager, resolve_names
            pm = PluginManager()
            pm.select(resolve_names(self.config.plugins,
                                    () if self.config.bare else DEFAULT_DEVICES))
        self.plugin_manager = pm
        cfg = self.config
        videos = []
        self.device_plugins = {}        # device name -> the plugin that made it
        for plugin, device in pm.create_devices(self):
            board = self.backplane.board(device.declaration)
            self.device_plugins[board.name] = plugin
            self._add(board.name, device, timed=device.next_event() is not None
                      or type(device).advance is not Device.advance, board=board,
                      plugin=plugin)
            if CAP_VIDEO in device.declaration.capabilities:
                videos.append(board.name)
                self.video = device
        if len(videos) > 1:
            raise MachineError(f"two video cards: {' and '.join(videos)}; a machine has "
                               "one display (choose one, e.g. --video cga)")
        if cfg.debug_port is not None:
            self._add_debug_console(cfg.debug_port)
        # what the BIOS and the PPI's switches report follows the cards
        self.equipment = Equipment.from_declarations(
            [d.declaration for d in self.devices.values()], self.floppy_drives,
            cfg.memory_kib)
        if any(d < 0x80 for d in self.disks) and not self.equipment.floppy_drives:
            raise MachineError("a floppy image needs the floppy controller card: "
                               "add fdc to --plugins (e.g. --plugins cga,fdc)")
        self.ppi.sw1 = switch_byte(self.equipment.floppy_drives, self.equipment.video_switch(),
                                   cfg.memory_kib)

    def _add_debug_console(self, port):
        """The opt-in guest debug console (``pypc_core.debugcon``): a device
        on its own board, its port checked against every other claim."""
        from .debugcon import SOURCE, DebugConsole
        try:
            console = DebugConsole(port, sink=lambda text: self.note("info", text, SOURCE))
        except ValueError as exc:
            raise MachineError(str(exc)) from None
        board = self.backplane.board(console.declaration)
        self._add(board.name, console, board=board)

    def _load_firmware(self):
        cfg = self.config
        if cfg.bare:
            if cfg.bios or cfg.dos is not None:
                raise MachineError("a bare machine has no firmware: drop --bios / the DOS")
            from .bus.loads import place_loads
            place_loads(self.memory, cfg.loads, cfg.memory_kib * 1024)
            self.cpu.ctl[S.C_TRAP_ENABLE] = 0
        elif cfg.bios:
            image = _read_file(cfg.bios, "BIOS image")
            if len(image) not in (8192, 16384, 32768, 65536):
                raise MachineError(
                    f"{cfg.bios}: a BIOS image must be 8, 16, 32 or 64 KiB, "
                    f"not {count_bytes(len(image))}")
            if cfg.dos is not None:
                raise MachineError("the built-in DOS runs on the built-in BIOS, not with --bios")
            self.memory.map_rom(0x100000 - len(image), image, owner="bios")
            self.cpu.ctl[S.C_TRAP_ENABLE] = 0
        else:
            from .firmware import Bios
            self.bios = Bios(self)
            self.bios.install()
            if cfg.dos is not None:
                from .dos import Dos
                self.dos = Dos(self, cfg.dos)
                self.dos.install()
            self.cpu.ctl[S.C_TRAP_ENABLE] = 1
        for path, segment in cfg.option_roms:
            image = _read_file(path, "option ROM")
            if len(image) < 3 or image[0] != 0x55 or image[1] != 0xAA:
                raise MachineError(f"{path}: not an option ROM (no 55AAh signature)")
            base = segment << 4
            if base % 2048 or not 0xC0000 <= base < 0xF0000:
                raise MachineError(f"{path}: option ROM segment {segment:04X}h must be "
                                   f"a 2 KiB boundary in C000h-EFFFh")
            try:
                self.memory.map_rom(base, image, owner=f"option ROM {os.path.basename(path)}")
            except ValueError as exc:
                raise MachineError(str(exc)) from exc

    def has_device(self, name):
        return name in self.devices

    def device(self, name):
        """The device plugged in under ``name`` (a card's declaration name,
        e.g. ``"cga"``, ``"uart"``, ``"postcard"``; or a motherboard chip:
        ``"pic"``, ``"pit"``...), or None when there is none."""
        return self.devices.get(name)

    def devices_with(self, capability):
        """``[(name, device)]`` of the cards whose declaration lists
        ``capability`` (``"serial"``, ``"video"``, ``"post-codes"``...), in
        the order they were plugged in."""
        return [(name, dev) for name, dev in self.devices.items()
                if capability in getattr(getattr(dev, "declaration", None),
                                         "capabilities", ())]

    def close(self):
        if self._closed:
            return
        self._closed = True
        for disk in list(self.disks.values()) + self._card_disks:
            try:
                disk.close()
            except Exception:
                pass
        pm = getattr(self, "plugin_manager", None)
        if pm is not None:
            for error in pm.machine_shutdown(self):
                self.note("error", str(error))
                if os.environ.get("PYPC_DEBUG"):
                    import traceback
                    traceback.print_exception(error.__cause__ or error)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ------------------------------------------------------------------
    # reset and running
    # ------------------------------------------------------------------
    def reset(self):
        """Power-on reset: chipset and devices to their reset state, the CPU
        to FFFF:0000 (the BIOS reset vector)."""
        for dev in self.devices.values():
            dev.reset()
        self.cpu.reset()
        self.cpu.ctl[S.C_TRAP_ENABLE] = 0 if self.config.bios or self.config.bare else 1
        if self.config.entry is not None:
            self.cpu.regs[S.CS], self.cpu.regs[S.IP] = self.config.entry
        self._set_intr(self.pic.intr_pending())
        self.scheduler.reset()

    # Each cpu.run covers at most this many cycles, so a pause request,
    # Ctrl-C or a queued RPC request is seen promptly whatever the guest
    # does.  Paced runs slice finely (about 27 ms of emulated time: pacing
    # sleeps between slices, so this is also how smoothly time flows for a
    # person watching); unpaced (turbo) runs take 8 times that, still well
    # under a millisecond of host time for a busy guest, because every slice
    # end wakes a halted CPU and costs an exit.  Slices never change what
    # the guest sees.
    SLICE_CYCLES = 1 << 17
    TURBO_SLICE_CYCLES = 1 << 20

    def run_for(self, cycles):
        """Run ``cycles`` emulated cycles, or until a breakpoint, a halt, a
        pause request or a fault.  Returns a Stop."""
        return self.run_until_cycle(self.clock() + int(cycles))

    _runner = None        # route_runs: who serves run_until_cycle (None: run_loop_until)

    def route_runs(self, runner):
        """Let ``runner(target) -> Stop`` serve every :meth:`run_until_cycle`
        (and so ``run_for``, ``run_seconds``, ``run_until_text`` ...): an RPC
        controller or the gdb stub that serves requests between slices and
        runs the machine's own loop, :meth:`run_loop_until`, itself.
        ``None`` gives the runs back to that loop."""
        self._runner = runner

    @property
    def runs_routed(self):
        """True while :meth:`route_runs` has a runner."""
        return self._runner is not None

    @contextlib.contextmanager
    def unrouted(self):
        """Runs inside go straight to the machine's own loop (a controller's
        step over, which must not serve requests midway)."""
        runner = self._runner
        self._runner = None
        try:
            yield
        finally:
            self._runner = runner

    def run_until_cycle(self, target):
        """Run until emulated cycle ``target`` (or an earlier stop), through
        the runner of :meth:`route_runs` if there is one."""
        runner = self._runner
        if runner is not None:
            return runner(target)
        return self.run_loop_until(target)

    def run_loop_until(self, target):
        """The machine's own run loop: slices to ``target`` (or an earlier
        stop), answering exits between them."""
        cpu = self.cpu
        ctl = cpu.ctl
        sched = self.scheduler
        self._arm_resume()
        pc_before = cpu.pc
        slice_cycles = self.SLICE_CYCLES if sched.speed else self.TURBO_SLICE_CYCLES
        # (an IN that Python answered finishes first: stops fall on
        # instruction boundaries)
        answered_in = ctl[S.C_IO_READY] != 0
        # Local names for what every exit uses: this loop is the price of an
        # exit (benchmarked by ``bench system``'s machine exit figure).
        run_core = cpu.run
        next_stop = sched.next_stop
        memory = self.memory
        ports = self.ports
        breakpoints = self.breakpoints
        EXIT_BUDGET, EXIT_IO_OUT, EXIT_IO_IN = S.EXIT_BUDGET, S.EXIT_IO_OUT, S.EXIT_IO_IN
        C_CYCLES, C_EXIT_PORT, C_EXIT_VALUE, C_EXIT_WIDTH = (
            S.C_CYCLES, S.C_EXIT_PORT, S.C_EXIT_VALUE, S.C_EXIT_WIDTH)
        try:
            item = ctl.item             # (a Python int: half the cost of int(ctl[i]))
            while True:
                now = item(C_CYCLES)
                if not answered_in:
                    if self._pause_requested:
                        self._pause_requested = False
                        return self._stop("pause")
                    if now >= target:
                        return self._stop("budget")
                end = now + slice_cycles
                if end > target:
                    end = target
                reason = run_core(next_stop(end, now))
                if memory.handler_error is not None:
                    raise memory.take_handler_error()
                if reason == EXIT_BUDGET:
                    answered_in = False
                    if sched.speed:
                        sched.pace()
                    continue
                if reason == EXIT_IO_OUT and not breakpoints.io_armed:
                    # the commonest exit, answered here as _service_exit
                    # does, without the two calls through _handle_exit
                    try:                # (free unless a card's handler raises)
                        ports.write(item(C_EXIT_PORT), item(C_EXIT_VALUE), item(C_EXIT_WIDTH))
                    except Exception as exc:
                        fault = self._port_fault(exc, "out")
                        fault.__cause__ = exc
                        return self._device_fault(fault)
                    answered_in = False
                    continue
                stop = self._handle_exit(reason)
                if stop is not None:
                    return stop
                answered_in = reason == EXIT_IO_IN
                if reason == S.EXIT_HALT:
                    sched.pace()
        finally:
            self._after_run(pc_before)

    def run_seconds(self, seconds):
        return self.run_for(int(seconds * CPU_HZ))

    def request_pause(self):
        """Make the run in progress (or the next one) return
        ``Stop("pause")`` at the next instruction boundary it reaches; safe
        to call from any thread."""
        self._pause_requested = True

    def cancel_pause(self):
        self._pause_requested = False

    def step(self, record=False):
        """One Tick: execute one instruction (into INT handlers), or enter a
        pending interrupt, or run one firmware service, or let a halted CPU
        wait for the next device event.  Port I/O is answered as in a run; an
        IN answered by Python completes within the same step.  A breakpoint
        at CS:IP is stepped over (that is what resuming means); a memory or
        I/O breakpoint hit by the instruction makes the stop a breakpoint."""
        cpu = self.cpu
        ctl = cpu.ctl
        recording = record and not (self.trace.active and self.trace.effects)
        if recording:
            cpu.begin_record()
        self._arm_resume(always=True)
        pc_before = cpu.pc
        try:
            ctl[S.C_STEP] = 1
            while True:
                # a halted CPU waits at most until the next device event
                reason = cpu.run(self.scheduler.next_stop(self.clock() + CPU_HZ))
                if self.memory.handler_error is not None:
                    raise self.memory.take_handler_error()
                if reason in (S.EXIT_BUDGET, S.EXIT_STEP):
                    return self._stop("step")
                stop = self._handle_exit(reason)
                if stop is not None:
                    return stop
                if reason == S.EXIT_IO_IN or reason == S.EXIT_INT_BREAK:
                    continue            # the same instruction, now answered
                return self._stop("step")
        finally:
            ctl[S.C_STEP] = 0
            self._after_run(pc_before)
            if recording:
                cpu.end_record()

    def _current_instruction(self):
        from .cpu.disasm import disassemble
        cs, ip = int(self.cpu.regs[S.CS]), int(self.cpu.regs[S.IP])
        code = bytes(int(self.memory.mem[((cs << 4) + ((ip + k) & 0xFFFF)) & 0xFFFFF])
                     for k in range(16))
        return disassemble(code, ip, cs)

    def step_over(self, max_cycles=None):
        """Step, but run a CALL, INT n, INT3, INTO, LOOP/LOOPE/LOOPNE or REP
        string instruction through to the instruction after it in one run
        (a temporary internal stop there that never shows in the breakpoint
        list, which waits for the stack to be back at this depth).  A user
        breakpoint that hits first ends it early.  ``max_cycles`` (default
        60 emulated seconds) bounds a call that never returns."""
        insn = self._current_instruction()
        if not insn.call_like:
            return self.step()
        cs = int(self.cpu.regs[S.CS])
        sp = int(self.cpu.regs[S.SP])
        cond = ("and", ("cmp", "eq", ("reg", "cs"), ("num", cs)),
                ("cmp", "ge", ("reg", "sp"), ("num", sp)))
        return self._run_to_internal("exec", address=(cs, insn.next_ip), tree=cond,
                                     stop_kind="step", max_cycles=max_cycles)

    def step_out(self, max_cycles=None):
        """Run until the current procedure or interrupt handler returns (a
        RET, RETF or IRET that pops a return address from at or above the
        current stack pointer), and stop at the caller's next instruction.
        User breakpoints still hit first."""
        cpu = self.cpu
        ss, sp = int(cpu.regs[S.SS]), int(cpu.regs[S.SP])
        start = (ss << 4) + sp
        length = min(0x10000 - sp, (1 << 20) - start)
        bp = self.breakpoints.build("mem_read", start, length=length, internal=True)
        bp.stop_kind = "step"
        bp.return_check = True
        return self._run_with(bp, max_cycles)

    def run_until(self, kind="exec", address=None, condition=None, max_cycles=None, *,
                  key_wait=False, **fields):
        """Run until a predicate holds: an execution address (with an
        optional condition), a memory/I/O access, an INT or IRQ -- the same
        fields as ``breakpoints.add`` -- returning ``Stop("until")``; or,
        with ``key_wait=True``, until the guest waits for a key
        (``Stop("key_wait")``); or, with only a ``condition``, until it holds
        at an instruction boundary (checked by stepping: slow, about a
        million instructions a second).  ``max_cycles`` (default 60 emulated
        seconds) ends it with a budget stop."""
        limit = self.clock() + int(max_cycles if max_cycles is not None else 60 * CPU_HZ)
        if key_wait:
            while self.clock() < limit:
                if self.waiting_for_key():
                    return self._stop("key_wait")
                stop = self.run_until_cycle(min(limit, self.clock() + CPU_HZ // 100))
                if stop.kind != "budget":
                    return stop
            return self._stop("budget")
        if address is None and fields.get("port") is None and fields.get("number") is None:
            if condition is None:
                raise BreakpointError("run_until needs an address, port, number, "
                                      "condition or key_wait")
            from .debugger import evaluate, parse_condition
            tree = parse_condition(condition)
            while self.clock() < limit:
                if evaluate(tree, self.cpu.regs, self.memory.mem):
                    return self._stop("until")
                stop = self.step()
                if stop.kind != "step":
                    return stop
            return self._stop("budget")
        bp = self.breakpoints.build(kind, address, condition=condition, internal=True, **fields)
        bp.stop_kind = "until"
        return self._run_with(bp, max_cycles)

    def _run_to_internal(self, kind, address, tree, stop_kind, max_cycles):
        bp = self.breakpoints.build(kind, address, internal=True)
        bp.condition = tree
        bp.stop_kind = stop_kind
        return self._run_with(bp, max_cycles)

    def _run_with(self, bp, max_cycles):
        table = self.breakpoints
        table.insert(bp)
        try:
            limit = self.clock() + int(max_cycles if max_cycles is not None else 60 * CPU_HZ)
            while True:
                stop = self.run_until_cycle(limit)
                if bp.return_check and stop.breakpoint is bp:
                    # a read inside the watched stack: was it the return?
                    a = stop.access
                    code = int(self.memory.mem[((a["cs"] << 4) + a["ip"]) & 0xFFFFF])
                    if code in _RETURNS:
                        return self._stop("step")
                    continue                      # not the return: keep watching
                return stop
        finally:
            table.discard(bp)

    def disassemble(self, cs=None, ip=None, count=1):
        """``count`` instructions from CS:IP (default: the current one),
        fetched as the CPU would (wrapping inside CS).  With symbols loaded
        (:attr:`symbols`) they are ``SymbolicInstruction``s: also
        ``symbol`` (``name+0x12`` of the address) and ``target_symbol``
        (of a branch target), None where no symbol is near."""
        from .cpu.disasm import disassemble_range
        cs = int(self.cpu.regs[S.CS]) if cs is None else int(cs)
        ip = int(self.cpu.regs[S.IP]) if ip is None else int(ip)
        mem = self.memory.mem
        insns = disassemble_range(lambda a: int(mem[a & 0xFFFFF]), cs, ip, count)
        if self.symbols:
            insns = [annotate(i, self.symbols) for i in insns]
        return insns

    def symbol_at(self, cs=None, ip=None):
        """``name+0x12`` for CS:IP (default: the current one) from the
        loaded symbols, or None."""
        cs = int(self.cpu.regs[S.CS]) if cs is None else int(cs)
        ip = int(self.cpu.regs[S.IP]) if ip is None else int(ip)
        return self.symbols.describe((cs << 4) + ip) if self.symbols else None

    # ------------------------------------------------------------------
    # screen and input
    # ------------------------------------------------------------------
    def screen_text(self):
        """The 25 text rows of the active display (empty list without video)."""
        if self.video is None:
            return []
        return self.video.text_rows()

    def screen_rgb(self):
        """The card's frame, ``uint8[H, W, 3]`` (:func:`pypc_core.video_frames.frame`);
        None without video."""
        if self.video is None:
            return None
        from .video_frames import frame
        return frame(self.video)

    def screen_contains(self, text):
        return any(text in row for row in self.screen_text())

    #: host-input recorder/replayer (``start_recording``, ``replay``):
    #: ``hook(kind, data)`` returns False to drop live input during a replay
    input_hook = None

    def press_keys(self, scancodes):
        """Send raw scan codes (make, or break = make | 80h), after anything
        still being typed, at the typist's pace."""
        codes = list(scancodes)
        if self.input_hook is not None and not self.input_hook("keys", codes):
            return
        self.keyboard.type_scancodes(codes)
        self.scheduler.invalidate()

    def type_text(self, text):
        """Type ``text`` (US layout; ``\\r`` or ``\\n`` is Enter) through the
        keyboard's typist, one byte every few milliseconds of emulated time."""
        self.press_keys(text_to_scancodes(text))

    def waiting_for_key(self):
        """True while the guest sits in the BIOS keyboard wait (INT 16h)
        with every key typed so far consumed: the typist's queue, the
        keyboard and the BIOS buffer (0040:001A head = 001C tail) are empty."""
        if self.bios is None or not self.bios.waiting_for_key:
            return False
        kb = self.keyboard
        if kb.typing_pending() or kb.pending() or kb.full:
            return False
        return self.memory.read_word(0x41A) == self.memory.read_word(0x41C)

    def run_until_text(self, text, timeout_s, slice_s=1 / 60):
        """Run until ``text`` is on the screen; returns True, or False after
        ``timeout_s`` emulated seconds."""
        end = self.clock() + int(timeout_s * CPU_HZ)
        step = int(slice_s * CPU_HZ)
        while True:
            if self.screen_contains(text):
                return True
            if self.clock() >= end:
                return False
            stop = self.run_until_cycle(min(end, self.clock() + step))
            if stop.kind != "budget":
                return self.screen_contains(text)

    # ------------------------------------------------------------------
    # state
    # ------------------------------------------------------------------
    def get_state(self):
        """Everything the guest can observe, as copies: CPU, all of memory,
        every device, the disks' copy-on-write overlays and change lines, the
        BIOS's own state.  ``set_state`` restores it exactly, so a run from a
        restored state repeats the original run cycle for cycle."""
        return {
            "cpu": self.cpu.get_state(),
            "memory": self.memory.mem.copy(),
            "devices": {name: dev.get_state() for name, dev in self.devices.items()},
            "disks": {drive: disk.get_state() for drive, disk in self.disks.items()},
            "bios": self.bios.get_state() if self.bios is not None else None,
            "dos": self.dos.get_state() if self.dos is not None else None,
            "interrupts_taken": self.interrupts_taken,
        }

    def set_state(self, state):
        """Restore a ``get_state`` of a machine built the same way (same
        devices, drives and firmware); anything else is refused before
        anything changes."""
        if sorted(state.get("devices", {})) != sorted(self.devices):
            raise MachineError("the state is of a machine with other devices: "
                               f"{sorted(state.get('devices', {}))} vs {sorted(self.devices)}")
        if sorted(state.get("disks", {})) != sorted(self.disks):
            raise MachineError("the state is of a machine with other disk drives")
        if (state.get("bios") is None) != (self.bios is None):
            raise MachineError("the state is of a machine with other firmware")
        if (state.get("dos") is None) != (self.dos is None):
            raise MachineError("the state is of a machine " + (
                "with the built-in DOS; this one has none" if self.dos is None
                else "without the built-in DOS; this one runs it"))
        dos_prepared = None
        if self.dos is not None:
            from .dos.errors import DosStateError
            try:
                dos_prepared = self.dos.prepare_state(state["dos"])
            except DosStateError as exc:
                raise MachineError(f"the state's built-in DOS does not fit: {exc}") from None
        mem = state["memory"]
        if getattr(mem, "shape", None) != self.memory.mem.shape:
            if dos_prepared is not None:
                self.dos.discard_prepared(dos_prepared)
            raise MachineError("the state's memory is not 1 MiB")
        self.memory.mem[:] = mem
        # the debugger's words (breakpoint masks, watched ports, the trace
        # counter) belong to this session, not to the guest state
        debugger_words = self.cpu.ctl[S.C_TRACE:S.C_IOW + S.IOW_MAX].copy()
        recording = self.cpu.ctl[S.C_RECORD], self.cpu.ctl[S.C_EFFECTS]
        self.cpu.set_state(state["cpu"])
        self.cpu.ctl[S.C_TRACE:S.C_IOW + S.IOW_MAX] = debugger_words
        self.cpu.ctl[S.C_RECORD], self.cpu.ctl[S.C_EFFECTS] = recording
        self.cpu.tracing = bool(self.cpu.ctl[S.C_TRACE])
        self.cpu.ctl[S.C_SKIP_BP] = self.cpu.ctl[S.C_SKIP_INT] = 0
        for name, dev in self.devices.items():
            dev.set_state(state["devices"][name])
        for drive, disk in self.disks.items():
            disk.set_state(state["disks"][drive])
        if self.bios is not None:
            self.bios.set_state(state["bios"])
        if self.dos is not None:
            self.dos.set_state(state["dos"], dos_prepared)
        self.interrupts_taken = int(state.get("interrupts_taken", 0))
        self._set_intr(self.pic.intr_pending())
        self.ports.refresh()
        self.scheduler.invalidate()
        self.new_display_epoch()

    def new_display_epoch(self):
        """The picture may have jumped (a snapshot was restored): viewers
        send their next frame whole (the contract's display epoch)."""
        self.display_epoch += 1

    # -- snapshots, checkpoints, recordings (pypc_core.snapshot) ---------------------
    def save(self, path, disk_mode="auto", progress="auto"):
        """Write the whole machine to the new bundle file ``path`` (see
        ``machine.snapshot.export``); returns ``{path, bytes, sha256}``.
        ``progress="auto"`` draws a bar on a terminal for large disks."""
        from .snapshot import export_bundle
        from .snapshot.progress import terminal_progress
        if progress == "auto":
            progress = terminal_progress(sum(d.size for d in self.disks.values()))
        return export_bundle(self, path, disk_mode, progress=progress)

    def load(self, path, disk_root=None, expected_sha256=None, references=None,
             preserve_breakpoints=True, progress="auto"):
        """Restore the bundle ``path`` (disks go to the new directory
        ``disk_root``); refused bundles leave the machine unchanged."""
        from .snapshot import import_bundle
        from .snapshot.progress import terminal_progress
        if progress == "auto":
            try:
                size = os.path.getsize(path)
            except (OSError, TypeError, ValueError):
                size = 0
            progress = terminal_progress(size)
        return import_bundle(self, path, disk_root, expected_sha256, references,
                             preserve_breakpoints, progress)

    def checkpoint(self):
        """An in-memory checkpoint (state plus the contents of disks written
        in place) for :meth:`restore`."""
        from .snapshot import checkpoint
        return checkpoint.take(self)

    def restore(self, cp):
        """Go back to a :meth:`checkpoint` (breakpoints stay as they are)."""
        from .snapshot import checkpoint
        checkpoint.restore(self, cp)

    def start_recording(self):
        """Record every host input (keys, typed text, serial input) with its
        emulated cycle until :meth:`stop_recording`."""
        from .snapshot.replay import Recorder
        self._recorder = Recorder(self)
        return self._recorder

    def stop_recording(self, path=None):
        """End the recording; returns it (and writes it to ``path``)."""
        rec = getattr(self, "_recorder", None)
        if rec is None:
            raise MachineError("no recording is running (start_recording first)")
        self._recorder = None
        return rec.finish(path)

    def replay(self, recording, speed=None, max_cycles=None):
        """Replay a recording (a path or the dict ``stop_recording`` returned)
        from this machine's current state to its end, or for at most
        ``max_cycles`` emulated cycles; returns ``{identical, state_sha256,
        expected_sha256, timed_out, ...}``."""
        from .snapshot.replay import replay
        return replay(self, recording, speed, max_cycles=max_cycles)

    @property
    def registers(self):
        """The raw register file (``m.registers.ax``): a plain store, for
        code that knows what it does.  Change CS:IP through
        :meth:`set_registers`, which keeps the CPU's own state consistent."""
        return self.cpu.r

    REGISTER_NAMES = ("ax", "bx", "cx", "dx", "sp", "bp", "si", "di",
                      "cs", "ds", "es", "ss", "ip", "flags")

    def set_registers(self, **values):
        """Set 16-bit registers by name (``set_registers(cs=0x1000, ip=0)``)
        as the debugger does: all or nothing (an unknown name or a value
        outside 0-FFFFh raises ValueError and writes nothing), and a new
        CS or IP starts a fresh instruction there -- not the rest of a REP
        string, not the HLT the CPU was sitting in.  FLAGS keeps its fixed
        bits (the 8088 cannot clear them).  Returns the registers after."""
        for name, value in values.items():
            if name not in self.REGISTER_NAMES:
                raise ValueError(f"unknown register {name!r} (supported: "
                                 f"{', '.join(self.REGISTER_NAMES)})")
            if isinstance(value, bool) or not isinstance(value, int) \
                    or not 0 <= value <= 0xFFFF:
                raise ValueError(f"register {name} must be a 16-bit value, not {value!r}")
        r = self.cpu.r
        for name, value in values.items():
            setattr(r, name, value)
        if "cs" in values or "ip" in values:
            ctl = self.cpu.ctl
            ctl[S.C_REP_RESUME] = 0
            ctl[S.C_HALTED] = 0
        return r.as_dict()

    _host_io = False        # io_read/io_write in progress (io_source)

    def io_read(self, port, width=1):
        """Read ``port`` from the host as a guest IN would (the device's
        read side effects included), then let the scheduler recompute the
        next device event (the read may have moved it)."""
        self._host_io = True
        try:
            value = self.ports.read(port & 0xFFFF, width)
        finally:
            self._host_io = False
            self.scheduler.invalidate()
        return value

    def io_write(self, port, value, width=1):
        """Write ``port`` from the host as a guest OUT would; returns
        whether a device (or a fast-path primitive) took it."""
        self._host_io = True
        try:
            handled = self.ports.write(port & 0xFFFF, value, width)
        finally:
            self._host_io = False
            self.scheduler.invalidate()
        return bool(handled)

    def io_source(self, port, width):
        """Where the port access being made right now comes from, for a
        port observer: None for the host (:meth:`io_read`/:meth:`io_write`),
        else ``(cs, ip)`` of the guest instruction -- the OUT itself while
        the machine answers an OUT exit (the core has already moved CS:IP
        past it, so this backs up over ``OUT imm8``/``OUT DX``), else CS:IP
        (an IN is answered before it completes; firmware runs at its
        trap)."""
        if self._host_io:
            return None
        regs = self.cpu.regs
        cs, ip = int(regs[S.CS]), int(regs[S.IP])
        ctl = self.cpu.ctl
        if int(ctl[S.C_EXIT]) == S.EXIT_IO_OUT and int(ctl[S.C_EXIT_PORT]) == port:
            mem = self.memory.mem

            def byte(back):
                return int(mem[((cs << 4) + ((ip - back) & 0xFFFF)) & 0xFFFFF])
            wide = width == 2
            if byte(2) == (0xE7 if wide else 0xE6) and byte(1) == port:
                ip -= 2
            elif byte(1) == (0xEF if wide else 0xEE) and int(regs[S.DX]) == port:
                ip -= 1
        return cs, ip & 0xFFFF

    @property
    def emulated_seconds(self):
        return self.clock() / CPU_HZ


# RET imm, RET, RETF imm, RETF (and their 8088 aliases C0h/C1h, C8h/C9h), IRET
_RETURNS = frozenset((0xC0, 0xC1, 0xC2, 0xC3, 0xC8, 0xC9, 0xCA, 0xCB, 0xCF))


class _Storage:
    """What a card's board may know of the machine's drives (the
    ``storage`` of :class:`~pypc_core.board.Backplane`)."""

    def __init__(self, machine):
        self._machine = machine
        self.drives = machine.disks
        self.builtin_bios = not machine.config.bare and not machine.config.bios

    def floppy_drive_count(self):
        return self._machine.floppy_drives

    def open_disk(self, path, kind, owner, option=None):
        return self._machine.open_card_disk(path, kind, owner, option)


def _check_distinct_images(drives):
    """One writable image behind two drives would be written through both
    (and its lock would report it "in use" by this very instance)."""
    seen = []
    for drive, path in drives:
        if not path:
            continue
        for other_drive, other_path in seen:
            try:
                same = os.path.samefile(path, other_path)
            except OSError:
                continue             # a missing file is reported when it is opened
            if same:
                raise MachineError(
                    f"{path!r} is the image of both {other_drive} and {drive}; give each "
                    f"drive its own image (or share it with --readonly or --cow)")
        seen.append((drive, path))


def _read_file(path, what):
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise MachineError(f"{path}: cannot read {what}: {exc.strerror or exc}") from exc
