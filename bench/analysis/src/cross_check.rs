//! The servers' request count beside lockbench's own: a figure only when it is one.
//!
//! `req/acq` prints two counts of the requests a run sent, lockbench's clients' and the
//! servers' own counters' (read before and after the run). The second is a cross-check, and a
//! cross-check that cannot be trusted must say so rather than print a number: the servers'
//! figure is *unknown*, with the reason, when
//!
//! - a server's counters could not be read before or after the run;
//! - a server's counters restarted during the run (a new incarnation, or a counter that went
//!   backwards: a ZooKeeper member rejoining the ensemble after a partition makes its
//!   statistics anew; see `lockbench_core::counters`);
//! - the two counts disagree by more than [`TOLERANCE`] of lockbench's.
//!
//! The tolerance is what the servers legitimately count beyond lockbench in normal runs, with
//! room to spare. Measured on the managed cluster, 2 cores, 2026-11-25 (server count over
//! lockbench's, `lockbench run SCENARIO --set backends=zk-fair,zk-curator,etcd-lease,etcd-lockapi`):
//!
//! | run | load | zk-fair | etcd-lease | etcd-lockapi |
//! |---|---|---|---|---|
//! | `quick` (8 clients, 1 key, 6 s) | 5 | +3.9 % | +3.7 % (keep-alives in) | +2.1 % (keep-alives out) |
//! | `quick` | 17 | +5.3 % | +1.1 % | +2.4 % |
//! | chaos-quick's fencing workload without its faults (3 clients, 2 s sessions and leases, 22 s) | 5 | +10.3 % | +5.6 % (keep-alives in) | +1.9 % (keep-alives out; +14.6 % in) |
//! | the same | 17 | +15.6 % | +0.9 % | +1.9 % |
//!
//! Redis counts exactly what lockbench sends (within one request per client at the stop, the
//! `cli` tests). The excess is what the counters include and lockbench does not count:
//! ZooKeeper's pings (a client idle for a third of its session timeout pings, so the share
//! grows as clients wait longer: the loaded fencing run's +15.6 %), connects and session
//! closes; etcd's lease revocations at close. 25 % is 1.6 times the largest. A larger gap is
//! traffic lockbench did not send (another user of the cluster, or a ZooKeeper run whose
//! clients mostly sit idle, holding or waiting for many ping intervals, so that the servers'
//! count is mostly pings), requests it sent that the servers never counted, or a counting
//! bug: the servers' figure is then no cross-check of lockbench's, and says so.

use lockbench_core::ServerCounters;
use serde::{Deserialize, Serialize};

/// The servers' request counters read before and after a run.
#[derive(Debug, Clone)]
pub struct CounterReadings {
    /// Before the first client connected.
    pub before: Result<ServerCounters, String>,
    /// After the last client closed.
    pub after: Result<ServerCounters, String>,
    /// Requests the server-side observer sent, which the servers counted too: taken off
    /// their count.
    pub observer_requests: u64,
}

/// Requests lockbench sent, counted by its clients and by the servers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Requests {
    /// Counted by lockbench's clients over the whole run (warm-up included); `null` when the
    /// recipe runs inside a library that cannot be counted.
    pub client_counted: Option<u64>,
    /// The servers' own counter delta over the same span; `null` if it could not be read or
    /// is no count (a server's counters restarted in between). Present but no figure when the
    /// two counts disagree beyond the tolerance (`server_unknown` says so).
    pub server_counted: Option<u64>,
    /// What the server counter is.
    pub server_source: String,
    /// Why the server counter could not be read, if it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_error: Option<String>,
    /// Why the servers' figure is unknown (`server_per_acquisition` is then `null`): their
    /// counters could not be read, a server's counters restarted or went backwards during
    /// the run, or the two counts disagree beyond the stated tolerance. Absent when the figure
    /// stands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_unknown: Option<String>,
    /// Set when the servers counted fewer requests than the run had acquisitions (each sends
    /// at least one): the requests did not reach the servers the backend names. The safety
    /// verdict is then `unknown`, and the run says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unseen: Option<String>,
    /// `server_counted / acquisitions_total`; `null` when `server_unknown` says why.
    pub server_per_acquisition: Option<f64>,
    /// `client_counted / acquisitions_total`.
    pub client_per_acquisition: Option<f64>,
}

/// How far the servers' request count may be from lockbench's, as a fraction of lockbench's,
/// before the servers' figure is reported unknown (see the module docs for the measurements).
pub const TOLERANCE: f64 = 0.25;

/// From this many acquisitions on, the servers' count must reach one request per acquisition.
/// Every acquisition sends at least one request to a server (a create, a `SET`, a transaction),
/// whatever else the recipe sends; a count below that means requests that never reached the
/// servers the backend names (an adapter whose library answers without calling them, a
/// cluster description that points somewhere else). Below this many acquisitions, the reads
/// around the run are too coarse to tell.
pub const UNSEEN_FROM: u64 = 20;

/// The `requests` figures of a run: lockbench's count `client`, the servers' counters read
/// around the run, and the run's `acquisitions` (warm-up included, the span both counts cover).
pub fn requests(client: Option<u64>, counters: &CounterReadings, acquisitions: u64) -> Requests {
    let per = |n: u64| (acquisitions > 0).then(|| round3(n as f64 / acquisitions as f64));
    let (server, source, error, unknown) = match (&counters.before, &counters.after) {
        (Ok(b), Ok(a)) => match a.since(b) {
            Ok(delta) => {
                let delta = delta.saturating_sub(counters.observer_requests);
                let unknown = client.and_then(|c| disagreement(c, delta));
                (Some(delta), a.source.clone(), None, unknown)
            }
            Err(why) => (None, a.source.clone(), None, Some(why)),
        },
        (Err(e), _) | (_, Err(e)) => (
            None,
            String::new(),
            Some(e.clone()),
            Some(format!("the servers' counters could not be read: {e}")),
        ),
    };
    Requests {
        client_counted: client,
        server_counted: server,
        server_source: source,
        server_error: error,
        server_per_acquisition: server.filter(|_| unknown.is_none()).and_then(per),
        server_unknown: unknown,
        unseen: server.and_then(|n| unseen(n, acquisitions)),
        client_per_acquisition: client.and_then(per),
    }
}

/// Why `server` is no cross-check of `client`, if the two are further apart than the tolerance.
fn disagreement(client: u64, server: u64) -> Option<String> {
    let apart = client.abs_diff(server) as f64;
    (apart > TOLERANCE * client as f64).then(|| {
        let how = if client == 0 {
            "lockbench counted none".to_string()
        } else {
            format!(
                "{:+.0} % of lockbench's",
                (server as f64 - client as f64) * 100.0 / client as f64
            )
        };
        format!(
            "the servers counted {server} requests, lockbench {client} ({how}): beyond the \
             ±{:.0} % tolerance",
            TOLERANCE * 100.0
        )
    })
}

/// Why `server` requests cannot account for `acquisitions`, when they are fewer.
fn unseen(server: u64, acquisitions: u64) -> Option<String> {
    (acquisitions >= UNSEEN_FROM && server < acquisitions).then(|| {
        format!(
            "the servers counted {server} requests for {acquisitions} acquisitions, fewer than \
             one each: the clients' requests did not reach the servers this backend names (an \
             adapter's library answering without calling them, or endpoints that lead \
             elsewhere), so its verdict is no verdict on those servers"
        )
    })
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockbench_core::{Incarnation, ServerCount, ServerCounters};

    fn reading(servers: &[(&str, u64, &str)]) -> Result<ServerCounters, String> {
        Ok(ServerCounters {
            source: "test counter".into(),
            requests: servers.iter().map(|s| s.1).sum(),
            servers: servers
                .iter()
                .map(|(name, requests, id)| ServerCount {
                    server: name.to_string(),
                    requests: *requests,
                    incarnation: Some(Incarnation::Id(id.to_string())),
                })
                .collect(),
        })
    }

    fn readings(
        before: Result<ServerCounters, String>,
        after: Result<ServerCounters, String>,
    ) -> CounterReadings {
        CounterReadings {
            before,
            after,
            observer_requests: 0,
        }
    }

    #[test]
    fn agreeing_counts_are_both_figures() {
        let r = readings(
            reading(&[("zk1", 100, "a"), ("zk2", 0, "b")]),
            reading(&[("zk1", 300, "a"), ("zk2", 120, "b")]),
        );
        let q = requests(Some(300), &r, 100);
        assert_eq!(q.server_counted, Some(320));
        assert_eq!(q.server_per_acquisition, Some(3.2));
        assert_eq!(q.client_per_acquisition, Some(3.0));
        assert_eq!(q.server_unknown, None);
    }

    /// An adapter counts nothing itself; servers that saw fewer requests than the run had
    /// acquisitions say its library never called them.
    #[test]
    fn fewer_server_requests_than_acquisitions_are_unseen() {
        let r = readings(reading(&[("r1", 1000, "a")]), reading(&[("r1", 1003, "a")]));
        let why = requests(None, &r, 500)
            .unseen
            .expect("3 requests for 500 grants");
        assert!(
            why.contains("counted 3 requests for 500 acquisitions"),
            "{why}"
        );
        let r = readings(reading(&[("r1", 1000, "a")]), reading(&[("r1", 1500, "a")]));
        assert_eq!(
            requests(None, &r, 500).unseen,
            None,
            "one request each is enough"
        );
        let r = readings(reading(&[("r1", 1000, "a")]), reading(&[("r1", 1000, "a")]));
        assert_eq!(
            requests(None, &r, UNSEEN_FROM - 1).unseen,
            None,
            "too few to tell"
        );
    }

    #[test]
    fn the_observers_requests_are_taken_off() {
        let mut r = readings(reading(&[("e1", 0, "a")]), reading(&[("e1", 340, "a")]));
        r.observer_requests = 40;
        let q = requests(Some(300), &r, 100);
        assert_eq!(q.server_counted, Some(300));
        assert_eq!(q.server_unknown, None);
    }

    #[test]
    fn a_restarted_server_makes_the_figure_unknown_naming_it() {
        // zk2 rejoined: its count went from 1521 to 1, the sum still looks plausible.
        let r = readings(
            reading(&[("zk1", 100, "a"), ("zk2", 1521, "b")]),
            reading(&[("zk1", 2000, "a"), ("zk2", 1, "b")]),
        );
        let q = requests(Some(1339), &r, 350);
        assert_eq!(q.server_per_acquisition, None);
        assert_eq!(q.server_counted, None);
        let why = q.server_unknown.unwrap();
        assert!(why.contains("zk2's counters went backwards"), "{why}");
        // A restart detected by its incarnation alone, without a client count (zk-curator).
        let r = readings(reading(&[("zk1", 10, "a")]), reading(&[("zk1", 400, "b")]));
        let q = requests(None, &r, 350);
        assert_eq!(q.server_per_acquisition, None);
        assert_eq!(
            q.server_unknown.as_deref(),
            Some("zk1's counters restarted during the run")
        );
    }

    #[test]
    fn counters_that_could_not_be_read_make_the_figure_unknown() {
        let r = readings(
            reading(&[("e1", 0, "a")]),
            Err("e1/metrics: refused".into()),
        );
        let q = requests(Some(10), &r, 5);
        assert_eq!(q.server_error.as_deref(), Some("e1/metrics: refused"));
        assert_eq!(q.server_per_acquisition, None);
        assert!(q.server_unknown.unwrap().contains("could not be read"));
    }

    #[test]
    fn a_disagreement_beyond_the_tolerance_is_named_not_printed() {
        // etcd-lockapi in chaos-quick: 2.15 | 3.40 per acquisition.
        let r = readings(reading(&[("e1", 0, "a")]), reading(&[("e1", 340, "a")]));
        let q = requests(Some(215), &r, 100);
        assert_eq!(q.server_counted, Some(340));
        assert_eq!(q.server_per_acquisition, None);
        assert_eq!(q.client_per_acquisition, Some(2.15));
        let why = q.server_unknown.unwrap();
        assert!(
            why.contains("340") && why.contains("215") && why.contains("+58 %"),
            "{why}"
        );
        // Just inside the tolerance, both ways.
        for server in [125, 75] {
            let r = readings(reading(&[("e1", 0, "a")]), reading(&[("e1", server, "a")]));
            assert_eq!(requests(Some(100), &r, 50).server_unknown, None, "{server}");
        }
        // Nothing counted by lockbench, something by the servers.
        let r = readings(reading(&[("e1", 0, "a")]), reading(&[("e1", 3, "a")]));
        assert!(
            requests(Some(0), &r, 0)
                .server_unknown
                .unwrap()
                .contains("lockbench counted none")
        );
    }
}
