#!/usr/bin/env python3
"""Generate vectors/tls-records.txt: known-answer TLS/DTLS CBC records.

Every byte of cryptography (AES-CBC and HMAC) is computed by the system
`openssl` command-line tool, invoked through subprocess; this script only
lays out record formats and picks inputs. It does not use Python's
hashlib/hmac modules, and it shares no code with the cbc-hmac crate, so
the records are an independent check of the crate's sealer and opener.

Record formats:
  - MAC input header (RFC 5246 6.2.3.1, RFC 2246, RFC 4346):
      seq(8, big-endian) || content_type(1) || version(2) || length(2)
    For DTLS (RFC 4347 4.1.2.1, RFC 6347 4.1.2.1) seq is epoch(2) || sequence(6).
  - MAC-then-encrypt (RFC 5246 6.2.3.2):
      mac = HMAC(mac_key, header(len = plaintext_len) || plaintext)
      ciphertext = AES-CBC(enc_key, iv, plaintext || mac || padding)
      fragment = explicit IV || ciphertext   (TLS 1.1+, DTLS)
                 ciphertext                  (TLS 1.0: IV = initial chained IV)
  - Encrypt-then-MAC (RFC 7366 3):
      ciphertext = AES-CBC(enc_key, iv, plaintext || padding)
      f0 = explicit IV || ciphertext   (TLS 1.0: ciphertext)
      fragment = f0 || HMAC(mac_key, header(len = len(f0)) || f0)
  - Padding is minimal: p+1 bytes, each equal to p (0 <= p <= 15), so that
    the padded data is a whole number of 16-byte blocks.

Usage (from the crate root):
    python3 vectors/make-tls-records.py            # writes vectors/tls-records.txt
    python3 vectors/make-tls-records.py -o FILE    # writes FILE instead

The output is deterministic: a fixed seed picks keys, IVs, sequence numbers,
content types and plaintexts.
"""

import argparse
import os
import random
import subprocess
import sys

SEED = 0x7C5_C8C_4D4C  # fixed: picks inputs only

OPENSSL = os.environ.get("OPENSSL", "openssl")

# name -> (AES key length, openssl cipher, openssl digest, MAC length)
COMBINATIONS = [
    ("AES-128-CBC-SHA1", 16, "aes-128-cbc", "SHA1", 20),
    ("AES-256-CBC-SHA1", 32, "aes-256-cbc", "SHA1", 20),
    ("AES-128-CBC-SHA256", 16, "aes-128-cbc", "SHA256", 32),
    ("AES-256-CBC-SHA256", 32, "aes-256-cbc", "SHA256", 32),
    ("AES-256-CBC-SHA384", 32, "aes-256-cbc", "SHA384", 48),
]

# name -> (wire version bytes, is DTLS)
VERSIONS = [
    ("TLS1.0", bytes([0x03, 0x01]), False),
    ("TLS1.1", bytes([0x03, 0x02]), False),
    ("TLS1.2", bytes([0x03, 0x03]), False),
    ("DTLS1.0", bytes([0xFE, 0xFF]), True),
    ("DTLS1.2", bytes([0xFE, 0xFD]), True),
]

MAC_ORDERS = ["MacThenEncrypt", "EncryptThenMac"]

# Block (16) and hash-block (64, 128) boundaries, and the maximum 2^14.
PLAINTEXT_LENGTHS = [
    0, 1, 15, 16, 17, 31, 32, 47, 48, 63, 64, 65,
    127, 128, 255, 256, 1000, 16384,
]

CONTENT_TYPES = [20, 21, 22, 23]


def allowed(combination, version):
    """SHA-256 and SHA-384 suites exist in TLS 1.2 and DTLS 1.2 only."""
    if combination.endswith("SHA1"):
        return True
    return version in ("TLS1.2", "DTLS1.2")


def run(args, data):
    proc = subprocess.run(
        [OPENSSL] + args, input=data, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, check=False,
    )
    if proc.returncode != 0:
        sys.exit("openssl %s failed: %s" % (" ".join(args),
                                             proc.stderr.decode(errors="replace")))
    return proc.stdout


def openssl_version():
    return run(["version"], b"").decode().strip()


def hmac(digest, key, data):
    out = run(["mac", "-digest", digest, "-macopt", "hexkey:" + key.hex(),
               "-binary", "HMAC"], data)
    return out


def aes_cbc_encrypt(cipher, key, iv, data):
    assert len(data) % 16 == 0
    out = run(["enc", "-" + cipher, "-e", "-nopad", "-nosalt",
               "-K", key.hex(), "-iv", iv.hex()], data)
    assert len(out) == len(data), (len(out), len(data))
    return out


def aes_cbc_decrypt(cipher, key, iv, data):
    return run(["enc", "-" + cipher, "-d", "-nopad", "-nosalt",
                "-K", key.hex(), "-iv", iv.hex()], data)


def padding(n):
    """Minimal TLS CBC padding after n bytes: p+1 bytes of value p."""
    p = 15 - (n % 16)
    return bytes([p]) * (p + 1)


def mac_header(seq, content_type, version, length):
    return (seq.to_bytes(8, "big") + bytes([content_type]) + version
            + length.to_bytes(2, "big"))


def make_record(rng, combination, version, order):
    name, key_len, cipher, digest, mac_len = combination
    vname, vbytes, dtls = version
    enc_key = rng.randbytes(key_len)
    mac_key = rng.randbytes(mac_len)
    iv = rng.randbytes(16)
    if dtls:
        epoch = rng.getrandbits(16)
        sequence = rng.getrandbits(48)
        seq = (epoch << 48) | sequence
    else:
        seq = rng.getrandbits(64)
    content_type = rng.choice(CONTENT_TYPES)
    return name, vname, vbytes, enc_key, mac_key, iv, seq, content_type


def seal(combination, version, order, enc_key, mac_key, iv, seq, content_type,
         plaintext):
    _, _, cipher, digest, mac_len = combination
    vname, vbytes, _ = version
    explicit_iv = b"" if vname == "TLS1.0" else iv
    if order == "MacThenEncrypt":
        mac = hmac(digest, mac_key,
                   mac_header(seq, content_type, vbytes, len(plaintext)) + plaintext)
        assert len(mac) == mac_len
        body = plaintext + mac + padding(len(plaintext) + mac_len)
        ct = aes_cbc_encrypt(cipher, enc_key, iv, body)
        fragment = explicit_iv + ct
        # Self-check: openssl decrypts it back to the body.
        assert aes_cbc_decrypt(cipher, enc_key, iv, ct) == body
    else:
        body = plaintext + padding(len(plaintext))
        ct = aes_cbc_encrypt(cipher, enc_key, iv, body)
        f0 = explicit_iv + ct
        mac = hmac(digest, mac_key,
                   mac_header(seq, content_type, vbytes, len(f0)) + f0)
        assert len(mac) == mac_len
        fragment = f0 + mac
        assert aes_cbc_decrypt(cipher, enc_key, iv, ct) == body
    return fragment


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("-o", "--output", default=os.path.join(here, "tls-records.txt"))
    args = ap.parse_args()

    rng = random.Random(SEED)
    version_line = openssl_version()
    lines = [
        "# Known-answer TLS/DTLS CBC record fragments for the cbc-hmac crate.",
        "#",
        "# Generated by vectors/make-tls-records.py; to regenerate, run from the",
        "# crate root:",
        "#   python3 vectors/make-tls-records.py",
        "# All AES-CBC and HMAC is computed by the openssl command line tool",
        "# (`openssl enc -nopad`, `openssl mac HMAC`), independent of this crate:",
        "#   " + version_line,
        "# Inputs are picked by random.Random(%#x); the output is deterministic." % SEED,
        "#",
        "# Formats: RFC 2246 / RFC 4346 / RFC 5246 6.2.3.2 (MacThenEncrypt) and",
        "# RFC 7366 (EncryptThenMac), minimal padding. MAC header is",
        "# seq(8) || type(1) || version(2) || length(2); DTLS Seq is epoch<<48|seq.",
        "# IV is the explicit IV (first 16 bytes of Fragment), or for TLS1.0 the",
        "# initial chained IV from the key block (Fragment has no IV then).",
        "# Seq and ContentType are decimal; the other values are hex.",
    ]
    count = 0
    for combination in COMBINATIONS:
        for version in VERSIONS:
            if not allowed(combination[0], version[0]):
                continue
            for order in MAC_ORDERS:
                for length in PLAINTEXT_LENGTHS:
                    (name, vname, _, enc_key, mac_key, iv, seq,
                     content_type) = make_record(rng, combination, version, order)
                    plaintext = rng.randbytes(length)
                    fragment = seal(combination, version, order, enc_key, mac_key,
                                    iv, seq, content_type, plaintext)
                    lines += [
                        "",
                        "Combination = " + name,
                        "Version = " + vname,
                        "MacOrder = " + order,
                        "EncKey = " + enc_key.hex(),
                        "MacKey = " + mac_key.hex(),
                        "IV = " + iv.hex(),
                        "Seq = %d" % seq,
                        "ContentType = %d" % content_type,
                        "Plaintext = " + plaintext.hex(),
                        "Fragment = " + fragment.hex(),
                    ]
                    count += 1
    with open(args.output, "w", encoding="ascii", newline="\n") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote %d records to %s" % (count, args.output), file=sys.stderr)


if __name__ == "__main__":
    main()
