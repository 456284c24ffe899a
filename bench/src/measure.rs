//! The timing loop: a short warm-up that also sizes the batches, then
//! batches of operations until the wall time is up.

use std::time::{Duration, Instant};

/// The outcome of one timed run.
#[derive(Clone, Copy, Debug)]
pub struct Measurement {
    /// Operations completed.
    pub ops: u64,
    /// Wall time they took, in seconds.
    pub seconds: f64,
    /// CPU time the measuring thread got meanwhile, in seconds (Linux:
    /// `/proc/thread-self/schedstat`; `None` where unknown). Below
    /// `seconds` when other processes took the CPU.
    pub cpu_seconds: Option<f64>,
}

impl Measurement {
    /// Nothing measured yet: the start of a sum.
    pub const ZERO: Measurement = Measurement {
        ops: 0,
        seconds: 0.0,
        cpu_seconds: Some(0.0),
    };

    /// A measurement without CPU time.
    #[cfg(test)]
    pub fn wall(ops: u64, seconds: f64) -> Measurement {
        Measurement {
            ops,
            seconds,
            cpu_seconds: None,
        }
    }

    /// `self` followed by `later`, on the same thread: operations and
    /// seconds add up.
    pub fn then(self, later: Measurement) -> Measurement {
        Measurement {
            ops: self.ops + later.ops,
            seconds: self.seconds + later.seconds,
            cpu_seconds: sum(self.cpu_seconds, later.cpu_seconds),
        }
    }

    /// `self` and `other` run at the same time on different threads:
    /// operations add up, the wall time is the longer one (so the aggregate
    /// rate never overstates what the threads did together).
    pub fn alongside(self, other: Measurement) -> Measurement {
        Measurement {
            ops: self.ops + other.ops,
            seconds: self.seconds.max(other.seconds),
            cpu_seconds: sum(self.cpu_seconds, other.cpu_seconds),
        }
    }

    /// Bytes of payload processed, for `payload` bytes per operation.
    pub fn bytes(&self, payload: usize) -> u64 {
        self.ops * payload as u64
    }

    /// Payload throughput in GB/s (1e9 bytes per second).
    pub fn gb_per_s(&self, payload: usize) -> f64 {
        self.bytes(payload) as f64 / self.seconds / 1e9
    }

    /// Nanoseconds per operation.
    pub fn ns_per_op(&self) -> f64 {
        self.seconds * 1e9 / self.ops as f64
    }

    /// CPU time over wall time: 1.0 for a thread that had a core to itself
    /// (N for N such threads together), less on a busy machine.
    pub fn cpu_per_wall(&self) -> Option<f64> {
        Some(self.cpu_seconds? / self.seconds)
    }

    /// Payload bytes per CPU-second (not per wall-second).
    pub fn bytes_per_cpu_second(&self, payload: usize) -> Option<f64> {
        Some(self.bytes(payload) as f64 / self.cpu_seconds?)
    }
}

fn sum(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    Some(a? + b?)
}

/// The CPU time the calling thread has used, in nanoseconds (the first
/// field of `/proc/thread-self/schedstat`), where Linux provides it.
fn thread_cpu_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// Runs `op` repeatedly for about `target` of wall time after a warm-up of
/// a tenth of it (at most 200 ms), and counts the operations.
///
/// The thread's CPU time is read just before and just after the timed
/// loop (about 10 us each, untimed by the wall clock's start and end).
///
/// The clock is read once per batch, not per operation, so that reading it
/// does not weigh on operations of a few hundred nanoseconds; a batch lasts
/// about 1 ms (less for very short targets). The first error ends the run.
pub fn run<E>(target: Duration, mut op: impl FnMut() -> Result<(), E>) -> Result<Measurement, E> {
    let slice = (target / 50).clamp(Duration::from_micros(20), Duration::from_millis(1));
    let batch = warm_up(target / 10, slice, &mut op)?;

    let cpu_start = thread_cpu_ns();
    let start = Instant::now();
    let mut ops = 0u64;
    loop {
        for _ in 0..batch {
            op()?;
        }
        ops += batch;
        let elapsed = start.elapsed();
        if elapsed >= target {
            let cpu_ns = thread_cpu_ns()
                .zip(cpu_start)
                .map(|(end, start)| end.saturating_sub(start));
            return Ok(Measurement {
                ops,
                seconds: elapsed.as_secs_f64(),
                cpu_seconds: cpu_ns.map(|ns| ns as f64 / 1e9),
            });
        }
    }
}

/// Like [`run`] for operations that consume their input and cannot
/// repeat on the same bytes (an SSH packet opens once: the CBC chain and
/// the sequence number move on): `stage(state)` prepares a batch of
/// operations, untimed, and returns how many; `op(state)` is then timed
/// that many times. Only the operations count toward `target` and the
/// wall time; the warm-up (a tenth of `target`, at most 200 ms, at least
/// one batch) is staged the same way. A batch should last well over the
/// clock's cost (a microsecond or more). No CPU time: reading it per batch
/// would cost more than many batches.
pub fn run_staged<S, E>(
    target: Duration,
    state: &mut S,
    mut stage: impl FnMut(&mut S) -> Result<u64, E>,
    mut op: impl FnMut(&mut S) -> Result<(), E>,
) -> Result<Measurement, E> {
    let mut timed = |state: &mut S, budget: Duration| -> Result<(u64, Duration), E> {
        let (mut ops, mut spent) = (0u64, Duration::ZERO);
        while ops == 0 || spent < budget {
            let batch = stage(state)?;
            let start = Instant::now();
            for _ in 0..batch {
                op(state)?;
            }
            spent += start.elapsed();
            ops += batch;
        }
        Ok((ops, spent))
    };
    timed(state, (target / 10).min(Duration::from_millis(200)))?;
    let (ops, spent) = timed(state, target)?;
    Ok(Measurement {
        ops,
        seconds: spent.as_secs_f64(),
        cpu_seconds: None,
    })
}

/// Runs `op` for about `duration` (at most 200 ms, and at least one
/// operation), doubling the batch size while a batch is shorter than
/// `slice`; returns the batch size that lasts about `slice`.
fn warm_up<E>(
    duration: Duration,
    slice: Duration,
    op: &mut impl FnMut() -> Result<(), E>,
) -> Result<u64, E> {
    let duration = duration.min(Duration::from_millis(200));
    let start = Instant::now();
    let mut batch = 1u64;
    loop {
        let t = Instant::now();
        for _ in 0..batch {
            op()?;
        }
        let took = t.elapsed();
        let per_op = took.as_secs_f64() / batch as f64;
        if start.elapsed() >= duration {
            let fit = slice.as_secs_f64() / per_op.max(1e-12);
            return Ok((fit as u64).clamp(1, 1 << 30));
        }
        if took < slice {
            batch *= 2;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_operations_for_the_target_time() {
        let mut calls = 0u64;
        let m = run::<()>(Duration::from_millis(30), || {
            calls += 1;
            std::hint::black_box(calls);
            Ok(())
        })
        .unwrap();
        assert!(m.seconds >= 0.03);
        assert!(m.ops > 0 && m.ops < calls, "warm-up calls are not counted");
        assert_eq!(m.bytes(10), m.ops * 10);
        assert!(m.gb_per_s(10) > 0.0 && m.ns_per_op() > 0.0);
        if cfg!(target_os = "linux") {
            let share = m.cpu_per_wall().expect("Linux has schedstat");
            assert!(share > 0.0 && share < 1.5, "{share}");
        }
    }

    #[test]
    fn sums() {
        let a = Measurement {
            ops: 10,
            seconds: 1.0,
            cpu_seconds: Some(0.5),
        };
        let b = Measurement {
            ops: 30,
            seconds: 2.0,
            cpu_seconds: Some(2.0),
        };
        let seq = Measurement::ZERO.then(a).then(b);
        assert_eq!(
            (seq.ops, seq.seconds, seq.cpu_seconds),
            (40, 3.0, Some(2.5))
        );
        let par = a.alongside(b);
        assert_eq!((par.ops, par.seconds), (40, 2.0));
        assert_eq!(par.cpu_per_wall(), Some(1.25));
        assert_eq!(a.bytes_per_cpu_second(100), Some(2000.0));
        assert_eq!(a.then(Measurement::wall(1, 1.0)).cpu_seconds, None);
    }

    #[test]
    fn staged_runs_count_only_the_operations() {
        // Stages of 10 operations of 5 us each, each stage taking 500 us:
        // the staging is not in the wall time, every staged operation runs.
        let (mut staged, mut done) = (0u64, 0u64);
        let mut state = (0u64, 0u64);
        let m = run_staged::<_, ()>(
            Duration::from_millis(20),
            &mut state,
            |(pending, _)| {
                assert_eq!(*pending, 0, "a batch is used up before the next");
                std::thread::sleep(Duration::from_micros(500));
                *pending = 10;
                staged += 10;
                Ok(10)
            },
            |(pending, n)| {
                *pending -= 1;
                *n += 1;
                done += 1;
                let t = Instant::now();
                while t.elapsed() < Duration::from_micros(5) {
                    std::hint::spin_loop();
                }
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(staged, done);
        assert_eq!(state.1, done);
        assert!(m.ops > 0 && m.ops < done && m.ops % 10 == 0, "{}", m.ops);
        assert!(m.seconds >= 0.02, "{}", m.seconds);
        // With the staging (50 us per op) the figure would be 55 us or more.
        assert!(m.ns_per_op() < 25_000.0, "{}", m.ns_per_op());
        assert_eq!(m.cpu_seconds, None);
    }

    #[test]
    fn stops_at_the_first_error() {
        let mut left = 5;
        let r = run(Duration::from_secs(10), || {
            left -= 1;
            if left == 0 { Err("boom") } else { Ok(()) }
        });
        assert_eq!(r.unwrap_err(), "boom");
    }
}
