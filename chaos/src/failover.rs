//! The `redis-failover` fault on the failover pair (`fo1`/`fo2` under three Sentinels): lose a
//! grant on purpose, the way asynchronous replication loses one.
//!
//! Redis replicates asynchronously: a primary answers `OK` to `SET NX` before the replica has
//! the key. If the primary dies in that gap, Sentinel promotes a replica that never saw the
//! grant, and the next client is granted the same lock while the first still believes it holds
//! it. The gap is a millisecond, so a fault that waits for it by chance would almost never hit
//! it. Instead:
//!
//! 1. wait until no lock is held on either node (a release has replicated), then cut the
//!    replication link: a DROP rule in the replica's host against the primary (so the replica
//!    stays reachable for the Sentinels and for clients after its promotion). The lock must be
//!    free at the cut: a release made after it would not replicate either, and the promoted
//!    replica would keep the old holder's key until its TTL (a stuck lock, not a double grant);
//! 2. wait for the primary's next grant, seen as the sum of the lock recipe's fencing counters
//!    (`*fence:*`, INCRed by every grant in the same script) going up;
//! 3. SIGKILL the primary at once.
//!
//! Sentinel (down-after 1 s, quorum 2) then promotes the replica. `heal` flushes the rule and
//! waits for Sentinel's promotion, restarts the old primary empty and makes it a replica of the
//! new primary at once (`REPLICAOF`; Sentinel would, but ~10 s later), and waits until it
//! reports `role:slave`, so the pair is whole again for the next run. Needs the `netns` topology (the cut is an iptables rule).
//!
//! On a secure cluster every request goes over TLS ([`probe`]): the Sentinels are asked as
//! lockbench's user, the pair's script and `REPLICAOF` are sent as Redis's administrator
//! (lockbench's user may not send them: [`probe::exchange_as`]).

use crate::{Reach, probe};
use anyhow::{anyhow, bail};
use lockbench_cluster::{SERVERS, ServerSpec};
use lockbench_registry::redis::{server, system::SENTINEL};
use std::time::{Duration, Instant};

/// How many lock keys (`*lock:*`) `spec` holds, and its grant count (the sum of
/// the fencing counters `*fence:*`, one up with every grant), in one
/// round trip: the free moment after a release may last only a few milliseconds.
const LOCKS: &str = r#"
local cursor = "0"
local n = 0
repeat
  local r = redis.call('SCAN', cursor, 'MATCH', '*lock:*', 'COUNT', 1000)
  cursor = r[1]
  n = n + #r[2]
until cursor == "0"
local sum = 0
repeat
  local r = redis.call('SCAN', cursor, 'MATCH', '*fence:*', 'COUNT', 1000)
  cursor = r[1]
  for _, k in ipairs(r[2]) do
    sum = sum + (tonumber(redis.call('GET', k)) or 0)
  end
until cursor == "0"
return {n, sum}
"#;

/// The current primary of the failover pair, by the first Sentinel that answers.
pub(crate) async fn primary(
    reach: &dyn Reach,
    pair: &[&'static ServerSpec],
) -> anyhow::Result<String> {
    for s in SERVERS.iter().filter(|s| s.group == SENTINEL) {
        let ask = server::primary_query(&reach.topology().endpoint(s));
        let reply = probe::exchange(reach, s, ask.request, ask.complete)
            .await
            .ok();
        let Some(addr) = reply.and_then(|r| server::primary(&r)) else {
            continue;
        };
        return pair
            .iter()
            .find(|p| reach.topology().endpoint(p) == addr)
            .map(|p| p.name.to_string())
            .ok_or_else(|| anyhow!("Sentinel {} names {addr}, not a server of the pair", s.name));
    }
    bail!("no Sentinel answered")
}

/// How many lock keys `spec` holds right now, and how many grants it has made.
pub(crate) async fn locks(reach: &dyn Reach, spec: &ServerSpec) -> anyhow::Result<(i64, i64)> {
    match probe::redis_eval(reach, spec, LOCKS, &[]).await?.as_slice() {
        [locks, grants] => Ok((*locks, *grants)),
        other => Err(anyhow!("unexpected reply {other:?}")),
    }
}

/// Waits until `spec` has made more than `seen` grants; returns how long it took, or `None`
/// after `budget`.
pub(crate) async fn next_grant(
    reach: &dyn Reach,
    spec: &ServerSpec,
    seen: i64,
    budget: Duration,
) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < budget {
        if locks(reach, spec).await.is_ok_and(|(_, n)| n > seen) {
            return Some(start.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    None
}

/// `REPLICAOF <primary>` on `spec`.
pub(crate) async fn replicate(
    reach: &dyn Reach,
    spec: &ServerSpec,
    primary: &ServerSpec,
) -> anyhow::Result<()> {
    let (ip, port) = (
        reach.topology().ip(primary).to_string(),
        reach.topology().client_port(primary).to_string(),
    );
    let request = format!(
        "*3\r\n$9\r\nREPLICAOF\r\n${}\r\n{ip}\r\n${}\r\n{port}\r\n",
        ip.len(),
        port.len()
    );
    let done = |r: &[u8]| r.ends_with(b"\r\n");
    let admin = Some(probe::REDIS_ADMIN);
    let reply = probe::exchange_as(reach, spec, request.into_bytes(), done, admin).await?;
    if reply.starts_with(b"+OK") {
        Ok(())
    } else {
        bail!("REPLICAOF: {}", String::from_utf8_lossy(&reply).trim())
    }
}

/// `spec`'s replication role (`master` / `slave`), from `INFO replication`.
pub(crate) async fn role(reach: &dyn Reach, spec: &ServerSpec) -> Option<String> {
    let request = b"*2\r\n$4\r\nINFO\r\n$11\r\nreplication\r\n".to_vec();
    let reply = probe::exchange(reach, spec, request, bulk_complete)
        .await
        .ok()?;
    let text = String::from_utf8_lossy(&reply);
    text.lines()
        .find_map(|l| l.strip_prefix("role:"))
        .map(|r| r.trim().to_string())
}

/// Waits until `spec` reports `role:slave` (Sentinel has made it a replica).
pub(crate) async fn wait_replica(reach: &dyn Reach, spec: &ServerSpec, budget: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < budget {
        if role(reach, spec).await.as_deref() == Some("slave") {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    false
}

/// `true` once a RESP bulk string has fully arrived (or a one-line reply).
fn bulk_complete(reply: &[u8]) -> bool {
    let Some(end) = reply.windows(2).position(|w| w == b"\r\n") else {
        return false;
    };
    if reply.first() != Some(&b'$') {
        return true;
    }
    let len: usize = std::str::from_utf8(&reply[1..end])
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    reply.len() >= end + 2 + len + 2
}
