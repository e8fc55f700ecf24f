"""RFB VNC Authentication (security type 2) for the VNC viewer
(--vnc-password-file): the DES it is built on against the standard's
example and an independent implementation, a real client (vncdotool) with
the right password, and hand-written RFB clients with a wrong one, with
None, and with protocol 3.3."""

import os
import socket
import struct
import subprocess

import numpy as np
import pytest

from test_launcher import pypc_command, pypc_env
from viewers_common import (CEILING_S, ECHO_BOOT, ViewerRig, at_prompt, recv_exactly,
                            rig_fixture)

from pypc_core.frontends import rfbauth

rig_factory = rig_fixture(ViewerRig)
PASSWORD = b"s3cret!"


def test_des_matches_the_standards_example():
    # the worked example every DES description uses (key 133457799BBCDFF1)
    assert rfbauth.des_encrypt_block(bytes.fromhex("133457799BBCDFF1"),
                                     bytes.fromhex("0123456789ABCDEF")) == \
        bytes.fromhex("85E813540F0AB405")
    # the NBS/NIST validation vectors: the all-zero key and block, and the "weak key"
    assert rfbauth.des_encrypt_block(bytes(8), bytes(8)) == bytes.fromhex("8CA64DE9C1B123A7")
    assert rfbauth.des_encrypt_block(b"\x01" * 8, bytes.fromhex("95F8A5E5DD31D900")) == \
        bytes.fromhex("8000000000000000")


def test_des_matches_an_independent_implementation():
    try:
        from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
    except ImportError:
        try:
            from cryptography.hazmat.primitives.ciphers.algorithms import TripleDES
        except ImportError:
            pytest.skip("pyca/cryptography is not installed")
    from cryptography.hazmat.primitives.ciphers import Cipher, modes
    rng = np.random.default_rng(20)
    for _ in range(200):
        key, block = rng.bytes(8), rng.bytes(8)
        enc = Cipher(TripleDES(key * 3), modes.ECB()).encryptor()     # EDE with k1=k2=k3
        assert rfbauth.des_encrypt_block(key, block) == enc.update(block) + enc.finalize()


def test_the_vnc_key_reverses_each_bit_and_pads():
    assert rfbauth.vnc_key(b"\x01\x80") == b"\x80\x01" + bytes(6)
    assert rfbauth.vnc_key(b"abcdefghij") == rfbauth.vnc_key(b"abcdefgh")


def test_a_real_client_with_the_password_sees_the_frame(rig_factory):
    from test_vnc import capture
    from vncdotool import api
    rig = rig_factory(ECHO_BOOT, vnc_password=PASSWORD)
    assert rig.thread.run_until(at_prompt)
    c = api.connect(f"127.0.0.1::{rig.port}", password=PASSWORD.decode(), timeout=CEILING_S)
    try:
        assert np.array_equal(capture(c), rig.frame())
    finally:
        c.disconnect()


def rfb_open(port, version=b"RFB 003.008\n"):
    s = socket.create_connection(("127.0.0.1", port), timeout=CEILING_S)
    assert recv_exactly(s, 12) == b"RFB 003.008\n"
    s.sendall(version)
    return s


def closed(s):
    try:
        return s.recv(1) == b""
    except OSError:
        return True


def test_a_wrong_password_is_refused(rig_factory):
    rig = rig_factory(ECHO_BOOT, vnc_password=PASSWORD)
    with rfb_open(rig.port) as s:
        assert recv_exactly(s, 2) == b"\x01\x02"        # only VNC Authentication
        s.sendall(b"\x02")
        challenge = recv_exactly(s, 16)
        s.sendall(rfbauth.vnc_response(b"guess", challenge))
        status, n = struct.unpack("!II", recv_exactly(s, 8))
        assert status == 1 and recv_exactly(s, n) == b"authentication failed"
        assert closed(s)
    # the right answer to a fresh challenge passes; the server's own init follows
    with rfb_open(rig.port) as s:
        assert recv_exactly(s, 2) == b"\x01\x02"
        s.sendall(b"\x02")
        challenge = recv_exactly(s, 16)
        s.sendall(rfbauth.vnc_response(PASSWORD, challenge))
        assert struct.unpack("!I", recv_exactly(s, 4))[0] == 0
        s.sendall(b"\x01")                              # ClientInit
        w, h = struct.unpack("!HH", recv_exactly(s, 4))
        assert (w, h) == (640, 200)
    assert [r for _, r in rig.frontends.vnc.refusals] == \
        ["VNC Authentication failed (wrong password)"]


def test_security_type_none_is_refused_when_a_password_is_set(rig_factory):
    rig = rig_factory(ECHO_BOOT, vnc_password=PASSWORD)
    with rfb_open(rig.port) as s:
        assert recv_exactly(s, 2) == b"\x01\x02"
        s.sendall(b"\x01")
        status, n = struct.unpack("!II", recv_exactly(s, 8))
        assert status == 1 and b"VNC Authentication (2)" in recv_exactly(s, n)
        assert closed(s)


def test_protocol_3_3_gets_the_challenge_too(rig_factory):
    rig = rig_factory(ECHO_BOOT, vnc_password=PASSWORD)
    with rfb_open(rig.port, b"RFB 003.003\n") as s:
        assert struct.unpack("!I", recv_exactly(s, 4))[0] == 2
        challenge = recv_exactly(s, 16)
        s.sendall(bytes(16))                            # wrong
        assert struct.unpack("!I", recv_exactly(s, 4))[0] == 1      # (no reason in 3.3)
        assert closed(s)


def test_without_a_password_nothing_changes(rig_factory):
    rig = rig_factory(ECHO_BOOT)
    with rfb_open(rig.port) as s:
        assert recv_exactly(s, 2) == b"\x01\x01"
        s.sendall(b"\x01")
        assert struct.unpack("!I", recv_exactly(s, 4))[0] == 0


@pytest.mark.parametrize("extra, content, mode, words", [
    (["--vnc-password-file", "{f}"], "pw\n", 0o600, ["serves no VNC viewer"]),
    (["--vnc-port", "0", "--vnc-password-file", "{f}"], "pw\n", 0o644, ["chmod 600"]),
    (["--vnc-port", "0", "--vnc-password-file", "{f}"], "123456789\n", 0o600,
     ["longer than 8"]),
    (["--vnc-port", "0", "--vnc-password-file", "{f}"], "\n", 0o600, ["first line is empty"]),
])
def test_bad_password_files(tmp_path, extra, content, mode, words):
    f = tmp_path / "pw"
    f.write_text(content)
    os.chmod(f, mode)
    proc = subprocess.run(pypc_command() + ["run", "--headless", "--turbo", "--no-rpc",
                                            "--timeout", "1",
                                            *[a.format(f=f) for a in extra]],
                          env=pypc_env(), capture_output=True, text=True, timeout=240,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 2, proc.stderr
    line, = proc.stderr.strip().splitlines()
    assert line.startswith("pypc: error: --vnc-password-file")
    for w in words:
        assert w in line, line
