"""JWE peer for tests/jwe_jwcrypto.rs: jwcrypto (PyPI) produces and
consumes compact serializations with "alg":"dir".

Reads one JSON object per line on stdin, writes one per line on stdout:

  {"op": "encrypt", "enc", "key", "plaintext"} -> {"token": compact JWE}
  {"op": "decrypt", "key", "token"}            -> {"plaintext"} or {"error"}

Keys and plaintexts are hex. Exits with status 3 and a message on stderr if
jwcrypto cannot be imported.
"""

import json
import sys

try:
    from jwcrypto import jwe, jwk
    from jwcrypto.common import json_encode
except ImportError as e:  # pragma: no cover
    print(f"jwcrypto unavailable: {e}", file=sys.stderr)
    sys.exit(3)


def key_of(req):
    return jwk.JWK.from_json(
        json.dumps({"kty": "oct", "k": jwk.base64url_encode(bytes.fromhex(req["key"]))})
    )


def encrypt(req):
    token = jwe.JWE(
        bytes.fromhex(req["plaintext"]),
        protected=json_encode({"alg": "dir", "enc": req["enc"]}),
    )
    token.add_recipient(key_of(req))
    return {"token": token.serialize(compact=True)}


def decrypt(req):
    token = jwe.JWE()
    try:
        token.deserialize(req["token"], key=key_of(req))
    except Exception as e:  # jwcrypto raises InvalidJWEData and others
        return {"error": f"{type(e).__name__}: {e}"}
    return {"plaintext": token.payload.hex()}


for line in sys.stdin:
    req = json.loads(line)
    res = encrypt(req) if req["op"] == "encrypt" else decrypt(req)
    print(json.dumps(res), flush=True)
