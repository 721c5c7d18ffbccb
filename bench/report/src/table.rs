//! The compact comparison table printed at the end of a run.

use comfy_table::{
    Cell, CellAlignment, Color, ContentArrangement, Table, presets::UTF8_FULL_CONDENSED,
};
use lockbench_results::Validity;
use lockbench_results::model::{BackendResult, Percentiles, RunResults, SafetyResult};

fn ms(us: u64) -> String {
    if us >= 100_000 {
        format!("{:.0}", us as f64 / 1e3)
    } else if us >= 1_000 {
        format!("{:.1}", us as f64 / 1e3)
    } else {
        format!("{:.2}", us as f64 / 1e3)
    }
}

fn pct(p: &Option<Percentiles>, f: impl Fn(&Percentiles) -> u64) -> String {
    p.as_ref().map(|p| ms(f(p))).unwrap_or_else(|| "-".into())
}

fn opt(x: Option<f64>, digits: usize) -> String {
    x.map(|v| format!("{v:.digits$}"))
        .unwrap_or_else(|| "-".into())
}

fn safety(r: &BackendResult) -> String {
    let s = &r.safety;
    let verdict = match s.verdict {
        Validity::Valid => "ok".into(),
        Validity::Invalid => format!("VIOLATED: {}", violated(s)),
        Validity::Unknown if s.instrument_faults > 0 => {
            format!("UNKNOWN: instrument fault ({} writes)", s.instrument_faults)
        }
        Validity::Unknown => "unknown".into(),
    };
    // Fencing doing its job is not damage: said apart from the verdict.
    match s.fenced_off() {
        0 => verdict,
        n => format!("{verdict}; fencing rejected {n}"),
    }
}

/// The safety column's cell (`text`), coloured by `r`'s verdict when `color`.
fn safety_cell(r: &BackendResult, text: &str, color: bool) -> Cell {
    let cell = Cell::new(text);
    if !color {
        return cell;
    }
    cell.fg(match r.safety.verdict {
        Validity::Valid => Color::Green,
        Validity::Invalid => Color::Red,
        Validity::Unknown => Color::Yellow,
    })
}

/// An `INSTRUMENT FAULT:` line for a backend whose resource judged writes otherwise than the
/// history does (the fencing audit): its verdict is `unknown`, whatever else it shows.
pub fn instrument_fault(r: &BackendResult) -> Option<String> {
    let s = &r.safety;
    (s.instrument_faults > 0).then(|| {
        let detail = s
            .failed_checkers
            .iter()
            .find(|c| c.starts_with(lockbench_analysis::safety::INSTRUMENT_FAULT))
            .cloned()
            .unwrap_or_default();
        format!(
            "INSTRUMENT FAULT: {}: the protected resource's verdicts disagree with the history; \
             this backend's safety verdict is unknown ({detail})",
            r.backend
        )
    })
}

/// The violated kinds, or a pointer to the checkers when none of the counted kinds is set.
fn violated(s: &SafetyResult) -> String {
    let kinds = s.violated_kinds();
    if kinds.is_empty() {
        "see the checkers' findings in results.json".into()
    } else {
        kinds.join(", ")
    }
}

/// A `FINDING:` line for a backend whose safety verdict is `invalid`, naming only what was
/// violated (with the overlap time when clients overlapped, and what fencing rejected).
pub fn finding(r: &BackendResult) -> Option<String> {
    let s = &r.safety;
    if s.verdict != Validity::Invalid {
        return None;
    }
    let mut line = format!("FINDING: {} violated safety: {}", r.backend, violated(s));
    if s.mutex_violations > 0 {
        line += &format!(
            " ({} with two holders, longest {})",
            lockbench_results::span::of_ms(s.overlap_ms),
            lockbench_results::span::of_ms(s.max_overlap_ms)
        );
    }
    if s.fenced_off() > 0 {
        line += &format!(
            "; fencing rejected {} stale writes, {} writes after the lock was lost",
            s.stale_writes_rejected,
            s.writes_after_lock_lost - s.writes_after_lock_lost_accepted
        );
    }
    Some(line)
}

/// Renders the comparison table (latencies in milliseconds).
pub fn render(results: &RunResults) -> String {
    render_in_color(results, false)
}

/// The summary table's columns.
pub(crate) const HEADER: [&str; 14] = [
    "backend",
    "N/K",
    "acq/s",
    "p50",
    "p90",
    "p99",
    "p99.9",
    "max",
    "hand-off p50",
    "hand-off p99",
    "fair",
    "fail/info",
    "req/acq (client|server)",
    "safety",
];

/// One lock backend's row of the summary table, as text: every column of [`HEADER`], or the
/// backend, `-` and its error (shortened) for a backend that could not run. `None` for an
/// election recipe, which has its own table (`failover_table`).
pub(crate) fn row(r: &BackendResult) -> Option<Vec<String>> {
    if r.failover.is_some() {
        return None;
    }
    if let Some(err) = &r.error {
        // The full message is in results.json and was printed when it happened.
        let short: String = err.chars().take(60).collect();
        let more = if err.chars().count() > 60 { "..." } else { "" };
        return Some(vec![
            r.backend.clone(),
            "-".into(),
            format!("error: {short}{more}"),
        ]);
    }
    let q = &r.requests;
    let reqs = format!(
        "{} | {}",
        opt(q.client_per_acquisition, 2),
        match q.server_unknown {
            Some(_) => "?".to_string(),
            None => opt(q.server_per_acquisition, 2),
        }
    );
    let a = &r.acquire_latency_us;
    let h = &r.handoff_latency_us;
    Some(vec![
        r.backend.clone(),
        format!("{}/{}", r.clients, r.keys),
        format!("{:.0}", r.throughput_per_s),
        pct(a, |p| p.p50),
        pct(a, |p| p.p90),
        pct(a, |p| p.p99),
        pct(a, |p| p.p999),
        pct(a, |p| p.max),
        pct(h, |p| p.p50),
        pct(h, |p| p.p99),
        opt(r.fairness_jain, 2),
        format!("{}/{}", r.errors.fail, r.errors.info),
        reqs,
        safety(r),
    ])
}

/// [`render`], with the safety verdicts in colour when `color` (ok green, violated red,
/// unknown yellow).
pub fn render_in_color(results: &RunResults, color: bool) -> String {
    let mut t = titled(&HEADER);
    for r in &results.results {
        let Some(cells) = row(r) else { continue };
        let last = cells.len() - 1;
        let full = cells.len() == HEADER.len();
        let row: Vec<Cell> = cells
            .into_iter()
            .enumerate()
            .map(|(i, text)| match i {
                // The safety column, coloured by the verdict.
                i if full && i == last => safety_cell(r, &text, color),
                0 | 1 => Cell::new(text),
                _ if full => Cell::new(text).set_alignment(CellAlignment::Right),
                _ => Cell::new(text),
            })
            .collect();
        t.add_row(row);
    }
    if color {
        t.enforce_styling();
    }
    let mut out = format!(
        "{t}\nlatencies in ms (acquire: from intended start); req/acq: lockbench's count | the servers' own counters\n"
    );
    out.push_str(&unknown_server_counts(results));
    out.push_str(&fanout(results));
    out.push_str(&recipes(results));
    out
}

/// One line per backend whose servers' request figure is unknown (`?` in the table), saying why.
fn unknown_server_counts(results: &RunResults) -> String {
    results
        .results
        .iter()
        .filter_map(|r| {
            let why = r.requests.server_unknown.as_ref()?;
            Some(format!(
                "req/acq {}: the servers' figure is unknown: {why}\n",
                r.backend
            ))
        })
        .collect()
}

/// The herd workload's fan-out per release, one line per recipe that counted it; and the
/// shared-lock figures of runs with readers.
fn fanout(results: &RunResults) -> String {
    let mut out = String::new();
    for r in &results.results {
        let Some(s) = &r.shared_lock else { continue };
        out.push_str(&format!(
            "shared lock {}: {} shared and {} exclusive grants, up to {} readers together, {} conflicts\n",
            r.backend, s.shared_grants, s.exclusive_grants, s.max_concurrent_readers, s.conflicts
        ));
    }
    for r in &results.results {
        let Some(f) = &r.fanout else { continue };
        if out.is_empty() {
            out.push_str(
                "fan-out per release (lockbench's count | the servers' watch notifications):\n",
            );
        }
        out.push_str(&format!(
            "  {}: notifications {} | {}, wasted wake-ups {}, requests {}, over {} releases{}\n",
            r.backend,
            opt(f.notifications_per_release, 2),
            opt(f.server_notifications_per_release, 2),
            opt(f.wasted_wakeups_per_release, 2),
            opt(f.server_requests_per_release, 2),
            f.releases,
            f.server_watches_mid_run
                .map(|w| format!(", {w} watches on the servers mid-run"))
                .unwrap_or_default(),
        ));
    }
    out
}

/// One line per recipe: how it waits, its fencing token, its knobs (so a table pasted
/// anywhere still says what was compared).
fn recipes(results: &RunResults) -> String {
    let mut out = String::new();
    for r in &results.results {
        let Some(info) = &r.recipe else { continue };
        let knobs: Vec<String> = info.knobs.iter().map(|(k, v)| format!("{k}={v}")).collect();
        out.push_str(&format!(
            "  {}: waits by {}; token: {}; {}\n",
            r.backend,
            info.waits_by,
            info.fencing,
            knobs.join(" ")
        ));
    }
    out
}

/// Renders the safety scorecard: one row per (backend, fault).
pub fn render_scorecard(card: &lockbench_results::model::Scorecard) -> String {
    let mut t = titled(&[
        "backend",
        "fault",
        "runs",
        "not applied",
        "violations (damage)",
        "rejected by fencing",
        "stayed available",
    ]);
    let list = |m: &std::collections::BTreeMap<String, u64>| {
        if m.is_empty() {
            "none".to_string()
        } else {
            let items: Vec<String> = m.iter().map(|(k, n)| format!("{k} {n}")).collect();
            items.join(", ")
        }
    };
    for c in &card.cells {
        t.add_row(vec![
            Cell::new(&c.backend),
            Cell::new(c.fault),
            Cell::new(c.runs).set_alignment(CellAlignment::Right),
            Cell::new(c.not_applied).set_alignment(CellAlignment::Right),
            Cell::new(list(&c.violations)),
            Cell::new(list(&c.fenced)),
            Cell::new(if c.stayed_available { "yes" } else { "no" }),
        ]);
    }
    format!("safety scorecard\n{t}\n")
}

/// A terminal table in the house style with `header`.
pub(crate) fn titled(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(header.to_vec());
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: a run whose only violation was a reused fencing token
    /// printed "broke mutual exclusion: 0 overlap episodes" and "VIOLATED: 0 overlaps, 0 stale
    /// accepted". Only the kinds that happened are named.
    #[test]
    fn findings_name_only_the_kinds_violated() {
        let text = "name = \"t\"\nbackends = [\"zk-fair\"]\n[workload]\nclients = 2\nkeys = 1\n";
        let scenario = lockbench_core::Scenario::load("t", text, &[]).unwrap();
        let mut r =
            lockbench_results::BackendResult::failed("zk-fair", &scenario.workload, String::new());
        r.status = lockbench_results::Status::Ok;
        r.safety.verdict = Validity::Invalid;
        r.safety.token_reuses = 1;
        assert_eq!(safety(&r), "VIOLATED: 1 reused token");
        let line = finding(&r).expect("an invalid verdict is a finding");
        assert_eq!(line, "FINDING: zk-fair violated safety: 1 reused token");

        r.safety.mutex_violations = 2;
        r.safety.overlap_ms = 3.0;
        r.safety.max_overlap_ms = 2.0;
        r.safety.stale_writes_rejected = 4;
        r.safety.writes_after_lock_lost = 5;
        r.safety.writes_after_lock_lost_accepted = 1;
        // Damage and fencing doing its job, apart.
        assert_eq!(
            safety(&r),
            "VIOLATED: 2 overlaps, 1 write accepted after the lock was lost, 1 reused token; \
             fencing rejected 4"
        );
        let line = finding(&r).unwrap();
        assert!(
            line.contains("2 overlaps") && line.contains("3.0 ms with two holders"),
            "{line}"
        );
        assert!(
            line.contains("fencing rejected 4 stale writes, 4 writes after"),
            "{line}"
        );
        assert!(!line.contains("stale writes accepted"), "{line}");
        // Episodes of microseconds read as such, never "0.0 ms".
        (r.safety.overlap_ms, r.safety.max_overlap_ms) = (0.025, 0.005);
        let line = finding(&r).unwrap();
        assert!(
            line.contains("(25 µs with two holders, longest 5.0 µs)"),
            "{line}"
        );

        r.safety.verdict = Validity::Valid;
        assert_eq!(finding(&r), None);

        r.safety.verdict = Validity::Unknown;
        r.safety.instrument_faults = 2;
        assert_eq!(
            safety(&r),
            "UNKNOWN: instrument fault (2 writes); fencing rejected 4"
        );
        assert!(
            instrument_fault(&r)
                .unwrap()
                .starts_with("INSTRUMENT FAULT: zk-fair")
        );
    }

    /// Regression: a shared lock broken by a writer beside readers read `ok`. Its
    /// reader/writer conflicts are named in the safety column and the finding.
    #[test]
    fn reader_writer_conflicts_are_named_in_the_table_and_the_finding() {
        let text =
            "name = \"t\"\nbackends = [\"zk-broken-rwlock\"]\n[workload]\nclients = 2\nkeys = 1\n";
        let scenario = lockbench_core::Scenario::load("t", text, &[]).unwrap();
        let mut r = lockbench_results::BackendResult::failed(
            "zk-broken-rwlock",
            &scenario.workload,
            String::new(),
        );
        r.status = lockbench_results::Status::Ok;
        r.safety.verdict = Validity::Invalid;
        r.safety.rw_conflicts = 1080;
        assert_eq!(safety(&r), "VIOLATED: 1080 reader/writer conflicts");
        assert_eq!(
            finding(&r).unwrap(),
            "FINDING: zk-broken-rwlock violated safety: 1080 reader/writer conflicts"
        );
    }

    /// Regression: the scorecard showed rejected and accepted writes after the lock was
    /// lost alike, as `write_after_lock_lost N`; damage and fencing now have a column each.
    #[test]
    fn the_scorecard_shows_damage_apart_from_what_fencing_rejected() {
        let cell = |violations: &[(&str, u64)], fenced: &[(&str, u64)]| {
            lockbench_results::model::ScoreCell {
                backend: "zk-fair".into(),
                fault: "pause-client".parse().unwrap(),
                runs: 2,
                not_applied: 0,
                violations: violations
                    .iter()
                    .map(|(k, n)| (k.to_string(), *n))
                    .collect(),
                fenced: fenced.iter().map(|(k, n)| (k.to_string(), *n)).collect(),
                stayed_available: true,
            }
        };
        let card = lockbench_results::model::Scorecard {
            cells: vec![
                cell(&[("mutex", 2)], &[("write_after_lock_lost_rejected", 2)]),
                cell(&[("write_after_lock_lost_accepted", 1)], &[]),
            ],
        };
        let text = render_scorecard(&card);
        let rows: Vec<&str> = text.lines().filter(|l| l.contains("zk-fair")).collect();
        assert!(text.contains("rejected by fencing"), "{text}");
        assert!(
            rows[0].contains("mutex 2") && rows[0].contains("write_after_lock_lost_rejected 2"),
            "{text}"
        );
        assert!(
            rows[1].contains("write_after_lock_lost_accepted 1") && rows[1].contains("none"),
            "{text}"
        );
    }
}
