//! Leader election: the vocabulary of the `failover` workload.
//!
//! Every coordination guide says that with ephemeral nodes or leases "a dead leader is replaced
//! automatically". The failover workload measures how fast, and whether two candidates ever
//! believe they lead at once. Its unit is a *candidate*: one process with its own session,
//! lease or connection that [`Candidate::campaign`]s until it leads, holds leadership until it
//! [`Candidate::resign`]s or learns it lost it ([`Candidate::hold`] returns), and meanwhile
//! [`Candidate::observe`]s who the service says the leader is.
//!
//! Why a separate trait and id ([`ElectionKind`]) rather than more [`BackendKind`]s: an
//! election is not a lock workload. Its followers need the *identity* of the current leader
//! (not just "the lock is free"), its leader needs to learn loss asynchronously, and none of
//! the lock figures (acquisitions/s, hand-off, fairness) apply. Keeping the names apart keeps
//! an election out of a scenario's `backends` and a lock out of its `elections`.
//!
//! The set of election recipes is open, as the lock recipes' is: a system's crate registers
//! each one as an [`ElectionRecipe`](crate::recipe::ElectionRecipe) (through
//! [`System::elections`](crate::System::elections)), built as an
//! [`AnyElector`](crate::AnyElector) whose candidates are [`AnyCandidate`](crate::AnyCandidate)s.
//!
//! In the history an election is four op kinds on key 0, each carrying the leadership's
//! *epoch* (a number the service hands out that only grows, usable as a fencing token) in the
//! op's `token`: `campaign` (`invoke` when the candidate starts, `ok` when it leads),
//! `observe` (`ok`: the candidate saw the leader with that epoch; no token = no leader),
//! `leader-lost` (`ok`: the leader learned its leadership is gone, with why in `error`), and
//! `resign` (`invoke` / `ok` / `fail`). A leader is identified by its epoch: the candidate
//! whose `campaign ok` carried it.
//!
//! [`BackendKind`]: crate::BackendKind

pub use crate::ids::ElectionKind;
use crate::ids::{ClientId, FencingToken};
use crate::op::{ErrorKind, Outcome};
use crate::scenario::{Scenario, ScenarioError, bad};
use crate::traits::BackendError;
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::time::Duration;

/// A leadership: who leads, and the epoch the service gave this term.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Leader {
    /// The candidate that leads.
    pub candidate: ClientId,
    /// The term's epoch: grows with every election (a fencing token).
    pub epoch: FencingToken,
}

/// One candidate with its own session, lease or connection.
///
/// Methods take `&self` so that a candidate can observe while it campaigns or leads (the
/// driver runs [`Candidate::observe`] beside the other calls); implementations keep cheap
/// cloneable client handles inside.
pub trait Candidate: Send + Sync + 'static {
    /// Waits until this candidate leads; returns its leadership.
    fn campaign(&self) -> impl Future<Output = Outcome<Leader>> + Send;

    /// While leading: keeps the leadership alive (renewals) and returns once the candidate
    /// learns it is gone (session expired, lease gone, renewal refused), with why.
    fn hold(&self, leadership: &Leader) -> impl Future<Output = ErrorKind> + Send;

    /// Gives leadership up at once, so another candidate can be elected.
    fn resign(&self, leadership: &Leader) -> impl Future<Output = Outcome<()>> + Send;

    /// Waits until the leader the service reports differs from `known`, and returns it
    /// (`None`: no leader right now).
    fn observe(
        &self,
        known: Option<Leader>,
    ) -> impl Future<Output = Outcome<Option<Leader>>> + Send;

    /// Ends the candidate cleanly (closes the session, revokes the lease).
    fn close(self) -> impl Future<Output = ()> + Send;
}

/// What results print about an election recipe.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ElectionInfo {
    /// Which recipe.
    pub election: ElectionKind,
    /// How a candidate waits for its turn and how followers learn the leader.
    pub elects_by: String,
    /// Where the epoch comes from.
    pub epoch: String,
    /// What ends a dead leader's term (session timeout, lease TTL, key TTL).
    pub expires_by: String,
}

/// An election recipe bound to a cluster: makes candidates.
pub trait Elector: Send + Sync + 'static {
    /// The candidate type.
    type Candidate: Candidate;

    /// How the recipe works.
    fn info(&self) -> ElectionInfo;

    /// Opens a new candidate with its own session/lease/connection. An unreachable server
    /// fails fast with [`BackendError::Unreachable`].
    fn connect(
        &self,
        candidate: ClientId,
    ) -> impl Future<Output = Result<Self::Candidate, BackendError>> + Send;

    /// Removes what the election left on the servers that outlives its candidates (a
    /// ZooKeeper directory, a Redis epoch counter). Called once, after every candidate is
    /// gone; best effort.
    fn cleanup(&self) -> impl Future<Output = ()> + Send {
        async {}
    }
}

/// How the failover workload removes the leader in a round.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Removal {
    /// The leader resigns gracefully.
    Resign,
    /// SIGKILL of the leader's candidate process (a crash): its term ends only by expiry.
    Kill,
    /// SIGSTOP of the leader's process for `failover.pause`, then SIGCONT (a GC pause): it
    /// may still believe it leads when it wakes.
    Pause,
    /// SIGKILL of a *server*: the ZooKeeper leader, the etcd leader member, the Redis server;
    /// restarted once leadership is settled again.
    ServerKill,
    /// Cut the leader's client host off from every other host (iptables in the namespaces)
    /// for `failover.pause`, then heal: its process runs on but reaches nobody (netns
    /// topology only; reported as not applied elsewhere).
    Partition,
}

impl Removal {
    /// The name results print.
    pub fn name(self) -> &'static str {
        match self {
            Removal::Resign => "resign",
            Removal::Kill => "kill",
            Removal::Pause => "pause",
            Removal::ServerKill => "server-kill",
            Removal::Partition => "partition",
        }
    }
}

/// The `[failover]` table: how leaders are removed, how often.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FailoverKnobs {
    /// The removals to apply, each `rounds` times, in this order.
    pub removals: Vec<Removal>,
    /// Rounds per removal.
    pub rounds: u32,
    /// Once a round has settled (a leader every candidate observes), wait this long, plus a
    /// seeded random extra of up to as long again, before the next removal (so removals do
    /// not all land at the same point of a heartbeat or renewal cycle).
    #[serde(with = "humantime_serde")]
    pub interval: Duration,
    /// Give up waiting for a round to settle after this long (the round is then reported with
    /// no new leader).
    #[serde(with = "humantime_serde")]
    pub round_timeout: Duration,
    /// `pause` / `partition`: how long the leader stays stopped / cut off. Absent: twice the
    /// recipe's expiry.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "humantime_serde::option"
    )]
    pub pause: Option<Duration>,
    /// `redis-lease-election`: how often followers poll the leader key.
    #[serde(with = "humantime_serde")]
    pub poll: Duration,
}

impl Default for FailoverKnobs {
    fn default() -> Self {
        FailoverKnobs {
            removals: vec![Removal::Resign, Removal::Kill],
            rounds: 2,
            interval: Duration::from_millis(500),
            round_timeout: Duration::from_secs(20),
            pause: None,
            poll: Duration::from_millis(20),
        }
    }
}

impl Scenario {
    /// The checks of the `failover` workload's fields (`Scenario::validate` calls it).
    pub(crate) fn validate_failover(&self) -> Result<(), ScenarioError> {
        let f = &self.failover;
        if self.elections.is_empty() {
            return Err(bad(
                "elections",
                "the failover workload needs at least one election recipe, e.g. [\"zk-election\"]",
            ));
        }
        if !self.backends.is_empty() {
            return Err(bad(
                "backends",
                "the failover workload runs `elections`, not lock backends; leave `backends` out",
            ));
        }
        if !self.faults.is_empty() {
            return Err(bad(
                "faults",
                "the failover workload removes leaders itself (`failover.removals`); leave `faults` out",
            ));
        }
        if self.workload.clients < 2 {
            return Err(bad(
                "workload.clients",
                "the failover workload needs at least 2 candidates",
            ));
        }
        if f.removals.is_empty() {
            return Err(bad(
                "failover.removals",
                "list at least one of \"resign\", \"kill\", \"pause\", \"server-kill\", \"partition\"",
            ));
        }
        if f.rounds == 0 {
            return Err(bad("failover.rounds", "must be at least 1"));
        }
        if f.round_timeout.is_zero() {
            return Err(bad("failover.round_timeout", "must be above zero"));
        }
        if f.poll.is_zero() {
            return Err(bad("failover.poll", "must be above zero"));
        }
        if f.pause.is_some_and(|p| p.is_zero()) {
            return Err(bad("failover.pause", "must be above zero when set"));
        }
        if f.removals.contains(&Removal::Pause) && f.pause.is_some_and(|p| p >= f.round_timeout) {
            return Err(bad(
                "failover.pause",
                "must be shorter than failover.round_timeout",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialized_removals_are_the_names_users_type() {
        for r in [
            Removal::Resign,
            Removal::Kill,
            Removal::Pause,
            Removal::ServerKill,
        ] {
            assert_eq!(
                serde_json::to_string(&r).unwrap(),
                format!("\"{}\"", r.name())
            );
        }
    }
}

#[cfg(test)]
mod scenario_tests {
    use super::*;
    use crate::scenario::WorkloadKind;

    const FAILOVER: &str = r#"
name = "f"
elections = ["zk-election", "redis-lease-election"]
[workload]
kind = "failover"
clients = 3
keys = 1
[failover]
removals = ["kill", "resign"]
rounds = 1
"#;

    #[test]
    fn a_failover_scenario_runs_elections_not_backends() {
        let s = Scenario::load("f", FAILOVER, &[]).unwrap();
        assert_eq!(s.workload.kind, WorkloadKind::Failover);
        assert_eq!(s.elections[1], ElectionKind::of("redis-lease-election"));
        assert_eq!(s.failover.removals, vec![Removal::Kill, Removal::Resign]);
        assert_eq!(Scenario::load("again", &s.to_toml(), &[]).unwrap(), s);
        let err = Scenario::load("f", FAILOVER, &["backends=zk-fair".into()]).unwrap_err();
        assert!(err.contains("`backends`"), "{err}");
        let err = Scenario::load("f", FAILOVER, &["workload.clients=1".into()]).unwrap_err();
        assert!(err.contains("workload.clients"), "{err}");
        let err = Scenario::load("f", &FAILOVER.replace("\"kill\"", "\"nuke\""), &[]).unwrap_err();
        assert!(err.contains("nuke"), "{err}");
    }
}
