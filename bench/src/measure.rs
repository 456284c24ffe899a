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
}

impl Measurement {
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
}

/// Runs `op` repeatedly for about `target` of wall time after a warm-up of
/// a tenth of it (at most 200 ms), and counts the operations.
///
/// The clock is read once per batch, not per operation, so that reading it
/// does not weigh on operations of a few hundred nanoseconds; a batch lasts
/// about 1 ms (less for very short targets). The first error ends the run.
pub fn run<E>(target: Duration, mut op: impl FnMut() -> Result<(), E>) -> Result<Measurement, E> {
    let slice = (target / 50).clamp(Duration::from_micros(20), Duration::from_millis(1));
    let batch = warm_up(target / 10, slice, &mut op)?;

    let start = Instant::now();
    let mut ops = 0u64;
    loop {
        for _ in 0..batch {
            op()?;
        }
        ops += batch;
        let elapsed = start.elapsed();
        if elapsed >= target {
            return Ok(Measurement {
                ops,
                seconds: elapsed.as_secs_f64(),
            });
        }
    }
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
