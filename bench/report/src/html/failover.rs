//! The failover workload's section: per election recipe and removal kind, the time to a new
//! leader and until every candidate observed it, elections per removal and split brain, then
//! every split-brain episode with both epochs. A table, as in the terminal.

use super::load::Run;
use super::page::{self, esc};
use lockbench_analysis::failover::MsStats;

fn ms(s: &Option<MsStats>, f: impl Fn(&MsStats) -> f64) -> String {
    s.as_ref()
        .map(|s| format!("{:.1}", f(s)))
        .unwrap_or_else(|| "-".into())
}

/// The section, or nothing when no result has failover figures.
pub(crate) fn section(run: &Run) -> String {
    let mut t = String::from(
        "<div class=\"scroll\"><table>\n<tr><th>election</th><th>removal</th><th>rounds</th>\
         <th>new leader p50 / max (ms)</th><th>all observed p50 / max (ms)</th>\
         <th>elections per removal</th><th>no new leader</th><th>split brain (rounds, max ms)</th></tr>\n",
    );
    let mut episodes = String::new();
    let mut any = false;
    for r in &run.results.results {
        let Some(f) = &r.failover else { continue };
        any = true;
        for (removal, s) in &f.figures.by_removal {
            let class = if s.split_brain_failures > 0 {
                " class=\"bad\""
            } else {
                ""
            };
            t.push_str(&format!(
                "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{} / {}</td>\
                 <td class=\"num\">{} / {}</td><td class=\"num\">{}</td><td class=\"num\">{} ({} kept)</td>\
                 <td{class}>{}</td></tr>\n",
                esc(&r.backend),
                esc(removal),
                if s.not_applied > 0 {
                    format!("{} (<b>{} not applied</b>)", s.failures, s.not_applied)
                } else {
                    s.failures.to_string()
                },
                ms(&s.time_to_new_leader_ms, |m| m.p50),
                ms(&s.time_to_new_leader_ms, |m| m.max),
                ms(&s.time_to_all_observed_ms, |m| m.p50),
                ms(&s.time_to_all_observed_ms, |m| m.max),
                s.elections_per_failure
                    .map(|e| format!("{e:.1}"))
                    .unwrap_or_else(|| "-".into()),
                s.no_new_leader,
                s.leader_kept,
                if s.split_brain_failures == 0 {
                    "none".to_string()
                } else {
                    format!(
                        "{}, {}",
                        s.split_brain_failures,
                        ms(&s.split_brain_ms, |m| m.max)
                    )
                },
            ));
        }
        for e in &f.figures.split_brain {
            episodes.push_str(&format!(
                "<li>{}: c{} (epoch {}) and c{} (epoch {}) both believed they led for {:.1} ms, from {:.2} s</li>\n",
                esc(&r.backend),
                e.older.candidate,
                e.older.epoch,
                e.newer.candidate,
                e.newer.epoch,
                e.ms,
                e.at_s
            ));
        }
    }
    if !any {
        return String::new();
    }
    t.push_str("</table></div>\n");
    if !episodes.is_empty() {
        t.push_str(&format!("<h3>Split brain</h3>\n<ul>\n{episodes}</ul>\n"));
    }
    page::section(
        "failover",
        "Failover",
        "Leader elections: each round removes the leader (resign, kill of its process, pause, partition of its host, or kill of a server) and measures, from that moment, the first other leader elected and the moment the last live candidate observed it. Split brain: two candidates both believing they led, with the epoch (fencing token) each held. Every round is in results.json (failover.rounds).",
        &t,
    )
}
