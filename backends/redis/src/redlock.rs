//! `redlock`: the algorithm published at redis.io (distlock), over N independent Redis servers
//! (normally five), quorum `N/2 + 1`.
//!
//! One **acquire attempt** sends `SET lock value NX PX ttl` to every server at once, each
//! answer bounded by `node_timeout`, and times the whole attempt. The lock is granted when at
//! least a quorum said `OK` *and* time is left: `validity = ttl - elapsed - drift` with
//! `drift = ttl * drift_factor + 2 ms` must be positive. Otherwise the client deletes its value
//! from **all** servers (compare-and-delete, fired at every server and errors ignored: a server
//! whose answer was lost may still have set the key) and tries again after
//! `retry_delay + U[0, retry_jitter)`; the jitter is what breaks split votes between waiters.
//!
//! When fewer than a quorum of servers can even be reached (no connection could be made), no
//! attempt can succeed. After [`UNREACHABLE_ATTEMPTS`] such attempts in a row, acquire returns
//! `fail no-quorum`. That is definite: fewer than a quorum could have stored the value. With
//! enough servers reachable but contended, acquire keeps trying until the caller's budget
//! cancels it.
//!
//! **release** deletes the value from all servers (compare-and-delete). It is `ok` when at
//! least a quorum still had our value, i.e. we held the lock up to the release; `fail
//! lock-lost` when even counting servers whose answer is unknown fewer than a quorum could have
//! had it (the lock had expired or been taken over); `info timeout` in between. **renew**
//! (compare-and-`PEXPIRE` on all) is judged the same way.
//!
//! Redlock has **no fencing token**: grants carry `token: None` and results say so. (A
//! counter on each server would not help: the servers are independent, so no single number
//! orders grants.)
//!
//! `Backend::connect` opens one connection per server and succeeds if at least one server
//! answered, so a client can still run (and report `no-quorum`) while a minority or majority
//! of servers is down; servers it could not reach are retried at each attempt.

use crate::RedlockKnobs;
use crate::commandstats::{self, REDLOCK_COMMANDS};
use crate::connect::{self, Server};
use crate::errors;
use crate::retry::{self, Backoff};
use crate::scripts::{self, SCRIPTS};
use crate::value::{KeyTable, LockValue, Nonce};
use lockbench_core::traits::BackendError;
use lockbench_core::{
    Backend, BackendInfo, ClientId, Endpoints, ErrorKind, Grant, KeyId, LockClient, Outcome,
    ServerCounters,
};
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Cmd, Script, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Attempts in a row that reach fewer than a quorum of servers before acquire gives up with
/// `fail no-quorum`.
pub const UNREACHABLE_ATTEMPTS: u32 = 3;

/// The constant part of Redlock's clock-drift allowance.
pub const DRIFT_CONSTANT: Duration = Duration::from_millis(2);

/// The `redlock` recipe bound to its servers.
#[derive(Debug)]
pub struct RedlockBackend {
    servers: Vec<Server>,
    knobs: RedlockKnobs,
    keys: Arc<KeyTable>,
    seed: u64,
    quorum: usize,
    /// How many servers must extend a renewal for it to count: the quorum, or one in the
    /// deliberately broken variant.
    renew_quorum: usize,
    config: AsyncConnectionConfig,
}

impl RedlockBackend {
    /// Redlock over `endpoints.redlock`, for lock keys `0..keys`, drawing retry jitter from
    /// `seed`.
    pub fn new(
        endpoints: &Endpoints,
        knobs: &RedlockKnobs,
        keys: u32,
        seed: u64,
    ) -> Result<RedlockBackend, BackendError> {
        let servers = connect::servers(endpoints, crate::REDLOCK)?;
        Ok(RedlockBackend {
            quorum: servers.len() / 2 + 1,
            renew_quorum: servers.len() / 2 + 1,
            servers,
            knobs: knobs.clone(),
            keys: Arc::new(KeyTable::new(&knobs.prefix, keys)),
            seed,
            config: connect::config(knobs.node_timeout),
        })
    }

    /// How many servers must agree: `N/2 + 1`.
    pub fn quorum(&self) -> usize {
        self.quorum
    }

    /// Deliberately broken: a renewal counts as kept when any one server extended it. A holder
    /// that reaches only a minority then goes on believing it holds a lock the majority let
    /// expire and gave to another client. Proves the mutex checker alive under a cut.
    pub fn renewing_on_any_server(mut self) -> RedlockBackend {
        self.renew_quorum = 1;
        self
    }
}

impl Backend for RedlockBackend {
    type Client = RedlockClient;

    fn info(&self) -> BackendInfo {
        let k = &self.knobs;
        let servers: Vec<&str> = self.servers.iter().map(|s| s.address.as_str()).collect();
        BackendInfo {
            backend: if self.renew_quorum < self.quorum {
                crate::recipes::REDLOCK_BROKEN_RENEW
            } else {
                crate::recipes::REDLOCK_KIND
            },
            waits_by: retry::waits_by(k.retry_delay, k.retry_jitter),
            fencing: "none: Redlock has no fencing token".to_string(),
            knobs: vec![
                ("ttl".into(), format!("{:?}", k.ttl)),
                ("node_timeout".into(), format!("{:?}", k.node_timeout)),
                ("retry_delay".into(), format!("{:?}", k.retry_delay)),
                ("retry_jitter".into(), format!("{:?}", k.retry_jitter)),
                ("drift_factor".into(), k.drift_factor.to_string()),
                ("drift_constant".into(), format!("{DRIFT_CONSTANT:?}")),
                (
                    "quorum".into(),
                    format!("{} of {}", self.quorum, self.servers.len()),
                ),
                (
                    "renew_quorum".into(),
                    format!("{} of {}", self.renew_quorum, self.servers.len()),
                ),
                (
                    "connect_timeout".into(),
                    format!("{:?}", connect::CONNECT_TIMEOUT),
                ),
                ("prefix".into(), k.prefix.clone()),
                ("servers".into(), servers.join(",")),
            ],
        }
    }

    /// Fewer than a quorum of servers answering means no acquire can succeed: the run fails
    /// before it starts, naming the silent servers. (A silent minority is what Redlock
    /// tolerates; [`Backend::connect`] still succeeds with one server, for chaos runs.)
    async fn check_servers(&self) -> Result<(), BackendError> {
        let answers = futures::future::join_all(self.servers.iter().map(|s| s.ping())).await;
        let silent: Vec<String> = answers
            .into_iter()
            .filter_map(Result::err)
            .map(|e| e.to_string())
            .collect();
        let answered = self.servers.len() - silent.len();
        if answered >= self.quorum {
            return Ok(());
        }
        let addresses: Vec<&str> = self.servers.iter().map(|s| s.address.as_str()).collect();
        Err(BackendError::Unreachable {
            endpoint: addresses.join(","),
            reason: format!(
                "{answered} of {} Redlock servers answered, fewer than the quorum of {}: {}",
                self.servers.len(),
                self.quorum,
                silent.join("; ")
            ),
        })
    }

    async fn connect(&self, client: ClientId) -> Result<RedlockClient, BackendError> {
        let opened = futures::future::join_all(
            self.servers
                .iter()
                .map(|s| s.connect_or_unreachable(&self.config)),
        )
        .await;
        if opened.iter().all(Result::is_err) {
            let reasons: Vec<String> = opened
                .into_iter()
                .filter_map(|r| r.err().map(|e| e.to_string()))
                .collect();
            let addresses: Vec<&str> = self.servers.iter().map(|s| s.address.as_str()).collect();
            return Err(BackendError::Unreachable {
                endpoint: addresses.join(","),
                reason: format!("no Redlock server answered: {}", reasons.join("; ")),
            });
        }
        let nodes = self
            .servers
            .iter()
            .zip(opened)
            .map(|(server, conn)| Node {
                server: server.clone(),
                conn: conn.ok(),
                cmd: Cmd::with_capacity(8, 256),
                sent: 0,
            })
            .collect();
        let k = &self.knobs;
        let drift = k.ttl.mul_f64(k.drift_factor.max(0.0)) + DRIFT_CONSTANT;
        Ok(RedlockClient {
            nodes,
            config: self.config.clone(),
            node_timeout: k.node_timeout,
            keys: self.keys.clone(),
            quorum: self.quorum,
            renew_quorum: self.renew_quorum,
            nonce: Nonce::of(client),
            grants: 0,
            backoff: Backoff::new(self.seed, client, k.retry_delay, k.retry_jitter),
            ttl: k.ttl,
            ttl_ms: u64::try_from(k.ttl.as_millis()).unwrap_or(u64::MAX).max(1),
            drift,
            pending: None,
        })
    }

    async fn observe_server(
        &self,
        clock: lockbench_core::RunClock,
        keys: u32,
        sink: lockbench_core::ServerSink,
    ) -> Result<(), String> {
        let servers = self.servers.clone();
        let quorum = self.quorum;
        crate::observe::observe(servers, self.keys.clone(), keys, quorum, clock, sink).await
    }

    async fn server_counters(&self) -> Result<ServerCounters, String> {
        commandstats::counters(&self.servers, REDLOCK_COMMANDS, |i, address| {
            format!("redlock{} ({address})", i + 1)
        })
        .await
    }
}

/// What a Redlock grant keeps.
#[derive(Debug)]
pub struct RedlockHandle {
    /// This grant's unique value, written to every server.
    pub value: LockValue,
    /// Until when the grant is valid by Redlock's rule (`ttl - elapsed - drift` after the
    /// attempt started).
    pub valid_until: Instant,
}

/// One Redlock client: one connection per server.
#[derive(Debug)]
pub struct RedlockClient {
    nodes: Vec<Node>,
    config: AsyncConnectionConfig,
    node_timeout: Duration,
    keys: Arc<KeyTable>,
    quorum: usize,
    renew_quorum: usize,
    nonce: Nonce,
    grants: u64,
    backoff: Backoff,
    ttl: Duration,
    ttl_ms: u64,
    drift: Duration,
    /// The value of an acquire that has not ended definitely (see `SetNxClient`): `close`
    /// takes it back from every server.
    pending: Option<(KeyId, LockValue)>,
}

/// What one server said to one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reply {
    /// `OK` to `SET NX`, or 1 from a compare-and-X script.
    Yes,
    /// A definite no: nil to `SET NX`, 0 from a script, or an error that means it did not run.
    No,
    /// No connection could be made, so nothing was sent.
    NotSent,
    /// Sent, but no answer (timeout, connection lost, script error): it may have taken effect.
    Unknown,
}

/// The replies of all servers to one round of requests.
#[derive(Debug, Default)]
struct Tally {
    yes: usize,
    no: usize,
    unknown: usize,
    not_sent: usize,
}

impl Tally {
    fn of(replies: &[Reply]) -> Tally {
        let mut t = Tally::default();
        for reply in replies {
            match reply {
                Reply::Yes => t.yes += 1,
                Reply::No => t.no += 1,
                Reply::Unknown => t.unknown += 1,
                Reply::NotSent => t.not_sent += 1,
            }
        }
        t
    }

    /// Judges a release or renew: ok with a quorum of yes; lock lost when fewer than a quorum
    /// could have had our value (servers we could not reach might still have it); else unknown.
    fn judge(&self, quorum: usize) -> Outcome<()> {
        if self.yes >= quorum {
            Outcome::Ok(())
        } else if self.yes + self.unknown + self.not_sent < quorum {
            Outcome::Fail(ErrorKind::LockLost)
        } else {
            Outcome::Info(ErrorKind::Timeout)
        }
    }
}

/// One server as seen by one client.
#[derive(Debug)]
struct Node {
    server: Server,
    conn: Option<MultiplexedConnection>,
    /// The next request to this server; reused so building one allocates nothing.
    cmd: Cmd,
    /// Requests written to this server, counted before each is sent so that an attempt the
    /// caller cancels halfway is still counted.
    sent: u64,
}

impl Node {
    /// Sends `self.cmd` (as an `EVALSHA` of `script`, or a plain command when `None`),
    /// reconnecting first if needed.
    async fn request(
        &mut self,
        script: Option<&Script>,
        config: &AsyncConnectionConfig,
        timeout: Duration,
    ) -> Reply {
        if self.conn.is_none() {
            match tokio::time::timeout(timeout, self.server.connect(config)).await {
                Ok(Ok(conn)) => self.conn = Some(conn),
                _ => return Reply::NotSent,
            }
        }
        let conn = self.conn.as_mut().expect("connected above");
        let result: redis::RedisResult<Value> = match script {
            Some(script) => scripts::run(conn, &self.cmd, script, &mut self.sent).await,
            None => {
                self.sent += 1;
                self.cmd.query_async(conn).await
            }
        };
        match result {
            Ok(Value::Okay | Value::Int(1)) => Reply::Yes,
            Ok(Value::SimpleString(s)) if s == "OK" => Reply::Yes,
            Ok(_) => Reply::No,
            Err(e) => {
                if errors::breaks_connection(&e) {
                    self.conn = None;
                }
                if errors::not_executed(&e) {
                    Reply::No
                } else {
                    Reply::Unknown
                }
            }
        }
    }
}

impl RedlockClient {
    /// Sends the request each node's `cmd` holds to every server at once and tallies replies.
    async fn round(&mut self, script: Option<&'static Script>) -> Tally {
        let (config, timeout) = (&self.config, self.node_timeout);
        let replies = futures::future::join_all(
            self.nodes
                .iter_mut()
                .map(|n| n.request(script, config, timeout)),
        )
        .await;
        Tally::of(&replies)
    }

    /// Runs compare-and-delete (`ttl_ms` = `None`) or compare-and-pexpire of `value` on `key`
    /// on every server.
    async fn compare_and_all(
        &mut self,
        script: &'static Script,
        key: KeyId,
        value: &LockValue,
        ttl_ms: Option<u64>,
    ) -> Tally {
        let name = self.keys.lock(key);
        for node in &mut self.nodes {
            let cmd = scripts::evalsha(&mut node.cmd, script, 1)
                .arg(name.as_ref())
                .arg(value.as_bytes());
            if let Some(ttl_ms) = ttl_ms {
                cmd.arg(ttl_ms);
            }
        }
        drop(name);
        self.round(Some(script)).await
    }
}

impl LockClient for RedlockClient {
    type Handle = RedlockHandle;

    async fn acquire(&mut self, key: KeyId) -> Outcome<Grant<RedlockHandle>> {
        self.grants += 1;
        let value = LockValue::new(&self.nonce, self.grants);
        self.pending = Some((key, value));
        let mut unreachable = 0;
        loop {
            let started = Instant::now();
            {
                let name = self.keys.lock(key);
                for node in &mut self.nodes {
                    node.cmd.clear();
                    node.cmd
                        .arg("SET")
                        .arg(name.as_ref())
                        .arg(value.as_bytes())
                        .arg("NX")
                        .arg("PX")
                        .arg(self.ttl_ms);
                }
            }
            let tally = self.round(None).await;
            let elapsed = started.elapsed();
            let spent = elapsed + self.drift;
            if tally.yes >= self.quorum && spent < self.ttl {
                self.pending = None;
                return Outcome::Ok(Grant {
                    key,
                    token: None,
                    handle: RedlockHandle {
                        value,
                        valid_until: started + (self.ttl - self.drift),
                    },
                });
            }
            // Failed attempt: take our value back from every server, whatever it answered.
            self.compare_and_all(&SCRIPTS.release, key, &value, None)
                .await;
            if tally.not_sent > self.nodes.len() - self.quorum {
                unreachable += 1;
                if unreachable >= UNREACHABLE_ATTEMPTS {
                    self.pending = None;
                    return Outcome::Fail(ErrorKind::NoQuorum);
                }
            } else {
                unreachable = 0;
            }
            tokio::time::sleep(self.backoff.next_delay()).await;
        }
    }

    async fn release(&mut self, grant: Grant<RedlockHandle>) -> Outcome<()> {
        let tally = self
            .compare_and_all(&SCRIPTS.release, grant.key, &grant.handle.value, None)
            .await;
        tally.judge(self.quorum)
    }

    async fn renew(&mut self, grant: &Grant<RedlockHandle>) -> Outcome<()> {
        let ttl_ms = Some(self.ttl_ms);
        let tally = self
            .compare_and_all(&SCRIPTS.renew, grant.key, &grant.handle.value, ttl_ms)
            .await;
        tally.judge(self.renew_quorum)
    }

    fn requests_sent(&self) -> Option<u64> {
        Some(self.nodes.iter().map(|n| n.sent).sum())
    }

    async fn close(mut self) {
        // An attempt cut short may have set the key on some servers: take it back from all
        // (compare-and-delete). Best effort, bounded; the TTL is the backstop.
        if let Some((key, value)) = self.pending.take() {
            let budget = std::time::Duration::from_secs(1);
            let _ = tokio::time::timeout(
                budget,
                self.compare_and_all(&SCRIPTS.release, key, &value, None),
            )
            .await;
        }
    }

    async fn abandon(self) {
        drop(self);
    }
}
