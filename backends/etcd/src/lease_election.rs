//! **etcd-lease-election**: leader election by hand on etcd's key-value API: one key, written
//! only if absent, under the candidate's lease.
//!
//! Campaign: a txn `if create_revision({base}/leader) == 0 then put(key, id, lease) else
//! get(key)`. The winner's put creates the key, so the txn's header revision is the key's
//! create revision: the term's epoch. A loser watches the key (a synced watch, created
//! without a start revision, then the key is read again so a deletion between the txn and
//! the watch is not missed) until it is deleted, and tries again: every follower wakes on a
//! leader's exit and all race for the key (a herd, but an election has few candidates). A
//! dead leader's key goes with its lease (the lease TTL after its last keep-alive); resign
//! deletes the key if it still holds this term (`create_revision == epoch`).
//!
//! Observers watch the same key and report its value (the leader's candidate id) on every
//! put and delete.

use crate::EtcdKnobs;
use crate::election::{EtcdCandidateBase, EtcdElectionConfig, failed, leader_of};
use crate::errors::{CallError, timed};
use etcd_client::{Compare, CompareOp, EventType, Txn, TxnOp, TxnOpResponse};
use lockbench_core::traits::BackendError;
use lockbench_core::{
    Candidate, ClientId, ElectionInfo, Elector, Endpoints, ErrorKind, FencingToken, Leader, Outcome,
};

/// The etcd-lease-election recipe bound to a cluster.
#[derive(Clone, Debug)]
pub struct EtcdLeaseElection {
    config: EtcdElectionConfig,
}

impl EtcdLeaseElection {
    /// The recipe on `endpoints.etcd`, with its key at `{knobs.prefix}/election/{name}/leader`.
    pub fn new(
        endpoints: &Endpoints,
        knobs: &EtcdKnobs,
        name: &str,
    ) -> Result<EtcdLeaseElection, BackendError> {
        let config = EtcdElectionConfig::new(
            crate::elections::ETCD_LEASE_ELECTION,
            endpoints,
            knobs,
            name,
        )?;
        Ok(EtcdLeaseElection { config })
    }
}

impl Elector for EtcdLeaseElection {
    type Candidate = EtcdLeaseCandidate;

    fn info(&self) -> ElectionInfo {
        ElectionInfo {
            election: crate::elections::ETCD_LEASE_ELECTION,
            elects_by:
                "txn put-if-absent (create_revision == 0) under a lease; followers watch the key"
                    .into(),
            epoch: "create revision of the leader key".into(),
            expires_by: format!("lease TTL ({} s)", self.config.ttl_secs),
        }
    }

    async fn connect(&self, candidate: ClientId) -> Result<EtcdLeaseCandidate, BackendError> {
        Ok(EtcdLeaseCandidate {
            base: EtcdCandidateBase::open(&self.config, candidate).await?,
            key: format!("{}/leader", self.config.base).into_bytes(),
        })
    }
}

/// One etcd-lease-election candidate.
pub struct EtcdLeaseCandidate {
    base: EtcdCandidateBase,
    key: Vec<u8>,
}

impl EtcdLeaseCandidate {
    /// The current leader (a plain read).
    async fn read(&self) -> Result<Option<Leader>, CallError> {
        let mut client = self.base.session.client.clone();
        let r = timed(client.get(self.key.clone(), None)).await?;
        Ok(r.kvs().first().and_then(leader_of))
    }

    /// Waits until the leader differs from `known` (a synced watch, then a read).
    async fn wait_change(&self, known: Option<Leader>) -> Result<Option<Leader>, CallError> {
        let mut client = self.base.session.client.clone();
        let mut stream = timed(client.watch(self.key.clone(), None)).await?;
        let now = self.read().await?;
        if now != known {
            return Ok(now);
        }
        loop {
            let r = match stream.message().await {
                Ok(Some(r)) => r,
                Ok(None) => return Err(CallError::CONNECTION_LOST),
                Err(e) => return Err(crate::errors::classify(&e)),
            };
            for event in r.events() {
                let leader = match event.event_type() {
                    EventType::Put => event.kv().and_then(leader_of),
                    EventType::Delete => None,
                };
                if leader != known {
                    return Ok(leader);
                }
            }
        }
    }
}

impl Candidate for EtcdLeaseCandidate {
    async fn campaign(&self) -> Outcome<Leader> {
        let mut client = self.base.session.client.clone();
        loop {
            let put = etcd_client::PutOptions::new().with_lease(self.base.session.lease);
            let txn = Txn::new()
                .when([Compare::create_revision(
                    self.key.clone(),
                    CompareOp::Equal,
                    0,
                )])
                .and_then([TxnOp::put(self.key.clone(), self.base.value(), Some(put))])
                .or_else([TxnOp::get(self.key.clone(), None)]);
            let r = match timed(client.txn(txn)).await {
                Ok(r) => r,
                Err(e) => return failed(e),
            };
            if r.succeeded() {
                let epoch = r.header().map(|h| h.revision()).unwrap_or_default();
                return Outcome::Ok(Leader {
                    candidate: self.base.id,
                    epoch: FencingToken(epoch as u64),
                });
            }
            let current = r.op_responses().into_iter().find_map(|op| match op {
                TxnOpResponse::Get(g) => Some(g.kvs().first().and_then(leader_of)),
                _ => None,
            });
            // Somebody leads: wait until the key changes (a deletion, or a new leader that
            // then leaves), then try again.
            if let Err(e) = self.wait_change(current.flatten()).await {
                return failed(e);
            }
        }
    }

    async fn hold(&self, _leadership: &Leader) -> ErrorKind {
        self.base.lease_lost().await
    }

    async fn resign(&self, leadership: &Leader) -> Outcome<()> {
        let mut client = self.base.session.client.clone();
        let txn = Txn::new()
            .when([Compare::create_revision(
                self.key.clone(),
                CompareOp::Equal,
                leadership.epoch.0 as i64,
            )])
            .and_then([TxnOp::delete(self.key.clone(), None)]);
        match timed(client.txn(txn)).await {
            Ok(r) if r.succeeded() => Outcome::Ok(()),
            Ok(_) => Outcome::Fail(ErrorKind::LockLost),
            Err(e) => failed(e),
        }
    }

    async fn observe(&self, known: Option<Leader>) -> Outcome<Option<Leader>> {
        match self.wait_change(known).await {
            Ok(leader) => Outcome::Ok(leader),
            Err(e) => failed(e),
        }
    }

    async fn close(self) {
        self.base.session.close().await;
    }
}
