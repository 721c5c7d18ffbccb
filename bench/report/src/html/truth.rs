//! Server-side truth (`observe_server`): one short table, one row per backend, of the
//! lost-while-held episodes (the servers had given the lock to someone else, or no one, while
//! a client still believed it held it) and how long clients took to learn of them.

use super::load::Run;
use super::page;
use maud::{Markup, html};

/// The section, or nothing when no backend of the run was observed.
pub(crate) fn section(run: &Run) -> Markup {
    let observed = run.results_with(|r| r.server_truth.as_ref());
    if observed.is_empty() {
        return html! {};
    }
    let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.0}"));
    let table = page::scroll_table(
        &[
            "backend",
            "lost while held",
            "time lost ms",
            "detection p50 ms",
            "p99",
            "max",
            "never learned",
            "observations / blind ms",
        ],
        html! {
            @for (r, truth) in observed {
                tr {
                    td { (r.backend) }
                    @if let Some(f) = &truth.figures {
                        td.num {
                            @if f.lost_while_held > 0 { b { (f.lost_while_held) } } @else { "0" }
                        }
                        td.num { (format!("{:.0}", f.lost_ms)) }
                        td.num { (ms(f.detection_p50_ms)) }
                        td.num { (ms(f.detection_p99_ms)) }
                        td.num { (ms(f.detection_max_ms)) }
                        td.num {
                            @if f.undetected > 0 {
                                b style="color:#d62728" { (f.undetected) }
                            } @else {
                                "0"
                            }
                        }
                        td.num { (f.observations) " / " (format!("{:.0}", f.blind_ms)) }
                    } @else {
                        td colspan="7" { (truth.note.as_deref().unwrap_or("nothing observed")) }
                    }
                }
            }
        },
    );
    page::section(
        "truth",
        "Server-side truth",
        "Who the servers said held each lock (a watch from lockbench's own session: ZooKeeper's lowest lock node, etcd's lowest create revision, the Redis key's value, the value a majority of the Redlock servers holds), against what the clients believed. Lost while held: the servers had given the lock to someone else, or to no one, while a client still believed it held it. Detection: from then until that client learned it (a release or renew refused, a session or lease found expired). Per fault window in results.json (server_truth).",
        table,
    )
}
