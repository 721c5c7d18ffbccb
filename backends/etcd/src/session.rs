//! A client's session: its own `etcd_client::Client`, its own lease, and the background task
//! that keeps the lease alive.
//!
//! Why one connection and one lease per lockbench client: Jepsen's *process* is the unit that
//! fails (pauses, is partitioned, is retired after an indeterminate op); sharing a lease between
//! clients would make one client's fault expire another's locks.
//!
//! The keep-alive task sends one `LeaseKeepAlive` every `ttl / 3` (what Go's
//! `concurrency.Session` does) on one long-lived bidirectional stream, and reopens the stream if
//! it breaks. Its pings are *not* counted in `requests_sent` (they are the lease's heartbeat,
//! not work the recipe asks for, and their rate is fixed by the TTL). A `renew` asks the task
//! for one extra keep-alive on the same stream and waits for its answer; that one *is* counted.
//! When an answer carries `ttl <= 0` the lease is gone and `Session::lease_dead` turns true.
//! When the last keep-alive that kept the lease alive was *sent* is kept too, so a holder that
//! hears nothing can give up by its own clock when the TTL has passed
//! (`Session::lease_deadline`). Go's client counts from the answer's arrival instead; but the
//! leader refreshed the lease when the request reached it, before the answer came back, so
//! that deadline falls after the servers' expiry by the answer's delay (a loaded client can be
//! tens of milliseconds late reading it), while the send time is never later than the refresh.

use crate::access::Access;
use crate::diagnose;
use crate::errors::{CallError, REQUEST_TIMEOUT, classify, timed};
use etcd_client::{Client, LeaseGrantOptions, LeaseKeepAliveStream, LeaseKeeper};
use lockbench_core::ClientId;
use lockbench_core::traits::BackendError;
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

/// How long one TCP connect to a member may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// Budget for connecting *and* the first real request (the lease grant), together. `tonic`'s
/// balanced channel connects lazily and waits forever for a ready member, so this grant is
/// what makes an unreachable cluster, or members that accept connections but never answer,
/// fail fast; one deadline for both keeps the whole under the 5 s the contract allows (two
/// budgets of 3 s each made a silent cluster take 6 s).
const FIRST_REQUEST_TIMEOUT: Duration = Duration::from_millis(3500);

/// The lease id a client asks for: 31 random bits, then the client id in the low 32 bits
/// (positive, as etcd's ids are). The random part keeps ids unique across runs (a collision
/// with a live lease fails the grant, and the client fails to connect: about one in 2^31 per
/// live lease); the low half is what the observer reads back ([`owner_of`]).
pub fn lease_id(client: ClientId) -> i64 {
    use std::hash::{BuildHasher, Hasher};
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let high = (random >> 33).max(1);
    ((high << 32) | u64::from(client.0)) as i64
}

/// The client a lease id chosen by [`lease_id`] names.
pub fn owner_of(lease: i64) -> ClientId {
    ClientId(lease as u64 as u32)
}

/// How opening a session failed: with the members' own explanation (or after a wait during
/// which they were probed already), or not (then the members are probed for a wrong setting).
enum Failed {
    Explained(BackendError),
    Other(BackendError),
}

/// One extra keep-alive asked for by `renew`: answered with the lease's remaining TTL, or
/// `None` when the stream failed before the answer came.
type RenewReply = oneshot::Sender<Option<i64>>;

/// A connected client with a live lease and its keep-alive task.
pub(crate) struct Session {
    /// The client; cheap to clone, methods take `&mut self`.
    pub client: Client,
    /// The lease every lock key of this client is attached to.
    pub lease: i64,
    dead: Arc<AtomicBool>,
    /// When the last keep-alive whose answer had a live TTL was sent, as nanoseconds after
    /// `opened`.
    renewed: Arc<AtomicU64>,
    /// Just before the lease grant was sent: the lease began no earlier.
    opened: Instant,
    ttl: Duration,
    renew_tx: mpsc::Sender<RenewReply>,
    task: JoinHandle<()>,
}

impl Session {
    /// Connects to the members of `access`, grants a lease of `ttl_secs` and starts the
    /// keep-alive task. Two requests are sent (grant, keep-alive stream open), three with a
    /// user (its `Authenticate` first); the caller counts the grant and the authentication.
    /// With `owner`, the lease id is chosen here: [`lease_id`] of that client, so its lock
    /// entries (`{dir}{lease id hex}`) name it to the server-side observer; otherwise the
    /// server picks the id. A connect that has not succeeded within
    /// [`diagnose::PROBE_AFTER`] has the members probed, and fails at once, naming the member,
    /// the setting and the fix, when a probe finds a setting wrong (TLS, certificates).
    pub(crate) async fn open(
        access: &Access,
        ttl_secs: i64,
        owner: Option<ClientId>,
    ) -> Result<Session, BackendError> {
        let diagnosis = async {
            tokio::time::sleep(diagnose::PROBE_AFTER).await;
            diagnose::misconfigured(access).await
        };
        let failed = tokio::select! {
            opened = Self::open_unprobed(access, ttl_secs, owner) => match opened {
                Ok(session) => return Ok(session),
                Err(failed) => failed,
            },
            Some((endpoint, reason)) = diagnosis => {
                return Err(BackendError::Unreachable { endpoint, reason });
            }
        };
        // A failure the members' own answer explains (a password, a missing user) is said as
        // it is; any other (a closed connection, a handshake error in tonic's words) is probed.
        match failed {
            Failed::Explained(e) => Err(e),
            Failed::Other(e) => match diagnose::misconfigured(access).await {
                Some((endpoint, reason)) => Err(BackendError::Unreachable { endpoint, reason }),
                None => Err(e),
            },
        }
    }

    async fn open_unprobed(
        access: &Access,
        ttl_secs: i64,
        owner: Option<ClientId>,
    ) -> Result<Session, Failed> {
        let endpoints = &access.urls;
        let unreachable = |reason: String| {
            Failed::Other(BackendError::Unreachable {
                endpoint: endpoints.join(","),
                reason,
            })
        };
        let explain = |step: &str, e: &etcd_client::Error| match diagnose::explain_status(e, access)
        {
            Some(reason) => Failed::Explained(BackendError::Unreachable {
                endpoint: endpoints.join(","),
                reason,
            }),
            None => unreachable(format!("{step}: {e}")),
        };
        let options = access
            .options()
            .map_err(Failed::Explained)?
            .with_connect_timeout(CONNECT_TIMEOUT);
        let deadline = tokio::time::Instant::now() + FIRST_REQUEST_TIMEOUT;
        let mut client = match tokio::time::timeout_at(
            deadline,
            Client::connect(endpoints, Some(options)),
        )
        .await
        {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => return Err(explain("connect", &e)),
            // The members were probed while this waited: no need to again.
            Err(_) => {
                return Err(Failed::Explained(BackendError::Unreachable {
                    endpoint: endpoints.join(","),
                    reason: format!(
                        "connect: no HTTP/2 connection within {FIRST_REQUEST_TIMEOUT:?}"
                    ),
                }));
            }
        };
        let options = owner.map(|c| LeaseGrantOptions::new().with_id(lease_id(c)));
        let opened = Instant::now();
        let lease =
            match tokio::time::timeout_at(deadline, client.lease_grant(ttl_secs, options)).await {
                Ok(Ok(r)) => r.id(),
                Ok(Err(e)) => return Err(explain("lease grant", &e)),
                Err(_) => {
                    return Err(Failed::Explained(BackendError::Unreachable {
                        endpoint: endpoints.join(","),
                        reason: format!(
                            "the first request (lease grant) went unanswered: no member answered \
                         within {FIRST_REQUEST_TIMEOUT:?} of connecting (unreachable, or \
                         accepting connections without answering)"
                        ),
                    }));
                }
            };
        let stream = match timed(client.lease_keep_alive(lease)).await {
            Ok(s) => s,
            Err(e) => {
                let _ = timed(client.lease_revoke(lease)).await;
                return Err(unreachable(format!("keep-alive stream: {:?}", e.kind)));
            }
        };
        let dead = Arc::new(AtomicBool::new(false));
        let renewed = Arc::new(AtomicU64::new(0));
        let (renew_tx, renew_rx) = mpsc::channel(4);
        let period = Duration::from_millis((ttl_secs as u64 * 1000 / 3).max(100));
        let task = tokio::spawn(keep_alive_loop(
            client.clone(),
            lease,
            stream,
            period,
            dead.clone(),
            renew_rx,
            (opened, renewed.clone()),
        ));
        Ok(Session {
            client,
            lease,
            dead,
            renewed,
            opened,
            ttl: Duration::from_secs(ttl_secs as u64),
            renew_tx,
            task,
        })
    }

    /// `true` once a keep-alive answer said the lease no longer exists.
    pub(crate) fn lease_dead(&self) -> bool {
        self.dead.load(Ordering::Relaxed)
    }

    /// When the lease may run out if no keep-alive answer comes before: when the last
    /// keep-alive that kept it alive was sent (or the grant), plus the TTL.
    pub(crate) fn lease_deadline(&self) -> Instant {
        self.opened + Duration::from_nanos(self.renewed.load(Ordering::Relaxed)) + self.ttl
    }

    /// Sends one keep-alive now and returns the lease's remaining TTL (`<= 0`: gone).
    pub(crate) async fn keep_alive_once(&self) -> Result<i64, CallError> {
        let (tx, rx) = oneshot::channel();
        if self.renew_tx.send(tx).await.is_err() {
            return Err(CallError::CONNECTION_LOST);
        }
        match tokio::time::timeout(REQUEST_TIMEOUT, rx).await {
            Ok(Ok(Some(ttl))) => Ok(ttl),
            Ok(_) => Err(CallError::CONNECTION_LOST),
            Err(_) => Err(CallError::TIMEOUT),
        }
    }

    /// Stops the keep-alive task and revokes the lease, which deletes every key attached to it.
    pub(crate) async fn close(mut self) {
        self.task.abort();
        let _ = timed(self.client.lease_revoke(self.lease)).await;
    }

    /// Stops the keep-alive task and drops the connection *without* revoking: the lease and
    /// its keys disappear only when the TTL runs out, as after a crash.
    pub(crate) async fn abandon(self) {
        self.task.abort();
        let _ = self.task.await;
        drop(self.client);
    }
}

/// The keep-alive loop: one ping per `period`, one per renew request, answers matched to
/// requests in order (the server answers a keep-alive stream in order).
async fn keep_alive_loop(
    mut client: Client,
    lease: i64,
    stream: (LeaseKeeper, LeaseKeepAliveStream),
    period: Duration,
    dead: Arc<AtomicBool>,
    mut renew_rx: mpsc::Receiver<RenewReply>,
    (opened, renewed): (Instant, Arc<AtomicU64>),
) {
    let (mut keeper, mut answers) = stream;
    // Each keep-alive sent and not yet answered: when it was sent, and the renew waiting on it.
    let mut pending: VecDeque<(Instant, Option<RenewReply>)> = VecDeque::new();
    let mut ticker = tokio::time::interval(period);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticker.tick().await; // the first tick is immediate; the grant just set the TTL
    loop {
        let broken = tokio::select! {
            _ = ticker.tick() => {
                pending.push_back((Instant::now(), None));
                keeper.keep_alive().await.is_err()
            }
            Some(reply) = renew_rx.recv() => {
                pending.push_back((Instant::now(), Some(reply)));
                keeper.keep_alive().await.is_err()
            }
            answer = answers.message() => match answer {
                Ok(Some(r)) => {
                    let (sent, reply) = pending.pop_front().unzip();
                    if r.ttl() <= 0 {
                        dead.store(true, Ordering::Relaxed);
                    } else if let Some(sent) = sent {
                        let since = sent.saturating_duration_since(opened).as_nanos() as u64;
                        renewed.fetch_max(since, Ordering::Relaxed);
                    }
                    if let Some(reply) = reply.flatten() {
                        let _ = reply.send(Some(r.ttl()));
                    }
                    false
                }
                Ok(None) | Err(_) => true,
            },
        };
        if broken {
            // Fail the renewals waiting on the old stream, then reopen it (the lease may well be
            // alive: only the stream broke). Retry at the ping period until it works.
            for reply in pending.drain(..).filter_map(|(_, reply)| reply) {
                let _ = reply.send(None);
            }
            loop {
                tokio::time::sleep(period / 4).await;
                match tokio::time::timeout(REQUEST_TIMEOUT, client.lease_keep_alive(lease)).await {
                    Ok(Ok((k, a))) => {
                        keeper = k;
                        answers = a;
                        break;
                    }
                    Ok(Err(e)) if classify(&e) == CallError::LEASE_GONE => {
                        dead.store(true, Ordering::Relaxed);
                    }
                    _ => {}
                }
                // Keep renew callers from hanging while the stream is down.
                while let Ok(reply) = renew_rx.try_recv() {
                    let _ = reply.send(None);
                }
            }
        }
    }
}
