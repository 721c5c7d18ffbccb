//! The verdict suite's page: the answer first (the decision table and the picks), then a card
//! per backend with every cell's figures or reason, the parts that produced them, and what
//! produced the suite. Every cell links to the part's report where its evidence is.

use super::page;
use crate::decision::{self as text, header};
use lockbench_results::decision::{Cell, Decision, Evidence, FaultColumn, Row};
use maud::{Markup, html};

/// The whole page.
pub(crate) fn render(d: &Decision) -> String {
    let body = html! {
        h1 { "lockbench verdict: which lock, under which faults, how far" }
        p.meta {
            b { "lockbench" } " " (d.environment.lockbench_version)
            " · " b { "seed" } " " (d.seed) " · " b { "started" } " " (d.started_at)
            " · " b { "cluster" } " " (d.cluster) " (" (super::summary::connections_line(&d.connections)) ")"
            " · " (format!("{:.1} min of a {:.0} min budget", d.wall_s / 60.0, d.budget_s / 60.0))
            @if !d.complete { " · " b { "incomplete" } " (interrupted)" }
        }
        p.headline {
            span.verdict.(verdict_class(d)) { (text::headline(d)) }
        }
        (picks(d))
        (table(d))
        (legend())
        (cards(d))
        (parts(d))
        (environment(d))
    };
    page::document("lockbench verdict", body)
}

fn verdict_class(d: &Decision) -> &'static str {
    use lockbench_results::expect::Outcome;
    match (d.complete, d.worst()) {
        (false, _) => "incomplete",
        (true, Some(Outcome::Failed)) => "failed",
        (true, Some(Outcome::Unknown)) => "incomplete",
        (true, _) => "met",
    }
}

fn picks(d: &Decision) -> Markup {
    html! {
        @if d.picks.is_empty() {
            p.note { "No pick: no backend that is not broken on purpose had the figures to decide." }
        } @else {
            ul {
                @for (backend, needs) in text::picks_by_backend(d) {
                    li {
                        "Pick " b { (backend) } " if you need "
                        (page::join(needs.iter().map(|n| html! { (n) }), "; or "))
                        "."
                    }
                }
            }
        }
    }
}

/// The class of a fault cell: red for harm, green for held, amber for no answer.
fn cell_class(c: &Cell) -> &'static str {
    match c {
        Cell::Safe { .. } | Cell::Fenced { .. } => "ok",
        Cell::Damaged { .. } | Cell::Violated { .. } => "bad",
        Cell::Unknown { .. } | Cell::NotApplied { .. } => "unknown",
        Cell::NotApplicable { .. } => "error",
    }
}

/// `content` linked to `evidence`'s page when there is one.
fn linked<T>(evidence: &Evidence<T>, content: Markup) -> Markup {
    html! {
        @match &evidence.link {
            Some(href) => a href=(href) { (content) },
            None => (content),
        }
    }
}

fn table(d: &Decision) -> Markup {
    let columns = header(d);
    let rows = html! {
        @for row in &d.rows {
            tr class=[row.broken.then_some("broken")] id=(format!("row-{}", row.backend)) {
                td {
                    a href=(format!("#card-{}", row.backend)) { (row.backend) }
                    @if row.broken { br; small { "broken on purpose" } }
                }
                @for e in &row.shapes {
                    td.num title=(perf_title(&e.cell)) { (linked(e, html! { (text::perf(&e.cell)) })) }
                }
                td.num title=(knee_title(&row.knee.cell)) {
                    (linked(&row.knee, html! { (text::knee(&row.knee.cell)) }))
                }
                @for c in FaultColumn::ALL {
                    @if let Some(e) = row.fault(c) {
                        td class=(cell_class(&e.cell)) title=(e.cell.detail()) {
                            (linked(e, html! { (e.cell.word()) }))
                        }
                    }
                }
                td.num title=(herd_title(&row.herd.cell)) {
                    (linked(&row.herd, html! { (text::herd(&row.herd.cell)) }))
                }
            }
        }
    };
    let cols: Vec<&str> = columns.iter().map(String::as_str).collect();
    page::section(
        "decision",
        "The answer",
        "Per backend: acquisitions per second and acquire p99 at 1 client on 1 key, 8 on 1 and 8 on 8 (no faults); the highest rate sustained within the p99 objective; what each fault did to mutual exclusion; wake-ups per release with 20 clients waiting. Every cell links to the run that shows it; hover for its figures or reason. A + after a throughput: lockbench itself was the limit, so the backend may do more. A red row is a recipe broken on purpose.",
        page::scroll_table(&cols, rows),
    )
}

fn perf_title(p: &lockbench_results::decision::Perf) -> String {
    use lockbench_results::decision::Perf;
    match p {
        Perf::Measured {
            requests_per_acquisition,
            generator_bound,
            ..
        } => {
            let requests = requests_per_acquisition.map_or_else(
                || "requests per acquisition not known".to_string(),
                |q| format!("{q:.2} requests per acquisition"),
            );
            if *generator_bound {
                format!("{requests}; lockbench itself was the limit: a lower bound")
            } else {
                requests
            }
        }
        Perf::Missing { why } => why.clone(),
    }
}

fn knee_title(k: &lockbench_results::decision::Knee) -> String {
    use lockbench_results::decision::Knee;
    match k {
        Knee::Found { note, .. } => note.clone(),
        Knee::Missing { why } => why.clone(),
    }
}

fn herd_title(h: &lockbench_results::decision::Herd) -> String {
    use lockbench_results::decision::Herd;
    match h {
        Herd::Counted {
            requests_per_release,
            throughput_per_s,
            ..
        } => format!(
            "{} requests per release in reaction; {throughput_per_s:.0} acq/s with 20 waiting",
            requests_per_release.map_or("unknown".into(), |q| format!("{q:.2}"))
        ),
        Herd::Missing { why } => why.clone(),
    }
}

fn legend() -> Markup {
    html! {
        p.note {
            b { "safe" } ": no violation in or within 2 s after the fault's window, with grants around it. "
            b { "fenced" } ": two clients believed they held the lock, and the resource rejected every late write by its token. "
            b { "damaged" } ": a late write of a client whose lock was gone was accepted. "
            b { "violated" } ": mutual exclusion broken (or another client's lock released) with nothing to stop it. "
            b { "not applied" } ": the fault could not be applied here. "
            b { "n/a" } ": the fault does not apply to the backend; the card says why. "
            "A run without faults shows what it showed (throughput, latency, mutual exclusion under contention), never \"safe\"."
        }
    }
}

fn cards(d: &Decision) -> Markup {
    let body = html! {
        @for row in &d.rows {
            (card(row))
        }
    };
    page::section("cards", "Each backend", "", body)
}

fn card(row: &Row) -> Markup {
    html! {
        details id=(format!("card-{}", row.backend)) open[row.broken || row.harmed()] {
            summary {
                (row.backend)
                @if row.broken { " (broken on purpose)" }
            }
            ul {
                @for (c, e) in &row.faults {
                    li class=[e.cell.harmful().then_some("bad")] {
                        b { (c.title()) } ": " (e.cell.word()) ": " (e.cell.detail())
                        @if let Some(href) = &e.link { " (" a href=(href) { "evidence" } ")" }
                    }
                }
                li { b { "knee" } ": " (text::knee(&row.knee.cell)) ": " (knee_title(&row.knee.cell)) }
                li { b { "herd" } ": " (text::herd(&row.herd.cell)) " wake-ups per release: " (herd_title(&row.herd.cell)) }
            }
        }
    }
}

fn parts(d: &Decision) -> Markup {
    let rows = html! {
        @for p in &d.parts {
            tr {
                td { a href=(format!("{}/report.html", p.dir)) { (p.part.title()) } }
                td.num { (format!("{:.0} s", p.wall_s)) }
                td {
                    @if p.backends.is_empty() { "none: no backend here has it" } @else { (p.backends.join(", ")) }
                }
                td.num { (p.expectations[0]) }
                td.num class=[(p.expectations[1] > 0).then_some("bad")] { (p.expectations[1]) }
                td.num class=[(p.expectations[2] > 0).then_some("unknown")] { (p.expectations[2]) }
                td { @if p.complete { "complete" } @else { "interrupted" } }
            }
        }
    };
    page::section(
        "parts",
        "The parts",
        "Each part is a run of its own, with its report, history and expectations.",
        page::scroll_table(
            &[
                "part", "wall", "backends", "met", "failed", "unknown", "state",
            ],
            rows,
        ),
    )
}

fn environment(d: &Decision) -> Markup {
    let e = &d.environment;
    let load = |l: Option<[f64; 3]>| {
        l.map_or("unknown".to_string(), |[a, b, c]| {
            format!("{a:.2} {b:.2} {c:.2}")
        })
    };
    let rows = html! {
        tr { td { "lockbench" } td { (e.lockbench_version) } }
        tr { td { "machine" } td { (format!("{} CPUs ({}), {}, kernel {}", e.cpus, e.cpu_model, e.os, e.kernel)) } }
        tr { td { "load average at start, at end" } td { (load(e.load_average)) "; " (load(e.load_average_end)) } }
        tr { td { "cluster" } td { (d.cluster) " (" (super::summary::connections_line(&d.connections)) ")" } }
        @for (server, version) in &e.servers {
            tr { td { (server) } td { (version) } }
        }
    };
    page::section(
        "environment",
        "What produced this",
        "Whether lockbench itself was the limit is in each part's report (resources).",
        page::scroll_table(&["what", "value"], rows),
    )
}
