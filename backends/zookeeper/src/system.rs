//! ZooKeeper as a [`System`]: the managed ensemble's three members, their ports, and the
//! rules lockbench applies to them (one leader or not healthy; a restart keeps its data).

use crate::server;
use lockbench_core::knobs::KnobSchema;
use lockbench_core::launch::{Launch, Site};
use lockbench_core::{Exchange, Group, Leadership, Probe, ServerSpec, System};

/// The ensemble's group (`zookeeper = [...]` in an endpoints file).
pub const ZOOKEEPER: Group = Group::listed(crate::GROUP);

/// The ZooKeeper system.
#[derive(Clone, Copy, Debug, Default)]
pub struct ZooKeeper;

const fn member(name: &'static str, id: u8, client: u16, peers: &'static [u16]) -> ServerSpec {
    ServerSpec {
        name,
        system: &ZooKeeper,
        group: ZOOKEEPER,
        id,
        client_port: client,
        peer_ports: peers,
        octet: 10 + id,
    }
}

/// The managed ensemble (loopback ports: client, quorum, election).
pub(crate) const SERVERS: [ServerSpec; 3] = [
    member("zk1", 1, 12181, &[12888, 13888]),
    member("zk2", 2, 12182, &[12889, 13889]),
    member("zk3", 3, 12183, &[12890, 13890]),
];

impl System for ZooKeeper {
    fn name(&self) -> &'static str {
        "zookeeper"
    }

    /// A chroot and a digest user (issue 22; `crate::secure`). Not TLS: the client crate's
    /// `tls` feature brings rustls's aws-lc provider next to the ring one the other clients
    /// use (docs/secure-clusters.md says why that is not done).
    fn check_connection(
        &self,
        group: &str,
        connection: &lockbench_core::Connection,
    ) -> Result<(), String> {
        connection.refuse(
            group,
            "ZooKeeper",
            &["chroot", "user", "password_env", "password_file"],
        )?;
        if connection.has_password() && connection.user.is_none() {
            return Err(format!(
                "{group}: a password needs `user` (ZooKeeper's digest identity is \
                 user:password)"
            ));
        }
        crate::connect::chroot(connection).map(|_| ())
    }

    fn servers(&self) -> &'static [ServerSpec] {
        &SERVERS
    }

    fn knobs(&self) -> &'static [KnobSchema] {
        crate::KNOBS
    }

    fn recipes(&self) -> &'static [lockbench_core::Recipe] {
        crate::recipes::RECIPES
    }

    fn standard_ports(&self) -> &'static [u16] {
        &[2181, 2888, 3888]
    }

    fn single_leader(&self) -> bool {
        true
    }

    fn leadership(&self, _group: Group) -> Leadership {
        Leadership::Elected
    }

    fn leader_check(&self, endpoint: &str) -> Option<Exchange> {
        Some(server::srvr(endpoint))
    }

    /// `Mode: leader`.
    fn is_leader(&self, reply: &[u8]) -> bool {
        server::mode(&String::from_utf8_lossy(reply)).as_deref() == Some("leader")
    }

    fn launch(&self, spec: &ServerSpec, site: &Site) -> Launch {
        server::launch(spec, site)
    }

    /// `secureClientPort` through Netty with client certificates, quorum TLS (`server.rs`);
    /// no digest users yet, so a client is admitted by its certificate alone.
    fn secured(&self, _spec: &ServerSpec) -> bool {
        true
    }

    fn needs(&self) -> &'static [&'static str] {
        &server::NEEDS
    }

    fn health_check(&self, endpoint: &str) -> Exchange {
        server::srvr(endpoint)
    }

    /// Serving as `leader` or `follower` (not while electing, not `standalone`).
    fn health(&self, reply: &[u8]) -> Probe {
        let role = server::mode(&String::from_utf8_lossy(reply));
        let healthy = matches!(role.as_deref(), Some("leader" | "follower"));
        Probe { healthy, role }
    }

    fn version_check(&self, endpoint: &str) -> Option<Exchange> {
        Some(server::srvr(endpoint))
    }

    fn version(&self, reply: &[u8]) -> Option<String> {
        server::version(&String::from_utf8_lossy(reply))
    }

    fn official_image(&self) -> &'static str {
        "zookeeper:3.8.0"
    }

    fn compose_healthcheck(&self, port: u16) -> Vec<String> {
        let check = format!(
            "exec 3<>/dev/tcp/127.0.0.1/{port} && echo srvr >&3 && grep -qE 'Mode: (leader|follower)' <&3"
        );
        ["CMD", "bash", "-c", &check].map(String::from).to_vec()
    }
}
