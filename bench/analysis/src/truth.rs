//! Server-side truth: how long a client went on believing it held a lock that the servers had
//! already given to someone else, or to no one, and how long it took the client to learn it.
//!
//! The history's ops say what each client believed: it holds key k from its `acquire ok` until
//! it invokes `release`. The history's server lines
//! ([`ServerObservation`], recorded with `observe_server`)
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
//! applied window whose span, extended by [`GRACE`], contains the
//! episode's start (the latest such window per fault), or to "no fault".

use crate::attribution::GRACE;
use crate::availability::{self, Window};
use crate::checker::{Checker, CheckerOutcome, Validity, run_on_history};
use crate::figures::Figures;
use lockbench_core::{
    ClientId, ErrorKind, FaultCell, FaultEvent, FencingToken, History, KeyId, Nanos, Op, OpF,
    OpType, ServerObservation,
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
    /// The fault cell (`pause`, `pause-client`, ...; `none` outside every window).
    pub fault: FaultCell,
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

/// What the servers said about one key, as of the last observation (or expiry).
#[derive(Clone, Copy, Debug, Default)]
struct KeyState {
    holder: Option<ClientId>,
    token: Option<FencingToken>,
    /// A read state: when the read was sent.
    sent: Option<Nanos>,
    expires: Option<Nanos>,
    blind: bool,
    /// Since when the key has been blind (for `blind_ms`).
    blind_since: Nanos,
}

/// How a client learned of an episode: when, and by which op (function, type, error).
type Learned = (Nanos, (OpF, OpType, ErrorKind));

/// A client's belief that it holds a key, from its grant until it invokes `release`.
#[derive(Clone, Copy, Debug)]
struct Belief {
    from: Nanos,
    token: Option<FencingToken>,
    /// The servers have named the client during this belief.
    confirmed: bool,
    /// An episode under way: since when, and whom the servers named instead.
    lost: Option<(Nanos, Option<ClientId>)>,
    /// The client learned of the episode under way.
    detected: Option<Learned>,
}

/// An episode before the history's end is known.
struct Raw {
    client: ClientId,
    key: KeyId,
    start: Nanos,
    stop: Nanos,
    holder: Option<ClientId>,
    detected: Option<Learned>,
}

/// The streaming checker: one pass over the ops, fault events and server observations in
/// time order. Its state is per key and per (client, key) plus the episodes found (a handful
/// per fault), never the history.
#[derive(Default)]
pub struct TruthChecker {
    keys: HashMap<KeyId, KeyState>,
    beliefs: HashMap<KeyId, HashMap<ClientId, Belief>>,
    /// Episodes whose client has not learned of them yet, until its next grant on the key.
    pending: HashMap<(ClientId, KeyId), Vec<usize>>,
    episodes: Vec<Raw>,
    observations: u64,
    blind_ns: u64,
    faults: Vec<FaultEvent>,
    /// The clients' history's end: its last op or fault event.
    end: Nanos,
}

impl TruthChecker {
    /// Applies a key's expiry that falls at or before `t`: from the expiry on the servers
    /// hold it for no one.
    fn advance(&mut self, key: KeyId, t: Nanos) {
        let Some(state) = self.keys.get(&key) else {
            return;
        };
        if let Some(expired) = state.expires.filter(|e| *e <= t) {
            let free = KeyState {
                expires: None,
                sent: None,
                holder: None,
                token: None,
                ..*state
            };
            self.keys.insert(key, free);
            self.changed(key, expired);
        }
    }

    /// The servers' state of `key` changed at `at`: every belief on it is judged again.
    fn changed(&mut self, key: KeyId, at: Nanos) {
        let state = self.keys.get(&key).copied().unwrap_or_default();
        let Some(beliefs) = self.beliefs.get_mut(&key) else {
            return;
        };
        let mut ended = Vec::new();
        for (client, belief) in beliefs.iter_mut() {
            if let Some(episode) = judge(*client, belief, &state, at) {
                ended.push((*client, episode));
            }
        }
        for (client, (start, holder, detected)) in ended {
            self.push(Raw {
                client,
                key,
                start,
                stop: at,
                holder,
                detected,
            });
        }
    }

    fn push(&mut self, raw: Raw) {
        if raw.stop <= raw.start {
            return;
        }
        if raw.detected.is_none() {
            self.pending
                .entry((raw.client, raw.key))
                .or_default()
                .push(self.episodes.len());
        }
        self.episodes.push(raw);
    }

    /// Ends `client`'s belief on `key` at `at`.
    fn close(&mut self, client: ClientId, key: KeyId, at: Nanos) {
        let belief = self.beliefs.get_mut(&key).and_then(|b| b.remove(&client));
        if let Some(Belief {
            lost: Some((start, holder)),
            detected,
            ..
        }) = belief
        {
            self.push(Raw {
                client,
                key,
                start,
                stop: at,
                holder,
                detected,
            });
        }
    }

    /// `client` learned at `learned` that its lock on `key` was gone: it detects the episode
    /// under way and those since its grant it had not learned of.
    fn learned(&mut self, client: ClientId, key: KeyId, learned: Learned) {
        let at = learned.0;
        if let Some(b) = self.beliefs.get_mut(&key).and_then(|b| b.get_mut(&client))
            && b.lost.is_some_and(|(start, _)| start <= at)
            && b.detected.is_none()
        {
            b.detected = Some(learned);
        }
        if let Some(waiting) = self.pending.get_mut(&(client, key)) {
            let episodes = &mut self.episodes;
            waiting.retain(|&i| {
                let before = episodes[i].start <= at;
                if before {
                    episodes[i].detected = Some(learned);
                }
                !before
            });
        }
    }
}

/// Judges one belief against the servers' new state; returns an episode that ended (start,
/// whom the servers named, how the client learned).
fn judge(
    client: ClientId,
    belief: &mut Belief,
    state: &KeyState,
    at: Nanos,
) -> Option<(Nanos, Option<ClientId>, Option<Learned>)> {
    if state.blind {
        return None;
    }
    let names_it = state.holder == Some(client)
        || (state.holder.is_none() && state.token.is_some() && state.token == belief.token);
    if names_it {
        belief.confirmed = true;
        let (start, holder) = belief.lost.take()?;
        return Some((start, holder, belief.detected.take()));
    }
    // A state read before the grant says nothing about this belief.
    let stale = state.sent.is_some_and(|sent| sent < belief.from);
    if belief.confirmed && belief.lost.is_none() && !stale {
        belief.lost = Some((at.max(belief.from), state.holder));
    }
    None
}

impl Checker for TruthChecker {
    fn name(&self) -> &'static str {
        "server_truth"
    }

    fn observe(&mut self, op: &Op) {
        self.end = self.end.max(op.time);
        let (client, key) = (op.client, op.key);
        match (op.f, op.ty) {
            (OpF::Acquire, OpType::Ok) => {
                self.advance(key, op.time);
                self.close(client, key, op.time);
                // The search for the client's learning of earlier episodes ends here.
                self.pending.remove(&(client, key));
                let mut belief = Belief {
                    from: op.time,
                    token: op.token,
                    confirmed: false,
                    lost: None,
                    detected: None,
                };
                let state = self.keys.get(&key).copied().unwrap_or_default();
                judge(client, &mut belief, &state, op.time);
                self.beliefs.entry(key).or_default().insert(client, belief);
            }
            (OpF::Release, OpType::Invoke) => {
                self.advance(key, op.time);
                self.close(client, key, op.time);
            }
            (_, OpType::Fail | OpType::Info) => {
                if let Some(error @ (ErrorKind::LockLost | ErrorKind::SessionExpired)) = op.error {
                    self.learned(client, key, (op.time, (op.f, op.ty, error)));
                }
            }
            _ => {}
        }
    }

    fn fault(&mut self, event: &FaultEvent) {
        self.end = self.end.max(event.time);
        self.faults.push(event.clone());
    }

    fn server(&mut self, o: &ServerObservation) {
        self.observations += 1;
        self.advance(o.key, o.time);
        let before = self.keys.get(&o.key).copied().unwrap_or_default();
        if before.blind && !o.blind {
            self.blind_ns += o.time.0.saturating_sub(before.blind_since.0);
        }
        let state = KeyState {
            holder: o.holder,
            token: o.token,
            sent: o.sent,
            expires: o.expires,
            blind: o.blind,
            blind_since: if o.blind && !before.blind {
                o.time
            } else {
                before.blind_since
            },
        };
        self.keys.insert(o.key, state);
        self.changed(o.key, o.time);
    }

    fn finish(mut self: Box<Self>) -> CheckerOutcome {
        let end = self.end;
        let keys: Vec<KeyId> = self.keys.keys().copied().collect();
        for key in &keys {
            self.advance(*key, end);
            let state = self.keys[key];
            if state.blind {
                self.blind_ns += end.0.saturating_sub(state.blind_since.0);
            }
        }
        let open: Vec<(KeyId, ClientId)> = self
            .beliefs
            .iter()
            .flat_map(|(k, b)| b.keys().map(move |c| (*k, *c)))
            .collect();
        for (key, client) in open {
            self.close(client, key, end);
        }
        let mut report = TruthReport {
            observations: self.observations,
            blind_ms: ms(self.blind_ns) + 0.0, // an empty sum is -0.0
            ..TruthReport::default()
        };
        // What the servers did after the clients' history ended is the run's teardown.
        report.episodes = self
            .episodes
            .iter()
            .filter(|e| e.start < end)
            .map(|e| Episode {
                client: e.client,
                key: e.key,
                start_s: secs(e.start),
                lost_ms: ms(e.stop.min(end).0 - e.start.0),
                server_holder: e.holder,
                detection_ms: e.detected.map(|(t, _)| ms(t.0.saturating_sub(e.start.0))),
                detected_by: e.detected.map(|(_, (f, ty, error))| {
                    format!("{}/{}/{}", f.name(), ty.name(), error.name())
                }),
            })
            .collect();
        report
            .episodes
            .sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
        let windows = availability::windows(&History::with_faults(Vec::new(), self.faults));
        totals(&mut report, &windows);
        CheckerOutcome::new("server_truth", Validity::Valid, Figures::Truth(report))
    }
}

/// Checks `history`'s beliefs against its server observations: [`TruthChecker`] over the
/// whole history. `None` when the history has no server observations (the run did not
/// observe the servers).
pub fn check(history: &History) -> Option<TruthReport> {
    if history.server().is_empty() {
        return None;
    }
    let outcome = run_on_history(vec![Box::new(TruthChecker::default())], history);
    match outcome.into_iter().next()?.figures {
        Figures::Truth(report) => Some(report),
        _ => None,
    }
}

/// The report's totals, percentiles and per-window figures from its episodes.
fn totals(report: &mut TruthReport, windows: &[Window]) {
    let grace = GRACE.as_secs_f64();
    let mut per: Vec<TruthWindow> = windows
        .iter()
        .filter(|w| w.applied)
        .map(|w| TruthWindow {
            fault: FaultCell::of(w.fault, &w.targets),
            start_s: Some(w.start_s),
            end_s: Some(w.end_s),
            ..TruthWindow::default()
        })
        .collect();
    let mut outside = TruthWindow {
        fault: FaultCell::NoFault,
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
        let mut latest: BTreeMap<FaultCell, usize> = BTreeMap::new();
        for (i, w) in per.iter().enumerate() {
            let (start, end) = (w.start_s.unwrap_or(0.0), w.end_s.unwrap_or(0.0));
            if e.start_s >= start && e.start_s <= end + grace {
                let slot = latest.entry(w.fault).or_insert(i);
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
        let r = check(&expired_under_a_pause()).unwrap();
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
        let r = check(&History::from_unordered(ops).with_server(server)).unwrap();
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
        let r = check(&h).unwrap();
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
        assert_eq!(check(&h).unwrap().lost_while_held, 0);
        // The same state read after the grant is a loss.
        let server = vec![read(11, 10_500, Some(0)), read(23, 21_500, None)];
        let h = History::from_unordered(ops).with_server(server);
        assert_eq!(check(&h).unwrap().lost_while_held, 1);
    }

    #[test]
    fn no_server_lines_means_no_report() {
        let h = History::from_unordered(vec![op(10, 0, OpF::Acquire, OpType::Ok, None)]);
        assert_eq!(check(&h), None);
    }

    #[test]
    fn episodes_are_charged_to_the_window_they_start_in() {
        use lockbench_core::{FaultEvent, FaultKind, FaultPhase};
        let pause = |ms, phase| FaultEvent {
            time: t(ms),
            fault: FaultKind::Pause,
            phase,
            targets: vec!["client1".into()],
            note: String::new(),
            applied: true,
        };
        let base = expired_under_a_pause();
        let h = History::with_faults(
            base.ops().to_vec(),
            vec![pause(10, FaultPhase::Start), pause(30, FaultPhase::Stop)],
        )
        .with_server(base.server().to_vec());
        let r = check(&h).unwrap();
        assert_eq!(r.windows[0].fault, FaultCell::Clients(FaultKind::Pause));
        assert_eq!(r.windows[0].lost_while_held, 1);
        assert_eq!(r.windows[0].detection_ms, vec![11.0]);
        assert_eq!(r.windows[1].fault, FaultCell::NoFault);
        assert_eq!(r.windows[1].lost_while_held, 0);
    }
}
