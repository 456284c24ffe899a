//! The trace-equality check (`ct-check trace`, run by `ct-check/trace.sh`):
//! runs each input of a class in a fresh child under `ptrace` on the real
//! CPU (so every backend, SHA-NI, AVX-512 and VAES included), records the
//! instruction pointer and every memory-operand address of each
//! instruction between two markers around one call, and requires one
//! trace per outcome within a class, with accept and reject parting only
//! at a declassification site.
//!
//! - `ct-check trace [--full] [--backend NAME]... [--only TEXT]...`: the
//!   CI matrix (or the long one) on every available backend (or those
//!   named), or its classes whose names contain one of the texts (for
//!   example `--only "ssh open"`).
//! - `ct-check trace --self-test`: the planted leaks of `leaky` must each
//!   be caught, and the real open on the same inputs must pass.
//! - `ct-check trace-child`: the traced side (see `child`).

mod case;
mod check;
pub mod child;
mod formats;
mod leaky;
mod matrix;
mod ptrace;

use std::process::ExitCode;
use std::time::Instant;

use cbc_hmac::{Backend, Combination, MacAlgorithm, MacOrder, ProtocolVersion, RecordConfig};

use case::Op;
use check::{Symbolizer, first_divergence};
use matrix::Class;
use ptrace::{Trace, Tracer};

struct Runner {
    tracer: Tracer,
    sym: Symbolizer,
    runs: usize,
    steps: u64,
    unresolved: usize,
    verbose: bool,
}

impl Runner {
    /// Checks one class; `Err` describes the first violation.
    fn check(&mut self, class: &Class) -> Result<(), String> {
        let mut refs: Vec<(&str, &str, Trace)> = Vec::new();
        let mut steps = Vec::new();
        for m in &class.members {
            let t = self
                .tracer
                .run(&m.case.encode())
                .map_err(|e| format!("{}: {}: tracing failed: {e}", class.name, m.label))?;
            self.runs += 1;
            self.steps += t.steps as u64;
            self.unresolved += t.unresolved;
            steps.push(t.steps);
            if t.status != 0 {
                return Err(format!(
                    "{}: {}: wrong answer (child exit {})",
                    class.name, m.label, t.status
                ));
            }
            if let Some((_, label, r)) = refs.iter().find(|r| r.0 == m.outcome) {
                // Same outcome: the traces must be equal throughout.
                if let Some(d) = first_divergence(r, &t) {
                    return Err(self.report(class, label, &m.label, &d));
                }
            } else {
                if let Some((outcome, label, r)) = refs.first() {
                    // Another outcome: equal up to a declassification site.
                    if let Some(d) = first_divergence(r, &t) {
                        let at = d.last_common.map(|rip| self.sym.frames(&self.tracer, rip));
                        let ok = !d.address_only
                            && at
                                .as_ref()
                                .and_then(|f| f.first())
                                .is_some_and(|f| class.sites.iter().any(|s| s.matches(f)));
                        if !ok {
                            let mut msg = self.report(class, label, &m.label, &d);
                            msg += &format!(
                                "\n  ({outcome} and {} may part only at {:?})",
                                m.outcome, class.sites
                            );
                            return Err(msg);
                        }
                        if self.verbose {
                            let site = self.sym.describe(&self.tracer, d.last_common.unwrap());
                            println!(
                                "  {}: {outcome} and {} part after step {} at {site}",
                                class.name, m.outcome, d.step
                            );
                        }
                    }
                }
                refs.push((m.outcome, &m.label, t));
            }
        }
        if self.verbose {
            println!(
                "  ok: {} ({} runs, {:?} steps)",
                class.name,
                class.members.len(),
                steps
            );
        }
        Ok(())
    }

    fn report(&mut self, class: &Class, a: &str, b: &str, d: &check::Divergence) -> String {
        let mut s = format!(
            "{}: traces of \"{a}\" and \"{b}\" differ at step {}",
            class.name, d.step
        );
        if d.address_only {
            let rip = d.rips.0.unwrap_or(0);
            s += &format!(
                " (same instruction, different memory address) at {}",
                self.sym.describe(&self.tracer, rip)
            );
        } else {
            if let Some(rip) = d.last_common {
                s += &format!(
                    "; last common instruction {}",
                    self.sym.describe(&self.tracer, rip)
                );
            }
            for (who, rip) in [(a, d.rips.0), (b, d.rips.1)] {
                s += &match rip {
                    Some(rip) => format!(
                        "; then \"{who}\" runs {}",
                        self.sym.describe(&self.tracer, rip)
                    ),
                    None => format!("; \"{who}\" ends there"),
                };
            }
        }
        s
    }
}

fn ci_config() -> RecordConfig {
    RecordConfig::new(
        Combination::ALL[0],
        ProtocolVersion::Tls12,
        MacOrder::MacThenEncrypt,
    )
}

/// The CI matrix (or the full one) on `backends`; every padding length
/// on `best` (on every backend for `full`).
fn matrix(backends: &[Backend], best: Backend, full: bool) -> Vec<Class> {
    let mut classes = Vec::new();
    let all_pads: Vec<u8> = (0..=255).collect();
    let some_pads = [0u8, 1, 2, 15, 16, 17, 127, 128, 200, 254, 255];
    for &b in backends {
        for config in matrix::configs(full) {
            for len in matrix::body_lengths(config, full) {
                classes.push(matrix::open_class(b, config, len, len > 1024));
            }
            if full && config.version == ProtocolVersion::Tls12 {
                classes.push(matrix::padding_class(Op::Open, b, config, &all_pads));
            }
        }
        if !full {
            // About 1 KiB in both orders and 16 KiB on one configuration.
            for order in MacOrder::ALL {
                let mut c = ci_config();
                c.mac_order = order;
                classes.push(matrix::open_class(b, c, 1024, false));
            }
            classes.push(matrix::open_class(b, ci_config(), 16384, true));
            // SHA-384 with a public prefix of 13 blocks: the bulk SHA-512
            // loops (two or four blocks at a time, by CPU) over secret
            // plaintext.
            let sha384 = RecordConfig::new(
                Combination::Aes256CbcSha384,
                ProtocolVersion::Tls12,
                MacOrder::MacThenEncrypt,
            );
            classes.push(matrix::open_class(b, sha384, 2048, true));
            let pads: &[u8] = if b == best { &all_pads } else { &some_pads };
            classes.push(matrix::padding_class(Op::Open, b, ci_config(), pads));
        }
        // The batch open: its lanes (on the backend that has them) with
        // every MAC and both orders, and TLS 1.0; elsewhere one class for
        // the code around the single opens it runs.
        let lanes = b == Backend::Vaes512ShaNi || full;
        for config in matrix::configs(false) {
            let first = config.combination == Combination::ALL[0];
            let wanted = (config.version == ProtocolVersion::Tls12
                && (first || config.mac_order == MacOrder::MacThenEncrypt))
                || (config.version == ProtocolVersion::Tls10
                    && first
                    && config.mac_order == MacOrder::MacThenEncrypt);
            if wanted && (lanes || config == ci_config()) {
                let len = *matrix::body_lengths(config, false).last().expect("lengths");
                classes.push(matrix::batch_class(b, config, len, matrix::BATCH_LANES));
            }
        }
        // Four long records (and six for SHA-256): on CPUs that give so
        // few lanes (`cpu::Tuning`), the lanes hashed two streams at a
        // time on SHA-NI, or in the eight-lane AVX-512 kernels; elsewhere
        // the single opens. Twelve short ones: where the finishes run two
        // SHA-NI streams at a time, in lanes. Four and five SHA-384
        // records of 1 KiB: where
        // there is no AVX-512, in the four AVX2 lanes on the CPUs that
        // take them, prefixes and secret-length finishes alike (the fifth
        // lane alone in its call).
        if b == best || full {
            for combination in [
                Combination::ALL[0],
                Combination::Aes128CbcSha256,
                Combination::Aes256CbcSha384,
            ] {
                let config = RecordConfig::new(
                    combination,
                    ProtocolVersion::Tls12,
                    MacOrder::MacThenEncrypt,
                );
                if combination == Combination::Aes256CbcSha384 {
                    classes.push(matrix::batch_class(b, config, 1024, 4));
                    classes.push(matrix::batch_class(b, config, 1024, 5));
                    continue;
                }
                classes.push(matrix::batch_class(b, config, 4096, 4));
                classes.push(matrix::batch_class(b, config, 64, 12));
                if combination == Combination::Aes128CbcSha256 {
                    classes.push(matrix::batch_class(b, config, 4096, 6));
                }
            }
        }
        for alg in MacAlgorithm::ALL {
            let lens: &[usize] = if full { &[0, 64, 100, 1000] } else { &[100] };
            for &n in lens {
                classes.push(matrix::verify_class(b, alg, n));
            }
        }
        classes.extend(formats::classes(b, b == best, full));
    }
    classes
}

/// The result of one class and what it cost.
struct Done {
    result: Result<(), String>,
    runs: usize,
    steps: u64,
    unresolved: usize,
}

/// The CPUs this process may run on.
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: `cpu_set_t` is plain data; all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: writes one `cpu_set_t` of the given size.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if r != 0 {
        return vec![0];
    }
    // SAFETY: CPU_ISSET reads one bit of `set`, in range.
    (0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect()
}

/// Checks `classes` on `jobs` worker threads, each pinned with its
/// children to its own CPU.
fn run_all(
    classes: &[Class],
    jobs: usize,
    verbose: bool,
    print_failures: bool,
) -> Result<Vec<Done>, String> {
    let cpus = allowed_cpus();
    let jobs = jobs.clamp(1, cpus.len());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let done: std::sync::Mutex<Vec<Option<Done>>> =
        std::sync::Mutex::new((0..classes.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..jobs)
            .map(|j| {
                let (next, done, cpu) = (&next, &done, cpus[cpus.len() - 1 - j]);
                s.spawn(move || -> Result<(), String> {
                    ptrace::pin_to_cpu(cpu)?;
                    let mut runner = Runner {
                        tracer: Tracer::new()?,
                        sym: Symbolizer::new(),
                        runs: 0,
                        steps: 0,
                        unresolved: 0,
                        verbose,
                    };
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(class) = classes.get(i) else {
                            return Ok(());
                        };
                        let (r, st, u) = (runner.runs, runner.steps, runner.unresolved);
                        let result = runner.check(class);
                        if let (Err(e), true) = (&result, print_failures) {
                            println!("DIVERGENCE: {e}");
                        }
                        done.lock().expect("lock")[i] = Some(Done {
                            result,
                            runs: runner.runs - r,
                            steps: runner.steps - st,
                            unresolved: runner.unresolved - u,
                        });
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().expect("worker")?;
        }
        Ok::<(), String>(())
    })?;
    Ok(done
        .into_inner()
        .expect("lock")
        .into_iter()
        .map(|d| d.expect("every class ran"))
        .collect())
}

pub fn main(args: &[String]) -> ExitCode {
    let full = args.iter().any(|a| a == "--full");
    let self_test = args.iter().any(|a| a == "--self-test");
    let verbose = args.iter().any(|a| a == "-v" || a == "--verbose");
    let mut backends: Vec<Backend> = Vec::new();
    let mut jobs = std::env::var("CT_TRACE_JOBS")
        .ok()
        .and_then(|j| j.parse().ok())
        .unwrap_or(2usize);
    let mut only: Vec<&str> = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--only" => match it.next() {
                Some(text) => only.push(text),
                None => {
                    println!("ct-trace: FAILED (--only needs a text)");
                    return ExitCode::from(2);
                }
            },
            "--backend" => match it.next().and_then(|n| Backend::from_name(n)) {
                Some(b) => backends.push(b),
                None => {
                    println!("ct-trace: FAILED (unknown backend)");
                    return ExitCode::from(2);
                }
            },
            "--jobs" => match it.next().and_then(|n| n.parse().ok()) {
                Some(j) => jobs = j,
                None => {
                    println!("ct-trace: FAILED (--jobs needs a number)");
                    return ExitCode::from(2);
                }
            },
            _ => {}
        }
    }
    if backends.is_empty() {
        backends = Backend::available().collect();
    }
    let best = Backend::detect();
    let start = Instant::now();
    let mut classes = if self_test {
        self_test_classes(best)
    } else {
        matrix(&backends, best, full)
    };
    if !only.is_empty() && !self_test {
        classes.retain(|c| only.iter().any(|o| c.name.contains(o)));
    }
    let names: Vec<&str> = backends.iter().map(|b| b.name()).collect();
    if !self_test {
        println!(
            "ct-trace: {} matrix, {} classes on {} ({jobs} jobs)",
            if full { "full" } else { "CI" },
            classes.len(),
            names.join(", ")
        );
    }
    let done = match run_all(&classes, jobs, verbose, !self_test) {
        Ok(d) => d,
        Err(e) => {
            println!("ct-trace: FAILED ({e})");
            return ExitCode::FAILURE;
        }
    };
    let secs = start.elapsed().as_secs_f64();
    if self_test {
        return self_test_verdict(&classes, &done);
    }
    for &b in &backends {
        let mine = || {
            classes
                .iter()
                .zip(&done)
                .filter(move |(c, _)| c.backend == b)
        };
        println!(
            "  {b}: {} classes, {} runs, {} steps, {} failed",
            mine().count(),
            mine().map(|(_, d)| d.runs).sum::<usize>(),
            mine().map(|(_, d)| d.steps).sum::<u64>(),
            mine().filter(|(_, d)| d.result.is_err()).count(),
        );
    }
    let unresolved: usize = done.iter().map(|d| d.unresolved).sum();
    println!(
        "ct-trace: {} runs, {} instructions single-stepped, {unresolved} unresolved memory operands, {secs:.1} s",
        done.iter().map(|d| d.runs).sum::<usize>(),
        done.iter().map(|d| d.steps).sum::<u64>(),
    );
    let failures: Vec<&String> = done
        .iter()
        .filter_map(|d| d.result.as_ref().err())
        .collect();
    if let Some(first) = failures.first() {
        println!(
            "ct-trace: FAILED ({} of {} classes; first: {first})",
            failures.len(),
            classes.len()
        );
        return ExitCode::FAILURE;
    }
    if unresolved > 0 {
        println!("ct-trace: FAILED ({unresolved} memory operands without an address)");
        return ExitCode::FAILURE;
    }
    println!("ct-trace: PASSED (backends: {})", names.join(", "));
    ExitCode::SUCCESS
}

/// The control (the library's open) and the three planted leaks, on the
/// same valid records of one length with six padding lengths.
fn self_test_classes(b: Backend) -> Vec<Class> {
    let pads = [0u8, 1, 2, 17, 128, 255];
    [Op::Open, Op::LeakBranch, Op::LeakTable, Op::LeakNaive]
        .into_iter()
        .map(|op| matrix::padding_class(op, b, ci_config(), &pads))
        .collect()
}

fn self_test_verdict(classes: &[Class], done: &[Done]) -> ExitCode {
    let mut ok = true;
    // The control must pass, or a "catch" below could be noise.
    match &done[0].result {
        Ok(()) => println!("self-test: control passes: {}", classes[0].name),
        Err(e) => {
            println!("self-test: the control FAILED, so the catches mean nothing: {e}");
            ok = false;
        }
    }
    for (class, d) in classes.iter().zip(done).skip(1) {
        match &d.result {
            Ok(()) => {
                println!("self-test: NOT CAUGHT: {}", class.name);
                ok = false;
            }
            Err(e) => println!("self-test: caught: {e}"),
        }
    }
    if ok {
        println!("ct-trace: self-test PASSED");
        ExitCode::SUCCESS
    } else {
        println!("ct-trace: self-test FAILED");
        ExitCode::FAILURE
    }
}
