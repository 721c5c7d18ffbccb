//! Redis servers (the standalone one, the five Redlock ones, the failover pair): the command
//! line (`fo2` starts as `fo1`'s replica), `PING` and
//! `INFO server`, spoken as raw RESP.
//!
//! Redis rewrites its process title (`redis-server 127.0.0.1:16379`), so its
//! `/proc/<pid>/cmdline` no longer shows the state directory; it is recognised as ours by its
//! working directory instead (`--dir` is the node directory), see [`crate::process::is_ours`].

use crate::launch::{Launch, Site};
use crate::net;
use lockbench_core::ServerSpec;
use lockbench_registry::redis::system::FAILOVER;

/// The `redis-server` command line: no persistence, bound to the site's address, logs to the
/// site's log (or standard output).
pub(crate) fn launch(spec: &ServerSpec, site: &Site) -> Launch {
    let topo = site.topology;
    let mut args = vec![
        "--port".into(),
        topo.client_port(spec).to_string(),
        "--bind".into(),
        site.bind.to_string(),
        "--save".into(),
        "".into(),
        "--appendonly".into(),
        "no".into(),
        "--protected-mode".into(),
        "no".into(),
        "--dir".into(),
        site.data().display().to_string(),
    ];
    if let Some(log) = &site.log {
        args.extend(["--logfile".into(), log.display().to_string()]);
    }
    args.extend(["--daemonize".into(), "no".into()]);
    if spec.group == FAILOVER {
        // Replication without files: a full resync otherwise writes `dump.rdb`, which a restart
        // would load (a "restarted empty" server coming back with old lock keys).
        args.extend([
            "--repl-diskless-sync".into(),
            "yes".into(),
            "--repl-diskless-sync-delay".into(),
            "0".into(),
            "--repl-diskless-load".into(),
            "on-empty-db".into(),
        ]);
    }
    if spec.group == FAILOVER && spec.id != 1 {
        // The replica of the failover pair; Sentinel moves it (and fo1) around from then on.
        let primary = lockbench_registry::redis::system::initial_primary();
        args.extend([
            "--replicaof".into(),
            topo.ip(primary).to_string(),
            topo.client_port(primary).to_string(),
        ]);
    }
    Launch {
        program: "redis-server",
        args,
        dirs: vec![site.data()],
        // No persistence means empty at every start, even if replication left a file.
        remove: vec![site.data().join("dump.rdb")],
        files: Vec::new(),
    }
}

/// `true` when `PING` answers `+PONG`.
pub(crate) async fn healthy(addr: &str) -> bool {
    let reply = net::exchange(addr, b"*1\r\n$4\r\nPING\r\n", |r| r.ends_with(b"\r\n")).await;
    reply.is_ok_and(|r| r.starts_with(b"+PONG"))
}

/// `redis_version` from `INFO server`.
pub(crate) async fn version(addr: &str) -> Option<String> {
    let request = b"*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n";
    let reply = net::exchange(addr, request, bulk_complete).await.ok()?;
    let text = String::from_utf8_lossy(&reply);
    text.lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .map(|v| v.trim().to_string())
}

/// `true` once a RESP bulk string (`$<len>\r\n<len bytes>\r\n`) has fully arrived.
fn bulk_complete(reply: &[u8]) -> bool {
    let Some(end) = reply.windows(2).position(|w| w == b"\r\n") else {
        return false;
    };
    if reply.first() != Some(&b'$') {
        return true; // an error or other simple reply: one line
    }
    let len: i64 = std::str::from_utf8(&reply[1..end])
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    reply.len() as i64 >= end as i64 + 2 + len.max(0) + 2
}
