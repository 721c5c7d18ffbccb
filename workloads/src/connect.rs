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
    let started = Instant::now();
    let total = slots.len();
    let mut ready = Vec::with_capacity(total);
    let mut first_error = None;
    let mut reported = 0;
    for batch in slots.chunks(CONNECT_PARALLELISM) {
        let connected =
            futures::future::join_all(batch.iter().map(|&slot| backend.connect(ClientId(slot))))
                .await;
        for c in connected {
            match c {
                Ok(c) => ready.push(c),
                Err(e) => first_error = first_error.or(Some(e)),
            }
        }
        if first_error.is_some() {
            break;
        }
        let n = ready.len();
        if total >= PROGRESS_FROM && (n - reported >= PROGRESS_FROM || n == total) {
            reported = n;
            eprintln!(
                "lockbench: {}: connected {n}/{total} clients ({:.1} s)",
                backend.info().backend,
                started.elapsed().as_secs_f64()
            );
        }
    }
    if let Some(e) = first_error {
        for c in ready {
            c.close().await;
        }
        return Err(e);
    }
    Ok(ready)
}
