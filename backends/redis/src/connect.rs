//! One Redis server address and how lockbench opens connections to it.
//!
//! Every client owns its own [`MultiplexedConnection`] per server (never a shared pool), so one
//! client's requests queue only behind its own, as they would in separate processes. The
//! connection is opened with:
//! - `TCP_NODELAY`, because every request is a small write that waits for its reply;
//! - no `CLIENT SETINFO` handshake, so opening a connection sends no command at all and the
//!   servers' command counters count only the lock requests ([`crate::commandstats`]);
//! - explicit connection and response timeouts (redis-rs defaults to 1 s and 500 ms).

use lockbench_core::traits::BackendError;
use redis::aio::MultiplexedConnection;
use redis::io::tcp::TcpSettings;
use redis::{AsyncConnectionConfig, ConnectionAddr, IntoConnectionInfo, RedisConnectionInfo};
use std::time::Duration;

/// How long opening a TCP connection to one server may take. An unreachable server therefore
/// fails [`lockbench_core::Backend::connect`] within this (a closed port fails at once).
pub const CONNECT_TIMEOUT: Duration = Duration::from_millis(1500);

/// How long a server may take to answer [`Server::ping`].
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(2);

/// A Redis server: its `host:port` as the user wrote it, and a `redis::Client` for it.
#[derive(Clone, Debug)]
pub(crate) struct Server {
    /// `host:port`, used in error messages and results.
    pub(crate) address: String,
    client: redis::Client,
}

impl Server {
    /// Parses `host:port`; `field` names the endpoints field in errors.
    pub(crate) fn parse(address: &str, field: &str) -> Result<Server, BackendError> {
        let bad = |why: &str| {
            BackendError::Config(format!(
                "endpoints.{field}: `{address}` {why}; expected host:port"
            ))
        };
        let (host, port) = address.rsplit_once(':').ok_or_else(|| bad("has no port"))?;
        let port: u16 = port.parse().map_err(|_| bad("has a bad port"))?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let info = ConnectionAddr::Tcp(host.to_string(), port)
            .into_connection_info()
            .map_err(|e| bad(&e.to_string()))?
            .set_tcp_settings(TcpSettings::default().set_nodelay(true))
            .set_redis_settings(RedisConnectionInfo::default().set_skip_set_lib_name());
        let client = redis::Client::open(info).map_err(|e| bad(&e.to_string()))?;
        Ok(Server {
            address: address.to_string(),
            client,
        })
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
            Ok(Err(e)) if !e.is_timeout() => Err(unreachable(format!("PING failed: {e}"))),
            Ok(Err(_)) | Err(_) => Err(unreachable(format!(
                "PING went unanswered (connect within {CONNECT_TIMEOUT:?}, answer within \
                 {ANSWER_TIMEOUT:?}): the server is unreachable, or accepts connections \
                 without answering"
            ))),
        }
    }

    /// Opens a new connection, or says which address could not be reached and why.
    pub(crate) async fn connect_or_unreachable(
        &self,
        config: &AsyncConnectionConfig,
    ) -> Result<MultiplexedConnection, BackendError> {
        let unreachable = |reason: String| BackendError::Unreachable {
            endpoint: self.address.clone(),
            reason,
        };
        match tokio::time::timeout(
            CONNECT_TIMEOUT + Duration::from_millis(200),
            self.connect(config),
        )
        .await
        {
            Ok(Ok(conn)) => Ok(conn),
            Ok(Err(e)) => Err(unreachable(e.to_string())),
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

/// The servers named by one endpoints field, or a config error naming the field when it is
/// empty.
pub(crate) fn servers(addresses: &[String], field: &str) -> Result<Vec<Server>, BackendError> {
    if addresses.is_empty() {
        return Err(BackendError::Config(format!(
            "endpoints.{field} is empty: this backend needs at least one Redis server there"
        )));
    }
    addresses.iter().map(|a| Server::parse(a, field)).collect()
}
