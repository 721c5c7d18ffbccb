//! NATS as a [`System`]: three servers (`nats1`..`nats3`) in one JetStream cluster, each its own
//! host, in one endpoints list (`nats = [...]`).
//!
//! Why three: a KV bucket is a stream, and a stream with three replicas is a Raft group that
//! keeps working with one member down, as etcd's and ZooKeeper's three members do; the
//! comparison is then like for like. JetStream has two kinds of leader: the meta group's
//! (placement of streams and consumers) and each stream's. The `leader` fault target is the
//! leader of the default bucket's stream (`lockbench`), the Raft group every lock write goes
//! through.

use crate::server;
use lockbench_core::knobs::{KnobSchema, Knobs};
use lockbench_core::launch::{Launch, Site};
use lockbench_core::{Exchange, Group, Leadership, Probe, ServerSpec, System};

/// The cluster's group (`nats = [...]` in an endpoints file).
pub const NATS: Group = Group::listed(crate::NATS);

/// The NATS system.
#[derive(Clone, Copy, Debug, Default)]
pub struct Nats;

const fn member(name: &'static str, id: u8, client: u16, peer: &'static [u16]) -> ServerSpec {
    ServerSpec {
        name,
        system: &Nats,
        group: NATS,
        id,
        client_port: client,
        peer_ports: peer,
        octet: 60 + id,
    }
}

/// The managed cluster (loopback ports: client; cluster, monitoring = client + 4000; hosts
/// `.61`..`.63`).
pub(crate) const SERVERS: [ServerSpec; 3] = [
    member("nats1", 1, 14222, &[16222, 18222]),
    member("nats2", 2, 14223, &[16223, 18223]),
    member("nats3", 3, 14224, &[16224, 18224]),
];

impl System for Nats {
    fn name(&self) -> &'static str {
        "nats"
    }

    fn servers(&self) -> &'static [ServerSpec] {
        &SERVERS
    }

    /// `nats-kv` (`recipes.rs`).
    fn recipes(&self) -> &'static [lockbench_core::Recipe] {
        crate::recipes::RECIPES
    }

    /// `[nats]` (`knobs.rs`).
    fn knobs(&self) -> &'static [KnobSchema] {
        crate::KNOBS
    }

    /// Each run its own key prefix (`knobs.rs`).
    fn separate_keys(&self, knobs: &mut Knobs, id: &str) -> Result<(), String> {
        crate::separate_keys(knobs, id)
    }

    /// Client, cluster (routes), monitoring.
    fn standard_ports(&self) -> &'static [u16] {
        &[4222, 6222, 8222]
    }

    /// The monitoring port (health, version, the counters), published beside the client
    /// port in compose.
    fn probe_port_offsets(&self) -> &'static [u16] {
        &[crate::server::MONITOR_OFFSET]
    }

    /// The default bucket's stream leader (`server.rs`).
    fn leadership(&self, _group: Group) -> Leadership {
        Leadership::Elected
    }

    fn leader_check(&self, endpoint: &str) -> Option<Exchange> {
        Some(server::leader_check(endpoint))
    }

    fn is_leader(&self, reply: &[u8]) -> bool {
        server::is_leader(reply)
    }

    /// A restarted server keeps its JetStream store and rejoins the Raft groups.
    fn restarts_empty(&self) -> bool {
        false
    }

    fn launch(&self, spec: &ServerSpec, site: &Site) -> Launch {
        server::launch(spec, site)
    }

    /// TLS with client certificates on every port, HTTPS monitoring, users with least
    /// privilege (`secure.rs`).
    fn secured(&self, _spec: &ServerSpec) -> bool {
        true
    }

    /// Only lockbench's user (and the probes' administrator) may connect.
    fn secure_user(&self) -> bool {
        true
    }

    /// TLS (a CA, a client certificate) and a user with a password (`login.rs`). The shape
    /// only: the files and the password are read when a backend is made.
    fn check_connection(&self, group: &str, c: &lockbench_core::Connection) -> Result<(), String> {
        crate::login::check(group, c)
    }

    /// `secure_probe.rs` for the client port's leader check (`INFO`, TLS, the
    /// administrator's login); `None` for the monitoring port's HTTPS, which the cluster's
    /// own TLS exchange speaks.
    fn secure_ask<'a>(
        &'a self,
        ex: &'a Exchange,
        tls: std::sync::Arc<rustls::ClientConfig>,
        admin_password: &'a secrecy::SecretString,
    ) -> Option<lockbench_core::system::Asked<'a>> {
        if !crate::secure_probe::speaks_client_protocol(&ex.request) {
            return None;
        }
        Some(Box::pin(crate::secure_probe::ask(ex, tls, admin_password)))
    }

    fn needs(&self) -> &'static [&'static str] {
        &["nats-server"]
    }

    /// async-nats writes each `CONNECT` it sends, `user` and `pass` included, at `TRACE`.
    fn secret_trace_targets(&self) -> &'static [&'static str] {
        &["async_nats"]
    }

    /// `/healthz` on the monitoring port.
    fn health_check(&self, endpoint: &str) -> Exchange {
        server::get(endpoint, "/healthz")
    }

    fn health(&self, reply: &[u8]) -> Probe {
        Probe {
            healthy: server::healthy(reply),
            role: None,
        }
    }

    fn version_check(&self, endpoint: &str) -> Option<Exchange> {
        Some(server::get(endpoint, "/varz"))
    }

    fn version(&self, reply: &[u8]) -> Option<String> {
        server::version(reply)
    }

    /// The Alpine variant: the plain image has no shell for the launch's `sh -c`.
    fn official_image(&self) -> &'static str {
        "nats:2.9.10-alpine"
    }

    /// `/healthz` on the monitoring port inside the container, over bash's `/dev/tcp` (the
    /// servers' image has no HTTP client).
    fn compose_healthcheck(&self, port: u16) -> Vec<String> {
        let monitor = port + server::MONITOR_OFFSET;
        let check = format!(
            "exec 3<>/dev/tcp/127.0.0.1/{monitor} && printf 'GET /healthz HTTP/1.0\\r\\n\\r\\n' >&3 \
             && grep -q '\"ok\"' <&3"
        );
        ["CMD", "bash", "-c", &check].map(String::from).to_vec()
    }

    /// `/healthz` on the monitoring port over HTTPS, with `openssl s_client` (the server's
    /// chain verified against the CA) and the client certificate (monitoring asks for no user).
    fn compose_secure_healthcheck(&self, port: u16, files: &str, _user: &str) -> Vec<String> {
        let monitor = port + server::MONITOR_OFFSET;
        let check = format!(
            "printf 'GET /healthz HTTP/1.0\\r\\n\\r\\n' | openssl s_client -quiet -verify_return_error -connect \
             127.0.0.1:{monitor} -CAfile {files}/ca.pem -cert {files}/client.pem -key \
             {files}/client.key 2>/dev/null | grep -q '\"ok\"'"
        );
        ["CMD", "bash", "-c", &check].map(String::from).to_vec()
    }
}
