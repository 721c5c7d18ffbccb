//! The `promote` fault: failover by promotion, for any system that can promote a replica
//! ([`System::promote`](lockbench_core::System::promote): PostgreSQL's `pg_promote()`).
//!
//! What it does, in order:
//!
//! 1. finds the leader (the system's [`Leadership`](lockbench_core::Leadership) rule) and a
//!    running member that is not it;
//! 2. SIGKILLs the leader (its host's process tree, a crash: every session and whatever the
//!    sessions held in memory is gone at once; PostgreSQL's advisory locks are not
//!    replicated, so nothing of them survives on the replica);
//! 3. sends the system's promote request to the replica and waits until it reports that it
//!    leads ([`System::is_leader`](lockbench_core::System::is_leader)); the fault is recorded
//!    as applied only then, stamped at the kill, with how long the promotion took.
//!
//! Clients are not told: they find the new leader by their own connection logic (PostgreSQL
//! clients list every member with `target_session_attrs=read-write`), as an application
//! behind a real failover does. `heal` restarts the old leader; the system's launch rejoins a
//! former leader as a replica of the one serving (PostgreSQL re-clones it), and heal waits
//! until its health check passes (for PostgreSQL: a streaming replica), so the next run starts
//! with a whole group. Nothing here names a system: the requests and readers are the
//! system's, the kill and restart the [`Site`]'s, so it works in managed mode (either
//! topology) and on compose's containers alike.

use crate::server_nemesis::ServerNemesis;
use crate::site::Site;
use crate::{probe, targets};
use lockbench_cluster::ServerSpec;
use lockbench_core::{FaultEvent, FaultKind, FaultPhase, RunClock};
use std::time::{Duration, Instant};

/// The kind its events are recorded as.
pub(crate) const PROMOTE: FaultKind = FaultKind::Promote;
/// How long the promoted member has to report that it leads.
const PROMOTE_BUDGET: Duration = Duration::from_secs(30);
/// How long a restarted former leader has to become healthy again (PostgreSQL re-clones
/// its data from the new primary first).
const REJOIN_BUDGET: Duration = Duration::from_secs(90);

impl<S: Site> ServerNemesis<S> {
    /// Kills the leader, promotes a replica, waits until it leads (see the module docs).
    pub(crate) async fn promote(&mut self, clock: &RunClock) -> FaultEvent {
        let not_applied = |why: String| FaultEvent::not_applied(clock, PROMOTE, vec![], why);
        let Some(first) = self.servers.first().copied() else {
            return not_applied("no servers".into());
        };
        let system = first.system;
        if system
            .promote(&self.site.topology().endpoint(first))
            .is_none()
        {
            return not_applied(format!(
                "{} has no promotion (System::promote): the promote fault is for systems with \
                 replicas to promote (postgres); the Redis Sentinel pair's is redis-failover",
                system.name()
            ));
        }
        let old = match targets::leader(&self.site, &self.servers).await {
            Ok(l) => l,
            Err(e) => return not_applied(format!("no leader to fail over from: {e:#}")),
        };
        let Some(replica) = self
            .servers
            .iter()
            .copied()
            .find(|s| s.name != old && self.site.is_running(s.name))
        else {
            return not_applied(format!("no running replica of {old} to promote"));
        };
        let killed = match self.site.kill(&old).await {
            Ok(note) => note,
            Err(_) => return not_applied(format!("{old} (the leader) is not running")),
        };
        let at = clock.now();
        let killed_at = Instant::now();
        self.killed.insert(old.clone());
        self.paused.remove(&old);
        self.demoted.push(old.clone());
        self.windows.push((PROMOTE, vec![replica.name.to_string()]));
        let mut event = match promote_and_wait(&self.site, replica).await {
            Ok(()) => FaultEvent::now(
                clock,
                PROMOTE,
                FaultPhase::Start,
                vec![replica.name.to_string()],
                format!(
                    "{killed} (the leader), then {r} promoted ({sys}'s promote request): it \
                     leads {ms} ms after the kill; clients find it by their own connection \
                     logic; heal restarts {old}, which rejoins as its replica",
                    r = replica.name,
                    sys = system.name(),
                    ms = killed_at.elapsed().as_millis(),
                ),
                true,
            ),
            Err(why) => FaultEvent::now(
                clock,
                PROMOTE,
                FaultPhase::Start,
                vec![replica.name.to_string()],
                format!(
                    "NOT APPLIED: {killed} (the leader), but promoting {r} failed: {why}; heal \
                     restarts {old}",
                    r = replica.name
                ),
                false,
            ),
        };
        event.time = at;
        event
    }

    /// Closes every `promote` window: restarts the former leaders and waits until each is
    /// healthy again. One stop event per window.
    pub(crate) async fn heal_promotions(&mut self, clock: &RunClock) -> Vec<FaultEvent> {
        let windows: Vec<(FaultKind, Vec<String>)> = self
            .windows
            .iter()
            .filter(|(v, _)| *v == PROMOTE)
            .cloned()
            .collect();
        self.windows.retain(|(v, _)| *v != PROMOTE);
        let demoted = std::mem::take(&mut self.demoted);
        if windows.is_empty() && demoted.is_empty() {
            return Vec::new();
        }
        let mut notes = Vec::new();
        let mut ok = true;
        for old in demoted {
            let (done, note) = self.rejoin_former_leader(&old).await;
            ok &= done;
            notes.push(note);
        }
        let note = notes.join("; ");
        windows
            .into_iter()
            .map(|(v, t)| FaultEvent::now(clock, v, FaultPhase::Stop, t, note.clone(), ok))
            .collect()
    }

    /// Restarts `name` (unless something restarted it already) and waits until its health
    /// check passes.
    async fn rejoin_former_leader(&mut self, name: &str) -> (bool, String) {
        let Some(spec) = self.servers.iter().copied().find(|s| s.name == name) else {
            return (false, format!("{name}: not a server of this system"));
        };
        let mut how = format!("{name} was running again");
        if !self.site.is_running(name) {
            match self.site.start(name).await {
                Ok(note) => how = note,
                Err(e) => return (false, format!("{name}: restart FAILED: {e:#}")),
            }
        }
        self.killed.remove(name);
        let start = Instant::now();
        let check = spec
            .system
            .health_check(&self.site.topology().endpoint(spec));
        while start.elapsed() < REJOIN_BUDGET {
            let reply =
                probe::exchange(&self.site, spec, check.request.clone(), check.complete).await;
            if let Ok(r) = reply {
                let p = spec.system.health(&r);
                if p.healthy {
                    let role = p.role.unwrap_or_else(|| "healthy".into());
                    return (
                        true,
                        format!(
                            "{how}; it rejoined as {role} after {} ms",
                            start.elapsed().as_millis()
                        ),
                    );
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        (
            false,
            format!("{how}; it was NOT healthy within {REJOIN_BUDGET:?}"),
        )
    }
}

/// Sends the promote request to `replica` and waits until it reports that it leads.
async fn promote_and_wait(site: &impl Site, replica: &'static ServerSpec) -> Result<(), String> {
    let system = replica.system;
    let endpoint = site.topology().endpoint(replica);
    let ask = system.promote(&endpoint).ok_or("no promote request")?;
    let reply = probe::exchange(site, replica, ask.request, ask.complete)
        .await
        .map_err(|e| format!("{e:#}"))?;
    system.promoted(&reply)?;
    let check = system
        .leader_check(&endpoint)
        .ok_or("the system has no leader check to verify the promotion with")?;
    let start = Instant::now();
    while start.elapsed() < PROMOTE_BUDGET {
        let reply = probe::exchange(site, replica, check.request.clone(), check.complete).await;
        if reply.is_ok_and(|r| system.is_leader(&r)) {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err(format!(
        "{} accepted the request but did not report leading within {PROMOTE_BUDGET:?}",
        replica.name
    ))
}
