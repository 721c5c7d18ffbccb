//! Backend-wide wake-up counters ([`Tally`]): every client a backend makes bumps the same
//! counters, so the herd workload can read notifications, wasted wake-ups and wake-up requests
//! over all clients (including replaced ones) with two reads, without asking each client.

use lockbench_core::Wakeups;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Shared, cumulative wake-up counters of one backend's clients.
#[derive(Clone, Debug, Default)]
pub(crate) struct Tally(Arc<[AtomicU64; 3]>);

impl Tally {
    /// A watch notification was handed over by the library.
    pub(crate) fn notification(&self) {
        self.0[0].fetch_add(1, Ordering::Relaxed);
    }

    /// The re-check after a notification found the client still not first.
    pub(crate) fn wasted(&self) {
        self.0[1].fetch_add(1, Ordering::Relaxed);
    }

    /// A request sent in reaction to a notification.
    pub(crate) fn request(&self) {
        self.0[2].fetch_add(1, Ordering::Relaxed);
    }

    /// The counters now.
    pub(crate) fn read(&self) -> Wakeups {
        Wakeups {
            notifications: self.0[0].load(Ordering::Relaxed),
            wasted: self.0[1].load(Ordering::Relaxed),
            requests: self.0[2].load(Ordering::Relaxed),
        }
    }
}
