//! When each client starts its next acquire.
//!
//! Closed loop: as soon as the previous one (and its think time) is done. Open loop: on a fixed
//! schedule at `rate / clients` per client, staggered so clients do not fire together. In open
//! loop the *intended* start is what latency is measured from, so a stall that delays later
//! starts shows up in the tail instead of silently lowering the offered load (coordinated
//! omission, as wrk2 corrects it).

use lockbench_core::Nanos;
use std::time::Duration;

/// The start-time schedule of one client.
#[derive(Clone, Debug)]
pub enum Pacer {
    /// Start whenever ready.
    Closed,
    /// Start at `first + k * interval`.
    Open {
        /// Time between this client's starts.
        interval: Duration,
        /// The next intended start.
        next: Nanos,
    },
}

impl Pacer {
    /// The pacer of client `index` of `clients`, for a total `rate` (None = closed loop),
    /// starting at `start`.
    pub fn new(rate: Option<f64>, index: u32, clients: u32, start: Nanos) -> Pacer {
        match rate {
            None => Pacer::Closed,
            Some(rate) => {
                let interval = Duration::from_secs_f64(clients as f64 / rate);
                let offset = interval.mul_f64(index as f64 / clients as f64);
                Pacer::Open {
                    interval,
                    next: start.after(offset),
                }
            }
        }
    }

    /// The intended start of the next op, given the time now; advances the schedule.
    /// Closed loop: now. Open loop: the scheduled time, which may already be past.
    pub fn next_start(&mut self, now: Nanos) -> Nanos {
        match self {
            Pacer::Closed => now,
            Pacer::Open { interval, next } => {
                let at = *next;
                *next = at.after(*interval);
                at
            }
        }
    }

    /// `true` for open loop (the client must sleep until the intended start).
    pub fn is_open(&self) -> bool {
        matches!(self, Pacer::Open { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_loop_keeps_its_schedule_even_when_late() {
        let mut p = Pacer::new(Some(100.0), 1, 2, Nanos(0));
        // 100/s over 2 clients = 20 ms per client, client 1 offset by 10 ms.
        assert_eq!(p.next_start(Nanos(0)), Nanos(10_000_000));
        assert_eq!(p.next_start(Nanos(500_000_000)), Nanos(30_000_000));
        let mut c = Pacer::new(None, 0, 2, Nanos(0));
        assert_eq!(c.next_start(Nanos(7)), Nanos(7));
    }
}
