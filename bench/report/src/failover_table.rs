//! The failover workload's table: per election recipe and removal kind, how fast a new leader
//! was elected and observed, and any split brain (with both epochs).

use comfy_table::{ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};
use lockbench_analysis::failover::MsStats;
use lockbench_results::model::RunResults;

fn ms(s: &Option<MsStats>, f: impl Fn(&MsStats) -> f64) -> String {
    match s {
        Some(s) if f(s) >= 100.0 => format!("{:.0}", f(s)),
        Some(s) => format!("{:.1}", f(s)),
        None => "-".into(),
    }
}

/// Renders the failover table, or `None` when no result has failover figures.
pub fn render(results: &RunResults) -> Option<String> {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(vec![
            "election",
            "removal",
            "rounds",
            "new leader p50 ms",
            "max",
            "all observed p50 ms",
            "max",
            "elections/round",
            "no new leader",
            "split brain (rounds, max ms)",
        ]);
    let mut findings = Vec::new();
    let mut any = false;
    for r in &results.results {
        let Some(f) = &r.failover else { continue };
        any = true;
        for (removal, s) in &f.figures.by_removal {
            let kept = if s.leader_kept > 0 {
                format!("{} ({} kept)", s.no_new_leader, s.leader_kept)
            } else {
                s.no_new_leader.to_string()
            };
            let rounds = if s.not_applied > 0 {
                format!("{} ({} NOT APPLIED)", s.failures, s.not_applied)
            } else {
                s.failures.to_string()
            };
            t.add_row(vec![
                r.backend.clone(),
                removal.clone(),
                rounds,
                ms(&s.time_to_new_leader_ms, |m| m.p50),
                ms(&s.time_to_new_leader_ms, |m| m.max),
                ms(&s.time_to_all_observed_ms, |m| m.p50),
                ms(&s.time_to_all_observed_ms, |m| m.max),
                s.elections_per_failure
                    .map(|e| format!("{e:.1}"))
                    .unwrap_or_else(|| "-".into()),
                kept,
                if s.split_brain_failures == 0 {
                    "0".into()
                } else {
                    format!(
                        "{}, {}",
                        s.split_brain_failures,
                        ms(&s.split_brain_ms, |m| m.max)
                    )
                },
            ]);
        }
        for e in &f.figures.split_brain {
            findings.push(format!(
                "SPLIT BRAIN: {}: c{} (epoch {}) and c{} (epoch {}) both believed they led for {:.1} ms, from {:.2} s",
                r.backend,
                e.older.candidate,
                e.older.epoch,
                e.newer.candidate,
                e.newer.epoch,
                e.ms,
                e.at_s
            ));
        }
        if f.figures.epoch_regressions > 0 {
            findings.push(format!(
                "EPOCH WENT BACK: {}: {} term(s) got an epoch lower than an earlier term's (fencing tokens from it would admit a stale leader)",
                r.backend, f.figures.epoch_regressions
            ));
        }
    }
    any.then(|| {
        let mut out = format!("failover (times from the leader's removal, ms)\n{t}");
        for line in findings {
            out.push('\n');
            out.push_str(&line);
        }
        out
    })
}
