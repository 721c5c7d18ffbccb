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

use lockbench_core::{ClientId, FaultPhase, History, KeyId, Nanos, OpF, OpType};
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
    /// The verb.
    pub fault: String,
    /// The resolved targets.
    pub targets: Vec<String>,
    /// `false` when the nemesis could not apply it (the note says why).
    pub applied: bool,
    /// What was done.
    pub note: String,
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

/// Completed acquires: (completion time, ok, latency from invoke).
fn acquires(history: &History) -> Vec<(Nanos, bool, Duration)> {
    let mut invoked: HashMap<(ClientId, KeyId), Nanos> = HashMap::new();
    let mut out = Vec::new();
    for op in history.ops().iter().filter(|o| o.f == OpF::Acquire) {
        match op.ty {
            OpType::Invoke => {
                invoked.insert((op.client, op.key), op.time);
            }
            ty => {
                let since = invoked.remove(&(op.client, op.key)).unwrap_or(op.time);
                out.push((op.time, ty == OpType::Ok, op.time.saturating_sub(since)));
            }
        }
    }
    out
}

fn span(acq: &[(Nanos, bool, Duration)], from: Nanos, to: Nanos) -> Span {
    let mut lat: Vec<f64> = Vec::new();
    let mut s = Span::default();
    for &(t, ok, l) in acq.iter().filter(|(t, _, _)| *t >= from && *t < to) {
        let _ = t;
        s.attempts += 1;
        if ok {
            s.ok += 1;
            lat.push(l.as_secs_f64() * 1e3);
        }
    }
    lat.sort_by(f64::total_cmp);
    let q = |p: f64| {
        (!lat.is_empty()).then(|| round(lat[((lat.len() - 1) as f64 * p).round() as usize]))
    };
    s.success_rate = (s.attempts > 0).then(|| round(s.ok as f64 / s.attempts as f64));
    s.latency_p50_ms = q(0.5);
    s.latency_p99_ms = q(0.99);
    s
}

fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Every fault window of `history` with the acquisitions around it.
pub fn windows(history: &History) -> Vec<Window> {
    let acq = acquires(history);
    let end = history
        .ops()
        .last()
        .map(|o| o.time)
        .unwrap_or_default()
        .max(history.faults().last().map(|f| f.time).unwrap_or_default());
    let mut open: Vec<(usize, Nanos)> = Vec::new();
    let mut spans: Vec<(usize, Nanos, Nanos)> = Vec::new();
    let faults = history.faults();
    for (i, f) in faults.iter().enumerate() {
        match f.phase {
            FaultPhase::Start => open.push((i, f.time)),
            FaultPhase::Stop => {
                // Close the matching window; a stop with no targets (heal) closes every open
                // window of that verb.
                let mut j = 0;
                while j < open.len() {
                    let s = &faults[open[j].0];
                    if s.fault == f.fault && (f.targets.is_empty() || s.targets == f.targets) {
                        spans.push((open[j].0, open[j].1, f.time));
                        open.remove(j);
                    } else {
                        j += 1;
                    }
                }
            }
        }
    }
    spans.extend(open.into_iter().map(|(i, t)| (i, t, end)));
    spans.sort_by_key(|s| s.1);
    spans
        .into_iter()
        .map(|(i, start, stop)| {
            let f = &faults[i];
            let len = stop.saturating_sub(start);
            let before = Nanos(start.0.saturating_sub(len.as_nanos() as u64));
            let recovery = acq
                .iter()
                .find(|(t, ok, _)| *ok && *t >= stop)
                .map(|(t, _, _)| round(t.saturating_sub(stop).as_secs_f64() * 1e3));
            Window {
                fault: f.fault.clone(),
                targets: f.targets.clone(),
                applied: f.applied,
                note: f.note.clone(),
                start_s: round(start.as_duration().as_secs_f64()),
                end_s: round(stop.as_duration().as_secs_f64()),
                before: span(&acq, before, start),
                during: span(&acq, start, stop),
                after: span(&acq, stop, stop.after(len)),
                recovery_ms: recovery,
                violations: Default::default(),
                fenced: Default::default(),
            }
        })
        .collect()
}

/// Gaps of at least `alarm` with no successful acquisition, within `[from, to]`.
pub fn stalls(history: &History, from: Nanos, to: Nanos, alarm: Duration) -> Vec<Stall> {
    let mut last = from;
    let mut out = Vec::new();
    let check = |a: Nanos, b: Nanos, out: &mut Vec<Stall>| {
        let gap = b.saturating_sub(a);
        if gap >= alarm {
            out.push(Stall {
                from_s: round(a.as_duration().as_secs_f64()),
                to_s: round(b.as_duration().as_secs_f64()),
                ms: round(gap.as_secs_f64() * 1e3),
            });
        }
    };
    for (t, ok, _) in acquires(history) {
        if ok && t >= from && t <= to {
            check(last, t, &mut out);
            last = t;
        }
    }
    check(last, to, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockbench_core::{FaultEvent, Op};

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
            fault: "pause".into(),
            phase,
            targets: vec!["zk1".into()],
            note: String::new(),
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
        let s = stalls(&h, Nanos(0), Nanos(200 * MS), Duration::from_millis(50));
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].ms, 90.0);
    }
}
