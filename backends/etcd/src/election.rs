//! **etcd-election**: etcd's server-side election API (`v3electionpb`: `Campaign`, `Observe`,
//! `Resign`), on one lease per candidate.
//!
//! `Campaign` blocks inside the server until the candidate's key
//! (`{prefix}/election/{name}/{lease-id}`, attached to its lease) has the lowest create
//! revision under the election's prefix (Go's `concurrency.Election`, run in the server); the
//! leader key's create revision is the term's epoch. `Observe` streams the current leader and
//! every change; `Resign` deletes the leader key. A dead leader is replaced when its lease
//! expires (the lease TTL after its last keep-alive). The leader gives leadership up when a
//! keep-alive answer says its lease is gone, or by its own clock when the TTL has passed since
//! the last answer that kept the lease alive (as Go's client closes its keep-alive channel):
//! until then it believes it leads. A paused leader checks only when it runs again.
//!
//! The shared pieces of both etcd recipes (the lease per candidate, noticing its loss) are
//! `EtcdCandidateBase`.

use crate::EtcdKnobs;
use crate::errors::{CallError, classify, timed};
use crate::session::Session;
use etcd_client::{LeaderKey, ResignOptions};
use lockbench_core::traits::BackendError;
use lockbench_core::{
    Candidate, ClientId, ElectionInfo, ElectionKind, Elector, Endpoints, ErrorKind, FencingToken,
    Leader, Outcome,
};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often a leader checks whether its lease has been reported dead.
const LEASE_CHECK: Duration = Duration::from_millis(20);

/// What both etcd election recipes share: members, lease TTL, the election's key prefix.
#[derive(Clone, Debug)]
pub(crate) struct EtcdElectionConfig {
    pub(crate) access: crate::access::Access,
    pub(crate) ttl_secs: i64,
    /// `{prefix}/election/{name}` (no trailing slash).
    pub(crate) base: String,
}

impl EtcdElectionConfig {
    pub(crate) fn new(
        kind: ElectionKind,
        endpoints: &Endpoints,
        knobs: &EtcdKnobs,
        name: &str,
    ) -> Result<EtcdElectionConfig, BackendError> {
        if endpoints.get(crate::GROUP).is_empty() {
            return Err(BackendError::Config(format!(
                "{kind} needs etcd members, but the cluster's `etcd` endpoint list is empty"
            )));
        }
        if name.is_empty() || name.contains('/') {
            return Err(BackendError::Config(format!(
                "{kind}: election name {name:?} must be one path segment"
            )));
        }
        let ttl = knobs.lease_ttl;
        let ttl_secs = (ttl.as_secs() + u64::from(ttl.subsec_nanos() > 0)).max(1) as i64;
        Ok(EtcdElectionConfig {
            access: crate::access::Access::new(endpoints)?,
            ttl_secs,
            base: format!("{}/election/{name}", knobs.prefix.trim_end_matches('/')),
        })
    }
}

/// One etcd candidate's connection and lease.
pub(crate) struct EtcdCandidateBase {
    pub(crate) session: Session,
    pub(crate) id: ClientId,
}

impl EtcdCandidateBase {
    pub(crate) async fn open(
        config: &EtcdElectionConfig,
        id: ClientId,
    ) -> Result<Self, BackendError> {
        Ok(EtcdCandidateBase {
            session: Session::open(&config.access, config.ttl_secs, None).await?,
            id,
        })
    }

    /// Returns once a keep-alive answer has said the lease is gone (`session-expired`), or
    /// the TTL has passed since the last answer that kept it alive (`timeout`): by then the
    /// servers may have expired it, whatever this candidate could not hear.
    pub(crate) async fn lease_lost(&self) -> ErrorKind {
        loop {
            if self.session.lease_dead() {
                return ErrorKind::SessionExpired;
            }
            if Instant::now() >= self.session.lease_deadline() {
                return ErrorKind::Timeout;
            }
            tokio::time::sleep(LEASE_CHECK).await;
        }
    }

    /// The candidate id stored as the leader key's value.
    pub(crate) fn value(&self) -> Vec<u8> {
        self.id.0.to_string().into_bytes()
    }
}

/// The leader a key-value names: its value is the candidate id, its create revision the epoch.
pub(crate) fn leader_of(kv: &etcd_client::KeyValue) -> Option<Leader> {
    let candidate = std::str::from_utf8(kv.value()).ok()?.parse().ok()?;
    Some(Leader {
        candidate: ClientId(candidate),
        epoch: FencingToken(kv.create_revision() as u64),
    })
}

/// An etcd failure as an indeterminate or definite outcome.
pub(crate) fn failed<T>(e: CallError) -> Outcome<T> {
    if e.definite {
        Outcome::Fail(e.kind)
    } else {
        Outcome::Info(e.kind)
    }
}

/// The etcd-election recipe bound to a cluster.
#[derive(Clone, Debug)]
pub struct EtcdElection {
    config: EtcdElectionConfig,
}

impl EtcdElection {
    /// The recipe on `endpoints.etcd`, electing under `{knobs.prefix}/election/{name}`.
    pub fn new(
        endpoints: &Endpoints,
        knobs: &EtcdKnobs,
        name: &str,
    ) -> Result<EtcdElection, BackendError> {
        let config =
            EtcdElectionConfig::new(crate::elections::ETCD_ELECTION, endpoints, knobs, name)?;
        Ok(EtcdElection { config })
    }
}

impl Elector for EtcdElection {
    type Candidate = EtcdElectionCandidate;

    fn info(&self) -> ElectionInfo {
        ElectionInfo {
            election: crate::elections::ETCD_ELECTION,
            elects_by:
                "server-side Campaign (blocks until the lowest create revision), Observe stream"
                    .into(),
            epoch: "create revision of the leader key".into(),
            expires_by: format!("lease TTL ({} s)", self.config.ttl_secs),
        }
    }

    async fn connect(&self, candidate: ClientId) -> Result<EtcdElectionCandidate, BackendError> {
        Ok(EtcdElectionCandidate {
            base: EtcdCandidateBase::open(&self.config, candidate).await?,
            name: self.config.base.clone(),
            leader_key: Mutex::new(None),
        })
    }
}

/// One etcd-election candidate.
pub struct EtcdElectionCandidate {
    base: EtcdCandidateBase,
    name: String,
    leader_key: Mutex<Option<LeaderKey>>,
}

impl Candidate for EtcdElectionCandidate {
    async fn campaign(&self) -> Outcome<Leader> {
        let mut election = self.base.session.client.election_client();
        let response = election
            .campaign(
                self.name.as_bytes(),
                self.base.value(),
                self.base.session.lease,
            )
            .await;
        match response {
            Ok(r) => match r.leader() {
                Some(key) => {
                    let epoch = FencingToken(key.rev() as u64);
                    *self.leader_key.lock().expect("leader key lock") = Some(key.clone());
                    Outcome::Ok(Leader {
                        candidate: self.base.id,
                        epoch,
                    })
                }
                None => Outcome::Info(ErrorKind::Other),
            },
            Err(e) => failed(classify(&e)),
        }
    }

    async fn hold(&self, _leadership: &Leader) -> ErrorKind {
        self.base.lease_lost().await
    }

    async fn resign(&self, _leadership: &Leader) -> Outcome<()> {
        let Some(key) = self.leader_key.lock().expect("leader key lock").take() else {
            return Outcome::Fail(ErrorKind::LockLost);
        };
        let mut election = self.base.session.client.election_client();
        match timed(election.resign(Some(ResignOptions::new().with_leader(key)))).await {
            Ok(_) => Outcome::Ok(()),
            Err(e) => failed(e),
        }
    }

    async fn observe(&self, known: Option<Leader>) -> Outcome<Option<Leader>> {
        let mut election = self.base.session.client.election_client();
        let mut stream = match election.observe(self.name.as_bytes()).await {
            Ok(s) => s,
            Err(e) => return failed(classify(&e)),
        };
        loop {
            match stream.message().await {
                Ok(Some(r)) => {
                    let leader = r.kv().and_then(leader_of);
                    if leader != known {
                        return Outcome::Ok(leader);
                    }
                }
                Ok(None) => return Outcome::Info(ErrorKind::ConnectionLost),
                Err(e) => return failed(classify(&e)),
            }
        }
    }

    async fn close(self) {
        self.base.session.close().await;
    }
}
