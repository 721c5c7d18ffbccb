//! One session on the primary, and how it is found.
//!
//! Clients get every address of the pair and use the first that is not read-only, as an
//! application behind a failover would; after a promotion the next connection lands on the new
//! primary. Each session sets its `wait_timeout` (how long the server keeps a silent session,
//! and its locks) and names its client in a connection attribute (`program_name`), which the
//! observer reads back from `performance_schema.session_connect_attrs`.
//!
//! Unix sockets are never used (the driver would switch to one for a loopback address): every
//! session goes over TCP, through the links the chaos faults act on.

use crate::knobs::MariadbKnobs;
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts, OptsBuilder};
use std::sync::Arc;

/// Opens sessions on the pair's servers.
#[derive(Clone, Debug)]
pub(crate) struct Connector {
    /// Every server, `host:port`.
    pub addresses: Vec<String>,
    knobs: Arc<MariadbKnobs>,
    /// The connection attribute `program_name` (the observer's key).
    name: String,
}

impl Connector {
    pub fn new(addresses: &[String], knobs: Arc<MariadbKnobs>, name: &str) -> Connector {
        Connector {
            addresses: addresses.to_vec(),
            knobs,
            name: name.to_string(),
        }
    }

    /// The same servers, sessions named `name`.
    pub fn renamed(&self, name: &str) -> Connector {
        Connector {
            name: name.to_string(),
            ..self.clone()
        }
    }

    fn opts(&self, address: &str) -> Result<Opts, String> {
        let (host, port) = address
            .rsplit_once(':')
            .and_then(|(h, p)| Some((h.trim_matches(['[', ']']), p.parse::<u16>().ok()?)))
            .ok_or_else(|| format!("`{address}` is not host:port"))?;
        let wait = self.knobs.wait_timeout.as_secs();
        Ok(OptsBuilder::default()
            .ip_or_hostname(host)
            .tcp_port(port)
            .user(Some(crate::server::USER))
            .db_name(Some(crate::server::DATABASE))
            .prefer_socket(false)
            .tcp_nodelay(true)
            .max_allowed_packet(Some(16 << 20))
            .wait_timeout(Some(wait as usize))
            .init(vec![format!("SET SESSION wait_timeout = {wait}")])
            .connect_attribute("program_name", self.name.clone())
            .into())
    }

    /// A session on `address`, whatever its role.
    pub async fn connect_to(&self, address: &str) -> Result<Conn, String> {
        let opts = self.opts(address)?;
        match tokio::time::timeout(self.knobs.connect_timeout, Conn::new(opts)).await {
            Err(_) => Err(format!(
                "{address}: no login within {:?}",
                self.knobs.connect_timeout
            )),
            Ok(Err(e)) => Err(format!("{address}: {e}")),
            Ok(Ok(conn)) => Ok(conn),
        }
    }

    /// A session on the primary: each address in turn, the first that is not read-only.
    pub async fn connect(&self) -> Result<Conn, String> {
        let mut why = Vec::new();
        for address in &self.addresses {
            let mut conn = match self.connect_to(address).await {
                Ok(c) => c,
                Err(e) => {
                    why.push(e);
                    continue;
                }
            };
            let asked = tokio::time::timeout(
                self.knobs.response_timeout,
                conn.query_first::<u8, _>("SELECT @@read_only"),
            )
            .await;
            match asked {
                Ok(Ok(Some(0))) => return Ok(conn),
                Ok(Ok(_)) => why.push(format!("{address}: read-only (a replica)")),
                Ok(Err(e)) => why.push(format!("{address}: {e}")),
                Err(_) => why.push(format!("{address}: no reply to SELECT @@read_only")),
            }
        }
        Err(format!("no primary: {}", why.join("; ")))
    }
}
