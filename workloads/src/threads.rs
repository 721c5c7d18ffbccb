//! The client loop's threads: one single-threaded runtime per core, each owning its slots.
//!
//! Why not the process's multi-threaded runtime: there, a client's task, its connection's
//! driver task (redis-rs, tonic and the ZooKeeper client each run one per connection) and the
//! timers they wait on land on whichever worker thread is free, so a request and its answer can
//! cross threads, each crossing a wake-up through the kernel and the task's data moving between
//! cores. On two cores that cost `redis-setnx` at 50 clients about a tenth of lockbench's CPU
//! per acquisition and of its throughput (docs/performance.md). Here each thread runs a
//! current-thread runtime; a slot's client is connected on its thread, so everything the client
//! spawns stays there, and a request and its answer are handled without a thread hop. Slots are
//! dealt round-robin, so the clients of a run share the cores evenly; no work is stolen.
//!
//! How many: one per core when the servers run on other machines, half the cores (at least
//! one) when they share this one ([`ServersOn`]). On two cores with a local Redis, two client
//! threads beside the server's own thread kept the cores switching between three busy threads:
//! one client thread made as many acquisitions at less CPU each (docs/performance.md).
//!
//! The threads start on first use and live as long as the process; [`client_threads`] hands
//! out their runtimes' handles. A run's share of slots on one of them is a [`ClientThread`]: it
//! connects its clients, reports, and waits for the go-ahead (the shared run state and the
//! common start time, known only when every thread has connected), then runs its slots' loops
//! and hands back their stats. The resource sampler's timer-lag probe runs on the first
//! thread, so the lag it reports is the client loops' own.

use crate::connect::{ConnectProgress, connect_share};
use crate::recorder::WorkerStats;
use lockbench_core::traits::BackendError;
use lockbench_core::{Backend, LockClient};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use tokio::runtime::Handle;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Where the servers a process's runs measure are: what decides how many client threads it
/// starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServersOn {
    /// On this machine (the managed cluster, docker-compose's containers): they need cores too.
    ThisHost,
    /// On other machines, or not known to be here (an external cluster, a worker process).
    OtherHosts,
}

impl ServersOn {
    /// The client threads for a machine with `cores` cores.
    pub fn client_threads(self, cores: usize) -> usize {
        match self {
            ServersOn::ThisHost => (cores / 2).max(1),
            ServersOn::OtherHosts => cores.max(1),
        }
    }
}

static PLACEMENT: OnceLock<ServersOn> = OnceLock::new();

/// Says where the servers are, before the first run starts the client threads; a later call
/// (the threads already started, or placed once) changes nothing. Unsaid, the process takes
/// [`ServersOn::OtherHosts`]. Returns the number of client threads the process runs.
pub fn place_servers(servers: ServersOn) -> usize {
    let _ = PLACEMENT.set(servers);
    client_threads().len()
}

/// The process's client threads, started on first use (see [`ServersOn`] for how many).
pub fn client_threads() -> &'static [Handle] {
    static THREADS: OnceLock<Vec<Handle>> = OnceLock::new();
    THREADS.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let servers = *PLACEMENT.get_or_init(|| ServersOn::OtherHosts);
        (0..servers.client_threads(cores))
            .map(start_thread)
            .collect()
    })
}

/// Starts client thread `i`: a current-thread runtime driven for the life of the process.
fn start_thread(i: usize) -> Handle {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("cannot start a client thread's runtime: {e}"));
    let handle = runtime.handle().clone();
    std::thread::Builder::new()
        .name(format!("lockbench-clients-{i}"))
        .spawn(move || runtime.block_on(std::future::pending::<()>()))
        .unwrap_or_else(|e| panic!("cannot start a client thread: {e}"));
    handle
}

/// Deals `slots` round-robin over at most one group per client thread, at most one group per
/// slot (the first slot goes to the first group).
pub fn deal(slots: &[u32]) -> Vec<Vec<u32>> {
    let n = client_threads().len().min(slots.len()).max(1);
    let mut groups = vec![Vec::new(); n];
    for (i, &slot) in slots.iter().enumerate() {
        groups[i % n].push(slot);
    }
    groups
}

/// What a thread's connected clients run: given one client and its slot, the slot's loop.
pub type SlotLoop<C> =
    Box<dyn FnMut(C, u32) -> Pin<Box<dyn Future<Output = WorkerStats> + Send>> + Send>;

/// A run's slots on one client thread, seen from the task that started them.
pub struct ClientThread<C: LockClient> {
    connected: Option<oneshot::Receiver<Result<(), BackendError>>>,
    go: Option<oneshot::Sender<SlotLoop<C>>>,
    task: JoinHandle<Vec<WorkerStats>>,
}

impl<C: LockClient> ClientThread<C> {
    /// Connects one client of `backend` per slot of `slots` on client thread `thread`,
    /// counting them in `progress`.
    pub fn start<B: Backend<Client = C>>(
        thread: usize,
        backend: Arc<B>,
        slots: Vec<u32>,
        progress: Arc<ConnectProgress>,
    ) -> ClientThread<C> {
        let (connected_tx, connected) = oneshot::channel();
        let (go, go_rx) = oneshot::channel::<SlotLoop<C>>();
        let task = client_threads()[thread].spawn(async move {
            let clients = match connect_share(backend.as_ref(), &slots, &progress).await {
                Ok(clients) => clients,
                Err(e) => {
                    let _ = connected_tx.send(Err(e));
                    return Vec::new();
                }
            };
            let _ = connected_tx.send(Ok(()));
            let Ok(mut slot_loop) = go_rx.await else {
                // Another thread failed to connect, or the run was dropped: nothing runs.
                for client in clients {
                    client.close().await;
                }
                return Vec::new();
            };
            let tasks: Vec<_> = clients
                .into_iter()
                .zip(slots)
                .map(|(client, slot)| tokio::spawn(slot_loop(client, slot)))
                .collect();
            let mut stats = Vec::with_capacity(tasks.len());
            for t in tasks {
                stats.push(t.await.expect("client loop panicked"));
            }
            stats
        });
        ClientThread {
            connected: Some(connected),
            go: Some(go),
            task,
        }
    }

    /// Waits until the thread's clients are connected, or returns its connect error.
    pub async fn connected(&mut self) -> Result<(), BackendError> {
        match self.connected.take() {
            Some(rx) => rx
                .await
                .unwrap_or_else(|_| panic!("a client thread's connects panicked")),
            None => Ok(()),
        }
    }

    /// Starts the thread's slot loops.
    pub fn go(&mut self, slot_loop: SlotLoop<C>) {
        if let Some(go) = self.go.take() {
            let _ = go.send(slot_loop);
        }
    }

    /// Waits for the slot loops to end and returns their stats, in the thread's slot order.
    pub async fn finish(mut self) -> Vec<WorkerStats> {
        (&mut self.task)
            .await
            .expect("client thread's slots panicked")
    }
}

impl<C: LockClient> Drop for ClientThread<C> {
    /// Dropping the go-ahead unstarted makes the thread close its clients.
    fn drop(&mut self) {
        self.go.take();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_on_this_host_leave_half_the_cores_to_them() {
        assert_eq!(ServersOn::ThisHost.client_threads(1), 1);
        assert_eq!(ServersOn::ThisHost.client_threads(2), 1);
        assert_eq!(ServersOn::ThisHost.client_threads(8), 4);
        assert_eq!(ServersOn::OtherHosts.client_threads(2), 2);
        assert_eq!(ServersOn::OtherHosts.client_threads(0), 1);
    }

    #[test]
    fn slots_are_dealt_round_robin_from_the_first_thread() {
        let threads = client_threads().len();
        let slots: Vec<u32> = (0..10).collect();
        let groups = deal(&slots);
        assert_eq!(groups.len(), threads.min(10));
        assert_eq!(
            groups[0][0], 0,
            "the first slot (the fencing holder) goes first"
        );
        let mut all: Vec<u32> = groups.concat();
        all.sort_unstable();
        assert_eq!(all, slots);
        let sizes: Vec<usize> = groups.iter().map(Vec::len).collect();
        assert!(
            sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1,
            "{sizes:?}"
        );
        assert_eq!(deal(&[7]), vec![vec![7]]);
    }
}
