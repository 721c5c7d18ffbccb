//! ZooKeeper's own request counter: `zk_packets_received` from the `mntr` four-letter word,
//! summed over the ensemble members.
//!
//! Every client packet is received by exactly one member (the one its session is connected
//! to), so the sum over members counts each request once. It also counts what lockbench does
//! not: connect requests, pings, `CloseSession`, watch removals. Results compare its delta
//! with the clients' own counts and say so. A member that does not answer makes the read fail
//! (naming it) rather than silently under-count; a restarted member's counter starts again
//! from zero, which a caller comparing two reads across a restart must allow for.

use lockbench_core::ServerCounters;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What [`ServerCounters::source`] says for ZooKeeper.
pub(crate) const SOURCE: &str =
    "zookeeper mntr zk_packets_received (sum over members; includes pings)";

const FOUR_LETTER_TIMEOUT: Duration = Duration::from_secs(2);

/// Reads and sums `zk_packets_received` over `members`.
pub(crate) async fn packets_received(members: &[String]) -> Result<ServerCounters, String> {
    let reads = members.iter().map(|member| async move {
        let text = four_letter_word(member, "mntr")
            .await
            .map_err(|e| format!("zookeeper mntr on {member}: {e}"))?;
        mntr_value(&text, "zk_packets_received").ok_or_else(|| {
            format!(
                "zookeeper mntr on {member}: no zk_packets_received in the answer \
                 (is mntr in 4lw.commands.whitelist?): {:?}",
                text.lines().next().unwrap_or("")
            )
        })
    });
    let mut requests = 0;
    for read in reads {
        requests += read.await?;
    }
    Ok(ServerCounters {
        source: SOURCE.into(),
        requests,
    })
}

/// Sends a four-letter word and returns the whole answer (the server closes the connection
/// after answering).
pub(crate) async fn four_letter_word(address: &str, word: &str) -> Result<String, String> {
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(address).await?;
        stream.write_all(word.as_bytes()).await?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await?;
        Ok::<_, std::io::Error>(answer)
    };
    match tokio::time::timeout(FOUR_LETTER_TIMEOUT, exchange).await {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no answer within {FOUR_LETTER_TIMEOUT:?}")),
    }
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
}
