"""Method group ``dos``: the built-in DOS of a machine started with a
program or a drive (``pypc run PROGRAM`` / ``--drive``).

* ``dos.status``: has the DOS booted, has its first program ended and with
  which exit code, the current PSP, how many console bytes were written;
* ``dos.memory_map``: the MCB chain (block segment, size in paragraphs,
  owner PSP -- 0 free, 8 DOS --, name, last block).

Both read Python-side state and guest memory only (no side effect) and
answer while the machine runs too.  Without the built-in DOS they fail with
reason ``UNSUPPORTED``."""

from pypc_core import hookimpl
from pypc_core.rpc import needs_live_target
from pypc_core.dos import DosError
from pypc_core.rpc.errors import invalid


def _dos(ctl, method):
    dos = getattr(ctl.machine, "dos", None)
    if dos is None:
        raise invalid(f"{method}: this machine runs no built-in DOS (start pypc with a "
                      f"PROGRAM or --drive)", "UNSUPPORTED")
    return dos


def status(ctl, params):
    dos = _dos(ctl, "dos.status")
    out = {"booted": bool(dos.booted), "exited": bool(dos.exited),
           "current_psp": int(dos.current_psp),
           "console_bytes": len(dos.console_out),
           "state_revision": ctl.revision}
    if dos.config.program:
        out["program"] = dos.config.program
    if dos.exited:
        out["exit_code"] = int(dos.exit_code)
    return out


@needs_live_target
def memory_map(ctl, params):
    dos = _dos(ctl, "dos.memory_map")
    try:
        blocks = dos.memory_map()
    except DosError:
        raise invalid("the DOS memory chain is broken (a program overwrote an MCB)",
                      "PRECONDITION_FAILED") from None
    return {"blocks": [{"mcb": b["mcb"], "segment": b["segment"], "size": b["size"],
                        "owner": b["owner"], "name": b["name"], "last": b["last"]}
                       for b in blocks],
            "state_revision": ctl.revision}


@hookimpl
def pypc_rpc_methods():
    return {"dos.status": status, "dos.memory_map": memory_map}
