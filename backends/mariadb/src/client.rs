//! One named-lock client: its session, its statements, and what each outcome means.
//!
//! - **Outcomes are three-valued.** A statement the server refused did not take a lock
//!   (`fail`; the session is dropped all the same, in case a `GET_LOCK` was granted before
//!   the fencing token failed). One cut off by a timeout or an I/O error may have run, and its
//!   session may still hold the lock on the server (`info`). The next operation opens another
//!   session, on whichever server is primary then.
//! - **A grant remembers its session** ([`MariaHandle::session`]): released from a later
//!   session it is `info` (the old session may hold the lock until the server ends it after
//!   `wait_timeout`; nothing this client sends can release it).
//! - **`renew` extends nothing** (named locks have no lease): it asks whether this session
//!   still holds the lock (`IS_USED_LOCK(name) = CONNECTION_ID()`), which also resets the
//!   session's `wait_timeout`, so a holder learns that a failover or an ended session took
//!   it.
//! - **The token** is `NEXTVAL` of one sequence, drawn in the same statement as the grant and
//!   only when it was granted (`IF(GET_LOCK(..) = 1, NEXTVAL(..), 0)`).
//! - **Every statement is counted** when sent; each carries the run's tag as a column alias,
//!   which the servers' statement digests keep (`crate::counters`).

use crate::knobs::MariadbKnobs;
use crate::recipe::MariaRecipe;
use crate::session::Connector;
use lockbench_core::traits::BackendError;
use lockbench_core::{ErrorKind, FencingToken, Grant, KeyId, LockClient, Outcome, WakeupTally};
use mysql_async::Conn;
use mysql_async::prelude::Queryable;
use std::sync::Arc;
use std::time::Duration;

/// What a client keeps about a held lock.
#[derive(Debug)]
pub struct MariaHandle {
    /// Which of this client's sessions took it (they are numbered from 0).
    pub session: u64,
    /// The lock's name.
    pub name: String,
}

/// An open session and its number.
struct Open {
    conn: Conn,
    number: u64,
}

impl std::fmt::Debug for Open {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "session {} (connection {})", self.number, self.conn.id())
    }
}

/// Why a statement did not return a row.
enum Failure {
    /// No reply within the budget: it may have run.
    Timeout,
    /// The server refused it: nothing was granted.
    Refused(String),
    /// The connection broke: it may have run.
    Lost(String),
}

/// One named-lock client (see the module docs).
#[derive(Debug)]
pub struct MariaClient {
    recipe: MariaRecipe,
    knobs: Arc<MariadbKnobs>,
    connector: Arc<Connector>,
    /// The run's statement tag (`AS <tag>`).
    tag: Arc<str>,
    open: Option<Open>,
    sessions: u64,
    sent: u64,
    /// xorshift64 state for the poll jitter, seeded from the run's seed and the client id.
    rng: u64,
    /// `mariadb-try-lock`'s wake-ups (each poll timer is one), shared by the backend's clients.
    tally: WakeupTally,
}

async fn first(
    conn: &mut Conn,
    sql: &str,
    budget: Duration,
) -> Result<Option<Option<i64>>, Failure> {
    match tokio::time::timeout(budget, conn.query_first::<Option<i64>, _>(sql)).await {
        Err(_) => Err(Failure::Timeout),
        Ok(Ok(v)) => Ok(v),
        Ok(Err(mysql_async::Error::Server(e))) => Err(Failure::Refused(e.to_string())),
        Ok(Err(e)) => Err(Failure::Lost(e.to_string())),
    }
}

impl MariaClient {
    pub(crate) fn new(
        recipe: MariaRecipe,
        knobs: Arc<MariadbKnobs>,
        connector: Arc<Connector>,
        seed: u64,
        tally: WakeupTally,
    ) -> MariaClient {
        MariaClient {
            recipe,
            tag: knobs.tag().into(),
            knobs,
            connector,
            open: None,
            sessions: 0,
            sent: 0,
            rng: seed | 1,
            tally,
        }
    }

    /// Opens the first session (what `Backend::connect` waits for).
    pub(crate) async fn connect_now(&mut self) -> Result<(), BackendError> {
        if let Err(reason) = self.open().await {
            return Err(BackendError::Unreachable {
                endpoint: self.connector.addresses.join(","),
                reason,
            });
        }
        Ok(())
    }

    /// The open session's number, opening one when there is none.
    async fn open(&mut self) -> Result<u64, String> {
        if let Some(open) = &self.open {
            return Ok(open.number);
        }
        let conn = self.connector.connect().await?;
        let number = self.sessions;
        self.sessions += 1;
        self.open = Some(Open { conn, number });
        Ok(number)
    }

    /// Drops the open session (the driver closes it in the background).
    fn retire(&mut self) {
        self.open = None;
    }

    /// Sends `sql` on the open session; any failure but a refusal retires it.
    async fn ask(&mut self, sql: &str, budget: Duration) -> Result<Option<i64>, Failure> {
        let open = self.open.as_mut().expect("a session is open");
        self.sent += 1;
        let result = first(&mut open.conn, sql, budget).await;
        match result {
            Ok(row) => Ok(row.flatten()),
            Err(f) => {
                self.retire();
                Err(f)
            }
        }
    }

    fn jitter(&mut self) -> Duration {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        let span = self.knobs.poll_jitter.as_nanos() as u64;
        self.knobs.poll_interval + Duration::from_nanos(if span == 0 { 0 } else { self.rng % span })
    }

    /// The statement that takes lock `name`, waiting up to `wait` in the server, and draws
    /// the token only when granted (see [`get_lock`](Self::get_lock)).
    fn get_lock_sql(&self, name: &str, wait: Duration) -> String {
        format!(
            "SELECT IF(GET_LOCK('{name}', {:.3}) = 1, NEXTVAL({}), 0) AS {}",
            wait.as_secs_f64(),
            crate::server::FENCE,
            self.tag
        )
    }

    /// Sends a [`get_lock_sql`](Self::get_lock_sql) statement: `Some(token)` when granted,
    /// `None` when not granted in time.
    async fn get_lock(&mut self, sql: &str, budget: Duration) -> Result<Option<u64>, Failure> {
        let token = self.ask(sql, budget).await?;
        Ok(token.filter(|t| *t > 0).map(|t| t as u64))
    }

    fn acquire_failed(&self, f: Failure) -> Outcome<Grant<MariaHandle>> {
        match f {
            Failure::Refused(message) => {
                tracing::warn!(recipe = %self.recipe, "acquire refused: {message}");
                Outcome::Fail(ErrorKind::Other)
            }
            Failure::Timeout => Outcome::Info(ErrorKind::Timeout),
            Failure::Lost(why) => {
                tracing::debug!(recipe = %self.recipe, "connection lost: {why}");
                Outcome::Info(ErrorKind::ConnectionLost)
            }
        }
    }

    fn hold_failed(&self, f: Failure) -> Outcome<()> {
        match f {
            Failure::Refused(message) => {
                tracing::warn!(recipe = %self.recipe, "refused: {message}");
                Outcome::Fail(ErrorKind::Other)
            }
            Failure::Timeout => Outcome::Info(ErrorKind::Timeout),
            Failure::Lost(_) => Outcome::Info(ErrorKind::ConnectionLost),
        }
    }

    fn granted(key: KeyId, token: u64, session: u64, name: String) -> Outcome<Grant<MariaHandle>> {
        Outcome::Ok(Grant {
            key,
            token: Some(FencingToken(token)),
            handle: MariaHandle { session, name },
        })
    }

    async fn acquire_blocking(&mut self, key: KeyId) -> Outcome<Grant<MariaHandle>> {
        let name = self.knobs.lock_name(key.0);
        let session = match self.open().await {
            Ok(n) => n,
            Err(e) => return unavailable(self.recipe, e),
        };
        let wait = self.knobs.lock_timeout;
        let sql = self.get_lock_sql(&name, wait);
        match self
            .get_lock(&sql, wait + self.knobs.response_timeout)
            .await
        {
            Ok(Some(token)) => Self::granted(key, token, session, name),
            Ok(None) => Outcome::Fail(ErrorKind::Timeout),
            Err(f) => self.acquire_failed(f),
        }
    }

    async fn acquire_polling(&mut self, key: KeyId) -> Outcome<Grant<MariaHandle>> {
        let name = self.knobs.lock_name(key.0);
        // Built once: every poll sends the same statement.
        let sql = self.get_lock_sql(&name, Duration::ZERO);
        let budget = self.knobs.response_timeout;
        // Whether this attempt reacts to a wake-up (the poll timer), as redis-setnx counts.
        let mut reacting = false;
        loop {
            let session = match self.open().await {
                Ok(n) => n,
                Err(e) => return unavailable(self.recipe, e),
            };
            if reacting {
                self.tally.request();
            }
            match self.get_lock(&sql, budget).await {
                Ok(Some(token)) => return Self::granted(key, token, session, name),
                Ok(None) => {}
                Err(f) => return self.acquire_failed(f),
            }
            if reacting {
                self.tally.wasted();
            }
            let pause = self.jitter();
            tokio::time::sleep(pause).await;
            self.tally.notification();
            reacting = true;
        }
    }

    /// Whether `grant` was taken by the open session (else its outcome: `info`).
    fn current(&self, grant: &Grant<MariaHandle>) -> Result<(), Outcome<()>> {
        match &self.open {
            Some(open) if open.number == grant.handle.session => Ok(()),
            _ => Err(Outcome::Info(ErrorKind::ConnectionLost)),
        }
    }
}

fn unavailable(recipe: MariaRecipe, e: String) -> Outcome<Grant<MariaHandle>> {
    tracing::debug!(%recipe, "no session: {e}");
    Outcome::Fail(ErrorKind::Unavailable)
}

impl LockClient for MariaClient {
    type Handle = MariaHandle;

    async fn acquire(&mut self, key: KeyId) -> Outcome<Grant<MariaHandle>> {
        match self.recipe {
            MariaRecipe::TryLock => self.acquire_polling(key).await,
            MariaRecipe::GetLock => self.acquire_blocking(key).await,
        }
    }

    /// `RELEASE_LOCK`: 1 released; 0 (another session holds it) or NULL (no one does): the
    /// lock was lost.
    async fn release(&mut self, grant: Grant<MariaHandle>) -> Outcome<()> {
        if let Err(o) = self.current(&grant) {
            return o;
        }
        let sql = format!(
            "SELECT RELEASE_LOCK('{}') AS {}",
            grant.handle.name, self.tag
        );
        match self.ask(&sql, self.knobs.response_timeout).await {
            Ok(Some(1)) => Outcome::Ok(()),
            Ok(_) => Outcome::Fail(ErrorKind::LockLost),
            Err(f) => self.hold_failed(f),
        }
    }

    async fn renew(&mut self, grant: &Grant<MariaHandle>) -> Outcome<()> {
        if let Err(o) = self.current(grant) {
            return o;
        }
        let sql = format!(
            "SELECT IS_USED_LOCK('{}') = CONNECTION_ID() AS {}",
            grant.handle.name, self.tag
        );
        match self.ask(&sql, self.knobs.response_timeout).await {
            Ok(Some(1)) => Outcome::Ok(()),
            Ok(_) => Outcome::Fail(ErrorKind::LockLost),
            Err(f) => self.hold_failed(f),
        }
    }

    fn requests_sent(&self) -> Option<u64> {
        Some(self.sent)
    }

    async fn close(mut self) {
        if let Some(open) = self.open.take() {
            let _ = tokio::time::timeout(self.knobs.response_timeout, open.conn.disconnect()).await;
        }
    }

    async fn abandon(mut self) {
        self.open = None;
    }
}
