"""argparse value types that several groups of ``pypc run`` options share."""

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
