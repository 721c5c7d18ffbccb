//! Availability around faults: did clients keep getting the lock, how fast, and how soon after
//! the fault ended did they get it again?
//!
//! Fault windows come from the history's fault events (a `start` paired with the next `stop`
//! of the same verb and targets; a window never closed runs to the end of the history). For
//! each window the acquisitions *before* (a span as long as the window, ending at its start),
//! *during* and *after* (as long again, from its end) are compared: success rate (ok / all
//! acquire completions) and acquire latency (invoke to ok). `recovery_ms` is the time from the
//! window's end to the first successful acquisition after it. A stall is a gap of at least
//! `stall_alarm` in which no client completed an acquisition, anywhere in the run.

use lockbench_core::{
    ClientId, FaultEvent, FaultKind, FaultPhase, History, KeyId, Nanos, Op, OpF, OpType,
};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::time::Duration;

/// Acquisitions in one span.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Span {
    /// Acquire completions (ok + fail + info).
    pub attempts: u64,
    /// Of which ok.
    pub ok: u64,
    /// `ok / attempts`, `null` with no attempts.
    pub success_rate: Option<f64>,
    /// Median acquire latency of the ok ones, ms.
    pub latency_p50_ms: Option<f64>,
    /// 99th percentile, ms.
    pub latency_p99_ms: Option<f64>,
}

/// One fault window and the acquisitions around it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Window {
    /// The fault's kind.
    pub fault: FaultKind,
    /// The resolved targets.
    pub targets: Vec<String>,
    /// `false` when the nemesis could not apply it (the note says why).
    pub applied: bool,
    /// What was done (the start event's note).
    pub note: String,
    /// What the window's stop event says (`packet-loss`: the share its rules dropped of the
    /// window's own traffic); absent when empty or the window never closed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub end_note: String,
    /// Start, seconds on the run clock.
    pub start_s: f64,
    /// End, seconds on the run clock.
    pub end_s: f64,
    /// Before / during / after.
    pub before: Span,
    /// During the window.
    pub during: Span,
    /// After the window.
    pub after: Span,
    /// From the window's end to the first successful acquisition after it, ms; `null` if none.
    pub recovery_ms: Option<f64>,
    /// Safety violations charged to this window, by kind (see [`crate::attribution`]); empty
    /// until attributed, and for windows that were not applied.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub violations: std::collections::BTreeMap<String, u64>,
    /// Writes fencing stopped in this window, by kind (`stale_write_rejected`,
    /// `write_after_lock_lost_rejected`): the fencing token doing its job, not damage.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub fenced: std::collections::BTreeMap<String, u64>,
}

/// A span with no successful acquisition by any client.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stall {
    /// Start, seconds on the run clock (the last success before it, or the run's start).
    pub from_s: f64,
    /// End, seconds (the next success, or the run's end).
    pub to_s: f64,
    /// Length, ms.
    pub ms: f64,
}

/// Pairs acquire completions with their invocations, op by op.
#[derive(Default)]
pub struct Acquires {
    invoked: HashMap<(ClientId, KeyId), Nanos>,
}

impl Acquires {
    /// For an acquire completion: (completion time, ok, latency from invoke).
    pub fn completion(&mut self, op: &Op) -> Option<(Nanos, bool, Duration)> {
        if op.f != OpF::Acquire {
            return None;
        }
        match op.ty {
            OpType::Invoke => {
                self.invoked.insert((op.client, op.key), op.time);
                None
            }
            ty => {
                let since = self.invoked.remove(&(op.client, op.key)).unwrap_or(op.time);
                Some((op.time, ty == OpType::Ok, op.time.saturating_sub(since)))
            }
        }
    }
}

/// Acquisitions in one span, as they come.
#[derive(Default)]
struct SpanAcc {
    attempts: u64,
    ok: u64,
    /// Latencies of the ok ones, ms (a span is as long as its fault window: bounded by the
    /// faults, not by the run).
    lat: Vec<f64>,
}

impl SpanAcc {
    fn add(&mut self, ok: bool, l: Duration) {
        self.attempts += 1;
        if ok {
            self.ok += 1;
            self.lat.push(l.as_secs_f64() * 1e3);
        }
    }

    fn finish(mut self) -> Span {
        self.lat.sort_by(f64::total_cmp);
        let lat = &self.lat;
        let q = |p: f64| {
            (!lat.is_empty()).then(|| round(lat[((lat.len() - 1) as f64 * p).round() as usize]))
        };
        Span {
            attempts: self.attempts,
            ok: self.ok,
            success_rate: (self.attempts > 0).then(|| round(self.ok as f64 / self.attempts as f64)),
            latency_p50_ms: q(0.5),
            latency_p99_ms: q(0.99),
        }
    }
}

/// One window being measured.
struct Plan {
    event: FaultEvent,
    /// The stop event's note (empty when the window ran to the history's end).
    end_note: String,
    start: Nanos,
    stop: Nanos,
    before_from: Nanos,
    after_to: Nanos,
    spans: [SpanAcc; 3],
    recovery: Option<Nanos>,
}

/// The fault windows' availability, as a stream over the time-ordered ops. The windows are
/// known before the ops: they come from the fault events and the history's end (the last op
/// or fault event), which the caller knows up front (the runner from what it wrote, an offline
/// reader from a first pass).
pub struct Availability {
    acquires: Acquires,
    plans: Vec<Plan>,
}

impl Availability {
    /// Windows of `faults` (in time order), in a history ending at `end`.
    pub fn new(faults: &[FaultEvent], end: Nanos) -> Self {
        let mut open: Vec<(usize, Nanos)> = Vec::new();
        // (start event, start, stop, stop event)
        let mut spans: Vec<(usize, Nanos, Nanos, Option<usize>)> = Vec::new();
        for (i, f) in faults.iter().enumerate() {
            match f.phase {
                FaultPhase::Start => open.push((i, f.time)),
                FaultPhase::Stop => {
                    // Close the matching window; a stop with no targets (heal) closes every
                    // open window of that verb.
                    let mut j = 0;
                    while j < open.len() {
                        let s = &faults[open[j].0];
                        if s.fault == f.fault && (f.targets.is_empty() || s.targets == f.targets) {
                            spans.push((open[j].0, open[j].1, f.time, Some(i)));
                            open.remove(j);
                        } else {
                            j += 1;
                        }
                    }
                }
            }
        }
        spans.extend(open.into_iter().map(|(i, t)| (i, t, end, None)));
        spans.sort_by_key(|s| s.1);
        let plans = spans
            .into_iter()
            .map(|(i, start, stop, stopped_by)| {
                let len = stop.saturating_sub(start);
                Plan {
                    event: faults[i].clone(),
                    end_note: stopped_by
                        .map(|j| faults[j].note.clone())
                        .unwrap_or_default(),
                    start,
                    stop,
                    before_from: Nanos(start.0.saturating_sub(len.as_nanos() as u64)),
                    after_to: stop.after(len),
                    spans: Default::default(),
                    recovery: None,
                }
            })
            .collect();
        Availability {
            acquires: Acquires::default(),
            plans,
        }
    }

    /// Takes the next op.
    pub fn observe(&mut self, op: &Op) {
        let Some((t, ok, l)) = self.acquires.completion(op) else {
            return;
        };
        for p in &mut self.plans {
            let span = if t >= p.before_from && t < p.start {
                Some(0)
            } else if t >= p.start && t < p.stop {
                Some(1)
            } else if t >= p.stop && t < p.after_to {
                Some(2)
            } else {
                None
            };
            if let Some(i) = span {
                p.spans[i].add(ok, l);
            }
            if ok && t >= p.stop && p.recovery.is_none() {
                p.recovery = Some(t);
            }
        }
    }

    /// The windows.
    pub fn finish(self) -> Vec<Window> {
        self.plans
            .into_iter()
            .map(|p| {
                let [before, during, after] = p.spans;
                Window {
                    fault: p.event.fault,
                    targets: p.event.targets,
                    applied: p.event.applied,
                    note: p.event.note,
                    end_note: p.end_note,
                    start_s: round(p.start.as_duration().as_secs_f64()),
                    end_s: round(p.stop.as_duration().as_secs_f64()),
                    before: before.finish(),
                    during: during.finish(),
                    after: after.finish(),
                    recovery_ms: p
                        .recovery
                        .map(|t| round(t.saturating_sub(p.stop).as_secs_f64() * 1e3)),
                    violations: Default::default(),
                    fenced: Default::default(),
                }
            })
            .collect()
    }
}

fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The end of a history for its windows: its last op or fault event.
pub fn end_of(history: &History) -> Nanos {
    history
        .ops()
        .last()
        .map(|o| o.time)
        .unwrap_or_default()
        .max(history.faults().last().map(|f| f.time).unwrap_or_default())
}

/// Every fault window of `history` with the acquisitions around it.
pub fn windows(history: &History) -> Vec<Window> {
    let mut a = Availability::new(history.faults(), end_of(history));
    history.ops().iter().for_each(|op| a.observe(op));
    a.finish()
}

/// Stalls as a stream over the time-ordered ops: gaps of at least `alarm` with no successful
/// acquisition, within `[from, to]`.
pub struct Stalls {
    acquires: Acquires,
    from: Nanos,
    to: Nanos,
    alarm: Duration,
    last: Nanos,
    out: Vec<Stall>,
}

impl Stalls {
    /// Looks for stalls within `[from, to]`.
    pub fn new(from: Nanos, to: Nanos, alarm: Duration) -> Self {
        Stalls {
            acquires: Acquires::default(),
            from,
            to,
            alarm,
            last: from,
            out: Vec::new(),
        }
    }

    fn check(&mut self, a: Nanos, b: Nanos) {
        let gap = b.saturating_sub(a);
        if gap >= self.alarm {
            self.out.push(Stall {
                from_s: round(a.as_duration().as_secs_f64()),
                to_s: round(b.as_duration().as_secs_f64()),
                ms: round(gap.as_secs_f64() * 1e3),
            });
        }
    }

    /// Takes the next op.
    pub fn observe(&mut self, op: &Op) {
        if let Some((t, true, _)) = self.acquires.completion(op)
            && t >= self.from
            && t <= self.to
        {
            self.check(self.last, t);
            self.last = t;
        }
    }

    /// The stalls.
    pub fn finish(mut self) -> Vec<Stall> {
        self.check(self.last, self.to);
        self.out
    }
}

/// Gaps of at least `alarm` with no successful acquisition, within `[from, to]`.
pub fn stalls(history: &History, from: Nanos, to: Nanos, alarm: Duration) -> Vec<Stall> {
    let mut s = Stalls::new(from, to, alarm);
    history.ops().iter().for_each(|op| s.observe(op));
    s.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn acquire(t_ms: u64, c: u32, ok: bool) -> [Op; 2] {
        let k = KeyId(0);
        [
            Op::invoke(Nanos(t_ms * MS - MS), ClientId(c), OpF::Acquire, k),
            Op::complete(
                Nanos(t_ms * MS),
                ClientId(c),
                OpF::Acquire,
                k,
                if ok { OpType::Ok } else { OpType::Info },
                None,
                None,
            ),
        ]
    }

    fn event(t_ms: u64, phase: FaultPhase) -> FaultEvent {
        FaultEvent {
            time: Nanos(t_ms * MS),
            fault: FaultKind::Pause,
            phase,
            targets: vec!["zk1".into()],
            note: format!("{phase:?} note"),
            applied: true,
        }
    }

    #[test]
    fn a_window_is_compared_with_the_spans_around_it_and_stalls_are_found() {
        let mut ops = Vec::new();
        for t in [10, 20, 30, 40, 50, 60, 70, 80, 90, 100] {
            ops.extend(acquire(t, 0, true));
        }
        ops.extend(acquire(125, 1, false));
        for t in [190, 200] {
            ops.extend(acquire(t, 0, true));
        }
        let h = History::with_faults(
            ops,
            vec![event(105, FaultPhase::Start), event(180, FaultPhase::Stop)],
        );
        let w = windows(&h);
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].during.ok, 0);
        assert_eq!(w[0].during.success_rate, Some(0.0));
        assert_eq!(w[0].before.success_rate, Some(1.0));
        assert_eq!(w[0].recovery_ms, Some(10.0));
        assert_eq!(
            (w[0].note.as_str(), w[0].end_note.as_str()),
            ("Start note", "Stop note")
        );
        let s = stalls(&h, Nanos(0), Nanos(200 * MS), Duration::from_millis(50));
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].ms, 90.0);
    }
}
