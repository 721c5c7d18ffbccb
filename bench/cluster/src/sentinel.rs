//! Redis Sentinels over the failover pair (`fo1` primary, `fo2` its replica): the config file,
//! the command line, and the `SENTINEL get-master-addr-by-name` probe used as health check and
//! by everything that needs the current primary.
//!
//! Why these settings: a failover test must finish in seconds, so the primary is declared down
//! after `down-after-milliseconds 1000` by a quorum of 2 of the 3 Sentinels, and a failed
//! failover is retried after `failover-timeout 3000`. Sentinel rewrites its config file as it
//! learns the topology (the new primary after a failover, the other Sentinels, the replicas),
//! so the file is written only when absent: a Sentinel restarted alone keeps what it learned;
//! when no Sentinel runs, `up` starts them from empty data directories (a fresh config
//! monitoring `fo1`).

use crate::launch::{File, Launch, Site};
use crate::net;
use lockbench_core::{SENTINEL_MASTER_NAME, ServerSpec};
use lockbench_registry::redis::system::initial_primary;

/// `sentinel.conf` (written only when absent) and the `redis-sentinel` command line.
pub(crate) fn launch(spec: &ServerSpec, site: &Site) -> Launch {
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
         sentinel parallel-syncs {m} 1\n",
        port = topo.client_port(spec),
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

/// The primary a Sentinel names (`host:port`), `None` when it does not answer or knows none.
pub async fn primary(sentinel: &str) -> Option<String> {
    let name = SENTINEL_MASTER_NAME;
    let request = format!(
        "*3\r\n$8\r\nSENTINEL\r\n$23\r\nget-master-addr-by-name\r\n${}\r\n{name}\r\n",
        name.len()
    );
    let reply = net::exchange(sentinel, request.as_bytes(), two_bulks)
        .await
        .ok()?;
    let text = String::from_utf8_lossy(&reply);
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

/// `true` when the Sentinel answers and names a primary.
pub(crate) async fn healthy(addr: &str) -> bool {
    primary(addr).await.is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_two_bulk_reply_is_complete_only_when_whole() {
        assert!(!two_bulks(b"*2\r\n$9\r\n127.0.0.1\r\n"));
        assert!(two_bulks(b"*2\r\n$9\r\n127.0.0.1\r\n$5\r\n16390\r\n"));
        assert!(two_bulks(b"*-1\r\n"));
    }
}
