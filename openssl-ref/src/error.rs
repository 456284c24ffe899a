//! The one error type.

use std::fmt;

/// What can go wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// This OpenSSL build on this CPU does not provide the algorithm (the
    /// stitched ciphers exist only on x86-64 with AES-NI, and never for
    /// SHA-384 or encrypt-then-MAC). Names what was asked for.
    Unavailable(&'static str),
    /// An argument rejected before OpenSSL is called: wrong key or IV
    /// length, an unknown protocol version, data that is not whole blocks, a
    /// buffer too small, a plaintext over 2^14 bytes, ...
    InvalidInput(&'static str),
    /// A record did not open: bad MAC, bad padding, or a fragment length no
    /// valid record has.
    BadRecord,
    /// An OpenSSL call failed unexpectedly. `code` is the first entry of
    /// OpenSSL's error queue (0 if it was empty); the queue is cleared.
    OpenSsl {
        /// The function that failed.
        call: &'static str,
        /// `ERR_get_error()`'s packed code.
        code: u64,
    },
}

/// `Result` with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Unavailable(what) => write!(f, "{what} is not available in this OpenSSL"),
            Error::InvalidInput(why) => write!(f, "invalid input: {why}"),
            Error::BadRecord => f.write_str("bad record (MAC, padding or length)"),
            Error::OpenSsl { call, code } => {
                write!(f, "OpenSSL's {call} failed (error code {code:#x})")
            }
        }
    }
}

impl std::error::Error for Error {}
