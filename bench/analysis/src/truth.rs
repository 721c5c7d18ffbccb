//! Server-side truth: how long a client went on believing it held a lock that the servers had
//! already given to someone else, or to no one, and how long it took the client to learn it.
//!
//! The history's ops say what each client believed: it holds key k from its `acquire ok` until
//! it invokes `release`. The history's server lines
//! ([`ServerObservation`](lockbench_core::ServerObservation), recorded with `observe_server`)
//! say who the servers named as holder, on the same clock. A **lost-while-held episode**
//! starts when, during a client's belief, the servers stop naming it after they had named it
//! (so the observer's own lag at the grant never counts): the lock went to another client,
//! or to no one (a ZooKeeper session or etcd lease expired, a Redis key's TTL ran out, which
//! an observation's `expires` places exactly). It ends when the belief does (the client
//! invoked `release`, or the clients' history ended: its last op or fault event) or the
//! servers name the client again. Its
//! **detection latency** runs from its start to the client learning it: the first op of that
//! client on that key, from the episode's start until its next grant, that ended with
//! `lock-lost` or `session-expired` (a release or renew refused, a lease or session found
//! dead); an episode the client never learned of is *undetected*. While the observer was
//! blind nothing starts; an episode under way goes on. A *read* state (Redis) whose read was
//! sent before the grant is no evidence either: the servers may have answered before it.
//!
//! Episodes are charged to fault windows as violations are ([`crate::attribution`]): to each
//! applied window whose span, extended by [`GRACE`](crate::attribution::GRACE), contains the
//! episode's start (the latest such window per fault), or to "no fault".

use crate::attribution::GRACE;
use crate::availability::Window;
use lockbench_core::{
    ClientId, ErrorKind, FencingToken, History, KeyId, Nanos, OpF, OpType, ServerObservation,
    fault_kind,
};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// One lost-while-held episode.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Episode {
    /// The client that still believed it held the lock.
    pub client: ClientId,
    /// The lock.
    pub key: KeyId,
    /// When the servers stopped naming it, seconds on the run clock.
    pub start_s: f64,
    /// How long it lasted (until the client invoked `release`, the history ended, or the
    /// servers named it again), ms.
    pub lost_ms: f64,
    /// The client the servers named instead, if any (`null`: nobody, or a holder named only by
    /// its token).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_holder: Option<ClientId>,
    /// From the start to the client learning it, ms; `null` when it never did.
    pub detection_ms: Option<f64>,
    /// What told the client (`release/fail/lock-lost`, ...); `null` when nothing did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detected_by: Option<String>,
}

/// The figures of one fault window (or of the time outside every window).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TruthWindow {
    /// The fault kind (`pause`, `pause-client`, ...; `none` outside every window).
    pub fault: String,
    /// Start, seconds on the run clock (`null` for `none`).
    pub start_s: Option<f64>,
    /// End, seconds (`null` for `none`).
    pub end_s: Option<f64>,
    /// Episodes that started in it.
    pub lost_while_held: u64,
    /// Their total length, ms.
    pub lost_ms: f64,
    /// Their detection latencies, ms, in time order (undetected ones left out).
    pub detection_ms: Vec<f64>,
    /// Episodes the client never learned of.
    pub undetected: u64,
}

/// Server-side truth for one backend's run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TruthReport {
    /// Server observations in the history.
    pub observations: u64,
    /// Time the observer could not see the servers, summed over keys, ms.
    pub blind_ms: f64,
    /// Lost-while-held episodes.
    pub lost_while_held: u64,
    /// Their total length, ms.
    pub lost_ms: f64,
    /// Episodes the client learned of.
    pub detected: u64,
    /// Episodes the client never learned of.
    pub undetected: u64,
    /// Detection latency percentiles over the detected episodes, ms (`null` with none).
    pub detection_p50_ms: Option<f64>,
    /// 99th percentile (the largest with fewer than 100 episodes).
    pub detection_p99_ms: Option<f64>,
    /// The longest.
    pub detection_max_ms: Option<f64>,
    /// Per applied fault window, then `none` for the episodes outside every window.
    pub windows: Vec<TruthWindow>,
    /// Every episode, in time order.
    pub episodes: Vec<Episode>,
}

/// A client's belief that it holds a key: from its grant to its release's invoke.
struct Belief {
    client: ClientId,
    key: KeyId,
    token: Option<FencingToken>,
    from: Nanos,
    to: Nanos,
    /// The client's next grant on the key (the end of the search for its detection).
    next_grant: Nanos,
}

/// Checks `history`'s beliefs against its server observations, charging episodes to
/// `windows` (from [`crate::availability::windows`]). `None` when the history has no server
/// observations (the run did not observe the servers).
pub fn check(history: &History, windows: &[Window]) -> Option<TruthReport> {
    if history.server().is_empty() {
        return None;
    }
    // The clients' history ends with their last op or the last fault event (the run's stop
    // resumes a paused holder); what the servers saw after it is the run's teardown (clients
    // closing their sessions), not a lock taken from a believer.
    let end = history
        .ops()
        .last()
        .map(|o| o.time)
        .unwrap_or_default()
        .max(history.faults().last().map(|f| f.time).unwrap_or_default());
    let timelines = timelines(history.server(), end);
    let mut report = TruthReport {
        observations: history.server().len() as u64,
        blind_ms: timelines
            .values()
            .flatten()
            .filter(|s| s.blind)
            .map(|s| ms(s.to.0.saturating_sub(s.from.0)))
            .sum(),
        ..TruthReport::default()
    };
    report.blind_ms += 0.0; // an empty sum is -0.0
    for belief in beliefs(history, end) {
        let Some(timeline) = timelines.get(&belief.key) else {
            continue;
        };
        for (start, stop, holder) in lost_spans(&belief, timeline) {
            let learned = history.ops().iter().find(|op| {
                op.client == belief.client
                    && op.key == belief.key
                    && op.time >= start
                    && op.time < belief.next_grant
                    && op.ty != OpType::Invoke
                    && matches!(
                        op.error,
                        Some(ErrorKind::LockLost | ErrorKind::SessionExpired)
                    )
            });
            report.episodes.push(Episode {
                client: belief.client,
                key: belief.key,
                start_s: secs(start),
                lost_ms: ms(stop.0 - start.0),
                server_holder: holder,
                detection_ms: learned.map(|op| ms(op.time.0.saturating_sub(start.0))),
                detected_by: learned.map(|op| {
                    format!(
                        "{}/{}/{}",
                        op.f.name(),
                        op.ty.name(),
                        op.error.map_or("", ErrorKind::name)
                    )
                }),
            });
        }
    }
    report
        .episodes
        .sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
    totals(&mut report, windows);
    Some(report)
}

/// One stretch of a key's server state: who was named, until when; `blind` = unknown.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Stretch {
    from: Nanos,
    to: Nanos,
    /// A read state: the read was sent then (see `ServerObservation::sent`).
    sent: Option<Nanos>,
    holder: Option<ClientId>,
    token: Option<FencingToken>,
    blind: bool,
}

/// Each key's server state as consecutive stretches, an observation's `expires` splitting its
/// stretch into held and free.
fn timelines(observations: &[ServerObservation], end: Nanos) -> HashMap<KeyId, Vec<Stretch>> {
    let mut by_key: HashMap<KeyId, Vec<&ServerObservation>> = HashMap::new();
    for o in observations {
        by_key.entry(o.key).or_default().push(o);
    }
    by_key
        .into_iter()
        .map(|(key, obs)| {
            let mut stretches = Vec::with_capacity(obs.len() + 4);
            for (i, o) in obs.iter().enumerate() {
                let to = obs.get(i + 1).map_or(end, |n| n.time).max(o.time);
                let held_until = o.expires.filter(|e| *e < to).map(|e| e.max(o.time));
                let held = Stretch {
                    from: o.time,
                    to: held_until.unwrap_or(to),
                    sent: o.sent,
                    holder: o.holder,
                    token: o.token,
                    blind: o.blind,
                };
                stretches.push(held);
                if let Some(expired) = held_until {
                    stretches.push(Stretch {
                        from: expired,
                        to,
                        sent: None,
                        holder: None,
                        token: None,
                        blind: o.blind,
                    });
                }
            }
            (key, stretches)
        })
        .collect()
}

/// Every exclusive belief in `history`.
fn beliefs(history: &History, end: Nanos) -> Vec<Belief> {
    let mut open: HashMap<(ClientId, KeyId), (Nanos, Option<FencingToken>)> = HashMap::new();
    let mut out: Vec<Belief> = Vec::new();
    for op in history.ops() {
        let k = (op.client, op.key);
        match (op.f, op.ty) {
            (OpF::Acquire, OpType::Ok) => {
                if let Some((from, token)) = open.remove(&k) {
                    out.push(belief(k, token, from, op.time));
                }
                open.insert(k, (op.time, op.token));
            }
            (OpF::Release, OpType::Invoke) => {
                if let Some((from, token)) = open.remove(&k) {
                    out.push(belief(k, token, from, op.time));
                }
            }
            _ => {}
        }
    }
    out.extend(
        open.into_iter()
            .map(|(k, (from, token))| belief(k, token, from, end)),
    );
    // The next grant of the same client on the same key bounds the detection search.
    let mut grants: HashMap<(ClientId, KeyId), Vec<Nanos>> = HashMap::new();
    for b in &out {
        grants.entry((b.client, b.key)).or_default().push(b.from);
    }
    for g in grants.values_mut() {
        g.sort();
    }
    for b in &mut out {
        let g = &grants[&(b.client, b.key)];
        b.next_grant = g
            .iter()
            .copied()
            .find(|t| *t > b.from)
            .unwrap_or(Nanos(u64::MAX));
    }
    out
}

fn belief(k: (ClientId, KeyId), token: Option<FencingToken>, from: Nanos, to: Nanos) -> Belief {
    Belief {
        client: k.0,
        key: k.1,
        token,
        from,
        to,
        next_grant: Nanos(u64::MAX),
    }
}

/// The spans of `belief` in which the servers, having named its client, named someone else
/// or no one: (start, end, who they named instead).
fn lost_spans(belief: &Belief, timeline: &[Stretch]) -> Vec<(Nanos, Nanos, Option<ClientId>)> {
    let names_it = |s: &Stretch| {
        s.holder == Some(belief.client)
            || (s.holder.is_none() && s.token.is_some() && s.token == belief.token)
    };
    let mut out = Vec::new();
    let mut confirmed = false;
    let mut lost: Option<(Nanos, Option<ClientId>)> = None;
    let first = timeline.partition_point(|s| s.to <= belief.from);
    for s in &timeline[first..] {
        if s.from >= belief.to {
            break;
        }
        if s.blind {
            continue;
        }
        if names_it(s) {
            confirmed = true;
            if let Some((start, holder)) = lost.take() {
                out.push((start, s.from.max(start), holder));
            }
        } else if s.sent.is_some_and(|sent| sent < belief.from) {
            // Read before the grant: says nothing about this belief.
            continue;
        } else if confirmed && lost.is_none() {
            lost = Some((s.from.max(belief.from), s.holder));
        }
    }
    if let Some((start, holder)) = lost {
        out.push((start, belief.to.max(start), holder));
    }
    out
}

/// The report's totals, percentiles and per-window figures from its episodes.
fn totals(report: &mut TruthReport, windows: &[Window]) {
    let grace = GRACE.as_secs_f64();
    let mut per: Vec<TruthWindow> = windows
        .iter()
        .filter(|w| w.applied)
        .map(|w| TruthWindow {
            fault: fault_kind(&w.fault, &w.targets),
            start_s: Some(w.start_s),
            end_s: Some(w.end_s),
            ..TruthWindow::default()
        })
        .collect();
    let mut outside = TruthWindow {
        fault: "none".into(),
        ..TruthWindow::default()
    };
    let mut detections = Vec::new();
    for e in &report.episodes {
        report.lost_while_held += 1;
        report.lost_ms += e.lost_ms;
        match e.detection_ms {
            Some(d) => {
                report.detected += 1;
                detections.push(d);
            }
            None => report.undetected += 1,
        }
        let mut latest: BTreeMap<&str, usize> = BTreeMap::new();
        for (i, w) in per.iter().enumerate() {
            let (start, end) = (w.start_s.unwrap_or(0.0), w.end_s.unwrap_or(0.0));
            if e.start_s >= start && e.start_s <= end + grace {
                let slot = latest.entry(w.fault.as_str()).or_insert(i);
                if per[*slot].start_s < w.start_s {
                    *slot = i;
                }
            }
        }
        let charged: Vec<usize> = latest.into_values().collect();
        let targets: Vec<&mut TruthWindow> = if charged.is_empty() {
            vec![&mut outside]
        } else {
            per.iter_mut()
                .enumerate()
                .filter(|(i, _)| charged.contains(i))
                .map(|(_, w)| w)
                .collect()
        };
        for w in targets {
            w.lost_while_held += 1;
            w.lost_ms = round3(w.lost_ms + e.lost_ms);
            match e.detection_ms {
                Some(d) => w.detection_ms.push(d),
                None => w.undetected += 1,
            }
        }
    }
    report.lost_ms = round3(report.lost_ms);
    report.blind_ms = round3(report.blind_ms);
    detections.sort_by(f64::total_cmp);
    let pick = |q: f64| {
        (!detections.is_empty()).then(|| {
            let i = ((detections.len() as f64 * q).ceil() as usize).clamp(1, detections.len());
            detections[i - 1]
        })
    };
    report.detection_p50_ms = pick(0.5);
    report.detection_p99_ms = pick(0.99);
    report.detection_max_ms = detections.last().copied();
    per.push(outside);
    report.windows = per;
}

fn ms(nanos: u64) -> f64 {
    round3(nanos as f64 / 1e6)
}

fn secs(t: Nanos) -> f64 {
    (t.0 as f64 / 1e9 * 1e6).round() / 1e6
}

fn round3(x: f64) -> f64 {
    (x * 1e3).round() / 1e3
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockbench_core::Op;

    fn t(ms: u64) -> Nanos {
        Nanos(ms * 1_000_000)
    }

    fn op(ms: u64, c: u32, f: OpF, ty: OpType, error: Option<ErrorKind>) -> Op {
        let token = (f == OpF::Acquire && ty == OpType::Ok).then_some(FencingToken(u64::from(c)));
        Op::complete(t(ms), ClientId(c), f, KeyId(0), ty, token, error)
    }

    fn seen(ms: u64, holder: Option<u32>) -> ServerObservation {
        ServerObservation::holder(t(ms), KeyId(0), holder.map(ClientId))
    }

    /// Client 0 is granted at 10 ms and paused; the server names it at 11 ms with a TTL to
    /// 20 ms, client 1 gets the lock at 25 ms; client 0 releases at 30 ms and hears lock-lost
    /// at 31 ms.
    fn expired_under_a_pause() -> History {
        let ops = vec![
            op(10, 0, OpF::Acquire, OpType::Ok, None),
            op(25, 1, OpF::Acquire, OpType::Ok, None),
            Op::invoke(t(30), ClientId(0), OpF::Release, KeyId(0)),
            op(31, 0, OpF::Release, OpType::Fail, Some(ErrorKind::LockLost)),
            Op::invoke(t(40), ClientId(1), OpF::Release, KeyId(0)),
            op(41, 1, OpF::Release, OpType::Ok, None),
        ];
        let mut named = seen(11, Some(0));
        named.expires = Some(t(20));
        let server = vec![named, seen(26, Some(1)), seen(42, None)];
        History::from_unordered(ops).with_server(server)
    }

    #[test]
    fn an_expiry_under_a_pause_is_lost_while_held_until_the_release_and_detected_by_it() {
        let r = check(&expired_under_a_pause(), &[]).unwrap();
        assert_eq!(r.lost_while_held, 1, "{r:?}");
        let e = &r.episodes[0];
        assert_eq!((e.client, e.start_s, e.lost_ms), (ClientId(0), 0.02, 10.0));
        assert_eq!(e.server_holder, None, "nobody held it from the expiry on");
        assert_eq!(e.detection_ms, Some(11.0));
        assert_eq!(e.detected_by.as_deref(), Some("release/fail/lock-lost"));
        assert_eq!((r.detected, r.undetected), (1, 0));
        assert_eq!(r.detection_p50_ms, Some(11.0));
        assert_eq!(
            r.windows.last().unwrap().lost_while_held,
            1,
            "charged to none"
        );
    }

    #[test]
    fn a_clean_hand_off_and_the_observers_lag_at_a_grant_are_not_lost() {
        let ops = vec![
            op(10, 0, OpF::Acquire, OpType::Ok, None),
            Op::invoke(t(20), ClientId(0), OpF::Release, KeyId(0)),
            op(21, 0, OpF::Release, OpType::Ok, None),
            op(21, 1, OpF::Acquire, OpType::Ok, None),
            Op::invoke(t(30), ClientId(1), OpF::Release, KeyId(0)),
        ];
        // The server names 0 a little after its grant, 1 a little after its grant.
        let server = vec![
            seen(5, None),
            seen(12, Some(0)),
            seen(20, None),
            seen(23, Some(1)),
        ];
        let r = check(&History::from_unordered(ops).with_server(server), &[]).unwrap();
        assert_eq!(r.lost_while_held, 0, "{:?}", r.episodes);
        assert_eq!(r.observations, 4);
    }

    #[test]
    fn a_holder_named_by_token_is_matched_by_token_and_blindness_starts_nothing() {
        let ops = vec![
            op(10, 3, OpF::Acquire, OpType::Ok, None),
            Op::invoke(t(30), ClientId(3), OpF::Release, KeyId(0)),
        ];
        let by_token = |ms, token| ServerObservation {
            token: Some(FencingToken(token)),
            ..seen(ms, None)
        };
        let server = vec![
            by_token(11, 3),
            ServerObservation::blind(t(15), KeyId(0)),
            by_token(18, 3),
            by_token(20, 4),
        ];
        let h = History::from_unordered(ops).with_server(server);
        let r = check(&h, &[]).unwrap();
        assert_eq!(r.lost_while_held, 1, "{:?}", r.episodes);
        assert_eq!((r.episodes[0].start_s, r.episodes[0].lost_ms), (0.02, 10.0));
        assert_eq!(r.undetected, 1);
        assert_eq!(r.blind_ms, 3.0);
    }

    #[test]
    fn a_read_sent_before_the_grant_is_no_evidence_of_a_loss() {
        // Client 0 holds 10-20 ms and again from 21 ms; a read sent at 20.5 ms (between its
        // release and its next grant) saw no holder but arrived at 22 ms.
        let ops = vec![
            op(10, 0, OpF::Acquire, OpType::Ok, None),
            Op::invoke(t(20), ClientId(0), OpF::Release, KeyId(0)),
            op(21, 0, OpF::Acquire, OpType::Ok, None),
            Op::invoke(t(30), ClientId(0), OpF::Release, KeyId(0)),
        ];
        let read = |ms, sent_us: u64, holder| ServerObservation {
            sent: Some(Nanos(sent_us * 1_000)),
            ..seen(ms, holder)
        };
        let server = vec![read(11, 10_500, Some(0)), read(22, 20_500, None)];
        let h = History::from_unordered(ops.clone()).with_server(server);
        assert_eq!(check(&h, &[]).unwrap().lost_while_held, 0);
        // The same state read after the grant is a loss.
        let server = vec![read(11, 10_500, Some(0)), read(23, 21_500, None)];
        let h = History::from_unordered(ops).with_server(server);
        assert_eq!(check(&h, &[]).unwrap().lost_while_held, 1);
    }

    #[test]
    fn no_server_lines_means_no_report() {
        let h = History::from_unordered(vec![op(10, 0, OpF::Acquire, OpType::Ok, None)]);
        assert_eq!(check(&h, &[]), None);
    }

    #[test]
    fn episodes_are_charged_to_the_window_they_start_in() {
        let h = expired_under_a_pause();
        let w = Window {
            fault: "pause".into(),
            targets: vec!["client1".into()],
            applied: true,
            note: String::new(),
            start_s: 0.010,
            end_s: 0.030,
            before: Default::default(),
            during: Default::default(),
            after: Default::default(),
            recovery_ms: None,
            violations: Default::default(),
        };
        let r = check(&h, &[w]).unwrap();
        assert_eq!(r.windows[0].fault, "pause-client");
        assert_eq!(r.windows[0].lost_while_held, 1);
        assert_eq!(r.windows[0].detection_ms, vec![11.0]);
        assert_eq!(r.windows[1].fault, "none");
        assert_eq!(r.windows[1].lost_while_held, 0);
    }
}
