//! `redis-setnx` (and its deliberately broken twin `redis-broken-nonx`) and `redis-pubsub`: a
//! lock on one Redis server.
//!
//! - **acquire**: one script runs `SET lock value NX PX ttl` and, only if that succeeded,
//!   `INCR fence` and returns the new counter as the fencing token ([`crate::scripts`]). Since
//!   both happen in one script, no grant exists without its token and tokens follow grants in
//!   order. A refused waiter sleeps `retry_delay + U[0, retry_jitter)` and asks again.
//! - **release**: compare-and-delete; `0` means the key expired or someone else holds it now,
//!   reported as `fail lock-lost`.
//! - **renew**: compare-and-`PEXPIRE`, reported the same way.
//!
//! The token is monotonic only while that one server keeps its data: a restart without
//! persistence (lockbench runs Redis with `--save "" --appendonly no`) resets the counter and
//! token numbers start over, and a failover to a replica that missed the last `INCR` hands out
//! a token again. [`SetMode::BrokenNoNx`] runs the very same code with a script that omits
//! `NX`, so it grants a lock that is already held; [`SetMode::BrokenRelease`] releases with a
//! plain `DEL` reported as success, so a holder whose lock expired deletes its successor's;
//! [`SetMode::BrokenRenew`] renews with a plain `PEXPIRE`, so a holder whose lock expired
//! extends its successor's and is told it still holds the lock.
//!
//! `redis-pubsub` ([`SetNxBackend::with_pubsub`]) is the same lock with another way to wait:
//! instead of sleeping between attempts, a refused waiter subscribes to the lock's release
//! channel and tries again when a release is announced (the release script publishes after
//! its compare-and-delete); see [`crate::pubsub`]. Both count their wake-ups for the herd
//! workload ([`Backend::wakeups`]): for polling, every retry is a wake-up (a request in
//! reaction to nothing but the timer), wasted when refused again.

use crate::RedisKnobs;
use crate::commandstats::{self, PUBSUB_COMMANDS, SETNX_COMMANDS};
use crate::connect::{self, Server};
use crate::direct::LockConnection;
use crate::errors::{self, Failure};
use crate::pubsub::{ReleaseWaiter, Woken};
use crate::retry::{self, Backoff};
use crate::scripts::{self, SCRIPTS};
use crate::sentinel::Sentinels;
use crate::value::{KeyTable, LockValue, Nonce};
use lockbench_core::traits::BackendError;
use lockbench_core::{
    Backend, BackendInfo, BackendKind, ClientId, Endpoints, ErrorKind, FencingToken, Grant, KeyId,
    LockClient, Outcome, ServerCounters, ServerFanout, WakeupTally, Wakeups,
};
use redis::{Cmd, Script};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Whether the acquire script uses `NX`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetMode {
    /// `SET ... NX PX`: the real recipe, `redis-setnx`.
    Nx,
    /// `SET ... PX` without `NX`: `redis-broken-nonx`, which does not exclude anyone.
    BrokenNoNx,
    /// `SET ... NX PX`, released by a plain `DEL` reported as success:
    /// `redis-broken-release`, which deletes whoever holds the lock.
    BrokenRelease,
    /// `SET ... NX PX`, renewed by a plain `PEXPIRE` without the compare:
    /// `redis-broken-renew`, which extends whoever holds the lock.
    BrokenRenew,
}

impl SetMode {
    fn kind(self) -> BackendKind {
        match self {
            SetMode::Nx => crate::recipes::REDIS_SETNX,
            SetMode::BrokenNoNx => crate::recipes::REDIS_BROKEN_NONX,
            SetMode::BrokenRelease => crate::recipes::REDIS_BROKEN_RELEASE,
            SetMode::BrokenRenew => crate::recipes::REDIS_BROKEN_RENEW,
        }
    }

    fn script(self) -> &'static Script {
        match self {
            SetMode::Nx | SetMode::BrokenRelease | SetMode::BrokenRenew => &SCRIPTS.acquire_nx,
            SetMode::BrokenNoNx => &SCRIPTS.acquire_no_nx,
        }
    }

    fn release_script(self) -> &'static Script {
        match self {
            SetMode::Nx | SetMode::BrokenNoNx | SetMode::BrokenRenew => &SCRIPTS.release,
            SetMode::BrokenRelease => &SCRIPTS.release_del,
        }
    }

    fn renew_script(self) -> &'static Script {
        match self {
            SetMode::BrokenRenew => &SCRIPTS.renew_pexpire,
            SetMode::Nx | SetMode::BrokenNoNx | SetMode::BrokenRelease => &SCRIPTS.renew,
        }
    }
}

/// The `redis-setnx` / `redis-broken-nonx` recipe bound to one Redis server.
#[derive(Debug)]
pub struct SetNxBackend {
    /// The server; with Sentinels, a stand-in until a client asks them.
    server: Server,
    /// `redis-sentinel`: the Sentinels that name the primary.
    sentinels: Option<Arc<Sentinels>>,
    knobs: RedisKnobs,
    keys: Arc<KeyTable>,
    seed: u64,
    mode: SetMode,
    /// `redis-pubsub`: waiters subscribe to the release channel instead of polling.
    pubsub: bool,
    tally: WakeupTally,
    /// Sum of the receiver counts the server returned for every release `PUBLISH`.
    delivered: Arc<AtomicU64>,
}

impl SetNxBackend {
    /// The same lock with pub/sub-notified waiters: `redis-pubsub` (see [`crate::pubsub`]).
    pub fn with_pubsub(mut self) -> SetNxBackend {
        self.pubsub = true;
        self
    }

    /// `calls + rejected_calls` of `commands` in the server's `INFO commandstats` (for tests
    /// that cross-check a count, e.g. `publish` against releases).
    pub async fn command_calls(&self, commands: &[&str]) -> Result<u64, String> {
        commandstats::read(std::slice::from_ref(&self.server), commands).await
    }

    /// The commands the servers' request count sums: the knob's, else this recipe's own.
    fn commands(&self) -> Vec<&str> {
        if !self.knobs.counted.is_empty() {
            return self.knobs.counted.iter().map(String::as_str).collect();
        }
        if self.pubsub {
            PUBSUB_COMMANDS.to_vec()
        } else {
            SETNX_COMMANDS.to_vec()
        }
    }

    /// The recipe on `endpoints.redis[0]`, for lock keys `0..keys`, drawing retry jitter from
    /// `seed`.
    pub fn new(
        endpoints: &Endpoints,
        knobs: &RedisKnobs,
        keys: u32,
        seed: u64,
        mode: SetMode,
    ) -> Result<SetNxBackend, BackendError> {
        let server = connect::servers(endpoints, crate::REDIS)?.swap_remove(0);
        Ok(SetNxBackend {
            server,
            sentinels: None,
            knobs: knobs.clone(),
            keys: Arc::new(KeyTable::new(&knobs.prefix, keys)),
            seed,
            mode,
            pubsub: false,
            tally: WakeupTally::default(),
            delivered: Arc::new(AtomicU64::new(0)),
        })
    }
}

impl SetNxBackend {
    /// `redis-sentinel`: the `redis-setnx` recipe on the primary that the Sentinels of
    /// `endpoints.sentinel` name, asked again by a client whenever its connection broke.
    pub fn via_sentinel(
        endpoints: &Endpoints,
        knobs: &RedisKnobs,
        keys: u32,
        seed: u64,
    ) -> Result<SetNxBackend, BackendError> {
        let sentinels = Sentinels::new(endpoints)?;
        let mut backend = SetNxBackend::new(
            &[(crate::REDIS, endpoints.get(crate::SENTINEL)[..1].to_vec())]
                .into_iter()
                .collect(),
            knobs,
            keys,
            seed,
            SetMode::Nx,
        )?;
        backend.sentinels = Some(Arc::new(sentinels));
        Ok(backend)
    }

    fn kind(&self) -> BackendKind {
        match self.sentinels {
            Some(_) => crate::recipes::REDIS_SENTINEL,
            None if self.pubsub => crate::recipes::REDIS_PUBSUB,
            None => self.mode.kind(),
        }
    }
}

impl Backend for SetNxBackend {
    type Client = SetNxClient;

    fn info(&self) -> BackendInfo {
        let k = &self.knobs;
        let fencing = match self.mode {
            SetMode::Nx => {
                "per-lock counter INCRed in the same Lua script as the SET NX grant; \
                            monotonic only while this one server keeps its data (a restart \
                            without persistence resets it)"
            }
            SetMode::BrokenNoNx => {
                "per-lock counter INCRed with every (non-exclusive) grant; \
                                    this recipe is deliberately broken: SET without NX"
            }
            SetMode::BrokenRelease => {
                "per-lock counter INCRed in the same Lua script as the SET NX grant; this \
                 recipe is deliberately broken: released by a plain DEL, whoever holds the lock"
            }
            SetMode::BrokenRenew => {
                "per-lock counter INCRed in the same Lua script as the SET NX grant; this \
                 recipe is deliberately broken: renewed by a plain PEXPIRE, whoever holds the \
                 lock"
            }
        };
        let fencing = match self.sentinels {
            Some(_) => {
                "per-lock counter INCRed in the same Lua script as the SET NX grant, on the \
                 current primary; replicated asynchronously, so a failover can lose grants and \
                 repeat tokens"
            }
            None => fencing,
        };
        let servers = match &self.sentinels {
            Some(s) => format!("the primary named by Sentinels {}", s.addresses()),
            None => self.server.address.clone(),
        };
        let waits_by = if self.pubsub {
            format!(
                "SUBSCRIBE to the lock's release channel, SET NX again on each message (the \
                 release script PUBLISHes after its compare-and-delete; every waiter is woken), \
                 or after {:?} without one",
                crate::pubsub::FALLBACK
            )
        } else {
            retry::waits_by(k.retry_delay, k.retry_jitter)
        };
        BackendInfo {
            backend: self.kind(),
            waits_by,
            fencing: fencing.to_string(),
            knobs: vec![
                ("ttl".into(), format!("{:?}", k.ttl)),
                ("retry_delay".into(), format!("{:?}", k.retry_delay)),
                ("retry_jitter".into(), format!("{:?}", k.retry_jitter)),
                (
                    "response_timeout".into(),
                    format!("{:?}", k.response_timeout),
                ),
                (
                    "connect_timeout".into(),
                    format!("{:?}", connect::CONNECT_TIMEOUT),
                ),
                ("prefix".into(), k.prefix.clone()),
                ("servers".into(), servers),
            ],
        }
    }

    async fn connect(&self, client: ClientId) -> Result<SetNxClient, BackendError> {
        let server = match &self.sentinels {
            Some(s) => s.primary().await?,
            None => self.server.clone(),
        };
        let conn = server
            .lock_connection_or_unreachable(self.knobs.response_timeout)
            .await?;
        let ttl_ms = u64::try_from(self.knobs.ttl.as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        Ok(SetNxClient {
            server,
            sentinels: self.sentinels.clone(),
            response_timeout: self.knobs.response_timeout,
            conn: Some(conn),
            cmd: Cmd::with_capacity(8, 256),
            keys: self.keys.clone(),
            acquire: self.mode.script(),
            release: self.mode.release_script(),
            renew: self.mode.renew_script(),
            nonce: Nonce::of(client),
            grants: 0,
            backoff: Backoff::new(
                self.seed,
                client,
                self.knobs.retry_delay,
                self.knobs.retry_jitter,
            ),
            ttl_ms,
            sent: 0,
            pending: None,
            waiter: self
                .pubsub
                .then(|| ReleaseWaiter::new(self.server.clone(), self.tally.clone())),
            tally: self.tally.clone(),
            delivered: self.delivered.clone(),
        })
    }

    async fn check_servers(&self) -> Result<(), BackendError> {
        match &self.sentinels {
            Some(s) => s.primary().await?.ping().await,
            None => self.server.ping().await,
        }
    }

    async fn server_counters(&self) -> Result<ServerCounters, String> {
        if self.sentinels.is_some() {
            return Err(
                "redis-sentinel: the primary can change during a run (failover), so one \
                 server's counters before and after are not comparable"
                    .into(),
            );
        }
        let servers = std::slice::from_ref(&self.server);
        commandstats::counters(servers, &self.commands(), |_, address| {
            format!("redis ({address})")
        })
        .await
    }

    async fn observe_server(
        &self,
        clock: lockbench_core::RunClock,
        keys: u32,
        sink: lockbench_core::ServerSink,
    ) -> Result<(), String> {
        if self.sentinels.is_some() {
            return Err(
                "redis-sentinel: the primary can change during a run; not observed".to_string(),
            );
        }
        let servers = vec![self.server.clone()];
        crate::observe::observe(servers, self.keys.clone(), keys, 1, clock, sink).await
    }

    fn wakeups(&self) -> Option<Wakeups> {
        Some(self.tally.read())
    }

    async fn server_fanout(&self) -> Result<Option<ServerFanout>, String> {
        if !self.pubsub {
            return Ok(None);
        }
        Ok(Some(ServerFanout {
            source: "redis: receivers per release PUBLISH as returned by the server (Redis keeps \
                     no cumulative delivery counter), summed; PUBSUB NUMSUB of the release \
                     channels"
                .into(),
            notifications: self.delivered.load(Ordering::Relaxed),
            watches: commandstats::numsub(&self.server, self.keys.channels()).await?,
        }))
    }
}

/// What a `redis-setnx` grant keeps: the value written into the lock key.
#[derive(Debug)]
pub struct SetNxHandle {
    /// This grant's unique value.
    pub value: LockValue,
}

/// One `redis-setnx` client: its own connection, reopened after a connection error.
#[derive(Debug)]
pub struct SetNxClient {
    server: Server,
    /// `redis-sentinel`: asked for the primary again whenever the connection broke.
    sentinels: Option<Arc<Sentinels>>,
    /// How long a reply may take; a connection whose reply is later is dropped and reopened.
    response_timeout: std::time::Duration,
    conn: Option<LockConnection>,
    /// Reused for every request, so building one allocates nothing once it has grown.
    cmd: Cmd,
    keys: Arc<KeyTable>,
    acquire: &'static Script,
    /// Compare-and-delete, or `redis-broken-release`'s plain `DEL`.
    release: &'static Script,
    /// Compare-and-`PEXPIRE`, or `redis-broken-renew`'s plain `PEXPIRE`.
    renew: &'static Script,
    nonce: Nonce,
    grants: u64,
    backoff: Backoff,
    ttl_ms: u64,
    sent: u64,
    /// The value of an acquire that has not ended definitely (cancelled by the caller's
    /// timeout or by the end of the run, or indeterminate): it may be holding the key, so
    /// `close` takes it back instead of leaving it locked until its TTL.
    pending: Option<(KeyId, LockValue)>,
    /// `redis-pubsub`: the release-channel subscription; `None` = poll.
    waiter: Option<ReleaseWaiter>,
    tally: WakeupTally,
    delivered: Arc<AtomicU64>,
}

impl SetNxClient {
    /// Sends the script call in `self.cmd`, reconnecting first if the last request broke the
    /// connection. Returns the script's integer reply.
    async fn run(&mut self, script: &Script) -> Result<i64, Failure> {
        if self.conn.as_ref().is_some_and(LockConnection::is_spent) {
            // A request cut short (a timeout, the end of a run) left its reply on the way.
            self.conn = None;
        }
        if self.conn.is_none() {
            if let Some(s) = &self.sentinels {
                match s.primary().await {
                    Ok(primary) => self.server = primary,
                    Err(_) => return Err(Failure::NotSent),
                }
            }
            match self.server.lock_connection(self.response_timeout).await {
                Ok(conn) => self.conn = Some(conn),
                Err(_) => return Err(Failure::NotSent),
            }
        }
        let conn = self.conn.as_mut().expect("connected above");
        match scripts::run(conn, &self.cmd, script, &mut self.sent).await {
            Ok(n) => Ok(n),
            Err(e) => {
                if errors::breaks_connection(&e) {
                    self.conn = None;
                }
                Err(Failure::Sent(e))
            }
        }
    }

    /// Runs compare-and-delete (`ttl_ms` = `None`) or compare-and-pexpire for `grant`:
    /// 1 → ok, 0 → lock lost.
    async fn compare_and(
        &mut self,
        script: &'static Script,
        grant: &Grant<SetNxHandle>,
        ttl_ms: Option<u64>,
    ) -> Outcome<()> {
        let cmd = scripts::evalsha(&mut self.cmd, script, 1)
            .arg(self.keys.lock(grant.key).as_ref())
            .arg(grant.handle.value.as_bytes());
        if let Some(ttl_ms) = ttl_ms {
            cmd.arg(ttl_ms);
        }
        match self.run(script).await {
            Ok(1) => Outcome::Ok(()),
            Ok(_) => Outcome::Fail(ErrorKind::LockLost),
            Err(f) => f.outcome(),
        }
    }
}

impl LockClient for SetNxClient {
    type Handle = SetNxHandle;

    async fn acquire(&mut self, key: KeyId) -> Outcome<Grant<SetNxHandle>> {
        self.grants += 1;
        let value = LockValue::new(&self.nonce, self.grants);
        let script = self.acquire;
        self.pending = Some((key, value));
        let keys = self.keys.clone();
        let channel = keys.channel(key);
        // Whether this attempt reacts to a wake-up (a message, or the poll timer).
        let mut reacting = false;
        let mut subscribed = false;
        loop {
            scripts::evalsha(&mut self.cmd, script, 2)
                .arg(self.keys.lock(key).as_ref())
                .arg(self.keys.fence(key).as_ref())
                .arg(value.as_bytes())
                .arg(self.ttl_ms);
            if reacting {
                self.tally.request();
            }
            let result = self.run(script).await;
            if !matches!(result, Ok(0))
                && subscribed
                && let Some(w) = self.waiter.as_mut()
            {
                if reacting {
                    w.tally().request();
                }
                w.unsubscribe(&channel, &mut self.sent).await;
            }
            match result {
                Ok(token) if token > 0 => {
                    self.pending = None;
                    return Outcome::Ok(Grant {
                        key,
                        token: Some(FencingToken(token as u64)),
                        handle: SetNxHandle { value },
                    });
                }
                Ok(_) => {
                    if reacting {
                        self.tally.wasted();
                    }
                    match self.waiter.as_mut() {
                        None => {
                            tokio::time::sleep(self.backoff.next_delay()).await;
                            self.tally.notification();
                            reacting = true;
                        }
                        // Subscribe, then try once more at once: a release between the refused
                        // attempt and the subscription would otherwise go unnoticed.
                        Some(w) if !subscribed => {
                            subscribed = w.subscribe(&channel, &mut self.sent).await.is_ok();
                            reacting = false;
                            if !subscribed {
                                tokio::time::sleep(crate::pubsub::FALLBACK).await;
                            }
                        }
                        Some(w) => match w.wait().await {
                            Woken::Message => reacting = true,
                            Woken::Fallback => reacting = false,
                            // Try at once, then subscribe again on a new connection.
                            Woken::Lost => {
                                reacting = false;
                                subscribed = false;
                            }
                        },
                    }
                }
                Err(f) => {
                    let outcome = f.outcome();
                    if matches!(outcome, Outcome::Fail(_)) {
                        self.pending = None;
                    }
                    return outcome;
                }
            }
        }
    }

    async fn release(&mut self, grant: Grant<SetNxHandle>) -> Outcome<()> {
        if self.waiter.is_none() {
            return self.compare_and(self.release, &grant, None).await;
        }
        // redis-pubsub: compare-and-delete and PUBLISH in one script; the reply is
        // 1 + receivers.
        let script = &SCRIPTS.release_publish;
        scripts::evalsha(&mut self.cmd, script, 1)
            .arg(self.keys.lock(grant.key).as_ref())
            .arg(grant.handle.value.as_bytes())
            .arg(self.keys.channel(grant.key).as_ref());
        match self.run(script).await {
            Ok(n) if n >= 1 => {
                self.delivered.fetch_add(n as u64 - 1, Ordering::Relaxed);
                Outcome::Ok(())
            }
            Ok(_) => Outcome::Fail(ErrorKind::LockLost),
            Err(f) => f.outcome(),
        }
    }

    async fn renew(&mut self, grant: &Grant<SetNxHandle>) -> Outcome<()> {
        self.compare_and(self.renew, grant, Some(self.ttl_ms)).await
    }

    fn requests_sent(&self) -> Option<u64> {
        Some(self.sent)
    }

    async fn close(mut self) {
        // An acquire cut short may have set the key: take it back (compare-and-delete, so a
        // key someone else holds is untouched). Best effort, bounded; the TTL is the backstop.
        if let Some((key, value)) = self.pending.take() {
            scripts::evalsha(&mut self.cmd, &SCRIPTS.release, 1)
                .arg(self.keys.lock(key).as_ref())
                .arg(value.as_bytes());
            let _ = tokio::time::timeout(CLOSE_BUDGET, self.run(&SCRIPTS.release)).await;
        }
    }

    async fn abandon(self) {
        drop(self);
    }
}

/// How long `close` may spend taking back a cut-short acquire.
const CLOSE_BUDGET: std::time::Duration = std::time::Duration::from_secs(1);
