"""ESP peer for tests/esp_scapy.rs: Scapy's SecurityAssociation (transport
mode over IPv4) seals and opens ESP packets on request.

Reads one JSON object per line on stdin, writes one per line on stdout:

  {"op": "seal", "auth", "enc_key", "auth_key", "spi", "seq", "esn", "nh",
   "payload", "iv"}                         -> {"packet": hex from the SPI on}
  {"op": "open", same keys but "packet"}    -> {"nh", "payload"} or {"error"}

`auth` is Scapy's name (HMAC-SHA1-96, SHA2-256-128, SHA2-384-192, SHA2-512-256); keys,
payloads, IVs and packets are hex; `seq` is the full 64-bit number.
Exits with status 3 and a message on stderr if Scapy cannot be imported.
"""

import json
import sys

try:
    from scapy.layers.inet import IP
    from scapy.layers.ipsec import ESP, SecurityAssociation
    from scapy.packet import Raw
except ImportError as e:  # pragma: no cover
    print(f"scapy unavailable: {e}", file=sys.stderr)
    sys.exit(3)


def sa_for(req):
    return SecurityAssociation(
        ESP,
        spi=req["spi"],
        crypt_algo="AES-CBC",
        crypt_key=bytes.fromhex(req["enc_key"]),
        auth_algo=req["auth"],
        auth_key=bytes.fromhex(req["auth_key"]),
        esn_en=req["esn"],
        esn=req["seq"] >> 32,
    )


def seal(req):
    sa = sa_for(req)
    pkt = IP(src="192.0.2.1", dst="192.0.2.2", proto=req["nh"]) / Raw(
        bytes.fromhex(req["payload"])
    )
    out = sa.encrypt(
        pkt,
        seq_num=req["seq"] & 0xFFFFFFFF,
        iv=bytes.fromhex(req["iv"]),
        esn_en=req["esn"],
        esn=req["seq"] >> 32,
    )
    return {"packet": bytes(out[ESP]).hex()}


def open_(req):
    sa = sa_for(req)
    wire = bytes(IP(src="192.0.2.1", dst="192.0.2.2", proto=50) / Raw(bytes.fromhex(req["packet"])))
    try:
        out = sa.decrypt(IP(wire), esn_en=req["esn"], esn=req["seq"] >> 32)
    except Exception as e:  # Scapy raises IPSecIntegrityError and others
        return {"error": type(e).__name__}
    return {"nh": out.proto, "payload": bytes(out.payload).hex()}


for line in sys.stdin:
    req = json.loads(line)
    res = seal(req) if req["op"] == "seal" else open_(req)
    print(json.dumps(res), flush=True)
