//! etcd lock recipes for lockbench: `etcd-lease`, `etcd-lockapi` and the deliberately naive
//! `etcd-herd` ([`prefix_watch`]: every waiter watches the whole lock prefix, so a release
//! wakes all of them; kept to measure the fan-out `etcd-lease` avoids).
//!
//! Two ways to lock with etcd, measured side by side on the same leases:
//!
//! - **`etcd-lease`** ([`mutex`]) runs the algorithm of etcd's Go `concurrency.Mutex` from
//!   the client: an entry per contender attached to its lease, ordered by create revision,
//!   each waiter watching only the entry just before its own. It differs from Go's in one
//!   important way: its watch is one etcd serves at once.
//! - **`etcd-lockapi`** ([`lockapi`]) calls the server-side v3 Lock API, which runs that same Go
//!   Mutex inside the server: one blocking RPC per acquisition.
//!
//! # Why hand-offs under contention are slow in Go's Mutex, and not here
//!
//! In etcd 3.4 a watch created with a start revision ≤ the store's current revision goes into
//! the *unsynced* watcher group, which the server catches up only every 100 ms
//! (`mvcc/watchable_store.go`: `synced := startRev > s.store.currentRev || startRev == 0`;
//! `syncWatchersLoop` sleeps `100 * time.Millisecond`). Go's `waitDeletes` watches the
//! predecessor `WithRev(resp.Header.Revision)`, always an already-current revision, so
//! each waiter learns of its predecessor's deletion at the next 100 ms tick. That is the
//! whole of Go's ~94 ms p50 at N=8, K=1 (DESIGN §6). `etcd-lease` creates the watch with no
//! start revision and re-checks the predecessor only when the cluster's revision moved
//! between its `get` and the watch's creation, so no deletion is missed ([`wait`] explains
//! why this is exact). A watch without a start revision can still land unsynced, when a write
//! commits while etcd registers it; a progress request sent right behind the create proves it
//! synced, or the watch is created again ([`synced`]). Measured on etcd 3.4.23, 2 cores:
//!
#![doc = include_str!("../MEASUREMENTS.md")]
//!
//! # Sessions, requests, counters
//!
//! Every client owns its connection, its lease (`lease_ttl`, whole seconds) and a keep-alive
//! task pinging every `ttl / 3` ([`session`]). `close` revokes the lease; `abandon` stops the
//! pings and drops the connection so the lease, and any lock entry on it, dies at TTL expiry,
//! as after a crash. `requests_sent` counts unary requests, watch creates and watch cancels;
//! keep-alive pings are left out. `server_counters` sums `grpc_server_msg_received_total`
//! over members, keep-alives left out there too, each member with its process start time so
//! that a restarted member's counters are not taken for a count (module `metrics`).
//!
//! # TLS and users
//!
//! The cluster file's `[etcd]` settings (`tls`, `user`, a password source) reach every client,
//! the observer and `/metrics` through one `Access` (module `access`): etcd-client's rustls TLS
//! and `with_user`, and for `/metrics` lockbench's own HTTPS request with the same trust and
//! client certificate. A connect that fails, or has not succeeded in 0.5 s, has the members
//! probed (module `diagnose`), so a wrong CA, certificate, port or password fails in
//! milliseconds naming the member, the setting and the fix. [`secure`] states and creates the
//! least-privilege role and checks it before a run.
//!
//! # Leader election
//!
//! For the failover workload: **`etcd-election`** ([`election`]) is etcd's server-side
//! election API (campaign / observe / resign); **`etcd-lease-election`** ([`lease_election`])
//! the hand-made put-if-absent-under-a-lease recipe. Both run on the same per-candidate
//! session and lease as the locks, and are registered, like the lock recipes, by
//! [`elections`] (through `System::elections`).
#![deny(missing_docs)]

mod access;
mod client;
mod diagnose;
pub mod election;
pub mod elections;
mod errors;
mod http;
mod knobs;
pub mod lease_election;
pub mod lockapi;
mod metrics;
pub mod mutex;
mod observe;
pub mod prefix_watch;
mod recipe_kind;
pub mod recipes;
pub mod secure;
mod server;
pub mod session;
pub mod synced;
pub mod system;
pub mod wait;

/// The endpoint group etcd's clients read (`etcd = [...]` in an endpoints file).
pub const GROUP: &str = "etcd";

pub use client::{EtcdClient, EtcdHandle};
pub use election::EtcdElection;
pub use knobs::{EtcdKnobs, KNOBS, separate_keys};
pub use lease_election::EtcdLeaseElection;
pub use recipes::{ETCD_HERD, ETCD_LEASE, ETCD_LOCKAPI};
pub use wait::WatchStart;

use access::Access;
use client::Recipe;
use lockbench_core::traits::BackendError;
use lockbench_core::{
    Backend, BackendInfo, BackendKind, ClientId, Endpoints, ServerCounters, ServerFanout,
    WakeupTally, Wakeups,
};
use mutex::LeaseKey;
use recipe_kind::RecipeKind;
use session::Session;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use wait::DeletionWaiter;

/// One etcd recipe bound to a cluster.
#[derive(Clone, Debug)]
pub struct EtcdBackend {
    kind: BackendKind,
    /// Which of the etcd recipes `kind` is.
    recipe: RecipeKind,
    /// The members and how to connect to them (TLS, user; never the password).
    access: Access,
    ttl_secs: i64,
    prefix: String,
    keys: u32,
    watch_start: WatchStart,
    tally: WakeupTally,
    /// Waiters' watches left unproven (maybe unsynced) and created again ([`synced`]).
    unproven: Arc<AtomicU64>,
}

impl EtcdBackend {
    /// A backend for `kind` ([`ETCD_LEASE`], [`ETCD_LOCKAPI`] or
    /// [`ETCD_HERD`]) on the
    /// cluster's etcd members, for lock keys `0..keys`. The lease TTL is rounded up to whole
    /// seconds. `seed` is accepted for a uniform constructor: neither recipe makes a random
    /// choice. Fails with [`BackendError::Config`] when `endpoints.etcd` is empty or `kind` is
    /// not an etcd recipe (the error names them).
    pub fn new(
        kind: BackendKind,
        endpoints: &Endpoints,
        knobs: &EtcdKnobs,
        keys: u32,
        seed: u64,
    ) -> Result<EtcdBackend, BackendError> {
        let _ = seed;
        let recipe = RecipeKind::of(kind).map_err(BackendError::Config)?;
        if endpoints.get(GROUP).is_empty() {
            return Err(BackendError::Config(format!(
                "{kind} needs etcd members, but the cluster's `etcd` endpoint list is empty"
            )));
        }
        let ttl = knobs.lease_ttl;
        let ttl_secs = (ttl.as_secs() + u64::from(ttl.subsec_nanos() > 0)).max(1) as i64;
        Ok(EtcdBackend {
            kind,
            recipe,
            access: Access::new(endpoints)?,
            ttl_secs,
            prefix: knobs.prefix.trim_end_matches('/').to_string(),
            keys,
            watch_start: WatchStart::default(),
            tally: WakeupTally::default(),
            unproven: Arc::default(),
        })
    }

    /// Chooses how `etcd-lease` waiters start their watch (default [`WatchStart::Synced`]);
    /// [`WatchStart::AtHeaderRevision`] reproduces Go's behaviour, for comparison.
    pub fn with_watch_start(mut self, start: WatchStart) -> EtcdBackend {
        self.watch_start = start;
        self
    }

    /// How many `etcd-lease` waiters' watches, over all clients so far, could not be proven
    /// synced ([`synced`]): each was created again (but for the last of a wait's
    /// `MAX_ATTEMPTS`), a wait that would otherwise have risked etcd's 100 ms unsynced loop.
    pub fn unproven_watches(&self) -> u64 {
        self.unproven.load(Ordering::Relaxed)
    }
}

impl Backend for EtcdBackend {
    type Client = EtcdClient;

    fn info(&self) -> BackendInfo {
        let mut knobs = vec![
            ("lease_ttl".to_string(), format!("{}s", self.ttl_secs)),
            ("prefix".to_string(), self.prefix.clone()),
        ];
        let (waits_by, fencing) = match self.recipe {
            RecipeKind::Lease => {
                knobs.push((
                    "watch_start".to_string(),
                    self.watch_start.name().to_string(),
                ));
                let waits_by = match self.watch_start {
                    WatchStart::Synced => {
                        "watch for deletion of the next-lower create revision; synced watch (no start \
                         revision, proven synced by a progress answer, re-check when the revision \
                         moved)"
                    }
                    WatchStart::AtHeaderRevision => {
                        "watch for deletion of the next-lower create revision; watch from the get's \
                         header revision as Go does (unsynced: served every 100 ms)"
                    }
                };
                (waits_by, "create revision of the client's lock entry")
            }
            RecipeKind::Herd => (
                "watch on the whole lock prefix, re-check the oldest entry on any event (a \
                 release wakes every waiter)",
                "create revision of the client's lock entry",
            ),
            RecipeKind::LockApi => (
                "server-side Lock API (the server runs Go concurrency.Mutex: unsynced watch, 100 ms \
                 sync period)",
                "header revision of the Lock response",
            ),
        };
        BackendInfo {
            backend: self.kind,
            waits_by: waits_by.to_string(),
            fencing: fencing.to_string(),
            knobs,
        }
    }

    async fn connect(&self, client: ClientId) -> Result<EtcdClient, BackendError> {
        let session = Session::open(&self.access, self.ttl_secs, Some(client)).await?;
        let dir = self.recipe.dir();
        let recipe = match self.recipe {
            RecipeKind::Lease => Recipe::Lease {
                keys: (0..self.keys)
                    .map(|k| LeaseKey::new(&self.prefix, dir, k, session.lease))
                    .collect(),
                waiter: DeletionWaiter::new(self.watch_start, self.unproven.clone()),
            },
            RecipeKind::Herd => Recipe::Herd {
                keys: (0..self.keys)
                    .map(|k| LeaseKey::new(&self.prefix, dir, k, session.lease))
                    .collect(),
            },
            RecipeKind::LockApi => Recipe::LockApi {
                names: (0..self.keys)
                    .map(|k| format!("{}/{dir}/k{k}", self.prefix).into_bytes())
                    .collect(),
            },
        };
        Ok(EtcdClient {
            session,
            recipe,
            // The lease grant, and with a user its authentication.
            requests: 1 + u64::from(self.access.user().is_some()),
            tally: self.tally.clone(),
        })
    }

    /// The clients' user may read and write under the prefix (`secure::check_permissions`;
    /// a connect's wrong TLS setting or password fails here first, as a connect would).
    async fn check_servers(&self) -> Result<(), BackendError> {
        secure::check_permissions(&self.access, &self.prefix).await
    }

    async fn server_counters(&self) -> Result<ServerCounters, String> {
        metrics::received_messages(&self.access).await
    }

    async fn observe_server(
        &self,
        clock: lockbench_core::RunClock,
        keys: u32,
        sink: lockbench_core::ServerSink,
    ) -> Result<(), String> {
        let tokens = match self.recipe {
            RecipeKind::Lease | RecipeKind::Herd => true,
            RecipeKind::LockApi => false,
        };
        let dir = format!("{}/{}/", self.prefix, self.recipe.dir());
        observe::observe(self.access.clone(), dir, keys, tokens, clock, sink).await
    }

    fn wakeups(&self) -> Option<Wakeups> {
        match self.recipe {
            RecipeKind::Lease | RecipeKind::Herd => Some(self.tally.read()),
            RecipeKind::LockApi => None,
        }
    }

    async fn server_fanout(&self) -> Result<Option<ServerFanout>, String> {
        if self.wakeups().is_none() {
            return Ok(None);
        }
        let [events, watchers] = metrics::sums(&self.access, metrics::FANOUT).await?;
        Ok(Some(ServerFanout {
            source: metrics::FANOUT_SOURCE.to_string(),
            notifications: events,
            watches: watchers,
        }))
    }
}
