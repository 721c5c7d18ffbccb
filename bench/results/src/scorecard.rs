//! The scorecard (backend x fault matrix) derived from a run's results: a pure function of
//! the per-backend fault windows and stall alarms, so whoever holds the results can rebuild it.

use crate::model::BackendResult;

/// Seconds after a window's end during which its effects (violations, stalls) are its own.
const GRACE_S: f64 = lockbench_analysis::attribution::GRACE.as_secs_f64();

/// `true` when a stall alarm's span overlaps `[from_s, to_s + GRACE]`.
fn stalled(r: &BackendResult, from_s: f64, to_s: f64) -> bool {
    r.stalls
        .iter()
        .any(|s| s.from_s < to_s + GRACE_S && s.to_s > from_s)
}

/// The scorecard of a run: for each backend, one cell per fault verb seen in its fault
/// windows; a fault on client hosts only is named `<verb>-client` (the fencing workload's
/// holder pause is `pause-client`). A cell's violations are those that happened in its windows
/// (see `lockbench_analysis::attribution`), so mixed faults do not share counts; violations in
/// no window go to the backend's `none` cell.
pub fn of(results: &[BackendResult]) -> Option<crate::model::Scorecard> {
    use crate::model::{ScoreCell, Scorecard};
    use std::collections::BTreeMap;
    let mut cells = Vec::new();
    for r in results {
        let mut verbs: Vec<String> = Vec::new();
        let cell_name = |w: &lockbench_analysis::availability::Window| {
            lockbench_core::fault_kind(&w.fault, &w.targets)
        };
        for w in &r.fault_windows {
            if !verbs.contains(&cell_name(w)) {
                verbs.push(cell_name(w));
            }
        }
        for verb in verbs {
            let ws: Vec<_> = r
                .fault_windows
                .iter()
                .filter(|w| cell_name(w) == verb)
                .collect();
            let mut violations = BTreeMap::new();
            for w in &ws {
                for (k, n) in &w.violations {
                    *violations.entry(k.clone()).or_insert(0) += n;
                }
            }
            cells.push(ScoreCell {
                backend: r.backend.clone(),
                fault: verb,
                runs: ws.iter().filter(|w| w.applied).count() as u64,
                not_applied: ws.iter().filter(|w| !w.applied).count() as u64,
                violations,
                // A window that ends with the run has no "after" to judge; the stall alarm
                // (which covers the run's tail) speaks for it.
                stayed_available: ws.iter().filter(|w| w.applied).all(|w| {
                    !stalled(r, w.start_s, w.end_s)
                        && (w.recovery_ms.is_some() || w.after.attempts == 0)
                }),
            });
        }
        if !r.fault_windows.is_empty() {
            // Outside every fault window: the recipe on its own.
            let applied: Vec<_> = r.fault_windows.iter().filter(|w| w.applied).collect();
            let calm_stall = r.stalls.iter().any(|s| {
                !applied
                    .iter()
                    .any(|w| s.from_s < w.end_s + GRACE_S && s.to_s > w.start_s)
            });
            cells.push(ScoreCell {
                backend: r.backend.clone(),
                fault: "none".into(),
                runs: 0,
                not_applied: 0,
                violations: r.safety.outside_fault_windows.clone(),
                stayed_available: !calm_stall,
            });
        }
    }
    (!cells.is_empty()).then_some(Scorecard { cells })
}
