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
