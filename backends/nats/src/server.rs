//! How a NATS server of the cluster starts ([`System::launch`](lockbench_core::System::launch)):
//! one config file (`nats.conf`), the same in managed mode and in a container; and its probes,
//! plain HTTP/1.0 `GET`s on the monitoring port.
//!
//! Ports: clients on the client port, the servers among themselves on the cluster port
//! (routes, which carry JetStream's Raft traffic), HTTP monitoring on the monitoring port.
//! The monitoring port is always the client port plus [`MONITOR_OFFSET`] (4222 and 8222 as
//! NATS's own defaults; 14222 and 18222 on the managed loopback ports), so a probe finds it
//! from a client endpoint alone ([`crate::monitor_address`]). An external cluster whose
//! monitoring ports do not follow that rule has no health, counters or version here.
//!
//! The leader check is the exception: the fault nemesis asks a server on its client port, so
//! it speaks the client protocol there (`leader_check`), and the leader it finds is the one
//! that matters to the locks, the Raft leader of the default bucket's stream.
//!
//! JetStream clustering needs a `server_name` per server, a cluster `name` and the routes to
//! every member; its state (the meta group and each stream's Raft log and messages) lives
//! under the server's data directory, so a restarted server rejoins with its data.

use lockbench_core::launch::{File, Launch, Site};
use lockbench_core::{Exchange, ServerSpec};

/// The monitoring port's distance from the client port.
pub const MONITOR_OFFSET: u16 = 4000;

/// The cluster's name (every member's `cluster.name`).
pub const CLUSTER_NAME: &str = "lockbench";

/// The `nats-server -c <root>/nats.conf` command line.
pub(crate) fn launch(spec: &ServerSpec, site: &Site) -> Launch {
    let conf = site.root.join("nats.conf");
    Launch {
        program: "nats-server",
        args: vec!["-c".into(), conf.display().to_string()],
        dirs: vec![site.root.clone(), site.data()],
        remove: Vec::new(),
        files: vec![File {
            path: conf,
            contents: config(spec, site),
            only_if_absent: false,
        }],
    }
}

/// `nats.conf`: where it listens, its JetStream store, its routes; on a secure site TLS,
/// HTTPS monitoring and the users too ([`crate::secure`]).
pub(crate) fn config(spec: &ServerSpec, site: &Site) -> String {
    let topo = site.topology;
    let client = topo.client_port(spec);
    let cluster = |s: &ServerSpec| topo.peer_ports(s)[0];
    let routes: Vec<String> = spec
        .members()
        .filter(|m| m.name != spec.name)
        .map(|m| format!("    \"nats-route://{}:{}\"", topo.ip(m), cluster(m)))
        .collect();
    let (head, monitoring, client_side, route_side) = match site.secure {
        None => (
            "# no TLS, no users, every client may use every subject.\n",
            "http",
            String::new(),
            String::new(),
        ),
        Some(secure) => (
            "# TLS, users and their permissions below.\n",
            "https",
            crate::secure::client_side(secure),
            crate::secure::route_side(secure),
        ),
    };
    format!(
        "# Written by lockbench on every start (backends/nats/src/server.rs); a lab setting:\n\
         {head}\
         server_name: {name}\n\
         listen: \"{bind}:{client}\"\n\
         {monitoring}: \"{bind}:{monitor}\"\n\
         # lockbench's herd and scale runs open up to 1,000 connections.\n\
         max_connections: 4096\n\
         {client_side}\
         jetstream {{\n  store_dir: \"{data}\"\n  max_memory_store: 64MB\n  max_file_store: 1GB\n}}\n\
         cluster {{\n  name: {CLUSTER_NAME}\n  listen: \"{bind}:{port}\"\n{route_side}  routes: [\n{routes}\n  ]\n}}\n",
        name = spec.name,
        bind = site.bind,
        monitor = client + MONITOR_OFFSET,
        data = site.data().display(),
        port = cluster(spec),
        routes = routes.join("\n"),
    )
}

/// `GET path` over HTTP/1.0 on the monitoring port of the server whose client endpoint is
/// `endpoint` (the server closes the connection after its reply).
pub(crate) fn get(endpoint: &str, path: &str) -> Exchange {
    let addr = crate::monitor_address(endpoint).unwrap_or_else(|| endpoint.to_string());
    Exchange {
        request: format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").into_bytes(),
        addr,
        complete: |_| false,
    }
}

/// The JSON body of a `200` reply.
pub(crate) fn body(reply: &[u8]) -> Option<serde_json::Value> {
    let text = std::str::from_utf8(reply).ok()?;
    let status = text.lines().next()?.split_whitespace().nth(1)?;
    if status != "200" {
        return None;
    }
    let (_, body) = text.split_once("\r\n\r\n")?;
    serde_json::from_str(body).ok()
}

/// `/healthz` answers `{"status":"ok"}`: on 2.9 that means JetStream is enabled, the server
/// is current with the meta group's leader and with every stream and consumer it replicates.
pub(crate) fn healthy(reply: &[u8]) -> bool {
    body(reply).is_some_and(|v| v.get("status").and_then(|s| s.as_str()) == Some("ok"))
}

/// `/varz`'s `version` (`2.9.10`).
pub(crate) fn version(reply: &[u8]) -> Option<String> {
    Some(body(reply)?.get("version")?.as_str()?.to_string())
}

/// The reply subject of [`leader_check`]'s request.
const LEADER_INBOX: &str = "_LOCKBENCH.leader";

/// Asks the server at `endpoint` (its client port) for the default bucket's stream info, in
/// the client protocol: `CONNECT`, a subscription for the reply, the request. The reply starts
/// with the server's `INFO` line (its `server_name`), then the stream info as a `MSG`, whose
/// `cluster.leader` names the stream's Raft leader.
pub(crate) fn leader_check(endpoint: &str) -> Exchange {
    let stream = format!("KV_{}", crate::knobs::DEFAULT_BUCKET);
    let request = format!(
        "CONNECT {{\"verbose\":false,\"pedantic\":false,\"name\":\"lockbench-probe\"}}\r\n\
         SUB {LEADER_INBOX} 1\r\nPUB $JS.API.STREAM.INFO.{stream} {LEADER_INBOX} 0\r\n\r\n"
    );
    Exchange {
        addr: endpoint.to_string(),
        request: request.into_bytes(),
        complete: |reply| stream_info(reply).is_some(),
    }
}

/// The `INFO` line's JSON and the reply message's payload, once both are whole.
fn stream_info(reply: &[u8]) -> Option<(serde_json::Value, serde_json::Value)> {
    let text = std::str::from_utf8(reply).ok()?;
    let (info, rest) = text.strip_prefix("INFO ")?.split_once("\r\n")?;
    let at = rest.find(&format!("MSG {LEADER_INBOX} "))?;
    let (head, payload) = rest[at..].split_once("\r\n")?;
    let size: usize = head.split_whitespace().last()?.parse().ok()?;
    let payload = payload.get(..size)?;
    Some((
        serde_json::from_str(info).ok()?,
        serde_json::from_str(payload).ok()?,
    ))
}

/// The default bucket's stream leader is this server (`cluster.leader` is its `server_name`).
/// Each stream has its own leader, and the JetStream meta group (placement) another.
pub(crate) fn is_leader(reply: &[u8]) -> bool {
    let Some((info, stream)) = stream_info(reply) else {
        return false;
    };
    let leader = stream.pointer("/cluster/leader").and_then(|l| l.as_str());
    let name = info.get("server_name").and_then(|n| n.as_str());
    matches!((leader, name), (Some(l), Some(n)) if l == n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockbench_core::launch::Loopback;

    #[test]
    fn the_config_routes_to_the_other_members_and_puts_monitoring_beside_the_client_port() {
        let spec = &crate::system::SERVERS[1];
        let site = Site {
            topology: &Loopback,
            bind: "127.0.0.1".parse().unwrap(),
            root: "/tmp/lb/nats2".into(),
            log: None,
            cluster_token: "t".into(),
            secure: None,
        };
        let conf = config(spec, &site);
        assert!(conf.contains("server_name: nats2\n"), "{conf}");
        assert!(conf.contains("listen: \"127.0.0.1:14223\""), "{conf}");
        assert!(conf.contains("http: \"127.0.0.1:18223\""), "{conf}");
        assert!(conf.contains("nats-route://127.0.0.1:16222"), "{conf}");
        assert!(conf.contains("nats-route://127.0.0.1:16224"), "{conf}");
        assert!(
            !conf.contains("route://127.0.0.1:16223"),
            "no route to itself: {conf}"
        );
        let launch = launch(spec, &site);
        assert_eq!(launch.args, ["-c", "/tmp/lb/nats2/nats.conf"]);
    }

    #[test]
    fn replies_are_read() {
        let ok = b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{\"status\":\"ok\"}";
        assert!(healthy(ok));
        let bad = b"HTTP/1.0 503 Service Unavailable\r\n\r\n{\"status\":\"unavailable\"}";
        assert!(!healthy(bad));
        let varz = b"HTTP/1.0 200 OK\r\n\r\n{\"server_name\":\"nats1\",\"version\":\"2.9.10\"}";
        assert_eq!(version(varz).as_deref(), Some("2.9.10"));
        let payload = r#"{"config":{"name":"KV_lockbench"},"cluster":{"leader":"nats2"}}"#;
        let reply = |me: &str, cut: usize| {
            let text = format!(
                "INFO {{\"server_name\":\"{me}\"}}\r\nMSG {LEADER_INBOX} 1 {}\r\n{payload}\r\n",
                payload.len()
            );
            text.as_bytes()[..text.len() - cut].to_vec()
        };
        assert!(is_leader(&reply("nats2", 0)));
        assert!(!is_leader(&reply("nats1", 0)));
        let complete = leader_check("127.0.0.1:14222").complete;
        assert!(complete(&reply("nats1", 0)));
        assert!(
            !complete(&reply("nats2", 5)),
            "a payload cut short is not whole"
        );
    }
}
