//! How Redis servers and Sentinels start ([`System::launch`](lockbench_core::System::launch)):
//! the `redis-server` command line (the standalone one, the five Redlock ones, the failover
//! pair, where `fo2` starts as `fo1`'s replica) and the Sentinels' config file.
//!
//! Redis rewrites its process title (`redis-server 127.0.0.1:16379`), so its
//! `/proc/<pid>/cmdline` no longer shows the state directory; the cluster recognises it as its
//! own by its working directory instead (`--dir` is the node directory).
//!
//! Why the Sentinels' settings: a failover test must finish in seconds, so the primary is
//! declared down after `down-after-milliseconds 1000` by a quorum of 2 of the 3 Sentinels, and
//! a failed failover is retried after `failover-timeout 3000`. Sentinel rewrites its config
//! file as it learns the topology (the new primary after a failover, the other Sentinels, the
//! replicas), so the file is written only when absent: a Sentinel restarted alone keeps what it
//! learned; when no Sentinel runs, `up` starts them from empty data directories (a fresh
//! config monitoring `fo1`).

use crate::system::{FAILOVER, initial_primary};
use lockbench_core::launch::{File, Launch, Site};
use lockbench_core::{Exchange, SENTINEL_MASTER_NAME, ServerSpec};

/// The `redis-server` command line: no persistence, bound to the site's address, logs to the
/// site's log (or standard output).
pub(crate) fn redis(spec: &ServerSpec, site: &Site) -> Launch {
    let topo = site.topology;
    let mut args: Vec<String> = vec![
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
        let primary = initial_primary();
        args.extend([
            "--replicaof".into(),
            topo.ip(primary).to_string(),
            topo.client_port(primary).to_string(),
        ]);
    }
    let mut files = Vec::new();
    if let Some(secure) = site.secure {
        // A secure cluster's server: TLS only (`--port 0`, the client port is the TLS port),
        // its files and users in a config file (the first argument, as redis-server wants);
        // the failover pair replicates over TLS as its own user, and admits the Sentinels'.
        let conf = site.root.join("secure.conf");
        let port = topo.client_port(spec).to_string();
        args[1] = "0".into();
        args.splice(0..0, [conf.display().to_string()]);
        args.extend(["--tls-port".into(), port]);
        let mut contents = crate::secure::managed_config(secure);
        if spec.group == FAILOVER {
            contents.push_str(&crate::secure::failover_config(secure));
        }
        files.push(File {
            path: conf,
            contents,
            only_if_absent: false,
        });
    }
    Launch {
        program: "redis-server",
        args,
        dirs: vec![site.data()],
        // No persistence means empty at every start, even if replication left a file.
        remove: vec![site.data().join("dump.rdb")],
        files,
    }
}

/// `sentinel.conf` (written only when absent) and the `redis-sentinel` command line.
pub(crate) fn sentinel(spec: &ServerSpec, site: &Site) -> Launch {
    let topo = site.topology;
    let conf = site.data().join("sentinel.conf");
    let primary = initial_primary();
    let log = match &site.log {
        Some(log) => format!("logfile {}\n", log.display()),
        None => String::new(),
    };
    let text = format!(
        "port {port}\nbind {ip}\nprotected-mode no\ndaemonize no\ndir {dir}\n{log}\
         sentinel monitor {m} {pip} {pport} 2\n\
         sentinel down-after-milliseconds {m} 1000\n\
         sentinel failover-timeout {m} 3000\n\
         sentinel parallel-syncs {m} 1\n{secure}",
        secure = site.secure.map_or(String::new(), |s| {
            crate::secure::sentinel_config(s, SENTINEL_MASTER_NAME, topo.client_port(spec))
        }),
        // Secure: TLS only, the client port is `tls-port` (in the secure lines).
        port = if site.secure.is_some() {
            0
        } else {
            topo.client_port(spec)
        },
        ip = site.bind,
        dir = site.data().display(),
        m = SENTINEL_MASTER_NAME,
        pip = topo.ip(primary),
        pport = topo.client_port(primary),
    );
    Launch {
        program: "redis-sentinel",
        args: vec![conf.display().to_string()],
        dirs: vec![site.data()],
        remove: Vec::new(),
        files: vec![File {
            path: conf,
            contents: text,
            only_if_absent: true,
        }],
    }
}

/// `PING`, the health check of a Redis server.
pub(crate) fn ping(endpoint: &str) -> Exchange {
    Exchange {
        addr: endpoint.to_string(),
        request: b"*1\r\n$4\r\nPING\r\n".to_vec(),
        complete: |r| r.ends_with(b"\r\n"),
    }
}

/// `true` when `PING` answered `+PONG`.
pub(crate) fn pong(reply: &[u8]) -> bool {
    reply.starts_with(b"+PONG")
}

/// `INFO server`, the version source.
pub(crate) fn info_server(endpoint: &str) -> Exchange {
    Exchange {
        addr: endpoint.to_string(),
        request: b"*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n".to_vec(),
        complete: bulk_complete,
    }
}

/// `redis_version` from `INFO server`.
pub(crate) fn version(reply: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(reply);
    text.lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .map(|v| v.trim().to_string())
}

/// `true` once a RESP bulk string (`$<len>\r\n<len bytes>\r\n`) has fully arrived.
pub(crate) fn bulk_complete(reply: &[u8]) -> bool {
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

/// `SENTINEL get-master-addr-by-name`, asked of a Sentinel: its health check (it answers and
/// names a primary) and how the failover fault finds the current primary.
pub fn primary_query(sentinel: &str) -> Exchange {
    let name = SENTINEL_MASTER_NAME;
    let request = format!(
        "*3\r\n$8\r\nSENTINEL\r\n$23\r\nget-master-addr-by-name\r\n${}\r\n{name}\r\n",
        name.len()
    );
    Exchange {
        addr: sentinel.to_string(),
        request: request.into_bytes(),
        complete: two_bulks,
    }
}

/// The primary (`host:port`) a reply to [`primary_query`] names, `None` when it names none.
pub fn primary(reply: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(reply);
    let mut lines = text.split("\r\n");
    if lines.next()? != "*2" {
        return None;
    }
    let mut values = lines.filter(|l| !l.starts_with('$'));
    let host = values.next()?;
    let port = values.next()?;
    Some(format!("{host}:{port}"))
}

/// `true` once a two-element array of bulk strings (or a null/error reply) has arrived.
fn two_bulks(reply: &[u8]) -> bool {
    if !reply.starts_with(b"*2") {
        return reply.ends_with(b"\r\n");
    }
    reply.windows(2).filter(|w| *w == b"\r\n").count() >= 5
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_replies() {
        assert!(pong(b"+PONG\r\n"));
        let info = b"$32\r\n# Server\r\nredis_version:7.0.15\r\n\r\n";
        assert!(bulk_complete(info));
        assert!(!bulk_complete(&info[..12]));
        assert_eq!(version(info).as_deref(), Some("7.0.15"));
        let named = b"*2\r\n$9\r\n127.0.0.1\r\n$5\r\n16390\r\n";
        assert_eq!(primary(named).as_deref(), Some("127.0.0.1:16390"));
        assert_eq!(primary(b"*-1\r\n"), None);
    }

    #[test]
    fn a_two_bulk_reply_is_complete_only_when_whole() {
        assert!(!two_bulks(b"*2\r\n$9\r\n127.0.0.1\r\n"));
        assert!(two_bulks(b"*2\r\n$9\r\n127.0.0.1\r\n$5\r\n16390\r\n"));
        assert!(two_bulks(b"*-1\r\n"));
    }
}
