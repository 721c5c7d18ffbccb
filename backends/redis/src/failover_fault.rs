//! The `redis-failover` fault on the failover pair (`fo1`/`fo2` under three Sentinels), which
//! Redis offers ([`System::faults`]): lose a grant on purpose, the way asynchronous
//! replication loses one.
//!
//! Redis replicates asynchronously: a primary answers `OK` to `SET NX` before the replica has
//! the key. If the primary dies in that gap, Sentinel promotes a replica that never saw the
//! grant, and the next client is granted the same lock while the first still believes it holds
//! it. The gap is a millisecond, so a fault that waits for it by chance would almost never hit
//! it. Instead:
//!
//! 1. wait until no lock is held on either node (a release has replicated), then cut the
//!    replication link: a DROP rule in the replica's host against the primary (so the replica
//!    stays reachable for the Sentinels and for clients after its promotion). The lock must be
//!    free at the cut: a release made after it would not replicate either, and the promoted
//!    replica would keep the old holder's key until its TTL (a stuck lock, not a double grant);
//! 2. wait for the primary's next grant, seen as the sum of the lock recipe's fencing counters
//!    (`*fence:*`, INCRed by every grant in the same script) going up;
//! 3. SIGKILL the primary at once.
//!
//! Sentinel (down-after 1 s, quorum 2) then promotes the replica. `heal` (after the chaos
//! controller flushed the rule) waits for Sentinel's promotion, restarts the old primary empty
//! and makes it a replica of the new primary at once (`REPLICAOF`; Sentinel would, but ~10 s
//! later), and waits until it reports `role:slave`, so the pair is whole again for the next
//! run. Needs a host per server (the cut is an iptables rule): [`SystemFault::cuts_links`].
//!
//! The cut, the kill and the restart are the chaos controller's ([`FaultAccess`]); what to ask
//! the pair and its Sentinels is [`crate::failover_probe`].
//!
//! [`System::faults`]: lockbench_core::System::faults

use crate::failover_probe::{locks, next_grant, primary, replicate, wait_replica};
use crate::system::FAILOVER;
use lockbench_core::{
    FaultAccess, FaultEvent, FaultKind, FaultPhase, Group, Pending, RunClock, ServerSpec,
    SystemFault,
};
use std::time::{Duration, Instant};

/// The kind its events are recorded as.
const KIND: FaultKind = FaultKind::RedisFailover;
/// How long the fault waits for the primary's next grant (and for a free moment to cut).
const GRANT_BUDGET: Duration = Duration::from_secs(10);
/// How long heal waits for Sentinel to promote the replica, and then to make the restarted
/// former primary a replica.
const SENTINEL_BUDGET: Duration = Duration::from_secs(20);

/// The fault.
pub(crate) struct SentinelFailover;

impl SystemFault for SentinelFailover {
    fn kind(&self) -> FaultKind {
        KIND
    }

    fn acts_on(&self, group: Group) -> bool {
        group == FAILOVER
    }

    fn elsewhere(&self) -> &'static str {
        "redis-failover acts on the failover pair (backend redis-sentinel: fo1/fo2 under three \
         Sentinels), not on this backend's servers"
    }

    fn cuts_links(&self) -> bool {
        true
    }

    fn apply<'a>(
        &'a self,
        access: &'a dyn FaultAccess,
        servers: &'a [&'static ServerSpec],
        clock: &'a RunClock,
    ) -> Pending<'a, FaultEvent> {
        Box::pin(lose_a_grant(access, servers, clock))
    }

    fn heal<'a>(
        &'a self,
        access: &'a dyn FaultAccess,
        servers: &'a [&'static ServerSpec],
        target: &'a str,
    ) -> Pending<'a, (bool, String)> {
        Box::pin(rejoin(access, servers, target))
    }
}

/// The server of `servers` named `name`.
fn named(servers: &[&'static ServerSpec], name: &str) -> Option<&'static ServerSpec> {
    servers.iter().copied().find(|s| s.name == name)
}

/// Cuts the replica off from the primary while the lock is free, waits for the primary's next
/// grant, SIGKILLs the primary (see the module docs).
async fn lose_a_grant(
    access: &dyn FaultAccess,
    servers: &[&'static ServerSpec],
    clock: &RunClock,
) -> FaultEvent {
    let not_applied =
        |targets: Vec<String>, why: String| FaultEvent::not_applied(clock, KIND, targets, why);
    let probes = access.probes();
    let primary = match primary(probes, servers).await {
        Ok(p) => p,
        Err(e) => return not_applied(vec![], e),
    };
    let pspec = named(servers, &primary).expect("primary is of the pair");
    let Some(rspec) = servers.iter().copied().find(|s| s.name != primary) else {
        return not_applied(vec![primary], "no replica".into());
    };
    let replica = rspec.name.to_string();
    // Cut while the lock is free on both nodes (see the module docs), retrying until then.
    let started = Instant::now();
    let mut free_at_cut = false;
    let mut seen = 0;
    while started.elapsed() < GRANT_BUDGET {
        // Free on the primary (one round trip: the free moment may be short); the replica
        // is checked once the cut is in place.
        match locks(probes, pspec).await {
            Ok((0, grants)) => seen = grants,
            _ => {
                tokio::time::sleep(Duration::from_millis(1)).await;
                continue;
            }
        }
        if let Err(why) = access.cut(&replica, &primary).await {
            return not_applied(vec![primary], why);
        }
        if locks(probes, rspec).await.is_ok_and(|(n, _)| n == 0) {
            free_at_cut = true;
            break;
        }
        // A grant replicated in between: undo the cut and wait for the next free moment.
        access.heal_cuts().await;
    }
    if !free_at_cut {
        access.heal_cuts().await;
        return not_applied(
            vec![primary],
            format!(
                "the lock was never free on both nodes within {GRANT_BUDGET:?} (a waiter \
                 takes it at once): no moment to cut the replication link without leaving \
                 a stale key on the replica"
            ),
        );
    }
    let waited = next_grant(probes, pspec, seen, GRANT_BUDGET).await;
    let Ok(killed) = access.kill(&primary).await else {
        return not_applied(vec![primary], "the primary is not running".into());
    };
    let killed_at = FaultEvent::now(clock, KIND, FaultPhase::Start, vec![], String::new(), true);
    let when = match waited {
        Some(d) => format!(
            "right after its next grant (grant #{} seen {} ms after the cut, made while the \
             lock was free on both nodes)",
            seen + 1,
            d.as_millis()
        ),
        None => format!("after {GRANT_BUDGET:?} with NO new grant (no client was granted)"),
    };
    let note = format!(
        "replication cut ({replica} drops {primary}), then {killed} (the primary) {when}, \
         before the key could reach {replica}; Sentinel promotes {replica}"
    );
    FaultEvent {
        targets: vec![primary],
        note,
        ..killed_at
    }
}

/// Restarts the failover pair's old primary `name` (empty) and waits until Sentinel has
/// made it a replica of the new primary.
async fn rejoin(
    access: &dyn FaultAccess,
    servers: &[&'static ServerSpec],
    name: &str,
) -> (bool, String) {
    let Some(spec) = named(servers, name) else {
        return (false, format!("{name}: not a server of this system"));
    };
    // Sentinel must have promoted the replica first: restarted before that, the old primary
    // would simply be the primary again (down for less than down-after-milliseconds).
    let probes = access.probes();
    let promoted_in = Instant::now();
    let mut promoted = None;
    while promoted_in.elapsed() < SENTINEL_BUDGET {
        match primary(probes, servers).await {
            Ok(p) if p != name => {
                promoted = Some(p);
                break;
            }
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    let promoted_note = match &promoted {
        Some(p) => format!("Sentinel had promoted {p}; "),
        None => "Sentinel promoted NO replica within 20 s; ".to_string(),
    };
    match access.restart(name).await {
        Err(e) => return (false, format!("{name}: restart FAILED: {e}")),
        // Make it a replica at once: Sentinel would, but only ~10 s later, and until then
        // the pair has two primaries. The start does not wait for the server to listen, so
        // ask again until it answers (sent once, it reached no one: its log showed only
        // Sentinel's REPLICAOF, 10 s later).
        Ok(Some(_)) => {
            if let Some(new) = promoted.as_deref().and_then(|p| named(servers, p)) {
                let asked = Instant::now();
                while replicate(probes, spec, new).await.is_err()
                    && asked.elapsed() < Duration::from_secs(5)
                {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
        Ok(None) => {}
    }
    let promoted = promoted_note;
    let start = Instant::now();
    if wait_replica(probes, spec, SENTINEL_BUDGET).await {
        (
            true,
            format!(
                "{promoted}{name} restarted empty and made a replica by Sentinel after {} ms",
                start.elapsed().as_millis()
            ),
        )
    } else {
        (
            false,
            format!(
                "{promoted}{name} restarted but Sentinel did not make it a replica within 20 s"
            ),
        )
    }
}
