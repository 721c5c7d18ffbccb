//! One advisory-lock client: its session, its statements, and what each outcome means.
//!
//! - **Outcomes are three-valued.** A statement that failed with an error from a live session
//!   did not happen (`fail`); one whose session the server certainly ended
//!   ([`crate::session::End::ByServer`]) holds nothing any more (a release or renew then says
//!   `lock-lost`, an acquire `fail`); one cut off by a timeout or an I/O error may have run
//!   and its session may still hold locks on the server (`info`). After a timeout the session
//!   is dropped (its statement is still in flight) and the next operation opens another, on
//!   whichever server is primary then.
//! - **A grant remembers its session** ([`PgHandle::session`]): released from a later session
//!   it is `lock-lost` if the server ended the old one, `info` otherwise (it may still hold the
//!   lock until its keepalives give up; nothing this client sends can release it).
//! - **`renew` extends nothing** (advisory locks have no lease): it asks the server whether
//!   this session still holds the lock (`pg_locks` for its own pid), so a holder learns that a
//!   terminated session or a failover took it.
//! - **Every statement is counted** when sent (the fencing sequence's one-time setup too);
//!   preparing them at connect is not (no statement runs, and `pg_stat_statements` counts
//!   none).

use crate::knobs::PostgresKnobs;
use crate::recipe::PgRecipe;
use crate::session::{Connector, Session};
use crate::sql::{self, Statements};
use lockbench_core::traits::BackendError;
use lockbench_core::{ErrorKind, FencingToken, Grant, KeyId, LockClient, Outcome, WakeupTally};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::OnceCell;
use tokio_postgres::Statement;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;

/// What a client keeps about a held lock.
#[derive(Debug)]
pub struct PgHandle {
    /// Which of this client's sessions took it (they are numbered from 0).
    pub session: u64,
    /// The lock's second key (the first is the namespace).
    pub objid: i32,
}

/// The statements a session prepared.
#[derive(Debug)]
struct Prepared {
    lock: Statement,
    unlock: Statement,
    holds: Statement,
}

/// A session with its number and its prepared statements.
#[derive(Debug)]
struct Open {
    session: Session,
    number: u64,
    st: Prepared,
    /// `pg-advisory-xact`: a transaction is open (holding a lock).
    in_xact: bool,
}

/// Why a statement did not return.
enum Failure {
    /// No reply within the budget: it may have run.
    Timeout,
    /// The server refused it and the session lives on (e.g. `lock_timeout`).
    Refused(SqlState, String),
    /// The server ended the session (a `FATAL` error): every lock it held is free.
    Ended(String),
    /// The connection broke: whether the server ended the session is for the connection
    /// task to say.
    Lost(String),
}

/// One advisory-lock client (see the module docs).
#[derive(Debug)]
pub struct PgClient {
    recipe: PgRecipe,
    knobs: Arc<PostgresKnobs>,
    connector: Arc<Connector>,
    /// The fencing sequence exists (made once per backend, by its first session).
    setup: Arc<OnceCell<()>>,
    /// The statements of the run's namespace.
    sql: Arc<Statements>,
    open: Option<Open>,
    sessions: u64,
    /// Recently closed sessions and whether the server certainly ended each.
    ended: Vec<(u64, bool)>,
    sent: u64,
    /// xorshift64 state for the poll jitter, seeded from the run's seed and the client id.
    rng: u64,
    /// `pg-try-advisory`'s wake-ups (each poll timer is one), shared by the backend's clients.
    tally: WakeupTally,
}

async fn call<T>(
    budget: Duration,
    fut: impl Future<Output = Result<T, tokio_postgres::Error>>,
) -> Result<T, Failure> {
    match tokio::time::timeout(budget, fut).await {
        Err(_) => Err(Failure::Timeout),
        Ok(Ok(t)) => Ok(t),
        Ok(Err(e)) => match e.as_db_error() {
            Some(db) if !matches!(db.severity(), "FATAL" | "PANIC") => Err(Failure::Refused(
                db.code().clone(),
                db.message().to_string(),
            )),
            Some(_) => Err(Failure::Ended(e.to_string())),
            None => Err(Failure::Lost(e.to_string())),
        },
    }
}

impl PgClient {
    pub(crate) fn new(
        recipe: PgRecipe,
        knobs: Arc<PostgresKnobs>,
        connector: Arc<Connector>,
        setup: Arc<OnceCell<()>>,
        sql: Arc<Statements>,
        seed: u64,
        tally: WakeupTally,
    ) -> PgClient {
        PgClient {
            recipe,
            knobs,
            connector,
            setup,
            sql,
            open: None,
            sessions: 0,
            ended: Vec::new(),
            sent: 0,
            rng: seed | 1,
            tally,
        }
    }

    /// Opens the first session (what `Backend::connect` waits for).
    pub(crate) async fn connect_now(&mut self) -> Result<(), BackendError> {
        if self.open.is_none()
            && let Err(reason) = self.open().await
        {
            return Err(BackendError::Unreachable {
                endpoint: self.connector.addresses.clone(),
                reason,
            });
        }
        Ok(())
    }

    /// The open session, opening one (and preparing its statements) when there is none.
    async fn open(&mut self) -> Result<(), String> {
        if self
            .open
            .as_ref()
            .is_some_and(|o| o.session.client.is_closed())
        {
            self.retire().await;
        }
        if self.open.is_none() {
            let session = self.connector.connect().await.map_err(|e| e.to_string())?;
            if self.setup.get().is_none() {
                let mut ran = false;
                let setup = self.setup.get_or_try_init(|| {
                    ran = true;
                    make_fence(&session.client, &self.sql)
                });
                let made = tokio::time::timeout(self.knobs.response_timeout * 4, setup)
                    .await
                    .unwrap_or_else(|_| Err("no reply in time".into()));
                if ran {
                    self.sent += self.sql.setup.len() as u64;
                }
                if let Err(e) = made {
                    session.close().await;
                    return Err(format!(
                        "creating the fencing sequence `{}`: {e}",
                        sql::FENCE
                    ));
                }
            }
            let prepared = prepare(&session.client, self.recipe, &self.sql);
            let st = match tokio::time::timeout(self.knobs.response_timeout, prepared).await {
                Ok(Ok(st)) => st,
                Ok(Err(e)) => {
                    session.close().await;
                    return Err(format!("preparing the recipe's statements: {e}"));
                }
                Err(_) => {
                    session.abandon();
                    return Err(format!(
                        "preparing the recipe's statements: no reply within {:?}",
                        self.knobs.response_timeout
                    ));
                }
            };
            self.open = Some(Open {
                session,
                number: self.sessions,
                st,
                in_xact: false,
            });
            self.sessions += 1;
        }
        Ok(())
    }

    /// Drops the open session, remembering (and returning) whether the server had certainly
    /// ended it (`certain`: the caller already knows it did).
    async fn retire_as(&mut self, certain: bool) -> bool {
        let Some(mut open) = self.open.take() else {
            return certain;
        };
        let by_server = certain || open.session.ended_by_server().await;
        open.session.abandon();
        self.ended.push((open.number, by_server));
        if self.ended.len() > 8 {
            self.ended.remove(0);
        }
        by_server
    }

    async fn retire(&mut self) -> bool {
        self.retire_as(false).await
    }

    /// Whether the server certainly ended the session after `f`, retiring it if it is over.
    async fn gone(&mut self, f: &Failure) -> Option<bool> {
        match f {
            Failure::Ended(why) => {
                tracing::debug!(recipe = %self.recipe, "the server ended the session: {why}");
                Some(self.retire_as(true).await)
            }
            Failure::Lost(why) => {
                tracing::debug!(recipe = %self.recipe, "connection lost: {why}");
                Some(self.retire().await)
            }
            Failure::Timeout => Some(self.retire().await),
            Failure::Refused(..) => None,
        }
    }

    /// For a grant of session `number` that is not the open one: `lock-lost` when the server
    /// ended that session, indeterminate otherwise.
    fn stale(&self, number: u64) -> Outcome<()> {
        match self.ended.iter().find(|(n, _)| *n == number) {
            Some((_, true)) => Outcome::Fail(ErrorKind::LockLost),
            _ => Outcome::Info(ErrorKind::ConnectionLost),
        }
    }

    fn jitter(&mut self) -> Duration {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        let span = self.knobs.poll_jitter.as_nanos() as u64;
        self.knobs.poll_interval + Duration::from_nanos(if span == 0 { 0 } else { self.rng % span })
    }

    /// After a failed acquire statement: what it means, dropping the session where needed.
    async fn acquire_failed(&mut self, f: Failure) -> Outcome<Grant<PgHandle>> {
        let by_server = self.gone(&f).await;
        match (f, by_server) {
            (Failure::Refused(code, _), _) if code == SqlState::LOCK_NOT_AVAILABLE => {
                Outcome::Fail(ErrorKind::Timeout)
            }
            (Failure::Refused(_, message), _) => {
                tracing::warn!(recipe = %self.recipe, "acquire refused: {message}");
                Outcome::Fail(ErrorKind::Other)
            }
            (Failure::Timeout, _) => Outcome::Info(ErrorKind::Timeout),
            (_, Some(true)) => Outcome::Fail(ErrorKind::ConnectionLost),
            (_, _) => Outcome::Info(ErrorKind::ConnectionLost),
        }
    }

    /// After a failed release or renew statement.
    async fn hold_failed(&mut self, f: Failure) -> Outcome<()> {
        let by_server = self.gone(&f).await;
        match (f, by_server) {
            (Failure::Refused(_, message), _) => {
                tracing::warn!(recipe = %self.recipe, "refused: {message}");
                Outcome::Fail(ErrorKind::Other)
            }
            (Failure::Timeout, _) => Outcome::Info(ErrorKind::Timeout),
            (_, Some(true)) => Outcome::Fail(ErrorKind::LockLost),
            (_, _) => Outcome::Info(ErrorKind::ConnectionLost),
        }
    }

    async fn acquire_blocking(&mut self, key: KeyId) -> Outcome<Grant<PgHandle>> {
        let ns = self.knobs.namespace;
        let objid = key.0 as i32;
        let budget = self.knobs.lock_timeout + self.knobs.response_timeout;
        let xact = self.recipe == PgRecipe::Xact;
        if let Err(e) = self.open().await {
            return unavailable(self.recipe, e);
        }
        let open = self.open.as_mut().expect("opened");
        let number = open.number;
        let params: [&(dyn ToSql + Sync); 2] = [&ns, &objid];
        let result = if xact {
            if open.in_xact {
                tracing::warn!(
                    "pg-advisory-xact: acquire while a transaction already holds a lock"
                );
                return Outcome::Fail(ErrorKind::Other);
            }
            self.sent += 2;
            let (client, st, sql) = (&open.session.client, &open.st, &self.sql);
            // Pipelined: both go out before the first reply comes back.
            let both = async {
                let (b, l) = tokio::join!(
                    client.batch_execute(&sql.begin),
                    client.query_one(&st.lock, &params)
                );
                b?;
                l
            };
            call(budget, both).await
        } else {
            self.sent += 1;
            call(
                budget,
                open.session.client.query_one(&open.st.lock, &params),
            )
            .await
        };
        match result {
            Ok(row) => {
                if let Some(open) = self.open.as_mut() {
                    open.in_xact = xact;
                }
                let token: i64 = row.get(0);
                Outcome::Ok(Grant {
                    key,
                    token: Some(FencingToken(token as u64)),
                    handle: PgHandle {
                        session: number,
                        objid,
                    },
                })
            }
            Err(f) => {
                if xact && matches!(f, Failure::Refused(..)) {
                    self.rollback().await;
                }
                self.acquire_failed(f).await
            }
        }
    }

    /// Ends a transaction whose lock statement failed; drops the session if even that fails.
    async fn rollback(&mut self) {
        let budget = self.knobs.response_timeout;
        let Some(open) = self.open.as_mut() else {
            return;
        };
        self.sent += 1;
        if call(
            budget,
            open.session.client.batch_execute(&self.sql.rollback),
        )
        .await
        .is_err()
        {
            self.retire().await;
        }
    }

    async fn acquire_polling(&mut self, key: KeyId) -> Outcome<Grant<PgHandle>> {
        let ns = self.knobs.namespace;
        let objid = key.0 as i32;
        let budget = self.knobs.response_timeout;
        let params: [&(dyn ToSql + Sync); 2] = [&ns, &objid];
        // Whether this attempt reacts to a wake-up (the poll timer), as redis-setnx counts.
        let mut reacting = false;
        loop {
            if let Err(e) = self.open().await {
                return unavailable(self.recipe, e);
            }
            let open = self.open.as_mut().expect("opened");
            let number = open.number;
            self.sent += 1;
            if reacting {
                self.tally.request();
            }
            match call(
                budget,
                open.session.client.query_one(&open.st.lock, &params),
            )
            .await
            {
                Ok(row) => {
                    if let Some(token) = row.get::<_, Option<i64>>(0) {
                        return Outcome::Ok(Grant {
                            key,
                            token: Some(FencingToken(token as u64)),
                            handle: PgHandle {
                                session: number,
                                objid,
                            },
                        });
                    }
                }
                Err(f) => return self.acquire_failed(f).await,
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
}

fn unavailable(recipe: PgRecipe, e: String) -> Outcome<Grant<PgHandle>> {
    tracing::debug!(%recipe, "no session: {e}");
    Outcome::Fail(ErrorKind::Unavailable)
}

/// Creates the fencing sequence where it is missing (see [`Statements::setup`]).
async fn make_fence(client: &tokio_postgres::Client, sql: &Statements) -> Result<(), String> {
    let e = |e: tokio_postgres::Error| match e.as_db_error() {
        Some(db) => format!("{}: {}", db.code().code(), db.message()),
        None => e.to_string(),
    };
    client.batch_execute(&sql.setup[0]).await.map_err(e)?;
    client.execute(&sql.setup[1], &[]).await.map_err(e)?;
    client.batch_execute(&sql.setup[2]).await.map_err(e)?;
    client.batch_execute(&sql.setup[3]).await.map_err(e)?;
    Ok(())
}

/// Prepares the statements `recipe` uses, pipelined (one round trip's wait).
async fn prepare(
    client: &tokio_postgres::Client,
    recipe: PgRecipe,
    sql: &Statements,
) -> Result<Prepared, tokio_postgres::Error> {
    let lock = match recipe {
        PgRecipe::Advisory => &sql.lock,
        PgRecipe::TryAdvisory => &sql.try_lock,
        PgRecipe::Xact => &sql.xact_lock,
    };
    let (lock, unlock, holds) = tokio::try_join!(
        client.prepare(lock),
        client.prepare(&sql.unlock),
        client.prepare(&sql.holds),
    )?;
    Ok(Prepared {
        lock,
        unlock,
        holds,
    })
}

impl LockClient for PgClient {
    type Handle = PgHandle;

    async fn acquire(&mut self, key: KeyId) -> Outcome<Grant<PgHandle>> {
        match self.recipe {
            PgRecipe::TryAdvisory => self.acquire_polling(key).await,
            PgRecipe::Advisory | PgRecipe::Xact => self.acquire_blocking(key).await,
        }
    }

    async fn release(&mut self, grant: Grant<PgHandle>) -> Outcome<()> {
        let ns = self.knobs.namespace;
        let objid = grant.handle.objid;
        let budget = self.knobs.response_timeout;
        let Some(open) = self
            .open
            .as_mut()
            .filter(|o| o.number == grant.handle.session)
        else {
            return self.stale(grant.handle.session);
        };
        self.sent += 1;
        if self.recipe == PgRecipe::Xact {
            let result = call(budget, open.session.client.batch_execute(&self.sql.commit)).await;
            open.in_xact = false;
            return match result {
                Ok(_) => Outcome::Ok(()),
                Err(f) => self.hold_failed(f).await,
            };
        }
        let params: [&(dyn ToSql + Sync); 2] = [&ns, &objid];
        let unlocked = open.session.client.query_one(&open.st.unlock, &params);
        match call(budget, unlocked).await {
            Ok(row) if row.get::<_, bool>(0) => Outcome::Ok(()),
            Ok(_) => Outcome::Fail(ErrorKind::LockLost),
            Err(f) => self.hold_failed(f).await,
        }
    }

    async fn renew(&mut self, grant: &Grant<PgHandle>) -> Outcome<()> {
        let ns = self.knobs.namespace;
        let objid = grant.handle.objid;
        let budget = self.knobs.response_timeout;
        let Some(open) = self
            .open
            .as_mut()
            .filter(|o| o.number == grant.handle.session)
        else {
            return self.stale(grant.handle.session);
        };
        self.sent += 1;
        let params: [&(dyn ToSql + Sync); 2] = [&ns, &objid];
        let holds = open.session.client.query_one(&open.st.holds, &params);
        match call(budget, holds).await {
            Ok(row) if row.get::<_, bool>(0) => Outcome::Ok(()),
            Ok(_) => Outcome::Fail(ErrorKind::LockLost),
            Err(f) => self.hold_failed(f).await,
        }
    }

    fn requests_sent(&self) -> Option<u64> {
        Some(self.sent)
    }

    async fn close(mut self) {
        if let Some(open) = self.open.take() {
            open.session.close().await;
        }
    }

    async fn abandon(mut self) {
        if let Some(open) = self.open.take() {
            open.session.abandon();
        }
    }
}
