"""argparse value types that several groups of ``pypc run`` options share,
and the one rule for which runs listen on the contract's default ports."""

import argparse


def tcp_port(text):
    """A TCP port for a server option: 1-65535, or 0 for any free port."""
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port {value} is outside 0-65535")
    return value


def positive_float(text):
    """A number greater than 0 (seconds, a speed factor)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be greater than 0")
    return value


def server_role(args):
    """True for a ``pypc run`` that serves someone, and so listens on the
    contract's default ports (JSON-RPC 2301, telnet 2300, VNC 5902) unless
    told otherwise: the live view (without --headless) of a machine or of the
    COMMAND shell (--drive), and the agent server (--headless --serve).

    Every other run is a job -- --headless without --serve, a PROGRAM (live
    or not), --bare, ``pypc screenshot`` -- and opens only the listeners
    whose port option it names (--rpc-port, --telnet-port, --vnc-port), so
    any number of jobs run side by side and beside a live pypc."""
    if getattr(args, "serve", False):
        return True
    return not (getattr(args, "headless", False) or getattr(args, "program", None)
                or getattr(args, "bare", False))


def speed_from_args(args):
    """The machine speed ``--turbo`` / ``--speed X`` ask for (0: unpaced;
    default 1.0, a real XT)."""
    if args.turbo:
        return 0.0
    if args.speed:
        return float(args.speed)
    return 1.0
