//! One PostgreSQL session (connection) and how it ended.
//!
//! Why it matters: an advisory lock lives exactly as long as its session, so whether a release
//! can say `lock-lost` depends on whether the session that held the lock is *certainly* over.
//! It is when the server ended it: an `ErrorResponse` of severity `FATAL` (an administrator's
//! `pg_terminate_backend`, a shutdown) or the server closing the stream (the backend process
//! exited). It is not known after an I/O error or a timeout on our side: the server may still
//! be holding the session (and the lock) until its keepalive probes give up.
//!
//! Every address of the `postgres` group is tried in order with `target_session_attrs =
//! read-write`, so a client that reconnects after a promotion finds the new primary (the
//! check is tokio-postgres's `SHOW transaction_read_only`, sent on each connect; it carries no
//! tag, so the server's counters of lockbench's statements do not include it).

use crate::knobs::PostgresKnobs;
use crate::tls::Security;
use lockbench_core::traits::BackendError;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_postgres::config::TargetSessionAttrs;
use tokio_postgres::{Client, Config, NoTls};

/// How a session ended, as the connection task saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum End {
    /// The server ended it (a `FATAL` error, or it closed the stream): every lock it held is
    /// free.
    ByServer(String),
    /// Broken on our side of the wire (I/O error) or closed by us: the server may not know yet.
    Unknown(String),
}

/// Makes sessions for one set of addresses and settings.
#[derive(Clone, Debug)]
pub(crate) struct Connector {
    config: Config,
    /// TLS and the password (`crate::tls`).
    security: Security,
    /// The user sessions log in as (for errors).
    user: String,
    /// What a failed connect says to check.
    hint: &'static str,
    /// The addresses, as error messages name them.
    pub(crate) addresses: String,
    budget: Duration,
}

impl Connector {
    /// Sessions on `addresses` (`host:port` each, tried in order, the first read-write one
    /// kept) named `application_name` in `pg_stat_activity`.
    pub(crate) fn new(
        addresses: &[String],
        knobs: &PostgresKnobs,
        security: &Security,
        application_name: &str,
    ) -> Result<Connector, BackendError> {
        Connector::with(
            addresses,
            knobs,
            security,
            application_name,
            TargetSessionAttrs::ReadWrite,
        )
    }

    /// One connector per address, taking the server whatever its role (the counters' reads).
    pub(crate) fn each(
        addresses: &[String],
        knobs: &PostgresKnobs,
        security: &Security,
        application_name: &str,
    ) -> Result<Vec<(String, Connector)>, BackendError> {
        addresses
            .iter()
            .map(|a| {
                let c = Connector::with(
                    std::slice::from_ref(a),
                    knobs,
                    security,
                    application_name,
                    TargetSessionAttrs::Any,
                )?;
                Ok((a.clone(), c))
            })
            .collect()
    }

    fn with(
        addresses: &[String],
        knobs: &PostgresKnobs,
        security: &Security,
        application_name: &str,
        attrs: TargetSessionAttrs,
    ) -> Result<Connector, BackendError> {
        if addresses.is_empty() {
            return Err(BackendError::Config(format!(
                "no `{}` servers in the endpoints: list the PostgreSQL primary and replica as \
                 `{} = [\"host:port\", ...]`",
                crate::POSTGRES,
                crate::POSTGRES
            )));
        }
        let mut config = Config::new();
        for address in addresses {
            let (host, port) = address
                .rsplit_once(':')
                .and_then(|(h, p)| Some((h, p.parse::<u16>().ok()?)))
                .ok_or_else(|| {
                    BackendError::Config(format!(
                        "postgres endpoint `{address}` is not host:port (e.g. 127.0.0.1:15432)"
                    ))
                })?;
            config.host(host).port(port);
        }
        // Client side too: keepalives let a partitioned client notice its session is gone.
        let user = security.user().unwrap_or(&knobs.user).to_string();
        security.apply(&mut config);
        config
            .user(&user)
            .dbname(&knobs.dbname)
            .application_name(application_name)
            .options(knobs.startup_options())
            .connect_timeout(knobs.connect_timeout)
            .keepalives(true)
            .keepalives_idle(knobs.tcp_keepalives_idle)
            .keepalives_interval(knobs.tcp_keepalives_interval)
            .keepalives_retries(knobs.tcp_keepalives_count)
            .target_session_attrs(attrs);
        let hint = match attrs {
            TargetSessionAttrs::ReadWrite => "is one of them an accepting read-write primary?",
            _ => "is the server up and accepting connections?",
        };
        Ok(Connector {
            config,
            security: security.clone(),
            user,
            hint,
            addresses: addresses.join(","),
            // Each address gets its connect timeout, plus the read-write check's round trip.
            budget: (knobs.connect_timeout + knobs.response_timeout) * addresses.len() as u32,
        })
    }

    /// A session with another `application_name` (the observer's, the counters' reader).
    pub(crate) fn renamed(&self, application_name: &str) -> Connector {
        let mut c = self.clone();
        c.config.application_name(application_name);
        c
    }

    /// Opens a session; an error names the addresses and what went wrong.
    pub(crate) async fn connect(&self) -> Result<Session, BackendError> {
        let unreachable = |reason: String| BackendError::Unreachable {
            endpoint: self.addresses.clone(),
            reason,
        };
        let failed =
            |e: tokio_postgres::Error| match self.security.explain(&self.addresses, &self.user, &e)
            {
                Some(clear) => BackendError::Config(clear),
                None => unreachable(format!("{e} ({})", self.hint)),
            };
        let timed_out = || unreachable(format!("no session within {:?}", self.budget));
        let end = Arc::new(OnceLock::new());
        let (client, task) = match &self.security.tls {
            Some(tls) => {
                match tokio::time::timeout(self.budget, self.config.connect(tls.clone())).await {
                    Ok(Ok((client, connection))) => (client, drive(connection, end.clone())),
                    Ok(Err(e)) => return Err(failed(e)),
                    Err(_) => return Err(timed_out()),
                }
            }
            None => match tokio::time::timeout(self.budget, self.config.connect(NoTls)).await {
                Ok(Ok((client, connection))) => (client, drive(connection, end.clone())),
                Ok(Err(e)) => return Err(failed(e)),
                Err(_) => return Err(timed_out()),
            },
        };
        Ok(Session { client, end, task })
    }
}

/// Drives a session's connection until it ends, recording how (see [`End`]).
fn drive<S, T>(
    connection: tokio_postgres::Connection<S, T>,
    ended: Arc<OnceLock<End>>,
) -> JoinHandle<()>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    {
        tokio::spawn(async move {
            let how = match connection.await {
                Ok(()) => End::Unknown("closed by this client".into()),
                Err(e) => match e.as_db_error() {
                    Some(db) => End::ByServer(format!("{}: {}", db.code().code(), db.message())),
                    None if e.is_closed() => {
                        End::ByServer("the server closed the connection".into())
                    }
                    None => End::Unknown(e.to_string()),
                },
            };
            let _ = ended.set(how);
        })
    }
}

/// An open session: the client half and the task that drives the connection.
#[derive(Debug)]
pub(crate) struct Session {
    pub(crate) client: Client,
    end: Arc<OnceLock<End>>,
    task: JoinHandle<()>,
}

impl Session {
    /// How the session ended, waiting up to `wait` for the connection task to say (a request
    /// can fail a moment before the task records why).
    pub(crate) async fn end(&mut self, wait: Duration) -> Option<End> {
        if self.end.get().is_none() {
            let _ = tokio::time::timeout(wait, &mut self.task).await;
        }
        self.end.get().cloned()
    }

    /// Whether the server certainly ended this session.
    pub(crate) async fn ended_by_server(&mut self) -> bool {
        matches!(
            self.end(Duration::from_millis(200)).await,
            Some(End::ByServer(_))
        )
    }

    /// Closes cleanly: tokio-postgres sends `Terminate`, the server ends the session (and
    /// frees its locks) at once.
    pub(crate) async fn close(self) {
        let Session { client, task, .. } = self;
        drop(client);
        let _ = tokio::time::timeout(Duration::from_secs(1), task).await;
    }

    /// Drops the socket without a word, as a crashed process's would be: the server sees the
    /// connection close and ends the session.
    pub(crate) fn abandon(self) {
        self.task.abort();
    }
}
