#!/usr/bin/env python3
"""SSH client for tests/ssh_proxy.rs: paramiko, one cipher and one MAC.

Connects to HOST:PORT (the test's re-sealing proxy), authenticates as USER
with the ed25519 KEY, runs COMMAND and prints its output after "OUTPUT: ".
The session keys paramiko derives (RFC 4253 section 7.2, letters A to F)
are appended to KEYLOG as "LETTER HEX" lines, one per key, as soon as they
are computed, so the proxy can open and re-seal the packets of both
directions. On any failure prints "ERROR: ..." and exits with status 1.

usage: ssh_proxy_client.py HOST PORT USER KEY CIPHER MAC KEYLOG STRICT COMMAND
STRICT is "strict" to offer strict key exchange (sequence numbers restart
at NEWKEYS) or "plain" (they count on from the first packet).
"""

import sys

import paramiko
from paramiko.transport import Transport


def main():
    host, port, user, key, cipher, mac, keylog, strict, command = sys.argv[1:]
    log = open(keylog, "a", buffering=1)
    compute_key = Transport._compute_key

    def logged_compute_key(self, letter, nbytes):
        out = compute_key(self, letter, nbytes)
        log.write(f"{letter} {out.hex()}\n")
        log.flush()
        return out

    Transport._compute_key = logged_compute_key

    # paramiko knows the -etm@openssh.com forms of hmac-sha2 only; its EtM
    # path is the same for any MAC (chosen by the name's suffix), so the
    # SHA-1 form is registered as its plain form is.
    if "hmac-sha1-etm@openssh.com" not in Transport._mac_info:
        Transport._mac_info["hmac-sha1-etm@openssh.com"] = dict(
            Transport._mac_info["hmac-sha1"]
        )

    transport = Transport((host, int(port)), strict_kex=(strict == "strict"))
    options = transport.get_security_options()
    # CBC is in paramiko's list; naming exactly one cipher and one MAC
    # (and the key exchange and host key sshd offers) leaves no choice.
    options.ciphers = (cipher,)
    options.digests = (mac,)
    options.kex = ("curve25519-sha256@libssh.org",)
    options.key_types = ("ssh-ed25519",)
    try:
        transport.start_client(timeout=20)
        if transport.remote_cipher != cipher or transport.remote_mac != mac:
            raise RuntimeError(
                f"negotiated {transport.remote_cipher}/{transport.remote_mac}"
            )
        transport.auth_publickey(user, paramiko.Ed25519Key.from_private_key_file(key))
        channel = transport.open_session(timeout=20)
        channel.settimeout(20)
        channel.exec_command(command)
        output = b""
        while True:
            chunk = channel.recv(4096)
            if not chunk:
                break
            output += chunk
        status = channel.recv_exit_status()
        print(f"OUTPUT: {output.decode(errors='replace').strip()}")
        print(f"EXIT: {status}")
        transport.close()
    except Exception as e:  # every failure is reported the same way
        cause = transport.get_exception()
        print(f"ERROR: {type(e).__name__}: {e}; transport: {cause!r}")
        sys.stdout.flush()
        transport.close()
        sys.exit(1)


if __name__ == "__main__":
    main()
