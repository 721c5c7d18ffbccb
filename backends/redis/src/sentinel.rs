//! Finding the primary through Redis Sentinel, for `redis-sentinel`.
//!
//! `redis-sentinel` is `redis-setnx` on whichever node the Sentinels currently name as the
//! primary of [`SENTINEL_MASTER_NAME`]. A client asks when it connects and again whenever its
//! connection broke (the primary died or was demoted), so after a failover it finds the
//! promoted replica by itself, like the Sentinel-aware clients of the Redis documentation.
//! What it inherits from asynchronous replication is the point of the `redis-failover` fault:
//! a grant the old primary made just before dying may never have reached the replica, which
//! then grants the same lock again.
//!
//! The cluster file's `[sentinel]` settings (TLS, the ACL user) are used for both
//! hops: asking a Sentinel, and connecting to the primary it names, as a secure deployment
//! runs its Sentinels and its servers with the same certificates and users.

use crate::connect::Server;
use lockbench_core::SENTINEL_MASTER_NAME;
use lockbench_core::traits::BackendError;
use redis::AsyncConnectionConfig;
use std::time::Duration;

/// How long one Sentinel may take to answer.
const ASK_TIMEOUT: Duration = Duration::from_millis(500);

/// The Sentinels of `endpoints.sentinel`.
#[derive(Clone, Debug)]
pub(crate) struct Sentinels {
    servers: Vec<Server>,
    config: AsyncConnectionConfig,
    /// The `[sentinel]` settings, which the primary they name is connected with too.
    connection: lockbench_core::Connection,
}

impl Sentinels {
    /// The Sentinels at `addresses` (`endpoints.sentinel`).
    pub(crate) fn new(endpoints: &lockbench_core::Endpoints) -> Result<Sentinels, BackendError> {
        Ok(Sentinels {
            servers: crate::connect::servers(endpoints, crate::SENTINEL)?,
            config: crate::connect::config(ASK_TIMEOUT),
            connection: endpoints.connection(crate::SENTINEL).clone(),
        })
    }

    /// Their addresses, for results.
    pub(crate) fn addresses(&self) -> String {
        self.servers
            .iter()
            .map(|s| s.address.as_str())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The current primary, as the first Sentinel that answers names it.
    pub(crate) async fn primary(&self) -> Result<Server, BackendError> {
        let mut why = Vec::new();
        for s in &self.servers {
            let ask = async {
                let mut conn = s.connect(&self.config).await?;
                redis::cmd("SENTINEL")
                    .arg("get-master-addr-by-name")
                    .arg(SENTINEL_MASTER_NAME)
                    .query_async::<Option<(String, String)>>(&mut conn)
                    .await
            };
            match tokio::time::timeout(ASK_TIMEOUT * 2, ask).await {
                Ok(Ok(Some((host, port)))) => {
                    return Server::parse(
                        &format!("{host}:{port}"),
                        crate::SENTINEL,
                        &self.connection,
                    );
                }
                Ok(Ok(None)) => why.push(format!("{}: knows no {SENTINEL_MASTER_NAME}", s.address)),
                Ok(Err(e)) => why.push(format!(
                    "{}: {}",
                    s.address,
                    crate::tls_errors::explain(&e, &s.security)
                )),
                Err(_) => why.push(format!("{}: no answer within {ASK_TIMEOUT:?}", s.address)),
            }
        }
        Err(BackendError::Unreachable {
            endpoint: self.addresses(),
            reason: format!("no Sentinel named the primary: {}", why.join("; ")),
        })
    }
}
