//! One Redis server address and how lockbench opens connections to it.
//!
//! Every client owns its own connection per server (never a shared pool), so one client's
//! requests queue only behind its own, as they would in separate processes: a `redis-setnx`
//! client a [`Direct`] one on plain TCP ([`crate::direct`] says why), every other a
//! [`MultiplexedConnection`]. A connection is opened with:
//! - `TCP_NODELAY`, because every request is a small write that waits for its reply;
//! - no `CLIENT SETINFO` handshake, so opening a connection sends no command at all and the
//!   servers' command counters count only the lock requests ([`crate::commandstats`]);
//! - explicit connection and response timeouts (redis-rs defaults to 1 s and 500 ms);
//! - the group's [`Connection`] settings from the cluster file: TLS through
//!   redis-rs's rustls support (`tokio-rustls-comp`: the CA the servers' chains must end at,
//!   the client certificate for mutual TLS) and `AUTH` as an ACL user, whose password is read
//!   from its source here and handed only to redis-rs (whose `Debug` redacts it). The
//!   handshake and `AUTH` happen while the connection opens, so a wrong CA or password fails
//!   the first connect ([`crate::tls_errors`] says which setting and how to fix it).

use crate::direct::{Direct, LockConnection};
use lockbench_core::traits::BackendError;
use lockbench_core::{Connection, Endpoints};
use redis::aio::MultiplexedConnection;
use redis::io::tcp::TcpSettings;
use redis::{
    AsyncConnectionConfig, ClientTlsConfig, Cmd, ConnectionAddr, IntoConnectionInfo,
    RedisConnectionInfo, TlsCertificates,
};
use secrecy::{ExposeSecret, SecretString};
use std::time::Duration;

/// How long opening a connection to one server may take (TCP, and with the cluster file's
/// settings the TLS handshake and `AUTH`). An unreachable server therefore fails
/// [`lockbench_core::Backend::connect`] within this (a closed port fails at once).
pub const CONNECT_TIMEOUT: Duration = Duration::from_millis(1500);

/// How long a server may take to answer [`Server::ping`].
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(2);

/// A Redis server: its `host:port` as the user wrote it, and a `redis::Client` for it.
#[derive(Clone, Debug)]
pub(crate) struct Server {
    /// `host:port`, used in error messages and results.
    pub(crate) address: String,
    /// The settings it was opened with (for error messages: which setting to fix).
    pub(crate) security: Security,
    client: redis::Client,
    /// Without TLS: where a lock client's [`Direct`] connection goes, and how it logs in.
    plain: Option<Plain>,
}

/// A plain-TCP server as a [`Direct`] connection reaches it.
#[derive(Clone)]
struct Plain {
    /// `host:port`.
    address: String,
    /// `AUTH [user] password`, when the server wants a password (`Debug` prints neither).
    login: Option<(Option<String>, SecretString)>,
}

impl std::fmt::Debug for Plain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plain")
            .field("address", &self.address)
            .field("login", &self.login.as_ref().map(|(user, _)| user))
            .finish()
    }
}

impl Plain {
    /// The `AUTH` command, when there is a login.
    fn auth(&self) -> Option<Cmd> {
        self.login.as_ref().map(|(user, password)| {
            let mut auth = redis::cmd("AUTH");
            if let Some(user) = user {
                auth.arg(user);
            }
            auth.arg(password.expose_secret());
            auth
        })
    }
}

/// What an error message needs of a server's connection settings: which were used, and the
/// CA file's path (never the password).
#[derive(Clone, Debug, Default)]
pub(crate) struct Security {
    /// The endpoints group (`redis`, `redlock`), the table the settings are in.
    pub(crate) group: String,
    /// TLS on.
    pub(crate) tls: bool,
    /// The CA file, when one was set.
    pub(crate) ca: Option<std::path::PathBuf>,
    /// The client certificate's file, when one was set.
    pub(crate) cert: Option<std::path::PathBuf>,
    /// The ACL user (`default` when only a password was set), when the client authenticates.
    pub(crate) user: Option<String>,
}

impl Server {
    /// Parses `host:port` with `field`'s connection settings; `field` names the endpoints
    /// field in errors.
    pub(crate) fn parse(
        address: &str,
        field: &str,
        connection: &Connection,
    ) -> Result<Server, BackendError> {
        let bad = |why: &str| {
            BackendError::Config(format!(
                "endpoints.{field}: `{address}` {why}; expected host:port"
            ))
        };
        let (host, port) = address.rsplit_once(':').ok_or_else(|| bad("has no port"))?;
        let port: u16 = port.parse().map_err(|_| bad("has a bad port"))?;
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let mut redis_settings = RedisConnectionInfo::default().set_skip_set_lib_name();
        let password = connection.password(field).map_err(BackendError::Config)?;
        if let Some(password) = &password {
            if let Some(user) = &connection.user {
                redis_settings = redis_settings.set_username(user);
            }
            redis_settings = redis_settings.set_password(password.expose_secret());
        }
        let plain = connection.tls.is_none().then(|| Plain {
            address: match host.contains(':') {
                true => format!("[{host}]:{port}"),
                false => format!("{host}:{port}"),
            },
            login: password
                .clone()
                .map(|password| (connection.user.clone(), password)),
        });
        let addr = match &connection.tls {
            None => ConnectionAddr::Tcp(host, port),
            Some(_) => ConnectionAddr::TcpTls {
                host,
                port,
                insecure: false,
                tls_params: None,
            },
        };
        let info = addr
            .into_connection_info()
            .map_err(|e| bad(&e.to_string()))?
            .set_tcp_settings(TcpSettings::default().set_nodelay(true))
            .set_redis_settings(redis_settings);
        let client = match &connection.tls {
            None => redis::Client::open(info),
            Some(tls) => {
                // redis-rs builds its rustls config from the process default provider.
                lockbench_core::crypto::install_ring();
                redis::Client::build_with_tls(info, certificates(field, tls)?)
            }
        }
        .map_err(|e| bad(&e.to_string()))?;
        Ok(Server {
            address: address.to_string(),
            security: Security {
                group: field.to_string(),
                tls: connection.tls.is_some(),
                ca: connection.tls.as_ref().and_then(|t| t.ca.clone()),
                cert: connection.tls.as_ref().and_then(|t| t.cert.clone()),
                user: password
                    .is_some()
                    .then(|| connection.user.clone().unwrap_or_else(|| "default".into())),
            },
            client,
            plain,
        })
    }

    /// Its `redis::Client` (TLS and credentials included), for a caller that manages its own
    /// connections (the election's).
    pub(crate) fn client(&self) -> redis::Client {
        self.client.clone()
    }

    /// Opens a new connection with the given settings.
    pub(crate) async fn connect(
        &self,
        config: &AsyncConnectionConfig,
    ) -> redis::RedisResult<MultiplexedConnection> {
        self.client
            .get_multiplexed_async_connection_with_config(config)
            .await
    }

    /// Opens a dedicated RESP2 pub/sub connection (`redis-pubsub` waiters), bounded by
    /// [`CONNECT_TIMEOUT`].
    pub(crate) async fn pubsub(&self) -> redis::RedisResult<redis::aio::PubSub> {
        match tokio::time::timeout(CONNECT_TIMEOUT, self.client.get_async_pubsub()).await {
            Ok(r) => r,
            Err(_) => Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!(
                    "{}: no pub/sub connection within {CONNECT_TIMEOUT:?}",
                    self.address
                ),
            )
            .into()),
        }
    }

    /// Opens a throwaway connection and has the server answer a `PING` within
    /// [`ANSWER_TIMEOUT`], or says what it did not answer. The kernel accepts a TCP
    /// connection whether or not anything behind it answers, and the clients' own connects
    /// send no command, so this is what tells a hung (paused, wrong) server from a live one
    /// before a run. `PING` is not among the lock commands the server counters sum.
    pub(crate) async fn ping(&self) -> Result<(), BackendError> {
        let unreachable = |reason: String| BackendError::Unreachable {
            endpoint: self.address.clone(),
            reason,
        };
        let answered = async {
            let mut conn = self.connect(&config(ANSWER_TIMEOUT)).await?;
            redis::cmd("PING").query_async::<String>(&mut conn).await
        };
        let budget = CONNECT_TIMEOUT + ANSWER_TIMEOUT;
        match tokio::time::timeout(budget, answered).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) if !e.is_timeout() => Err(unreachable(format!(
                "PING failed: {}",
                crate::tls_errors::explain(&e, &self.security)
            ))),
            Ok(Err(_)) | Err(_) if self.security.tls => Err(unreachable(
                crate::tls_errors::tls_unanswered(&self.security.group),
            )),
            Ok(Err(_)) | Err(_) => Err(unreachable(format!(
                "PING went unanswered (connect within {CONNECT_TIMEOUT:?}, answer within \
                 {ANSWER_TIMEOUT:?}): the server is unreachable, or accepts connections \
                 without answering"
            ))),
        }
    }

    /// A lock client's connection, its replies bounded by `response_timeout`: [`Direct`] on
    /// plain TCP, else a multiplexed one.
    pub(crate) async fn lock_connection(
        &self,
        response_timeout: Duration,
    ) -> redis::RedisResult<LockConnection> {
        match &self.plain {
            Some(plain) => Direct::open(&plain.address, response_timeout, plain.auth())
                .await
                .map(LockConnection::Direct),
            None => self
                .connect(&config(response_timeout))
                .await
                .map(LockConnection::Multiplexed),
        }
    }

    /// Opens a new connection, or says which address could not be reached and why.
    pub(crate) async fn connect_or_unreachable(
        &self,
        config: &AsyncConnectionConfig,
    ) -> Result<MultiplexedConnection, BackendError> {
        self.or_unreachable(self.connect(config)).await
    }

    /// Opens a lock client's connection ([`Server::lock_connection`]), or says which address
    /// could not be reached and why.
    pub(crate) async fn lock_connection_or_unreachable(
        &self,
        response_timeout: Duration,
    ) -> Result<LockConnection, BackendError> {
        self.or_unreachable(self.lock_connection(response_timeout))
            .await
    }

    /// Waits for `connecting`, bounded, or says which address could not be reached and why.
    async fn or_unreachable<C>(
        &self,
        connecting: impl std::future::Future<Output = redis::RedisResult<C>>,
    ) -> Result<C, BackendError> {
        let unreachable = |reason: String| BackendError::Unreachable {
            endpoint: self.address.clone(),
            reason,
        };
        match tokio::time::timeout(CONNECT_TIMEOUT + Duration::from_millis(200), connecting).await {
            Ok(Ok(conn)) => Ok(conn),
            Ok(Err(e)) => Err(unreachable(crate::tls_errors::explain(&e, &self.security))),
            Err(_) if self.security.tls => Err(unreachable(crate::tls_errors::tls_unanswered(
                &self.security.group,
            ))),
            Err(_) => Err(unreachable(format!(
                "no connection within {CONNECT_TIMEOUT:?}"
            ))),
        }
    }
}

/// Connection settings with the given reply budget.
pub(crate) fn config(response_timeout: Duration) -> AsyncConnectionConfig {
    AsyncConnectionConfig::new()
        .set_connection_timeout(Some(CONNECT_TIMEOUT))
        .set_response_timeout(Some(response_timeout))
}

/// The files of `tls`, read for redis-rs (errors name the setting and the file).
fn certificates(field: &str, tls: &lockbench_core::Tls) -> Result<TlsCertificates, BackendError> {
    let read = |setting: &str, path: &std::path::Path| {
        std::fs::read(path).map_err(|e| {
            BackendError::Config(format!(
                "{field}.tls.{setting}: cannot read {}: {} (the cluster file's paths are \
                 relative to its own directory)",
                path.display(),
                e.kind()
            ))
        })
    };
    let client_tls = match (&tls.cert, &tls.key) {
        (Some(cert), Some(key)) => Some(ClientTlsConfig {
            client_cert: read("cert", cert)?,
            client_key: read("key", key)?,
        }),
        _ => None,
    };
    let root_cert = tls.ca.as_deref().map(|ca| read("ca", ca)).transpose()?;
    Ok(TlsCertificates {
        client_tls,
        root_cert,
    })
}

/// The servers of endpoints group `field`, with its connection settings, or a config error
/// naming the field when it is empty.
pub(crate) fn servers(endpoints: &Endpoints, field: &str) -> Result<Vec<Server>, BackendError> {
    let addresses = endpoints.get(field);
    if addresses.is_empty() {
        return Err(BackendError::Config(format!(
            "endpoints.{field} is empty: this backend needs at least one Redis server there"
        )));
    }
    let connection = endpoints.connection(field);
    addresses
        .iter()
        .map(|a| Server::parse(a, field, connection))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_direct_connection_dials_the_address_as_written_ipv6_in_brackets() {
        let dial = |address: &str| {
            let server = Server::parse(address, "redis", &Connection::default()).unwrap();
            server.plain.expect("plaintext").address
        };
        assert_eq!(dial("127.0.0.1:16379"), "127.0.0.1:16379");
        assert_eq!(dial("redis.example:6379"), "redis.example:6379");
        assert_eq!(dial("[::1]:6379"), "[::1]:6379");
    }
}
