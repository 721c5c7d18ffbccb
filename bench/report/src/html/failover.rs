//! The failover workload's section: per election recipe and removal kind, the time to a new
//! leader and until every candidate observed it, elections per removal and split brain, then
//! every split-brain episode with both epochs. A table, as in the terminal.

use super::load::Run;
use super::page;
use lockbench_analysis::failover::MsStats;
use maud::{Markup, html};

fn ms(s: &Option<MsStats>, f: impl Fn(&MsStats) -> f64) -> String {
    s.as_ref()
        .map(|s| format!("{:.1}", f(s)))
        .unwrap_or_else(|| "-".into())
}

/// The section, or nothing when no result has failover figures.
pub(crate) fn section(run: &Run) -> Markup {
    let elections = run.results_with(|r| r.failover.as_ref());
    if elections.is_empty() {
        return html! {};
    }
    let episodes = elections
        .iter()
        .flat_map(|(r, f)| f.figures.split_brain.iter().map(move |e| (r, e)))
        .map(|(r, e)| {
            html! {
                li {
                    (format!(
                        "{}: c{} (epoch {}) and c{} (epoch {}) both believed they led for {:.1} ms, from {:.2} s",
                        r.backend, e.older.candidate, e.older.epoch, e.newer.candidate, e.newer.epoch, e.ms, e.at_s
                    ))
                }
            }
        })
        .collect::<Vec<_>>();
    let rows = html! {
        @for (r, f) in &elections {
            @for (removal, s) in &f.figures.by_removal {
                tr {
                    td { (r.backend) }
                    td { (removal) }
                    td.num {
                        (s.failures)
                        @if s.not_applied > 0 {
                            " (" b { (s.not_applied) " not applied" } ")"
                        }
                    }
                    td.num {
                        (ms(&s.time_to_new_leader_ms, |m| m.p50)) " / "
                        (ms(&s.time_to_new_leader_ms, |m| m.max))
                    }
                    td.num {
                        (ms(&s.time_to_all_observed_ms, |m| m.p50)) " / "
                        (ms(&s.time_to_all_observed_ms, |m| m.max))
                    }
                    td.num {
                        (s.elections_per_failure
                            .map(|e| format!("{e:.1}"))
                            .unwrap_or_else(|| "-".into()))
                    }
                    td.num { (s.no_new_leader) " (" (s.leader_kept) " kept)" }
                    td class=[(s.split_brain_failures > 0).then_some("bad")] {
                        @if s.split_brain_failures == 0 {
                            "none"
                        } @else {
                            (s.split_brain_failures) ", " (ms(&s.split_brain_ms, |m| m.max))
                        }
                    }
                }
            }
        }
    };
    let body = html! {
        (page::scroll_table(&["election", "removal", "rounds", "new leader p50 / max (ms)", "all observed p50 / max (ms)", "elections per removal", "no new leader", "split brain (rounds, max ms)"], rows))
        @if !episodes.is_empty() {
            h3 { "Split brain" }
            ul {
                @for e in episodes { (e) }
            }
        }
    };
    page::section(
        "failover",
        "Failover",
        "Leader elections: each round removes the leader (resign, kill of its process, pause, partition of its host, or kill of a server) and measures, from that moment, the first other leader elected and the moment the last live candidate observed it. Split brain: two candidates both believing they led, with the epoch (fencing token) each held. Every round is in results.json (failover.rounds).",
        body,
    )
}
