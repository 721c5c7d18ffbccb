//! etcd as a [`System`]: the managed cluster's three members, their ports, and how clients
//! write their addresses (URLs).

use crate::server;
use lockbench_core::knobs::{KnobSchema, Knobs};
use lockbench_core::launch::{Launch, Site};
use lockbench_core::{Exchange, Group, Leadership, Probe, ServerSpec, System};
use std::net::SocketAddr;

/// The cluster's group (`etcd = [...]` in an endpoints file).
pub const ETCD: Group = Group::listed(crate::GROUP);

/// The etcd system.
#[derive(Clone, Copy, Debug, Default)]
pub struct Etcd;

const fn member(name: &'static str, id: u8, client: u16, peer: &'static [u16]) -> ServerSpec {
    ServerSpec {
        name,
        system: &Etcd,
        group: ETCD,
        id,
        client_port: client,
        peer_ports: peer,
        octet: 20 + id,
    }
}

/// The managed cluster (loopback ports: client, peer).
pub(crate) const SERVERS: [ServerSpec; 3] = [
    member("etcd1", 1, 12379, &[12380]),
    member("etcd2", 2, 12381, &[12382]),
    member("etcd3", 3, 12383, &[12384]),
];

impl System for Etcd {
    /// A new leader's "became leader" (one line per election), the leader's own "failed to
    /// send out heartbeat on time" (etcd blames a slow disk), and WAL syncs over a second.
    fn disk_signs(&self) -> &'static [lockbench_core::LogSign] {
        &[
            lockbench_core::LogSign {
                what: "leader elected",
                line_has: "became leader at term",
            },
            lockbench_core::LogSign {
                what: "heartbeat late (etcd: \"likely from slow disk\")",
                line_has: "failed to send out heartbeat on time",
            },
            lockbench_core::LogSign {
                what: "WAL sync over 1 s",
                line_has: "slow fdatasync",
            },
        ]
    }

    fn recipes(&self) -> &'static [lockbench_core::Recipe] {
        crate::recipes::RECIPES
    }

    fn elections(&self) -> &'static [lockbench_core::ElectionRecipe] {
        crate::elections::ELECTIONS
    }

    fn name(&self) -> &'static str {
        "etcd"
    }

    /// TLS (a CA, a client certificate, the name to verify) and a user with a password
    /// (`crate::access`). A password alone is refused: etcd authenticates a user.
    fn check_connection(
        &self,
        group: &str,
        connection: &lockbench_core::Connection,
    ) -> Result<(), String> {
        connection.refuse(
            group,
            "etcd",
            &["tls", "user", "password_env", "password_file"],
        )?;
        connection.require_user_with_password(
            group,
            "etcd authenticates a user by name and password; with mutual TLS and no user, \
             the client certificate's common name is the user",
        )?;
        Ok(())
    }

    fn servers(&self) -> &'static [ServerSpec] {
        &SERVERS
    }

    fn knobs(&self) -> &'static [KnobSchema] {
        crate::KNOBS
    }

    fn separate_keys(&self, knobs: &mut Knobs, id: &str) -> Result<(), String> {
        crate::separate_keys(knobs, id)
    }

    fn standard_ports(&self) -> &'static [u16] {
        &[2379, 2380]
    }

    fn endpoint(&self, addr: SocketAddr) -> String {
        format!("http://{addr}")
    }

    fn launch(&self, spec: &ServerSpec, site: &Site) -> Launch {
        server::launch(spec, site)
    }

    /// Client and peer TLS, both with client certificates (`server.rs`); lockbench's user and
    /// `auth enable` come after the start ([`System::set_up_users`]).
    fn secured(&self, _spec: &ServerSpec) -> bool {
        true
    }

    fn secure_endpoint(&self, addr: SocketAddr) -> String {
        format!("https://{addr}")
    }

    fn secure_user(&self) -> bool {
        true
    }

    /// [`crate::secure::set_up`]: role `lockbench` with `readwrite` on `/lockbench/` (the
    /// recipes' default prefix), the user with that role, `root`, and `auth enable`.
    fn set_up_users<'a>(
        &'a self,
        endpoints: &'a [String],
        client: &'a lockbench_core::Connection,
        secure: &'a lockbench_core::launch::Secure,
    ) -> Option<lockbench_core::system::UsersSetUp<'a>> {
        Some(Box::pin(async move {
            let users = crate::secure::Users {
                root_password: &secure.admin_password,
                user: &secure.user,
                password: &secure.password,
                prefix: crate::knobs::DEFAULT_PREFIX,
            };
            crate::secure::set_up(endpoints, client.tls.as_ref(), &users).await
        }))
    }

    fn needs(&self) -> &'static [&'static str] {
        &["etcd"]
    }

    fn health_check(&self, endpoint: &str) -> Exchange {
        server::get(endpoint, "/health")
    }

    /// `/health` says `true`: the member has a leader and a quorum.
    fn health(&self, reply: &[u8]) -> Probe {
        Probe {
            healthy: server::healthy(reply),
            role: None,
        }
    }

    fn leadership(&self, _group: Group) -> Leadership {
        Leadership::Elected
    }

    fn leader_check(&self, endpoint: &str) -> Option<Exchange> {
        Some(server::leader_check(endpoint))
    }

    fn is_leader(&self, reply: &[u8]) -> bool {
        server::is_leader(reply)
    }

    fn version_check(&self, endpoint: &str) -> Option<Exchange> {
        Some(server::get(endpoint, "/version"))
    }

    fn version(&self, reply: &[u8]) -> Option<String> {
        server::version(reply)
    }

    fn official_image(&self) -> &'static str {
        "quay.io/coreos/etcd:v3.4.23"
    }

    fn compose_healthcheck(&self, port: u16) -> Vec<String> {
        let endpoints = format!("--endpoints=http://127.0.0.1:{port}");
        ["CMD", "etcdctl", &endpoints, "endpoint", "health"]
            .map(String::from)
            .to_vec()
    }

    /// `https`, the client certificate; no user: `endpoint health` counts etcd's "permission
    /// denied" (authentication on, the health key not the certificate's user's) as healthy.
    fn compose_secure_healthcheck(&self, port: u16, files: &str, _user: &str) -> Vec<String> {
        let endpoints = format!("--endpoints=https://127.0.0.1:{port}");
        let (ca, cert, key) = (
            format!("--cacert={files}/ca.pem"),
            format!("--cert={files}/client.pem"),
            format!("--key={files}/client.key"),
        );
        [
            "CMD", "etcdctl", &endpoints, &ca, &cert, &key, "endpoint", "health",
        ]
        .map(String::from)
        .to_vec()
    }
}
