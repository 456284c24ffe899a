//! JWE `A128CBC-HS256` and `A256CBC-HS512` with `"alg":"dir"` against an independent
//! implementation: jwcrypto (PyPI), through `tests/cross/jwe.py`. jwcrypto
//! decrypts the compact serializations we produce and we decrypt the ones
//! it produces, for many lengths, on every available backend; a tampered
//! token is refused by both. Skips, saying so, when python3 or jwcrypto is
//! missing (`pip install jwcrypto==1.6.1`).

#[path = "cross/mod.rs"]
mod cross;

use cbc_hmac::jose::{CbcHmacAead, ContentEncryption};
use cbc_hmac::{Backend, Error};
use cross::{Peer, b64url, field, hex, unb64url};

/// Opens a compact serialization with our AEAD.
fn open(aead: &CbcHmacAead, token: &str) -> Result<Vec<u8>, Error> {
    let parts: Vec<&str> = token.split('.').collect();
    assert_eq!(parts.len(), 5, "compact serialization: {token}");
    assert_eq!(parts[1], "", "dir has no encrypted key");
    let iv = unb64url(parts[2]).unwrap();
    let mut ciphertext = unb64url(parts[3]).unwrap();
    let tag = unb64url(parts[4]).unwrap();
    // The AAD is the ASCII of the encoded protected header (RFC 7516 5.1).
    aead.open_in_place(&iv, parts[0].as_bytes(), &mut ciphertext, &tag)
        .map(|p| p.to_vec())
}

#[test]
fn jwcrypto_decrypts_ours_and_we_decrypt_its() {
    let mut peer = match Peer::start("jwe.py", "jwcrypto.jwe") {
        Ok(p) => p,
        Err(why) => {
            eprintln!("SKIPPED: JWE cross-check with jwcrypto: {why}");
            return;
        }
    };
    assert_eq!(b64url(b"\xfb\xff"), "-_8");
    assert_eq!(unb64url("-_8").unwrap(), b"\xfb\xff");
    let mut checked = 0;
    for enc in [
        ContentEncryption::A128CbcHs256,
        ContentEncryption::A256CbcHs512,
    ] {
        let header = b64url(format!(r#"{{"alg":"dir","enc":"{}"}}"#, enc.name()).as_bytes());
        for backend in Backend::available() {
            // jwcrypto 1.6 refuses an empty payload even from itself, so the
            // lengths start at 1 (tests/jose.rs covers 0).
            for len in [1usize, 15, 16, 17, 100, 1024, 5000] {
                let key: Vec<u8> = (0..enc.key_len()).map(|i| (i * 7 + len) as u8).collect();
                let msg: Vec<u8> = (0..len).map(|i| (i * 31 + 5) as u8).collect();
                let mut aead = CbcHmacAead::with_backend(enc, &key, backend).unwrap();
                let at = format!("{} {len} bytes on {backend}", enc.name());

                // Ours -> jwcrypto.
                let mut buf = msg.clone();
                buf.resize(CbcHmacAead::ciphertext_len(len), 0);
                let mut iv = [0u8; 16];
                let mut tag = vec![0u8; enc.tag_len()];
                let n = aead
                    .seal_in_place(header.as_bytes(), &mut buf, len, &mut iv, &mut tag)
                    .unwrap();
                let token = format!(
                    "{header}..{}.{}.{}",
                    b64url(&iv),
                    b64url(&buf[..n]),
                    b64url(&tag)
                );
                let reply = peer.ask(&format!(
                    r#"{{"op": "decrypt", "key": "{}", "token": "{token}"}}"#,
                    hex(&key)
                ));
                assert_eq!(
                    field(&reply, "error"),
                    None,
                    "{at}: jwcrypto refuses ours: {reply}"
                );
                assert_eq!(field(&reply, "plaintext"), Some(hex(&msg).as_str()), "{at}");

                // A tampered tag: jwcrypto refuses it, and so do we.
                let mut bad_tag = tag.clone();
                bad_tag[5] ^= 1;
                let bad = format!(
                    "{header}..{}.{}.{}",
                    b64url(&iv),
                    b64url(&buf[..n]),
                    b64url(&bad_tag)
                );
                let reply = peer.ask(&format!(
                    r#"{{"op": "decrypt", "key": "{}", "token": "{bad}"}}"#,
                    hex(&key)
                ));
                assert!(
                    field(&reply, "error").is_some(),
                    "{at}: jwcrypto took a forgery"
                );
                assert_eq!(open(&aead, &bad), Err(Error::AuthenticationFailed), "{at}");

                // jwcrypto -> ours.
                let reply = peer.ask(&format!(
                    r#"{{"op": "encrypt", "enc": "{}", "key": "{}", "plaintext": "{}"}}"#,
                    enc.name(),
                    hex(&key),
                    hex(&msg)
                ));
                let theirs = field(&reply, "token").expect("token");
                assert_eq!(open(&aead, theirs).unwrap(), msg, "{at}: theirs");
                // Its header names the algorithm; changing one byte of it (the
                // AAD) breaks the tag.
                let mut tampered = theirs.to_string().into_bytes();
                tampered[3] ^= 1;
                let tampered = String::from_utf8(tampered).unwrap();
                assert_eq!(open(&aead, &tampered), Err(Error::AuthenticationFailed));
                checked += 1;
            }
        }
    }
    eprintln!("jwcrypto cross-check: {checked} token pairs, each way");
    assert!(checked >= 14);
}
