//! **redis-lease-election**: a leader lease on one Redis server: `SET NX PX` of one key,
//! renewed by the leader, polled by followers.
//!
//! Campaign: one script, atomic on the server: if the leader key is absent, `INCR` the
//! election's epoch counter and `SET key "{candidate}:{epoch}" PX ttl`; else return 0 and the
//! candidate polls again after `failover.poll`. The epoch counter is the fencing token, and it
//! is only as durable as the server's data: a restarted Redis without persistence starts it
//! again from 1, which results show as an epoch going backwards.
//!
//! Hold: the leader renews (compare-and-`PEXPIRE`, the lock recipe's `RENEW` script) every
//! `ttl / 3`. It believes it leads until a renewal is refused (the key is gone or someone
//! else's), or until `ttl` has passed since the last renewal it *sent* that succeeded: that
//! local deadline is all a lease holder can know. A dead leader is replaced when its key
//! expires (the TTL after its last renewal), plus up to one poll interval. A *paused* leader
//! learns nothing until it runs again: it still believes it leads, for up to a renewal
//! period, after its key expired and someone else was elected.
//!
//! Observe: followers `GET` the key every poll interval and report its value when it changes.
//!
//! Connections go through `redis::aio::ConnectionManager`, which reconnects after the server
//! restarts (the `server-kill` removal).

use crate::RedisKnobs;
use crate::scripts::{RELEASE, RENEW};
use lockbench_core::traits::BackendError;
use lockbench_core::{
    Candidate, ClientId, ElectionInfo, Elector, Endpoints, ErrorKind, FencingToken, Leader, Outcome,
};
use redis::Script;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

/// Campaign: put-if-absent with a fresh epoch. `KEYS = [leader, epoch]`,
/// `ARGV = [candidate, ttl_ms]`. Returns the epoch, or 0 when someone leads.
pub const CAMPAIGN: &str = "\
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
local e = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1] .. ':' .. e, 'PX', ARGV[2])
return e";

struct ElectionScripts {
    campaign: Script,
    renew: Script,
    release: Script,
}

static SCRIPTS: LazyLock<ElectionScripts> = LazyLock::new(|| ElectionScripts {
    campaign: Script::new(CAMPAIGN),
    renew: Script::new(RENEW),
    release: Script::new(RELEASE),
});

/// The redis-lease-election recipe bound to a server.
#[derive(Clone, Debug)]
pub struct RedisLeaseElection {
    client: redis::Client,
    address: String,
    ttl: Duration,
    poll: Duration,
    response_timeout: Duration,
    leader_key: String,
    epoch_key: String,
}

impl RedisLeaseElection {
    /// The recipe on the first of `endpoints.redis`, with keys
    /// `{knobs.prefix}election:{name}:{leader,epoch}`, the lease `knobs.ttl` and followers
    /// polling every `poll`.
    pub fn new(
        endpoints: &Endpoints,
        knobs: &RedisKnobs,
        poll: Duration,
        name: &str,
    ) -> Result<RedisLeaseElection, BackendError> {
        let server = crate::connect::servers(endpoints, crate::REDIS)?.remove(0);
        // The server's own client: the cluster file's TLS and credentials for `redis` too.
        let client = server.client();
        if knobs.ttl < Duration::from_millis(30) {
            return Err(BackendError::Config(
                "redis.ttl: the election lease must be at least 30ms (renewed every ttl / 3)"
                    .into(),
            ));
        }
        Ok(RedisLeaseElection {
            client,
            address: server.address,
            ttl: knobs.ttl,
            poll,
            response_timeout: knobs.response_timeout,
            leader_key: format!("{}election:{name}:leader", knobs.prefix),
            epoch_key: format!("{}election:{name}:epoch", knobs.prefix),
        })
    }
}

impl Elector for RedisLeaseElection {
    type Candidate = RedisCandidate;

    fn info(&self) -> ElectionInfo {
        ElectionInfo {
            election: crate::elections::REDIS_LEASE_ELECTION,
            elects_by: format!(
                "SET NX PX + INCR epoch in one script, renewed every ttl/3; followers poll GET every {:?}",
                self.poll
            ),
            epoch: "INCR counter on the server (restarts from 1 if the server loses its data)"
                .into(),
            expires_by: format!("key TTL ({:?})", self.ttl),
        }
    }

    async fn connect(&self, candidate: ClientId) -> Result<RedisCandidate, BackendError> {
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(crate::CONNECT_TIMEOUT))
            .set_response_timeout(Some(self.response_timeout))
            .set_max_delay(Duration::from_millis(200))
            .set_number_of_retries(3);
        let conn = match tokio::time::timeout(
            crate::CONNECT_TIMEOUT * 2,
            self.client.get_connection_manager_with_config(config),
        )
        .await
        {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => {
                return Err(BackendError::Unreachable {
                    endpoint: self.address.clone(),
                    reason: e.to_string(),
                });
            }
            Err(_) => {
                return Err(BackendError::Unreachable {
                    endpoint: self.address.clone(),
                    reason: "no connection in time".into(),
                });
            }
        };
        Ok(RedisCandidate {
            conn,
            config: self.clone(),
            id: candidate,
            term: Mutex::new(None),
        })
    }

    async fn cleanup(&self) {
        // The leader key expires on its own; the epoch counter has no TTL.
        if let Ok(Ok(mut conn)) = tokio::time::timeout(
            crate::CONNECT_TIMEOUT,
            self.client.get_multiplexed_async_connection(),
        )
        .await
        {
            let _: redis::RedisResult<u64> = redis::cmd("DEL")
                .arg(&self.epoch_key)
                .arg(&self.leader_key)
                .query_async(&mut conn)
                .await;
        }
    }
}

/// One redis-lease-election candidate.
pub struct RedisCandidate {
    conn: ConnectionManager,
    config: RedisLeaseElection,
    id: ClientId,
    /// While leading: the key's value and when the last successful renewal was sent.
    term: Mutex<Option<(String, Instant)>>,
}

/// `(candidate, epoch)` from a leader key's value `"{candidate}:{epoch}"`.
fn parse_value(value: &str) -> Option<Leader> {
    let (c, e) = value.split_once(':')?;
    Some(Leader {
        candidate: ClientId(c.parse().ok()?),
        epoch: FencingToken(e.parse().ok()?),
    })
}

fn error_kind(e: &redis::RedisError) -> ErrorKind {
    crate::errors::kind(e)
}

impl RedisCandidate {
    fn ttl_ms(&self) -> u64 {
        self.config.ttl.as_millis() as u64
    }
}

impl Candidate for RedisCandidate {
    async fn campaign(&self) -> Outcome<Leader> {
        loop {
            let sent = Instant::now();
            let mut conn = self.conn.clone();
            let r: redis::RedisResult<u64> = SCRIPTS
                .campaign
                .key(&self.config.leader_key)
                .key(&self.config.epoch_key)
                .arg(self.id.0)
                .arg(self.ttl_ms())
                .invoke_async(&mut conn)
                .await;
            match r {
                Ok(0) => {}
                Ok(epoch) => {
                    let value = format!("{}:{epoch}", self.id.0);
                    *self.term.lock().expect("term lock") = Some((value, sent));
                    return Outcome::Ok(Leader {
                        candidate: self.id,
                        epoch: FencingToken(epoch),
                    });
                }
                // The server is away (restarting): keep campaigning.
                Err(_) => {}
            }
            tokio::time::sleep(self.config.poll).await;
        }
    }

    async fn hold(&self, _leadership: &Leader) -> ErrorKind {
        let Some((value, mut renewed)) = self.term.lock().expect("term lock").clone() else {
            return ErrorKind::LockLost;
        };
        let ttl = self.config.ttl;
        loop {
            let deadline = renewed + ttl;
            let next = (Instant::now() + ttl / 3).min(deadline);
            tokio::time::sleep_until(next.into()).await;
            if Instant::now() >= deadline {
                return ErrorKind::Timeout;
            }
            let sent = Instant::now();
            let mut conn = self.conn.clone();
            let r: redis::RedisResult<u64> = SCRIPTS
                .renew
                .key(&self.config.leader_key)
                .arg(&value)
                .arg(self.ttl_ms())
                .invoke_async(&mut conn)
                .await;
            match r {
                Ok(1) => renewed = sent,
                Ok(_) => return ErrorKind::LockLost,
                // No answer: the term is still ours until the deadline, as far as we know.
                Err(_) => {}
            }
        }
    }

    async fn resign(&self, _leadership: &Leader) -> Outcome<()> {
        let Some((value, _)) = self.term.lock().expect("term lock").take() else {
            return Outcome::Fail(ErrorKind::LockLost);
        };
        let mut conn = self.conn.clone();
        let r: redis::RedisResult<u64> = SCRIPTS
            .release
            .key(&self.config.leader_key)
            .arg(&value)
            .invoke_async(&mut conn)
            .await;
        match r {
            Ok(1) => Outcome::Ok(()),
            Ok(_) => Outcome::Fail(ErrorKind::LockLost),
            Err(e) => Outcome::Info(error_kind(&e)),
        }
    }

    async fn observe(&self, known: Option<Leader>) -> Outcome<Option<Leader>> {
        loop {
            let mut conn = self.conn.clone();
            let r: redis::RedisResult<Option<String>> = redis::cmd("GET")
                .arg(&self.config.leader_key)
                .query_async(&mut conn)
                .await;
            match r {
                Ok(v) => {
                    let leader = v.as_deref().and_then(parse_value);
                    if leader != known {
                        return Outcome::Ok(leader);
                    }
                }
                Err(e) => return Outcome::Info(error_kind(&e)),
            }
            tokio::time::sleep(self.config.poll).await;
        }
    }

    async fn close(self) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_name_candidate_and_epoch() {
        assert_eq!(
            parse_value("7:42"),
            Some(Leader {
                candidate: ClientId(7),
                epoch: FencingToken(42)
            })
        );
        assert_eq!(parse_value("7"), None);
    }
}
