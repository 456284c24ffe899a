"""SSH peer for tests/ssh_cryptography.rs: RFC 4253 section 6 binary
packets (and OpenSSH's -etm@openssh.com form) written from the RFC over
Python's `cryptography` (AES-CBC, HMAC), sealing and opening on request.

Reads one JSON object per line on stdin, writes one per line on stdout:

  {"op": "seal", "cipher", "mac", "enc_key", "iv", "mac_key", "seq",
   "payloads": "hex,hex,...", "paddings": "hex,hex,..."}
      -> {"wire": hex of the packets back to back}
  {"op": "open", same keys but "wire" and "count"}
      -> {"payloads": "hex,hex,..."} or {"error": ...}

The CBC chain runs on from packet to packet, from `iv`; `seq` is the
sequence number of the first packet, incremented (mod 2^32) per packet.
Exits with status 3 and a message on stderr if `cryptography` is missing.
vectors/make-ssh-packets.py imports `seal` from here.
"""

import json
import struct
import sys

try:
    from cryptography.hazmat.primitives import constant_time, hashes, hmac
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
except ImportError as e:  # pragma: no cover
    print(f"cryptography unavailable: {e}", file=sys.stderr)
    sys.exit(3)

HASHES = {"hmac-sha1": hashes.SHA1, "hmac-sha2-256": hashes.SHA256, "hmac-sha2-512": hashes.SHA512}
ETM = "-etm@openssh.com"


def suite(req):
    mac = req["mac"]
    etm = mac.endswith(ETM)
    if etm:
        mac = mac[: -len(ETM)]
    key = bytes.fromhex(req["enc_key"])
    assert req["cipher"] == {16: "aes128-cbc", 32: "aes256-cbc"}[len(key)]
    cipher = Cipher(algorithms.AES(key), modes.CBC(bytes.fromhex(req["iv"])))
    return cipher, HASHES[mac], bytes.fromhex(req["mac_key"]), etm


def mac_of(h, key, seq, data):
    m = hmac.HMAC(key, h())
    m.update(struct.pack(">I", seq & 0xFFFFFFFF) + data)
    return m.finalize()


def seal(req):
    cipher, h, mac_key, etm = suite(req)
    enc = cipher.encryptor()
    seq = req["seq"]
    out = b""
    payloads = req["payloads"].split(",")
    paddings = req["paddings"].split(",")
    for payload, padding in zip(payloads, paddings):
        payload, padding = bytes.fromhex(payload), bytes.fromhex(padding)
        body = bytes([len(padding)]) + payload + padding
        length = struct.pack(">I", len(body))
        if etm:
            assert len(body) % 16 == 0
            ct = length + enc.update(body)
            out += ct + mac_of(h, mac_key, seq, ct)
        else:
            plain = length + body
            assert len(plain) % 16 == 0
            out += enc.update(plain) + mac_of(h, mac_key, seq, plain)
        seq += 1
    return {"wire": out.hex()}


def open_(req):
    cipher, h, mac_key, etm = suite(req)
    dec = cipher.decryptor()
    seq = req["seq"]
    wire = bytes.fromhex(req["wire"])
    mac_len = h.digest_size
    at = 0
    payloads = []
    for _ in range(req["count"]):
        if etm:
            (length,) = struct.unpack(">I", wire[at : at + 4])
            ct = wire[at : at + 4 + length]
            tag = wire[at + 4 + length : at + 4 + length + mac_len]
            if not constant_time.bytes_eq(mac_of(h, mac_key, seq, ct), tag):
                return {"error": f"bad MAC at packet {len(payloads)}"}
            body = dec.update(ct[4:])
            plain = ct[:4] + body
        else:
            first = dec.update(wire[at : at + 16])
            (length,) = struct.unpack(">I", first[:4])
            if length + 4 > 256 * 1024 or (length + 4) % 16:
                return {"error": f"bad length {length}"}
            plain = first + dec.update(wire[at + 16 : at + 4 + length])
            tag = wire[at + 4 + length : at + 4 + length + mac_len]
            if not constant_time.bytes_eq(mac_of(h, mac_key, seq, plain), tag):
                return {"error": f"bad MAC at packet {len(payloads)}"}
        pad = plain[4]
        if pad < 4 or pad > length - 1:
            return {"error": f"bad padding length {pad}"}
        payloads.append(plain[5 : 4 + length - pad].hex())
        at += 4 + length + mac_len
        seq += 1
    if at != len(wire):
        return {"error": f"{len(wire) - at} bytes left over"}
    return {"payloads": ",".join(payloads)}


if __name__ == "__main__":
    for line in sys.stdin:
        req = json.loads(line)
        resp = seal(req) if req["op"] == "seal" else open_(req)
        print(json.dumps(resp), flush=True)
