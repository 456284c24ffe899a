//! Every job against cbc-hmac's own AES-CBC and HMAC: ciphertexts (or, for
//! decrypt jobs, plaintexts) and tags byte for byte, for batches of 1, 3,
//! 16 and 64 jobs of mixed keys, hashes and lengths, in both orders and
//! both directions, on every manager this CPU runs.

use crate::*;

/// A fixed pseudo-random stream (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| (self.next() >> 56) as u8).collect()
    }
}

fn mac_alg(h: Hash) -> cbc_hmac::MacAlgorithm {
    match h {
        Hash::Sha1 => cbc_hmac::MacAlgorithm::HmacSha1,
        Hash::Sha256 => cbc_hmac::MacAlgorithm::HmacSha256,
        Hash::Sha384 => cbc_hmac::MacAlgorithm::HmacSha384,
    }
}

/// Both sides' keys for one AES key and one HMAC key.
struct Keys {
    aes: AesKey,
    mac: HmacKey,
    ref_aes: cbc_hmac::AesCbcKey,
    ref_mac: cbc_hmac::HmacKey,
}

fn keys(mgr: &mut Manager, rng: &mut Rng, aes_len: usize, hash: Hash, mac_len: usize) -> Keys {
    let k = rng.bytes(aes_len);
    let m = rng.bytes(mac_len);
    let cipher = if aes_len == 16 {
        cbc_hmac::Cipher::Aes128Cbc
    } else {
        cbc_hmac::Cipher::Aes256Cbc
    };
    Keys {
        aes: AesKey::new(mgr, &k).unwrap(),
        mac: HmacKey::new(mgr, hash, &m).unwrap(),
        ref_aes: cbc_hmac::AesCbcKey::new(cipher, &k).unwrap(),
        ref_mac: cbc_hmac::HmacKey::new(mac_alg(hash), &m).unwrap(),
    }
}

/// Six key sets: AES-128 and AES-256 with each hash, MAC keys of TLS
/// lengths, one longer than a block.
fn key_pool(mgr: &mut Manager, rng: &mut Rng) -> Vec<Keys> {
    vec![
        keys(mgr, rng, 16, Hash::Sha1, 20),
        keys(mgr, rng, 32, Hash::Sha1, 20),
        keys(mgr, rng, 16, Hash::Sha256, 32),
        keys(mgr, rng, 32, Hash::Sha256, 100),
        keys(mgr, rng, 16, Hash::Sha384, 48),
        keys(mgr, rng, 32, Hash::Sha384, 200),
    ]
}

/// A job length: the edges (one block, 16 KiB) often, else any whole
/// number of blocks in between.
fn cipher_len(rng: &mut Rng) -> usize {
    match rng.below(8) {
        0 => 16,
        1 => 16384,
        _ => 16 * (1 + rng.below(1024)),
    }
}

fn managers() -> Vec<Manager> {
    let mut out = vec![Manager::new().expect("the automatic manager")];
    for arch in [Arch::Sse, Arch::Avx, Arch::Avx2, Arch::Avx512] {
        match Manager::with_arch(arch) {
            Ok(m) => out.push(m),
            Err(e) => println!("SKIPPED: intel-ipsec-mb {arch} manager ({e})"),
        }
    }
    out
}

/// Encrypt-then-MAC (the ESP shape): `IV || data`, encrypt `data`, MAC
/// `IV || ciphertext`, tag apart.
fn check_cipher_then_hash(mgr: &mut Manager, pool: &[Keys], rng: &mut Rng, n: usize) {
    let picks: Vec<usize> = (0..n).map(|_| rng.below(pool.len())).collect();
    let ivs: Vec<[u8; 16]> = (0..n).map(|_| rng.bytes(16).try_into().unwrap()).collect();
    let inputs: Vec<Vec<u8>> = (0..n)
        .map(|i| {
            let mut b = ivs[i].to_vec();
            let len = cipher_len(rng);
            b.extend(rng.bytes(len));
            b
        })
        .collect();
    let mut bufs = inputs.clone();
    let mut jobs: Vec<CbcHmacJob<'_>> = bufs
        .iter_mut()
        .enumerate()
        .map(|(i, b)| {
            let k = &pool[picks[i]];
            let len = b.len();
            CbcHmacJob::new(
                &k.aes,
                &k.mac,
                ivs[i],
                b,
                16..len,
                0..len,
                Order::CipherThenHash,
            )
        })
        .collect();
    mgr.cbc_hmac_batch(&mut jobs).unwrap();
    let tags: Vec<Vec<u8>> = jobs.iter().map(|j| j.tag().to_vec()).collect();
    assert!(jobs.iter().all(|j| j.result.is_ok()));
    drop(jobs);
    for i in 0..n {
        let k = &pool[picks[i]];
        let mut expect = inputs[i].clone();
        k.ref_aes.encrypt(&ivs[i], &mut expect[16..]).unwrap();
        assert_eq!(bufs[i], expect, "job {i} of {n}: ciphertext");
        assert_eq!(
            tags[i],
            k.ref_mac.sign(&expect).as_bytes(),
            "job {i} of {n}: tag over IV || ciphertext ({:?})",
            k.mac.hash()
        );
    }
}

/// MAC-then-encrypt (the TLS shape laid out by the caller): `header(13) ||
/// plaintext || tag || padding`; MAC header and plaintext, write the tag in
/// place, encrypt plaintext, tag and padding.
fn check_hash_then_cipher(mgr: &mut Manager, pool: &[Keys], rng: &mut Rng, n: usize) {
    let picks: Vec<usize> = (0..n).map(|_| rng.below(pool.len())).collect();
    let ivs: Vec<[u8; 16]> = (0..n).map(|_| rng.bytes(16).try_into().unwrap()).collect();
    let mut plain_lens = Vec::new();
    let inputs: Vec<Vec<u8>> = (0..n)
        .map(|i| {
            let t = pool[picks[i]].mac.tag_len();
            let p = rng.below(16384 + 1 - t);
            plain_lens.push(p);
            let total = (p + t + 1).next_multiple_of(16);
            let pad = (total - p - t - 1) as u8;
            let mut b = rng.bytes(13 + p);
            b.extend(std::iter::repeat_n(0xee, t));
            b.extend(std::iter::repeat_n(pad, total - p - t));
            b
        })
        .collect();
    let mut bufs = inputs.clone();
    let mut jobs: Vec<CbcHmacJob<'_>> = bufs
        .iter_mut()
        .enumerate()
        .map(|(i, b)| {
            let k = &pool[picks[i]];
            let len = b.len();
            let p = plain_lens[i];
            CbcHmacJob::new(
                &k.aes,
                &k.mac,
                ivs[i],
                b,
                13..len,
                0..13 + p,
                Order::HashThenCipher,
            )
            .with_tag_at(13 + p)
        })
        .collect();
    mgr.cbc_hmac_batch(&mut jobs).unwrap();
    assert!(jobs.iter().all(|j| j.result.is_ok() && j.tag().is_empty()));
    drop(jobs);
    for i in 0..n {
        let k = &pool[picks[i]];
        let p = plain_lens[i];
        let t = k.mac.tag_len();
        let mut expect = inputs[i].clone();
        let tag = k.ref_mac.sign(&expect[..13 + p]);
        expect[13 + p..13 + p + t].copy_from_slice(tag.as_bytes());
        k.ref_aes.encrypt(&ivs[i], &mut expect[13..]).unwrap();
        assert_eq!(bufs[i], expect, "job {i} of {n}: MAC-then-encrypt record");
    }
}

#[test]
fn batches_match_cbc_hmac_on_every_manager() {
    println!("intel-ipsec-mb {}", version());
    for (m, mut mgr) in managers().into_iter().enumerate() {
        println!("TESTING: intel-ipsec-mb manager {}", mgr.description());
        let mut rng = Rng(0x1234_5678 + m as u64);
        let pool = key_pool(&mut mgr, &mut rng);
        for n in [1, 3, 16, 64] {
            check_cipher_then_hash(&mut mgr, &pool, &mut rng, n);
            check_hash_then_cipher(&mut mgr, &pool, &mut rng, n);
        }
        // The same manager again and again: nothing is left in flight.
        for _ in 0..20 {
            let n = 1 + rng.below(24);
            check_cipher_then_hash(&mut mgr, &pool, &mut rng, n);
        }
    }
}

/// Opening a MAC-then-encrypt record (the TLS shape laid out by the
/// caller): `header(13) || ciphertext`; decrypt, then MAC header and
/// plaintext over the public range the caller names, tag apart.
fn check_decrypt_then_hash(mgr: &mut Manager, pool: &[Keys], rng: &mut Rng, n: usize) {
    let picks: Vec<usize> = (0..n).map(|_| rng.below(pool.len())).collect();
    let ivs: Vec<[u8; 16]> = (0..n).map(|_| rng.bytes(16).try_into().unwrap()).collect();
    let mut plain_lens = Vec::new();
    let mut tags = Vec::new();
    // Each record's decrypted form (header, plaintext, tag, padding) and
    // its encrypted form, sealed with cbc-hmac's own primitives.
    let (opened, sealed): (Vec<Vec<u8>>, Vec<Vec<u8>>) = (0..n)
        .map(|i| {
            let k = &pool[picks[i]];
            let t = k.mac.tag_len();
            let p = rng.below(16384 + 1 - t);
            plain_lens.push(p);
            let total = (p + t + 1).next_multiple_of(16);
            let pad = (total - p - t - 1) as u8;
            let mut b = rng.bytes(13 + p);
            let tag = k.ref_mac.sign(&b);
            tags.push(tag.as_bytes().to_vec());
            b.extend_from_slice(tag.as_bytes());
            b.extend(std::iter::repeat_n(pad, total - p - t));
            let mut e = b.clone();
            k.ref_aes.encrypt(&ivs[i], &mut e[13..]).unwrap();
            (b, e)
        })
        .unzip();
    let mut bufs = sealed.clone();
    let mut jobs: Vec<CbcHmacJob<'_>> = bufs
        .iter_mut()
        .enumerate()
        .map(|(i, b)| {
            let k = &pool[picks[i]];
            let len = b.len();
            let p = plain_lens[i];
            CbcHmacJob::new_decrypt(
                &k.aes,
                &k.mac,
                ivs[i],
                b,
                13..len,
                0..13 + p,
                Order::CipherThenHash,
            )
        })
        .collect();
    assert!(jobs.iter().all(|j| j.direction == Direction::Decrypt));
    mgr.cbc_hmac_batch(&mut jobs).unwrap();
    assert!(jobs.iter().all(|j| j.result.is_ok()));
    let got_tags: Vec<Vec<u8>> = jobs.iter().map(|j| j.tag().to_vec()).collect();
    drop(jobs);
    for i in 0..n {
        assert_eq!(bufs[i], opened[i], "job {i} of {n}: decrypted record");
        assert_eq!(
            got_tags[i],
            tags[i],
            "job {i} of {n}: tag over header || plaintext ({:?})",
            pool[picks[i]].mac.hash()
        );
    }
}

/// Opening an encrypt-then-MAC record: `IV || ciphertext`; MAC both, then
/// decrypt the ciphertext, tag apart.
fn check_hash_then_decrypt(mgr: &mut Manager, pool: &[Keys], rng: &mut Rng, n: usize) {
    let picks: Vec<usize> = (0..n).map(|_| rng.below(pool.len())).collect();
    let ivs: Vec<[u8; 16]> = (0..n).map(|_| rng.bytes(16).try_into().unwrap()).collect();
    let plains: Vec<Vec<u8>> = (0..n)
        .map(|i| {
            let mut b = ivs[i].to_vec();
            let len = cipher_len(rng);
            b.extend(rng.bytes(len));
            b
        })
        .collect();
    let sealed: Vec<Vec<u8>> = (0..n)
        .map(|i| {
            let mut e = plains[i].clone();
            pool[picks[i]]
                .ref_aes
                .encrypt(&ivs[i], &mut e[16..])
                .unwrap();
            e
        })
        .collect();
    let mut bufs = sealed.clone();
    let mut jobs: Vec<CbcHmacJob<'_>> = bufs
        .iter_mut()
        .enumerate()
        .map(|(i, b)| {
            let k = &pool[picks[i]];
            let len = b.len();
            CbcHmacJob::new_decrypt(
                &k.aes,
                &k.mac,
                ivs[i],
                b,
                16..len,
                0..len,
                Order::HashThenCipher,
            )
        })
        .collect();
    mgr.cbc_hmac_batch(&mut jobs).unwrap();
    assert!(jobs.iter().all(|j| j.result.is_ok()));
    let tags: Vec<Vec<u8>> = jobs.iter().map(|j| j.tag().to_vec()).collect();
    drop(jobs);
    for i in 0..n {
        let k = &pool[picks[i]];
        assert_eq!(bufs[i], plains[i], "job {i} of {n}: plaintext");
        assert_eq!(
            tags[i],
            k.ref_mac.sign(&sealed[i]).as_bytes(),
            "job {i} of {n}: tag over IV || ciphertext ({:?})",
            k.mac.hash()
        );
    }
}

#[test]
fn decrypt_batches_match_cbc_hmac_on_every_manager() {
    for (m, mut mgr) in managers().into_iter().enumerate() {
        println!(
            "TESTING: intel-ipsec-mb decrypt jobs, manager {}",
            mgr.description()
        );
        let mut rng = Rng(0xdec0_de00 + m as u64);
        let pool = key_pool(&mut mgr, &mut rng);
        for n in [1, 3, 16, 64] {
            check_decrypt_then_hash(&mut mgr, &pool, &mut rng, n);
            check_hash_then_decrypt(&mut mgr, &pool, &mut rng, n);
        }
        // Decrypt and encrypt jobs mixed on one manager, one after the
        // other: nothing is left in flight.
        for _ in 0..10 {
            let n = 1 + rng.below(24);
            check_hash_then_decrypt(&mut mgr, &pool, &mut rng, n);
            check_cipher_then_hash(&mut mgr, &pool, &mut rng, n);
        }
    }
}

#[test]
fn a_decrypt_job_keeps_its_tag_out_of_the_cipher_region() {
    let mut mgr = Manager::new().unwrap();
    let mut rng = Rng(7);
    let pool = key_pool(&mut mgr, &mut rng);
    let k = &pool[0];
    let input = rng.bytes(16 + 256);
    let mut a = input.clone();
    let len = input.len();
    let mut jobs = [CbcHmacJob::new_decrypt(
        &k.aes,
        &k.mac,
        [1; 16],
        &mut a,
        16..len,
        0..16,
        Order::HashThenCipher,
    )
    .with_tag_at(len - 32)];
    assert!(matches!(
        mgr.cbc_hmac_batch(&mut jobs),
        Err(Error::InvalidInput(_))
    ));
    assert_eq!(a, input);
}

#[test]
fn the_automatic_manager_is_the_best_one() {
    let mgr = Manager::new().unwrap();
    println!("intel-ipsec-mb picked {}", mgr.description());
    if std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512vl")
        && std::arch::is_x86_feature_detected!("avx512dq")
    {
        assert_eq!(mgr.arch(), Arch::Avx512);
    } else {
        println!("SKIPPED: AVX-512 manager check (CPU lacks AVX-512)");
    }
    if std::arch::is_x86_feature_detected!("aes") {
        assert_ne!(mgr.features() & (1 << 1), 0, "AES-NI feature bit");
    }
}

#[test]
fn a_bad_job_spoils_no_other() {
    let mut mgr = Manager::new().unwrap();
    let mut rng = Rng(99);
    let pool = key_pool(&mut mgr, &mut rng);
    let k = &pool[2];
    let input = rng.bytes(16 + 4096);
    let mut a = input.clone();
    let mut b = input.clone();
    let mut c = input.clone();
    let mut d = input.clone();
    let iv = [5u8; 16];
    let len = input.len();
    let mut jobs = [
        CbcHmacJob::new(
            &k.aes,
            &k.mac,
            iv,
            &mut a,
            16..len,
            0..len,
            Order::CipherThenHash,
        ),
        // Not whole blocks.
        CbcHmacJob::new(
            &k.aes,
            &k.mac,
            iv,
            &mut b,
            16..len - 1,
            0..len,
            Order::CipherThenHash,
        ),
        // Past the end.
        CbcHmacJob::new(
            &k.aes,
            &k.mac,
            iv,
            &mut c,
            16..len,
            0..len + 1,
            Order::CipherThenHash,
        ),
        // The tag over the hashed bytes.
        CbcHmacJob::new(
            &k.aes,
            &k.mac,
            iv,
            &mut d,
            16..len,
            0..len - 32,
            Order::CipherThenHash,
        )
        .with_tag_at(len - 40),
    ];
    assert!(matches!(
        mgr.cbc_hmac_batch(&mut jobs),
        Err(Error::InvalidInput(_))
    ));
    assert_eq!(jobs[0].result, Ok(()));
    for j in &jobs[1..] {
        assert!(matches!(j.result, Err(Error::InvalidInput(_))), "{j:?}");
    }
    let tag = jobs[0].tag().to_vec();
    let mut expect = input.clone();
    k.ref_aes.encrypt(&iv, &mut expect[16..]).unwrap();
    assert_eq!(a, expect);
    assert_eq!(tag, k.ref_mac.sign(&expect).as_bytes());
    // The refused jobs' buffers were not touched.
    assert_eq!(b, input);
    assert_eq!(c, input);
    assert_eq!(d, input);
}

#[test]
fn key_lengths_are_checked() {
    let mut mgr = Manager::new().unwrap();
    assert!(matches!(
        AesKey::new(&mut mgr, &[0; 17]),
        Err(Error::InvalidInput(_))
    ));
    assert_eq!(AesKey::new(&mut mgr, &[0; 24]).unwrap().key_len(), 24);
    assert_eq!(
        HmacKey::new(&mut mgr, Hash::Sha384, &[]).unwrap().tag_len(),
        48
    );
}

/// A manager the CPU cannot run is refused with an error, not set up to
/// crash at its first job (intel-ipsec-mb 1.3 leaves a NULL kernel there).
#[test]
fn a_manager_the_cpu_cannot_run_is_refused() {
    let avx512 = std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512vl")
        && std::arch::is_x86_feature_detected!("avx512dq")
        && std::arch::is_x86_feature_detected!("avx512cd");
    if avx512 {
        assert_eq!(
            Manager::with_arch(Arch::Avx512).unwrap().arch(),
            Arch::Avx512
        );
        println!("SKIPPED: refusal of the AVX-512 manager (this CPU has AVX-512)");
        return;
    }
    match Manager::with_arch(Arch::Avx512) {
        Err(Error::Unavailable { errno, .. }) => assert_eq!(errno, -2),
        Err(e) => panic!("the AVX-512 manager refused with {e}"),
        Ok(_) => panic!("the AVX-512 manager set up on a CPU without AVX-512"),
    }
}
