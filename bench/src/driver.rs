//! Runs one job: on one or several threads, for cbc-hmac alone or in
//! alternating rounds with OpenSSL.
//!
//! Every measurement is a sequence of *rounds*; each round runs the same
//! *phases* (cbc-hmac on one thread, OpenSSL on one thread, then with
//! `--threads N` cbc-hmac on N threads and OpenSSL on N threads), so drift
//! of the machine (frequency, other load) is spread over all of them
//! instead of hitting whichever ran last. Every other round runs the phases
//! in reverse order (cbc-hmac, OpenSSL | OpenSSL, cbc-hmac | ...): on a
//! shared machine the phase that opens a round was seen to get a smaller
//! share of the CPU (0.84 against 0.94 of a core), which a fixed order
//! would always charge to the same side.
//!
//! The N workers are threads started once per job. Each builds its own
//! keyed objects and buffers (nothing is shared on the hot path), then all
//! meet at a [`StartLine`] before every phase; the workers that take part
//! in the phase measure while the others wait (blocked, not spinning) at
//! the next start line.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::Duration;

use cbc_hmac::Backend;

use crate::measure::Measurement;
use crate::workload::{Failure, Job, Side};

/// How each job is measured.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// Workers (`--threads`).
    pub threads: usize,
    /// Measure OpenSSL too (`--compare openssl`).
    pub compare: bool,
    /// Rounds when there are several phases (`--rounds`).
    pub rounds: usize,
    /// Timed wall time of each phase, over all rounds (`--seconds`).
    pub target: Duration,
}

/// One phase of a round: `side` timed on the first `threads` workers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Phase {
    /// The implementation timed.
    pub side: Side,
    /// How many workers run it at once.
    pub threads: usize,
}

impl Plan {
    /// The phases of each round, in order.
    pub fn phases(&self) -> Vec<Phase> {
        let sides: &[Side] = if self.compare {
            &[Side::Ours, Side::OpenSsl]
        } else {
            &[Side::Ours]
        };
        let mut counts = vec![1];
        if self.threads > 1 {
            counts.push(self.threads);
        }
        counts
            .into_iter()
            .flat_map(|threads| sides.iter().map(move |&side| Phase { side, threads }))
            .collect()
    }

    /// Rounds per measurement: one when nothing alternates.
    pub fn round_count(&self) -> usize {
        if self.phases().len() > 1 {
            self.rounds.max(1)
        } else {
            1
        }
    }

    /// The order of the phases (indices into [`Plan::phases`]) in round
    /// `round`: as listed in even rounds, reversed in odd ones.
    pub fn round_order(&self, round: usize) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.phases().len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        order
    }

    /// Timed wall time of one phase in one round.
    pub fn round_target(&self) -> Duration {
        self.target / self.round_count() as u32
    }
}

/// One implementation's result for a job.
#[derive(Clone, Copy, Debug)]
pub struct Figures {
    /// On one thread.
    pub one: Measurement,
    /// With `--threads N`, N > 1: N and the aggregate of the N threads.
    pub many: Option<(usize, Measurement)>,
}

impl Figures {
    /// The headline measurement: the aggregate of all threads.
    pub fn total(&self) -> Measurement {
        self.many.map_or(self.one, |(_, m)| m)
    }

    /// Aggregate throughput over N times the one-thread throughput
    /// (1.0 is perfect scaling), with `--threads N`, N > 1.
    pub fn efficiency(&self, payload: usize) -> Option<f64> {
        let (n, many) = self.many?;
        Some(many.gb_per_s(payload) / (n as f64 * self.one.gb_per_s(payload)))
    }

    /// Throughput per CPU-second of the N threads over that of one thread
    /// (1.0: the threads do as much work per CPU-second as one alone), with
    /// `--threads N`, N > 1, where CPU time is known. Unlike
    /// [`Figures::efficiency`], it does not fall when other processes take
    /// the cores.
    pub fn efficiency_per_cpu(&self, payload: usize) -> Option<f64> {
        let (_, many) = self.many?;
        Some(many.bytes_per_cpu_second(payload)? / self.one.bytes_per_cpu_second(payload)?)
    }
}

/// The result of one job: cbc-hmac's figures, and OpenSSL's when comparing.
#[derive(Clone, Copy, Debug)]
pub struct Outcome {
    /// cbc-hmac on the backend under test.
    pub ours: Figures,
    /// OpenSSL, with `--compare openssl`.
    pub theirs: Option<Figures>,
}

impl Outcome {
    /// cbc-hmac's throughput over OpenSSL's (aggregates with threads).
    pub fn ratio(&self, payload: usize) -> Option<f64> {
        let theirs = self.theirs?;
        Some(self.ours.total().gb_per_s(payload) / theirs.total().gb_per_s(payload))
    }

    /// The same ratio per CPU-second of the measuring threads, where CPU
    /// time is known: steadier than [`Outcome::ratio`] when other processes
    /// take a varying share of the cores.
    pub fn ratio_per_cpu(&self, payload: usize) -> Option<f64> {
        let theirs = self.theirs?;
        Some(
            self.ours.total().bytes_per_cpu_second(payload)?
                / theirs.total().bytes_per_cpu_second(payload)?,
        )
    }
}

/// Measures `job` at `payload` bytes on `backend` as `plan` says.
pub fn measure(
    job: Job,
    backend: Backend,
    payload: usize,
    plan: &Plan,
) -> Result<Outcome, Failure> {
    let phases = plan.phases();
    let line = StartLine::new(plan.threads);
    let per_worker: Vec<Result<Vec<Measurement>, Failure>> = thread::scope(|scope| {
        let workers: Vec<_> = (0..plan.threads)
            .map(|index| {
                let (phases, line) = (&phases, &line);
                scope.spawn(move || worker(index, job, backend, payload, plan, phases, line))
            })
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    });
    let mut totals = vec![Measurement::ZERO; phases.len()];
    for result in per_worker {
        for (total, m) in totals.iter_mut().zip(result?) {
            *total = total.alongside(m);
        }
    }
    let figures = |side: Side| {
        let find = |threads: usize| {
            let k = phases.iter().position(|p| *p == Phase { side, threads })?;
            Some(totals[k])
        };
        Some(Figures {
            one: find(1)?,
            many: (plan.threads > 1).then(|| {
                (
                    plan.threads,
                    find(plan.threads).unwrap_or(Measurement::ZERO),
                )
            }),
        })
    };
    Ok(Outcome {
        ours: figures(Side::Ours).expect("every plan times cbc-hmac on one thread"),
        theirs: figures(Side::OpenSsl),
    })
}

/// Worker `index`: builds the job's objects, checks agreement when
/// comparing, then runs every round's phases it takes part in. Returns one
/// summed measurement per phase (zero for phases it sat out).
fn worker(
    index: usize,
    job: Job,
    backend: Backend,
    payload: usize,
    plan: &Plan,
    phases: &[Phase],
    line: &StartLine,
) -> Result<Vec<Measurement>, Failure> {
    // Leaves the start line however this worker ends (error or panic
    // included), so that the others never wait for it.
    let _seat = Seat(line);
    let mut bench = job.bench(backend, payload, plan.compare)?;
    if plan.compare {
        bench.agree()?;
    }
    let target = plan.round_target();
    let mut sums = vec![Measurement::ZERO; phases.len()];
    for round in 0..plan.round_count() {
        for k in plan.round_order(round) {
            line.wait();
            if index < phases[k].threads {
                sums[k] = sums[k].then(bench.time(phases[k].side, target)?);
            }
        }
    }
    Ok(sums)
}

/// A reusable barrier that workers can leave: [`StartLine::wait`] returns
/// once every worker still present waits.
pub struct StartLine {
    state: Mutex<LineState>,
    released: Condvar,
}

struct LineState {
    present: usize,
    waiting: usize,
    generation: u64,
}

impl StartLine {
    /// A start line for `workers` workers.
    pub fn new(workers: usize) -> Self {
        StartLine {
            state: Mutex::new(LineState {
                present: workers,
                waiting: 0,
                generation: 0,
            }),
            released: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, LineState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn release_if_all_wait(&self, s: &mut LineState) {
        if s.waiting > 0 && s.waiting >= s.present {
            s.waiting = 0;
            s.generation += 1;
            self.released.notify_all();
        }
    }

    /// Waits until every present worker waits here.
    pub fn wait(&self) {
        let mut s = self.lock();
        let generation = s.generation;
        s.waiting += 1;
        self.release_if_all_wait(&mut s);
        while s.generation == generation {
            s = self
                .released
                .wait(s)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// The calling worker is done: the others no longer wait for it.
    pub fn leave(&self) {
        let mut s = self.lock();
        s.present -= 1;
        self.release_if_all_wait(&mut s);
    }
}

/// Leaves the start line when dropped.
struct Seat<'a>(&'a StartLine);

impl Drop for Seat<'_> {
    fn drop(&mut self) {
        self.0.leave();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cbc_hmac::Combination;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn plan(threads: usize, compare: bool) -> Plan {
        Plan {
            threads,
            compare,
            rounds: 4,
            target: Duration::from_millis(40),
        }
    }

    #[test]
    fn phases_alternate() {
        let p = |side, threads| Phase { side, threads };
        assert_eq!(plan(1, false).phases(), [p(Side::Ours, 1)]);
        assert_eq!(plan(1, false).round_count(), 1);
        assert_eq!(plan(1, false).round_target(), Duration::from_millis(40));
        assert_eq!(
            plan(1, true).phases(),
            [p(Side::Ours, 1), p(Side::OpenSsl, 1)]
        );
        assert_eq!(plan(1, true).round_target(), Duration::from_millis(10));
        assert_eq!(
            plan(3, true).phases(),
            [
                p(Side::Ours, 1),
                p(Side::OpenSsl, 1),
                p(Side::Ours, 3),
                p(Side::OpenSsl, 3)
            ]
        );
        assert_eq!(plan(2, false).round_count(), 4);
        assert_eq!(plan(3, true).round_order(0), [0, 1, 2, 3]);
        assert_eq!(plan(3, true).round_order(1), [3, 2, 1, 0]);
        assert_eq!(plan(1, true).round_order(2), [0, 1]);
    }

    #[test]
    fn start_line_synchronises_and_survives_a_leaver() {
        let line = StartLine::new(3);
        let passed = AtomicUsize::new(0);
        thread::scope(|s| {
            for i in 0..3 {
                let (line, passed) = (&line, &passed);
                s.spawn(move || {
                    let _seat = Seat(line);
                    // Worker 2 leaves after the first start; the others go on.
                    let rounds = if i == 2 { 1 } else { 5 };
                    for _ in 0..rounds {
                        line.wait();
                        passed.fetch_add(1, Ordering::SeqCst);
                    }
                });
            }
        });
        assert_eq!(passed.load(Ordering::SeqCst), 11);
    }

    #[test]
    fn threads_report_aggregate_and_efficiency() {
        let job = Job::Seal(Combination::Aes128CbcSha1);
        let outcome = measure(job, Backend::Portable, 1024, &plan(2, false)).unwrap();
        assert!(outcome.theirs.is_none());
        let (n, many) = outcome.ours.many.unwrap();
        assert_eq!(n, 2);
        assert!(many.ops > 0 && outcome.ours.one.ops > 0);
        let e = outcome.ours.efficiency(1024).unwrap();
        assert!(e > 0.0 && e.is_finite(), "{e}");
        assert!(outcome.ratio(1024).is_none());
    }

    #[test]
    fn a_failing_worker_does_not_hang_the_others() {
        // Comparing without OpenSSL fails in every worker's setup (or, with
        // the feature, succeeds): either way `measure` returns.
        let job = Job::Open(Combination::Aes256CbcSha384);
        let r = measure(job, Backend::Portable, 64, &plan(2, true));
        assert_eq!(r.is_ok(), crate::reference::AVAILABLE);
    }
}
