//! The tables: the header (scenario, verdict, environment, the scenario itself, raw files),
//! the summary per backend x workload and each recipe's knobs.

use super::chart;
use super::load::Run;
use super::page::{self, esc, ms};
use lockbench_results::headline::{self, Headline, Verdict};
use lockbench_results::model::{BackendResult, Percentiles};
use lockbench_results::{Status, Validity};

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
pub(crate) fn header(run: &Run) -> String {
    let r = &run.results;
    let h = headline::of(r);
    let mut s = format!(
        "<h1>lockbench report: {}</h1>\n<p class=\"meta\"><b>seed</b> {} · <b>started</b> {} · <b>cluster</b> {} · {}</p>\n",
        esc(&r.scenario),
        r.seed,
        esc(&r.started_at),
        esc(&r.cluster),
        if r.complete {
            "complete"
        } else {
            "<b>incomplete</b> (interrupted or still running)"
        }
    );
    s.push_str(&headline_html(&h));
    let scorecard = if run.raw.pointer("/scorecard/cells").is_some() {
        "<a href=\"#scorecard\">scorecard</a>"
    } else {
        ""
    };
    s.push_str(&format!("<nav class=\"toc\"><a href=\"#summary\">summary</a>{scorecard}<a href=\"#spectrum\">latency</a><a href=\"#timeline\">each backend over time</a><a href=\"#holders\">lock holders</a><a href=\"#fencing\">fencing</a><a href=\"#fairness\">fairness</a><a href=\"#environment\">environment</a></nav>\n"
    ));
    s
}

/// The headline: the expectation verdict as a badge with its counts, the safety line, and
/// one red line per unexpected violation and per expectation not met.
fn headline_html(h: &Headline) -> String {
    let mut s = format!(
        "<p class=\"headline\"><span class=\"verdict {}\">{}</span> {}</p>\n",
        h.verdict.name(),
        h.verdict.title(),
        esc(&h.detail())
    );
    let class = if h.unexpected.is_empty() {
        ""
    } else {
        " class=\"bad\""
    };
    let line = capitalised(&h.safety_line());
    s.push_str(&format!("<p{class}>{}</p>\n", esc(&line)));
    let mut items = Vec::new();
    for v in &h.unexpected {
        items.push(format!(
            "<li><b>UNEXPECTED</b> {}: {}</li>",
            esc(&v.backend),
            esc(&v.kinds.join(", "))
        ));
    }
    for e in &h.not_met {
        items.push(format!(
            "<li>{}</li>",
            esc(&lockbench_results::expect::line(e))
        ));
    }
    if !items.is_empty() && h.verdict != Verdict::Met {
        s.push_str(&format!(
            "<ul class=\"bad\">{}</ul>\n<p class=\"meta\">Every expectation is in <a href=\"#expectations\">Expectations</a>.</p>\n",
            items.join("")
        ));
    }
    s
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
pub(crate) fn environment(run: &Run) -> String {
    let e = &run.results.environment;
    let mut rows = vec![
        ("lockbench".to_string(), e.lockbench_version.clone()),
        ("kernel".into(), e.kernel.clone()),
        ("OS".into(), e.os.clone()),
        ("CPUs".into(), e.cpus.to_string()),
    ];
    for (k, v) in &e.servers {
        rows.push((k.clone(), v.clone()));
    }
    let mut body = String::from("<table>");
    for (k, v) in rows {
        body.push_str(&format!(
            "<tr><th>{}</th><td>{}</td></tr>",
            esc(&k),
            esc(&v)
        ));
    }
    body.push_str("</table>\n");
    if let Some(toml) = &run.scenario_toml {
        body.push_str(&format!(
            "<details><summary>The scenario as run (scenario.toml)</summary><pre>{}</pre></details>\n",
            esc(toml)
        ));
    }
    let links: Vec<String> = run
        .files
        .iter()
        .map(|f| format!("<a href=\"{0}\">{0}</a>", esc(f)))
        .collect();
    body.push_str(&format!("<p>Raw files: {}</p>\n", links.join(" · ")));
    if run.traces.skipped > 0 {
        body.push_str(&page::note(&format!(
            "{} history line(s) were neither ops nor fault events this report knows and were skipped.",
            run.traces.skipped
        )));
    }
    page::section(
        "environment",
        "Environment and raw files",
        "Server versions as the servers reported them; the machine lockbench ran on.",
        &body,
    )
}

fn pct(p: &Option<Percentiles>, f: impl Fn(&Percentiles) -> u64) -> String {
    p.as_ref().map(|p| ms(f(p))).unwrap_or_else(|| "-".into())
}

/// The servers' requests per acquisition, or `?` with the reason as its tooltip when the
/// figure is unknown.
fn server_requests_cell(r: &BackendResult) -> String {
    match &r.requests.server_unknown {
        Some(why) => format!("<span title=\"{}\">?</span>", esc(why)),
        None => opt(r.requests.server_per_acquisition, 2),
    }
}

fn opt(x: Option<f64>, digits: usize) -> String {
    x.map(|v| format!("{v:.digits$}"))
        .unwrap_or_else(|| "-".into())
}

/// The safety verdict of `r`; `expected` when every kind it violated was one the scenario
/// expected (amber, not red: the fault was meant to break it).
fn safety_cell(r: &BackendResult, expected: bool) -> String {
    let s = &r.safety;
    match s.verdict {
        Validity::Valid => "<td class=\"safety ok\">ok</td>".into(),
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
            format!(
                "<td class=\"safety {class}\">{word}: {}<br><small>{}</small></td>",
                found.join(", "),
                detail.join("; ")
            )
        }
        Validity::Unknown => format!(
            "<td class=\"safety unknown\">unknown{}</td>",
            if s.failed_checkers.is_empty() {
                String::new()
            } else {
                format!(": {}", esc(&s.failed_checkers.join("; ")))
            }
        ),
    }
}

/// The fault windows of `backend`'s run: how many were applied (the kinds on hover), and how
/// many could not be applied here.
fn faults_cell(run: &Run, backend: &str) -> String {
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
        return "none".into();
    }
    // The count only: the kinds label the comparison chart's bands and head the scorecard, and
    // a list here would push the verdicts below the first screen.
    let mut s = format!(
        "<span title=\"{}\">{applied}</span>",
        esc(&kinds.join(", "))
    );
    if not > 0 {
        s.push_str(&format!("<br><small><b>{not} not applied</b></small>"));
    }
    s
}

/// The summary table, one row per backend x workload.
pub(crate) fn table(run: &Run) -> String {
    // One workload for every row (the usual run): said once above the table, and its column
    // dropped, so the safety verdicts get the width and the rows stay short.
    let shapes: Vec<String> = run
        .results
        .results
        .iter()
        .filter(|r| r.failover.is_none())
        .map(|r| format!("{} {}/{}", esc(&r.workload), r.clients, r.keys))
        .collect();
    let one_shape = shapes.windows(2).all(|w| w[0] == w[1]);
    let workload_cell = |r: &BackendResult| {
        if one_shape {
            String::new()
        } else {
            format!("<td>{} {}/{}</td>", esc(&r.workload), r.clients, r.keys)
        }
    };
    let h = headline::of(&run.results);
    let expected_only = |r: &BackendResult| {
        let named = |v: &[headline::Violations]| v.iter().any(|v| v.backend == r.backend);
        named(&h.expected) && !named(&h.unexpected)
    };
    let mut t = String::new();
    if let (true, Some(r)) = (
        one_shape,
        run.results.results.iter().find(|r| r.failover.is_none()),
    ) {
        t.push_str(&format!(
            "<p class=\"note\">Every backend: workload <b>{}</b>, {} clients on {} key(s).</p>\n",
            esc(&r.workload),
            r.clients,
            r.keys
        ));
    }
    t.push_str(&format!(
        "<div class=\"scroll\"><table class=\"summary\">\n<tr><th rowspan=\"2\">backend</th>{}<th rowspan=\"2\">acq/s</th>\
         <th colspan=\"5\">acquire latency (ms)</th><th colspan=\"2\">hand-off ms</th><th rowspan=\"2\">fairness</th><th rowspan=\"2\">fail/info</th>\
         <th rowspan=\"2\">req/acq<br><small>client | server</small></th><th rowspan=\"2\">faults</th><th rowspan=\"2\" class=\"safety\">safety</th></tr>\n\
         <tr><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th><th>p50</th><th>p99</th></tr>\n",
        if one_shape {
            ""
        } else {
            "<th rowspan=\"2\">workload<br>N/K</th>"
        }
    ));
    for (i, r) in run.results.results.iter().enumerate() {
        if r.failover.is_some() {
            // Election recipes: the failover section.
            continue;
        }
        if r.status == Status::Error {
            t.push_str(&format!(
                "<tr class=\"error\"><td>{}</td>{}<td colspan=\"12\">did not run: {}</td>{}</tr>\n",
                chart::swatch(i, &r.backend),
                workload_cell(r),
                esc(r.error.as_deref().unwrap_or("error")),
                safety_cell(r, false)
            ));
            continue;
        }
        let a = &r.acquire_latency_us;
        let h = &r.handoff_latency_us;
        let rate = match r.offered_rate_per_s {
            Some(o) => format!("{:.0} <small>of {o:.0}</small>", r.throughput_per_s),
            None => format!("{:.0}", r.throughput_per_s),
        };
        t.push_str(&format!(
            "<tr{}><td>{}{}</td>{}<td class=\"num\">{rate}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}/{}</td>\
             <td class=\"num\">{} | {}</td><td class=\"faults\">{}</td>{}</tr>\n",
            match (r.safety.verdict, expected_only(r)) {
                (Validity::Invalid, true) => " class=\"expected\"",
                (Validity::Invalid, false) => " class=\"bad\"",
                _ => "",
            },
            chart::swatch(i, &r.backend),
            if r.status == Status::Interrupted { " <small>(interrupted)</small>" } else { "" },
            workload_cell(r),
            pct(a, |p| p.p50),
            pct(a, |p| p.p90),
            pct(a, |p| p.p99),
            pct(a, |p| p.p999),
            pct(a, |p| p.max),
            pct(h, |p| p.p50),
            pct(h, |p| p.p99),
            opt(r.fairness_jain, 2),
            r.errors.fail,
            r.errors.info,
            opt(r.requests.client_per_acquisition, 2),
            server_requests_cell(r),
            faults_cell(run, &r.backend),
            safety_cell(r, expected_only(r))
        ));
    }
    t.push_str("</table></div>\n");
    let errors: Vec<String> = run
        .results
        .results
        .iter()
        .flat_map(|r| {
            r.errors
                .by_kind
                .iter()
                .filter(|(_, n)| **n > 0)
                .map(move |(k, n)| format!("{}: {} × {n}", esc(&r.backend), esc(k)))
        })
        .collect();
    if !errors.is_empty() {
        t.push_str(&page::note(&format!(
            "Failures and indeterminate outcomes by kind: {}.",
            errors.join("; ")
        )));
    }
    let unknown: Vec<String> = run
        .results
        .results
        .iter()
        .filter_map(|r| {
            let why = r.requests.server_unknown.as_ref()?;
            Some(format!("{}: {}", esc(&r.backend), esc(why)))
        })
        .collect();
    if !unknown.is_empty() {
        t.push_str(&page::note(&format!(
            "The servers' req/acq figure is unknown (?) for {}.",
            unknown.join("; ")
        )));
    }
    t.push_str(&page::note("Acquire latency is measured from the op's intended start (coordinated omission corrected); hand-off from a release completing to the next grant on the same key; fairness is Jain's index over per-client acquisitions (1 = equal); req/acq counts requests sent to the servers per acquisition, by lockbench and by the servers' own counters; faults are the fault windows applied to that backend's run."));
    page::section("summary", "Summary", "", &t)
}

/// How each recipe waits, where its token comes from, and its knobs.
pub(crate) fn recipes(run: &Run) -> String {
    let mut t = String::from(
        "<table>\n<tr><th>backend</th><th>waits by</th><th>fencing token</th><th>knobs</th></tr>\n",
    );
    let mut any = false;
    for r in &run.results.results {
        let Some(info) = &r.recipe else { continue };
        any = true;
        let knobs: Vec<String> = info
            .knobs
            .iter()
            .map(|(k, v)| format!("<code>{} = {}</code>", esc(k), esc(v)))
            .collect();
        t.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            esc(&r.backend),
            esc(&info.waits_by),
            esc(&info.fencing),
            knobs.join(" ")
        ));
    }
    t.push_str("</table>\n");
    if !any {
        return String::new();
    }
    page::section("recipes", "Recipes", "", &t)
}
