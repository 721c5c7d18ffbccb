//! One monotonic clock for the whole run.
//!
//! Every op is stamped with nanoseconds since the run started, read from the same
//! [`std::time::Instant`] origin, so ops from different clients (and, later, different worker
//! processes on the same machine) can be ordered against each other without wall-clock skew.

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
    origin: Instant,
}

impl RunClock {
    /// A clock whose zero is now.
    pub fn start() -> RunClock {
        RunClock {
            origin: Instant::now(),
        }
    }

    /// A clock whose zero is `origin`.
    pub fn from_origin(origin: Instant) -> RunClock {
        RunClock { origin }
    }

    /// Time since the origin.
    pub fn now(&self) -> Nanos {
        Nanos(self.origin.elapsed().as_nanos() as u64)
    }

    /// The [`Instant`] at run time `t`, for sleeping until an intended start.
    pub fn instant_at(&self, t: Nanos) -> Instant {
        self.origin + t.as_duration()
    }
}
