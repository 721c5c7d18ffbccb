//! Which fault a violation belongs to: the backend x fault scorecard is only honest if a run
//! that mixes faults does not charge every violation to every fault.
//!
//! Each violation has a time (the offending grant, the accepted stale write, the write after
//! the lock was lost). It is charged to every *applied* fault window that contains it, the
//! window extended by [`GRACE`] past its end: the damage of a fault often lands just after it
//! ends (the Kleppmann holder writes the instant it is resumed; a healed client's delayed
//! write arrives after the heal). A violation inside windows of two different faults is
//! charged to both (the history cannot say which fault caused it); among windows of the same
//! fault it is charged once, to the latest that contains it. One inside no window is charged to
//! "no fault" (returned separately), which is itself a finding: the recipe failed without help.

use crate::availability::Window;
use crate::safety::Safety;
use lockbench_core::{FaultKind, Nanos};
use std::collections::BTreeMap;
use std::time::Duration;

/// How long after a window's end a violation is still charged to it.
pub const GRACE: Duration = Duration::from_secs(2);

/// Every violation of `safety`, by kind (`mutex`, `stale_write_accepted`,
/// `write_after_lock_lost_accepted`, `token_reuse`, the scorecard's names), with its time:
/// what went wrong, damage included.
pub fn violations(safety: &Safety) -> Vec<(&'static str, Nanos)> {
    let findings = safety.findings().filter(|f| f.kind.is_violation());
    findings.map(|f| (f.kind.name(), f.at)).collect()
}

/// The same writes stopped by fencing (`stale_write_rejected`,
/// `write_after_lock_lost_rejected`), with their times: the token doing its job, which the
/// scorecard shows apart from the damage.
pub fn fenced(safety: &Safety) -> Vec<(&'static str, Nanos)> {
    let findings = safety.findings().filter(|f| !f.kind.is_violation());
    findings.map(|f| (f.kind.name(), f.at)).collect()
}

/// Which of a window's tallies [`attribute`] fills.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tally {
    /// [`Window::violations`].
    Violations,
    /// [`Window::fenced`].
    Fenced,
}

/// Adds each event to the `tally` of every applied window that contains it (end + [`GRACE`])
/// and returns those in no window.
pub fn attribute(
    windows: &mut [Window],
    violations: &[(&'static str, Nanos)],
    tally: Tally,
) -> BTreeMap<String, u64> {
    let grace = GRACE.as_secs_f64();
    let mut outside = BTreeMap::new();
    for &(kind, t) in violations {
        let t = t.as_duration().as_secs_f64();
        // Per fault, the latest window that contains it: a grace period reaching into the next
        // window of the same fault (repeated holder pauses) must not count it twice.
        let mut latest: BTreeMap<FaultKind, usize> = BTreeMap::new();
        for (i, w) in windows.iter().enumerate().filter(|(_, w)| w.applied) {
            if t >= w.start_s && t <= w.end_s + grace {
                let slot = latest.entry(w.fault).or_insert(i);
                if windows[*slot].start_s < w.start_s {
                    *slot = i;
                }
            }
        }
        let charged: Vec<usize> = latest.into_values().collect();
        for &i in &charged {
            let w = &mut windows[i];
            let map = match tally {
                Tally::Violations => &mut w.violations,
                Tally::Fenced => &mut w.fenced,
            };
            *map.entry(kind.to_string()).or_insert(0) += 1;
        }
        if charged.is_empty() {
            *outside.entry(kind.to_string()).or_insert(0) += 1;
        }
    }
    outside
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::availability::Span;

    fn window(fault: FaultKind, start_s: f64, end_s: f64, applied: bool) -> Window {
        Window {
            fault,
            targets: vec![],
            applied,
            note: String::new(),
            end_note: String::new(),
            start_s,
            end_s,
            before: Span::default(),
            during: Span::default(),
            after: Span::default(),
            recovery_ms: None,
            violations: BTreeMap::new(),
            fenced: BTreeMap::new(),
        }
    }

    fn at(s: f64) -> Nanos {
        Nanos((s * 1e9) as u64)
    }

    #[test]
    fn a_violation_in_the_grace_of_one_window_and_the_next_counts_once_per_fault() {
        let mut ws = vec![
            window(FaultKind::Pause, 0.0, 1.0, true),
            window(FaultKind::Pause, 2.0, 3.0, true),
            window(FaultKind::Partition, 1.5, 4.0, true),
        ];
        let outside = attribute(
            &mut ws,
            &[("mutex", Nanos(2_500_000_000))],
            Tally::Violations,
        );
        assert!(outside.is_empty());
        assert!(
            ws[0].violations.is_empty(),
            "counted in the earlier window too"
        );
        assert_eq!(ws[1].violations.get("mutex"), Some(&1));
        assert_eq!(ws[2].violations.get("mutex"), Some(&1));
    }

    #[test]
    fn each_violation_goes_to_the_window_it_happened_in() {
        let mut ws = vec![
            window(FaultKind::Pause, 1.0, 3.0, true),
            window(FaultKind::Partition, 10.0, 14.0, true),
            window(FaultKind::Kill, 20.0, 22.0, false),
        ];
        let v = [
            ("mutex", at(2.0)),
            ("write_after_lock_lost_accepted", at(4.5)), // just after the pause: still the pause's
            ("mutex", at(12.0)),
            ("mutex", at(7.0)),  // no fault
            ("mutex", at(21.0)), // inside a window that was not applied: no fault
        ];
        let outside = attribute(&mut ws, &v, Tally::Violations);
        assert_eq!(ws[0].violations.get("mutex"), Some(&1));
        assert_eq!(
            ws[0].violations.get("write_after_lock_lost_accepted"),
            Some(&1)
        );
        assert_eq!(ws[1].violations.get("mutex"), Some(&1));
        assert!(ws[2].violations.is_empty());
        assert_eq!(outside.get("mutex"), Some(&2));
    }
}
