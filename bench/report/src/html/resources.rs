//! A short table of what each run cost in CPU and memory (the `resources` field), and whether
//! lockbench itself was the limit: a throughput figure is the backend's only if it was not.

use super::load::Run;
use super::page;
use lockbench_results::model::BackendResult;
use lockbench_results::resources::ResourceUsage;
use maud::{Markup, html};

/// The section, or nothing when no result has `resources`.
pub(crate) fn section(run: &Run) -> Markup {
    let used = run.results_with(|r| r.resources.as_ref());
    if used.is_empty() {
        return html! {};
    }
    let table = page::scroll_table(
        &[
            "backend",
            "lockbench CPU %",
            "busiest thread %",
            "CPU µs per acquisition (lockbench / servers)",
            "lockbench RSS MiB",
            "timer lag p99 ms",
            "machine CPU %",
            "servers (CPU / RSS)",
            "generator-bound",
        ],
        html! {
            @for (r, u) in used {
                (row(r, u))
            }
        },
    );
    page::section(
        "resources",
        "Resources",
        "Mean CPU in the measured window (100% = one core) and peak resident memory, sampled from /proc; lockbench includes its worker processes. Timer lag: how late a 5 ms sleep on lockbench's runtime woke up (p99), i.e. the open-loop pacer's own lag.",
        table,
    )
}

fn row(r: &BackendResult, u: &ResourceUsage) -> Markup {
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
    html! {
        tr {
            td { (r.backend) }
            td.num { (generator.map(|g| format!("{:.0}", g.cpu_percent_mean)).unwrap_or_default()) }
            td.num {
                (generator
                    .and_then(|g| g.busiest_thread_cpu_percent)
                    .map(|t| format!("{t:.0}"))
                    .unwrap_or_else(|| "-".into()))
            }
            td.num {
                (u.cpu_per_acquisition(r.throughput_per_s)
                    .map(|c| format!("{:.0} / {:.0}", c.lockbench_us, c.servers_us))
                    .unwrap_or_else(|| "-".into()))
            }
            td.num { (generator.map(|g| format!("{:.0}", g.rss_mib_max)).unwrap_or_default()) }
            td.num { (u.timer_lag_p99_ms.map(|l| format!("{l:.1}")).unwrap_or_else(|| "-".into())) }
            td.num { (machine) }
            td {
                small {
                    @if servers.is_empty() {
                        "not sampled (not the managed cluster)"
                    } @else {
                        (servers.join(", "))
                    }
                }
            }
            @if u.generator_bound {
                td.unknown { "yes: " (u.generator_notes.join("; ")) }
            } @else {
                td.ok { "no" }
            }
        }
    }
}
