//! The tables: the header (scenario, verdict, environment, the scenario itself, raw files),
//! the summary per backend x workload and each recipe's knobs.

use super::chart;
use super::load::Run;
use super::page::{self, ms};
use lockbench_results::headline::{self, Headline, Verdict};
use lockbench_results::model::{BackendResult, Percentiles};
use lockbench_results::{Status, Validity};
use maud::{Markup, html};

/// `valid`, `invalid` or `unknown` for the whole run: the worst of its backends (`unknown`
/// when there are none).
pub(crate) fn overall_verdict(verdicts: &[Validity]) -> Validity {
    verdicts.iter().copied().max().unwrap_or(Validity::Unknown)
}

/// The title block: what ran, where, with what outcome; environment and raw files. The
/// outcome is the run against its expectations first, then the safety facts split into the
/// violations the scenario expected and those it did not
/// ([`lockbench_results::headline`]): a chaos run meant to break mutual exclusion reads as
/// what it is, and a regression stands out in red.
pub(crate) fn header(run: &Run) -> Markup {
    let r = &run.results;
    let scorecard = run.raw.pointer("/scorecard/cells").is_some();
    html! {
        h1 { "lockbench report: " (r.scenario) }
        p.meta {
            b { "lockbench" } " " (r.environment.lockbench_version)
            " · " b { "seed" } " " (r.seed) " · " b { "started" } " " (r.started_at)
            " · " b { "cluster" } " " (r.cluster) " (" (connections_line(&r.connections)) ") · "
            @if r.complete {
                "complete"
            } @else {
                b { "incomplete" } " (interrupted or still running)"
            }
        }
        (headline_html(&headline::of(r)))
        nav.toc {
            a href="#summary" { "summary" }
            @if scorecard {
                a href="#scorecard" { "scorecard" }
            }
            a href="#spectrum" { "latency" }
            a href="#timeline" { "each backend over time" }
            a href="#holders" { "lock holders" }
            a href="#fencing" { "fencing" }
            a href="#fairness" { "fairness" }
            a href="#environment" { "environment" }
        }
    }
}

/// The headline: the expectation verdict as a badge with its counts, the safety line, and
/// one red line per unexpected violation and per expectation not met.
fn headline_html(h: &Headline) -> Markup {
    let listed = !h.unexpected.is_empty() || !h.not_met.is_empty();
    html! {
        p.headline {
            span.verdict.(h.verdict.name()) { (h.verdict.title()) } " " (h.detail())
        }
        @if let Some(line) = h.slowdown_line() {
            p.bad { b { (line) } }
        }
        p class=[(!h.unexpected.is_empty()).then_some("bad")] {
            (capitalised(&h.safety_line()))
        }
        @if listed && h.verdict != Verdict::Met {
            ul.bad {
                @for v in &h.unexpected {
                    li { b { "UNEXPECTED" } " " (v.backend) ": " (v.kinds.join(", ")) }
                }
                @for e in &h.not_met {
                    li { (lockbench_results::expect::line(e)) }
                }
            }
            p.meta { "Every expectation is in " a href="#expectations" { "Expectations" } "." }
        }
    }
}

/// `line` with its first letter upper case.
fn capitalised(line: &str) -> String {
    let mut chars = line.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The environment, the scenario TOML and links to the raw files.
pub(crate) fn environment(run: &Run) -> Markup {
    let e = &run.results.environment;
    let mut rows = vec![
        ("lockbench".to_string(), e.lockbench_version.clone()),
        ("kernel".into(), e.kernel.clone()),
        ("OS".into(), e.os.clone()),
        ("CPUs".into(), e.cpus.to_string()),
    ];
    if !e.cpu_model.is_empty() {
        rows.push(("CPU model".into(), e.cpu_model.clone()));
    }
    if let Some([one, five, fifteen]) = e.load_average {
        rows.push((
            "load average at the start".into(),
            format!("{one:.2} {five:.2} {fifteen:.2} (1, 5, 15 min)"),
        ));
    }
    if let Some([one, five, fifteen]) = e.load_average_end {
        rows.push((
            "load average at the end".into(),
            format!("{one:.2} {five:.2} {fifteen:.2} (1, 5, 15 min)"),
        ));
    }
    rows.push((
        "the load generator the limit".into(),
        generator_line(&run.results.results),
    ));
    for (group, c) in &run.results.connections {
        rows.push((format!("connection to {group}"), connection_words(c)));
    }
    for (k, v) in &e.servers {
        rows.push((k.clone(), v.clone()));
    }
    let links = run.files.iter().map(|f| html! { a href=(f) { (f) } });
    let body = html! {
        table {
            @for (k, v) in &rows {
                tr { th { (k) } td { (v) } }
            }
        }
        @if let Some(toml) = &run.scenario_toml {
            details {
                summary { "The scenario as run (scenario.toml)" }
                pre { (toml) }
            }
        }
        p { "Raw files: " (page::join(links, " · ")) }
        @if run.traces.skipped > 0 {
            (page::note(format!(
                "{} history line(s) were neither ops nor fault events this report knows and were skipped.",
                run.traces.skipped
            )))
        }
    };
    page::section(
        "environment",
        "Environment and raw files",
        "Server versions as the servers reported them; the machine lockbench ran on.",
        body,
    )
}

/// How the clients connected, in a few words: `plain` for bare addresses everywhere, else
/// each group's settings (`TLS to redis`).
pub(crate) fn connections_line(
    connections: &std::collections::BTreeMap<String, lockbench_core::ConnectionSummary>,
) -> String {
    let secured: Vec<String> = connections
        .iter()
        .filter(|(_, c)| c.tls || c.auth)
        .map(|(group, c)| format!("{} to {group}", connection_words(c)))
        .collect();
    if secured.is_empty() {
        "plain connections".into()
    } else {
        secured.join(", ")
    }
}

/// One group's connection settings: `mutual TLS, authenticated, server name x`, or `plain`.
fn connection_words(c: &lockbench_core::ConnectionSummary) -> String {
    let mut words = Vec::new();
    if c.mutual_tls {
        words.push("mutual TLS".to_string());
    } else if c.tls {
        words.push("TLS".to_string());
    }
    if c.auth {
        words.push("authenticated".to_string());
    }
    if let Some(name) = &c.server_name {
        words.push(format!("server name {name}"));
    }
    if words.is_empty() {
        "plain".into()
    } else {
        words.join(", ")
    }
}

/// Whether lockbench, not a backend, was the limit: the backends whose sampled resources say
/// so, with why, or that none was among those sampled.
fn generator_line(results: &[lockbench_results::BackendResult]) -> String {
    let sampled: Vec<_> = results
        .iter()
        .filter_map(|r| r.resources.as_ref().map(|u| (r, u)))
        .collect();
    if sampled.is_empty() {
        return "not sampled (no backend's resources were recorded)".into();
    }
    let bound: Vec<String> = sampled
        .iter()
        .filter(|(_, u)| u.generator_bound)
        .map(|(r, u)| format!("{} ({})", r.backend, u.generator_notes.join("; ")))
        .collect();
    if bound.is_empty() {
        format!("on none of the {} backends sampled", sampled.len())
    } else {
        format!("YES on {}", bound.join(", "))
    }
}

fn pct(p: &Option<Percentiles>, f: impl Fn(&Percentiles) -> u64) -> String {
    p.as_ref().map(|p| ms(f(p))).unwrap_or_else(|| "-".into())
}

/// The servers' requests per acquisition, or `?` with the reason as its tooltip when the
/// figure is unknown.
fn server_requests_cell(r: &BackendResult) -> Markup {
    match (&r.requests.unseen, &r.requests.server_unknown) {
        (Some(why), _) => html! {
            span.bad title=(why) { (opt(r.requests.server_per_acquisition, 2)) " (unseen)" }
        },
        (None, Some(why)) => html! { span title=(why) { "?" } },
        (None, None) => html! { (opt(r.requests.server_per_acquisition, 2)) },
    }
}

fn opt(x: Option<f64>, digits: usize) -> String {
    x.map(|v| format!("{v:.digits$}"))
        .unwrap_or_else(|| "-".into())
}

/// The safety verdict of `r`; `expected` when every kind it violated was one the scenario
/// expected (amber, not red: the fault was meant to break it).
fn safety_cell(r: &BackendResult, expected: bool) -> Markup {
    let s = &r.safety;
    match s.verdict {
        Validity::Valid => html! { td class="safety ok" { "ok" } },
        Validity::Invalid => {
            // Counts on the first line, most severe first; how long and what fencing stopped on
            // a second, small one: the verdict stays two short lines.
            let mut found = s.violated_kinds();
            if found.is_empty() {
                found.push("see the checkers' findings in results.json".into());
            }
            let mut detail = Vec::new();
            if s.mutex_violations > 0 {
                detail.push(format!(
                    "{} overlapping (longest {})",
                    lockbench_results::span::of_ms(s.overlap_ms),
                    lockbench_results::span::of_ms(s.max_overlap_ms)
                ));
            }
            if s.stale_writes_rejected > 0 {
                detail.push(format!("{} stale rejected", s.stale_writes_rejected));
            }
            let (class, word) = if expected {
                ("expected", "VIOLATED, as expected")
            } else {
                ("bad", "VIOLATED")
            };
            html! {
                td.safety.(class) {
                    (word) ": " (found.join(", ")) br; small { (detail.join("; ")) }
                }
            }
        }
        Validity::Unknown => html! {
            td class="safety unknown" {
                "unknown"
                @if !s.failed_checkers.is_empty() {
                    ": " (s.failed_checkers.join("; "))
                }
            }
        },
    }
}

/// The fault windows of `backend`'s run: how many were applied (the kinds on hover), and how
/// many could not be applied here.
fn faults_cell(run: &Run, backend: &str) -> Markup {
    let mut kinds: Vec<&str> = Vec::new();
    let (mut applied, mut not) = (0, 0);
    for f in run.traces.faults_of(backend) {
        if f.applied {
            applied += 1;
        } else {
            not += 1;
        }
        if !kinds.contains(&f.fault.as_str()) {
            kinds.push(&f.fault);
        }
    }
    if applied + not == 0 {
        return html! { "none" };
    }
    // The count only: the kinds label the comparison chart's bands and head the scorecard, and
    // a list here would push the verdicts below the first screen.
    html! {
        span title=(kinds.join(", ")) { (applied) }
        @if not > 0 {
            br; small { b { (not) " not applied" } }
        }
    }
}

/// The summary table, one row per backend x workload.
pub(crate) fn table(run: &Run) -> Markup {
    // One workload for every row (the usual run): said once above the table, and its column
    // dropped, so the safety verdicts get the width and the rows stay short.
    let shapes: Vec<String> = run
        .results
        .results
        .iter()
        .filter(|r| r.failover.is_none())
        .map(|r| format!("{} {}/{}", r.workload, r.clients, r.keys))
        .collect();
    let one_shape = shapes.windows(2).all(|w| w[0] == w[1]);
    let h = headline::of(&run.results);
    let expected_only = |r: &BackendResult| {
        let named = |v: &[headline::Violations]| v.iter().any(|v| v.backend == r.backend);
        named(&h.expected) && !named(&h.unexpected)
    };
    let first = run.results.results.iter().find(|r| r.failover.is_none());
    let rows = run
        .results
        .results
        .iter()
        .enumerate()
        // Election recipes: the failover section.
        .filter(|(_, r)| r.failover.is_none());
    let errors: Vec<String> = run
        .results
        .results
        .iter()
        .flat_map(|r| {
            r.errors
                .by_kind
                .iter()
                .filter(|(_, n)| **n > 0)
                .map(move |(k, n)| format!("{}: {k} × {n}", r.backend))
        })
        .collect();
    let unknown: Vec<String> = run
        .results
        .results
        .iter()
        .filter_map(|r| {
            let why = r.requests.server_unknown.as_ref()?;
            Some(format!("{}: {why}", r.backend))
        })
        .collect();
    let body = html! {
        @if let (true, Some(r)) = (one_shape, first) {
            p.note {
                "Every backend: workload " b { (r.workload) } ", " (r.clients) " clients on "
                (r.keys) " key(s)."
            }
        }
        div.scroll {
            table.summary {
                tr {
                    th rowspan="2" { "backend" }
                    @if !one_shape {
                        th rowspan="2" { "workload" br; "N/K" }
                    }
                    th rowspan="2" { "acq/s" }
                    th colspan="5" { "acquire latency (ms)" }
                    th colspan="2" { "hand-off ms" }
                    th rowspan="2" { "fairness" }
                    th rowspan="2" { "fail/info" }
                    th rowspan="2" { "req/acq" br; small { "client | server" } }
                    th rowspan="2" { "faults" }
                    th rowspan="2" class="safety" { "safety" }
                }
                tr {
                    @for p in ["p50", "p90", "p99", "p99.9", "max", "p50", "p99"] {
                        th { (p) }
                    }
                }
                @for (i, r) in rows {
                    @let workload = html! {
                        @if !one_shape {
                            td { (r.workload) " " (r.clients) "/" (r.keys) }
                        }
                    };
                    @if r.status == Status::Error {
                        tr.error {
                            td { (chart::swatch(i, &r.backend)) }
                            (workload)
                            td colspan="12" {
                                "did not run: " (r.error.as_deref().unwrap_or("error"))
                            }
                            (safety_cell(r, false))
                        }
                    } @else {
                        @let a = &r.acquire_latency_us;
                        @let h = &r.handoff_latency_us;
                        @let class = match (r.safety.verdict, expected_only(r)) {
                            (Validity::Invalid, true) => Some("expected"),
                            (Validity::Invalid, false) => Some("bad"),
                            _ => None,
                        };
                        tr class=[class] {
                            td {
                                (chart::swatch(i, &r.backend))
                                @if r.status == Status::Interrupted {
                                    " " small { "(interrupted)" }
                                }
                            }
                            (workload)
                            td.num {
                                (format!("{:.0}", r.throughput_per_s))
                                @if let Some(o) = r.offered_rate_per_s {
                                    " " small { "of " (format!("{o:.0}")) }
                                }
                            }
                            td.num { (pct(a, |p| p.p50)) }
                            td.num { (pct(a, |p| p.p90)) }
                            td.num { (pct(a, |p| p.p99)) }
                            td.num { (pct(a, |p| p.p999)) }
                            td.num { (pct(a, |p| p.max)) }
                            td.num { (pct(h, |p| p.p50)) }
                            td.num { (pct(h, |p| p.p99)) }
                            td.num { (opt(r.fairness_jain, 2)) }
                            td.num { (r.errors.fail) "/" (r.errors.info) }
                            td.num {
                                (opt(r.requests.client_per_acquisition, 2)) " | "
                                (server_requests_cell(r))
                            }
                            td.faults { (faults_cell(run, &r.backend)) }
                            (safety_cell(r, expected_only(r)))
                        }
                    }
                }
            }
        }
        @if !errors.is_empty() {
            (page::note(format!(
                "Failures and indeterminate outcomes by kind: {}.",
                errors.join("; ")
            )))
        }
        @if !unknown.is_empty() {
            (page::note(format!(
                "The servers' req/acq figure is unknown (?) for {}.",
                unknown.join("; ")
            )))
        }
        (page::note("Acquire latency is measured from the op's intended start (coordinated omission corrected); hand-off from a release completing to the next grant on the same key; fairness is Jain's index over per-client acquisitions (1 = equal); req/acq counts requests sent to the servers per acquisition, by lockbench and by the servers' own counters; faults are the fault windows applied to that backend's run."))
    };
    page::section("summary", "Summary", "", body)
}

/// How each recipe waits, where its token comes from, and its knobs.
pub(crate) fn recipes(run: &Run) -> Markup {
    let rows = run.results_with(|r| r.recipe.as_ref());
    if rows.is_empty() {
        return html! {};
    }
    let body = html! {
        table {
            tr { th { "backend" } th { "waits by" } th { "fencing token" } th { "knobs" } }
            @for (r, info) in rows {
                @let knobs = info.knobs.iter().map(|(k, v)| html! { code { (k) " = " (v) } });
                tr {
                    td { (r.backend) }
                    td { (info.waits_by) }
                    td { (info.fencing) }
                    td { (page::join(knobs, " ")) }
                }
            }
        }
    };
    page::section("recipes", "Recipes", "", body)
}
