//! Opening arbitrary bytes: never panics, agrees with a plain reference open
//! on every backend the host supports, and so never accepts a record that
//! was not sealed under the input's keys (the fuzzer cannot compute an HMAC:
//! an acceptance the reference does not share would be a forgery). Seeds
//! are valid records with every padding length, so both the accepting and
//! the rejecting paths are explored.
#![no_main]

use cbc_hmac::{Backend, Opener};
use fuzz_support::{Header, reference_open};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((h, record)) = Header::parse(data) else {
        return;
    };
    let expected = reference_open(&h, record);
    for backend in Backend::available() {
        let mut opener = Opener::with_backend(h.config, h.keys(), backend).unwrap();
        let mut buf = record.to_vec();
        let got = opener
            .open_in_place(h.seq, h.content_type, &mut buf)
            .map(|p| p.to_vec());
        assert_eq!(
            got, expected,
            "{backend} disagrees with the reference on {:?}",
            h.config
        );
    }
});
