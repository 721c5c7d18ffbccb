//! One session on the primary, and how it is found.
//!
//! Clients get every address of the pair and use the first that is not read-only, as an
//! application behind a failover would; after a promotion the next connection lands on the new
//! primary. Each session sets, in one statement at login, its `wait_timeout` (how long the
//! server keeps a silent session, and its locks) and the user variable `@lockbench_client`
//! naming its client, which the observer reads back from
//! `performance_schema.user_variables_by_thread`. (Not a connection attribute: the driver's
//! attributes do not reach `session_connect_attrs` over TLS.)
//!
//! Unix sockets are never used (the driver would switch to one for a loopback address): every
//! session goes over TCP, through the links the chaos faults act on.
//!
//! On a secure cluster the group's connection settings give TLS (the CA, the client
//! certificate and key, the name to verify, read by the driver's rustls with ring) and the
//! user with its password, read once when the backend is made; no error shows the password.

use crate::knobs::MariadbKnobs;
use lockbench_core::Connection;
use lockbench_core::traits::BackendError;
use mysql_async::prelude::Queryable;
use mysql_async::{ClientIdentity, Conn, Opts, OptsBuilder, SslOpts};
use secrecy::{ExposeSecret, SecretString};
use std::sync::Arc;

/// The settings the clients honour, for [`System::check_connection`](lockbench_core::System::check_connection):
/// TLS and a user with a password; the shape only.
pub(crate) fn check(group: &str, c: &Connection) -> Result<(), String> {
    let honoured = ["tls", "user", "password_env", "password_file"];
    c.refuse(group, "mariadb", &honoured)?;
    c.require_user_with_password(group, "MariaDB authenticates an account by name")
}

/// How a group's clients log in: TLS, the user and its password.
#[derive(Clone, Default)]
pub(crate) struct Login {
    tls: Option<SslOpts>,
    /// The CA file, for errors.
    ca: Option<String>,
    user: Option<String>,
    password: Option<SecretString>,
    /// Where the password came from (`mariadb.password_env` ...), for errors.
    source: Option<String>,
}

impl std::fmt::Debug for Login {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Login")
            .field("tls", &self.tls.is_some())
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "[redacted]"))
            .finish()
    }
}

impl Login {
    /// From the `mariadb` group's connection settings.
    pub fn new(group: &str, c: &Connection) -> Result<Login, BackendError> {
        check(group, c).map_err(BackendError::Config)?;
        if c.tls.is_some() {
            // The driver's rustls takes the process's provider: ring, as every other client.
            lockbench_core::crypto::install_ring();
        }
        let tls = c.tls.as_ref().map(|t| {
            let mut o = SslOpts::default().with_disable_built_in_roots(t.ca.is_some());
            if let Some(ca) = &t.ca {
                o = o.with_root_certs(vec![ca.clone().into()]);
            }
            if let (Some(cert), Some(key)) = (&t.cert, &t.key) {
                o = o.with_client_identity(Some(ClientIdentity::new(
                    cert.clone().into(),
                    key.clone().into(),
                )));
            }
            if let Some(name) = &t.server_name {
                o = o.with_danger_tls_hostname_override(Some(name.clone()));
            }
            o
        });
        let credentials = c.credentials(group).map_err(BackendError::Config)?;
        let source = c.password_setting(group);
        Ok(Login {
            tls,
            ca: c
                .tls
                .as_ref()
                .and_then(|t| t.ca.as_ref())
                .map(|p| p.display().to_string()),
            user: credentials.as_ref().map(|(u, _)| u.to_string()),
            password: credentials.map(|(_, p)| p),
            source,
        })
    }

    /// What a failed login means, and what to change (never the password).
    fn explain(&self, address: &str, e: &mysql_async::Error) -> String {
        let text = e.to_string();
        let user = self.user.as_deref().unwrap_or(crate::server::USER);
        let fix = if text.contains("server does not have this capability") {
            "the server does not speak TLS: remove `mariadb.tls`".to_string()
        } else if text.contains("insecure transport") {
            "the server takes only TLS: set `mariadb.tls` (its CA, a client certificate and key)"
                .to_string()
        } else if text.contains("UnknownIssuer") || text.contains("unknown issuer") {
            format!(
                "the server's certificate is not signed by the CA of `mariadb.tls.ca` ({}): \
                 unknown authority",
                self.ca.as_deref().unwrap_or("the system's roots")
            )
        } else if let mysql_async::Error::Server(s) = e
            && s.code == 1049
        {
            format!(
                "the server has no database `{}`: create it and the fencing sequence \
                 (docs/secure-clusters.md, \"MariaDB: the least privilege lockbench's user \
                 needs\")",
                crate::server::DATABASE
            )
        } else if let mysql_async::Error::Server(s) = e
            && s.code == 1045
            && self.tls.is_none()
        {
            format!(
                "access denied for `{user}` without TLS: a server that takes only TLS refuses \
                 every plaintext login, so set `mariadb.tls` (its CA, a client certificate and \
                 key); else check the password (from `{}`)",
                self.source.as_deref().unwrap_or("no password set")
            )
        } else if let mysql_async::Error::Server(s) = e
            && s.code == 1045
        {
            format!(
                "access denied for `{user}`: check its password (from `{}`) and, where the account requires one, the client certificate (`mariadb.tls.cert`)",
                self.source.as_deref().unwrap_or("no password set")
            )
        } else {
            return format!("{address}: {text}");
        };
        format!("{address}: {fix} ({text})")
    }
}

/// Opens sessions on the pair's servers.
#[derive(Clone, Debug)]
pub(crate) struct Connector {
    /// Every server, `host:port`.
    pub addresses: Vec<String>,
    knobs: Arc<MariadbKnobs>,
    login: Login,
    /// What `@lockbench_client` says (the observer's key).
    name: String,
}

impl Connector {
    pub fn new(
        addresses: &[String],
        knobs: Arc<MariadbKnobs>,
        login: Login,
        name: &str,
    ) -> Connector {
        Connector {
            addresses: addresses.to_vec(),
            knobs,
            login,
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
        let user = self.login.user.as_deref().unwrap_or(crate::server::USER);
        Ok(OptsBuilder::default()
            .ip_or_hostname(host)
            .tcp_port(port)
            .user(Some(user))
            .pass(self.login.password.as_ref().map(|p| p.expose_secret()))
            .ssl_opts(self.login.tls.clone())
            .db_name(Some(crate::server::DATABASE))
            .prefer_socket(false)
            .tcp_nodelay(true)
            .max_allowed_packet(Some(16 << 20))
            .wait_timeout(Some(wait as usize))
            .init(vec![format!(
                "SET SESSION wait_timeout = {wait}, @lockbench_client = '{}'",
                self.name
            )])
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
            Ok(Err(e)) => Err(self.login.explain(address, &e)),
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
