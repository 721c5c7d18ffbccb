//! The ZooKeeper system's election recipes, as `lockbench-registry` finds them (through
//! `System::elections`): each one's name, servers, term life and constructor.

use crate::ZkElection;
use crate::recipes::{knobs, session_timeout};
use crate::system::ZOOKEEPER;
use lockbench_core::{AnyElector, ElectionKind, ElectionRecipe};

/// zk-election: ephemeral-sequential node, the lowest leads, each candidate watches its
/// predecessor; epoch = the node's sequence number.
pub const ZK_ELECTION: ElectionKind = ElectionKind::of("zk-election");

/// The election recipes.
pub static ELECTIONS: &[ElectionRecipe] = &[ElectionRecipe {
    kind: ZK_ELECTION,
    group: ZOOKEEPER,
    expiry: &session_timeout,
    build: &|s, e, name| Ok(AnyElector::new(ZkElection::new(e, &knobs(s)?, name)?)),
}];
