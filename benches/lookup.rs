//! Cost of a cipher-suite look-up by name or code point: the per-call
//! overhead a record layer (or a binding that names ciphers by string) pays.

use std::hint::black_box;

use cbc_hmac::suite::{CipherSuite, combination_by_name};
use criterion::{Criterion, criterion_group, criterion_main};

fn lookup(c: &mut Criterion) {
    let mut group = c.benchmark_group("suite-lookup");

    group.bench_function("gnutls-name", |b| {
        b.iter(|| combination_by_name(black_box("AES-128-CBC-SHA256")))
    });
    group.bench_function("openssl-name", |b| {
        b.iter(|| CipherSuite::from_name(black_box("ECDHE-RSA-AES128-SHA")))
    });
    group.bench_function("openssl-name-combination", |b| {
        b.iter(|| combination_by_name(black_box("DHE-RSA-AES256-SHA256")))
    });
    group.bench_function("iana-name-mixed-case", |b| {
        b.iter(|| CipherSuite::from_name(black_box("Tls_Ecdhe_Ecdsa_With_Aes_256_Cbc_Sha384")))
    });
    group.bench_function("code-point", |b| {
        b.iter(|| CipherSuite::from_code_point(black_box(0xC028)))
    });
    group.bench_function("unknown-name", |b| {
        b.iter(|| combination_by_name(black_box("TLS_RSA_WITH_AES_128_GCM_SHA256")))
    });
    // Every name in the table in turn: the average over all names, not one
    // lucky position in the binary search.
    let names: Vec<String> = CipherSuite::all()
        .iter()
        .flat_map(|s| s.openssl_name().into_iter().chain([s.iana_name()]))
        .map(str::to_ascii_lowercase)
        .collect();
    group.bench_function("every-name-average", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) % names.len();
            combination_by_name(black_box(names[i].as_str()))
        })
    });

    group.finish();
}

criterion_group!(benches, lookup);
criterion_main!(benches);
