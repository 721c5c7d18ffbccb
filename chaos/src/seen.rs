//! A fault counts once its effect is seen: after a fault is set on a server, a counter the
//! server's side keeps (the clock shim's shifted reads, the slow disk's held operations) must
//! pass the value it had before. [`first_effects`] waits, boundedly, for each server's first
//! effect; the faults decide what to do with those never seen (take the fault back, say why).

use std::time::{Duration, Instant};

/// A server a fault was set on: its name, what counts its effects, and the count before.
pub(crate) struct Watch<T> {
    /// The server.
    pub(crate) name: String,
    /// The clock file, the disk control: what [`first_effects`] reads the count from.
    pub(crate) on: T,
    /// The count before the fault was set.
    pub(crate) before: u64,
}

/// A server whose first effect was seen.
pub(crate) struct Seen<T> {
    /// The server and its count before.
    pub(crate) watch: Watch<T>,
    /// How long after the wait began the effect was seen.
    pub(crate) after: Duration,
    /// The count then.
    pub(crate) count: u64,
}

/// Reads `count` of every watched server every 10 ms until each one passed its count before,
/// for at most `within`: those seen (in the order seen) and those never seen.
pub(crate) async fn first_effects<T>(
    mut waiting: Vec<Watch<T>>,
    within: Duration,
    count: impl Fn(&T) -> u64,
) -> (Vec<Seen<T>>, Vec<Watch<T>>) {
    let started = Instant::now();
    let mut seen = Vec::new();
    while !waiting.is_empty() && started.elapsed() < within {
        let after = started.elapsed();
        let (now, still): (Vec<_>, Vec<_>) = waiting
            .into_iter()
            .map(|w| (count(&w.on), w))
            .partition(|(n, w)| *n > w.before);
        seen.extend(now.into_iter().map(|(count, watch)| Seen {
            watch,
            after,
            count,
        }));
        waiting = still.into_iter().map(|(_, w)| w).collect();
        if !waiting.is_empty() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    (seen, waiting)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    fn watch(name: &str, counter: &Arc<AtomicU64>) -> Watch<Arc<AtomicU64>> {
        Watch {
            name: name.into(),
            on: counter.clone(),
            before: counter.load(Ordering::Relaxed),
        }
    }

    /// A counter that moves is seen, in the order it moved; one that never moves is returned
    /// unseen once the wait is over.
    #[tokio::test]
    async fn a_moving_count_is_seen_and_a_still_one_is_not() {
        let (moves, still) = (Arc::new(AtomicU64::new(5)), Arc::new(AtomicU64::new(9)));
        let watched = vec![watch("still", &still), watch("moves", &moves)];
        let mover = moves.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(30)).await;
            mover.fetch_add(2, Ordering::Relaxed);
        });
        let (seen, unseen) = first_effects(watched, Duration::from_millis(300), |c| {
            c.load(Ordering::Relaxed)
        })
        .await;
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].watch.name, "moves");
        assert_eq!((seen[0].watch.before, seen[0].count), (5, 7));
        assert!(
            seen[0].after >= Duration::from_millis(20),
            "{:?}",
            seen[0].after
        );
        assert_eq!(unseen.len(), 1);
        assert_eq!(unseen[0].name, "still");
    }
}
