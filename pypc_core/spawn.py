"""Start a headless ``pypc run`` serving JSON-RPC, for the front ends that
attach over RPC (``pypc mcp``, ``pypc console``): on a Unix socket in a
private folder (mode 0700, the socket 0600), so only this user reaches it,
unless the run options name an RPC endpoint of their own."""

import os
import shutil
import subprocess
import sys
import tempfile
import threading

from .errors import PypcError

START_TIMEOUT_S = 300           # a cold start compiles the CPU core (about 25 s, more if loaded)
RUN_FOREVER = ["--timeout", "31536000"]      # a year of emulated time


class SpawnError(PypcError):
    pass


def viewer_args(run_args):
    """``--no-telnet`` / ``--no-vnc`` for each viewer RUN_ARGS does not
    name: a spawned pypc is a private one, so it leaves the viewers' default
    ports (2300, 5902) to a pypc the user runs, and serves a viewer only
    when asked (``--vnc-port 5910`` among RUN_ARGS)."""
    named = {a.split("=", 1)[0] for a in run_args}
    if "--no-viewers" in named:
        return []
    return [off for port, off in (("--telnet-port", "--no-telnet"), ("--vnc-port", "--no-vnc"))
            if port not in named and off not in named]


class SpawnedPypc:
    """``pypc run --headless --rpc-socket DIR/rpc.sock --timeout 31536000
    RUN_ARGS`` (DIR a private temporary folder; ``--rpc-port 0`` instead when
    RUN_ARGS name --rpc-port or --rpc-socket themselves; a ``--timeout`` in
    RUN_ARGS wins; no viewers unless RUN_ARGS name their ports:
    :func:`viewer_args`).  :attr:`socket_path` (or :attr:`port`) is its
    JSON-RPC endpoint.  Its stdout is discarded (it may be another
    protocol's channel) and its stderr, after the endpoint line, is copied to
    ``stderr``."""

    def __init__(self, run_args=(), stderr=None):
        self.stderr = stderr or sys.stderr
        run_args = [str(a) for a in run_args]
        named = {a.split("=", 1)[0] for a in run_args}
        self.folder = None
        if named & {"--rpc-port", "--rpc-socket"}:
            endpoint = ["--rpc-port", "0"]
        else:
            self.folder = tempfile.mkdtemp(prefix="pypc-")      # mode 0700
            endpoint = ["--rpc-socket", os.path.join(self.folder, "rpc.sock")]
        cmd = [sys.executable, "-m", "pypc_core.cli", "run", "--headless", *endpoint,
               *RUN_FOREVER, *viewer_args(run_args), *run_args]
        self.process = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        where, lines = None, []
        timer = threading.Timer(START_TIMEOUT_S, self.process.kill)
        timer.start()
        try:
            for raw in self.process.stderr:
                line = raw.decode("utf-8", "replace")
                if line.startswith("pypc: JSON-RPC on "):
                    where = line[len("pypc: JSON-RPC on "):].strip()
                    break
                lines.append(line)
        finally:
            timer.cancel()
        if where is None:
            self.process.wait()
            self._remove_folder()
            raise SpawnError("the pypc it started ended before serving JSON-RPC: " +
                             (" ".join("".join(lines).split()) or
                              f"exit status {self.process.returncode}"))
        if where.startswith("unix:"):
            self.socket_path, self.port = where[len("unix:"):], None
        else:
            self.socket_path, self.port = None, int(where.rsplit(":", 1)[1])
        threading.Thread(target=self._drain, daemon=True).start()

    def _remove_folder(self):
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    def _drain(self):
        for raw in self.process.stderr:
            try:
                self.stderr.write(raw.decode("utf-8", "replace"))
                self.stderr.flush()
            except (OSError, ValueError):
                return

    def close(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._remove_folder()
