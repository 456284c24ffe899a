//! `cbc-hmac-bench`: throughput of cbc-hmac's record protection and
//! primitives, in the style of `gnutls-cli --benchmark-ciphers`; optionally
//! side by side with OpenSSL (`--compare openssl`, behind the `openssl`
//! feature), on several threads (`--threads N`), over a payload sweep
//! (`--sweep`), drawn (`--plot`) and written up (`--markdown`).
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
mod driver;
mod formats;
mod machine;
mod markdown;
mod measure;
mod multi;
mod multi_open;
mod multi_reference;
mod output;
mod plot;
mod reference;
mod workload;

use std::fmt;
use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use cbc_hmac::Backend;
use clap::Parser;

use args::Args;
use driver::Plan;
use output::{Progress, Reporter, Row, RunInfo};
use workload::{Failure, Job};

fn main() -> ExitCode {
    let args = Args::parse();
    // The library falls back to the portable backend on an unparsable
    // override; a benchmark must not silently measure something else.
    if let Err(e) = cbc_hmac::cpu_override() {
        eprintln!("cbc-hmac-bench: error: {e}");
        return ExitCode::from(2);
    }
    // Likewise for the row of the per-CPU kernel table.
    if let Err(e) = cbc_hmac::tuning_cpu_override() {
        eprintln!("cbc-hmac-bench: error: {e}");
        return ExitCode::from(2);
    }
    let backend = match args.resolve_backend() {
        Ok(backend) => backend,
        Err(msg) => {
            eprintln!("cbc-hmac-bench: error: {msg}");
            return ExitCode::from(2);
        }
    };
    if let Err(msg) = args.check_payloads() {
        eprintln!("cbc-hmac-bench: error: {msg}");
        return ExitCode::from(2);
    }
    let multi = match args.multi() {
        Ok(m) => m,
        Err(msg) => {
            eprintln!("cbc-hmac-bench: error: {msg}");
            return ExitCode::from(2);
        }
    };
    if args.compare == Some(args::CompareWith::Openssl) && !reference::AVAILABLE {
        eprintln!("cbc-hmac-bench: error: {}", reference::HOW_TO_ENABLE);
        return ExitCode::from(2);
    }
    if let Some(format) = args.format {
        return formats::run(&args, backend, format);
    }
    if let Some((records, connections)) = multi {
        return run_multi(&args, backend, records, connections);
    }
    let info = RunInfo {
        backend,
        plan: Plan {
            threads: args.thread_count(),
            compare: args.compare.is_some(),
            rounds: usize::from(args.rounds),
            target: Duration::from_secs_f64(args.seconds),
        },
        openssl_version: args.compare.map(|_| reference::version().to_string()),
        cpu: {
            let cpu = machine::Cpu::here();
            format!("{}, {}", cpu.model, cpu.id_summary())
        },
    };
    let load_before = machine::load_average();
    let mut rows = Vec::new();
    let mut reporter = Reporter::new(io::stdout().lock(), args.json, info.clone());
    let result = run(&args, &info, &mut reporter, &mut rows).and_then(|()| {
        let load = (load_before, machine::load_average());
        write_files(&args, &info, &rows, load)
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // Output cut short by a reader that went away (`| head`): stop quietly.
        Err(Error::Output(e)) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("cbc-hmac-bench: error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The multi-record section: every selected combination at every payload.
fn run_multi(args: &Args, backend: Backend, records: usize, connections: usize) -> ExitCode {
    let cpu = machine::Cpu::here();
    let target = Duration::from_secs_f64(args.seconds);
    let rounds = usize::from(args.rounds);
    let mut out = io::stdout().lock();
    if !args.json {
        let _ = writeln!(out, "Backend: {backend} (open: {})", backend.open_kernel());
        let _ = writeln!(out, "CPU: {}, {}", cpu.model, cpu.id_summary());
        let _ = writeln!(out, "{}", output::kernel_line(backend));
        let _ = writeln!(
            out,
            "Multi-record {}, TLS 1.2 MAC-then-encrypt; {rounds} alternating rounds, \
             medians; ratio = batch / other side",
            if args.open { "open" } else { "seal" }
        );
    }
    for &payload in &args.payload_sizes() {
        for combination in args.selected_combinations() {
            let shape = multi::Shape {
                combination,
                records,
                connections,
                payload,
                open: args.open,
                page_aligned: args.page_aligned,
            };
            let outcome = multi_sides(args, backend, shape).and_then(|mut sides| {
                let f = multi::measure(&mut sides, &shape, rounds, target)?;
                Ok((sides, f))
            });
            let (sides, figures) = match outcome {
                Ok(x) => x,
                Err(failure) => {
                    eprintln!(
                        "cbc-hmac-bench: error: multi-record {} {combination}, {records} x \
                         {payload} bytes, backend {backend}: {failure}",
                        shape.direction()
                    );
                    return ExitCode::FAILURE;
                }
            };
            let line = if args.json {
                multi::json_line(&shape, backend, &cpu.id_summary(), &sides, &figures)
            } else {
                format!(
                    "{}\n{}",
                    shape.title(),
                    multi::text_line(&shape, &sides, &figures)
                )
            };
            if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

/// The sides of a multi-record measurement: the batch first.
fn multi_sides(
    args: &Args,
    backend: Backend,
    shape: multi::Shape,
) -> Result<Vec<Box<dyn multi::Side>>, workload::Failure> {
    let mut sides: Vec<Box<dyn multi::Side>> = if shape.open {
        vec![
            Box::new(multi_open::OursOpen::new(shape, backend, true)?),
            Box::new(multi_open::OursOpen::new(shape, backend, false)?),
        ]
    } else {
        vec![
            Box::new(multi::Ours::new(shape, backend, true)?),
            Box::new(multi::Ours::new(shape, backend, false)?),
        ]
    };
    if let Some(reference) = args.compare {
        sides.push(multi_reference::side(reference, shape)?);
    }
    Ok(sides)
}

/// Why the run stopped early.
#[derive(Debug)]
enum Error {
    /// A measurement failed: a library or OpenSSL error, or a failed check.
    Measurement {
        job: Job,
        payload: usize,
        backend: Backend,
        failure: Failure,
    },
    /// Writing the report failed.
    Output(io::Error),
    /// Writing the `--plot` or `--markdown` file failed.
    File { path: PathBuf, message: String },
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
            Error::File { path, message } => write!(f, "writing {}: {message}", path.display()),
        }
    }
}

/// Every section for every payload size, in order; stops at the first
/// failure. Collects the rows for the plot and the results page.
fn run<W: Write>(
    args: &Args,
    info: &RunInfo,
    out: &mut Reporter<W>,
    rows: &mut Vec<Row>,
) -> Result<(), Error> {
    let sections = Job::sections(&args.selected_combinations());
    let payloads = args.payload_sizes();
    let per_payload: usize = sections.iter().map(|(_, jobs)| jobs.len()).sum();
    let mut progress = Progress::new(payloads.len() * per_payload);
    out.start()?;
    for &payload in &payloads {
        for (section, jobs) in &sections {
            if jobs.is_empty() {
                continue;
            }
            out.section(*section, payload)?;
            for &job in jobs {
                progress.start(&format!(
                    "{} {}, payload {payload}",
                    job.name(),
                    job.direction()
                ));
                let outcome = driver::measure(job, info.backend, payload, &info.plan);
                progress.finish_one();
                let outcome = outcome.map_err(|failure| Error::Measurement {
                    job,
                    payload,
                    backend: info.backend,
                    failure,
                })?;
                let row = Row {
                    section: *section,
                    name: job.name(),
                    direction: job.direction(),
                    payload,
                    outcome,
                    openssl_impl: info.plan.compare.then(|| job.openssl_impl()),
                };
                out.row(&row)?;
                rows.push(row);
            }
        }
    }
    Ok(())
}

/// Writes the `--plot` and `--markdown` files.
fn write_files(
    args: &Args,
    info: &RunInfo,
    rows: &[Row],
    load: (Option<String>, Option<String>),
) -> Result<(), Error> {
    let cpu = machine::Cpu::here();
    let file_error = |path: &PathBuf, message: String| Error::File {
        path: path.clone(),
        message,
    };
    if let Some(path) = &args.plot {
        let versus = match &info.openssl_version {
            Some(v) => format!(" vs {v}"),
            None => String::new(),
        };
        let threads = match info.plan.threads {
            1 => "1 thread".to_string(),
            n => format!("{n} threads, aggregate"),
        };
        let title = format!(
            "cbc-hmac ({} backend){versus}: throughput against payload size ({}, {threads})",
            info.backend, cpu.model
        );
        plot::draw(path, rows, &title).map_err(|m| file_error(path, m))?;
        announce(path);
    }
    if let Some(path) = &args.markdown {
        let argv: Vec<String> = std::env::args().skip(1).collect();
        let page = markdown::Page {
            info,
            cpu: &cpu,
            args: &argv,
            load,
            path,
            plot: args.plot.as_deref(),
        };
        std::fs::write(path, markdown::render(rows, &page))
            .map_err(|e| file_error(path, e.to_string()))?;
        announce(path);
    }
    Ok(())
}

/// Names a written file on stderr, when stderr is a terminal.
fn announce(path: &std::path::Path) {
    if io::stderr().is_terminal() {
        eprintln!("Wrote {}", path.display());
    }
}
