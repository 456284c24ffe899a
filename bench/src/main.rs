//! `cbc-hmac-bench`: throughput of cbc-hmac's record protection and
//! primitives, in the style of `gnutls-cli --benchmark-ciphers`.
//!
//! ```text
//! Backend: portable
//! Checking cipher-MAC combinations, payload size: 16384
//!      AES-128-CBC-SHA1 seal   0.79 GB/sec     20740.3 ns/op
//!      ...
//! ```
//!
//! See `--help` for the options and for what each figure includes.

mod args;
mod measure;
mod output;
mod workload;

use std::fmt;
use std::io::{self, Write};
use std::process::ExitCode;
use std::time::Duration;

use cbc_hmac::Backend;
use clap::Parser;

use args::Args;
use output::{Reporter, Row};
use workload::{Failure, Job};

fn main() -> ExitCode {
    let args = Args::parse();
    let backend = match args.resolve_backend() {
        Ok(backend) => backend,
        Err(msg) => {
            eprintln!("cbc-hmac-bench: error: {msg}");
            return ExitCode::from(2);
        }
    };
    let mut reporter = Reporter::new(io::stdout().lock(), args.json, backend);
    match run(&args, backend, &mut reporter) {
        Ok(()) => ExitCode::SUCCESS,
        // Output cut short by a reader that went away (`| head`): stop quietly.
        Err(Error::Output(e)) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("cbc-hmac-bench: error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Why the run stopped early.
#[derive(Debug)]
enum Error {
    /// A measurement failed: a library error or a failed check.
    Measurement {
        job: Job,
        payload: usize,
        backend: Backend,
        failure: Failure,
    },
    /// Writing the report failed.
    Output(io::Error),
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Error::Output(e)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Measurement {
                job,
                payload,
                backend,
                failure,
            } => write!(
                f,
                "{} {}, payload {payload}, backend {backend}: {failure}",
                job.name(),
                job.direction()
            ),
            Error::Output(e) => write!(f, "writing the report: {e}"),
        }
    }
}

/// Every section for every payload size, in order; stops at the first
/// failure.
fn run<W: Write>(args: &Args, backend: Backend, out: &mut Reporter<W>) -> Result<(), Error> {
    let target = Duration::from_secs_f64(args.seconds);
    let sections = Job::sections(&args.selected_combinations());
    out.start()?;
    for &payload in &args.payloads {
        for (section, jobs) in &sections {
            if jobs.is_empty() {
                continue;
            }
            out.section(*section, payload)?;
            for &job in jobs {
                let measurement =
                    job.run(backend, payload, target)
                        .map_err(|failure| Error::Measurement {
                            job,
                            payload,
                            backend,
                            failure,
                        })?;
                out.row(&Row {
                    section: *section,
                    name: &job.name(),
                    direction: job.direction(),
                    payload,
                    measurement,
                })?;
            }
        }
    }
    Ok(())
}
