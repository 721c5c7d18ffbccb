//! Connecting many clients: in bounded parallel batches, with progress on stderr.
//!
//! Why bounded: every client opens its own session, lease or connections, and asking a
//! ZooKeeper ensemble for 1,000 sessions at the same instant makes the connects time out
//! against each other (each session create is a quorum write). [`CONNECT_PARALLELISM`]
//! connects are in flight at a time, in slot order, so a run with 1,000+ waiters starts
//! instead of failing (batches of [`CONNECT_PARALLELISM`], each awaited whole); with
//! more than [`PROGRESS_FROM`] clients a line per batch of
//! them says how far it got, because that takes long enough to look like a hang.
//!
//! [`probe`] connects one client before a run reads any counter or starts anything, so a
//! server that accepts connections but never answers fails the run within [`PROBE_BUDGET`],
//! naming its address and what it did not answer, instead of a run of timeouts that ends with
//! zero acquisitions.

use lockbench_core::traits::BackendError;
use lockbench_core::{Backend, ClientId, LockClient};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Connects in flight at once.
pub const CONNECT_PARALLELISM: usize = 32;
/// From this many clients on, progress is printed.
pub const PROGRESS_FROM: usize = 200;
/// Longest [`probe`] waits. Each backend bounds its own connect (TCP connect, then its
/// handshake or first request) well inside this; this is the backstop.
pub const PROBE_BUDGET: Duration = Duration::from_millis(4500);
/// The client id of the probe: no slot has it.
const PROBE_CLIENT: ClientId = ClientId(u32::MAX);

/// Has the backend's servers answer ([`Backend::check_servers`]: a Redis `PING`), then
/// connects one client and closes it again (a ZooKeeper session, an etcd lease), before the run
/// waits on the servers in any other way. Fails within [`PROBE_BUDGET`] (plus the client's own
/// [`Backend::start_time`], an adapter's start) with the backend's own error, which names the
/// address and what did not answer.
pub async fn probe<B: Backend>(backend: &B) -> Result<(), BackendError> {
    let checked = async {
        backend.check_servers().await?;
        backend.connect(PROBE_CLIENT).await
    };
    let budget = PROBE_BUDGET + backend.start_time();
    match tokio::time::timeout(budget, checked).await {
        Ok(Ok(client)) => {
            client.close().await;
            Ok(())
        }
        Ok(Err(e)) => Err(e),
        Err(_) => {
            let info = backend.info();
            let servers = info
                .knobs
                .iter()
                .find(|(k, _)| k == "servers")
                .map(|(_, v)| v.clone())
                .unwrap_or_else(|| format!("the {} servers", info.backend));
            Err(BackendError::Unreachable {
                endpoint: servers,
                reason: format!("no client could connect within {budget:?}"),
            })
        }
    }
}

/// Connects one client per slot, [`CONNECT_PARALLELISM`] at a time. On any failure, closes
/// the clients already made and returns the first error.
pub async fn connect_all<B: Backend>(
    backend: &B,
    slots: &[u32],
) -> Result<Vec<B::Client>, BackendError> {
    connect_share(backend, slots, &ConnectProgress::new(slots.len(), 1)).await
}

/// What the threads that connect a run's clients share: how many are connected so far (for one
/// progress count over all of them) and how many connects each may have in flight (so the run
/// stays within [`CONNECT_PARALLELISM`] whatever the number of threads).
#[derive(Debug)]
pub struct ConnectProgress {
    total: usize,
    done: AtomicUsize,
    reported: AtomicUsize,
    parallelism: usize,
    started: Instant,
}

impl ConnectProgress {
    /// Progress over `total` clients connected by `threads` threads.
    pub fn new(total: usize, threads: usize) -> ConnectProgress {
        ConnectProgress {
            total,
            done: AtomicUsize::new(0),
            reported: AtomicUsize::new(0),
            parallelism: (CONNECT_PARALLELISM / threads.max(1)).max(1),
            started: Instant::now(),
        }
    }

    /// Counts `n` more connected clients of `backend` and prints a line every
    /// [`PROGRESS_FROM`] of them (and at the last) when there are that many.
    fn connected<B: Backend>(&self, backend: &B, n: usize) {
        let done = self.done.fetch_add(n, Ordering::Relaxed) + n;
        if self.total < PROGRESS_FROM {
            return;
        }
        let reported = self.reported.load(Ordering::Relaxed);
        let due = done - reported >= PROGRESS_FROM || done == self.total;
        if due
            && self
                .reported
                .compare_exchange(reported, done, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            eprintln!(
                "lockbench: {}: connected {done}/{} clients ({:.1} s)",
                backend.info().backend,
                self.total,
                self.started.elapsed().as_secs_f64()
            );
        }
    }
}

/// [`connect_all`] for this thread's share of a run's slots, counted in `progress`.
pub async fn connect_share<B: Backend>(
    backend: &B,
    slots: &[u32],
    progress: &ConnectProgress,
) -> Result<Vec<B::Client>, BackendError> {
    let mut ready = Vec::with_capacity(slots.len());
    let mut first_error = None;
    for batch in slots.chunks(progress.parallelism) {
        let connected =
            futures::future::join_all(batch.iter().map(|&slot| backend.connect(ClientId(slot))))
                .await;
        let before = ready.len();
        for c in connected {
            match c {
                Ok(c) => ready.push(c),
                Err(e) => first_error = first_error.or(Some(e)),
            }
        }
        if first_error.is_some() {
            break;
        }
        progress.connected(backend, ready.len() - before);
    }
    if let Some(e) = first_error {
        for c in ready {
            c.close().await;
        }
        return Err(e);
    }
    Ok(ready)
}
