//! [`ServerAccess`]: how a system's own probing logic reaches the managed cluster's servers
//! while faults run, without knowing where they run.
//!
//! Why a trait here: some knowledge of a system is a conversation rather than one request
//! (whom the Sentinels name as the primary; a script over every key; `REPLICAOF`), and it
//! belongs in the system's crate ([`System::watched_leader`](crate::System::watched_leader),
//! [`ClockJump`](crate::ClockJump), [`SystemFault`](crate::SystemFault)). Where the servers
//! are, how a partitioned server is still reached (from inside its host), and how a secure
//! cluster's TLS and logins are done are the chaos controller's. So the system writes its
//! conversation against this trait and the chaos crate implements it: core stays free of a
//! runtime and of sockets, and the system's crate free of namespaces and containers.

use crate::system::ServerSpec;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;

/// A future a system's probing logic returns (boxed: the traits here are object safe).
pub type Pending<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Whom a request is sent as, on a secure cluster (a plain cluster admits anyone).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Login {
    /// lockbench's own least-privilege user, as its clients log in.
    Client,
    /// The system's administrator ([`System::admin_user`](crate::System::admin_user)), for
    /// requests lockbench's user may not send (Redis's scripts over every key, `REPLICAOF`).
    Admin,
}

/// Reaching the servers of the cluster a fault acts on.
pub trait ServerAccess: Send + Sync {
    /// The address clients write for `spec` in the cluster's topology (etcd's is a URL).
    fn endpoint(&self, spec: &ServerSpec) -> String;

    /// Where clients (and the other members) reach `spec` in the cluster's topology.
    fn client_addr(&self, spec: &ServerSpec) -> SocketAddr;

    /// Sends `request` to `spec`'s client port as `login`, and reads until the server closes
    /// the connection or `complete(reply)`; bounded in time. `Err` says what failed, naming
    /// the server.
    fn ask<'a>(
        &'a self,
        spec: &'static ServerSpec,
        request: Vec<u8>,
        complete: fn(&[u8]) -> bool,
        login: Login,
    ) -> Pending<'a, Result<Vec<u8>, String>>;
}
