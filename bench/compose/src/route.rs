//! Which way lockbench reaches the compose cluster's servers: at their container addresses on
//! the compose subnet, or through the ports docker-compose.yml publishes on `127.0.0.1`.
//!
//! Why both: on a Linux Docker Engine the host routes to the compose bridge, so lockbench, the
//! Sentinels and the replicas all see the same container addresses and everything (faults,
//! client containers, `redis-sentinel`) works. Docker Desktop (macOS, Windows) runs the
//! containers in a VM whose bridge the host cannot route to: there only the published ports
//! reach the servers. The choice is a bounded TCP connect to every server's container address
//! ([`Route::detect`]): one that connects or is refused proves the host reaches the subnet (a
//! refusal comes from the container's own stack); when none does within [`PROBE_TIMEOUT`], the
//! published ports are used. It is made once per process ([`route`]) and said on the first
//! line of `run --cluster compose` and of `cargo bench` ([`Route::describe`]).
//!
//! What the published ports cannot carry is said when they are chosen, never silently
//! skipped ([`Route::cannot_carry`]): the Sentinels announce the failover
//! pair's container address, which the host cannot reach (`redis-sentinel` is refused); client
//! containers cannot reach the coordinator's resource service (workers run as processes on the
//! host instead); server and link faults need the containers' addresses and network
//! namespaces (every one is recorded as not applied, [`faults_not_applied`]). All three work
//! from lockbench's own image on the compose network, the compose file's `lockbench` service
//! ([`ON_THE_NETWORK`]).

use crate::file::{SUBNET, topology};
use lockbench_cluster::{SERVERS, ServerSpec, Topology};
use lockbench_core::{Endpoints, Group};
use std::io::ErrorKind;
use std::net::{SocketAddr, TcpStream};
use std::sync::OnceLock;
use std::time::Duration;

/// How long one connect to a container address may take before it counts as unreachable
/// (a bridge on the same machine answers in well under a millisecond; Docker Desktop's
/// unroutable addresses never answer).
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// Where the things the published ports cannot carry work.
pub const ON_THE_NETWORK: &str = "run lockbench itself on the compose network, as the compose \
     file's `lockbench` service (lockbench's own image): \
     `docker compose run --rm lockbench run ...` (1.29: `docker-compose run --rm lockbench ...`)";

/// The way to the compose cluster's servers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// Their container addresses on [`SUBNET`] (standard ports).
    Containers,
    /// The ports docker-compose.yml publishes on 127.0.0.1 (the managed loopback ports);
    /// `why` says what the probe of the container addresses saw.
    Published {
        /// The probe's finding (`10.78.0.11:2181: timed out after 1 s`).
        why: String,
    },
}

/// What one connect to a container address showed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Probe {
    /// It connected, or the address refused it: a host on the subnet answered.
    Answered,
    /// Nothing answered: timed out, unroutable, or dropped on the way out (the reason).
    Silent(String),
}

/// The route the probes show: the containers when any answered, else the published ports.
pub fn choose(probes: &[(SocketAddr, Probe)]) -> Route {
    if probes.iter().any(|(_, p)| *p == Probe::Answered) {
        return Route::Containers;
    }
    let why = match probes.first() {
        None => "no server to probe".to_string(),
        Some((addr, Probe::Silent(reason))) => {
            let others = probes.len() - 1;
            if others == 0 {
                format!("{addr}: {reason}")
            } else {
                format!("{addr}: {reason}; {others} more silent")
            }
        }
        Some((_, Probe::Answered)) => unreachable!("no probe answered"),
    };
    Route::Published { why }
}

/// One bounded connect to `addr`.
pub fn probe(addr: SocketAddr, timeout: Duration) -> Probe {
    match TcpStream::connect_timeout(&addr, timeout) {
        Ok(_) => Probe::Answered,
        Err(e) if e.kind() == ErrorKind::ConnectionRefused => Probe::Answered,
        Err(e) if e.kind() == ErrorKind::TimedOut || e.kind() == ErrorKind::WouldBlock => {
            Probe::Silent(format!("no answer within {} ms", timeout.as_millis()))
        }
        Err(e) => Probe::Silent(e.to_string()),
    }
}

impl Route {
    /// Probes every server's container address at once (at most [`PROBE_TIMEOUT`]) and
    /// chooses. Not cached: [`route`] is.
    pub fn detect() -> Route {
        let topo = topology();
        let addrs: Vec<SocketAddr> = SERVERS.iter().map(|s| topo.client_addr(s)).collect();
        let probes = std::thread::scope(|scope| {
            let handles: Vec<_> = addrs
                .iter()
                .map(|&a| scope.spawn(move || (a, probe(a, PROBE_TIMEOUT))))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a probe thread does not panic"))
                .collect::<Vec<_>>()
        });
        choose(&probes)
    }

    /// `true` for the published ports.
    pub fn is_published(&self) -> bool {
        matches!(self, Route::Published { .. })
    }

    /// The layout lockbench reaches: the compose subnet's, or the loopback topology's ports
    /// on 127.0.0.1 (which are what docker-compose.yml publishes).
    pub fn topology(&self) -> Topology {
        match self {
            Route::Containers => topology(),
            Route::Published { .. } => Topology::Loopback,
        }
    }

    /// Where lockbench's clients reach the servers this way.
    pub fn endpoints(&self) -> Endpoints {
        lockbench_cluster::endpoints(&self.topology())
    }

    /// The line saying which way was chosen and why (the first line of a compose run and of
    /// `cargo bench` on compose).
    pub fn describe(&self) -> String {
        match self {
            Route::Containers => {
                format!("compose: reaching the containers at their addresses on {SUBNET}")
            }
            Route::Published { why } => format!(
                "compose: reaching the containers through their published ports on 127.0.0.1 \
                 (the host cannot route to {SUBNET}: {why}); through them: no redis-sentinel, \
                 no client containers (workers run on this host), no server or link faults \
                 (recorded as not applied); for those, {ON_THE_NETWORK}"
            ),
        }
    }

    /// Why the servers of `group` cannot be used this way (`None` when they can): through the
    /// published ports, a group whose member is announced to its clients by address
    /// ([`System::announced`](lockbench_core::System::announced): the failover pair's
    /// Sentinels name its primary) is announced at a container address, which the host cannot
    /// reach.
    pub fn cannot_carry(&self, group: Group) -> Option<String> {
        if !self.is_published() {
            return None;
        }
        let system = SERVERS.iter().find(|s| s.group == group)?.system;
        let announced = system.announced(group)?;
        Some(format!(
            "the {} servers are found through {}, which announce {}'s container address ({}), \
             and this host reaches the compose cluster only through its published ports (it \
             cannot route to {SUBNET}); to run it on compose, {ON_THE_NETWORK}",
            group.name(),
            announced.by,
            announced.member,
            topology().client_addr(announced.first),
        ))
    }
}

/// The route of this process: probed on first use, then kept (every part of a run must use
/// the same servers the same way).
pub fn route() -> &'static Route {
    static ROUTE: OnceLock<Route> = OnceLock::new();
    ROUTE.get_or_init(Route::detect)
}

/// The port docker-compose.yml publishes a server's client port on (on 127.0.0.1): its
/// managed loopback port, so the published cluster has the loopback cluster's endpoints.
pub fn published_port(spec: &ServerSpec) -> u16 {
    spec.client_port
}

/// The note every server, firewall and link fault of a compose run through the published
/// ports is recorded with (as not applied): they need the containers' addresses and network
/// namespaces, which this host does not reach.
pub fn faults_not_applied() -> String {
    format!(
        "not applied: this host reaches the compose cluster only through its published ports \
         (it cannot route to {SUBNET}), and server and link faults need the containers' \
         addresses and network namespaces; {ON_THE_NETWORK}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn any_answer_means_the_containers() {
        let probes = [
            (addr("10.78.0.11:2181"), Probe::Silent("timed out".into())),
            (addr("10.78.0.12:2181"), Probe::Answered),
        ];
        assert_eq!(choose(&probes), Route::Containers);
    }

    #[test]
    fn silence_everywhere_means_the_published_ports_and_says_why() {
        let probes = [
            (addr("10.78.0.11:2181"), Probe::Silent("no answer".into())),
            (addr("10.78.0.12:2181"), Probe::Silent("no answer".into())),
        ];
        let route = choose(&probes);
        assert_eq!(
            route,
            Route::Published {
                why: "10.78.0.11:2181: no answer; 1 more silent".into()
            }
        );
        assert!(route.describe().contains("published ports on 127.0.0.1"));
        assert!(route.describe().contains("10.78.0.0/24"));
        assert!(choose(&[]).is_published());
    }

    #[test]
    fn the_published_route_uses_the_loopback_ports() {
        let published = Route::Published { why: "x".into() };
        let e = published.endpoints();
        assert_eq!(e.get("zookeeper")[0], "127.0.0.1:12181");
        assert_eq!(e.get("etcd")[1], "http://127.0.0.1:12381");
        assert_eq!(e.get("redis"), ["127.0.0.1:16379"]);
        assert_eq!(e.get("redlock")[4], "127.0.0.1:16384");
        assert_eq!(Route::Containers.endpoints(), crate::endpoints());
    }

    #[test]
    fn the_published_route_refuses_the_sentinel_pair_only() {
        let group = |server| lockbench_cluster::by_name(server).expect("managed").group;
        let published = Route::Published { why: "x".into() };
        let why = published.cannot_carry(group("fo1")).expect("refused");
        assert!(
            why.contains("10.78.0.40:6379") && why.contains(ON_THE_NETWORK),
            "{why}"
        );
        let says = "the failover servers are found through their Sentinels, which announce the \
                    primary's container address (10.78.0.40:6379), and this host";
        assert!(why.starts_with(says), "{why}");
        for ok in ["redis", "redlock1", "sen1", "zk1", "etcd1"] {
            assert_eq!(published.cannot_carry(group(ok)), None);
        }
        assert_eq!(Route::Containers.cannot_carry(group("fo1")), None);
    }

    /// Real sockets: a listening port answers, a closed one is refused (both prove a route).
    /// The silent case needs an address the host cannot reach, which this machine's network
    /// does not guarantee (it answered for TEST-NET-1): the docker test `compose_published`
    /// makes the compose subnet unreachable and checks it there.
    #[test]
    fn probe_counts_a_refusal_as_an_answer() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let open = l.local_addr().unwrap();
        assert_eq!(probe(open, PROBE_TIMEOUT), Probe::Answered);
        drop(l);
        assert_eq!(probe(open, PROBE_TIMEOUT), Probe::Answered);
    }
}
