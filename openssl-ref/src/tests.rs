//! Known answers (NIST SP 800-38A, FIPS 180-4, RFC 2202, RFC 4231, records computed by
//! the `openssl` command line) and consistency between the stitched and the
//! composed record code.

use crate::*;

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn iv16(s: &str) -> [u8; 16] {
    hex(s).try_into().unwrap()
}

/// A fixed pseudo-random byte stream (xorshift64*), for test inputs.
fn bytes(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8
        })
        .collect()
}

#[test]
fn version_string() {
    assert!(version().starts_with("OpenSSL"), "{}", version());
}

// NIST SP 800-38A, F.2.1 - F.2.6.
const SP800_38A_PLAINTEXT: &str =
    "6bc1bee22e409f96e93d7e117393172a ae2d8a571e03ac9c9eb76fac45af8e51
     30c81c46a35ce411e5fbc1191a0a52ef f69f2445df4f9b17ad2b417be66c3710";
const SP800_38A_IV: &str = "000102030405060708090a0b0c0d0e0f";

#[test]
fn aes_128_cbc_sp800_38a() {
    let key = hex("2b7e151628aed2a6abf7158809cf4f3c");
    let expected = hex(
        "7649abac8119b246cee98e9b12e9197d 5086cb9b507219ee95db113a917678b2
         73bed6b8e3c1743b7116e69e22229516 3ff1caa1681fac09120eca307586e1a7",
    );
    check_cbc(&key, &expected);
}

#[test]
fn aes_256_cbc_sp800_38a() {
    let key = hex("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4");
    let expected = hex(
        "f58c4c04d6e5f1ba779eabfb5f7bfbd6 9cfc4e967edb808d679f777bc6702c7d
         39f23369a9d9bacfa530e26304231461 b2eb05e2c39be9fcda6c19078c6a9d1b",
    );
    check_cbc(&key, &expected);
}

fn check_cbc(key: &[u8], expected: &[u8]) {
    let iv = iv16(SP800_38A_IV);
    let plaintext = hex(SP800_38A_PLAINTEXT);
    let mut aes = EvpAesCbc::new(key).unwrap();
    // Twice through the same context: the IV is reset, the key reused.
    for _ in 0..2 {
        let mut data = plaintext.clone();
        aes.encrypt(&iv, &mut data).unwrap();
        assert_eq!(data, expected);
        aes.decrypt(&iv, &mut data).unwrap();
        assert_eq!(data, plaintext);
    }
    // Chaining: the second half with the first half's last block as IV.
    let mut tail = plaintext[32..].to_vec();
    aes.encrypt(&expected[16..32].try_into().unwrap(), &mut tail)
        .unwrap();
    assert_eq!(tail, expected[32..]);
    let mut data = plaintext.clone();
    aes_cbc_encrypt(key, &iv, &mut data).unwrap();
    assert_eq!(data, expected);
    aes_cbc_decrypt(key, &iv, &mut data).unwrap();
    assert_eq!(data, plaintext);
}

#[test]
fn aes_bad_input() {
    assert!(matches!(
        EvpAesCbc::new(&[0; 15]),
        Err(Error::InvalidInput(_))
    ));
    let mut aes = EvpAesCbc::new(&[0; 16]).unwrap();
    assert!(matches!(
        aes.encrypt(&[0; 16], &mut [0; 17]),
        Err(Error::InvalidInput(_))
    ));
    assert!(matches!(
        aes.decrypt(&[0; 16], &mut [0; 1]),
        Err(Error::InvalidInput(_))
    ));
    aes.encrypt(&[0; 16], &mut []).unwrap();
    // The context still works after refusing input.
    let mut block = [0u8; 16];
    aes.encrypt(&[0; 16], &mut block).unwrap();
    assert_eq!(block.to_vec(), hex("66e94bd4ef8a2c3b884cfa59ca342b2e"));
}

#[test]
fn hashes_fips_180_examples() {
    // FIPS 180-4's one-block "abc" examples and the empty message.
    let cases: [(Digest, &[u8], &str); 8] = [
        (
            Digest::Sha1,
            b"abc",
            "a9993e364706816aba3e25717850c26c9cd0d89d",
        ),
        (
            Digest::Sha1,
            b"",
            "da39a3ee5e6b4b0d3255bfef95601890afd80709",
        ),
        (
            Digest::Sha256,
            b"abc",
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
        ),
        (
            Digest::Sha256,
            b"",
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        ),
        (
            Digest::Sha384,
            b"abc",
            "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed\
             8086072ba1e7cc2358baeca134c825a7",
        ),
        (
            Digest::Sha384,
            b"",
            "38b060a751ac96384cd9327eb1b1e36a21fdb71114be07434c0cc7bf63f6e1da\
             274edebfe76f65fbd51ad2f14898b95b",
        ),
        (
            Digest::Sha512,
            b"abc",
            "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a\
             2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f",
        ),
        (
            Digest::Sha512,
            b"",
            "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce\
             47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e",
        ),
    ];
    for (digest, data, expected) in cases {
        let h = hash(digest, data).unwrap();
        assert_eq!(h.as_slice(), hex(expected), "{digest:?} of {data:?}");
    }
}

#[test]
fn hashes_agree_with_cbc_hmac() {
    // Every length around the block and padding boundaries, and a long one.
    for digest in Digest::ALL {
        let mac = match digest {
            Digest::Sha1 => cbc_hmac::MacAlgorithm::HmacSha1,
            Digest::Sha256 => cbc_hmac::MacAlgorithm::HmacSha256,
            Digest::Sha384 => cbc_hmac::MacAlgorithm::HmacSha384,
            Digest::Sha512 => cbc_hmac::MacAlgorithm::HmacSha512,
        };
        for len in (0..=260).chain([4095, 16384]) {
            let data = bytes(len as u64, len);
            let mut ours = [0u8; 64];
            let n = cbc_hmac::digest(mac, &data, &mut ours).unwrap();
            assert_eq!(
                hash(digest, &data).unwrap().as_slice(),
                &ours[..n],
                "{digest:?}, {len} bytes"
            );
        }
    }
}

#[test]
fn hmac_rfc2202_rfc4231() {
    // (digest, key, data, tag): RFC 2202 test cases 1, 2 and 6 (SHA-1);
    // RFC 4231 test cases 1, 2 and 6 (SHA-256, SHA-384).
    let big_key = vec![0xaa; 131];
    let cases: [(Digest, &[u8], &[u8], &str); 9] = [
        (
            Digest::Sha1,
            &[0x0b; 20],
            b"Hi There",
            "b617318655057264e28bc0b6fb378c8ef146be00",
        ),
        (
            Digest::Sha1,
            b"Jefe",
            b"what do ya want for nothing?",
            "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79",
        ),
        (
            Digest::Sha1,
            &[0xaa; 80],
            b"Test Using Larger Than Block-Size Key - Hash Key First",
            "aa4ae5e15272d00e95705637ce8a3b55ed402112",
        ),
        (
            Digest::Sha256,
            &[0x0b; 20],
            b"Hi There",
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
        ),
        (
            Digest::Sha256,
            b"Jefe",
            b"what do ya want for nothing?",
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
        ),
        (
            Digest::Sha256,
            &big_key,
            b"Test Using Larger Than Block-Size Key - Hash Key First",
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
        ),
        (
            Digest::Sha384,
            &[0x0b; 20],
            b"Hi There",
            "afd03944d84895626b0825f4ab46907f15f9dadbe4101ec682aa034c7cebc59c\
             faea9ea9076ede7f4af152e8b2fa9cb6",
        ),
        (
            Digest::Sha384,
            b"Jefe",
            b"what do ya want for nothing?",
            "af45d2e376484031617f78d2b58a6b1b9c7ef464f5a01b47e42ec3736322445e\
             8e2240ca5e69e2c78b3239ecfab21649",
        ),
        (
            Digest::Sha384,
            &big_key,
            b"Test Using Larger Than Block-Size Key - Hash Key First",
            "4ece084485813e9088d2c63a041bc5b44f9ef1012a2b588f3cd11f05033ac4c6\
             0c2ef6ab4030fe8296248df163f44952",
        ),
    ];
    for (digest, key, data, tag) in cases {
        let expected = hex(tag);
        let mut mac = Hmac::new(digest, key).unwrap();
        assert_eq!(mac.output_len(), expected.len());
        // The same key for several messages, without re-keying.
        for _ in 0..3 {
            assert_eq!(mac.mac(data).unwrap().as_slice(), expected, "{digest:?}");
        }
        let (a, b) = data.split_at(data.len() / 3);
        assert_eq!(mac.mac_parts(&[a, &[], b]).unwrap().as_slice(), expected);
        assert_eq!(hmac(digest, key, data).unwrap().as_slice(), expected);
    }
    // An empty key and an empty message are fine.
    assert_eq!(
        hmac(Digest::Sha256, &[], &[]).unwrap().as_slice(),
        hex("b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad")
    );
}

struct Kat {
    key_len: usize,
    digest: Digest,
    version: [u8; 2],
    order: MacOrder,
    enc_key: &'static str,
    mac_key: &'static str,
    iv: &'static str,
    seq: u64,
    content_type: u8,
    plaintext: &'static str,
    fragment: &'static str,
}

/// Records from `vectors/tls-records.txt`, computed with the `openssl`
/// command line (`openssl enc -nopad`, `openssl mac HMAC`).
const KATS: [Kat; 5] = [
    Kat {
        key_len: 16,
        digest: Digest::Sha1,
        version: TLS1_0,
        order: MacOrder::MacThenEncrypt,
        enc_key: "047862fcac1889cd4c5118b4efdd3cf9",
        mac_key: "9a3060d371e3e2f583c15dfba9adf41dc00be6cc",
        iv: "315d8479a81c892b1e393e4a53bb8509",
        seq: 17789695411986304892,
        content_type: 21,
        plaintext: "",
        fragment: "d6194fcb2b8741731b4f5811352f65a3785346bd0afc1eb92fef7344a90685ff",
    },
    Kat {
        key_len: 16,
        digest: Digest::Sha1,
        version: TLS1_2,
        order: MacOrder::MacThenEncrypt,
        enc_key: "6019f4ee70da7a7f03b096d33b740916",
        mac_key: "82992ca8269d959ac598e52dd07df097bb9cdcd2",
        iv: "c07b34b40e581883befd72e60541c557",
        seq: 10563339912839768628,
        content_type: 23,
        plaintext: "b8b198fa3647854044f923ee1f8ee4",
        fragment: "c07b34b40e581883befd72e60541c55716877beee3ab95f4284c095cea22c6d8\
                   4752e4111c3e8c90004fbc1a86016462995501cd997144f22307fbbf3e25b9df",
    },
    Kat {
        key_len: 32,
        digest: Digest::Sha256,
        version: DTLS1_2,
        order: MacOrder::EncryptThenMac,
        enc_key: "ec22046a299ff7f128716ad4b5caf092781bbf598a94fb7e3cbf1582806cadcb",
        mac_key: "07262d7be23c1253fde03464e65189d1cf112f4bc0b4291b404525aa538421f3",
        iv: "e509177ff9780e2d661adb60664b6d16",
        seq: 84962164153193882,
        content_type: 21,
        plaintext: "da7c0b10c0f962f31170eaa71dca37",
        fragment: "e509177ff9780e2d661adb60664b6d167828f9102671c75e88ca4c2a31e7c199\
                   cedc77c6bcd2828f9b540ad2af1931f6d601bc8c636ad63de3d7d34a1ee94af8",
    },
    Kat {
        key_len: 32,
        digest: Digest::Sha384,
        version: TLS1_2,
        order: MacOrder::MacThenEncrypt,
        enc_key: "20213ea23b84f40bef39e662ad74ae781a918dce9ca4895caf342e96143b196d",
        mac_key: "c15a59ba3f04e0ffc5c737073827a89a07fd645db6d80a7894d40cd0004cb0b7\
                  1a1d00f5e472d32eedbb95016ebfc935",
        iv: "d2b9a740b059f194d17d47a16713df92",
        seq: 8705109978592029416,
        content_type: 20,
        plaintext: "83d92830c0cb4f288b8cb6d3c0a3ee",
        fragment: "d2b9a740b059f194d17d47a16713df921b2623185c5db44d170bad08576684a8\
                   7fd8908203459a49303bf2393ba839076b5bbc1648859b857dcd6a0145e7ab16\
                   71f10cdb855108c2ff124998e885c2a7",
    },
    Kat {
        key_len: 16,
        digest: Digest::Sha1,
        version: TLS1_0,
        order: MacOrder::EncryptThenMac,
        enc_key: "552cc06dfb5b0368e12700af73fed8d0",
        mac_key: "8b38ea3d446176d32605964292fa70ac158c0859",
        iv: "8c53473d2acbcb453e297b159bc3239c",
        seq: 1687961479469183269,
        content_type: 20,
        plaintext: "a56c151d8b7f964bfc60d640fbfa60",
        fragment: "ca4123d9f489df30cfa7dbf4bbb992d64785b45367ff0cac92d60bbeff2ada9b\
                   34766af6",
    },
];

#[test]
fn records_known_answers() {
    for kat in &KATS {
        let enc_key = hex(kat.enc_key);
        let mac_key = hex(kat.mac_key);
        assert_eq!(enc_key.len(), kat.key_len);
        let iv = iv16(kat.iv);
        let explicit = explicit_iv(kat.version).unwrap();
        let params = TlsParams {
            enc_key: &enc_key,
            mac_key: &mac_key,
            digest: kat.digest,
            version: kat.version,
            mac_order: kat.order,
            tls10_iv: (!explicit).then_some(&iv),
        };
        let record_iv = explicit.then_some(&iv);
        let plaintext = hex(kat.plaintext);
        let fragment = hex(kat.fragment);
        let mut out = Vec::new();

        let mut composed = ComposedTls::new(&params).unwrap();
        composed
            .seal(kat.seq, kat.content_type, record_iv, &plaintext, &mut out)
            .unwrap();
        assert_eq!(out, fragment, "composed seal {kat:?}");
        let mut buf = fragment.clone();
        let opened = composed.open(kat.seq, kat.content_type, &mut buf).unwrap();
        assert_eq!(opened, plaintext);

        if let Ok(mut stitched) = StitchedTlsCipher::new(&params) {
            stitched
                .seal(kat.seq, kat.content_type, record_iv, &plaintext, &mut out)
                .unwrap();
            assert_eq!(out, fragment, "stitched seal {kat:?}");
            let mut buf = fragment.clone();
            let opened = stitched.open(kat.seq, kat.content_type, &mut buf).unwrap();
            assert_eq!(opened, plaintext);
        } else {
            assert!(
                kat.order == MacOrder::EncryptThenMac
                    || kat.digest == Digest::Sha384
                    || !StitchedTlsCipher::is_available(kat.key_len, kat.digest)
            );
        }
    }
}

impl std::fmt::Debug for Kat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}/{:?}/{:02x?}/{:?}",
            self.key_len, self.digest, self.version, self.order
        )
    }
}

const VERSIONS: [[u8; 2]; 5] = [TLS1_0, TLS1_1, TLS1_2, DTLS1_0, DTLS1_2];

fn stitched_available() -> bool {
    let available = StitchedTlsCipher::is_available(16, Digest::Sha1);
    if !available {
        eprintln!("SKIPPED: OpenSSL has no stitched AES-CBC-HMAC-SHA1 on this CPU");
    }
    available
}

/// The stitched cipher, driven with exact explicit IVs, produces the same
/// bytes as the composed code, over a chain of records (TLS 1.0's chained
/// IV included), and each opens the other's records.
#[test]
fn stitched_matches_composed() {
    if !stitched_available() {
        return;
    }
    let lengths = [
        0usize, 1, 11, 12, 13, 15, 16, 17, 31, 32, 33, 43, 44, 45, 55, 56, 63, 64, 65, 127, 128,
        255, 256, 1000, 4096, 16383, 16384,
    ];
    for (key_len, digest) in [
        (16, Digest::Sha1),
        (32, Digest::Sha1),
        (16, Digest::Sha256),
        (32, Digest::Sha256),
    ] {
        for version in VERSIONS {
            let enc_key = bytes(1, key_len);
            let mac_key = bytes(2, digest.output_len());
            let iv0: [u8; 16] = bytes(3, 16).try_into().unwrap();
            let explicit = explicit_iv(version).unwrap();
            let params = TlsParams {
                enc_key: &enc_key,
                mac_key: &mac_key,
                digest,
                version,
                mac_order: MacOrder::MacThenEncrypt,
                tls10_iv: (!explicit).then_some(&iv0),
            };
            let mut stitched = StitchedTlsCipher::new(&params).unwrap();
            let mut composed = ComposedTls::new(&params).unwrap();
            let (mut a, mut b) = (Vec::new(), Vec::new());
            for (i, &len) in lengths.iter().enumerate() {
                let seq = 1000 + i as u64;
                let plaintext = bytes(10 + i as u64, len);
                let iv: [u8; 16] = bytes(100 + i as u64, 16).try_into().unwrap();
                let record_iv = explicit.then_some(&iv);
                stitched
                    .seal(seq, 23, record_iv, &plaintext, &mut a)
                    .unwrap();
                composed
                    .seal(seq, 23, record_iv, &plaintext, &mut b)
                    .unwrap();
                assert_eq!(a, b, "{digest:?} {version:02x?} len {len}");
                assert_eq!(a.len(), stitched.sealed_len(len));
                assert_eq!(
                    stitched.open(seq, 23, &mut b).unwrap(),
                    plaintext.as_slice()
                );
                assert_eq!(composed.open(seq, 23, &mut a).unwrap(), plaintext);
            }
        }
    }
}

/// libssl's own way (the IV block encrypted under the running chain) gives
/// records the composed code opens.
#[test]
fn stitched_libssl_mode_opens() {
    if !stitched_available() {
        return;
    }
    for version in [TLS1_1, TLS1_2, DTLS1_2] {
        let enc_key = bytes(5, 32);
        let mac_key = bytes(6, 32);
        let params = TlsParams {
            enc_key: &enc_key,
            mac_key: &mac_key,
            digest: Digest::Sha256,
            version,
            mac_order: MacOrder::MacThenEncrypt,
            tls10_iv: None,
        };
        let mut stitched = StitchedTlsCipher::new(&params).unwrap();
        let mut composed = ComposedTls::new(&params).unwrap();
        for len in [0, 1, 64, 1500, 16384] {
            let plaintext = bytes(len as u64, len);
            let mut buf = vec![0u8; stitched.sealed_len(len) + 7];
            buf[..16].copy_from_slice(&bytes(9 + len as u64, 16));
            buf[16..16 + len].copy_from_slice(&plaintext);
            let n = stitched.seal_in_place_libssl(7, 23, &mut buf, len).unwrap();
            assert_eq!(n, stitched.sealed_len(len));
            assert_eq!(composed.open(7, 23, &mut buf[..n]).unwrap(), plaintext);
        }
    }
}

type OpenFn = dyn FnMut(u64, u8, &mut [u8]) -> Result<Vec<u8>>;

/// Bit flips, truncations and wrong header fields are rejected by both, and
/// a rejected record does not advance TLS 1.0's chain.
#[test]
fn tampering_rejected() {
    let stitched_ok = stitched_available();
    for version in VERSIONS {
        for order in [MacOrder::MacThenEncrypt, MacOrder::EncryptThenMac] {
            let enc_key = bytes(7, 16);
            let mac_key = bytes(8, 20);
            let iv0 = [0x42; 16];
            let explicit = explicit_iv(version).unwrap();
            let params = TlsParams {
                enc_key: &enc_key,
                mac_key: &mac_key,
                digest: Digest::Sha1,
                version,
                mac_order: order,
                tls10_iv: (!explicit).then_some(&iv0),
            };
            let mut sealer = ComposedTls::new(&params).unwrap();
            let mut openers: Vec<Box<OpenFn>> = Vec::new();
            let mut composed = ComposedTls::new(&params).unwrap();
            openers.push(Box::new(move |s, t, f| {
                composed.open(s, t, f).map(|p| p.to_vec())
            }));
            if stitched_ok && order == MacOrder::MacThenEncrypt {
                let mut stitched = StitchedTlsCipher::new(&params).unwrap();
                openers.push(Box::new(move |s, t, f| {
                    stitched.open(s, t, f).map(|p| p.to_vec())
                }));
            }
            let mut record = Vec::new();
            for (i, len) in [0usize, 5, 40, 300].into_iter().enumerate() {
                let seq = i as u64;
                let plaintext = bytes(20 + i as u64, len);
                let iv = [i as u8; 16];
                sealer
                    .seal(seq, 22, explicit.then_some(&iv), &plaintext, &mut record)
                    .unwrap();
                for open in openers.iter_mut() {
                    for bit in 0..record.len() * 8 {
                        let mut bad = record.clone();
                        bad[bit / 8] ^= 1 << (bit % 8);
                        assert_eq!(open(seq, 22, &mut bad), Err(Error::BadRecord));
                    }
                    for cut in 1..=record.len() {
                        let mut bad = record[..record.len() - cut].to_vec();
                        assert_eq!(open(seq, 22, &mut bad), Err(Error::BadRecord));
                    }
                    assert_eq!(
                        open(seq + 1, 22, &mut record.clone()),
                        Err(Error::BadRecord)
                    );
                    assert_eq!(open(seq, 23, &mut record.clone()), Err(Error::BadRecord));
                    // After all that, the genuine record still opens.
                    assert_eq!(open(seq, 22, &mut record.clone()).unwrap(), plaintext);
                }
            }
        }
    }
}

/// Padding longer than the least (up to 255 bytes) is accepted by both.
#[test]
fn long_padding_accepted() {
    let stitched_ok = stitched_available();
    for order in [MacOrder::MacThenEncrypt, MacOrder::EncryptThenMac] {
        let enc_key = bytes(11, 16);
        let mac_key = bytes(12, 32);
        let params = TlsParams {
            enc_key: &enc_key,
            mac_key: &mac_key,
            digest: Digest::Sha256,
            version: TLS1_2,
            mac_order: order,
            tls10_iv: None,
        };
        let mut sealer = ComposedTls::new(&params).unwrap();
        let mut composed = ComposedTls::new(&params).unwrap();
        let mut stitched = (stitched_ok && order == MacOrder::MacThenEncrypt)
            .then(|| StitchedTlsCipher::new(&params).unwrap());
        let mut record = Vec::new();
        for len in [0usize, 1, 17, 100] {
            let plaintext = bytes(len as u64, len);
            let covered = len
                + if order == MacOrder::MacThenEncrypt {
                    32
                } else {
                    0
                };
            let least = 15 - covered % 16;
            for padding in (least..=255).step_by(16) {
                sealer
                    .seal_with_padding(
                        3,
                        23,
                        Some(&[9; 16]),
                        &plaintext,
                        padding as u8,
                        &mut record,
                    )
                    .unwrap();
                let mut copy = record.clone();
                assert_eq!(composed.open(3, 23, &mut copy).unwrap(), plaintext);
                if let Some(stitched) = stitched.as_mut() {
                    let mut copy = record.clone();
                    assert_eq!(stitched.open(3, 23, &mut copy).unwrap(), plaintext);
                }
            }
            assert!(matches!(
                sealer.seal_with_padding(
                    3,
                    23,
                    Some(&[9; 16]),
                    &plaintext,
                    (least + 1) as u8,
                    &mut record
                ),
                Err(Error::InvalidInput(_))
            ));
        }
    }
}

#[test]
fn bad_parameters() {
    let enc_key = [1u8; 16];
    let mac_key = [2u8; 20];
    let iv = [3u8; 16];
    let base = TlsParams {
        enc_key: &enc_key,
        mac_key: &mac_key,
        digest: Digest::Sha1,
        version: TLS1_2,
        mac_order: MacOrder::MacThenEncrypt,
        tls10_iv: None,
    };
    let variants = [
        TlsParams {
            version: [3, 0],
            ..base
        },
        TlsParams {
            version: TLS1_0,
            ..base
        },
        TlsParams {
            tls10_iv: Some(&iv),
            ..base
        },
        TlsParams {
            enc_key: &enc_key[..15],
            ..base
        },
    ];
    for params in &variants {
        assert!(matches!(
            ComposedTls::new(params),
            Err(Error::InvalidInput(_))
        ));
        assert!(StitchedTlsCipher::new(params).is_err());
    }
    assert!(matches!(
        StitchedTlsCipher::new(&TlsParams {
            digest: Digest::Sha384,
            mac_key: &[0; 48],
            enc_key: &[0; 32],
            ..base
        }),
        Err(Error::Unavailable(_))
    ));
    assert!(matches!(
        StitchedTlsCipher::new(&TlsParams {
            mac_order: MacOrder::EncryptThenMac,
            ..base
        }),
        Err(Error::Unavailable(_))
    ));
    assert_eq!(StitchedTlsCipher::cipher_name(32, Digest::Sha384), None);
    assert_eq!(
        StitchedTlsCipher::cipher_name(16, Digest::Sha256),
        Some("AES-128-CBC-HMAC-SHA256")
    );

    let mut composed = ComposedTls::new(&base).unwrap();
    let mut out = Vec::new();
    // Explicit IV missing; plaintext too long; buffer too small.
    assert!(composed.seal(1, 23, None, b"x", &mut out).is_err());
    assert!(
        composed
            .seal(1, 23, Some(&iv), &vec![0; MAX_PLAINTEXT_LEN + 1], &mut out)
            .is_err()
    );
    assert!(
        composed
            .seal_in_place(1, 23, Some(&iv), &mut [0; 40], 5)
            .is_err()
    );
    for len in [0, 1, 15, 16, 17, 31, 32, 47] {
        assert_eq!(
            composed.open(1, 23, &mut vec![0; len]),
            Err(Error::BadRecord)
        );
    }
    if let Ok(mut stitched) = StitchedTlsCipher::new(&base) {
        assert!(stitched.seal(1, 23, None, b"x", &mut out).is_err());
        assert!(
            stitched
                .seal_in_place(1, 23, Some(&iv), &mut [0; 40], 5)
                .is_err()
        );
        for len in [0, 1, 15, 16, 17, 31, 32, 47, 48] {
            assert_eq!(
                stitched.open(1, 23, &mut vec![0; len]),
                Err(Error::BadRecord)
            );
        }
        // Still usable afterwards.
        stitched.seal(1, 23, Some(&iv), b"x", &mut out).unwrap();
        assert_eq!(composed.open(1, 23, &mut out).unwrap(), b"x");
    }
}
