//! Notification fan-out counters: what the herd workload reads from a backend before and
//! after a run to state notifications, wasted wake-ups and requests per release.
//!
//! Both are *cumulative* counters (they only grow), so a run's figures are differences of two
//! readings, like [`ServerCounters`](crate::ServerCounters). The client side is counted where
//! the client library hands a watch event to the recipe; the server side is what the servers
//! say they sent, for cross-checking.

use serde::{Deserialize, Serialize};

/// Wake-ups counted by a backend's clients, summed over every client it has made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Wakeups {
    /// Watch notifications handed to a waiting client by its library.
    pub notifications: u64,
    /// Notifications after which the client re-checked and still was not first in line.
    pub wasted: u64,
    /// Requests a client sent in reaction to a notification (the re-check, and a new watch
    /// when it was not first): the server work a release causes beyond its own delete.
    pub requests: u64,
}

impl Wakeups {
    /// `self - earlier`, field by field (saturating).
    pub fn since(self, earlier: Wakeups) -> Wakeups {
        Wakeups {
            notifications: self.notifications.saturating_sub(earlier.notifications),
            wasted: self.wasted.saturating_sub(earlier.wasted),
            requests: self.requests.saturating_sub(earlier.requests),
        }
    }
}

/// Watch notifications counted by the servers themselves.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServerFanout {
    /// Where the counts come from, e.g. ZooKeeper `mntr` watch-trigger sums.
    pub source: String,
    /// Cumulative watch notifications the servers have sent (summed over members).
    pub notifications: u64,
    /// Watches registered right now (a gauge, summed over members).
    pub watches: u64,
}

/// Shared, cumulative wake-up counters of one backend's clients: every client a backend makes
/// bumps the same counters, so the herd workload reads notifications, wasted wake-ups and
/// wake-up requests over all clients (including replaced ones) with two reads, without asking
/// each client. Cloning shares the counters.
#[derive(Clone, Debug, Default)]
pub struct WakeupTally(std::sync::Arc<[std::sync::atomic::AtomicU64; 3]>);

impl WakeupTally {
    /// A notification was handed over by the library.
    pub fn notification(&self) {
        self.notifications(1);
    }

    /// `n` notifications were handed over at once (one message carrying several events).
    pub fn notifications(&self, n: u64) {
        self.0[0].fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    }

    /// The re-check after a wake-up found the client still not first.
    pub fn wasted(&self) {
        self.0[1].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// A request sent in reaction to a wake-up.
    pub fn request(&self) {
        self.0[2].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// The counters now.
    pub fn read(&self) -> Wakeups {
        use std::sync::atomic::Ordering::Relaxed;
        Wakeups {
            notifications: self.0[0].load(Relaxed),
            wasted: self.0[1].load(Relaxed),
            requests: self.0[2].load(Relaxed),
        }
    }
}
