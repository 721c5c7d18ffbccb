//! ZooKeeper's own counters: requests (`zk_packets_received` from the `mntr` four-letter
//! word), watch notifications sent (the `mntr` watch-trigger summaries) and per-session
//! packets (`cons`), summed over the ensemble members.
//!
//! Every client packet is received by exactly one member (the one its session is connected
//! to), so the sum over members counts each request once. It also counts what lockbench does
//! not: connect requests, pings, `CloseSession`, watch removals. Results compare its delta
//! with the clients' own counts and say so. A member that does not answer makes the read fail
//! (naming it) rather than silently under-count. A member's statistics start again from zero
//! whenever it (re)joins the ensemble, not only when its process restarts: each reading
//! carries every member's `zk_uptime`, which starts again with them, so that a difference
//! across a rejoin is refused ([`ServerCounters::since`]).

use crate::tls::ZkTls;
use lockbench_core::{Incarnation, ServerCount, ServerCounters, ServerFanout};
use std::collections::HashMap;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// What [`ServerCounters::source`] says for ZooKeeper.
pub(crate) const SOURCE: &str =
    "zookeeper mntr zk_packets_received (sum over members; includes pings)";

const FOUR_LETTER_TIMEOUT: Duration = Duration::from_secs(2);

/// Reads and sums `zk_packets_received` over `members`, with each member's `zk_uptime` as its
/// incarnation: a member that rejoins the ensemble (after a partition, a pause, an election)
/// makes its statistics anew, so its uptime and counters start again from zero.
pub(crate) async fn packets_received(
    members: &[String],
    tls: Option<&ZkTls>,
) -> Result<ServerCounters, String> {
    let reads = members.iter().enumerate().map(|(i, member)| async move {
        let sent_ms = lockbench_core::time::monotonic_nanos() / 1_000_000;
        let text = four_letter_word(member, "mntr", tls)
            .await
            .map_err(|e| format!("zookeeper mntr on {member}: {e}"))?;
        let read_at_ms = lockbench_core::time::monotonic_nanos() / 1_000_000;
        let requests = mntr_value(&text, "zk_packets_received").ok_or_else(|| {
            format!(
                "zookeeper mntr on {member}: no zk_packets_received in the answer \
                 (is mntr in 4lw.commands.whitelist?): {:?}",
                text.lines().next().unwrap_or("")
            )
        })?;
        let incarnation = mntr_value(&text, "zk_uptime").map(|uptime_ms| Incarnation::Uptime {
            uptime_ms,
            read_at_ms,
            // The answer's round trip, and a millisecond of rounding.
            within_ms: read_at_ms - sent_ms + 1,
        });
        Ok::<_, String>(ServerCount {
            server: format!("zk{} ({member})", i + 1),
            requests,
            incarnation,
        })
    });
    let mut servers = Vec::with_capacity(members.len());
    for read in reads {
        servers.push(read.await?);
    }
    Ok(ServerCounters {
        source: SOURCE.into(),
        requests: servers.iter().map(|s| s.requests).sum(),
        servers,
    })
}

/// What [`ServerFanout::source`] says for ZooKeeper.
pub(crate) const FANOUT_SOURCE: &str = "zookeeper mntr zk_sum_node_{created,deleted,changed,children}_watch_count \
     (watchers triggered, sum over members) and zk_watch_count (gauge)";

/// The `mntr` summaries of watchers triggered per event type: their sums count every watch
/// notification a member has sent to its clients.
const WATCH_TRIGGERS: [&str; 4] = [
    "zk_sum_node_created_watch_count",
    "zk_sum_node_deleted_watch_count",
    "zk_sum_node_changed_watch_count",
    "zk_sum_node_children_watch_count",
];

/// Reads and sums the watch-trigger summaries and `zk_watch_count` over `members`.
///
/// Each member fires the watches of the sessions connected to it, so the sum over members
/// counts each notification once. Like every server counter it covers the whole ensemble,
/// including other users of it.
pub(crate) async fn watch_notifications(
    members: &[String],
    tls: Option<&ZkTls>,
) -> Result<ServerFanout, String> {
    let mut notifications = 0;
    let mut watches = 0;
    for member in members {
        let text = four_letter_word(member, "mntr", tls)
            .await
            .map_err(|e| format!("zookeeper mntr on {member}: {e}"))?;
        let value = |name: &str| {
            mntr_value(&text, name)
                .ok_or_else(|| format!("zookeeper mntr on {member}: no {name} in the answer"))
        };
        for name in WATCH_TRIGGERS {
            notifications += value(name)?;
        }
        watches += value("zk_watch_count")?;
    }
    Ok(ServerFanout {
        source: FANOUT_SOURCE.into(),
        notifications,
        watches,
    })
}

/// Packets the ensemble has received from and sent to each session, by session id, from the
/// `cons` four-letter word of every member (plaintext members). `sent - received` is the number of watch
/// notifications the session was sent (every request gets exactly one reply), which makes it
/// a per-session server-side count, unaffected by anyone else using the ensemble.
pub async fn session_packets(members: &[String]) -> Result<HashMap<i64, SessionPackets>, String> {
    let mut sessions = HashMap::new();
    for member in members {
        let text = four_letter_word(member, "cons", None)
            .await
            .map_err(|e| format!("zookeeper cons on {member}: {e}"))?;
        for line in text.lines() {
            if let Some((sid, packets)) = cons_line(line) {
                sessions.insert(sid, packets);
            }
        }
    }
    Ok(sessions)
}

/// One session's packet counts on the member it is connected to (`cons`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SessionPackets {
    /// Packets received from the session (requests and pings).
    pub received: u64,
    /// Packets sent to the session (replies and watch notifications).
    pub sent: u64,
    /// Requests of the session the member has not answered yet.
    pub queued: u64,
}

/// Parses one `cons` line: ` /10.77.0.1:4711[1](queued=0,recved=5,sent=6,sid=0x100...,...)`.
fn cons_line(line: &str) -> Option<(i64, SessionPackets)> {
    let fields = line.split_once('(')?.1.trim_end().trim_end_matches(')');
    let mut packets = SessionPackets::default();
    let mut sid = None;
    for field in fields.split(',') {
        match field.split_once('=')? {
            ("queued", v) => packets.queued = v.parse().ok()?,
            ("recved", v) => packets.received = v.parse().ok()?,
            ("sent", v) => packets.sent = v.parse().ok()?,
            ("sid", v) => {
                sid = Some(u64::from_str_radix(v.trim_start_matches("0x"), 16).ok()? as i64)
            }
            _ => {}
        }
    }
    Some((sid?, packets))
}

/// Sends a four-letter word and returns the whole answer (the server closes the connection
/// after answering). With `tls`, over TLS with the group's CA and client certificate: a secure
/// client port (Netty) answers the words on the TLS connection.
pub(crate) async fn four_letter_word(
    address: &str,
    word: &str,
    tls: Option<&ZkTls>,
) -> Result<String, String> {
    let exchange = async {
        match tls {
            None => {
                let stream = tokio::net::TcpStream::connect(address).await?;
                ask(stream, word).await
            }
            Some(tls) => {
                let stream = tls
                    .handshake(address, FOUR_LETTER_TIMEOUT)
                    .await
                    .map_err(|e| std::io::Error::other(e.to_string()))?;
                ask(stream, word).await
            }
        }
    };
    match tokio::time::timeout(FOUR_LETTER_TIMEOUT, exchange).await {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no answer within {FOUR_LETTER_TIMEOUT:?}")),
    }
}

/// Writes `word` and reads the answer until the server closes the connection.
pub(crate) async fn ask<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    word: &str,
) -> std::io::Result<String> {
    stream.write_all(word.as_bytes()).await?;
    stream.flush().await?;
    let mut answer = Vec::new();
    match stream.read_to_end(&mut answer).await {
        Ok(_) => {}
        // A TLS peer that closes without close_notify after its whole answer.
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !answer.is_empty() => {}
        Err(e) => return Err(e),
    }
    Ok(String::from_utf8_lossy(&answer).into_owned())
}

/// The value of `name` in `mntr` output (`name<TAB>value` lines).
pub(crate) fn mntr_value(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (key, value) = line.split_once('\t')?;
        (key.trim() == name).then(|| value.trim().parse().ok())?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_mntr() {
        let text = "zk_version\t3.8.0-debian\nzk_packets_received\t1234\nzk_packets_sent\t99\n";
        assert_eq!(mntr_value(text, "zk_packets_received"), Some(1234));
        assert_eq!(mntr_value(text, "zk_packets_sent"), Some(99));
        assert_eq!(mntr_value(text, "zk_missing"), None);
        assert_eq!(
            mntr_value(
                "mntr is not executed because it is not in the whitelist.\n",
                "zk_packets_received"
            ),
            None
        );
    }

    #[test]
    fn parses_cons() {
        let line = " /10.77.0.1:45678[1](queued=0,recved=7,sent=9,sid=0x100004f2a1b0003,lop=GETC,est=1,to=4000,lcxid=0x5,lzxid=0x2,lresp=1,llat=0,minlat=0,avglat=0,maxlat=1)";
        assert_eq!(
            cons_line(line),
            Some((
                0x100004f2a1b0003,
                SessionPackets {
                    received: 7,
                    sent: 9,
                    queued: 0
                }
            ))
        );
        assert_eq!(
            cons_line(" /10.77.0.1:59482[0](queued=0,recved=1,sent=0)"),
            None
        );
    }
}
