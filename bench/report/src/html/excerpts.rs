//! The history around each backend's first violation of each kind: the ops as they were
//! recorded (who asked for what, what came back, with which token), so a reader sees the
//! offending grant, write or release among its neighbours rather than taking a count on trust.

use super::load::Run;
use super::page;
use maud::{Markup, html};

/// The section, when a violation was found.
pub(crate) fn section(run: &Run) -> Markup {
    let excerpts = &run.traces.excerpts;
    if excerpts.is_empty() {
        return html! {};
    }
    let body = html! {
        @for e in excerpts {
            h3 id=(format!("excerpt-{}-{}", e.backend, e.what)) {
                (e.backend) ": the first " (e.what) " at " (format!("{:.6} s", e.at as f64 / 1e9))
            }
            @if e.ops.is_empty() {
                (page::note("The history has no op this close to it."))
            } @else {
                (page::scroll_table(
                    &["time from it", "client", "op", "outcome", "key", "token"],
                    html! {
                        @for op in &e.ops {
                            tr class=[(op.t == e.at).then_some("bad")] {
                                td.num { (format!("{:+.3} ms", (op.t as f64 - e.at as f64) / 1e6)) }
                                td { "c" (op.client) }
                                td { (op.f) }
                                td {
                                    (op.ty)
                                    @if op.stale == Some(true) { " (stale)" }
                                }
                                td { "k" (op.key) }
                                td.num {
                                    @match op.token {
                                        Some(t) => (t),
                                        None => "-",
                                    }
                                }
                            }
                        }
                    },
                ))
            }
        }
    };
    page::section(
        "excerpts",
        "The history at each first violation",
        format!(
            "For each backend and kind of violation, the {} ops of the history nearest its first occurrence (within 50 ms), in time order; the row at its moment is red. A release whose outcome is ok after another client's grant of the same key released that client's lock.",
            super::trace::EXCERPT_OPS
        ),
        body,
    )
}
