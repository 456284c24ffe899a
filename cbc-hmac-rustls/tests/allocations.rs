//! What the record protection allocates per record, counted with a global
//! allocator that tallies this thread's allocations: opening nothing,
//! sealing exactly the one record buffer rustls's `MessageEncrypter` API
//! makes it return. Driven through the suite's `Tls12AeadAlgorithm`, as
//! rustls drives it.

use allocation_counter::measure;
use cbc_hmac_rustls::TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256 as SUITE;
use rustls::crypto::cipher::{AeadKey, InboundOpaqueMessage, OutboundChunks, OutboundPlainMessage};
use rustls::{ContentType, Error, ProtocolVersion, SupportedCipherSuite};

const CALLS: usize = 100;

#[test]
fn seal_allocates_one_buffer_and_open_none() {
    let SupportedCipherSuite::Tls12(suite) = SUITE else {
        panic!("a TLS 1.2 suite");
    };
    let alg = suite.aead_alg;
    // HMAC-SHA-256 key in the "key" slot, AES-128 key in the "iv" slot.
    let shape = alg.key_block_shape();
    assert_eq!(
        (
            shape.enc_key_len,
            shape.fixed_iv_len,
            shape.explicit_nonce_len
        ),
        (32, 16, 0)
    );
    let aes_key = [1u8; 16];
    let mut enc = alg.encrypter(AeadKey::from([2u8; 32]), &aes_key, &[]);
    let mut dec = alg.decrypter(AeadKey::from([2u8; 32]), &aes_key);

    let data: Vec<u8> = (0..16384u32).map(|i| (i * 7) as u8).collect();
    let lens = [1usize, 16, 255, 1024, 16384];
    let mut records = Vec::with_capacity(CALLS);
    let info = measure(|| {
        for i in 0..CALLS {
            let msg = OutboundPlainMessage {
                typ: ContentType::ApplicationData,
                version: ProtocolVersion::TLSv1_2,
                payload: OutboundChunks::Single(&data[..lens[i % lens.len()]]),
            };
            records.push(enc.encrypt(msg, i as u64).unwrap());
        }
    });
    assert_eq!(
        info.count_total, CALLS as u64,
        "{} allocations for {CALLS} sealed records",
        info.count_total
    );
    for (i, r) in records.iter().enumerate() {
        let len = lens[i % lens.len()];
        assert_eq!(r.payload.as_ref().len(), enc.encrypted_payload_len(len));
    }

    let mut buf = vec![0u8; 17000];
    let (mut opened, mut rejected) = (0usize, 0usize);
    let info = measure(|| {
        for (i, r) in records.iter().enumerate() {
            let len = lens[i % lens.len()];
            let wire = r.payload.as_ref();
            let n = wire.len();
            buf[..n].copy_from_slice(wire);
            let msg = InboundOpaqueMessage::new(
                ContentType::ApplicationData,
                ProtocolVersion::TLSv1_2,
                &mut buf[..n],
            );
            let plain = dec.decrypt(msg, i as u64).unwrap();
            assert_eq!(plain.payload, &data[..len]);
            opened += 1;
            // The failure path: the wrong sequence number fails the MAC.
            buf[..n].copy_from_slice(wire);
            let msg = InboundOpaqueMessage::new(
                ContentType::ApplicationData,
                ProtocolVersion::TLSv1_2,
                &mut buf[..n],
            );
            if matches!(dec.decrypt(msg, i as u64 + 1), Err(Error::DecryptError)) {
                rejected += 1;
            }
        }
    });
    assert_eq!((opened, rejected), (CALLS, CALLS));
    assert_eq!(
        info.count_total, 0,
        "{} allocations opening",
        info.count_total
    );
}
