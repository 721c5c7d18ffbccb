//! The etcd system's election recipes, as `lockbench-registry` finds them (through
//! `System::elections`): each one's name, servers, term life and constructor.

use crate::recipes::{knobs, lease_ttl};
use crate::system::ETCD;
use crate::{EtcdElection, EtcdLeaseElection};
use lockbench_core::recipe::BuildElector;
use lockbench_core::{AnyElector, ElectionKind, ElectionRecipe};

/// etcd-election: etcd's server-side election API (`Campaign` / `Observe` / `Resign`) on a
/// lease; epoch = the leader key's create revision.
pub const ETCD_ELECTION: ElectionKind = ElectionKind::of("etcd-election");
/// etcd-lease-election: etcd by hand: put-if-absent of one key under a lease (a txn on
/// `create_revision == 0`), followers watch the key; epoch = its create revision.
pub const ETCD_LEASE_ELECTION: ElectionKind = ElectionKind::of("etcd-lease-election");

/// A recipe on the cluster, a dead leader's term living for its lease TTL.
const fn entry(kind: ElectionKind, build: &'static BuildElector) -> ElectionRecipe {
    ElectionRecipe {
        kind,
        group: ETCD,
        expiry: &lease_ttl,
        build,
    }
}

/// The election recipes, in the order results list them.
pub static ELECTIONS: &[ElectionRecipe] = &[
    entry(ETCD_ELECTION, &|s, e, name| {
        Ok(AnyElector::new(EtcdElection::new(e, &knobs(s)?, name)?))
    }),
    entry(ETCD_LEASE_ELECTION, &|s, e, name| {
        Ok(AnyElector::new(EtcdLeaseElection::new(
            e,
            &knobs(s)?,
            name,
        )?))
    }),
];
