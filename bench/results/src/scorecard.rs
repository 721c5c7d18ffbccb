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
    use lockbench_core::FaultCell;
    use std::collections::BTreeMap;
    let mut cells = Vec::new();
    for r in results {
        let mut seen: Vec<FaultCell> = Vec::new();
        let cell_of =
            |w: &lockbench_analysis::availability::Window| FaultCell::of(w.fault, &w.targets);
        for w in &r.fault_windows {
            if !seen.contains(&cell_of(w)) {
                seen.push(cell_of(w));
            }
        }
        for cell in seen {
            let ws: Vec<_> = r
                .fault_windows
                .iter()
                .filter(|w| cell_of(w) == cell)
                .collect();
            let (mut violations, mut fenced) = (BTreeMap::new(), BTreeMap::new());
            for w in &ws {
                for (k, n) in &w.violations {
                    *violations.entry(k.clone()).or_insert(0) += n;
                }
                for (k, n) in &w.fenced {
                    *fenced.entry(k.clone()).or_insert(0) += n;
                }
            }
            cells.push(ScoreCell {
                backend: r.backend.clone(),
                fault: cell,
                runs: ws.iter().filter(|w| w.applied).count() as u64,
                not_applied: ws.iter().filter(|w| !w.applied).count() as u64,
                violations,
                fenced,
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
                fault: FaultCell::NoFault,
                runs: 0,
                not_applied: 0,
                violations: r.safety.outside_fault_windows.clone(),
                fenced: r.safety.fenced_outside_fault_windows.clone(),
                stayed_available: !calm_stall,
            });
        }
    }
    (!cells.is_empty()).then_some(Scorecard { cells })
}
