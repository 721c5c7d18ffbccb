//! The terminal table of server-side truth (`observe_server`): per backend and fault kind, how
//! often and how long a client believed it held a lock the servers had given to someone else
//! or no one, how long until it learned, and beside it what the client-side checkers charged
//! to the same fault (the scorecard's violations), so the two views read together.

use crate::table::titled;
use comfy_table::{Cell, CellAlignment};
use lockbench_analysis::truth::TruthWindow;
use lockbench_core::FaultCell;
use lockbench_results::model::RunResults;
use std::collections::BTreeMap;

/// The table, or `None` when no backend of the run was observed.
pub fn render(results: &RunResults) -> Option<String> {
    let observed: Vec<_> = results
        .results
        .iter()
        .filter_map(|r| r.server_truth.as_ref().map(|t| (r, t)))
        .collect();
    if observed.is_empty() {
        return None;
    }
    let mut t = titled(&[
        "backend",
        "fault",
        "lost while held",
        "time lost ms",
        "detection ms p50 / max",
        "never learned",
        "client side",
    ]);
    let right = |v: String| Cell::new(v).set_alignment(CellAlignment::Right);
    for (r, truth) in observed {
        let Some(f) = &truth.figures else {
            let note = truth.note.as_deref().unwrap_or("nothing observed");
            t.add_row(vec![Cell::new(&r.backend), Cell::new("-"), Cell::new(note)]);
            continue;
        };
        for (fault, w) in by_fault(&f.windows) {
            let client_side = results
                .scorecard
                .as_ref()
                .and_then(|c| {
                    c.cells
                        .iter()
                        .find(|c| c.backend == r.backend && c.fault == fault)
                })
                .map(|c| {
                    let v: Vec<String> = c
                        .violations
                        .iter()
                        .map(|(k, n)| format!("{k} {n}"))
                        .collect();
                    if v.is_empty() {
                        "none".into()
                    } else {
                        v.join(", ")
                    }
                })
                .unwrap_or_else(|| "-".into());
            let mut d = w.detection_ms.clone();
            d.sort_by(f64::total_cmp);
            let detection = match (d.get(d.len().saturating_sub(1) / 2), d.last()) {
                (Some(p50), Some(max)) => format!("{p50:.0} / {max:.0}"),
                _ => "-".into(),
            };
            t.add_row(vec![
                Cell::new(&r.backend),
                Cell::new(fault),
                right(w.lost_while_held.to_string()),
                right(format!("{:.0}", w.lost_ms)),
                right(detection),
                right(w.undetected.to_string()),
                Cell::new(client_side),
            ]);
        }
    }
    Some(format!(
        "server-side truth (who the servers said held the lock, against what clients believed)\n{t}\n"
    ))
}

/// Windows merged by fault kind (every pause of the holder is a window of its own), in the
/// order the kinds first appear, `none` last.
fn by_fault(windows: &[TruthWindow]) -> Vec<(FaultCell, TruthWindow)> {
    let mut order: Vec<FaultCell> = Vec::new();
    let mut merged: BTreeMap<FaultCell, TruthWindow> = BTreeMap::new();
    for w in windows {
        if !order.contains(&w.fault) {
            order.push(w.fault);
        }
        let m = merged.entry(w.fault).or_default();
        m.lost_while_held += w.lost_while_held;
        m.lost_ms += w.lost_ms;
        m.undetected += w.undetected;
        m.detection_ms.extend(&w.detection_ms);
    }
    order
        .into_iter()
        .map(|f| {
            let w = merged.remove(&f).unwrap_or_default();
            (f, w)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_of_one_fault_kind_merge() {
        let w = |fault: &str, n: u64, d: Vec<f64>| TruthWindow {
            fault: fault.parse().unwrap(),
            lost_while_held: n,
            lost_ms: 10.0 * n as f64,
            detection_ms: d,
            ..TruthWindow::default()
        };
        let merged = by_fault(&[
            w("pause-client", 1, vec![5.0]),
            w("pause", 0, vec![]),
            w("pause-client", 2, vec![7.0, 9.0]),
            w("none", 0, vec![]),
        ]);
        let kinds: Vec<String> = merged.iter().map(|(f, _)| f.to_string()).collect();
        assert_eq!(kinds, ["pause-client", "pause", "none"]);
        assert_eq!(merged[0].1.lost_while_held, 3);
        assert_eq!(merged[0].1.detection_ms, vec![5.0, 7.0, 9.0]);
    }
}
