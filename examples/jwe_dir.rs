//! Decrypts a JWE in compact serialization that uses direct encryption
//! (`"alg":"dir"`, RFC 7518 section 4.5) with `A128CBC-HS256` or
//! `A256CBC-HS512`, given the 32- or 64-byte content encryption key in hex,
//! and prints the plaintext.
//!
//! ```text
//! cargo run --example jwe_dir                     # the built-in token
//! cargo run --example jwe_dir -- KEY_HEX TOKEN
//! ```
//!
//! A compact JWE is five base64url parts joined by dots (RFC 7516 section
//! 7.1): protected header, encrypted key (empty for `dir`), IV, ciphertext,
//! tag. The additional authenticated data is the ASCII of the first part
//! as sent (RFC 7516 section 5.1, step 14), so it is used without decoding.

use cbc_hmac::jose::{CbcHmacAead, ContentEncryption};

/// Made by another JWE implementation with the key below.
const TOKEN: &str = "eyJhbGciOiJkaXIiLCJlbmMiOiJBMTI4Q0JDLUhTMjU2In0..-MHWYp7UpSsJYYJvySGA6A.84JA93xf5lABapNL1YYh93S0ZMNL1DCASNt5s0pPs_wfOjyQB24JqO3KVNeneb0teY9-ttv3_RRdD8F32LEEQQ.5Dl61-Nxsk733MpPYxnevA";
/// `JOSE dir example key, 32 bytes!!` in hex.
const KEY_HEX: &str = "4a4f534520646972206578616d706c65206b65792c2033322062797465732121";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (key_hex, token) = match args.as_slice() {
        [] => (KEY_HEX.to_string(), TOKEN.to_string()),
        [k, t] => (k.clone(), t.clone()),
        _ => return Err("usage: jwe_dir [KEY_HEX TOKEN]".into()),
    };
    let key = unhex(&key_hex).ok_or("the key is not hex")?;
    let plaintext = decrypt(&key, &token)?;
    println!("{}", String::from_utf8_lossy(&plaintext));
    Ok(())
}

/// Checks the header, splits the token and opens it.
fn decrypt(key: &[u8], token: &str) -> Result<Vec<u8>, Box<dyn std::error::Error>> {
    let parts: Vec<&str> = token.trim().split('.').collect();
    let [header, encrypted_key, iv, ciphertext, tag] = parts[..] else {
        return Err("a compact JWE has five parts".into());
    };
    let header_json = String::from_utf8(unb64url(header).ok_or("bad header encoding")?)?;
    // A JSON parser would be the real thing; the two members matter here.
    let compact: String = header_json.chars().filter(|c| !c.is_whitespace()).collect();
    if !compact.contains(r#""alg":"dir""#) || !encrypted_key.is_empty() {
        return Err(format!("not a direct-encryption JWE: {header_json}").into());
    }
    let enc = ContentEncryption::ALL
        .into_iter()
        .find(|e| compact.contains(&format!(r#""enc":"{}""#, e.name())))
        .ok_or_else(|| format!("no AES_CBC_HMAC_SHA2 \"enc\" in {header_json}"))?;
    let aead = CbcHmacAead::new(enc, key)?;
    let iv = unb64url(iv).ok_or("bad IV encoding")?;
    let mut data = unb64url(ciphertext).ok_or("bad ciphertext encoding")?;
    let tag = unb64url(tag).ok_or("bad tag encoding")?;
    let plaintext = aead.open_in_place(&iv, header.as_bytes(), &mut data, &tag)?;
    Ok(plaintext.to_vec())
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    let s = s.trim();
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok())
        .collect()
}

/// base64url without padding (RFC 7515 section 2).
fn unb64url(s: &str) -> Option<Vec<u8>> {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for c in s.bytes() {
        acc = (acc << 6) | ALPHABET.iter().position(|&x| x == c)? as u32;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    (bits < 6).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_token_decrypts_and_a_forgery_does_not() {
        let key = unhex(KEY_HEX).unwrap();
        assert_eq!(
            decrypt(&key, TOKEN).unwrap(),
            br#"Decrypted by cbc-hmac: A128CBC-HS256 with "alg":"dir"."#
        );
        let forged = TOKEN.replacen("-MHW", "-MHX", 1);
        assert!(decrypt(&key, &forged).is_err());
        assert!(decrypt(&key[..31], TOKEN).is_err());
    }
}
