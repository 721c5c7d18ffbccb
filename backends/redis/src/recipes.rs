//! The Redis system's lock recipes, as `lockbench-registry` finds them (through
//! `System::recipes`): each one's name, servers, lock life and constructor. The Sentinels
//! have none of their own: `redis-sentinel` runs on the failover pair, which are Redis
//! servers.

use crate::system::{FAILOVER, REDIS, REDLOCK};
use crate::{RedisKnobs, RedlockBackend, RedlockKnobs, SetMode, SetNxBackend};
use lockbench_core::recipe::Build;
use lockbench_core::traits::BackendError;
use lockbench_core::{AnyBackend, BackendKind, Endpoints, Group, Recipe, Scenario};
use std::time::Duration;

/// redis-setnx: `SET key value NX PX ttl` on one server, compare-and-delete release.
pub const REDIS_SETNX: BackendKind = BackendKind::of("redis-setnx");
/// redis-pubsub: `SET NX` with waiters notified by pub/sub on a release channel.
pub const REDIS_PUBSUB: BackendKind = BackendKind::of("redis-pubsub");
/// redlock: Redlock over five independent Redis servers, quorum three.
pub const REDLOCK_KIND: BackendKind = BackendKind::of("redlock");
/// redis-sentinel: `redis-setnx` on the primary that Redis Sentinel names, reconnecting to
/// whichever node Sentinel promotes.
pub const REDIS_SENTINEL: BackendKind = BackendKind::of("redis-sentinel");
/// Deliberately broken: `SET` *without* `NX`. Proves the checkers catch a recipe that does
/// not exclude.
pub const REDIS_BROKEN_NONX: BackendKind = BackendKind::of("redis-broken-nonx");
/// Deliberately broken: a release that is a plain `DEL`, reported as success whatever it
/// deleted. Proves the release checker alive.
pub const REDIS_BROKEN_RELEASE: BackendKind = BackendKind::of("redis-broken-release");
/// Deliberately broken: a renew that is a plain `PEXPIRE` without the compare. Proves the
/// renew checker alive.
pub const REDIS_BROKEN_RENEW: BackendKind = BackendKind::of("redis-broken-renew");
/// Deliberately broken: Redlock whose renewal counts as kept when any one server extended it,
/// not a quorum. Proves the mutex checker alive when a holder reaches only a minority.
pub const REDLOCK_BROKEN_RENEW: BackendKind = BackendKind::of("redlock-broken-renew");

pub(crate) fn knobs(scenario: &Scenario) -> Result<RedisKnobs, BackendError> {
    scenario.knobs.get().map_err(BackendError::Config)
}

fn redlock_knobs(scenario: &Scenario) -> Result<RedlockKnobs, BackendError> {
    scenario.knobs.get().map_err(BackendError::Config)
}

const CHECKED: &str = "knobs are checked when a scenario is loaded";

/// A dead client's lock (and a dead leader's term) lives for the key's TTL.
pub(crate) fn ttl(scenario: &Scenario) -> Duration {
    knobs(scenario).expect(CHECKED).ttl
}

fn redlock_ttl(scenario: &Scenario) -> Duration {
    redlock_knobs(scenario).expect(CHECKED).ttl
}

fn setnx(mode: SetMode, s: &Scenario, e: &Endpoints) -> Result<SetNxBackend, BackendError> {
    SetNxBackend::new(e, &knobs(s)?, s.workload.keys, s.seed, mode)
}

/// A recipe on one server (or the failover pair), its lock living for the key's TTL.
const fn single(kind: BackendKind, group: Group, broken: bool, build: &'static Build) -> Recipe {
    Recipe {
        kind,
        group,
        expiry: &ttl,
        broken,
        build,
    }
}

/// The recipes, in the order comparisons list them.
pub static RECIPES: &[Recipe] = &[
    single(REDIS_SETNX, REDIS, false, &|s, e| {
        Ok(AnyBackend::new(setnx(SetMode::Nx, s, e)?))
    }),
    single(REDIS_PUBSUB, REDIS, false, &|s, e| {
        Ok(AnyBackend::new(setnx(SetMode::Nx, s, e)?.with_pubsub()))
    }),
    Recipe {
        kind: REDLOCK_KIND,
        group: REDLOCK,
        expiry: &redlock_ttl,
        broken: false,
        build: &|s, e| {
            let b = RedlockBackend::new(e, &redlock_knobs(s)?, s.workload.keys, s.seed)?;
            Ok(AnyBackend::new(b))
        },
    },
    single(REDIS_SENTINEL, FAILOVER, false, &|s, e| {
        let b = SetNxBackend::via_sentinel(e, &knobs(s)?, s.workload.keys, s.seed)?;
        Ok(AnyBackend::new(b))
    }),
    Recipe {
        kind: REDLOCK_BROKEN_RENEW,
        group: REDLOCK,
        expiry: &redlock_ttl,
        broken: true,
        build: &|s, e| {
            let b = RedlockBackend::new(e, &redlock_knobs(s)?, s.workload.keys, s.seed)?;
            Ok(AnyBackend::new(b.renewing_on_any_server()))
        },
    },
    single(REDIS_BROKEN_NONX, REDIS, true, &|s, e| {
        Ok(AnyBackend::new(setnx(SetMode::BrokenNoNx, s, e)?))
    }),
    single(REDIS_BROKEN_RELEASE, REDIS, true, &|s, e| {
        Ok(AnyBackend::new(setnx(SetMode::BrokenRelease, s, e)?))
    }),
    single(REDIS_BROKEN_RENEW, REDIS, true, &|s, e| {
        Ok(AnyBackend::new(setnx(SetMode::BrokenRenew, s, e)?))
    }),
];
