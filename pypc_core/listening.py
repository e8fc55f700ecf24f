"""Listening sockets for pypc's servers (the viewers, the JSON-RPC port, the
gdb stub): one bind rule and one busy-port error for all of them."""

import ipaddress
import socket

from .errors import PypcError


def check_listen_address(listen):
    """``--listen``'s value must be an IP address (a one-line error if not)."""
    if listen is None:
        return
    try:
        ipaddress.ip_address(listen)
    except ValueError:
        raise PypcError(f"--listen {listen!r} is not an IP address "
                        f"(e.g. 127.0.0.1, 0.0.0.0 or ::1)") from None


def listen_socket(host, port, option, backlog=8, error=PypcError, advice=None):
    """A listening TCP socket for one of pypc's servers (the viewers, the
    JSON-RPC port, the gdb stub), or a one-line ``error`` naming ``option``
    and the switch that turns the server off (``--telnet-port`` ->
    ``--no-telnet``), or ``advice`` instead of that for a server that is off
    unless asked for (``--web``)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(backlog)
    except OSError as exc:
        sock.close()
        if advice is None:
            off = "--no-" + option[2:].replace("-port", "")   # --no-telnet, --no-vnc, --no-rpc
            advice = f"pick another {option} or use {off}"
        raise error(f"{option} {port}: cannot listen on {host}:{port} "
                    f"({exc.strerror or exc}); another pypc may be using it: "
                    f"{advice}") from None
    return sock


def close_listener(sock):
    if sock is None:
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
