//! **zk-election**: leader election from the ZooKeeper recipes page.
//!
//! Candidate node: `{root}/election/{name}/c{candidate}-{sequence}`, created
//! `EphemeralSequential` by each campaign. The lowest sequence leads; every other candidate
//! watches *only its predecessor* (a `getData` watch, as zk-fair does, so a vanished
//! predecessor leaves no watch behind), so a leader's exit wakes exactly one candidate: the
//! next in line, which re-reads the children and finds itself first. The epoch is the leader
//! node's sequence number: unique and strictly increasing within the election's directory.
//!
//! A dead leader is replaced when its session expires (the session timeout after its last
//! heartbeat): its node is ephemeral. A leader gives leadership up when its session state says
//! `Expired`, or when it has been disconnected for a whole session timeout (by then the
//! ensemble may have expired the session; Curator's `LOST`). A shorter disconnect (its server
//! died, it moved to another) keeps leadership, as the session does. A paused leader checks
//! only when it runs again: until then it still believes it leads, which is what the failover
//! checker's split-brain figure measures.
//!
//! Observing: each candidate keeps a `getChildren` watch on the directory and reports the
//! lowest node's candidate whenever it changes. That watch fires on every join and leave (N
//! observers wake per change); observation is not what this recipe is optimised for, and the
//! failover workload has a handful of candidates.

use crate::ZookeeperKnobs;
use crate::connect::{self, Ensemble};
use crate::errors::kind;
use crate::fair::{ephemeral_sequential, make_parents};
use crate::paths;
use lockbench_core::traits::BackendError;
use lockbench_core::{
    Candidate, ClientId, ElectionInfo, Elector, Endpoints, ErrorKind, FencingToken, Leader, Outcome,
};
use std::sync::{Arc, Mutex};
use zookeeper_client as zk;

/// The zk-election recipe bound to an ensemble: makes [`ZkCandidate`]s.
#[derive(Debug)]
pub struct ZkElection {
    ensemble: Arc<Ensemble>,
    dir: String,
}

impl ZkElection {
    /// The recipe on `endpoints.zookeeper`, electing under `{knobs.root}/election/{name}`
    /// (one directory per run, so nothing an earlier run left can lead this one).
    pub fn new(
        endpoints: &Endpoints,
        knobs: &ZookeeperKnobs,
        name: &str,
    ) -> Result<ZkElection, BackendError> {
        let ensemble = Ensemble::new(endpoints, knobs)?;
        let root = paths::check_root(&knobs.root).map_err(BackendError::Config)?;
        if name.is_empty() || name.contains('/') {
            return Err(BackendError::Config(format!(
                "zk-election: election name {name:?} must be one path segment"
            )));
        }
        Ok(ZkElection {
            ensemble: Arc::new(ensemble),
            dir: format!("{root}/election/{name}"),
        })
    }
}

impl Elector for ZkElection {
    type Candidate = ZkCandidate;

    fn info(&self) -> ElectionInfo {
        ElectionInfo {
            election: crate::elections::ZK_ELECTION,
            elects_by: "ephemeral-sequential node, lowest leads, getData watch on the predecessor; observers watch the children".into(),
            epoch: "sequence number of the leader's node".into(),
            expires_by: format!("session timeout ({:?})", self.ensemble.session_timeout),
        }
    }

    async fn connect(&self, candidate: ClientId) -> Result<ZkCandidate, BackendError> {
        let zk = self.ensemble.connect().await?;
        let mut requests = 0;
        if let Err(e) = make_parents(&zk, &self.dir, self.ensemble.acls, &mut requests).await {
            connect::close(&self.ensemble, zk).await;
            return Err(BackendError::Unreachable {
                endpoint: self.ensemble.connect_string.clone(),
                reason: format!("zookeeper: cannot create {}: {e}", self.dir),
            });
        }
        Ok(ZkCandidate {
            zk,
            ensemble: self.ensemble.clone(),
            id: candidate,
            prefix: format!("{}/c{}-", self.dir, candidate.0),
            dir: self.dir.clone(),
            own: Mutex::new(None),
        })
    }

    async fn cleanup(&self) {
        // The candidates' nodes are ephemeral; only the run's directory outlives them.
        if let Ok(zk) = self.ensemble.connect().await {
            let _ = zk.delete(&self.dir, None).await;
            connect::close(&self.ensemble, zk).await;
        }
    }
}

/// One zk-election candidate: one session.
#[derive(Debug)]
pub struct ZkCandidate {
    zk: zk::Client,
    ensemble: Arc<Ensemble>,
    id: ClientId,
    dir: String,
    /// `{dir}/c{id}-`: what the create appends the sequence to.
    prefix: String,
    /// The path of this candidate's node while it campaigns or leads.
    own: Mutex<Option<String>>,
}

/// `(candidate, sequence)` of a node named `c{candidate}-{sequence}`.
fn parse_node(name: &str) -> Option<(ClientId, i64)> {
    let sequence = paths::sequence_of(name)?;
    let (head, _) = name.split_once('-')?;
    let candidate = head.strip_prefix('c')?.parse().ok()?;
    Some((ClientId(candidate), sequence))
}

/// The leader among `children`: the lowest sequence.
fn lowest(children: &[String]) -> Option<Leader> {
    children
        .iter()
        .filter_map(|n| parse_node(n))
        .min_by_key(|&(_, s)| s)
        .map(|(candidate, s)| Leader {
            candidate,
            epoch: FencingToken(s as u64),
        })
}

impl ZkCandidate {
    /// Waits until no node with a lower sequence than `sequence` is left.
    async fn wait_first(&self, sequence: i64) -> Result<(), zk::Error> {
        loop {
            let (children, _) = self.zk.get_children(&self.dir).await?;
            let predecessor = children
                .iter()
                .filter_map(|n| parse_node(n).map(|(_, s)| (s, n)))
                .filter(|&(s, _)| s < sequence)
                .max_by_key(|&(s, _)| s);
            let Some((_, name)) = predecessor else {
                return Ok(());
            };
            let path = format!("{}/{name}", self.dir);
            match self.zk.get_and_watch_data(&path).await {
                Err(zk::Error::NoNode) => continue,
                Err(e) => return Err(e),
                Ok((_, _, watcher)) => {
                    let event = watcher.changed().await;
                    if event.event_type == zk::EventType::Session {
                        return Err(zk::Error::SessionExpired);
                    }
                }
            }
        }
    }
}

impl Candidate for ZkCandidate {
    async fn campaign(&self) -> Outcome<Leader> {
        let sequence = match self
            .zk
            .create(&self.prefix, b"", &ephemeral_sequential(self.ensemble.acls))
            .await
        {
            Ok((_, seq)) => seq.into_i64(),
            Err(e) => return Outcome::Info(kind(&e)),
        };
        let mut path = self.prefix.clone();
        crate::fair::write_sequence(&mut path, sequence);
        *self.own.lock().expect("own node lock") = Some(path);
        match self.wait_first(sequence).await {
            Ok(()) => Outcome::Ok(Leader {
                candidate: self.id,
                epoch: FencingToken(sequence as u64),
            }),
            Err(e) => Outcome::Info(kind(&e)),
        }
    }

    async fn hold(&self, _leadership: &Leader) -> ErrorKind {
        let mut state = self.zk.state_watcher();
        let timeout = self.ensemble.session_timeout;
        // When the connection went, if it has not come back.
        let mut disconnected: Option<tokio::time::Instant> = None;
        loop {
            let changed = match disconnected {
                None => state.changed().await,
                Some(since) => tokio::select! {
                    s = state.changed() => s,
                    _ = tokio::time::sleep_until(since + timeout) => return ErrorKind::Timeout,
                },
            };
            match changed {
                s if s.is_terminated() => return ErrorKind::SessionExpired,
                zk::SessionState::Disconnected => {
                    disconnected.get_or_insert_with(tokio::time::Instant::now);
                }
                _ => disconnected = None,
            }
        }
    }

    async fn resign(&self, _leadership: &Leader) -> Outcome<()> {
        let Some(path) = self.own.lock().expect("own node lock").take() else {
            return Outcome::Fail(ErrorKind::LockLost);
        };
        match self.zk.delete(&path, None).await {
            Ok(()) => Outcome::Ok(()),
            Err(zk::Error::NoNode) => Outcome::Fail(ErrorKind::LockLost),
            Err(e) => Outcome::Info(kind(&e)),
        }
    }

    async fn observe(&self, known: Option<Leader>) -> Outcome<Option<Leader>> {
        loop {
            let (children, _, watcher) = match self.zk.get_and_watch_children(&self.dir).await {
                Ok(r) => r,
                Err(e) => return Outcome::Info(kind(&e)),
            };
            let leader = lowest(&children);
            if leader != known {
                return Outcome::Ok(leader);
            }
            let event = watcher.changed().await;
            if event.event_type == zk::EventType::Session {
                return Outcome::Fail(ErrorKind::SessionExpired);
            }
        }
    }

    async fn close(self) {
        connect::close(&self.ensemble, self.zk).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lowest_sequence_leads_and_names_its_candidate() {
        let children = ["c3-0000000012", "c1-0000000010", "c2-0000000011", "junk"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            lowest(&children),
            Some(Leader {
                candidate: ClientId(1),
                epoch: FencingToken(10)
            })
        );
        assert_eq!(lowest(&[]), None);
    }
}
