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
//!
//! On a secure cluster (`lockbench up --secure`) a secured server answers only TLS with the
//! client certificate (and, for Redis, after `AUTH`): its probes go through the cluster's own
//! TLS probe ([`lockbench_cluster::secure_exchange`], what `up`'s health checks use), run on a
//! small runtime on the thread inside the host. `docker exec`'s bash cannot speak TLS, so a
//! container host is not probed that way (compose has no secure profile).

use crate::Reach;
use anyhow::{Context, bail};
use lockbench_cluster::{Host, SecureProbe, ServerSpec, System};
use lockbench_core::Exchange;
pub(crate) use lockbench_registry::redis::secure::ADMIN_USER as REDIS_ADMIN;
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
    exchange_as(reach, spec, request, done, None).await
}

/// [`exchange`], logged in on a secure cluster as the system's administrator `admin` (when
/// given) instead of lockbench's user: for requests that user may not send
/// ([`SecureProbe::as_admin`]). The same as [`exchange`] on a plain cluster.
pub(crate) async fn exchange_as(
    reach: &dyn Reach,
    spec: &ServerSpec,
    request: Vec<u8>,
    done: fn(&[u8]) -> bool,
    admin: Option<&str>,
) -> anyhow::Result<Vec<u8>> {
    let addr = reach.topology().client_addr(spec);
    let host = reach.server_host(spec);
    let secure = secure_for(reach, spec)?;
    let secure = match admin {
        Some(user) => secure.map(|sec| sec.as_admin(user)),
        None => secure,
    };
    let reply = match secure {
        Some(sec) => {
            let ex = Exchange {
                addr: addr.to_string(),
                request,
                complete: done,
            };
            secure_exchange(host, ex, sec, spec.system).await
        }
        None => {
            tokio::task::spawn_blocking(move || match host {
                Some(host) => host.exchange(addr, request, done, PROBE_TIMEOUT),
                None => {
                    lockbench_cluster::entry::exchange_here(addr, &request, done, PROBE_TIMEOUT)
                }
            })
            .await?
        }
    };
    reply.with_context(|| format!("{} ({addr})", spec.name))
}

/// `spec`'s endpoint as its probes name it: on a secure cluster that secures it, its
/// [`System::secure_endpoint`] (etcd's `https://`, for which etcd's leader check asks what a
/// TLS client may), else its plain one.
pub(crate) fn endpoint(reach: &dyn Reach, spec: &ServerSpec) -> anyhow::Result<String> {
    let addr = reach.topology().client_addr(spec);
    Ok(match secure_for(reach, spec)? {
        Some(_) => spec.system.secure_endpoint(addr),
        None => spec.system.endpoint(addr),
    })
}

/// What probes of `spec` need to speak TLS: `None` on a plain cluster or when `spec` stays
/// plain on a secure one ([`lockbench_cluster::secure::honoured`]).
fn secure_for(reach: &dyn Reach, spec: &ServerSpec) -> anyhow::Result<Option<SecureProbe>> {
    Ok(reach
        .secure_probe()
        .context("cannot read the secure cluster's certificates and password")?
        .filter(|_| lockbench_cluster::secure::honoured(spec)))
}

/// `ex` over TLS as [`lockbench_cluster::secure_exchange`] runs it, from inside `host` (a thread
/// in its namespace, with a runtime of its own there) or, without one, from here.
async fn secure_exchange(
    host: Option<Host>,
    ex: Exchange,
    sec: SecureProbe,
    system: &'static dyn System,
) -> anyhow::Result<Vec<u8>> {
    let Some(host) = host else {
        return lockbench_cluster::secure_exchange(&ex, &sec, system).await;
    };
    let inside = move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        rt.block_on(lockbench_cluster::secure_exchange(&ex, &sec, system))
    };
    tokio::task::spawn_blocking(move || host.run_inside(inside).and_then(|r| r)).await?
}

/// Runs a Lua script with no keys and integer arguments on a Redis server (as its
/// administrator on a secure cluster: lockbench's user may not `EVAL`, nor `SCAN` every key);
/// returns the integers of its (array or integer) reply.
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
    let reply = exchange_as(reach, spec, request, resp_complete, Some(REDIS_ADMIN)).await?;
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
