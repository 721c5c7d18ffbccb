//! The servers' own count of lock requests, from `INFO commandstats`.
//!
//! Measured on Redis 7.0.15 (see the crate's `commandstats_match_requests_sent` test): neither
//! `total_commands_processed` (in `INFO stats`) nor the sum of every `cmdstat_*` equals the
//! number of requests a client sent, because Redis 7 counts each `redis.call` made *inside* a
//! Lua script as a command too (one `EVALSHA` of the acquire script shows up as `evalsha` +1,
//! `set` +1 and, when granted, `incr` +1, and `total_commands_processed` +3). So lockbench
//! counts only the commands its clients send themselves, which are never called from its
//! scripts on the same server:
//!
//! - `redis-setnx` / `redis-broken-nonx`: `evalsha` and `script|load`;
//! - `redis-pubsub`: the same plus `subscribe` and `unsubscribe` (its `PUBLISH` runs inside the
//!   release script, so Redis counts it as `publish` without the client sending it);
//! - `redlock`: `set`, `evalsha` and `script|load` (Redlock's scripts call only `GET`, `DEL`
//!   and `PEXPIRE`, so every `SET` there was sent by a client).
//!
//! For each it takes `calls + rejected_calls` (a `NOSCRIPT` reply counts in `calls` as a failed
//! call; a request refused before running, such as one with the wrong arity, counts only in
//! `rejected_calls`). The `INFO` requests this module sends are not among those commands, so
//! reading the counter does not move it.

use crate::connect::{Server, config};
use lockbench_core::{Incarnation, ServerCount, ServerCounters};
use std::time::Duration;

/// The commands a `redis-setnx` client sends.
pub(crate) const SETNX_COMMANDS: &[&str] = &["evalsha", "script|load"];
/// The commands a `redis-pubsub` client sends (its `PUBLISH` runs inside the release script).
pub(crate) const PUBSUB_COMMANDS: &[&str] = &["evalsha", "script|load", "subscribe", "unsubscribe"];
/// The commands a Redlock client sends.
pub(crate) const REDLOCK_COMMANDS: &[&str] = &["set", "evalsha", "script|load"];

/// The `source` text for results.
pub(crate) fn source(commands: &[&str], servers: &[Server]) -> String {
    let addresses: Vec<&str> = servers.iter().map(|s| s.address.as_str()).collect();
    format!(
        "redis INFO commandstats, calls + rejected_calls of {} summed over {} \
         (commands run inside Lua scripts are counted by Redis too, so only the commands \
         clients send themselves are summed)",
        commands.join(" + "),
        addresses.join(", ")
    )
}

/// Sums the counter over `servers`, reading them concurrently on fresh connections.
pub(crate) async fn read(servers: &[Server], commands: &[&str]) -> Result<u64, String> {
    let texts = read_texts(servers, "commandstats").await?;
    Ok(texts.iter().map(|t| parse(t, commands)).sum())
}

/// The counter of each of `servers` (named by `name(index, address)`), with its `run_id`
/// from `INFO server` as its incarnation: a restarted server draws a new one, and its
/// commandstats start again from zero.
pub(crate) async fn counters(
    servers: &[Server],
    commands: &[&str],
    name: impl Fn(usize, &str) -> String,
) -> Result<ServerCounters, String> {
    // Two sections in one request (`INFO server commandstats`) need Redis 7; two requests do not.
    let texts = read_texts(servers, "server").await?;
    let stats = read_texts(servers, "commandstats").await?;
    let source = source(commands, servers);
    let servers: Vec<ServerCount> = servers
        .iter()
        .zip(texts.iter().zip(&stats))
        .enumerate()
        .map(|(i, (server, (info, stats)))| ServerCount {
            server: name(i, &server.address),
            requests: parse(stats, commands),
            incarnation: info_field(info, "run_id").map(|id| Incarnation::Id(id.to_string())),
        })
        .collect();
    Ok(ServerCounters {
        source,
        requests: servers.iter().map(|s| s.requests).sum(),
        servers,
    })
}

/// `PUBSUB NUMSUB` of `channels` on `server`, summed: how many subscriptions exist right now.
pub(crate) async fn numsub(server: &Server, channels: &[String]) -> Result<u64, String> {
    if channels.is_empty() {
        return Ok(0);
    }
    let cfg = config(Duration::from_secs(2));
    let mut conn = server
        .connect(&cfg)
        .await
        .map_err(|e| format!("{}: {e}", server.address))?;
    let reply: Vec<(String, u64)> = redis::cmd("PUBSUB")
        .arg("NUMSUB")
        .arg(channels)
        .query_async(&mut conn)
        .await
        .map_err(|e| format!("{}: PUBSUB NUMSUB: {e}", server.address))?;
    Ok(reply.iter().map(|(_, n)| n).sum())
}

/// Each server's `INFO <section>` text.
pub(crate) async fn read_texts(servers: &[Server], section: &str) -> Result<Vec<String>, String> {
    let cfg = config(Duration::from_secs(2));
    let reads = servers.iter().map(|server| {
        let cfg = cfg.clone();
        async move {
            let mut conn = server
                .connect(&cfg)
                .await
                .map_err(|e| format!("{}: {e}", server.address))?;
            let text: String = redis::cmd("INFO")
                .arg(section)
                .query_async(&mut conn)
                .await
                .map_err(|e| format!("{}: INFO {section}: {e}", server.address))?;
            Ok::<String, String>(text)
        }
    });
    futures::future::join_all(reads).await.into_iter().collect()
}

/// The value of `name` in an `INFO` reply (`name:value` lines).
fn info_field<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines().find_map(|line| {
        let (key, value) = line.trim().split_once(':')?;
        (key == name).then_some(value)
    })
}

/// Sums `calls + rejected_calls` of `commands` in an `INFO commandstats` reply.
pub(crate) fn parse(text: &str, commands: &[&str]) -> u64 {
    let mut total = 0;
    for line in text.lines() {
        let Some((name, fields)) = line
            .trim()
            .strip_prefix("cmdstat_")
            .and_then(|l| l.split_once(':'))
        else {
            continue;
        };
        if !commands.contains(&name) {
            continue;
        }
        for field in fields.split(',') {
            if let Some(("calls" | "rejected_calls", n)) = field.split_once('=') {
                total += n.parse::<u64>().unwrap_or(0);
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_only_the_named_commands() {
        let text = "# Commandstats\r\n\
            cmdstat_incr:calls=1,usec=2,usec_per_call=2.00,rejected_calls=0,failed_calls=0\r\n\
            cmdstat_evalsha:calls=4,usec=84,usec_per_call=21.00,rejected_calls=2,failed_calls=1\r\n\
            cmdstat_info:calls=1,usec=26,usec_per_call=26.00,rejected_calls=0,failed_calls=0\r\n\
            cmdstat_script|load:calls=1,usec=37,usec_per_call=37.00,rejected_calls=0,failed_calls=0\r\n\
            cmdstat_set:calls=4,usec=19,usec_per_call=4.75,rejected_calls=0,failed_calls=0\r\n";
        assert_eq!(parse(text, SETNX_COMMANDS), 7);
        assert_eq!(parse(text, REDLOCK_COMMANDS), 11);
    }

    #[test]
    fn reads_the_run_id() {
        let text = "# Server\r\nredis_version:7.0.15\r\nrun_id:3f2a9c\r\nuptime_in_seconds:12\r\n";
        assert_eq!(info_field(text, "run_id"), Some("3f2a9c"));
        assert_eq!(info_field(text, "run"), None);
    }
}
