//! The servers' own count of the run's client messages: `/connz` on each server's monitoring
//! port, the `in_msgs` of every connection named `lockbench/<prefix>/c<id>` (the run's
//! clients), open or closed.
//!
//! Why `/connz` and not `/varz`'s `in_msgs`: the server-wide figure counts every message that
//! enters the server, the routes' included, and JetStream's Raft replication between the
//! three servers travels as messages on the routes: each create is counted several times
//! over. A connection's `in_msgs` is exactly what that client published (each create,
//! renewal, delete and leader read is one message, and so is each wake-up it publishes),
//! which is what the clients count themselves ([`lockbench_core::LockClient::requests_sent`]).
//!
//! Closed connections are counted from the server's list of recently closed ones (10,000 by
//! default); a run that closes more than that on one server undercounts. A partition between a
//! client and its server can too: what the client wrote into a connection it then gave up on
//! counts as sent on its side and may never arrive (in `chaos-quick`, with its leader pause and
//! partition, the two agreed within 1 %). Through link proxies the counters find each server's monitoring port from the address the
//! server says it listens on (`monitor.rs`). A server's
//! incarnation is its `server_id`, drawn anew at each start.

use crate::NatsKnobs;
use crate::bucket::connection_name;
use lockbench_core::{Incarnation, ServerCount, ServerCounters};

/// Reads every server's count (each must answer).
pub(crate) async fn read(
    addresses: &[String],
    knobs: &NatsKnobs,
    login: &crate::login::Login,
) -> Result<ServerCounters, String> {
    let prefix = connection_name(&knobs.prefix, "c");
    let mut counts = Vec::new();
    for given in addresses {
        // Through a link proxy the monitoring port is not beside the endpoint: ask the server
        // where it listens (`monitor.rs`).
        let listen =
            crate::monitor::listen_address(given, knobs.response_timeout, login.tls()).await;
        let address = listen.as_deref().unwrap_or(given);
        let connz = crate::monitor::get(
            address,
            "/connz?state=all&limit=100000",
            knobs.response_timeout,
            login.tls(),
        )
        .await
        .map_err(|e| {
            format!(
                "reading /connz: {e}; the counters need every server of the group (a server \
                 down at either reading makes the difference unknown)"
            )
        })?;
        let (requests, id) = sum(&connz, &prefix)?;
        counts.push(ServerCount {
            server: format!("nats ({given})"),
            requests,
            incarnation: Some(Incarnation::Id(id)),
        });
    }
    Ok(ServerCounters {
        source: format!(
            "nats /connz (in_msgs of the connections named {prefix}*, open and recently closed)"
        ),
        requests: counts.iter().map(|c| c.requests).sum(),
        servers: counts,
    })
}

/// The `in_msgs` of the connections whose name starts with `prefix`, and the server's id.
fn sum(connz: &serde_json::Value, prefix: &str) -> Result<(u64, String), String> {
    let id = connz
        .get("server_id")
        .and_then(|s| s.as_str())
        .ok_or("/connz has no server_id")?;
    let conns = connz
        .get("connections")
        .and_then(|c| c.as_array())
        .map_or(&[][..], |c| c.as_slice());
    let n = conns
        .iter()
        .filter(|c| {
            c.get("name")
                .and_then(|n| n.as_str())
                .is_some_and(|n| n.starts_with(prefix))
        })
        .filter_map(|c| c.get("in_msgs").and_then(|m| m.as_u64()))
        .sum();
    Ok((n, id.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_runs_clients_are_summed() {
        let connz = serde_json::json!({
            "server_id": "NABC",
            "connections": [
                {"name": "lockbench/locks.r1/c0", "in_msgs": 5},
                {"name": "lockbench/locks.r1/c12", "in_msgs": 7},
                {"name": "lockbench/locks.r1/observer", "in_msgs": 100},
                {"name": "lockbench/locks.r2/c0", "in_msgs": 1000},
                {"in_msgs": 3}
            ]
        });
        assert_eq!(
            sum(&connz, "lockbench/locks.r1/c").unwrap(),
            (12, "NABC".to_string())
        );
    }
}
