//! The two roles a backend plays: [`Backend`] makes clients, [`LockClient`] is one client.
//!
//! Both use `impl Future + Send` rather than boxed futures: the runner picks the backend once at
//! the top (`match kind { ZkFair => run::<ZkFair>(..), .. }`) and everything below is generic,
//! so the client loop makes no virtual calls and no allocation per op.

pub use crate::counters::ServerCounters;
use crate::fanout::{ServerFanout, Wakeups};
use crate::ids::{BackendKind, ClientId, FencingToken, KeyId};
use crate::op::Outcome;
use crate::server_view::ServerSink;
use crate::time::RunClock;
use serde::{Deserialize, Serialize};
use std::future::Future;

/// A granted lock. `handle` is whatever the recipe needs to release it (a node path, a lease,
/// a random value); `token` is the fencing token when the recipe has one.
#[derive(Debug)]
pub struct Grant<H> {
    /// The lock that was granted.
    pub key: KeyId,
    /// The fencing token, or `None` for recipes that have none (Redlock): results say so
    /// rather than invent one.
    pub token: Option<FencingToken>,
    /// Recipe-specific state needed to release or renew.
    pub handle: H,
}

/// One lock client with its own session, lease or connections (Jepsen's *client*).
///
/// Contract:
/// - `acquire` blocks until the lock is granted or the call definitely failed. It is cancelled
///   (dropped) by the caller on timeout; the caller then treats the outcome as indeterminate and
///   calls [`LockClient::close`], which must clean up whatever a half-finished acquire left.
/// - `release` and `renew` report [`ErrorKind::LockLost`](crate::ErrorKind::LockLost) when the
///   lock was no longer held (session expired, lease gone, key taken over).
/// - `requests_sent` counts every request the client sent to a server (not keep-alive pings
///   that the client library sends on its own), so results can state requests per acquisition
///   and cross-check them against the servers' own counters. `None` means the recipe runs
///   inside a library that cannot be counted from outside (results then rely on the server's
///   counters alone, and say so).
pub trait LockClient: Send + 'static {
    /// What the recipe keeps about a held lock. `Sync` because the client loop keeps the
    /// grant borrowed while it awaits a renewal.
    type Handle: Send + Sync + std::fmt::Debug + 'static;

    /// Waits for the lock on `key`.
    fn acquire(&mut self, key: KeyId) -> impl Future<Output = Outcome<Grant<Self::Handle>>> + Send;

    /// Releases a held lock.
    fn release(&mut self, grant: Grant<Self::Handle>) -> impl Future<Output = Outcome<()>> + Send;

    /// Extends a held lock's lease or TTL (a no-op check for session-based recipes).
    fn renew(&mut self, grant: &Grant<Self::Handle>) -> impl Future<Output = Outcome<()>> + Send;

    /// Requests this client has sent to servers so far, or `None` when it cannot know.
    fn requests_sent(&self) -> Option<u64>;

    /// Ends the client cleanly: closes the session, revokes the lease, drops connections.
    fn close(self) -> impl Future<Output = ()> + Send;

    /// Ends the client as a crash would: stops heartbeats and keep-alives and drops
    /// connections *without* releasing anything, so held locks are freed only by the backend's
    /// own expiry. Used to test that a dead holder's lock is given to someone else.
    fn abandon(self) -> impl Future<Output = ()> + Send;

    /// Waits for `key` in *shared* (read) mode: shared holders may hold together, never with
    /// an exclusive holder. Only recipes with a read/write lock (zk-rwlock) have a shared
    /// mode; every other recipe takes the lock exclusively, which is always safe (the default).
    fn acquire_shared(
        &mut self,
        key: KeyId,
    ) -> impl Future<Output = Outcome<Grant<Self::Handle>>> + Send {
        self.acquire(key)
    }

    /// Whether [`LockClient::acquire_shared`] really takes a shared hold (the default: no, it
    /// is an exclusive acquire). The client loop records a shared acquire of a recipe without
    /// a shared mode as the exclusive `acquire` it is, so the mutual-exclusion checker judges
    /// it: two such "readers" holding together are an overlap, not a shared hold.
    fn shared_mode(&self) -> bool {
        false
    }
}

/// Why a backend could not make a client.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// A server did not answer.
    #[error("cannot reach {endpoint}: {reason}")]
    Unreachable {
        /// The address that was tried.
        endpoint: String,
        /// What went wrong.
        reason: String,
    },
    /// The cluster description lacks what this backend needs.
    #[error("{0}")]
    Config(String),
}

/// What results print about a recipe: how it waits, where its token comes from, its knobs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BackendInfo {
    /// Which recipe.
    pub backend: BackendKind,
    /// How a waiter learns the lock is free (watch on what, or polling with what delay).
    pub waits_by: String,
    /// Where the fencing token comes from, or why there is none.
    pub fencing: String,
    /// Every knob that shapes the recipe's behaviour, as `name = value` strings.
    pub knobs: Vec<(String, String)>,
}

/// A recipe bound to a cluster: makes clients and reads the servers' request counters.
pub trait Backend: Send + Sync + 'static {
    /// The client type this recipe uses.
    type Client: LockClient;

    /// How the recipe works and which knobs it runs with.
    fn info(&self) -> BackendInfo;

    /// Opens a new client with its own session/lease/connections. Must not change any lock's
    /// state. An unreachable server fails fast with [`BackendError::Unreachable`].
    fn connect(
        &self,
        client: ClientId,
    ) -> impl Future<Output = Result<Self::Client, BackendError>> + Send;

    /// Asks the servers a connect does not already ask for an answer: a recipe whose
    /// [`Backend::connect`] sends nothing (Redis: a TCP connection is accepted by the
    /// kernel whether or not the server behind it answers) checks here that enough servers
    /// answer a request, within a few seconds, and otherwise fails with
    /// [`BackendError::Unreachable`] naming the silent ones and what they did not answer.
    /// Called once before a run (with one probe connect); the default checks nothing more,
    /// for recipes whose connect is already a request (a ZooKeeper session, an etcd lease).
    fn check_servers(&self) -> impl Future<Output = Result<(), BackendError>> + Send {
        async { Ok(()) }
    }

    /// How long a client may take to start before its connect even begins (an adapter's
    /// process and runtime: its manifest's `start_timeout`). The probe before a run waits this
    /// much longer than its own budget, so a slow start is the adapter's error, named as such,
    /// not the servers'. Zero (the default) for lockbench's own recipes.
    fn start_time(&self) -> std::time::Duration {
        std::time::Duration::ZERO
    }

    /// Reads the servers' own request counters (ZooKeeper `mntr`, Redis `INFO commandstats`,
    /// etcd `/metrics`). Called before and after a run; the difference is compared with the
    /// sum of [`LockClient::requests_sent`].
    fn server_counters(&self) -> impl Future<Output = Result<ServerCounters, String>> + Send;

    /// Why this backend's clients cannot be trusted, when something outside the servers broke
    /// (an adapter that broke its protocol): the run is then an error, never a
    /// verdict. `None` (the default) for lockbench's own recipes.
    fn broken(&self) -> Option<String> {
        None
    }

    /// Wake-ups counted by every client this backend has made, or `None` when the recipe does
    /// not wait on notifications it can count (polling recipes, library-internal waits). Read
    /// before and after a run for the herd workload's `fanout` figures.
    fn wakeups(&self) -> Option<Wakeups> {
        None
    }

    /// The servers' own count of watch notifications sent, for cross-checking
    /// [`Backend::wakeups`]; `Ok(None)` when the servers cannot count them.
    fn server_fanout(&self) -> impl Future<Output = Result<Option<ServerFanout>, String>> + Send {
        async { Ok(None) }
    }

    /// The server-side observer: watches, from its own session or connections (never a
    /// client's, never through a link proxy), who the servers say holds each of keys
    /// `0..keys`, and sends every change to `sink` stamped with `clock` (see
    /// [`ServerObservation`](crate::ServerObservation)). Runs until dropped; reconnects by
    /// itself, sending a `blind` observation while it cannot see. Must not send requests on
    /// behalf of any client. `Err` at once, saying why, for a recipe without an observer (the
    /// default).
    fn observe_server(
        &self,
        clock: RunClock,
        keys: u32,
        sink: ServerSink,
    ) -> impl Future<Output = Result<(), String>> + Send {
        let _ = (clock, keys, sink);
        async { Err("this recipe has no server-side observer".to_string()) }
    }
}
