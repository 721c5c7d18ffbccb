//! A short table of what each run cost in CPU and memory (the `resources` field), and whether
//! lockbench itself was the limit: a throughput figure is the backend's only if it was not.

use super::load::Run;
use super::page::{self, esc};

/// The section, or nothing when no result has `resources`.
pub(crate) fn section(run: &Run) -> String {
    let mut rows = String::new();
    for r in &run.results.results {
        let Some(u) = &r.resources else { continue };
        let servers: Vec<String> = u
            .servers()
            .map(|p| {
                format!(
                    "{} {:.0}% / {:.0} MiB",
                    p.name, p.cpu_percent_mean, p.rss_mib_max
                )
            })
            .collect();
        let generator = u.processes.iter().find(|p| p.role == "generator");
        let machine = if u.machine_cpu_percent.is_empty() {
            "-".to_string()
        } else {
            format!(
                "{:.0}",
                u.machine_cpu_percent.iter().sum::<f64>() / u.machine_cpu_percent.len() as f64
            )
        };
        let bound = if u.generator_bound {
            format!(
                "<td class=\"unknown\">yes: {}</td>",
                esc(&u.generator_notes.join("; "))
            )
        } else {
            "<td class=\"ok\">no</td>".into()
        };
        rows.push_str(&format!(
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td><small>{}</small></td>{bound}</tr>\n",
            esc(&r.backend),
            generator.map(|g| format!("{:.0}", g.cpu_percent_mean)).unwrap_or_default(),
            generator
                .and_then(|g| g.busiest_thread_cpu_percent)
                .map(|t| format!("{t:.0}"))
                .unwrap_or_else(|| "-".into()),
            generator.map(|g| format!("{:.0}", g.rss_mib_max)).unwrap_or_default(),
            u.timer_lag_p99_ms.map(|l| format!("{l:.1}")).unwrap_or_else(|| "-".into()),
            machine,
            esc(&if servers.is_empty() {
                "not sampled (not the managed cluster)".to_string()
            } else {
                servers.join(", ")
            }),
        ));
    }
    if rows.is_empty() {
        return String::new();
    }
    page::section(
        "resources",
        "Resources",
        "Mean CPU in the measured window (100% = one core) and peak resident memory, sampled from /proc; lockbench includes its worker processes. Timer lag: how late a 5 ms sleep on lockbench's runtime woke up (p99), i.e. the open-loop pacer's own lag.",
        &format!(
            "<div class=\"scroll\"><table><tr><th>backend</th><th>lockbench CPU %</th><th>busiest thread %</th><th>lockbench RSS MiB</th><th>timer lag p99 ms</th><th>machine CPU %</th><th>servers (CPU / RSS)</th><th>generator-bound</th></tr>\n{rows}</table></div>\n"
        ),
    )
}
