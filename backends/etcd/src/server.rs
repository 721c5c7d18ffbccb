//! How an etcd member starts ([`System::launch`](lockbench_core::System::launch)): the command
//! line (everything is a flag, no config file); and `GET /health`, `GET /version` as plain
//! HTTP/1.0 exchanges (the probes need no gRPC client).
//!
//! On a secure cluster (a site with [`Secure`](lockbench_core::launch::Secure) settings) every
//! URL is `https`: clients must present a certificate signed by the cluster's CA
//! (`--client-cert-auth`), and so must the members to each other (`--peer-client-cert-auth`;
//! the server certificate serves as the peer's client certificate too, as it does for etcd's
//! own HTTP gateway).

use lockbench_core::launch::{Launch, Site};
use lockbench_core::{Exchange, ServerSpec};
use std::net::SocketAddr;

/// The `etcd` command line (etcd ignores the `--initial-*` flags once its data dir exists, so
/// a restarted member rejoins its own cluster).
pub(crate) fn launch(spec: &ServerSpec, site: &Site) -> Launch {
    let topo = site.topology;
    let scheme = if site.secure.is_some() {
        "https"
    } else {
        "http"
    };
    let peer = |s: &ServerSpec| format!("{scheme}://{}:{}", topo.ip(s), topo.peer_ports(s)[0]);
    let listen = |port: u16| format!("{scheme}://{}:{port}", site.bind);
    let client = SocketAddr::new(topo.ip(spec), topo.client_port(spec));
    let initial_cluster: Vec<String> = spec
        .members()
        .map(|m| format!("{}={}", m.name, peer(m)))
        .collect();
    let mut args: Vec<String> = [
        "--name".into(),
        spec.name.into(),
        "--data-dir".into(),
        site.data().display().to_string(),
        "--listen-client-urls".into(),
        listen(topo.client_port(spec)),
        "--advertise-client-urls".into(),
        format!("{scheme}://{client}"),
        "--listen-peer-urls".into(),
        listen(topo.peer_ports(spec)[0]),
        "--initial-advertise-peer-urls".into(),
        peer(spec),
        "--initial-cluster".into(),
        initial_cluster.join(","),
        "--initial-cluster-state".into(),
        "new".into(),
        "--initial-cluster-token".into(),
        site.cluster_token.clone(),
        "--logger".into(),
        "zap".into(),
        "--log-outputs".into(),
        "stderr".into(),
    ]
    .to_vec();
    if let Some(secure) = site.secure {
        let (ca, cert, key) = (&secure.ca, &secure.cert, &secure.key);
        for (flag, file) in [
            ("--cert-file", cert),
            ("--key-file", key),
            ("--trusted-ca-file", ca),
            ("--peer-cert-file", cert),
            ("--peer-key-file", key),
            ("--peer-trusted-ca-file", ca),
        ] {
            args.extend([flag.to_string(), file.display().to_string()]);
        }
        args.extend([
            "--client-cert-auth".into(),
            "--peer-client-cert-auth".into(),
        ]);
    }
    Launch {
        program: "etcd",
        args,
        dirs: vec![site.data()],
        remove: Vec::new(),
        files: Vec::new(),
    }
}

/// `host:port` of a member URL (`http://127.0.0.1:2379`, `https://...`).
fn host_port(endpoint: &str) -> &str {
    let hostport = endpoint.strip_prefix("http://");
    let hostport = hostport.or_else(|| endpoint.strip_prefix("https://"));
    hostport.unwrap_or(endpoint).trim_end_matches('/')
}

/// `GET path` over HTTP/1.0 against a base URL like `http://127.0.0.1:2379` (the server
/// closes the connection after its reply; the caller speaks TLS to an `https` one).
pub(crate) fn get(endpoint: &str, path: &str) -> Exchange {
    let hostport = host_port(endpoint);
    Exchange {
        addr: hostport.to_string(),
        request: format!("GET {path} HTTP/1.0\r\nHost: {hostport}\r\n\r\n").into_bytes(),
        complete: |_| false,
    }
}

/// `POST /v3/maintenance/status` (the gRPC gateway's JSON form of the Maintenance Status
/// API): who the member is and whom it follows.
pub(crate) fn status(endpoint: &str) -> Exchange {
    let hostport = host_port(endpoint);
    let request = format!(
        "POST /v3/maintenance/status HTTP/1.0\r\nHost: {hostport}\r\nContent-Type: application/json\r\n\
         Content-Length: 2\r\n\r\n{{}}"
    );
    Exchange {
        addr: hostport.to_string(),
        request: request.into_bytes(),
        complete: |_| false,
    }
}

/// How to ask the member at `endpoint` whether it leads: [`status`] over plain HTTP;
/// `GET /metrics` (its `etcd_server_is_leader` gauge) at an `https://` endpoint, because a
/// member with client certificate authentication refuses gateway requests (`/v3/...`) whose
/// certificate has a common name ("CommonName of client sending a request against gateway
/// will be ignored"), and the secure cluster's client certificate has one; `/metrics` is
/// etcd's own handler, as `/health` is.
pub(crate) fn leader_check(endpoint: &str) -> Exchange {
    match endpoint.starts_with("https://") {
        true => get(endpoint, "/metrics"),
        false => status(endpoint),
    }
}

/// `true` when a [`leader_check`] reply says the member is the leader: a [`status`] reply's
/// `header.member_id == leader`, or a `/metrics` reply's `etcd_server_is_leader 1`.
pub(crate) fn is_leader(reply: &[u8]) -> bool {
    let text = String::from_utf8_lossy(reply);
    let ok = text
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        == Some("200");
    if ok && text.lines().any(|l| l.trim() == "etcd_server_is_leader 1") {
        return true;
    }
    let Some(v) = body(reply) else {
        return false;
    };
    let member = v.pointer("/header/member_id").and_then(|m| m.as_str());
    let leader = v.get("leader").and_then(|m| m.as_str());
    matches!((member, leader), (Some(m), Some(l)) if m == l)
}

/// The JSON body of a `200` reply.
fn body(reply: &[u8]) -> Option<serde_json::Value> {
    let text = String::from_utf8_lossy(reply);
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.lines().next().unwrap_or_default();
    if status.split_whitespace().nth(1) != Some("200") {
        return None;
    }
    serde_json::from_str(body).ok()
}

/// `true` when `GET /health` says `{"health":"true"}`.
pub(crate) fn healthy(reply: &[u8]) -> bool {
    body(reply).is_some_and(|v| v.get("health").and_then(|h| h.as_str()) == Some("true"))
}

/// The server version from `GET /version` (`{"etcdserver":"3.4.23",...}`).
pub(crate) fn version(reply: &[u8]) -> Option<String> {
    Some(body(reply)?.get("etcdserver")?.as_str()?.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_health_and_version_replies() {
        let ok = b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n{\"health\":\"true\"}";
        assert!(healthy(ok));
        assert!(!healthy(
            b"HTTP/1.0 503 Service Unavailable\r\n\r\n{\"health\":\"true\"}"
        ));
        assert!(!healthy(b""));
        let v = b"HTTP/1.0 200 OK\r\n\r\n{\"etcdserver\":\"3.4.23\",\"etcdcluster\":\"3.4.0\"}";
        assert_eq!(version(v).as_deref(), Some("3.4.23"));
        let status = |m: &str| {
            format!(
                "HTTP/1.0 200 OK\r\n\r\n{{\"header\":{{\"member_id\":\"{m}\"}},\"leader\":\"7\"}}"
            )
        };
        assert!(is_leader(status("7").as_bytes()));
        assert!(!is_leader(status("8").as_bytes()));
        let metrics = |gauge: u8| {
            format!(
                "HTTP/1.0 200 OK\r\n\r\n# TYPE etcd_server_is_leader gauge\n\
                 etcd_server_is_leader {gauge}\netcd_server_is_learner 0\n"
            )
        };
        assert!(is_leader(metrics(1).as_bytes()));
        assert!(!is_leader(metrics(0).as_bytes()));
        assert!(!is_leader(
            b"HTTP/1.0 500 x\r\n\r\netcd_server_is_leader 1\n"
        ));
        let plain = leader_check("http://10.77.0.21:2379").request;
        assert!(plain.starts_with(b"POST /v3/maintenance/status "));
        let tls = leader_check("https://10.77.0.21:2379").request;
        assert!(tls.starts_with(b"GET /metrics HTTP/1.0\r\n"));
        let get = get("http://127.0.0.1:2379", "/health");
        assert_eq!(get.addr, "127.0.0.1:2379");
        assert!(
            get.request
                .starts_with(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1:2379")
        );
        assert_eq!(
            super::status("https://10.77.0.21:2379/").addr,
            "10.77.0.21:2379"
        );
    }

    /// A secure site's member: every URL `https`, client and peer TLS with certificates.
    #[test]
    fn a_secure_member_speaks_only_tls_with_client_certificates() {
        use lockbench_core::launch::{Loopback, Secure};
        let secure = Secure::in_dir("/s".as_ref(), "lockbench", "".into(), "".into());
        let spec = &crate::system::SERVERS[0];
        let site = Site {
            topology: &Loopback,
            bind: [127, 0, 0, 1].into(),
            root: "/s/etcd1".into(),
            log: None,
            cluster_token: "t".into(),
            secure: Some(&secure),
        };
        let args = launch(spec, &site).args.join(" ");
        assert!(!args.contains("http:"), "{args}");
        for want in [
            "--listen-client-urls https://127.0.0.1:",
            "--initial-cluster etcd1=https://",
            "--cert-file /s/server.pem",
            "--trusted-ca-file /s/ca.pem",
            "--peer-key-file /s/server.key",
            "--client-cert-auth",
            "--peer-client-cert-auth",
        ] {
            assert!(args.contains(want), "{want}: {args}");
        }
        let plain = Site {
            secure: None,
            ..site
        };
        assert!(!launch(spec, &plain).args.join(" ").contains("https"));
    }
}
