//! Talking to one server from *inside its own host*: one request, one reply, over a blocking
//! `TcpStream` with timeouts, on a thread that has entered the server's namespace.
//!
//! Why inside: a partition drops the coordinator's packets at isolated servers, yet the
//! nemesis must still ask them who leads, or shorten their keys' TTLs. From inside the host
//! the connection goes over its loopback to its own address, which no `-s <peer>` rule drops.
//! In the loopback topology the same call simply connects from here. A container's host is
//! its network namespace (`/proc/<pid>/ns/net`), entered the same way when this process may
//! (root), else the exchange runs inside the container through `docker exec`
//! ([`lockbench_cluster::entry`]).

use crate::Reach;
use anyhow::{Context, bail};
use lockbench_cluster::ServerSpec;
use std::time::Duration;

/// How long one probe may take (connect, then each read).
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// Sends `request` to `spec`'s client port and reads until EOF or `done(reply)`.
pub(crate) async fn exchange(
    reach: &dyn Reach,
    spec: &ServerSpec,
    request: Vec<u8>,
    done: fn(&[u8]) -> bool,
) -> anyhow::Result<Vec<u8>> {
    let addr = reach.topology().client_addr(spec);
    let host = reach.server_host(spec);
    tokio::task::spawn_blocking(move || match host {
        Some(host) => host.exchange(addr, request, done, PROBE_TIMEOUT),
        None => lockbench_cluster::entry::exchange_here(addr, &request, done, PROBE_TIMEOUT),
    })
    .await?
    .with_context(|| format!("{} ({addr})", spec.name))
}

/// Runs a Lua script with no keys and integer arguments on a Redis server; returns the
/// integers of its (array or integer) reply.
pub(crate) async fn redis_eval(
    reach: &dyn Reach,
    spec: &ServerSpec,
    script: &str,
    args: &[String],
) -> anyhow::Result<Vec<i64>> {
    let mut parts: Vec<&[u8]> = vec![b"EVAL", script.as_bytes(), b"0"];
    parts.extend(args.iter().map(|a| a.as_bytes()));
    let mut request = format!("*{}\r\n", parts.len()).into_bytes();
    for p in parts {
        request.extend_from_slice(format!("${}\r\n", p.len()).as_bytes());
        request.extend_from_slice(p);
        request.extend_from_slice(b"\r\n");
    }
    let reply = exchange(reach, spec, request, resp_complete).await?;
    let text = String::from_utf8_lossy(&reply);
    if let Some(err) = text.strip_prefix('-') {
        bail!("redis: {}", err.trim());
    }
    Ok(text
        .lines()
        .filter_map(|l| l.strip_prefix(':'))
        .filter_map(|n| n.trim().parse().ok())
        .collect())
}

/// `true` once an integer, error, or flat array of integers has fully arrived.
fn resp_complete(reply: &[u8]) -> bool {
    let text = String::from_utf8_lossy(reply);
    let lines: Vec<&str> = text.split("\r\n").collect();
    if lines.len() < 2 {
        return false; // no complete line yet
    }
    match lines[0].strip_prefix('*') {
        Some(n) => {
            let n: usize = n.parse().unwrap_or(0);
            lines.len() > n + 1
        }
        None => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resp_replies_complete() {
        assert!(!resp_complete(b"*2\r\n:1\r\n"));
        assert!(resp_complete(b"*2\r\n:1\r\n:0\r\n"));
        assert!(resp_complete(b":5\r\n"));
        assert!(resp_complete(b"-ERR x\r\n"));
        assert!(!resp_complete(b":5"));
    }
}
