//! etcd members: the command line (everything is a flag, no config file), `/health` and
//! `/version`.

use crate::launch::{Launch, Site};
use crate::net;
use lockbench_core::ServerSpec;
use std::path::Path;

/// The `etcd` command line (etcd ignores the `--initial-*` flags once its data dir exists, so
/// a restarted member rejoins its own cluster).
pub(crate) fn launch(spec: &ServerSpec, site: &Site) -> Launch {
    let topo = site.topology;
    let peer = |s: &ServerSpec| format!("http://{}:{}", topo.ip(s), topo.peer_ports(s)[0]);
    let listen = |port: u16| format!("http://{}:{port}", site.bind);
    let initial_cluster: Vec<String> = spec
        .members()
        .map(|m| format!("{}={}", m.name, peer(m)))
        .collect();
    let args = [
        "--name".into(),
        spec.name.into(),
        "--data-dir".into(),
        site.data().display().to_string(),
        "--listen-client-urls".into(),
        listen(topo.client_port(spec)),
        "--advertise-client-urls".into(),
        topo.endpoint(spec),
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
    ];
    Launch {
        program: "etcd",
        args: args.to_vec(),
        dirs: vec![site.data()],
        remove: Vec::new(),
        files: Vec::new(),
    }
}

/// The managed cluster's token: derived from the state directory, so two state directories
/// never bootstrap into each other.
pub(crate) fn cluster_token(state_dir: &Path) -> String {
    format!(
        "lockbench-{:016x}",
        fnv1a(state_dir.as_os_str().as_encoded_bytes())
    )
}

/// `true` when `GET /health` says `{"health":"true"}`.
pub(crate) async fn healthy(url: &str) -> bool {
    let Ok(body) = net::http_get(url, "/health").await else {
        return false;
    };
    serde_json::from_str::<serde_json::Value>(&body)
        .is_ok_and(|v| v.get("health").and_then(|h| h.as_str()) == Some("true"))
}

/// The server version from `GET /version` (`{"etcdserver":"3.4.23",...}`).
pub(crate) async fn version(url: &str) -> Option<String> {
    let body = net::http_get(url, "/version").await.ok()?;
    let v: serde_json::Value = serde_json::from_str(&body).ok()?;
    Some(v.get("etcdserver")?.as_str()?.to_string())
}

/// 64-bit FNV-1a: a stable hash (unlike `DefaultHasher`) for the cluster token.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    })
}
