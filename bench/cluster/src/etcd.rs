//! etcd members: the command line (everything is a flag, no config file), `/health` and
//! `/version`.

use crate::net;
use crate::spec::{Command, ServerSpec};
use crate::state_dir::NodeDir;
use crate::topology::Topology;
use std::path::Path;

/// The `etcd` command line. The cluster token is derived from the state directory, so two
/// state directories never bootstrap into each other, and a restarted member (same data dir)
/// rejoins its own cluster (etcd ignores the `--initial-*` flags once the data dir exists).
pub(crate) fn command(
    spec: &ServerSpec,
    topo: &Topology,
    state_dir: &Path,
    node: &NodeDir,
) -> Command {
    let peer = |s: &ServerSpec| format!("http://{}:{}", topo.ip(s), topo.peer_ports(s)[0]);
    let initial_cluster: Vec<String> = spec
        .members()
        .map(|m| format!("{}={}", m.name, peer(m)))
        .collect();
    let token = format!(
        "lockbench-{:016x}",
        fnv1a(state_dir.as_os_str().as_encoded_bytes())
    );
    let args = [
        "--name".into(),
        spec.name.into(),
        "--data-dir".into(),
        node.data().display().to_string(),
        "--listen-client-urls".into(),
        topo.endpoint(spec),
        "--advertise-client-urls".into(),
        topo.endpoint(spec),
        "--listen-peer-urls".into(),
        peer(spec),
        "--initial-advertise-peer-urls".into(),
        peer(spec),
        "--initial-cluster".into(),
        initial_cluster.join(","),
        "--initial-cluster-state".into(),
        "new".into(),
        "--initial-cluster-token".into(),
        token,
        "--logger".into(),
        "zap".into(),
        "--log-outputs".into(),
        "stderr".into(),
    ];
    let program = crate::install::which("etcd").unwrap_or_else(|| "etcd".into());
    Command {
        program,
        args: args.into_iter().map(|a: String| a.into()).collect(),
    }
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
