//! The one error type.

use std::fmt;

/// What can go wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The library cannot run the asked-for manager on this CPU (for
    /// example the AVX-512 one without AVX-512), or refused to set one up.
    /// `errno` is the library's error number (-1 if it gave none, -2 if
    /// the CPU lacks the manager's features, checked before the library
    /// is asked: intel-ipsec-mb 1.3 would set it up and crash).
    Unavailable {
        /// What was asked for.
        what: &'static str,
        /// `imb_get_errno()`.
        errno: i32,
    },
    /// An argument rejected before the library is called: a key of the
    /// wrong length, a cipher region that is not whole blocks, a region
    /// outside the buffer, a tag overlapping what is hashed, ...
    InvalidInput(&'static str),
    /// The library returned the job with a status other than completed
    /// (`IMB_STATUS`: 4 invalid arguments, 5 internal error, 6 error).
    JobFailed {
        /// The job's `IMB_STATUS`.
        status: i32,
    },
    /// The job did not come back from the manager (submitted, but neither
    /// returned by a submission nor by the final flush), or was never
    /// submitted because the manager had no free job.
    NotReturned,
}

/// `Result` with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Unavailable { what, errno } => write!(
                f,
                "intel-ipsec-mb cannot run {what} here (error {errno}: {})",
                crate::ffi::strerror(*errno)
            ),
            Error::InvalidInput(why) => write!(f, "invalid input: {why}"),
            Error::JobFailed { status } => {
                write!(f, "intel-ipsec-mb returned the job with status {status}")
            }
            Error::NotReturned => f.write_str("intel-ipsec-mb did not return the job"),
        }
    }
}

impl std::error::Error for Error {}
