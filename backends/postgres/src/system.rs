//! PostgreSQL as a [`System`]: a primary (`pg1`) and a streaming replica of it (`pg2`), each
//! its own host, in one endpoints list (`postgres = [...]`), and the rules lockbench applies
//! to them.
//!
//! Why this shape: advisory locks live in the primary's memory and are not replicated, so
//! what lockbench measures is one primary; the replica is there for what happens to those
//! locks when it is promoted (the `promote` fault). Clients get both addresses and find the
//! primary themselves (`target_session_attrs=read-write`), as an application behind a
//! failover would. Roles are not fixed: after a promotion `pg2` is the primary and `pg1`,
//! restarted, its replica (`start-postgres.sh` rejoins a former primary as the replica of
//! the one serving), so the leader is whoever is not in recovery, asked of each member.

use crate::server;
use lockbench_core::knobs::{KnobSchema, Knobs};
use lockbench_core::launch::{Launch, Site};
use lockbench_core::{Exchange, Group, Leadership, Probe, ServerSpec, System};

/// The pair's group: one endpoints list (`postgres = [...]`), every member, primary or not.
pub const POSTGRES: Group = Group::listed(crate::POSTGRES);

/// The PostgreSQL system.
#[derive(Clone, Copy, Debug, Default)]
pub struct Postgres;

const fn member(name: &'static str, id: u8, port: u16, octet: u8) -> ServerSpec {
    ServerSpec {
        name,
        system: &Postgres,
        group: POSTGRES,
        id,
        client_port: port,
        peer_ports: &[],
        octet,
    }
}

/// The managed pair (loopback ports 15432/15433; hosts `.50` and `.51`). `pg1` starts as the
/// primary, `pg2` as its replica.
const SERVERS: [ServerSpec; 2] = [member("pg1", 1, 15432, 50), member("pg2", 2, 15433, 51)];

/// Whether the server is in recovery (a replica) and its WAL receiver's state: the health
/// check and the leader check.
const ROLE_SQL: &str = "SELECT pg_is_in_recovery(), (SELECT status FROM pg_stat_wal_receiver)";

impl System for Postgres {
    /// A statement that took over a second (`log_min_duration_statement` in the servers'
    /// configuration): a commit or a sequence waiting on the WAL.
    fn disk_signs(&self) -> &'static [lockbench_core::LogSign] {
        &[lockbench_core::LogSign {
            what: "statement over 1 s",
            line_has: "LOG:  duration: ",
        }]
    }

    fn name(&self) -> &'static str {
        "postgres"
    }

    fn servers(&self) -> &'static [ServerSpec] {
        &SERVERS
    }

    /// TLS (a CA, a client certificate, the name to verify) and a user with a password
    /// (`tls.rs`). The shape only: the files and the password are read when a backend is made.
    fn check_connection(&self, group: &str, c: &lockbench_core::Connection) -> Result<(), String> {
        crate::tls::check(group, c)
    }

    /// `pg-advisory`, `pg-try-advisory`, `pg-advisory-xact` (`recipes.rs`).
    fn recipes(&self) -> &'static [lockbench_core::Recipe] {
        crate::recipes::RECIPES
    }

    /// `[postgres]`: the recipes' connection settings and knobs (`knobs.rs`).
    fn knobs(&self) -> &'static [KnobSchema] {
        crate::KNOBS
    }

    /// Each run its own lock namespace (`knobs.rs`).
    fn separate_keys(&self, knobs: &mut Knobs, id: &str) -> Result<(), String> {
        crate::separate_keys(knobs, id)
    }

    fn standard_ports(&self) -> &'static [u16] {
        &[5432]
    }

    /// The primary is the member not in recovery.
    fn leadership(&self, _group: Group) -> Leadership {
        Leadership::Elected
    }

    fn leader_check(&self, endpoint: &str) -> Option<Exchange> {
        Some(server::ask(endpoint, ROLE_SQL))
    }

    /// `pg_is_in_recovery()` is false.
    fn is_leader(&self, reply: &[u8]) -> bool {
        crate::probe::first_value(reply).as_deref() == Some("f")
    }

    /// `SELECT pg_promote(false)`: asks a replica to leave recovery (`false`: without waiting;
    /// the fault then waits for the member to report it is no longer in recovery).
    fn promote(&self, endpoint: &str) -> Option<Exchange> {
        Some(server::ask(endpoint, "SELECT pg_promote(false)"))
    }

    /// `pg_promote` answered `t`, or the server's error.
    fn promoted(&self, reply: &[u8]) -> Result<(), String> {
        match crate::probe::rows(reply)?.first().and_then(|r| r.first()) {
            Some(Some(t)) if t == "t" => Ok(()),
            other => Err(format!("pg_promote answered {other:?}")),
        }
    }

    /// A restart keeps the data directory (crash recovery from the WAL); advisory locks, which
    /// live in memory, are gone either way.
    fn restarts_empty(&self) -> bool {
        false
    }

    fn depends_on(&self, spec: &ServerSpec) -> Vec<&'static str> {
        server::depends_on(spec)
    }

    fn launch(&self, spec: &ServerSpec, site: &Site) -> Launch {
        server::launch(spec, site)
    }

    /// TLS only, SCRAM, client certificates (`secure.rs`).
    fn secured(&self, _spec: &ServerSpec) -> bool {
        true
    }

    /// Only lockbench's role (and the replication role) may log in.
    fn secure_user(&self) -> bool {
        true
    }

    /// `secure_probe.rs`: `SSLRequest`, TLS, SCRAM as `postgres`, then the probe.
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
        server::ask(endpoint, ROLE_SQL)
    }

    /// Answers in the `lockbench` database as the primary, or as a replica that streams from
    /// it (a replica that lost its primary answers, but is no replica to fail over to).
    fn health(&self, reply: &[u8]) -> Probe {
        let Ok(rows) = crate::probe::rows(reply) else {
            return Probe::default();
        };
        let row = rows.into_iter().next().unwrap_or_default();
        match (
            row.first().cloned().flatten().as_deref(),
            row.get(1).cloned().flatten().as_deref(),
        ) {
            (Some("f"), _) => Probe {
                healthy: true,
                role: Some("primary".into()),
            },
            (Some("t"), Some("streaming")) => Probe {
                healthy: true,
                role: Some("replica".into()),
            },
            (Some("t"), _) => Probe {
                healthy: false,
                role: Some("replica (not streaming)".into()),
            },
            _ => Probe::default(),
        }
    }

    fn version_check(&self, endpoint: &str) -> Option<Exchange> {
        Some(server::ask(endpoint, "SHOW server_version"))
    }

    /// `15.18` of `15.18 (Debian 15.18-0+deb12u1)`.
    fn version(&self, reply: &[u8]) -> Option<String> {
        let v = crate::probe::first_value(reply)?;
        v.split_whitespace().next().map(str::to_string)
    }

    fn official_image(&self) -> &'static str {
        "postgres:15"
    }

    fn compose_healthcheck(&self, port: u16) -> Vec<String> {
        server::compose_healthcheck(port)
    }

    /// `psql` over TLS as lockbench's user (`server.rs`).
    fn compose_secure_healthcheck(&self, port: u16, files: &str, user: &str) -> Vec<String> {
        server::compose_secure_healthcheck(port, files, user)
    }
}
