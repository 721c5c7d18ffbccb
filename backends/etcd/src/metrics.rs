//! The servers' own request count: `grpc_server_msg_received_total` from each member's
//! Prometheus `/metrics`, summed over every gRPC service and method but the lease keep-alive
//! stream, and over members.
//!
//! Why this counter: it counts every message a member's gRPC server received, unary requests
//! and each message on a stream (watch creates and cancels, lease keep-alives) alike, and it
//! exists on etcd 3.4.23 (checked). Keep-alive pings are left out of the sum because
//! lockbench's own count (`requests_sent`) leaves them out: with 2 s leases they are a ping
//! every 0.67 s per client, which in a slow run (chaos-quick's fencing workload, 3 clients)
//! made the servers' count 15 % above lockbench's, and more with long holds, for no request a
//! recipe sent. It is still above lockbench's count by any other client's traffic, and it does
//! not see the requests the server-side Lock API makes through its in-process client.
//!
//! `/metrics` is served on the client URL, over TLS when the members speak it (with the
//! group's CA and client certificate: a member started with `--client-cert-auth` asks for one
//! on every HTTP request too); one HTTP/1.0 request per member is all it takes
//! ([`crate::http`]), so no HTTP client dependency. It needs no etcd user or permission.

use crate::access::Access;
use lockbench_core::{Incarnation, ServerCount, ServerCounters};
use std::time::Duration;

/// The metric summed.
pub(crate) const METRIC: &str = "grpc_server_msg_received_total";
/// What results print as the counter's source.
pub(crate) const SOURCE: &str = "etcd /metrics: sum of grpc_server_msg_received_total (all \
     services and methods but LeaseKeepAlive) over members";
/// The samples of [`METRIC`] left out: lease keep-alive pings, which lockbench does not count.
const KEEP_ALIVE: &str = "grpc_method=\"LeaseKeepAlive\"";

const TIMEOUT: Duration = Duration::from_secs(3);

/// The watch fan-out metrics (etcd 3.4.23 exposes both, checked by curling a member): watch
/// events sent by the member (after each watcher's filters), and watchers registered now.
pub(crate) const FANOUT: [&str; 2] = [
    "etcd_debugging_mvcc_events_total",
    "etcd_debugging_mvcc_watcher_total",
];
/// What results print as the fan-out figures' source.
pub(crate) const FANOUT_SOURCE: &str = "etcd /metrics: etcd_debugging_mvcc_events_total (watch \
     events sent) and etcd_debugging_mvcc_watcher_total (watchers, a gauge), summed over members";

/// The process metric that says when a member started: its counters start from zero then.
const STARTED: &str = "process_start_time_seconds";

/// [`METRIC`] of every member, each with its process start time as its incarnation, and
/// their sum.
pub(crate) async fn received_messages(access: &Access) -> Result<ServerCounters, String> {
    let mut servers = Vec::with_capacity(access.urls.len());
    for (i, url) in access.urls.iter().enumerate() {
        let body = metrics(access, url).await?;
        servers.push(ServerCount {
            server: format!("etcd{} ({url})", i + 1),
            requests: sum_metric_but(&body, METRIC, Some(KEEP_ALIVE))
                .ok_or_else(|| format!("{url}/metrics has no {METRIC}"))?,
            incarnation: sample(&body, STARTED).map(|v| Incarnation::Id(v.to_string())),
        });
    }
    Ok(ServerCounters {
        source: SOURCE.to_string(),
        requests: servers.iter().map(|s| s.requests).sum(),
        servers,
    })
}

/// One member's `/metrics` text. A failure that a wrong setting explains says which
/// ([`crate::diagnose`]).
async fn metrics(access: &Access, url: &str) -> Result<String, String> {
    match crate::http::get(access, url, "/metrics", TIMEOUT).await {
        Ok(response) => body(url, &response),
        Err(e) => Err(match crate::diagnose::probe(access, url).await {
            Some(why) => format!("{url}/metrics: {why}"),
            None => format!("{url}/metrics: {e}"),
        }),
    }
}

/// Sums each of `metrics` over every member URL, one `/metrics` read per member.
pub(crate) async fn sums<const N: usize>(
    access: &Access,
    metrics: [&str; N],
) -> Result<[u64; N], String> {
    let mut totals = [0u64; N];
    for url in &access.urls {
        let body = self::metrics(access, url).await?;
        for (total, metric) in totals.iter_mut().zip(metrics) {
            *total += sum_metric(&body, metric)
                .ok_or_else(|| format!("{url}/metrics has no {metric}"))?;
        }
    }
    Ok(totals)
}

/// The body of a `200` answer.
fn body(url: &str, response: &[u8]) -> Result<String, String> {
    let text = String::from_utf8_lossy(response);
    match text.split_once("\r\n\r\n") {
        Some((head, body)) if head.starts_with("HTTP/1.") && head.contains(" 200") => {
            Ok(body.to_string())
        }
        _ => Err(format!(
            "{url}/metrics: unexpected answer {:?}",
            text.lines().next().unwrap_or("")
        )),
    }
}

/// The value of unlabelled `metric`, as written.
fn sample<'a>(body: &'a str, metric: &str) -> Option<&'a str> {
    body.lines()
        .find_map(|line| line.strip_prefix(metric)?.strip_prefix(' '))
        .map(str::trim)
}

/// Sums every sample of `metric` (any labels) in a Prometheus text exposition.
fn sum_metric(body: &str, metric: &str) -> Option<u64> {
    sum_metric_but(body, metric, None)
}

/// Sums the samples of `metric` whose labels do not contain `skip` (`name="value"`).
fn sum_metric_but(body: &str, metric: &str, skip: Option<&str>) -> Option<u64> {
    let mut found = false;
    let mut sum = 0f64;
    for line in body.lines() {
        let Some(rest) = line.strip_prefix(metric) else {
            continue;
        };
        if !(rest.starts_with('{') || rest.starts_with(' ')) {
            continue;
        }
        found = true;
        let labels = rest.split_once('}').map_or("", |(labels, _)| labels);
        if skip.is_some_and(|label| labels.contains(label)) {
            continue;
        }
        if let Some(value) = rest.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()) {
            sum += value;
        }
    }
    found.then_some(sum as u64)
}

#[cfg(test)]
mod tests {
    use super::{KEEP_ALIVE, METRIC, sample, sum_metric, sum_metric_but};

    #[test]
    fn leaves_the_keep_alives_out() {
        let body = "grpc_server_msg_received_total{grpc_method=\"Range\",grpc_type=\"unary\"} 12\n\
            grpc_server_msg_received_total{grpc_method=\"LeaseKeepAlive\",grpc_type=\"bidi_stream\"} 95\n\
            grpc_server_msg_received_total{grpc_method=\"Lock\",grpc_type=\"unary\"} 3\n";
        assert_eq!(sum_metric_but(body, METRIC, Some(KEEP_ALIVE)), Some(15));
        assert_eq!(sum_metric(body, METRIC), Some(110));
    }

    #[test]
    fn reads_the_start_time() {
        let body = "# TYPE process_start_time_seconds gauge\n\
            process_start_time_seconds 1.76409e+09\n\
            process_start_time_seconds_other 5\n";
        assert_eq!(
            sample(body, "process_start_time_seconds"),
            Some("1.76409e+09")
        );
        assert_eq!(sample(body, "process_start"), None);
    }

    #[test]
    fn sums_every_labelled_sample_and_ignores_lookalikes() {
        let body = "# TYPE grpc_server_msg_received_total counter\n\
            grpc_server_msg_received_total{grpc_method=\"Range\"} 12\n\
            grpc_server_msg_received_total{grpc_method=\"Watch\"} 3e+00\n\
            grpc_server_msg_received_total_other 100\n";
        assert_eq!(sum_metric(body, "grpc_server_msg_received_total"), Some(15));
        assert_eq!(
            sum_metric("nothing 1\n", "grpc_server_msg_received_total"),
            None
        );
    }
}
