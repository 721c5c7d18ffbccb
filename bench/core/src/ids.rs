//! Identifiers. All are small and `Copy` so that recording an op is a copy, not an allocation.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A client process (Jepsen's *process*): one logical thread of lock calls with its own
/// session, lease or connections. A client that saw an indeterminate outcome is retired and
/// replaced by a client with a fresh id, so an id never spans two sessions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ClientId(pub u32);

/// A lock key, as an index into the scenario's key table (`0..workload.keys`). Backends turn it
/// into a path or key name once, when a client connects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct KeyId(pub u32);

/// A fencing token: a number the lock service hands out with each grant and that only grows,
/// so a protected resource can reject a write carrying a token lower than one it has seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FencingToken(pub u64);

impl fmt::Display for ClientId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "c{}", self.0)
    }
}

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "k{}", self.0)
    }
}

/// Every lock recipe lockbench can run. The serialized names are the ones users type
/// (`backends = ["zk-fair", "redlock"]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BackendKind {
    /// ZooKeeper: ephemeral-sequential node, watch on the predecessor only.
    ZkFair,
    /// ZooKeeper: the `zookeeper-client` crate's Curator-compatible lock recipe.
    ZkCurator,
    /// ZooKeeper, deliberately naive: every waiter watches the lock directory's children, so
    /// a release wakes all of them (the herd effect). Exists to measure notification fan-out
    /// against `zk-fair`.
    ZkHerd,
    /// etcd: lease + keep-alive, wait for the key with the next lower create revision.
    EtcdLease,
    /// etcd: the server-side v3 Lock API, on the same kind of lease.
    EtcdLockapi,
    /// Redis: `SET key value NX PX ttl` on one server, compare-and-delete release.
    RedisSetnx,
    /// Redlock over five independent Redis servers, quorum three.
    Redlock,
    /// Deliberately broken: Redis `SET` *without* `NX`. Exists to prove the checkers catch a
    /// recipe that does not exclude; never part of a comparison.
    #[serde(rename = "redis-broken-nonx")]
    RedisBrokenNoNx,
    /// `redis-setnx` on the primary that Redis Sentinel names (a primary with one replica and
    /// three Sentinels): the same script, reconnecting to whichever node Sentinel promotes.
    RedisSentinel,
    /// ZooKeeper: the shared (read/write) lock from the recipes page: `read-`/`write-`
    /// ephemeral-sequential nodes; a reader waits for the next lower write node, a writer for
    /// the next lower node.
    ZkRwlock,
    /// etcd, deliberately naive: every waiter watches the whole lock prefix and re-checks on
    /// any event, so a release wakes every waiter. Exists to measure fan-out against
    /// `etcd-lease`.
    EtcdHerd,
    /// Redis: `SET NX` with waiters notified by pub/sub: they subscribe to a release channel
    /// that the releaser publishes to, and retry on a message (or a fallback timeout).
    RedisPubsub,
    /// Deliberately broken: `redis-setnx` whose release is a plain `DEL` reported as success
    /// whatever it deleted, so a holder whose lock expired deletes its successor's lock.
    /// Exists to prove the release checker catches it; never part of a comparison.
    RedisBrokenRelease,
    /// Deliberately broken: `redis-setnx` whose renew is a plain `PEXPIRE` without the compare,
    /// so a holder whose lock expired extends its successor's lock and is told it still holds
    /// it. Exists to prove the renew checker catches it; never part of a comparison.
    RedisBrokenRenew,
    /// Deliberately broken: `zk-rwlock` whose writers ignore read nodes (a write node waits for
    /// lower write nodes only), so a writer is granted while readers hold. Exists to prove the
    /// shared-lock checker catches it (with `workload.read_fraction` > 0); never part of a
    /// comparison.
    ZkBrokenRwlock,
}

impl BackendKind {
    /// Every backend, in the order comparisons print them.
    pub const ALL: [BackendKind; 15] = [
        BackendKind::ZkFair,
        BackendKind::ZkCurator,
        BackendKind::ZkHerd,
        BackendKind::EtcdLease,
        BackendKind::EtcdLockapi,
        BackendKind::RedisSetnx,
        BackendKind::Redlock,
        BackendKind::RedisBrokenNoNx,
        BackendKind::RedisSentinel,
        BackendKind::ZkRwlock,
        BackendKind::EtcdHerd,
        BackendKind::RedisPubsub,
        BackendKind::RedisBrokenRelease,
        BackendKind::RedisBrokenRenew,
        BackendKind::ZkBrokenRwlock,
    ];

    /// The name users type and results print.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::ZkFair => "zk-fair",
            BackendKind::ZkCurator => "zk-curator",
            BackendKind::ZkHerd => "zk-herd",
            BackendKind::EtcdLease => "etcd-lease",
            BackendKind::EtcdLockapi => "etcd-lockapi",
            BackendKind::RedisSetnx => "redis-setnx",
            BackendKind::Redlock => "redlock",
            BackendKind::RedisBrokenNoNx => "redis-broken-nonx",
            BackendKind::RedisSentinel => "redis-sentinel",
            BackendKind::ZkRwlock => "zk-rwlock",
            BackendKind::EtcdHerd => "etcd-herd",
            BackendKind::RedisPubsub => "redis-pubsub",
            BackendKind::RedisBrokenRelease => "redis-broken-release",
            BackendKind::RedisBrokenRenew => "redis-broken-renew",
            BackendKind::ZkBrokenRwlock => "zk-broken-rwlock",
        }
    }

    /// Parses a user-typed name; the error lists the valid names.
    pub fn parse(name: &str) -> Result<BackendKind, String> {
        BackendKind::ALL
            .into_iter()
            .find(|b| b.name() == name)
            .ok_or_else(|| {
                let valid: Vec<&str> = BackendKind::ALL.iter().map(|b| b.name()).collect();
                format!(
                    "unknown backend `{name}`; expected one of: {}",
                    valid.join(", ")
                )
            })
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialized_names_are_the_names_users_type() {
        for b in BackendKind::ALL {
            let json = serde_json::to_string(&b).unwrap();
            assert_eq!(json, format!("\"{}\"", b.name()));
            assert_eq!(BackendKind::parse(b.name()), Ok(b));
        }
    }
}
