//! Redis as two [`System`]s: Redis servers (the standalone one, the five Redlock servers and
//! the failover pair) and the Sentinels watching the pair. Both are this crate's: the pair and
//! its Sentinels only make sense together (a Sentinel monitors `fo1` from its first second,
//! `fo2` starts as `fo1`'s replica).

use crate::server;
use lockbench_core::knobs::{KnobSchema, Knobs};
use lockbench_core::launch::{Launch, Site};
use lockbench_core::{
    Announced, ClockJump, Exchange, Group, Leadership, Pending, Probe, SENTINEL_MASTER_NAME,
    ServerAccess, ServerSpec, System, SystemFault,
};

/// The standalone server's group (`redis = [...]`: `redis-setnx`, `redis-pubsub`).
pub const REDIS: Group = Group::listed(crate::REDIS);
/// The independent Redlock servers' group (`redlock = [...]`).
pub const REDLOCK: Group = Group::listed(crate::REDLOCK);
/// The failover pair: a primary and its replica, in no endpoints list (clients ask the
/// Sentinels which one is the primary).
pub const FAILOVER: Group = Group::through("failover", crate::SENTINEL);
/// The three Sentinels watching the failover pair (`sentinel = [...]`).
pub const SENTINEL: Group = Group::listed(crate::SENTINEL);

/// Redis servers: standalone, Redlock and the failover pair.
#[derive(Clone, Copy, Debug, Default)]
pub struct Redis;

/// Redis Sentinels over the failover pair.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sentinel;

const fn redis(name: &'static str, group: Group, id: u8, port: u16, octet: u8) -> ServerSpec {
    ServerSpec {
        name,
        system: &Redis,
        group,
        id,
        client_port: port,
        peer_ports: &[],
        octet,
    }
}

const fn sentinel(name: &'static str, id: u8, port: u16) -> ServerSpec {
    ServerSpec {
        name,
        system: &Sentinel,
        group: SENTINEL,
        id,
        client_port: port,
        peer_ports: &[],
        octet: 44 + id,
    }
}

/// The managed Redis servers, in start order (`fo2` starts as `fo1`'s replica).
const REDIS_SERVERS: [ServerSpec; 8] = [
    redis("redis", REDIS, 1, 16379, 30),
    redis("redlock1", REDLOCK, 1, 16380, 31),
    redis("redlock2", REDLOCK, 2, 16381, 32),
    redis("redlock3", REDLOCK, 3, 16382, 33),
    redis("redlock4", REDLOCK, 4, 16383, 34),
    redis("redlock5", REDLOCK, 5, 16384, 35),
    redis("fo1", FAILOVER, 1, 16390, 40),
    redis("fo2", FAILOVER, 2, 16391, 41),
];

/// The Sentinels.
const SENTINELS: [ServerSpec; 3] = [
    sentinel("sen1", 1, 26390),
    sentinel("sen2", 2, 26391),
    sentinel("sen3", 3, 26392),
];

/// The failover pair's initial primary (`fo1`).
pub fn initial_primary() -> &'static ServerSpec {
    &REDIS_SERVERS[6]
}

fn cmd(shell: String) -> Vec<String> {
    vec!["CMD".into(), "bash".into(), "-c".into(), shell]
}

/// `redis-cli` to a secure server on `port` inside its container: TLS with the client
/// certificate of `files`, logged in as `user` with the password file's contents, handed over
/// in `REDISCLI_AUTH` (not on the command line, which `ps` shows).
fn secure_cli(port: u16, files: &str, user: &str) -> String {
    format!(
        "REDISCLI_AUTH=\"$(cat {files}/password)\" redis-cli --tls --cacert {files}/ca.pem \
         --cert {files}/client.pem --key {files}/client.key --user {user} -p {port}"
    )
}

/// The [`System`] methods of a server that speaks Redis's protocol on a secure cluster (a
/// Redis server, a Sentinel): the connection settings lockbench's Redis client takes
/// ([`check_connection`]), secured with lockbench's ACL user, logged in to with `AUTH`.
macro_rules! secured_like_redis {
    () => {
        /// TLS (a CA, a client certificate) and an ACL user (`crate::connect`);
        /// `check_connection` (this module's) says what is refused.
        fn check_connection(
            &self,
            group: &str,
            connection: &lockbench_core::Connection,
        ) -> Result<(), String> {
            check_connection(group, connection)
        }

        fn secured(&self, _spec: &ServerSpec) -> bool {
            true
        }

        fn secure_user(&self) -> bool {
            true
        }

        fn login(&self, endpoint: &str, user: &str, password: &str) -> Option<Exchange> {
            Some(Exchange {
                addr: endpoint.to_string(),
                request: crate::secure::auth_request(user, password),
                complete: |r| r.ends_with(b"\r\n"),
            })
        }

        fn logged_in(&self, reply: &[u8]) -> bool {
            reply.starts_with(b"+OK")
        }
    };
}

impl System for Redis {
    fn name(&self) -> &'static str {
        "redis"
    }

    fn servers(&self) -> &'static [ServerSpec] {
        &REDIS_SERVERS
    }

    /// Every Redis recipe, the failover pair's `redis-sentinel` included (the pair are Redis
    /// servers; the Sentinels only name its primary).
    fn recipes(&self) -> &'static [lockbench_core::Recipe] {
        crate::recipes::RECIPES
    }

    fn elections(&self) -> &'static [lockbench_core::ElectionRecipe] {
        crate::elections::ELECTIONS
    }

    /// The standalone server's and the Redlock servers' tables (the Sentinels have none).
    fn knobs(&self) -> &'static [KnobSchema] {
        crate::KNOBS
    }

    fn separate_keys(&self, knobs: &mut Knobs, id: &str) -> Result<(), String> {
        crate::separate_keys(knobs, id)
    }

    fn standard_ports(&self) -> &'static [u16] {
        &[6379]
    }

    fn restarts_empty(&self) -> bool {
        true
    }

    /// The standalone server leads itself, the failover pair's primary is whom the Sentinels
    /// name, the Redlock servers are independent.
    fn leadership(&self, group: Group) -> Leadership {
        match group {
            REDIS => Leadership::Sole,
            FAILOVER => Leadership::Watched,
            _ => Leadership::None("independent Redis servers have no leader"),
        }
    }

    /// The failover pair's primary: whom its Sentinels name.
    fn watched_leader<'a>(
        &'a self,
        members: &'a [&'static ServerSpec],
        access: &'a dyn ServerAccess,
    ) -> Option<Pending<'a, Result<String, String>>> {
        let pair = members.first().is_some_and(|s| s.group == FAILOVER);
        pair.then(|| {
            Box::pin(crate::failover_probe::primary(access, members))
                as Pending<'a, Result<String, String>>
        })
    }

    /// `redis-failover`, on the failover pair.
    fn faults(&self) -> &'static [&'static dyn SystemFault] {
        &[&crate::failover_fault::SentinelFailover]
    }

    /// The TTL emulation: every key's remaining TTL shortened by the jump.
    fn clock_jump(&self) -> Option<&'static dyn ClockJump> {
        Some(&crate::clock_jump::TtlJump)
    }

    fn launch(&self, spec: &ServerSpec, site: &Site) -> Launch {
        server::redis(spec, site)
    }

    fn needs(&self) -> &'static [&'static str] {
        &["redis-server"]
    }

    fn health_check(&self, endpoint: &str) -> Exchange {
        server::ping(endpoint)
    }

    /// It answers `PING`.
    fn health(&self, reply: &[u8]) -> Probe {
        Probe {
            healthy: server::pong(reply),
            role: None,
        }
    }

    // Every one is secured: the standalone and Redlock servers, and the failover pair
    // (replicating over TLS as its own user, admitting the Sentinels' user; `crate::secure`).
    secured_like_redis!();

    /// The managed secure cluster's administrator, whom the faults' scripts and `REPLICAOF`
    /// are sent as ([`crate::secure::ADMIN_USER`]).
    fn admin_user(&self) -> Option<&'static str> {
        Some(crate::secure::ADMIN_USER)
    }

    fn version_check(&self, endpoint: &str) -> Option<Exchange> {
        Some(server::info_server(endpoint))
    }

    fn version(&self, reply: &[u8]) -> Option<String> {
        server::version(reply)
    }

    fn depends_on(&self, spec: &ServerSpec) -> Vec<&'static str> {
        let primary = initial_primary();
        if spec.group == FAILOVER && spec.name != primary.name {
            vec![primary.name]
        } else {
            Vec::new()
        }
    }

    fn official_image(&self) -> &'static str {
        "redis:7.0.15"
    }

    /// The failover pair's clients ask its Sentinels for the primary, `fo1` at first.
    fn announced(&self, group: Group) -> Option<Announced> {
        (group == FAILOVER).then(|| Announced {
            by: "their Sentinels",
            member: "the primary",
            first: initial_primary(),
        })
    }

    fn compose_healthcheck(&self, port: u16) -> Vec<String> {
        cmd(format!("redis-cli -p {port} ping | grep -q PONG"))
    }

    fn compose_secure_healthcheck(&self, port: u16, files: &str, user: &str) -> Vec<String> {
        cmd(format!(
            "{} ping | grep -q PONG",
            secure_cli(port, files, user)
        ))
    }
}

impl System for Sentinel {
    fn name(&self) -> &'static str {
        "sentinel"
    }

    fn servers(&self) -> &'static [ServerSpec] {
        &SENTINELS
    }

    fn standard_ports(&self) -> &'static [u16] {
        &[26379]
    }

    fn launch(&self, spec: &ServerSpec, site: &Site) -> Launch {
        server::sentinel(spec, site)
    }

    fn needs(&self) -> &'static [&'static str] {
        &["redis-sentinel"]
    }

    fn leadership(&self, _group: Group) -> Leadership {
        Leadership::None("Sentinels have no leader (the failover pair has a primary)")
    }

    // The same settings as Redis servers take (`[sentinel]` in a cluster file: the Sentinels
    // and the primary they name are both reached with them, `crate::sentinel`); every Sentinel
    // is secured, and lockbench's user may ask it for the primary (`crate::secure`).
    secured_like_redis!();

    fn health_check(&self, endpoint: &str) -> Exchange {
        server::primary_query(endpoint)
    }

    /// It answers and names a primary.
    fn health(&self, reply: &[u8]) -> Probe {
        Probe {
            healthy: server::primary(reply).is_some(),
            role: None,
        }
    }

    /// The pair: a Sentinel monitors the primary from its first second.
    fn depends_on(&self, _spec: &ServerSpec) -> Vec<&'static str> {
        let pair = REDIS_SERVERS.iter().filter(|s| s.group == FAILOVER);
        pair.map(|s| s.name).collect()
    }

    fn official_image(&self) -> &'static str {
        "redis:7.0.15"
    }

    fn compose_healthcheck(&self, port: u16) -> Vec<String> {
        cmd(format!(
            "redis-cli -p {port} sentinel get-master-addr-by-name {SENTINEL_MASTER_NAME} | grep -q ."
        ))
    }

    /// The primary's address (an error reply, `NOAUTH`, is not one).
    fn compose_secure_healthcheck(&self, port: u16, files: &str, user: &str) -> Vec<String> {
        cmd(format!(
            "{} sentinel get-master-addr-by-name {SENTINEL_MASTER_NAME} | grep -qE '^[0-9]'",
            secure_cli(port, files, user)
        ))
    }
}

/// What lockbench's Redis client takes of a group's connection settings
/// (`crate::connect`): TLS (a CA, a client certificate) and an ACL user with its password. Not
/// `tls.server_name`: redis-rs verifies the certificate against the address's host, so the
/// address must carry a name (or IP) the certificate names.
fn check_connection(group: &str, connection: &lockbench_core::Connection) -> Result<(), String> {
    connection.refuse(
        group,
        "Redis",
        &["tls", "user", "password_env", "password_file"],
    )?;
    if connection
        .tls
        .as_ref()
        .is_some_and(|t| t.server_name.is_some())
    {
        return Err(format!(
            "{group}.tls.server_name: lockbench's Redis client (redis-rs) verifies the \
             certificate against the address's host; write the address with a name or IP \
             address the certificate carries instead"
        ));
    }
    Ok(())
}
