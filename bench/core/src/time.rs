//! One monotonic clock for the whole run.
//!
//! Every op is stamped with nanoseconds since the run started, read from the same
//! origin on `CLOCK_MONOTONIC`, so ops from different clients, and from different worker
//! processes on the same machine, can be ordered against each other without wall-clock skew.
//!
//! Why raw `CLOCK_MONOTONIC` nanoseconds: an [`Instant`] cannot cross a process boundary, but
//! the kernel clock behind it can. The coordinator sends [`RunClock::monotonic_origin`] to each
//! worker process, which rebuilds the same clock with [`RunClock::from_monotonic_origin`]; every
//! process then reads `clock_gettime(CLOCK_MONOTONIC) - origin` (a vDSO call, no syscall), so
//! their stamps are directly comparable. Network namespaces do not change this clock (time
//! namespaces would, and lockbench never creates them).

use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// Nanoseconds since the start of the run.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Nanos(pub u64);

impl Nanos {
    /// The time as a [`Duration`] since the start of the run.
    pub fn as_duration(self) -> Duration {
        Duration::from_nanos(self.0)
    }

    /// `self - earlier`, or zero when `earlier` is later.
    pub fn saturating_sub(self, earlier: Nanos) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }

    /// The time `d` after `self`.
    pub fn after(self, d: Duration) -> Nanos {
        Nanos(self.0 + d.as_nanos() as u64)
    }
}

/// The run's clock: an origin plus arithmetic. Cheap to copy into every client task.
#[derive(Clone, Copy, Debug)]
pub struct RunClock {
    /// The origin as an [`Instant`] (for sleeping until a run time).
    origin: Instant,
    /// The same origin as raw `CLOCK_MONOTONIC` nanoseconds (for stamping and for workers).
    mono: u64,
}

/// `CLOCK_MONOTONIC` now, in nanoseconds (what [`Instant`] reads on Linux).
pub fn monotonic_nanos() -> u64 {
    let ts = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .expect("CLOCK_MONOTONIC is always readable");
    ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64
}

impl RunClock {
    /// A clock whose zero is now.
    pub fn start() -> RunClock {
        RunClock::from_origin(Instant::now())
    }

    /// A clock whose zero is `origin`.
    pub fn from_origin(origin: Instant) -> RunClock {
        let (now, mono_now) = (Instant::now(), monotonic_nanos());
        let back = now.saturating_duration_since(origin).as_nanos() as u64;
        RunClock {
            origin,
            mono: mono_now.saturating_sub(back),
        }
    }

    /// The clock whose zero is `origin` raw `CLOCK_MONOTONIC` nanoseconds, as another process
    /// on this machine reported it with [`RunClock::monotonic_origin`].
    pub fn from_monotonic_origin(origin: u64) -> RunClock {
        let (now, mono_now) = (Instant::now(), monotonic_nanos());
        let since = Duration::from_nanos(mono_now.saturating_sub(origin));
        RunClock {
            origin: now.checked_sub(since).unwrap_or(now),
            mono: origin,
        }
    }

    /// The origin as raw `CLOCK_MONOTONIC` nanoseconds, to hand to worker processes.
    pub fn monotonic_origin(&self) -> u64 {
        self.mono
    }

    /// Time since the origin.
    pub fn now(&self) -> Nanos {
        Nanos(monotonic_nanos().saturating_sub(self.mono))
    }

    /// The [`Instant`] at run time `t`, for sleeping until an intended start.
    pub fn instant_at(&self, t: Nanos) -> Instant {
        self.origin + t.as_duration()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clock_rebuilt_from_its_monotonic_origin_reads_the_same_time() {
        let a = RunClock::start();
        std::thread::sleep(Duration::from_millis(5));
        let b = RunClock::from_monotonic_origin(a.monotonic_origin());
        let (ta, tb) = (a.now(), b.now());
        assert!(tb >= ta && tb.saturating_sub(ta) < Duration::from_millis(50));
        assert!(ta >= Nanos(5_000_000));
        let at = b.instant_at(Nanos(0));
        let diff = if at > a.instant_at(Nanos(0)) {
            at - a.instant_at(Nanos(0))
        } else {
            a.instant_at(Nanos(0)) - at
        };
        assert!(diff < Duration::from_millis(1), "{diff:?}");
    }
}
