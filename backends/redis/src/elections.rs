//! The Redis system's election recipes, as `lockbench-registry` finds them (through
//! `System::elections`): each one's name, servers, term life and constructor.

use crate::RedisLeaseElection;
use crate::recipes::{knobs, ttl};
use crate::system::REDIS;
use lockbench_core::{AnyElector, ElectionKind, ElectionRecipe};

/// redis-lease-election: `SET NX PX` of one key with an `INCR`ed epoch in the value, renewed
/// by the leader, polled by followers every `failover.poll`.
pub const REDIS_LEASE_ELECTION: ElectionKind = ElectionKind::of("redis-lease-election");

/// The election recipes.
pub static ELECTIONS: &[ElectionRecipe] = &[ElectionRecipe {
    kind: REDIS_LEASE_ELECTION,
    group: REDIS,
    expiry: &ttl,
    build: &|s, e, name| {
        let poll = s.failover.poll;
        Ok(AnyElector::new(RedisLeaseElection::new(
            e,
            &knobs(s)?,
            poll,
            name,
        )?))
    },
}];
