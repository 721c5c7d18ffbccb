//! MariaDB as a [`System`]: a primary (`maria1`) and a replica of it (`maria2`), each its own
//! host, in one endpoints list (`mariadb = [...]`).
//!
//! Why this shape: named locks live in one server's memory and are not replicated, so what
//! lockbench measures is one primary; the replica is there for what happens to those locks
//! when it is promoted (the `promote` fault). Clients get both addresses and use the one that
//! is not read-only, as an application behind a failover would. Roles are not fixed: after a
//! promotion `maria2` is the primary and `maria1`, restarted, its replica (`start-mariadb.sh`),
//! so the leader is whoever is not read-only, asked of each member.

use crate::server;
use lockbench_core::knobs::{KnobSchema, Knobs};
use lockbench_core::launch::{Launch, Site};
use lockbench_core::{Exchange, Group, Leadership, Probe, ServerSpec, System};

/// The pair's group: one endpoints list (`mariadb = [...]`), every member, primary or not.
pub const MARIADB: Group = Group::listed(crate::MARIADB);

/// The MariaDB system.
#[derive(Clone, Copy, Debug, Default)]
pub struct Mariadb;

const fn member(name: &'static str, id: u8, port: u16, octet: u8) -> ServerSpec {
    ServerSpec {
        name,
        system: &Mariadb,
        group: MARIADB,
        id,
        client_port: port,
        peer_ports: &[],
        octet,
    }
}

/// The managed pair (loopback ports 13306/13307; hosts `.70` and `.71`). `maria1` starts as
/// the primary, `maria2` as its replica.
const SERVERS: [ServerSpec; 2] = [
    member("maria1", 1, 13306, 70),
    member("maria2", 2, 13307, 71),
];

/// Stops replication, forgets the primary, and takes writes.
const PROMOTE_SQL: &str = "STOP SLAVE; RESET SLAVE ALL; SET GLOBAL read_only = 0";

impl System for Mariadb {
    fn name(&self) -> &'static str {
        "mariadb"
    }

    fn servers(&self) -> &'static [ServerSpec] {
        &SERVERS
    }

    /// `mariadb-get-lock`, `mariadb-try-lock` (`recipes.rs`).
    fn recipes(&self) -> &'static [lockbench_core::Recipe] {
        crate::recipes::RECIPES
    }

    /// `[mariadb]`: the recipes' knobs (`knobs.rs`).
    fn knobs(&self) -> &'static [KnobSchema] {
        crate::knobs::KNOBS
    }

    /// Each run its own lock names (`knobs.rs`).
    fn separate_keys(&self, knobs: &mut Knobs, id: &str) -> Result<(), String> {
        crate::knobs::separate_keys(knobs, id)
    }

    fn standard_ports(&self) -> &'static [u16] {
        &[3306]
    }

    /// The primary is the member that is not read-only.
    fn leadership(&self, _group: Group) -> Leadership {
        Leadership::Elected
    }

    fn leader_check(&self, endpoint: &str) -> Option<Exchange> {
        Some(server::ask(endpoint, server::HEALTH_SQL))
    }

    /// `read_only` is off.
    fn is_leader(&self, reply: &[u8]) -> bool {
        crate::probe::first_value(reply).as_deref() == Some("0")
    }

    /// Stops the replica's replication, forgets its primary and turns `read_only` off.
    fn promote(&self, endpoint: &str) -> Option<Exchange> {
        Some(server::ask(endpoint, PROMOTE_SQL))
    }

    /// Every statement of the promotion succeeded, or the server's error.
    fn promoted(&self, reply: &[u8]) -> Result<(), String> {
        crate::probe::rows(reply).map(|_| ())
    }

    /// A restart keeps the data directory; named locks, which live in memory, are gone
    /// either way.
    fn restarts_empty(&self) -> bool {
        false
    }

    fn depends_on(&self, spec: &ServerSpec) -> Vec<&'static str> {
        server::depends_on(spec)
    }

    fn launch(&self, spec: &ServerSpec, site: &Site) -> Launch {
        server::launch(spec, site)
    }

    /// TLS only, client certificates, passwords, least privilege (`secure.rs`).
    fn secured(&self, _spec: &ServerSpec) -> bool {
        true
    }

    /// Only lockbench's account (and the administrator and the replication account) may log
    /// in.
    fn secure_user(&self) -> bool {
        true
    }

    /// TLS (a CA, a client certificate, the name to verify) and a user with a password
    /// (`session.rs`). The shape only: the files and the password are read when a backend is
    /// made.
    fn check_connection(&self, group: &str, c: &lockbench_core::Connection) -> Result<(), String> {
        crate::session::check(group, c)
    }

    /// `secure_probe.rs`: TLS after the greeting, then the administrator's login.
    fn secure_ask<'a>(
        &'a self,
        ex: &'a Exchange,
        tls: std::sync::Arc<rustls::ClientConfig>,
        admin_password: &'a secrecy::SecretString,
    ) -> Option<lockbench_core::system::Asked<'a>> {
        Some(Box::pin(crate::secure_probe::ask(ex, tls, admin_password)))
    }

    fn needs(&self) -> &'static [&'static str] {
        &server::NEEDS
    }

    fn health_check(&self, endpoint: &str) -> Exchange {
        server::ask(endpoint, server::HEALTH_SQL)
    }

    /// The primary (not read-only), or a read-only replica whose replication runs (one that
    /// lost its primary answers, but is no replica to fail over to).
    fn health(&self, reply: &[u8]) -> Probe {
        let Ok(rows) = crate::probe::rows(reply) else {
            return Probe::default();
        };
        let row = rows.into_iter().next().unwrap_or_default();
        match (
            row.first().cloned().flatten().as_deref(),
            row.get(1).cloned().flatten().as_deref(),
        ) {
            (Some("0"), _) => Probe {
                healthy: true,
                role: Some("primary".into()),
            },
            (Some("1"), Some("ON")) => Probe {
                healthy: true,
                role: Some("replica".into()),
            },
            (Some("1"), _) => Probe {
                healthy: false,
                role: Some("replica (not replicating)".into()),
            },
            _ => Probe::default(),
        }
    }

    fn version_check(&self, endpoint: &str) -> Option<Exchange> {
        Some(server::ask(endpoint, "SELECT VERSION()"))
    }

    /// `10.11.19` of `10.11.19-MariaDB-0+deb12u1-log`.
    fn version(&self, reply: &[u8]) -> Option<String> {
        let v = crate::probe::first_value(reply)?;
        v.split('-').next().map(str::to_string)
    }

    fn official_image(&self) -> &'static str {
        "mariadb:10.11"
    }

    fn compose_healthcheck(&self, port: u16) -> Vec<String> {
        server::compose_healthcheck(port)
    }

    /// `mariadb` over TLS as lockbench's user (`server.rs`).
    fn compose_secure_healthcheck(&self, port: u16, files: &str, user: &str) -> Vec<String> {
        server::compose_secure_healthcheck(port, files, user)
    }
}
