//! What the failover fault ([`crate::failover_fault`]) and the pair's leader lookup ask the
//! failover pair and its Sentinels, through the chaos controller's [`ServerAccess`]: who is
//! the primary, how many locks a server holds and how many grants it made, `REPLICAOF`, and a
//! server's replication role.
//!
//! On a secure cluster the Sentinels are asked as lockbench's user, the pair's script and
//! `REPLICAOF` as Redis's administrator (lockbench's user may not send them).

use crate::system::Sentinel;
use crate::{admin_eval, server};
use lockbench_core::{Login, ServerAccess, ServerSpec, System};
use std::time::{Duration, Instant};

/// How many lock keys (`*lock:*`) a server holds, and its grant count (the sum of
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

/// The current primary of the failover pair (its name), by the first Sentinel that answers.
pub(crate) async fn primary(
    access: &dyn ServerAccess,
    pair: &[&'static ServerSpec],
) -> Result<String, String> {
    for s in Sentinel.servers() {
        let ask = server::primary_query(&access.endpoint(s));
        let reply = access
            .ask(s, ask.request, ask.complete, Login::Client)
            .await
            .ok();
        let Some(addr) = reply.and_then(|r| server::primary(&r)) else {
            continue;
        };
        return pair
            .iter()
            .find(|p| access.endpoint(p) == addr)
            .map(|p| p.name.to_string())
            .ok_or_else(|| format!("Sentinel {} names {addr}, not a server of the pair", s.name));
    }
    Err("no Sentinel answered".into())
}

/// How many lock keys `spec` holds right now, and how many grants it has made.
pub(crate) async fn locks(
    access: &dyn ServerAccess,
    spec: &'static ServerSpec,
) -> Result<(i64, i64), String> {
    match admin_eval::eval(access, spec, LOCKS, &[]).await?.as_slice() {
        [locks, grants] => Ok((*locks, *grants)),
        other => Err(format!("unexpected reply {other:?}")),
    }
}

/// Waits until `spec` has made more than `seen` grants; returns how long it took, or `None`
/// after `budget`.
pub(crate) async fn next_grant(
    access: &dyn ServerAccess,
    spec: &'static ServerSpec,
    seen: i64,
    budget: Duration,
) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < budget {
        if locks(access, spec).await.is_ok_and(|(_, n)| n > seen) {
            return Some(start.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    None
}

/// `REPLICAOF <primary>` on `spec`.
pub(crate) async fn replicate(
    access: &dyn ServerAccess,
    spec: &'static ServerSpec,
    primary: &ServerSpec,
) -> Result<(), String> {
    let addr = access.client_addr(primary);
    let (ip, port) = (addr.ip().to_string(), addr.port().to_string());
    let request = format!(
        "*3\r\n$9\r\nREPLICAOF\r\n${}\r\n{ip}\r\n${}\r\n{port}\r\n",
        ip.len(),
        port.len()
    );
    let done = |r: &[u8]| r.ends_with(b"\r\n");
    let reply = access
        .ask(spec, request.into_bytes(), done, Login::Admin)
        .await?;
    if reply.starts_with(b"+OK") {
        Ok(())
    } else {
        Err(format!(
            "REPLICAOF: {}",
            String::from_utf8_lossy(&reply).trim()
        ))
    }
}

/// `spec`'s replication role (`master` / `slave`), from `INFO replication`.
async fn role(access: &dyn ServerAccess, spec: &'static ServerSpec) -> Option<String> {
    let request = b"*2\r\n$4\r\nINFO\r\n$11\r\nreplication\r\n".to_vec();
    let reply = access
        .ask(spec, request, server::bulk_complete, Login::Client)
        .await
        .ok()?;
    let text = String::from_utf8_lossy(&reply);
    text.lines()
        .find_map(|l| l.strip_prefix("role:"))
        .map(|r| r.trim().to_string())
}

/// Waits until `spec` reports `role:slave` (Sentinel has made it a replica).
pub(crate) async fn wait_replica(
    access: &dyn ServerAccess,
    spec: &'static ServerSpec,
    budget: Duration,
) -> bool {
    let start = Instant::now();
    while start.elapsed() < budget {
        if role(access, spec).await.as_deref() == Some("slave") {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canned_access::CannedAccess;
    use crate::system::{FAILOVER, Redis};

    fn pair() -> Vec<&'static ServerSpec> {
        let servers = Redis.servers().iter();
        servers.filter(|s| s.group == FAILOVER).collect()
    }

    /// The first Sentinel is down; the second names `fo2`'s address.
    fn sentinels(server: &str, _request: &[u8]) -> Result<Vec<u8>, String> {
        match server {
            "sen1" => Err("sen1 (127.0.0.1:26390): connection refused".into()),
            _ => Ok(b"*2\r\n$9\r\n127.0.0.1\r\n$5\r\n16391\r\n".to_vec()),
        }
    }

    #[tokio::test]
    async fn the_primary_is_whom_the_first_answering_sentinel_names() {
        let access = CannedAccess::new(sentinels);
        assert_eq!(primary(&access, &pair()).await.as_deref(), Ok("fo2"));
        let asked = access.asked.lock().unwrap();
        let whom: Vec<_> = asked.iter().map(|(s, _, login)| (*s, *login)).collect();
        assert_eq!(whom, [("sen1", Login::Client), ("sen2", Login::Client)]);
        assert!(asked[1].1.contains("get-master-addr-by-name"));
    }

    #[tokio::test]
    async fn a_sentinel_naming_a_stranger_or_none_answering_is_an_error() {
        let stranger =
            CannedAccess::new(|_, _| Ok(b"*2\r\n$8\r\n10.0.0.9\r\n$4\r\n6379\r\n".to_vec()));
        assert_eq!(
            primary(&stranger, &pair()).await,
            Err("Sentinel sen1 names 10.0.0.9:6379, not a server of the pair".into())
        );
        let silent = CannedAccess::new(|s, _| Err(format!("{s}: refused")));
        assert_eq!(
            primary(&silent, &pair()).await,
            Err("no Sentinel answered".into())
        );
    }

    /// The locks-and-grants script and `REPLICAOF` go as the administrator, `INFO` as
    /// lockbench's user.
    #[tokio::test]
    async fn the_pair_is_asked_as_the_administrator_where_it_must_be() {
        let access = CannedAccess::new(|_, request| {
            let request = String::from_utf8_lossy(request);
            Ok(if request.contains("EVAL") {
                b"*2\r\n:0\r\n:41\r\n".to_vec()
            } else if request.contains("REPLICAOF") {
                b"+OK\r\n".to_vec()
            } else {
                b"$22\r\n# Replication\r\nrole:slave\r\n".to_vec()
            })
        });
        let [fo1, fo2] = pair()[..] else {
            panic!("a pair")
        };
        assert_eq!(locks(&access, fo1).await, Ok((0, 41)));
        assert_eq!(replicate(&access, fo1, fo2).await, Ok(()));
        assert!(wait_replica(&access, fo1, Duration::from_secs(1)).await);
        let asked = access.asked.lock().unwrap();
        let logins: Vec<Login> = asked.iter().map(|(_, _, login)| *login).collect();
        assert_eq!(logins, [Login::Admin, Login::Admin, Login::Client]);
        assert!(
            asked[1]
                .1
                .ends_with("$9\r\nREPLICAOF\r\n$9\r\n127.0.0.1\r\n$5\r\n16391\r\n"),
            "{:?}",
            asked[1].1
        );
    }
}
