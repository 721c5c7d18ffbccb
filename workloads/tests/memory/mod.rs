//! An in-memory lock for tests of harness logic (the client loop, the worker protocol): never
//! a stand-in for a real backend.
#![allow(dead_code)]

use lockbench_core::traits::BackendError;
use lockbench_core::{
    Backend, BackendInfo, BackendKind, ClientId, ErrorKind, FencingToken, Grant, KeyId, LockClient,
    Outcome, ServerCounters,
};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::{Mutex, OwnedMutexGuard};

impl MemoryLocks {
    /// `keys` free locks; every `info_every`-th acquire is indeterminate (0: none).
    pub fn new(keys: u32, info_every: u64) -> Arc<MemoryLocks> {
        Arc::new(MemoryLocks {
            keys: (0..keys).map(|_| Arc::new(Mutex::new(0))).collect(),
            acquires: AtomicU64::new(0),
            info_every,
            connects: AtomicU64::new(0),
            broken: false,
            connect_threads: std::sync::Mutex::new(BTreeSet::new()),
            moved: AtomicU64::new(0),
        })
    }

    /// A deliberately broken lock: every acquire is granted at once, held or not.
    pub fn broken(keys: u32) -> Arc<MemoryLocks> {
        let mut locks = Arc::into_inner(MemoryLocks::new(keys, 0)).expect("fresh");
        locks.broken = true;
        Arc::new(locks)
    }
}

/// One tokio mutex per key; the token is a per-key counter bumped on every grant. Every
/// `info_every`-th acquire (over all clients) reports an indeterminate outcome instead.
pub struct MemoryLocks {
    pub keys: Vec<Arc<Mutex<u64>>>,
    pub acquires: AtomicU64,
    pub info_every: u64,
    pub connects: AtomicU64,
    /// Grants every acquire at once (see [`MemoryLocks::broken`]).
    pub broken: bool,
    /// The names of the threads clients were connected on.
    pub connect_threads: std::sync::Mutex<BTreeSet<String>>,
    /// Acquires made on another thread than their client's connect.
    pub moved: AtomicU64,
}

fn thread_name() -> String {
    std::thread::current()
        .name()
        .unwrap_or("unnamed")
        .to_string()
}

pub struct MemoryClient {
    locks: Arc<MemoryLocks>,
    sent: u64,
    /// The thread the client was connected on.
    thread: std::thread::ThreadId,
}

impl LockClient for MemoryClient {
    type Handle = OwnedMutexGuard<u64>;

    async fn acquire(&mut self, key: KeyId) -> Outcome<Grant<Self::Handle>> {
        self.sent += 1;
        if std::thread::current().id() != self.thread {
            self.locks.moved.fetch_add(1, Ordering::SeqCst);
        }
        let n = self.locks.acquires.fetch_add(1, Ordering::SeqCst) + 1;
        if self.locks.info_every > 0 && n.is_multiple_of(self.locks.info_every) {
            return Outcome::Info(ErrorKind::ConnectionLost);
        }
        let lock = if self.locks.broken {
            Arc::new(Mutex::new(n))
        } else {
            self.locks.keys[key.0 as usize].clone()
        };
        let mut guard = lock.lock_owned().await;
        *guard += 1;
        let token = Some(FencingToken(*guard));
        Outcome::Ok(Grant {
            key,
            token,
            handle: guard,
        })
    }

    async fn release(&mut self, grant: Grant<Self::Handle>) -> Outcome<()> {
        self.sent += 1;
        drop(grant.handle);
        Outcome::Ok(())
    }

    async fn renew(&mut self, _grant: &Grant<Self::Handle>) -> Outcome<()> {
        Outcome::Ok(())
    }

    fn requests_sent(&self) -> Option<u64> {
        Some(self.sent)
    }

    async fn close(self) {}

    async fn abandon(self) {}
}

pub struct MemoryBackend(pub Arc<MemoryLocks>);

impl Backend for MemoryBackend {
    type Client = MemoryClient;

    fn info(&self) -> BackendInfo {
        BackendInfo {
            backend: BackendKind::of("redis-setnx"),
            waits_by: "in-memory mutex".into(),
            fencing: "per-key counter".into(),
            knobs: vec![],
        }
    }

    async fn connect(&self, _client: ClientId) -> Result<MemoryClient, BackendError> {
        self.0.connects.fetch_add(1, Ordering::SeqCst);
        let name = thread_name();
        self.0.connect_threads.lock().expect("names").insert(name);
        Ok(MemoryClient {
            locks: self.0.clone(),
            sent: 0,
            thread: std::thread::current().id(),
        })
    }

    async fn server_counters(&self) -> Result<ServerCounters, String> {
        Err("in-memory".into())
    }
}
